#!/usr/bin/env bats
# What the second review of the kernel series found in v2 (issue 26), the
# races and the userspace consequences; the kselftests of the series
# (25-kselftests.bats) carry the rest. Each test names the one-line change
# to the series that makes it fail. Helper: tests/helpers/thp-policy.c.
#
# The vfork test also runs on a stock kernel (make check-guest STOCK=6.1):
# it checks stock behaviour, which the series must keep.

load helpers
load hold

setup_file() {
	thp_save_knobs
	echo 10000 >"$THP/khugepaged/scan_sleep_millisecs"
}

teardown_file() {
	thp_restore_knobs
}

setup() {
	POL=$THP_HELPERS/thp-policy
	# THP_RACE_ROUNDS= sets all three. A vfork or exec round is an exec,
	# about 33 ms under TCG: 3000 vfork rounds took 96-110 s of a boot.
	# What a round finds when the series is wrong (make mutations, 3000
	# rounds: kernel/README.md): v2's exec order flipped 384 of 3000 vfork
	# rounds (13%), so 600 rounds miss it with a chance of 0.87^600, about
	# 2e-36; a missing exec copy lost 212 of 216 thread rounds that set the
	# policy, so 60 rounds (about 40 that set it) leave nothing to chance.
	# The fork race finds few stale children per round (29 of 135 forks in
	# 3000 rounds) and costs 2 s: it keeps 3000.
	ROUNDS=${THP_RACE_ROUNDS:-3000}
	VFORK_ROUNDS=${THP_RACE_ROUNDS:-600}
	EXEC_ROUNDS=${THP_RACE_ROUNDS:+$((THP_RACE_ROUNDS / 10))}
	EXEC_ROUNDS=${EXEC_ROUNDS:-60}
}

teardown() {
	hold_kill
}

# --- finding 1: exec takes the THP policy where the vfork parent cannot reach

# vfork() returns in the parent once the child's exec has released the old
# mm; the parent then flips PR_SET_THP_DISABLE at once. The child's new
# program must start with the value from before the vfork(), as on stock
# kernels. v2 copied the flags again after waking the parent, and the
# parent's flip sometimes reached the new program.
# Mutation: move mmf_copy_thp_policy() in exec_mmap() below exec_mm_release().
@test "1: vfork+exec: the child's program starts with the pre-vfork PR_SET_THP_DISABLE" {
	[ "$(nproc)" -ge 2 ] || skip "needs 2 CPUs for the parent to run beside the exec"
	run "$POL" vfork-race "$VFORK_ROUNDS"
	echo "# $(uname -r): $output" >&3
	assert_output --regexp "^rounds=$VFORK_ROUNDS pre=$VFORK_ROUNDS flipped=0\$"
	assert_success
}

# A second thread sets the policy at a random moment while the main thread
# execs (512 KiB of arguments: a long exec); if its prctl() returned before
# de_thread() killed it, the new program must have the policy. Stock kernels
# keep bprm_mm_init()'s early snapshot and lose some of these.
# Mutation: delete the mmf_copy_thp_policy() line in exec_mmap().
@test "1: a prctl() of another thread that returned before the exec killed it reaches the new program" {
	local what out=
	for what in disable advise; do
		if [ $what = advise ] && [ ! -e /proc/self/thp_policy ]; then
			continue
		fi
		run "$POL" exec-thread-race "$EXEC_ROUNDS" $what
		echo "# $(uname -r) $what: $output" >&3
		[[ $output =~ ^rounds=[0-9]+\ set=([0-9]+)\ lost=([0-9]+)$ ]] || fail "unexpected output: $output"
		[ "${BASH_REMATCH[1]}" -gt 0 ] || fail "$what: no round set the policy before the exec killed the thread: the test saw nothing"
		out+=" $what:lost=${BASH_REMATCH[2]}"
	done
	have_thp_stack_kernel || skip "stock kernel: the counts above are its behaviour (bprm_mm_init() snapshot),$out"
	[[ $out != *lost=[1-9]* ]] || fail "a prctl that returned 0 did not reach the new program:$out"
}

