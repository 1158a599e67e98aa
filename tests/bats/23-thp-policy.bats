#!/usr/bin/env bats
# Per-process THP policy (kernel patches 3-7): prctl for oneself, inherited
# across fork and exec, reset by a secure exec; /proc/<pid>/thp_policy for
# the administrator; status and smaps reflect it.

load helpers
load hold

setup_file() {
	thp_save_knobs
	echo 3 >/proc/sys/vm/drop_caches
	echo 1 >/proc/sys/vm/compact_memory
}

teardown_file() {
	thp_restore_knobs
	rm -rf /thp-suid.*
}

setup() {
	[ -e /proc/self/thp_policy ] || skip "kernel without the per-process THP policy"
	POL=$THP_HELPERS/thp-policy
	# fault-time behaviour unless a test wants khugepaged
	echo 10000 >"$THP/khugepaged/scan_sleep_millisecs"
}

teardown() {
	hold_kill
}

# THPeligible of the smaps VMA starting at ADDR of PID
thp_eligible() {
	awk -v a="${2#0x}" '
		$1 ~ /^[0-9a-f]+-[0-9a-f]+$/ { split($1, r, "-"); in_vma = (r[1] == a); next }
		in_vma && $1 == "THPeligible:" { print $2; exit }' "/proc/$1/smaps"
}

@test "prctl: get/set round trip, bad values are EINVAL, default is default" {
	run -0 "$POL" get
	assert_line --index 0 default
	run -0 "$POL" set advise -- "$POL" get
	assert_line --index 0 advise
	run -0 "$POL" set never -- "$POL" get
	assert_line --index 0 never
	run -0 "$POL" set default -- "$POL" get
	assert_line --index 0 default
	local v
	for v in 3 -1 0x54485001; do
		run -1 "$POL" set "$v"
		[ "$output" = "error=EINVAL" ] || fail "PR_SET_THP_MM_POLICY $v: expected error=EINVAL, seen '$output'"
	done
}

@test "never and PR_SET_THP_DISABLE are one state, visible through each other" {
	run -0 "$POL" set never -- "$POL" get
	assert_line --index 0 never
	assert_line --index 1 thp_disable=1
	run -0 "$POL" disable 1 -- "$POL" get
	assert_line --index 0 never
	assert_line --index 1 thp_disable=1
	# PR_SET_THP_DISABLE 1 replaces advise
	run -0 "$POL" set advise -- "$POL" disable 1 -- "$POL" get
	assert_line --index 0 never
	run -0 "$POL" set never -- "$POL" disable 0 -- "$POL" get
	assert_line --index 0 default
	assert_line --index 1 thp_disable=0
	run -0 "$POL" set advise -- "$POL" set default -- grep -E '^THP_(enabled|policy)' /proc/self/status
	assert_line "THP_enabled:	1"
	assert_line "THP_policy:	default"
}

@test "mode 0: the advise wrapper makes a helper's plain memory huge; without it, not" {
	thp_set enabled 0
	run -0 "$THP_HELPERS/thp-touch" --size 8
	assert_kv pattern = ok
	assert_kv anon_huge_kib -eq 0
	assert_kv thp_stat.thp_fault_alloc -eq 0
	run -0 "$POL" set advise -- "$THP_HELPERS/thp-touch" --size 8
	assert_kv pattern = ok
	assert_kv anon_huge_kib -eq 8192
	assert_kv thp_stat.thp_fault_alloc -eq 4
}

@test "advise is inherited by a forked child and kept across its exec" {
	thp_set enabled 0
	# sh forks, the child execs the helper
	run -0 "$POL" set advise -- sh -c '"$1" get; "$2" --size 8; true' _ "$POL" "$THP_HELPERS/thp-touch"
	assert_line --index 0 advise
	assert_kv pattern = ok
	assert_kv anon_huge_kib -eq 8192
	assert_kv thp_stat.thp_fault_alloc -eq 4
	# and a child forked without exec
	run -0 "$POL" set advise -- "$THP_HELPERS/thp-mm" --plain --size 8 fork
	assert_kv parent.thp_fault_alloc -eq 4
	assert_kv child.pattern = ok
	run -0 "$POL" set advise -- sh -c '"$1" --plain --size 8 fork >/dev/null; "$2" get' _ "$THP_HELPERS/thp-mm" "$POL"
	assert_line --index 0 advise
}

