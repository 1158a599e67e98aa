#!/bin/bash
# make check's guest half, in two lanes that run side by side (called by the
# check target of tests/vm/vm.mk after the host prerequisites are built):
#
#   lane a: check-host, fuzz-smoke, checkpatch, then (once kernel-6.1 is
#           built) every suite on patched 6.1 and the mode-2 boot
#   lane b: STOCK_CHECK_SUITES on stock 6.12, then (once kernel-6.12 is
#           built) BASE612_CHECK_SUITES on patched 6.12
#
# Why two lanes: a TCG guest keeps about one of the two cores busy (QEMU's
# CPU time over its wall time, printed after each boot), so one guest at a
# time leaves a core idle for most of make check; two at a time fill both.
# No more than two guests run at once: a third would only slow the others.
# The kernels build from the start, 6.1 at normal priority (lane a waits for
# it) and 6.12 at nice 19 (lane b has the stock boot to run first).
#
# Every prerequisite of a boot (programs, payload, image, stock image) is
# built before the lanes start: two lanes building the same file at once
# would race. The lanes only boot, each from its own copy of the payload.
#
# Output: every line of a lane is prefixed with its name ([a], [b], [k6.12]
# for the niced build) and kept whole in build/results/lane-NAME.log; each
# phase's wall time goes to build/results/phases (tests/vm/timed.sh).
#
# env (from vm.mk): MAKE, VM, THP_CACHE, BUILD, STOCK_CHECK_SUITES,
# BASE612_CHECK_SUITES, MODE2_REGEX (the mode-2 boot's bats --filter)
# The lanes' functions run only through lane(): shellcheck cannot see it.
# shellcheck disable=SC2317
set -u
cd "$(dirname "$0")/../.." || exit 1
: "${MAKE:=make}" "${VM:=}" "${THP_CACHE:=/var/cache/thp-stack}" "${BUILD:=build}"
res=build/results
timed=tests/vm/timed.sh
mkdir -p "$res"
rm -f "$res"/host.tap "$res"/guest.tap "$res"/phases "$res"/lane-*.log "$res"/kernel-*.rc

M="$MAKE --no-print-directory"
# a check boot (no make prerequisites: they are built before the lanes)
# shellcheck disable=SC2206
guest=(tests/vm/run-guest.sh --payload "$BUILD/payload" $VM --mode check)
export THP_CACHE
# run LANE's commands with each output line prefixed, and its log kept
lane() {
	local name=$1
	shift
	"$@" 2>&1 | tee "$res/lane-$name.log" | sed -u "s/^/[$name] /"
	return "${PIPESTATUS[0]}"
}
# build BASE's kernel (PREFIX... runs the make: nice); status in kernel-BASE.rc
kernel() {
	local base=$1 rc=0
	shift
	# shellcheck disable=SC2086
	$timed "kernel-$base" "$@" $M kernel BASE="$base" || rc=$?
	echo "$rc" >"$res/kernel-$base.rc"
	return "$rc"
}
# wait for a kernel build started below
wait_kernel() {
	while [ ! -f "$res/kernel-$1.rc" ]; do sleep 5; done
	[ "$(cat "$res/kernel-$1.rc")" = 0 ] && return 0
	echo "check: the $1 kernel build failed (build/results/lane-k$1.log)"
	return 1
}

rc=0
lane k6.1 kernel 6.1 &
k61=$!
lane k6.12 kernel 6.12 nice -n 19 &
k612=$!
# the boots' other prerequisites, beside the kernels, one at a time (on a
# failure, the kernels still finish: they are cached for the next run)
# shellcheck disable=SC2086
$timed prepare $M programs payload image stock-image || { wait; exit 1; }

lane_a() {
	local rc=0
	# shellcheck disable=SC2086
	{
		$timed check-host $M check-host || rc=1
		$timed fuzz-smoke $M fuzz-smoke FUZZ_SMOKE_SECONDS=1 || rc=1
		$timed checkpatch $M checkpatch || rc=1
	}
	wait_kernel 6.1 || return 1
	THP_BASE=6.1 $timed guest-6.1 "${guest[@]}" || rc=1
	THP_BASE=6.1 $timed guest-6.1-mode2 "${guest[@]}" --suites 20-modes.bats \
		--cmdline transparent_hugepage=2 --filter "$MODE2_REGEX" || rc=1
	return "$rc"
}
lane_b() {
	local rc=0
	$timed guest-stock-6.12 "${guest[@]}" --stock 6.12 --suites "$STOCK_CHECK_SUITES" || rc=1
	wait_kernel 6.12 || return 1
	THP_BASE=6.12 $timed guest-6.12 "${guest[@]}" --suites "$BASE612_CHECK_SUITES" || rc=1
	return "$rc"
}
lane a lane_a &
a=$!
lane b lane_b &
b=$!
for p in $a $b $k61 $k612; do
	wait "$p" || rc=1
done
cat "$res/phases"
tests/vm/tap-summary.sh check "$res/host.tap" "$res/guest.tap"
exit $rc
