#!/usr/bin/env bats
# thpctl end to end, with thpd stopped (so every change goes to sysfs
# directly; thpctl-through-thpd is the thpd suites' business): status,
# enable, defrag, run, ps, policy, --json, exit codes. On the patched kernel
# everything; on a stock kernel (no mode file) the stock paths: numbers
# translated to words, glibc's tunable, PR_SET_THP_DISABLE, "unsupported".

load helpers
load hold

setup_file() {
	thp_take_knobs
	echo 10000 >"$THP/khugepaged/scan_sleep_millisecs"
}

teardown_file() {
	thp_give_back_knobs
}

setup() {
	[ -e "$THP/enabled" ] || skip "kernel without THP"
	THPCTL=$(command -v thpctl) || fail "thpctl is not installed"
	# THP_ROOT is for tests only; nothing may leak in from outside
	unset GLIBC_TUNABLES THP_ROOT THPD_SOCKET
	HELD=
}

teardown() {
	hold_kill
}

# the series' patches; each test needing one skips without it
need_mode() {
	have_thp_stack_kernel || skip "kernel without the numeric modes (no $THP/mode)"
}

need_policy() {
	[ -e /proc/self/thp_policy ] || skip "kernel without the per-process THP policy (no /proc/self/thp_policy)"
}

need_stock() {
	have_thp_stack_kernel && skip "patched kernel: the stock path is covered with THP_ROOT below and on the host"
	return 0
}

features_json() {
	local m=false p=false s=false z=false sh=false
	[ -e "$THP/mode" ] && m=true
	[ -e /proc/self/thp_policy ] && p=true
	[ -e /proc/self/thp_stat ] && s=true
	compgen -G "$THP/hugepages-*kB" >/dev/null && z=true
	[ -e "$THP/shmem_enabled" ] && sh=true
	echo "{\"mode_file\": $m, \"thp_policy\": $p, \"thp_stat\": $s, \"per_size\": $z, \"shmem\": $sh}"
}

# ---- status ----

@test "status --json matches sysfs and procfs" {
	thp_set enabled always
	thp_set defrag madvise
	run -0 --separate-stderr "$THPCTL" status --json
	local j=$output
	jq -e . <<<"$j" >/dev/null || fail "not JSON: $j"
	run -0 jq -r '"\(.enabled) \(.mode) \(.defrag)"' <<<"$j"
	# the RFC number only where the kernel has the mode file
	if have_thp_stack_kernel; then
		assert_output "always 1 madvise"
	else
		assert_output "always null madvise"
	fi
	run -0 jq -e --argjson p "$(<"$THP/khugepaged/pages_to_scan")" \
		--argjson m "$(<"$THP/khugepaged/max_ptes_none")" \
		'.khugepaged.pages_to_scan == $p and .khugepaged.max_ptes_none == $m
		 and .khugepaged.scan_sleep_millisecs == 10000
		 and (.khugepaged.full_scans | type) == "number"
		 and (.khugepaged.pages_collapsed | type) == "number"' <<<"$j"
	run -0 jq -e --argjson f "$(features_json)" '.kernel_features == $f
		and .thpd == null and (.free_hugepage_blocks | type) == "number"
		and (.anon_huge_kib | type) == "number"
		and (.counters.thp_fault_alloc | type) == "number"' <<<"$j"
	# counters only grow: status saw no more than vmstat shows now
	local seen now
	seen=$(jq .counters.thp_fault_alloc <<<"$j")
	now=$(vmstat thp_fault_alloc)
	[ "$seen" -le "$now" ] || fail "status thp_fault_alloc $seen > vmstat $now"
}

@test "status text: mode, khugepaged, availability, thpd not running" {
	thp_set enabled always
	thp_set defrag always
	run -0 "$THPCTL" status --all
	assert_line --regexp '^enabled: +always$'
	if have_thp_stack_kernel; then
		assert_line --regexp '^rfc mode: +2 \(hugepages at fault everywhere, compacting for them\)$'
	else
		assert_line --regexp '^rfc mode: +none$'
	fi
	assert_line --regexp '^defrag: +always$'
	assert_line --regexp '^ +scan_sleep_millisecs: +10000$'
	assert_line --regexp '^free order-9\+ blocks: +[0-9]+$'
	assert_line --regexp '^AnonHugePages \(KiB\): +[0-9]+$'
	assert_line --regexp '^thpd: +not running$'
}

