#!/usr/bin/env bats
# thpctl metrics and thpctl cgroups against fake trees (THP_ROOT): the 6.12
# sysfs layout (tests/host/fixtures), /proc files and a cgroup v2 hierarchy
# made here. What node_exporter and promtool make of the output is the
# guest's business (tests/bats/81-metrics.bats); here: the values, the
# exposition format's structure, the limits and the atomic write.

bats_require_minimum_version 1.5.0
load '/usr/lib/bats/bats-support/load'
load '/usr/lib/bats/bats-assert/load'
load ../bats/size-metrics

SYS=sys/kernel/mm/transparent_hugepage
CG=sys/fs/cgroup

setup() {
	THPCTL=${BUILD_DIR:?BUILD_DIR must point at the build directory}/thpctl
	[ -x "$THPCTL" ] || fail "no $THPCTL"
	export THP_ROOT=$BATS_TEST_TMPDIR/root
	# never reach a real thpd from host tests
	export THPD_SOCKET=$BATS_TEST_TMPDIR/no-thpd.sock
	mkdir -p "$THP_ROOT/proc"
	cp -r "$BATS_TEST_DIRNAME/fixtures/6.12/." "$THP_ROOT/"
	echo 7 >"$THP_ROOT/$SYS/hugepages-64kB/stats/anon_fault_alloc"
	echo 3 >"$THP_ROOT/$SYS/hugepages-2048kB/stats/nr_anon"
	echo 'always inherit [madvise] never' >"$THP_ROOT/$SYS/hugepages-64kB/enabled"
	# the captured 6.12 boots at always (Debian's default); these tests want madvise
	echo 'always [madvise] never' >"$THP_ROOT/$SYS/enabled"
	printf 'MemTotal:        2000000 kB\nAnonHugePages:     14336 kB\nShmemHugePages:     2048 kB\n' >"$THP_ROOT/proc/meminfo"
	printf 'nr_free_pages 1000\nthp_fault_alloc 12\nthp_fault_fallback 3\nthp_collapse_alloc 4\npgfault 99\n' \
		>"$THP_ROOT/proc/vmstat"
	# order 9: 1; order 10: 2 (counting 2 each) -> 5 blocks of 2 MiB
	printf 'Node 0, zone   Normal      0      0      0      0      0      0      0      0      0      1      2\n' \
		>"$THP_ROOT/proc/buddyinfo"
	fake_cgroups
}

# memstat DIR ANON_THP SHMEM_THP FAULT_ALLOC: a cgroup with a memory.stat
memstat() {
	mkdir -p "$THP_ROOT/$CG$1"
	printf 'anon 99999999\nfile 0\nanon_thp %s\nfile_thp 0\nshmem_thp %s\npgfault 5\nthp_fault_alloc %s\nthp_collapse_alloc 0\n' \
		"$2" "$3" "$4" >"$THP_ROOT/$CG$1/memory.stat"
}

fake_cgroups() {
	mkdir -p "$THP_ROOT/$CG"
	echo "cpu memory pids" >"$THP_ROOT/$CG/cgroup.controllers"
	memstat /system.slice 6291456 0 4
	memstat /system.slice/big.service 4194304 0 2
	memstat /system.slice/small.service 2097152 0 1
	memstat /system.slice/shm.service 0 2097152 0
	memstat /user.slice 0 0 0
	memstat /machine.slice/a/b 2097152 0 1
	memstat /machine.slice/a/b/deep 2097152 0 1
	# a directory without memory.stat (memory controller not enabled there)
	mkdir -p "$THP_ROOT/$CG/init.scope"
	memstat '/odd"na\me.scope' 2097152 0 0
}

# metric NAME{LABELS}: the sample's value
metric() {
	awk -v k="$1" '$1 == k { print $2 }' <<<"$output"
}