@test "MADV_NOHUGEPAGE beats advise; system never beats advise" {
	thp_set enabled 0
	run -0 "$POL" set advise -- "$THP_HELPERS/thp-touch" --size 8 --nohugepage
	assert_kv pattern = ok
	assert_kv anon_huge_kib -eq 0
	assert_kv thp_stat.thp_fault_alloc -eq 0
	thp_set enabled never
	run -0 "$POL" set advise -- "$THP_HELPERS/thp-touch" --size 8
	assert_kv anon_huge_kib -eq 0
	assert_kv thp_fault_alloc -eq 0
}

@test "never beats system always and MADV_HUGEPAGE" {
	thp_set enabled 2
	run -0 "$POL" set never -- "$THP_HELPERS/thp-touch" --size 8 --madvise
	assert_kv pattern = ok
	assert_kv anon_huge_kib -eq 0
	assert_kv thp_fault_alloc -eq 0
	run -0 "$THP_HELPERS/thp-touch" --size 8
	assert_kv anon_huge_kib -eq 8192
}

@test "a setuid helper exec'd under advise runs with default; a plain copy keeps advise" {
	command -v setpriv >/dev/null || skip "setpriv (util-linux) not in the guest"
	local d
	d=$(mktemp -d /thp-suid.XXXXXX)
	chmod 755 "$d"
	cp "$POL" "$d/suid-thp-policy"
	cp "$POL" "$d/plain-thp-policy"
	chown root:root "$d/suid-thp-policy" "$d/plain-thp-policy"
	chmod 4755 "$d/suid-thp-policy"
	chmod 755 "$d/plain-thp-policy"
	# an unprivileged parent sets advise for itself, then execs the helpers
	run -0 setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$d/plain-thp-policy" set advise -- "$d/plain-thp-policy" get
	assert_line --index 0 advise
	run -0 setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$d/plain-thp-policy" set advise -- "$d/suid-thp-policy" get
	[ "${lines[0]}" = default ] || fail "setuid exec under advise: expected default, seen '${lines[0]}'"
	# never is PR_SET_THP_DISABLE, which has always survived a setuid exec
	run -0 setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$d/plain-thp-policy" set never -- "$d/suid-thp-policy" get
	assert_line --index 0 never
}

@test "procfs: root sets advise on a running process; khugepaged collapses its existing memory" {
	thp_set enabled 0
	hold_start "$THP_HELPERS/thp-touch" --size 8 --hold
	local addr pid=$HELD
	addr=$(hold_value addr)
	[ "$(hold_value anon_huge_kib)" = 0 ] || fail "expected 4 KiB pages first: $(<"$HOLD_OUT")"
	[ "$(<"/proc/$pid/thp_policy")" = default ] || fail "expected default, seen $(<"/proc/$pid/thp_policy")"
	[ "$(thp_eligible "$pid" "$addr")" = 0 ] || fail "THPeligible before: expected 0, seen $(thp_eligible "$pid" "$addr")"
	echo advise >"/proc/$pid/thp_policy"
	[ "$(<"/proc/$pid/thp_policy")" = advise ] || fail "expected advise, seen $(<"/proc/$pid/thp_policy")"
	grep -q "^THP_policy:	advise$" "/proc/$pid/status" || fail "status: $(grep THP_ "/proc/$pid/status")"
	[ "$(thp_eligible "$pid" "$addr")" = 1 ] || fail "THPeligible after: expected 1, seen $(thp_eligible "$pid" "$addr")"
	echo 100 >"$THP/khugepaged/scan_sleep_millisecs"
	echo 4096 >"$THP/khugepaged/pages_to_scan"
	local i mapped=0 scans0
	scans0=$(<"$THP/khugepaged/full_scans")
	for ((i = 0; i < 600; i++)); do
		mapped=$(($(awk '$1 == "AnonHugePages:" { print $2 }' "/proc/$pid/smaps_rollup") / 2048))
		[ "$mapped" -ge 4 ] && break
		sleep 0.2
	done
	[ "$mapped" -ge 4 ] || fail "khugepaged: expected 4 hugepages within 120 s, seen $mapped (full_scans $scans0 -> $(<"$THP/khugepaged/full_scans"))"
	local collapsed
	collapsed=$(awk '$1 == "thp_collapse_alloc" { print $2 }' "/proc/$pid/thp_stat")
	[ "$collapsed" -ge 4 ] || fail "expected thp_collapse_alloc >= 4 in the process, seen $collapsed"
	# close stdin: the helper re-checks its pattern and exits
	hold_finish || fail "thp-touch exited with $?: $(<"$HOLD_OUT")"
	[ "$(hold_value pattern_final)" = ok ] || fail "data after collapse: $(<"$HOLD_OUT")"
	[ "$(hold_value anon_huge_kib_final)" = 8192 ] ||
		fail "expected anon_huge_kib_final=8192, seen $(hold_value anon_huge_kib_final)"
}