@test "status: a write error on stdout is exit 1" {
	run -1 --separate-stderr bash -c '"$1" status >/dev/full' _ "$THPCTL"
	[[ $stderr == *'write error'* ]] || fail "stderr: $stderr"
}

# ---- enable / defrag ----

@test "enable 0/1/2/never/words on the patched kernel: the kernel's state follows" {
	need_mode
	local v want
	for v in 0:madvise/madvise/0 1:always/madvise/1 2:always/always/2 never:never/always/never \
		madvise:madvise/always/custom always:always/always/2; do
		run -0 --separate-stderr "$THPCTL" enable "${v%%:*}"
		want=${v#*:}
		[ "$(thp_get enabled)/$(thp_get defrag)/$(<"$THP/mode")" = "$want" ] ||
			fail "enable ${v%%:*}: expected $want, seen $(thp_get enabled)/$(thp_get defrag)/$(<"$THP/mode")"
		assert_output --partial "written to sysfs: thpd is not running"
		# the RFC mode with what it means; none for never and other pairs
		if [[ ${want##*/} == [012] ]]; then
			assert_output --partial ", rfc mode ${want##*/}: "
		else
			refute_output --partial "rfc mode"
		fi
		[[ $stderr != *'no numeric'* ]] || fail "patched kernel, yet: $stderr"
	done
}

@test "enable 0/1/2 on a stock kernel: translated to words, and said so" {
	need_stock
	local v want
	for v in 0:madvise/madvise 1:always/madvise 2:always/always; do
		run -0 --separate-stderr "$THPCTL" enable "${v%%:*}"
		want=${v#*:}
		[ "$(thp_get enabled)/$(thp_get defrag)" = "$want" ] ||
			fail "enable ${v%%:*}: expected $want, seen $(thp_get enabled)/$(thp_get defrag)"
		[[ $stderr == *"no numeric THP modes: ${v%%:*} is the RFC's mode ${v%%:*} ("*"), not off: enabled=${want%/*} defrag=${want#*/}"* ]] ||
			fail "stderr: $stderr"
	done
}

@test "enable: invalid values are exit 2 and change nothing" {
	thp_set enabled always
	local v
	for v in 3 -1 '' al 1x ALWAYS; do
		run -2 "$THPCTL" enable "$v"
	done
	[ "$(thp_get enabled)" = always ] || fail "enabled changed to $(thp_get enabled)"
}

@test "enable as an unprivileged user: the failed write is reported (exit 1)" {
	command -v setpriv >/dev/null || skip "no setpriv"
	thp_set enabled madvise
	run -1 setpriv --reuid=65534 --regid=65534 --clear-groups "$THPCTL" enable always
	assert_output --partial "failed to write 'always' to $THP/enabled: Permission denied"
	[ "$(thp_get enabled)" = madvise ] || fail "enabled changed to $(thp_get enabled)"
}

@test "defrag: every value, then junk" {
	local v
	for v in always defer defer+madvise madvise never; do
		run -0 "$THPCTL" defrag "$v"
		[ "$(thp_get defrag)" = "$v" ] || fail "defrag $v: seen $(thp_get defrag)"
	done
	run -2 "$THPCTL" defrag sometimes
	[ "$(thp_get defrag)" = never ] || fail "junk changed defrag"
}

# ---- run ----

@test "run --advise makes plain memory huge under system madvise" {
	need_policy
	thp_set enabled madvise
	run -0 "$THP_HELPERS/thp-touch" --size 8
	assert_kv anon_huge_kib -eq 0
	run -0 "$THPCTL" run --advise -- "$THP_HELPERS/thp-touch" --size 8
	assert_kv pattern = ok
	assert_kv anon_huge_kib -eq 8192
	if [ -e /proc/self/thp_stat ]; then
		assert_kv thp_stat.thp_fault_alloc -ge 4
	fi
}

@test "run --never keeps memory small under system always" {
	thp_set enabled always
	run -0 "$THP_HELPERS/thp-touch" --size 8
	assert_kv anon_huge_kib -eq 8192
	run -0 "$THPCTL" run --never -- "$THP_HELPERS/thp-touch" --size 8
	assert_kv pattern = ok
	assert_kv anon_huge_kib -eq 0
}

@test "run --default undoes an inherited never" {
	thp_set enabled always
	run -0 "$THPCTL" run --never -- "$THPCTL" run --default -- "$THP_HELPERS/thp-touch" --size 8
	assert_kv anon_huge_kib -eq 8192
}

@test "run: the policy is the command's own, visible in procfs" {
	need_policy
	run -0 "$THPCTL" run --advise -- cat /proc/self/thp_policy
	assert_output advise
	run -0 "$THPCTL" run --never -- grep -E '^THP_(policy|enabled):' /proc/self/status
	assert_line --regexp '^THP_policy:\s+never$'
	assert_line --regexp '^THP_enabled:\s+0$'
}

@test "run: no fork, and the command's exit status" {
	# no fork: the command runs as the very process that started thpctl
	run -0 bash -c 'echo $$; exec "$1" run --never -- sh -c "echo \$\$"' _ "$THPCTL"
	[ "${lines[0]}" = "${lines[1]}" ] || fail "thpctl forked: pids ${lines[*]}"
	run -42 "$THPCTL" run --never -- sh -c 'exit 42'
}

@test "run: 127 when not found, 126 when not executable" {
	run -127 "$THPCTL" run -- no-such-command-xyz
	assert_output --partial 'no-such-command-xyz: command not found'
	printf 'data\n' >"$BATS_TEST_TMPDIR/plain"
	chmod 644 "$BATS_TEST_TMPDIR/plain"
	run -126 "$THPCTL" run -- "$BATS_TEST_TMPDIR/plain"
	assert_output --partial 'Permission denied'
	run -126 "$THPCTL" run -- /tmp
	run -2 "$THPCTL" run --advise --never -- true
}

# the stock path: for real on a stock kernel, with the features hidden by a
# THP_ROOT tree holding only enabled/defrag on the patched one
stock_advise_malloc() {
	thp_set enabled madvise
	run -0 "$THP_HELPERS/thp-malloc" --size 16
	assert_kv anon_huge_kib -eq 0
	run -0 --separate-stderr "$THPCTL" run --advise -- "$THP_HELPERS/thp-malloc" --size 16
	assert_kv glibc_tunables = glibc.malloc.hugetlb=1
	assert_kv anon_huge_kib -ge 4096
	assert_kv pattern = ok
	[[ $stderr == *'only memory from malloc'* ]] || fail "no warning: $stderr"
}

@test "run --advise on a stock kernel: glibc's tunable makes malloc'd memory huge" {
	need_stock
	stock_advise_malloc
}

@test "run --advise, stock path with the patched features hidden by THP_ROOT" {
	need_policy
	local fake=$BATS_TEST_TMPDIR/root
	mkdir -p "$fake$THP/khugepaged" "$fake/proc"
	thp_set enabled madvise
	cat "$THP/enabled" >"$fake$THP/enabled"
	cat "$THP/defrag" >"$fake$THP/defrag"
	THP_ROOT=$fake stock_advise_malloc
}

# ---- ps ----

@test "ps: a process's hugepages (and counters and policy when the kernel has them)" {
	thp_set enabled madvise
	hold_start "$THP_HELPERS/thp-touch" --size 8 --madvise --hold
	run -0 "$THPCTL" ps --json "$HELD"
	local j
	j=$(jq -c .processes <<<"$output")
	run -0 jq -e --argjson p "$HELD" 'length == 1 and .[0].pid == $p
		and .[0].comm == "thp-touch" and .[0].anon_huge_kib >= 8192' <<<"$j"
	if [ -e /proc/self/thp_policy ]; then
		run -0 jq -e '.[0].policy == "default"' <<<"$j"
	else
		run -0 jq -e '.[0] | has("policy") | not' <<<"$j"
	fi
	if [ -e /proc/self/thp_stat ]; then
		run -0 jq -e '.[0].thp_fault_alloc >= 4 and (.[0] | has("thp_zero_page_fault"))' <<<"$j"
	fi
	run -0 "$THPCTL" ps "$HELD"
	assert_line --index 0 --regexp '^ *PID +COMM +.*ANONHUGE_KIB'
	assert_line --index 1 --regexp "^ *$HELD +thp-touch +"
	# in the full list, which the biggest user heads when sorted
	run -0 "$THPCTL" --json ps --sort=anon_huge_kib
	run -0 jq -e --argjson p "$HELD" '.processes | any(.[]; .pid == $p) and .[0].anon_huge_kib >= 8192
		and (map(.pid) | unique | length) == length' <<<"$output"
}

@test "ps: kernel threads and missing PIDs named explicitly are errors" {
	run -1 "$THPCTL" ps 2
	assert_output --partial 'kernel thread'
	run -1 "$THPCTL" ps 4194304
	assert_output --partial 'no process with PID 4194304'
	run -2 "$THPCTL" ps --sort=nothing
}

# ---- policy ----

@test "policy: read and set another process's policy" {
	need_policy
	thp_set enabled madvise
	hold_start "$THP_HELPERS/thp-touch" --size 2 --hold
	run -0 "$THPCTL" policy "$HELD"
	assert_line --regexp '^policy: +default$'
	run -0 "$THPCTL" policy "$HELD" advise
	assert_line --regexp '^policy: +advise$'
	[ "$(<"/proc/$HELD/thp_policy")" = advise ] || fail "kernel says $(<"/proc/$HELD/thp_policy")"
	run -0 "$THPCTL" --json policy "$HELD"
	jq -e '.policy == "advise" and .comm == "thp-touch"' <<<"$output"
	run -2 "$THPCTL" policy "$HELD" sometimes
	run -1 "$THPCTL" policy 4194304
}

@test "policy: setting needs privilege (exit 1, the file named)" {
	need_policy
	command -v setpriv >/dev/null || skip "no setpriv"
	hold_start "$THP_HELPERS/thp-touch" --size 2 --hold
	run -1 setpriv --reuid=65534 --regid=65534 --clear-groups "$THPCTL" policy "$HELD" never
	assert_output --partial "/proc/$HELD/thp_policy"
	[ "$(<"/proc/$HELD/thp_policy")" = default ] || fail "policy changed"
}

@test "policy on a stock kernel: read from THP_enabled:, setting is exit 2" {
	need_stock
	"$THPCTL" run --never -- sleep 120 &
	local pid=$!
	wait_until --pid "$pid" 10 grep -qx sleep "/proc/$pid/comm" || fail "thpctl run did not exec sleep"
	run -0 "$THPCTL" --json policy "$pid"
	kill "$pid"
	run -0 jq -e '.policy == "never" and .thp_enabled == 0' <<<"$output"
	run -0 "$THPCTL" --json policy 1
	run -0 jq -e '.policy == "default" and .thp_enabled == 1' <<<"$output"
	run -2 "$THPCTL" policy 1 never
	assert_output --partial 'can be read, not set'
}

@test "run --advised-only: huge only where advised (Linux 6.18+), else said plainly and nothing run" {
	thp_set enabled always
	run --separate-stderr "$THPCTL" run --advised-only -- "$THP_HELPERS/thp-touch" --size 8
	if [ "$status" -eq 1 ] && [[ $stderr == *'needs PR_THP_DISABLE_EXCEPT_ADVISED (Linux 6.18 or later)'* ]]; then
		# every guest kernel today (6.1, 6.12): the command did not run
		[ -z "$output" ] || fail "the command ran: $output"
		return 0
	fi
	[ "$status" -eq 0 ] || fail "exit $status: $stderr"
	assert_kv anon_huge_kib -eq 0
	run -0 "$THPCTL" run --advised-only -- "$THP_HELPERS/thp-touch" --size 8 --madvise
	assert_kv anon_huge_kib -eq 8192
}

@test "policy --collapse: MADV_COLLAPSE makes a process's plain memory huge" {
	thp_set enabled madvise
	hold_start "$THP_HELPERS/thp-touch" --size 8 --hold
	run -0 "$THPCTL" ps --json "$HELD"
	jq -e '.processes[0].anon_huge_kib == 0' <<<"$output" || fail "already huge: $output"
	run -0 "$THPCTL" --json policy --collapse "$HELD"
	run -0 jq -e '.collapse.ranges >= 1 and .collapse.anon_huge_kib_before == 0
		and .collapse.anon_huge_kib_after >= 8192' <<<"$output"
	run -0 "$THPCTL" --json ps "$HELD"
	jq -e '.processes[0].anon_huge_kib >= 8192' <<<"$output"
}