@test "metrics: settings and per-size settings as one gauge per word, from sysfs" {
	run -0 "$THPCTL" metrics
	assert_line 'thp_enabled{setting="madvise"} 1'
	assert_line 'thp_enabled{setting="always"} 0'
	assert_line 'thp_enabled{setting="never"} 0'
	assert_line 'thp_defrag{setting="madvise"} 1'
	assert_line 'thp_size_enabled{size="64kB",setting="madvise"} 1'
	assert_line 'thp_size_enabled{size="64kB",setting="inherit"} 0'
	assert_line 'thp_size_enabled{size="2048kB",setting="inherit"} 1'
	assert_line 'thp_size_shmem_enabled{size="2048kB",setting="inherit"} 1'
	# 2M inherits madvise; 64K is madvise itself; 32K is never
	assert_line 'thp_size_anon_effective{size="2048kB",setting="madvise"} 1'
	assert_line 'thp_size_anon_effective{size="64kB",setting="madvise"} 1'
	assert_line 'thp_size_anon_effective{size="32kB",setting="never"} 1'
	assert_equal "$(metric thp_khugepaged_scan_sleep_seconds)" 10.000
}

@test "metrics: per-size families are the hugepages-<N>kB values of every generation" {
	local g d f i=0 n
	for g in 6.1 6.1-patched 6.12 6.18; do
		rm -rf "$THP_ROOT/$SYS"
		cp -r "$BATS_TEST_DIRNAME/fixtures/$g/." "$THP_ROOT/"
		# a distinct value in every stats file: a sample under the wrong
		# size or the wrong name cannot match by chance
		for f in "$THP_ROOT/$SYS"/hugepages-*kB/stats/*; do
			[ -e "$f" ] && echo $((i += 7)) >"$f"
		done
		run -0 "$THPCTL" metrics
		printf '%s\n' "$output" >"$BATS_TEST_TMPDIR/$g.prom"
		if ! compgen -G "$THP_ROOT/$SYS/hugepages-*kB" >/dev/null; then
			n=$(grep -c '^thp_size_' "$BATS_TEST_TMPDIR/$g.prom" || true)
			assert_equal "$g: $n per-size samples" "$g: 0 per-size samples"
			continue
		fi
		size_metrics_expected "$THP_ROOT/$SYS" >"$BATS_TEST_TMPDIR/$g.want"
		run -0 size_metrics_check "$BATS_TEST_TMPDIR/$g.want" "$BATS_TEST_TMPDIR/$g.want" \
			"$BATS_TEST_TMPDIR/$g.prom"
		# the comparison saw every size's settings and stats
		n=$(grep -c '^thp_size_.*_total{' "$BATS_TEST_TMPDIR/$g.want")
		[ "$n" -ge 90 ] || fail "$g: only $n per-size counters in sysfs"
		grep -q '^thp_size_shmem_enabled{size="8kB"' "$BATS_TEST_TMPDIR/$g.want" ||
			fail "$g: no shmem-only 8kB size"
	done
}

@test "metrics: size_metrics_check fails on a value, a label or a sample sysfs does not back" {
	size_metrics_expected "$THP_ROOT/$SYS" >"$BATS_TEST_TMPDIR/want"
	run -0 "$THPCTL" metrics
	printf '%s\n' "$output" >"$BATS_TEST_TMPDIR/good.prom"
	run -0 size_metrics_check "$BATS_TEST_TMPDIR/want" "$BATS_TEST_TMPDIR/want" "$BATS_TEST_TMPDIR/good.prom"
	sed 's/^\(thp_size_anon_fault_alloc_total{size="64kB"}\) 7$/\1 8/' "$BATS_TEST_TMPDIR/good.prom" >"$BATS_TEST_TMPDIR/bad.prom"
	run -1 size_metrics_check "$BATS_TEST_TMPDIR/want" "$BATS_TEST_TMPDIR/want" "$BATS_TEST_TMPDIR/bad.prom"
	assert_output 'thp_size_anon_fault_alloc_total{size="64kB"} is 8, sysfs read 7 before and 7 after'
	sed 's/^thp_size_nr_anon{size="2048kB"}/thp_size_nr_anon{size="2MB"}/' "$BATS_TEST_TMPDIR/good.prom" >"$BATS_TEST_TMPDIR/bad.prom"
	run -1 size_metrics_check "$BATS_TEST_TMPDIR/want" "$BATS_TEST_TMPDIR/want" "$BATS_TEST_TMPDIR/bad.prom"
	assert_line 'missing: thp_size_nr_anon{size="2048kB"} (sysfs: 3)'
	assert_line 'not in sysfs: thp_size_nr_anon{size="2MB"} 3'
}

@test "metrics: counters and figures carry the values the kernel files hold" {
	run -0 "$THPCTL" metrics
	assert_equal "$(metric thp_fault_alloc_total)" 12
	assert_equal "$(metric thp_collapse_alloc_total)" 4
	refute_output --partial pgfault
	assert_equal "$(metric 'thp_size_anon_fault_alloc_total{size="64kB"}')" 7
	assert_equal "$(metric 'thp_size_anon_fault_alloc_total{size="128kB"}')" 0
	assert_equal "$(metric 'thp_size_nr_anon{size="2048kB"}')" 3
	assert_line '# TYPE thp_size_nr_anon gauge'
	assert_line '# TYPE thp_size_split_total counter'
	assert_equal "$(metric thp_anon_huge_bytes)" $((14336 * 1024))
	assert_equal "$(metric thp_shmem_huge_bytes)" $((2048 * 1024))
	assert_equal "$(metric thp_free_hugepage_blocks)" 5
	refute_output --partial thpd_rules
}

@test "metrics: thpd_up only where thpd is installed (thpd_installed), so thpd_up == 0 never fires without thpd" {
	local units=$THP_ROOT/lib/systemd/system etc=$THP_ROOT/etc/systemd/system
	run -0 "$THPCTL" metrics
	assert_equal "$(metric thpd_installed)" 0
	refute_line --regexp '^thpd_up'
	mkdir -p "$units" "$etc"
	echo '[Service]' >"$units/thpd.service"
	run -0 "$THPCTL" metrics
	assert_equal "$(metric thpd_installed)" 1
	assert_equal "$(metric thpd_up)" 0
	# masked (a symlink to /dev/null, or an empty file, in /etc): not meant to run
	ln -s /dev/null "$etc/thpd.service"
	run -0 "$THPCTL" metrics
	assert_equal "$(metric thpd_installed)" 0
	refute_line --regexp '^thpd_up'
	rm "$etc/thpd.service"
	: >"$etc/thpd.service"
	run -0 "$THPCTL" metrics
	assert_equal "$(metric thpd_installed)" 0
	# an administrator's own unit in /etc, or make install's in /usr/local
	echo '[Service]' >"$etc/thpd.service"
	rm "$units/thpd.service"
	run -0 "$THPCTL" metrics
	assert_equal "$(metric thpd_installed)" 1
	rm "$etc/thpd.service"
	mkdir -p "$THP_ROOT/usr/local/lib/systemd/system"
	echo '[Service]' >"$THP_ROOT/usr/local/lib/systemd/system/thpd.service"
	run -0 "$THPCTL" metrics
	assert_equal "$(metric thpd_installed)" 1
	assert_equal "$(metric thpd_up)" 0
}

# select_word FILE WORD: FILE as the kernel shows it after WORD is stored
select_word() {
	local list
	list=" $(tr -d '[]' <"$1") "
	[[ $list == *" $2 "* ]] || fail "$1 lists no $2: $list"
	list=${list/ $2 / [$2] }
	list=${list# }
	echo "${list% }" >"$1"
}

# the RFC's mode of an enabled/defrag pair, as the patched kernel's mode
# file shows it (docs/abi.md)
rfc_mode_of() {
	case $1/$2 in
	never/*) echo never ;;
	madvise/madvise) echo 0 ;;
	always/madvise) echo 1 ;;
	always/always) echo 2 ;;
	*) echo custom ;;
	esac
}

@test "metrics: promtool accepts every enabled x defrag pair on every kernel generation; the mode is labels, never a value" {
	command -v promtool >/dev/null || skip "promtool (package prometheus) is not installed"
	local g e d mode n=0 custom=0 prom=$BATS_TEST_TMPDIR/m.prom
	for g in 6.1 6.1-patched 6.12 6.18; do
		rm -rf "${THP_ROOT:?}/$SYS"
		cp -r "$BATS_TEST_DIRNAME/fixtures/$g/." "$THP_ROOT/"
		for e in always madvise never; do
			for d in always defer defer+madvise madvise never; do
				select_word "$THP_ROOT/$SYS/enabled" "$e"
				select_word "$THP_ROOT/$SYS/defrag" "$d"
				mode=$(rfc_mode_of "$e" "$d")
				[ ! -e "$THP_ROOT/$SYS/mode" ] || echo "$mode" >"$THP_ROOT/$SYS/mode"
				run -0 "$THPCTL" metrics
				printf '%s\n' "$output" >"$prom"
				run -0 promtool check metrics <"$prom"
				assert_output ''
				run -0 grep -c '^thp_mode_info{' "$prom"
				assert_output 1
				run -0 grep -Fx "thp_mode_info{enabled=\"$e\",defrag=\"$d\",rfc_mode=\"$mode\"} 1" "$prom"
				case $mode in
				custom) run -1 grep '^thp_rfc_mode' "$prom"; custom=$((custom + 1)) ;;
				never) run -0 grep -Fx 'thp_rfc_mode -1' "$prom" ;;
				*) run -0 grep -Fx "thp_rfc_mode $mode" "$prom" ;;
				esac
				n=$((n + 1))
			done
		done
	done
	assert_equal "$n pairs, $custom custom" "60 pairs, 28 custom"
}

@test "metrics: label values are valid UTF-8 whatever a cgroup is named; equal labels exported once" {
	command -v promtool >/dev/null || skip "promtool (package prometheus) is not installed"
	local prom=$BATS_TEST_TMPDIR/m.prom
	memstat $'/bad\xff\xfe.scope' 2097152 0 1
	memstat '/ünï.slice' 2097152 0 1
	memstat $'/new\nline.scope' 2097152 0 1
	memstat $'/tab\tand\x7f.scope' 2097152 0 1
	# the first is written as the second: one is exported, one skipped
	memstat $'/dup\xff' 4194304 0 1
	memstat '/dup\xff' 2097152 0 1
	run -0 "$THPCTL" metrics
	printf '%s\n' "$output" >"$prom"
	iconv -f UTF-8 -t UTF-8 "$prom" >/dev/null || fail "the exposition is not UTF-8"
	run -0 promtool check metrics <"$prom"
	assert_output ''
	run -0 cat "$prom"
	assert_line 'thp_cgroup_anon_bytes{cgroup="/bad\\xff\\xfe.scope"} 2097152'
	assert_line 'thp_cgroup_anon_bytes{cgroup="/ünï.slice"} 2097152'
	assert_line 'thp_cgroup_anon_bytes{cgroup="/new\nline.scope"} 2097152'
	assert_line $'thp_cgroup_anon_bytes{cgroup="/tab\tand\x7f.scope"} 2097152'
	assert_line 'thp_cgroup_anon_bytes{cgroup="/odd\"na\\me.scope"} 2097152'
	# the larger is ranked first and kept
	assert_line 'thp_cgroup_anon_bytes{cgroup="/dup\\xff"} 4194304'
	run -0 grep -c '^thp_cgroup_anon_bytes{cgroup="/dup' "$prom"
	assert_output 1
	run -0 awk '$1 == "thp_cgroups_skipped" { print $2 }' "$prom"
	assert_output 1
	# the same values in the JSON, which is valid UTF-8 too
	run -0 "$THPCTL" metrics --json=short
	iconv -f UTF-8 -t UTF-8 <<<"$output" >/dev/null || fail "the JSON is not UTF-8"
	run -0 jq -r '.families[] | select(.name == "thp_cgroup_anon_bytes") | .samples[].labels.cgroup' <<<"$output"
	assert_line '/bad\xff\xfe.scope'
	assert_line '/dup\xff'
}

# a fake root as thpctl-metrics.service sees the host: readable by others
# (the service has no DAC override), made by tests that run thpctl as nobody
shared_root() {
	SHARED=$(mktemp -d /tmp/thpctl-metrics.XXXXXX)
	chmod 755 "$SHARED"
	cp -a "$THP_ROOT/." "$SHARED/"
}

teardown() {
	[ -z "${SHARED:-}" ] || { chmod -R u+rwx "$SHARED" && rm -rf "$SHARED"; }
}

@test "metrics: a cgroup that cannot be read (chmod 000, memory.stat too large) is skipped and counted; the rest stay" {
	command -v promtool >/dev/null || skip "promtool (package prometheus) is not installed"
	local prom=$BATS_TEST_TMPDIR/m.prom cg
	# larger than the 16 KiB memory.stat was once read into, yet a memory.stat: read
	memstat /grown.slice 2097152 0 3
	{ for i in $(seq 6000); do echo "future_field_$i 0"; done; cat "$THP_ROOT/$CG/grown.slice/memory.stat"; } \
		>"$BATS_TEST_TMPDIR/grown" && mv "$BATS_TEST_TMPDIR/grown" "$THP_ROOT/$CG/grown.slice/memory.stat"
	[ "$(stat -c %s "$THP_ROOT/$CG/grown.slice/memory.stat")" -gt 65536 ] || fail "grown memory.stat is small"
	# larger than any memory.stat (1 MiB): skipped
	memstat /huge.slice 2097152 0 1
	yes 'pgfault 1' | head -c 2M >>"$THP_ROOT/$CG/huge.slice/memory.stat"
	shared_root
	cg=$SHARED/$CG
	# a delegated user's own slice, made unreadable by them
	chmod 000 "$cg/system.slice/small.service"
	run -0 setpriv --reuid=65534 --regid=65534 --clear-groups -- \
		env THP_ROOT="$SHARED" THPD_SOCKET="$SHARED/none.sock" "$THPCTL" metrics
	printf '%s\n' "$output" >"$prom"
	run -0 promtool check metrics <"$prom"
	assert_output ''
	output=$(cat "$prom")
	assert_equal "$(metric 'thp_cgroup_anon_bytes{cgroup="/system.slice/big.service"}')" 4194304
	assert_equal "$(metric 'thp_cgroup_anon_bytes{cgroup="/grown.slice"}')" 2097152
	assert_equal "$(metric 'thp_cgroup_fault_alloc_total{cgroup="/grown.slice"}')" 3
	assert_equal "$(metric thp_cgroups_skipped)" 2
	refute_output --partial small.service
	refute_output --partial huge.slice
	# the 6 of the fake hierarchy, less small.service, and grown.slice
	assert_equal "$(metric thp_cgroups_exported)" 6
	# thpctl cgroups: the same cgroups, the skipped ones counted
	run -0 setpriv --reuid=65534 --regid=65534 --clear-groups -- \
		env THP_ROOT="$SHARED" THPD_SOCKET="$SHARED/none.sock" "$THPCTL" cgroups --json=short
	run -0 jq -c '[.skipped, .shown]' <<<"$output"
	assert_output '[2,6]'
	# a directory that cannot be listed: its own figures, no children, one skipped
	chmod 000 "$cg/system.slice/small.service"
	chmod 711 "$cg/system.slice"
	run -0 setpriv --reuid=65534 --regid=65534 --clear-groups -- \
		env THP_ROOT="$SHARED" THPD_SOCKET="$SHARED/none.sock" "$THPCTL" metrics
	assert_equal "$(metric 'thp_cgroup_anon_bytes{cgroup="/system.slice"}')" 6291456
	refute_output --partial big.service
	assert_equal "$(metric thp_cgroups_skipped)" 2
}

@test "metrics and cgroups: a tree deeper than any path, with the largest --depth, never crashes" {
	command -v promtool >/dev/null || skip "promtool (package prometheus) is not installed"
	local base=$THP_ROOT/$CG/deep.slice levels=2100 prom=$BATS_TEST_TMPDIR/m.prom k fits=0 path
	# mkdir -p goes down a component at a time: the deepest paths are longer
	# than PATH_MAX
	mkdir -p "$base/$(printf 'd/%.0s' $(seq "$levels"))"
	# a memory.stat in each level whose path is shorter than PATH_MAX (4096
	# with its NUL); the deeper ones cannot even be named
	path=$base
	for ((k = 1; k <= levels; k++)); do
		path+=/d
		((${#path} + 12 < 4096)) || break
		printf 'anon_thp 2097152\nthp_fault_alloc 1\n' >"$path/memory.stat"
		fits=$k
	done
	[ "$fits" -gt 1000 ] && [ "$fits" -lt "$levels" ] || fail "$fits of $levels levels fit in PATH_MAX"
	run -0 "$THPCTL" metrics --depth=2147483647 --top=0
	printf '%s\n' "$output" >"$prom"
	run -0 promtool check metrics <"$prom"
	assert_output ''
	run -0 grep -c '^thp_cgroup_anon_bytes{cgroup="/deep.slice/d' "$prom"
	assert_output "$fits"
	run -0 awk '$1 == "thp_cgroups_skipped" { print $2 }' "$prom"
	[ "$output" -ge 1 ] || fail "the levels beyond PATH_MAX were not counted as skipped: $output"
	run -0 "$THPCTL" cgroups --json=short --depth=2147483647 --top=0
	run -0 jq '.cgroups | map(select(.cgroup | startswith("/deep.slice/"))) | length' <<<"$output"
	assert_output "$fits"
}

@test "metrics: exposition structure: HELP and TYPE once before each family, valid names, counters end in _total" {
	run -0 "$THPCTL" metrics
	run -0 awk '
		/^# HELP / { if (help[$3]++) { print "second HELP for " $3; bad = 1 }; next }
		/^# TYPE / { if (type[$3]) { print "second TYPE for " $3; bad = 1 }
			     type[$3] = $4; cur = $3
			     if ($4 == "counter" && $3 !~ /_total$/) { print "counter " $3 " without _total"; bad = 1 }
			     if ($4 != "counter" && $4 != "gauge") { print "type " $4; bad = 1 }
			     next }
		/^#/ { print "stray comment: " $0; bad = 1; next }
		{ name = $1; sub(/\{.*/, "", name)
		  if (name != cur) { print "sample " name " outside its family " cur; bad = 1 }
		  if (name !~ /^[a-zA-Z_:][a-zA-Z0-9_:]*$/) { print "bad name " name; bad = 1 }
		  if ($NF !~ /^-?[0-9]+(\.[0-9]+)?$/) { print "bad value " $0; bad = 1 }
		  n++ }
		END { if (n < 50) { print "only " n " samples"; bad = 1 }; exit bad }' <<<"$output"
}

