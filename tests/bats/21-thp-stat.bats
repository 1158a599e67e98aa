#!/usr/bin/env bats
# /proc/<pid>/thp_stat (kernel patch 2): per-mm THP events counted where the
# /proc/vmstat events are (the hugepages mapped now are AnonHugePages in
# smaps_rollup, which the helpers print as anon_huge_kib), zero for a
# forked child and after exec, shared by threads, readable like smaps.

load helpers
load hold

setup_file() {
	thp_save_knobs
	echo 10000 >"$THP/khugepaged/scan_sleep_millisecs"
	echo 3 >/proc/sys/vm/drop_caches
	echo 1 >/proc/sys/vm/compact_memory
}

teardown_file() {
	thp_restore_knobs
}

setup() {
	[ -e /proc/self/thp_stat ] || skip "kernel without /proc/<pid>/thp_stat"
}

teardown() {
	hold_kill

}

# field NAME FILE: value of NAME in a "name value" file
field() {
	awk -v k="$1" '$1 == k { print $2; f = 1 } END { exit !f }' "$2"
}

@test "format: the seven names of docs/abi.md, then three per size where sizes exist, one 'name value' line each" {
	run -0 cat /proc/self/thp_stat
	local want="thp_fault_alloc thp_fault_fallback thp_fault_fallback_charge thp_collapse_alloc thp_collapse_alloc_failed thp_split_pmd thp_zero_page_fault"
	local got d sizes=
	got=$(awk 'NR <= 7 { printf "%s%s", sep, $1; sep = " " }' /proc/self/thp_stat)
	[ "$got" = "$want" ] || fail "expected names '$want' first, seen '$got'"
	# then, with multi-size THP (the 6.12 series), three lines for each
	# anonymous size sysfs has (those with an enabled file: 8kB is a shmem
	# size only), under the names of its stats directory
	for d in "$THP"/hugepages-*kB; do
		[ -e "$d/enabled" ] || continue
		d=${d##*/}
		sizes+="$d/anon_fault_alloc"$'\n'"$d/anon_fault_fallback"$'\n'"$d/anon_fault_fallback_charge"$'\n'
	done
	got=$(awk 'NR > 7 { print $1 }' /proc/self/thp_stat | sort)
	[ "$got" = "$(printf %s "$sizes" | sort)" ] || fail "per-size lines: expected
$(printf %s "$sizes" | sort)
seen
$got"
	run awk 'NF != 2 || $2 !~ /^[0-9]+$/' /proc/self/thp_stat
	[ -z "$output" ] || fail "malformed lines: $output"
}

@test "faults: thp_stat of the helper matches what it faulted and vmstat" {
	thp_set enabled 1
	run -0 "$THP_HELPERS/thp-touch" --size 16
	assert_kv pattern = ok
	assert_kv anon_huge_kib -eq 16384
	# exactly 8 hugepages faulted in that region, all by this process
	assert_kv thp_stat.thp_fault_alloc -eq 8
	assert_kv thp_stat.thp_fault_fallback -eq 0
	local g
	g=$(kv thp_fault_alloc)
	[ "$g" -ge 8 ] || fail "global thp_fault_alloc delta expected >= 8, seen $g"
}

@test "MADV_NOHUGEPAGE: no hugepage, nothing counted" {
	thp_set enabled 1
	run -0 "$THP_HELPERS/thp-touch" --size 8 --nohugepage
	assert_kv pattern = ok
	assert_kv anon_huge_kib -eq 0
	assert_kv thp_stat.thp_fault_alloc -eq 0
}

@test "/proc/PID/thp_stat of a running process: its faults, the same in the task view" {
	thp_set enabled 1
	hold_start "$THP_HELPERS/thp-touch" --size 8 --hold
	local f=/proc/$HELD/thp_stat
	[ "$(field thp_fault_alloc "$f")" -ge 4 ] || fail "expected thp_fault_alloc >= 4, seen $(field thp_fault_alloc "$f")"
	# the task view is the same mm
	local tf=/proc/$HELD/task/$HELD/thp_stat
	[ "$(<"$f")" = "$(<"$tf")" ] || fail "task view differs: $(<"$tf")"
}

@test "fork: the child starts at zero, but maps the parent's hugepages" {
	thp_set enabled 0
	run -0 "$THP_HELPERS/thp-mm" --size 8 fork
	assert_kv parent.thp_fault_alloc -eq 4
	assert_kv parent.anon_huge_kib -eq 8192
	local n
	for n in thp_fault_alloc thp_fault_fallback thp_fault_fallback_charge \
		thp_collapse_alloc thp_collapse_alloc_failed thp_split_pmd thp_zero_page_fault; do
		assert_kv "child.$n" -eq 0
	done
	# copy_huge_pmd() shares the huge PMDs with the child until it writes
	assert_kv child.anon_huge_kib -eq 8192
	assert_kv child.pattern = ok
	assert_kv child.exit -eq 0
}

@test "exec: a new mm starts at zero" {
	thp_set enabled 0
	run -0 "$THP_HELPERS/thp-mm" --size 8 exec
	assert_kv before.thp_fault_alloc -eq 4
	assert_kv before.anon_huge_kib -eq 8192
	assert_kv self.thp_fault_alloc -eq 0
	assert_kv self.anon_huge_kib -eq 0
	assert_kv self.thp_split_pmd -eq 0
}

@test "threads share their process's counters" {
	thp_set enabled 0
	run -0 "$THP_HELPERS/thp-mm" --size 8 threads
	local before
	before=$(kv before.thp_fault_alloc)
	assert_kv process.thp_fault_alloc -eq $((before + 4))
	assert_kv thread.thp_fault_alloc -eq $((before + 4))
	assert_kv main.thp_fault_alloc -eq $((before + 4))
	assert_kv process.anon_huge_kib -eq 8192
}

@test "split: a partial munmap counts thp_split_pmd and drops AnonHugePages" {
	thp_set enabled 0
	run -0 "$THP_HELPERS/thp-mm" --size 4 split munmap
	assert_kv pattern = ok
	assert_kv thp_stat.thp_split_pmd -eq 1
	assert_kv anon_huge_kib_before -eq 4096
	assert_kv anon_huge_kib_first -eq 0
	assert_kv anon_huge_kib_rest -eq 2048
}

@test "access: another user cannot read root's thp_stat, root and the owner can" {
	command -v setpriv >/dev/null || skip "setpriv (util-linux) not in the guest"
	hold_start "$THP_HELPERS/thp-touch" --size 2 --hold
	run cat "/proc/$HELD/thp_stat"
	[ "$status" -eq 0 ] || fail "root could not read thp_stat: $output"
	run setpriv --reuid=65534 --regid=65534 --clear-groups cat "/proc/$HELD/thp_stat"
	[ "$status" -ne 0 ] || fail "uid 65534 read root's thp_stat, expected EACCES: $output"
	[[ $output == *"Permission denied"* ]] || fail "expected 'Permission denied', seen '$output'"
	run setpriv --reuid=65534 --regid=65534 --clear-groups cat /proc/self/thp_stat
	[ "$status" -eq 0 ] || fail "uid 65534 could not read its own thp_stat: $output"
	[[ $output == *thp_fault_alloc* ]] || fail "own thp_stat unexpected: $output"
}