# --- finding 2: fork takes the THP policy under the parent's mmap_lock ------

# A thread cycles the policy (default, advise, never) and after change k maps
# marker k; the main thread forks. A child that has marker k must have change
# k (or k+1, made after the marker), never k-1. v2 took the policy in
# mm_init(), before dup_mmap() locks the parent.
# Mutation: delete the mmf_copy_thp_policy() line in dup_mmap().
@test "2: a child has the policy of the moment its mappings were copied" {
	[ -e /proc/self/thp_policy ] || skip "kernel without the per-process THP policy"
	run "$POL" fork-race "$ROUNDS"
	echo "# $output" >&3
	[[ $output =~ ^forks=([0-9]+)\ at_k=([0-9]+)\ at_k1=([0-9]+)\ stale=([0-9]+)\ markers=([0-9]+)$ ]] ||
		fail "unexpected output: $output"
	[ "${BASH_REMATCH[4]}" -eq 0 ] || fail "${BASH_REMATCH[4]} children had a marker made after a policy change they did not get"
	[ "${BASH_REMATCH[3]}" -gt 0 ] || fail "no child saw a change made after its last marker: the writer never ran beside a fork, the test saw nothing"
	assert_success
}

# --- finding 3: the write rule of process_madvise() -------------------------

# thpctl says what a refused write lacks; the kselftest
# thp.policy_write_permissions checks the kernel's rule itself.
@test "3: thpctl policy without CAP_SYS_NICE fails with EPERM and says it needs CAP_SYS_NICE" {
	[ -e /proc/self/thp_policy ] || skip "kernel without the per-process THP policy"
	command -v thpctl >/dev/null || skip "thpctl not installed in the guest"
	hold_start "$THP_HELPERS/thp-touch" --size 2 --hold
	# root with every capability but CAP_SYS_NICE (CAP_SYS_ADMIN kept)
	run setpriv --bounding-set -sys_nice --inh-caps -sys_nice -- thpctl policy "$HELD" advise
	[ "$status" -eq 1 ] || fail "expected exit 1, seen $status: $output"
	assert_output --partial "Operation not permitted (setting a policy needs CAP_SYS_NICE)"
	[ "$(<"/proc/$HELD/thp_policy")" = default ] || fail "the refused write changed the policy"
	run -0 thpctl policy "$HELD" advise
	[ "$(<"/proc/$HELD/thp_policy")" = advise ] || fail "root's write did not land"
}

# --- finding 4: thp_stat behaves as thp_policy --------------------------------

# a zombie has no mm: both files ESRCH; thpctl ps says it has no memory
# (the kselftest thp.stat_policy_no_mm checks the kernel side as well).
# Mutation: in proc_pid_thp_stat(), return 0 instead of -ESRCH without an mm.
@test "4: a zombie: thp_stat and thp_policy give ESRCH, thpctl ps says it has no memory" {
	have_thp_stack_kernel || skip "kernel without the thp-stack series"
	local zpid f i
	# sleep 0 exits and is never reaped: its parent became sleep 600
	bash -c 'sleep 0 & exec sleep 600' &
	local parent=$!
	zpid=
	for ((i = 0; i < 200; i++)); do
		zpid=$(ps -o pid=,stat= --ppid "$parent" | awk '$2 ~ /^Z/ { print $1; exit }')
		[ -n "$zpid" ] && break
		sleep 0.1
	done
	[ -n "$zpid" ] || { kill "$parent"; fail "no zombie child of $parent"; }
	for f in thp_stat thp_policy; do
		run cat "/proc/$zpid/$f"
		[[ $status -ne 0 && $output == *"No such process"* ]] ||
			{ kill "$parent"; fail "$f of a zombie: expected ESRCH, seen status $status '$output'"; }
	done
	if command -v thpctl >/dev/null; then
		run thpctl ps "$zpid"
		[[ $status -eq 1 && $output == *"has no user memory"* ]] ||
			{ kill "$parent"; fail "thpctl ps of a zombie: status $status '$output'"; }
	fi
	kill "$parent"
}