@test "metrics: the cgroups of thpctl cgroups, label values escaped" {
	run -0 "$THPCTL" metrics
	assert_equal "$(metric 'thp_cgroup_anon_bytes{cgroup="/system.slice/big.service"}')" 4194304
	assert_equal "$(metric 'thp_cgroup_shmem_bytes{cgroup="/system.slice/shm.service"}')" 2097152
	assert_equal "$(metric 'thp_cgroup_fault_alloc_total{cgroup="/system.slice/big.service"}')" 2
	assert_line 'thp_cgroup_anon_bytes{cgroup="/odd\"na\\me.scope"} 2097152'
	# depth 3 by default: /machine.slice/a/b is in, .../deep (4) is not
	assert_output --partial 'cgroup="/machine.slice/a/b"'
	refute_output --partial deep
	# no THP at all: left out
	refute_output --partial user.slice
	assert_equal "$(metric thp_cgroups_exported)" 6
	run -0 "$THPCTL" metrics --top=2
	assert_equal "$(metric thp_cgroups_exported)" 2
	assert_equal "$(grep -c '^thp_cgroup_anon_bytes{' <<<"$output")" 2
	assert_output --partial 'cgroup="/system.slice"'
	assert_output --partial 'cgroup="/system.slice/big.service"'
}