@test "procfs: bad words are EINVAL, unprivileged writes refused, nothing changes" {
	command -v setpriv >/dev/null || skip "setpriv (util-linux) not in the guest"
	hold_start "$THP_HELPERS/thp-touch" --size 2 --hold
	local pid=$HELD f=/proc/$HELD/thp_policy w
	for w in bogus 1 adv advisex '' 'advise never'; do
		run bash -c 'printf "%s\n" "$1" >"$2"' _ "$w" "$f"
		[[ $status -ne 0 && $output == *"Invalid argument"* ]] ||
			fail "writing '$w': expected EINVAL, seen status $status '$output'"
	done
	[ "$(<"$f")" = default ] || fail "bad writes changed the policy to $(<"$f")"
	# an unprivileged user, on root's process: the file is 0644, so the open
	# for writing is refused (bash, not dash: dash's echo reports every write
	# error as "I/O error")
	run setpriv --reuid=65534 --regid=65534 --clear-groups bash -c "echo advise >$f"
	[[ $status -ne 0 && $output == *"Permission denied"* ]] ||
		fail "uid 65534 writing root's thp_policy: expected EACCES, seen status $status '$output'"
	# ... and on its own process
	run setpriv --reuid=65534 --regid=65534 --clear-groups bash -c 'echo advise >/proc/$$/thp_policy'
	[[ $status -ne 0 && $output == *"Operation not permitted"* ]] ||
		fail "uid 65534 writing its own thp_policy: expected EPERM, seen status $status '$output'"
	# reading is open to all, as the THP_policy: line of status is
	run setpriv --reuid=65534 --regid=65534 --clear-groups cat "$f"
	[[ $status -eq 0 && $output == default ]] ||
		fail "uid 65534 reading root's thp_policy: expected default, seen status $status '$output'"
	[ "$(<"$f")" = default ] || fail "refused writes changed the policy to $(<"$f")"
	# root can
	echo never >"$f"
	[ "$(<"$f")" = never ] || fail "root wrote never, reads $(<"$f")"
	grep -q "^THP_enabled:	0$" "/proc/$pid/status" || fail "never must show THP_enabled 0: $(grep THP_ "/proc/$pid/status")"
	echo default >"$f"
	[ "$(<"$f")" = default ] || fail "root wrote default, reads $(<"$f")"
}

# bprm_mm_init() copies the policy into the new program's mm long before
# exec_mmap() installs it. The procfs writer holds the target's
# cred_guard_mutex, which the exec holds from before bprm_mm_init() until
# after its new credentials are in place (series v3, patch 7): a write lands
# before the exec began and is carried, or on the new program.
@test "procfs: a policy written while the process execs is never lost" {
	run "$POL" exec-race 200
	echo "# $output" >&3
	assert_output --regexp '^rounds=200 written=200 lost=0$'
	assert_success
}
