#!/bin/bash
# make check's guest half (called by the check target of tests/vm/vm.mk
# after the host prerequisites are built): a queue of jobs, taken by two
# workers that run side by side.
#
#   host           check-host, fuzz-smoke, checkpatch
#   stock-6.12     STOCK_CHECK_SUITES on stock 6.12
#   guest-6.1-1    BASE61_FIRST_SUITES on patched 6.1
#   guest-6.1-2    every other suite on patched 6.1, and the after-reboot
#                  suites (so every suite runs on 6.1)
#   guest-6.1-mode2  20-modes' MODE2_REGEX tests, booted with mode 2
#   guest-6.12-1   BASE612_FIRST_SUITES on patched 6.12
#   guest-6.12-2   the rest of BASE612_CHECK_SUITES on patched 6.12
#
# Why a queue of two workers: a TCG guest keeps about one of the two cores
# busy (QEMU's CPU time over its wall time, printed after each boot: 0.7-1.1),
# so two boots at a time fill the machine and a third would only slow the
# others. Each worker takes the first job in JOBS that nobody has taken and
# whose kernel is built, so that on a cold machine the workers run the host
# tests and the stock boot while the kernels build, and on a warm one the
# longest jobs go first and both workers end at about the same time. With
# two fixed lanes, a cold run had one worker idle for the last 25 minutes
# (waiting for the 6.12 kernel, then alone with its boot).
#
# The kernels build from the start, both at normal priority: the cold run
# of dd1e200 built 6.12 at nice 19, the workers kept both cores busy with
# 6.1's boots, and 6.12 was ready only at 2620 s, its boots last (3765 s in
# all, with a third guest beside them). Every other prerequisite of a
# boot (programs, payload, image, stock image) is built before the workers
# start: two jobs building the same file at once would race. The jobs
# only boot, each from its own copy of the payload.
#
# One vCPU for the boots whose suites need no second one (every boot but
# the two with the kernel suites, whose races and stress want two CPUs):
# two guests at a time then fit the two cores. Two vCPUs keep 1.3 cores
# busy for a guest that runs one thing at a time (a fork+exec loop: 76 s of
# QEMU CPU in 57 s), and two such guests side by side took 361-363 s for
# six suites that took 291-313 s at one vCPU each (10, 11, 20, 21, 23, 40
# on patched 6.1, 67 passed each way).
#
# The stress suite runs THP_STRESS_SECONDS (default here 90) on each
# patched kernel, three minutes in all; its own default, for one boot, is
# three minutes (THP_STRESS_SECONDS=1800 make check for a long run).
# 55-thpd-collapse's budget tests, thpd's own logic, run on patched 6.1
# only (THP_COLLAPSE_BUDGET=skip on 6.12).
#
# Output: every line of a worker is prefixed with its name ([a], [b], and
# [k6.1], [k6.12] for the kernel builds) and kept whole in
# build/results/lane-NAME.log; each job's wall time goes to
# build/results/phases (tests/vm/timed.sh).
#
# env (from vm.mk): MAKE, VM, THP_CACHE, BUILD, STOCK_CHECK_SUITES,
# BASE61_FIRST_SUITES, BASE612_CHECK_SUITES, BASE612_FIRST_SUITES,
# MODE2_REGEX (the mode-2 boot's bats --filter)
# The jobs' functions run only through lane(): shellcheck cannot see it.
# shellcheck disable=SC2317
set -u
cd "$(dirname "$0")/../.." || exit 1
: "${MAKE:=make}" "${VM:=}" "${THP_CACHE:=/var/cache/thp-stack}" "${BUILD:=build}"
res=build/results
timed=tests/vm/timed.sh
# THP_CHECK_DRY_RUN=1: print each job's commands instead of running them,
# kernels "built" at once (tests/host/10-harness.bats checks the queue)
dry=${THP_CHECK_DRY_RUN:-}
[ -z "$dry" ] || timed=dry_timed
dry_timed() {
	local job=$1
	shift
	echo "dry: $job THP_BASE=${THP_BASE:-} THP_COLLAPSE_BUDGET=${THP_COLLAPSE_BUDGET:-} THP_STRESS_SECONDS=${THP_STRESS_SECONDS:-} $*"
	# THP_CHECK_DRY_FAIL=JOB: that job fails a test, as a boot says it
	local rc=0
	[ "$job" != "${THP_CHECK_DRY_FAIL:-}" ] || { echo "run-guest: failed: 99-x.bats: a test of $job" >&2 && rc=1; }
	echo "$job: dry run" >>"$res/phases"
	echo "timed: $job: dry run" >&2
	return $rc
}
mkdir -p "$res"
rm -rf "$res"/host.tap "$res"/guest.tap "$res"/phases "$res"/lane-*.log "$res"/kernel-*.rc "$res"/taken