@test "metrics --output: written whole and renamed into place, readable by node_exporter" {
	local out=$BATS_TEST_TMPDIR/textfile/thp.prom
	mkdir -p "${out%/*}"
	echo stale >"$out"
	run -0 "$THPCTL" metrics --output="$out"
	assert_output ''
	run -0 "$THPCTL" metrics
	assert_equal "$(cat "$out")" "$output"
	assert_equal "$(stat -c %a "$out")" 644
	run -0 ls "${out%/*}"
	assert_output thp.prom
	run -1 "$THPCTL" metrics --output="$BATS_TEST_TMPDIR/missing/thp.prom"
	assert_output --partial "cannot create a file beside"
}

@test "cgroups: largest THP first, within --depth, at most --top, --json an object with a named array" {
	run -0 "$THPCTL" cgroups --json
	run -0 jq -r '.cgroups | map(.cgroup) | join(" ")' <<<"$output"
	assert_output '/system.slice /system.slice/big.service /machine.slice/a/b /odd"na\me.scope /system.slice/shm.service /system.slice/small.service'
	run -0 "$THPCTL" cgroups --json --depth=1 --top=2
	run -0 jq -c '[.depth, .top, .memory_cgroups, .shown, (.cgroups | map(.cgroup))]' <<<"$output"
	assert_output '[1,2,3,2,["/system.slice","/odd\"na\\me.scope"]]'
	run -0 "$THPCTL" cgroups --json --sort=thp_fault_alloc --top=3
	run -0 jq -c '.cgroups | map([.cgroup, .thp_fault_alloc])' <<<"$output"
	assert_output '[["/system.slice",4],["/system.slice/big.service",2],["/machine.slice/a/b",1]]'
	run -0 "$THPCTL" cgroups --json --all --sort=cgroup --top=0
	run -0 jq -r '.cgroups | map(.cgroup) | join(" ")' <<<"$output"
	assert_output '/machine.slice/a/b /odd"na\me.scope /system.slice /system.slice/big.service /system.slice/shm.service /system.slice/small.service /user.slice'
}

@test "cgroups: text is a table of the same figures" {
	run -0 "$THPCTL" cgroups --top=1
	assert_line --regexp '^CGROUP +THP +ANON_THP +FILE_THP +SHMEM_THP +FAULT_ALLOC +COLLAPSE$'
	assert_line --regexp '^/system.slice +6291456 +6291456 +0 +0 +4 +0$'
}

@test "cgroups and metrics: usage errors and a missing hierarchy" {
	run -2 "$THPCTL" cgroups --depth=x
	assert_output --partial "--depth needs a number"
	run -2 "$THPCTL" cgroups --sort=pgfault
	assert_output --partial "cannot sort by 'pgfault'"
	run -2 "$THPCTL" metrics --top=-1
	run -2 "$THPCTL" metrics extra
	rm -rf "${THP_ROOT:?}/sys/fs"
	run -1 "$THPCTL" cgroups
	assert_output --partial "no cgroup v2 hierarchy"
	# metrics go on without cgroups
	run -0 "$THPCTL" metrics
	refute_output --partial thp_cgroup
}

@test "--json=short is one line, --json=pretty and plain --json indented; the same data" {
	run -0 "$THPCTL" cgroups --json=short
	assert_equal "${#lines[@]}" 1
	local short=$output
	run -0 "$THPCTL" --json=pretty cgroups
	[ "${#lines[@]}" -gt 10 ] || fail "pretty JSON in ${#lines[@]} lines"
	assert_equal "$(jq -c . <<<"$output")" "$(jq -c . <<<"$short")"
	run -0 "$THPCTL" --json cgroups
	assert_equal "$(jq -c . <<<"$output")" "$(jq -c . <<<"$short")"
	[ "${#lines[@]}" -gt 10 ] || fail "plain --json is not indented any more"
	run -0 "$THPCTL" ps --json=short
	assert_equal "${#lines[@]}" 1
	run -0 jq -e 'keys == ["processes"] and (.processes | type) == "array"' <<<"$output"
	run -2 "$THPCTL" cgroups --json=compact
	assert_output --partial "--json takes 'pretty' or 'short', not 'compact'"
	run -2 "$THPCTL" enable --json=short madvise
	assert_output --partial "not a read command"
}