# the long boots first, the short jobs last (seconds of wall time in the
# cold run of daa02e8: the stock boot 1134, each 6.1 half about 800 and
# each 6.12 half about 600 with its boot, host 390, mode2 47), so that the
# two workers end close together; a job whose kernel is not built yet is
# passed over until it is
JOBS=(stock-6.12 guest-6.12-1 guest-6.1-2 guest-6.1-1 guest-6.12-2 host guest-6.1-mode2)

# the suites not in $1 of those in $2 (both space-separated)
minus() {
	local s out=
	for s in $2; do
		[[ " $1 " == *" $s "* ]] || out+=" $s"
	done
	echo "${out# }"
}
all_suites=$(cd tests/bats && echo *.bats reboot/*.bats)
# a name in a first half that is not a suite of that boot would run nothing
bad=$(minus "$all_suites" "$BASE61_FIRST_SUITES") bad612=$(minus "$BASE612_CHECK_SUITES" "$BASE612_FIRST_SUITES")
if [ -n "$bad$bad612" ]; then
	echo "check: not suites of their boot: ${bad:+BASE61_FIRST_SUITES: $bad }${bad612:+BASE612_FIRST_SUITES: $bad612}" >&2
	exit 2
fi
BASE61_REST=$(minus "$BASE61_FIRST_SUITES" "$all_suites")
BASE612_REST=$(minus "$BASE612_FIRST_SUITES" "$BASE612_CHECK_SUITES")

M="$MAKE --no-print-directory"
# a check boot (no make prerequisites: they are built before the workers)
# shellcheck disable=SC2206
guest=(tests/vm/run-guest.sh --payload "$BUILD/payload" $VM --mode check)
one=(--smp 1)
export THP_CACHE
export THP_STRESS_SECONDS=${THP_STRESS_SECONDS:-90}
# run NAME's commands with each output line prefixed, and its log kept
lane() {
	local name=$1
	shift
	"$@" 2>&1 | tee "$res/lane-$name.log" | sed -u "s/^/[$name] /"
	return "${PIPESTATUS[0]}"
}
# build BASE's kernel (PREFIX... runs the make); status in kernel-BASE.rc
kernel() {
	local base=$1 rc=0
	shift
	# shellcheck disable=SC2086
	$timed "kernel-$base" "$@" $M kernel BASE="$base" || rc=$?
	echo "$rc" >"$res/kernel-$base.rc"
	return "$rc"
}

# job_kernel JOB: the kernel JOB boots (nothing for the stock boot and host)
job_kernel() {
	case $1 in
	guest-6.1-*) echo 6.1 ;;
	guest-6.12-*) echo 6.12 ;;
	esac
}

run_job() {
	local job=$1 base rc=0
	base=$(job_kernel "$job")
	if [ -n "$base" ] && [ "$(cat "$res/kernel-$base.rc")" != 0 ]; then
		echo "check: $job not run: the $base kernel build failed (build/results/lane-k$base.log)"
		echo "$job: not run, the $base kernel build failed" >>"$res/phases"
		return 1
	fi
	# shellcheck disable=SC2086
	case $job in
	host)
		$timed check-host $M check-host || rc=1
		$timed fuzz-smoke $M fuzz-smoke FUZZ_SMOKE_SECONDS=1 || rc=1
		$timed checkpatch $M checkpatch || rc=1
		;;
	stock-6.12) $timed "$job" "${guest[@]}" "${one[@]}" --stock 6.12 --suites "$STOCK_CHECK_SUITES" || rc=1 ;;
	guest-6.1-1) THP_BASE=6.1 $timed "$job" "${guest[@]}" --suites "$BASE61_FIRST_SUITES" || rc=1 ;;
	guest-6.1-2) THP_BASE=6.1 $timed "$job" "${guest[@]}" "${one[@]}" --suites "$BASE61_REST" || rc=1 ;;
	guest-6.1-mode2)
		THP_BASE=6.1 $timed "$job" "${guest[@]}" "${one[@]}" --suites 20-modes.bats \
			--cmdline transparent_hugepage=2 --filter "$MODE2_REGEX" || rc=1
		;;
	guest-6.12-1) THP_BASE=6.12 $timed "$job" "${guest[@]}" --suites "$BASE612_FIRST_SUITES" || rc=1 ;;
	guest-6.12-2)
		THP_BASE=6.12 THP_COLLAPSE_BUDGET=skip $timed "$job" "${guest[@]}" "${one[@]}" \
			--suites "$BASE612_REST" || rc=1
		;;
	*) echo "check: no job $job" && rc=1 ;;
	esac
	return "$rc"
}

# worker: take the first job in JOBS nobody took (mkdir is the claim: one
# worker wins it) whose kernel is built; wait while only unbuilt ones are left
worker() {
	local rc=0 job base pending started
	while :; do
		pending=0 started=0
		for job in "${JOBS[@]}"; do
			[ ! -d "$res/taken/$job" ] || continue
			pending=1
			base=$(job_kernel "$job")
			[ -z "$base" ] || [ -f "$res/kernel-$base.rc" ] || continue
			mkdir "$res/taken/$job" 2>/dev/null || continue
			started=1
			run_job "$job" || rc=1
			break
		done
		[ "$pending" = 1 ] || return "$rc"
		[ "$started" = 1 ] || sleep 5
	done
}

rc=0
lane k6.1 kernel 6.1 &
k61=$!
lane k6.12 kernel 6.12 &
k612=$!
# the boots' other prerequisites, beside the kernels, one at a time (on a
# failure, the kernels still finish: they are cached for the next run)
# shellcheck disable=SC2086
$timed prepare $M programs payload image stock-image || { wait; exit 1; }

mkdir -p "$res/taken"
lane a worker &
a=$!
lane b worker &
b=$!
for p in $a $b $k61 $k612; do
	wait "$p" || rc=1
done
cat "$res/phases"
# the failed tests again, with their jobs, where CI's tail shows them
for lane in a b; do
	awk '/^run-guest: failed: / { f[++n] = substr($0, 20) }
		/^timed: / { job = $2; sub(/:$/, "", job)
			for (i = 1; i <= n; i++) print "check: failed in " job ": " f[i]; n = 0 }' \
		"$res/lane-$lane.log" 2>/dev/null
done
grep -h '^not ok' "$res/host.tap" 2>/dev/null | sed 's/^/check: failed in host: /'
# every boot's results are in guest.tap: a job that truncated it (a dry
# run of check-stock in a host test did) would otherwise pass unseen
said=$(cat "$res"/lane-a.log "$res"/lane-b.log 2>/dev/null |
	awk '/^guest: [0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$/ { n += $2 + $4 + $6 } END { print n + 0 }')
kept=$(grep -cE '^(ok|not ok) [0-9]' "$res/guest.tap" 2>/dev/null)
if [ "${kept:-0}" != "$said" ]; then
	echo "check: the boots reported $said guest results, build/results/guest.tap holds ${kept:-0}"
	rc=1
fi
tests/vm/tap-summary.sh check "$res/host.tap" "$res/guest.tap"
exit $rc