# name{labels}<TAB>value of every sample of an exposition, values as %.10g
samples_of_text() {
	awk '!/^#/ && NF { v = $NF; sub(/ [^ ]*$/, ""); printf "%s\t%.10g\n", $0, v }'
}

@test "metrics --json: the samples of the text, as JSON; --output writes either" {
	local text json out
	run -0 "$THPCTL" metrics
	text=$(samples_of_text <<<"$output" | sort)
	run -0 "$THPCTL" metrics --json
	out=$output
	run -0 jq -e '(.families | length) > 20 and all(.families[]; (.name | type) == "string" and
		(.type == "gauge" or .type == "counter") and (.help | type) == "string" and
		all(.samples[]; (.value | type) == "number" and (.labels | type) == "object"))' <<<"$output"
	# rebuilt as exposition lines, with the format's escapes, from the JSON
	json=$(jq -r '.families[] | .name as $n | .samples[] |
		$n + (if (.labels | length) > 0 then "{" + ([.labels | to_entries[] | .key + "=\"" +
			(.value | gsub("\\\\"; "\\\\") | gsub("\""; "\\\"") | gsub("\n"; "\\n")) + "\""] |
			join(",")) + "}" else "" end) + " " + (.value | tostring)' <<<"$out" |
		samples_of_text | sort)
	[ "$(wc -l <<<"$text")" -gt 100 ] || fail "only $(wc -l <<<"$text") samples"
	assert_equal "$json" "$text"
	run -0 "$THPCTL" metrics --json=short
	assert_equal "${#lines[@]}" 1
	run -0 "$THPCTL" --json metrics --top=1
	run -0 jq '.families[] | select(.name == "thp_cgroups_exported") | .samples[0].value' <<<"$output"
	assert_output 1
	run -0 "$THPCTL" metrics --json --output="$BATS_TEST_TMPDIR/thp.json"
	assert_output ''
	run -0 jq -e '.families | length > 20' "$BATS_TEST_TMPDIR/thp.json"
}

@test "metrics: names from kernel files that are no metric name, or come twice, are left out, never written" {
	command -v promtool >/dev/null || skip "promtool (package prometheus) is not installed"
	local prom=$BATS_TEST_TMPDIR/m.prom
	printf 'thp_fault_alloc 12\nthp_bad-name 1\nthp_fault_alloc 13\nthp_\xc3\xa9t\xc3\xa9 2\nthp_split_pmd 4\n' >"$THP_ROOT/proc/vmstat"
	echo 5 >"$THP_ROOT/$SYS/hugepages-64kB/stats/odd.stat"
	# the largest cgroup, whose memory.stat names the event families
	printf 'anon_thp 8388608\nthp_fault_alloc 1\nthp_odd:ish 3\nthp_x.y 4\n' >"$THP_ROOT/$CG/system.slice/memory.stat"
	run -0 "$THPCTL" metrics
	printf '%s\n' "$output" >"$prom"
	run -0 promtool check metrics <"$prom"
	assert_output ''
	output=$(<"$prom")
	# the first of a name twice counts
	assert_equal "$(metric thp_fault_alloc_total)" 12
	assert_equal "$(metric thp_split_pmd_total)" 4
	refute_output --partial bad-name
	refute_output --partial 'odd.stat'
	refute_output --partial 'x.y'
	# the format allows a colon, but for recording rules only
	refute_output --partial 'odd:ish'
	assert_equal "$(metric 'thp_cgroup_fault_alloc_total{cgroup="/system.slice"}')" 1
}
