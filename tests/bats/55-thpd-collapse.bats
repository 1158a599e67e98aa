#!/usr/bin/env bats
# [Collapse]: thpd collapses memory that got 4 KiB pages during a
# fragmented moment as soon as free hugepage blocks are back, and only what
# the kernel itself would have made huge: never a process that disabled
# THP, a MADV_NOHUGEPAGE region or a size at never, never while stepped
# down. khugepaged, at its defaults, does not get there in the same time.
#
# The fragmentation: thp-frag fills the guest with 4 KiB pages and frees
# every other one, then takes the free order-9 blocks that are left
# (--take-blocks); the process then faults 256 MiB with enabled=always and
# defrag=madvise (no compaction at fault), compaction_proactiveness 0.
# Releasing it is thp-frag exiting.
#
# The issue asks for the 2 s window after the release (issue 28); that is
# the one timed assertion here, measured from the moment thp-frag has
# exited, its memory free again (how long the exit took is printed too).
# Everything else asserts on counts.

load helpers
load thpd

REGION_MIB=256
REGION_KIB=$((REGION_MIB * 1024))
WINDOW_USEC=2000000

setup_file() {
	thpd_setup_file
	cat /proc/sys/vm/compaction_proactiveness >"$BATS_FILE_TMPDIR/proactiveness"
}

teardown_file() {
	cat "$BATS_FILE_TMPDIR/proactiveness" >/proc/sys/vm/compaction_proactiveness
	thpd_teardown_file
}

setup() {
	thpd_reset
	thp_set enabled always
	thp_set defrag madvise
	# khugepaged's defaults, whatever an earlier suite left
	echo 4096 >"$THP/khugepaged/pages_to_scan"
	echo 10000 >"$THP/khugepaged/scan_sleep_millisecs"
	echo 60000 >"$THP/khugepaged/alloc_sleep_millisecs"
	echo 511 >"$THP/khugepaged/max_ptes_none"
	echo 1 >"$THP/khugepaged/defrag"
	echo 0 >/proc/sys/vm/compaction_proactiveness
	echo 3 >/proc/sys/vm/drop_caches
	echo 1 >/proc/sys/vm/compact_memory
}

# a cgroup of our own for memory pressure (pressure_start, thpd.bash)
PRESS_CG=/sys/fs/cgroup/thpd-bats-collapse-pressure

teardown() {
	pressure_remove "$PRESS_CG"
	fpa_off
	hold_kill
	hold_kill_as frag
	hold_kill_as never
	hold_kill_as nohuge
	thpd_stop
	thp_restore_knobs
}

# collapse_conf [LINE...]: [Collapse] on for the processes of [Rule touch]
# (the helper), plus LINEs in [Collapse]
collapse_conf() {
	local extra
	extra=$(printf '%s\n' "$@")
	thpd_conf "$THPD_CONF_DIR/thpd.conf" <<-EOF
		[Collapse]
		Enabled=yes
		$extra

		[Rule touch]
		Exe=$THP_HELPERS/thp-touch
		Policy=default
	EOF
}

status() {
	thpd_call '{"cmd":"status"}'
}

collapse_state_is() {
	[ "$(status | jq -r .collapse.state)" = "$1" ]
}

collapse_field() {
	status | jq -r ".collapse.$1"
}

# predicates for wait_until, which runs a command again and again: its
# arguments are expanded once, so what must be read each time is read here
collapse_field_ge() {
	[ "$(collapse_field "$1")" -ge "$2" ]
}

# region_huge_kib PID ADDR: AnonHugePages of the VMA at ADDR (0x...) of PID
region_huge_kib() {
	awk -v a="${2#0x}" '
		/^[0-9a-f]+-[0-9a-f]+ / { f = index($1, a "-") == 1; next }
		f && $1 == "AnonHugePages:" { print $2; exit }' "/proc/$1/smaps"
}

# region_is PID ADDR KIB: the VMA at ADDR of PID has KIB kB huge
region_is() {
	[ "$(region_huge_kib "$1" "$2")" -eq "$3" ]
}

# proc_collapses CURSOR PID: thpd's collapse entries for PID after CURSOR,
# summed: {n, bytes, hugepages, cpu_usec, last_usec, reasons}. A pass may
# stop (a hugepage allocation failing while the release is still under
# way) and the next one finish the process: one entry each.
proc_collapses() {
	journal_events "$1" collapse | jq -sc --arg p "$2" '[.[] | select(.COLLAPSE_PID == $p)] | {
		n: length,
		bytes: (map(.COLLAPSE_BYTES | tonumber) | add // 0),
		hugepages: (map(.COLLAPSE_HUGEPAGES | tonumber) | add // 0),
		cpu_usec: (map(.COLLAPSE_CPU_USEC | tonumber) | add // 0),
		last_usec: (map(.__REALTIME_TIMESTAMP | tonumber) | max // 0),
		reasons: (map(.REASON) | unique)}'
}

# proc_collapsed_ge CURSOR PID BYTES: those entries sum to >= BYTES
proc_collapsed_ge() {
	[ "$(proc_collapses "$1" "$2" | jq .bytes)" -ge "$3" ]
}

# the thp_fault_fallback etc. of vmstat, for the messages
fallbacks() {
	awk '$1 ~ /^thp_(fault_fallback|split_pmd|collapse_alloc_failed)$/ { s += $2 } END { print s + 0 }' /proc/vmstat
}

# fragment, then fault the region: sets ADDR, PRE_HUGE_KIB
fragmented_region() {
	local info
	HOLD_TIMEOUT=600 hold_start_as frag "$THP_HELPERS/thp-frag" --leave 48 --take-blocks
	info=$(tr '\n' ' ' <"$frag_OUT")
	HOLD_TIMEOUT=300 hold_start "$THP_HELPERS/thp-touch" --size "$REGION_MIB" --hold
	ADDR=$(hold_value addr)
	PRE_HUGE_KIB=$(hold_value anon_huge_kib)
	echo "# thp-frag: $info; the region came out with $PRE_HUGE_KIB kB huge" >&3
	[ "$(hold_value pattern)" = ok ] || fail "pattern after the fault: $(<"$HOLD_OUT")"
	# 4 KiB pages: at most a tenth huge (what the fragmentation left behind)
	[ "$PRE_HUGE_KIB" -le $((REGION_KIB / 10)) ] ||
		fail "the region came out huge ($PRE_HUGE_KIB kB of $REGION_KIB): not fragmented ($info)"
}

# release the fragmentation: thp-frag exits; wait out the window from its
# exit. Sets T0 (usec, realtime: the release), TOLD (when thp-frag was told
# to exit) and WINDOW_HUGE_KIB (the region's AnonHugePages at T0 + 2 s)
release_and_wait_window() {
	local now rest
	TOLD=$(date +%s%6N)
	exec {frag_FD}>&-
	frag_FD=
	wait "$frag_PID" || fail "thp-frag failed: $(<"$frag_OUT")"
	T0=$(date +%s%6N)
	frag_PID=
	now=$(date +%s%6N)
	rest=$((T0 + WINDOW_USEC - now))
	[ "$rest" -le 0 ] || sleep "$((rest / 1000000)).$(printf %06d $((rest % 1000000)))"
	WINDOW_HUGE_KIB=$(region_huge_kib "$HELD" "$ADDR")
	echo "# thp-frag exited $(((T0 - TOLD) / 1000)) ms after it was told to; $((WINDOW_HUGE_KIB / 1024)) MiB of $REGION_MIB huge at +$((($(date +%s%6N) - T0) / 1000)) ms after" >&3
}

@test "collapse on: 256 MiB faulted as 4 KiB pages is >= 90% huge within 2 s of the release, data intact" {
	# TCG runs the kernel's collapse ten times slower and more than a CPU
	# does (256 MiB: 5.6 s of CPU in this guest on a loaded 2-core host,
	# 0.13-0.5 s on that host's own CPU): no CPU or rate limit, where the
	# defaults (25% of a CPU, 256 MiB/s) hold on real hardware
	collapse_conf CPUQuota=100% MaxRateMiB=0
	thpd_start
	fragmented_region
	# thpd saw the fallbacks (on its watchdog tick) and owes a pass
	wait_until 90 collapse_state_is owed ||
		fail "thpd does not owe a pass: $(status | jq -c .collapse) (fallbacks etc. $(fallbacks))"
	local mark sum pid=$HELD
	mark=$(journal_mark)
	release_and_wait_window
	[ "$WINDOW_HUGE_KIB" -ge $((REGION_KIB * 9 / 10)) ] ||
		fail "expected >= 90% of $REGION_KIB kB huge 2 s after the release, seen $WINDOW_HUGE_KIB kB; thpd: $(status | jq -c .collapse)"
	# what thpd says: journal entries for the process (one a pass that
	# worked on it), under its rule, that add up to the region
	wait_until 60 proc_collapsed_ge "$mark" "$pid" 241172480 ||
		fail "thpd's entries for PID $pid: $(proc_collapses "$mark" "$pid"); all: $(journal_events "$mark" collapse)"
	sum=$(proc_collapses "$mark" "$pid")
	jq -e '.hugepages >= 115 and .reasons == ["touch"]' <<<"$sum" >/dev/null ||
		fail "thpd's entries for PID $pid: $sum"
	echo "# thpd was done with the process at +$((($(jq .last_usec <<<"$sum") - T0) / 1000)) ms after the release, in $(jq .n <<<"$sum") journal entries: $(status | jq -c '.collapse | {hugepages, cpu_usec, last_pass}')" >&3
	# the data survived the collapse
	hold_finish || fail "thp-touch failed: $(<"$HOLD_OUT")"
	[ "$(hold_value pattern_final)" = ok ] || fail "data after the collapse: $(<"$HOLD_OUT")"
	[ "$(hold_value anon_huge_kib_final)" -ge $((REGION_KIB * 9 / 10)) ]
}

@test "collapse off: khugepaged's defaults leave it small over the same window" {
	thpd_start
	fragmented_region
	release_and_wait_window
	[ "$WINDOW_HUGE_KIB" -lt $((REGION_KIB * 9 / 10)) ] ||
		fail "khugepaged alone made $WINDOW_HUGE_KIB kB of $REGION_KIB huge in 2 s: the test cannot tell thpd's collapse from it"
	run -0 status
	run -0 jq -e '.collapse.state == "off" and .collapse.passes == 0' <<<"$output"
	hold_finish
	[ "$(hold_value pattern_final)" = ok ]
}

# small but eligible: faulted while enabled=never, then always
small_helpers() {
	thp_set enabled never
	hold_start "$THP_HELPERS/thp-touch" --size 32 --hold
	hold_start_as never thpctl run --never -- "$THP_HELPERS/thp-touch" --size 32 --hold
	hold_start_as nohuge "$THP_HELPERS/thp-touch" --size 32 --nohugepage --hold
	thp_set enabled always
}

@test "a process at never and a MADV_NOHUGEPAGE region stay untouched; plain memory beside them is collapsed" {
	small_helpers
	local addr never_addr nohuge_addr mark
	addr=$(hold_value addr)
	never_addr=$(sed -n 's/^addr=//p' "$never_OUT")
	nohuge_addr=$(sed -n 's/^addr=//p' "$nohuge_OUT")
	[ "$(region_huge_kib "$HELD" "$addr")" -eq 0 ] || fail "the plain region is huge already"
	run -0 grep -x 'THP_enabled:[[:space:]]*0' "/proc/$never_PID/status"
	mark=$(journal_mark)
	collapse_conf Processes=all
	# at start thpd owes a pass, and blocks are free: it runs at once
	thpd_start
	wait_until 120 region_is "$HELD" "$addr" 32768 ||
		fail "the plain region was not collapsed: $(region_huge_kib "$HELD" "$addr") kB; $(status | jq -c .collapse)"
	wait_until 120 collapse_state_is idle || fail "the pass did not end: $(status | jq -c .collapse)"
	[ "$(region_huge_kib "$never_PID" "$never_addr")" -eq 0 ] ||
		fail "the process at never was collapsed: $(region_huge_kib "$never_PID" "$never_addr") kB"
	[ "$(region_huge_kib "$nohuge_PID" "$nohuge_addr")" -eq 0 ] ||
		fail "the MADV_NOHUGEPAGE region was collapsed: $(region_huge_kib "$nohuge_PID" "$nohuge_addr") kB"
	# nor tried: no journal entry names them
	run -0 journal_events "$mark" collapse
	run -0 jq -se --arg n "$never_PID" --arg h "$nohuge_PID" --arg p "$HELD" \
		'any(.[]; .COLLAPSE_PID == $p) and all(.[]; .COLLAPSE_PID != $n and .COLLAPSE_PID != $h)' <<<"$output"
	hold_finish_as never
	hold_finish_as nohuge
	hold_finish
	[ "$(hold_value pattern_final)" = ok ]
}

@test "a size at never stays untouched, and is collapsed once it inherits again" {
	[ -e "$THP/hugepages-2048kB/enabled" ] || skip "kernel without per-size THP controls (6.8+)"
	thp_set enabled never
	hold_start "$THP_HELPERS/thp-touch" --size 32 --hold
	local addr passes mark
	addr=$(hold_value addr)
	thp_set enabled always
	thp_set hugepages-2048kB/enabled never
	collapse_conf Processes=all
	thpd_start
	# the start's pass finds nothing the kernel would make huge
	wait_until 120 collapse_field_ge passes 1 || fail "no pass: $(status | jq -c .collapse)"
	wait_until 120 collapse_state_is idle || fail "the pass did not end: $(status | jq -c .collapse)"
	[ "$(region_huge_kib "$HELD" "$addr")" -eq 0 ] ||
		fail "collapsed with hugepages-2048kB/enabled=never: $(region_huge_kib "$HELD" "$addr") kB"
	passes=$(collapse_field passes)
	# the size inherits always again, set through thpd (a write behind its
	# back would be drift, put back by the reload); a reload owes a pass,
	# which collapses it
	run -0 thpctl enable inherit --size 2M
	[ "$(thp_get hugepages-2048kB/enabled)" = inherit ] || fail "2M is $(thp_get hugepages-2048kB/enabled)"
	mark=$(journal_mark)
	systemctl reload thpd.service
	wait_until 120 region_is "$HELD" "$addr" 32768 ||
		fail "not collapsed after the size came back: $(status | jq -c .collapse)"
	# by thpd, not khugepaged: its journal entry for the process. The pass
	# itself (Processes=all) goes on through every other process before it
	# counts, so wait for the count too.
	journal_wait 60 "$mark" collapse || fail "no collapse entry after the reload"
	run -0 journal_events "$mark" collapse
	run -0 jq -se --arg p "$HELD" 'any(.[]; .COLLAPSE_PID == $p)' <<<"$output"
	wait_until 120 collapse_field_ge passes $((passes + 1)) ||
		fail "the reload's pass did not end: $(status | jq -c .collapse)"
	hold_finish
	[ "$(hold_value pattern_final)" = ok ]
}

@test "never while stepped down: a step-down holds the collapse back" {
	# MADV_HUGEPAGE: eligible under the step-down's madvise too, so only
	# the step-down itself can hold it back
	thp_set enabled never
	hold_start "$THP_HELPERS/thp-touch" --size 32 --madvise --hold
	local addr
	addr=$(hold_value addr)
	thp_set enabled always
	# more free blocks than any guest has: thpd steps down at its first
	# check (0.2 s), long before its first look for free blocks (5 s); no
	# reserve, which would hold the collapse back on its own
	thpd_conf "$THPD_CONF_DIR/thpd.conf" <<-EOF
		[Adaptive]
		Enabled=yes
		MinFreeBlocks=100000000
		CheckIntervalSec=0.2

		[Collapse]
		Enabled=yes
		Processes=all
		ReserveFreeBlocks=0
		WatchIntervalSec=5
	EOF
	local mark
	mark=$(journal_mark)
	thpd_start
	journal_wait 60 "$mark" step-down || fail "no step-down"
	# the start's debt waits for a step-up, and no step-up comes
	wait_until 60 collapse_state_is "owed, stepped down" ||
		fail "expected owed, stepped down: $(status | jq -c .collapse)"
	# past the first look for free blocks
	sleep 6
	[ "$(status | jq -r .collapse.passes)" -eq 0 ] || fail "a pass ran: $(status | jq -c .collapse)"
	[ "$(region_huge_kib "$HELD" "$addr")" -eq 0 ] || fail "collapsed while stepped down"
	run -0 journal_events "$mark" collapse
	[ -z "$output" ] || fail "collapsed while stepped down: $output"
}

# The budget (rate, CPU quota, stopping at a stall or a failed allocation)
# is thpd's own bookkeeping around process_madvise(), the same code on every
# kernel, and its four tests are a third of the suite's time under TCG
# (162 s of a 6.12 boot). make check runs them on patched 6.1 and passes
# THP_COLLAPSE_BUDGET=skip to its patched 6.12 boot; any other run has them.
need_budget() {
	[ "${THP_COLLAPSE_BUDGET:-}" != skip ] ||
		skip "THP_COLLAPSE_BUDGET=skip: make check runs the budget tests on patched 6.1"
}

# budget_pass LINE...: thpd with [Collapse] LINEs collapses the fragmented
# region after its release. Sets WALL_MS (the release to thpd's last
# journal entry for the process), CPU_MS (their COLLAPSE_CPU_USEC: the
# collapsing, not the scan, which the CPU bucket is charged for too), MIB
# (their bytes) and PASSES (how many entries: each pass starts with a full
# bucket, its overdraw allowed once more).
# The budget's limits are lower bounds on the time a pass takes, which a
# slower guest only lengthens: the only timing these tests assert.
budget_pass() {
	collapse_conf "$@"
	thpd_start
	fragmented_region
	wait_until 90 collapse_state_is owed ||
		fail "thpd does not owe a pass: $(status | jq -c .collapse) (fallbacks etc. $(fallbacks))"
	local mark sum pid=$HELD
	mark=$(journal_mark)
	release_and_wait_window
	# enough collapsed for the bound to mean something, and no pass left
	wait_until 400 proc_collapsed_ge "$mark" "$pid" $((REGION_MIB / 2 << 20)) ||
		fail "not half the region within 400 s: $(proc_collapses "$mark" "$pid"); $(status | jq -c .collapse)"
	wait_until 400 collapse_state_is idle ||
		fail "a pass still under way or owed: $(status | jq -c .collapse)"
	sum=$(proc_collapses "$mark" "$pid")
	WALL_MS=$((($(jq .last_usec <<<"$sum") - T0) / 1000))
	CPU_MS=$(($(jq .cpu_usec <<<"$sum") / 1000))
	MIB=$(($(jq .bytes <<<"$sum") >> 20))
	PASSES=$(jq .n <<<"$sum")
	echo "# $*: $MIB MiB collapsed in $PASSES journal entries, done $WALL_MS ms after the release, $CPU_MS ms of thpd's CPU for it; $(status | jq -c '.collapse | {passes, last_pass}')" >&3
	hold_finish || fail "thp-touch failed: $(<"$HOLD_OUT")"
	[ "$(hold_value pattern_final)" = ok ] || fail "data after the collapse: $(<"$HOLD_OUT")"
}

# The bucket holds a second's worth (8 MiB) and is charged after each
# slice, which may overdraw it by one batch (8 ranges, 16 MiB): everything
# past those 24 MiB waits for its refill at 8 MiB/s. Unlimited, the same
# pass takes 0.7-4.3 s here (make bench, section 7).
@test "the rate limit holds: at MaxRateMiB=8 a pass takes the time the bucket allows" {
	need_budget
	budget_pass CPUQuota=100% MaxRateMiB=8
	local floor_ms=$(((MIB - 24 * PASSES) * 1000 / 8))
	[ "$WALL_MS" -ge $((floor_ms * 8 / 10)) ] ||
		fail "$MIB MiB at 8 MiB/s need >= $floor_ms ms, done after $WALL_MS ms"
}

# A second's worth at 5% is 50 ms of CPU; a slice overdraws it by at most
# itself (20 ms and one batch of 8 of the region's 128 ranges: an eighth
# of the CPU, counted generously): the rest comes at 50 ms a second, so
# the pass takes about twenty times its CPU time. Unlimited, its wall time
# is about its CPU time under TCG.
@test "the CPU quota holds: at CPUQuota=5% a pass takes about twenty times its CPU time" {
	need_budget
	budget_pass CPUQuota=5% MaxRateMiB=0
	local floor_ms=$(((CPU_MS * 7 / 8 - 70 * PASSES) * 20))
	# the bound must be well past an unlimited pass (about CPU_MS) to mean something
	[ "$floor_ms" -ge $((CPU_MS * 4)) ] || fail "too little CPU ($CPU_MS ms) for the quota to show"
	[ "$WALL_MS" -ge $((floor_ms * 8 / 10)) ] ||
		fail "$CPU_MS ms of CPU at 5% need >= $floor_ms ms, done after $WALL_MS ms"
}

# region_at_least PID ADDR KIB: the VMA at ADDR of PID has >= KIB kB huge
region_at_least() {
	[ "$(region_huge_kib "$1" "$2")" -ge "$3" ]
}

# stall_stop CURSOR: the first collapse-pass entry after CURSOR that a
# memory stall ended (a pass may also stop on its own before, a hugepage
# allocation failing while the release is still under way: the next pass
# then goes on)
stall_stop() {
	journal_events "$1" collapse-pass |
		jq -c 'select(.REASON | startswith("memory pressure (PSI some stall"))' | head -1
}

has_stall_stop() {
	[ -n "$(stall_stop "$1")" ]
}

# The first sign of pressure: a task stalled on memory (PSI "some") since
# the last slice. The stall comes from a task throttled beyond memory.high
# in a cgroup without swap (4 KiB pages: it takes no free blocks from the
# pass), in the middle of a pass that the rate limit stretches to about
# 30 s.
@test "a memory stall during a pass stops it; the debt stays and is paid once the stall is over" {
	need_budget
	[ -e /proc/pressure/memory ] || skip "no /proc/pressure/memory (CONFIG_PSI)"
	collapse_conf CPUQuota=100% MaxRateMiB=8
	thpd_start
	fragmented_region
	wait_until 90 collapse_state_is owed ||
		fail "thpd does not owe a pass: $(status | jq -c .collapse) (fallbacks etc. $(fallbacks))"
	local mark pass stress pid=$HELD
	mark=$(journal_mark)
	release_and_wait_window
	# (a pass that stopped early leaves "owed" until the next look, 250 ms)
	wait_until 10 collapse_state_is collapsing ||
		fail "no pass under way 12 s after the release: $(status | jq -c .collapse)"
	mark=$(journal_mark)
	pressure_start "$PRESS_CG" 8 --size 128 --nohugepage
	stress=$STRESS
	wait_until 30 has_stall_stop "$mark" || {
		wait $stress || true
		fail "no pass stopped for the stall within 30 s; passes that stopped: $(journal_events "$mark" collapse-pass | jq -r .REASON); $(status | jq -c .collapse)"
	}
	pass=$(stall_stop "$mark")
	echo "# at +$((($(jq -r .__REALTIME_TIMESTAMP <<<"$pass") - T0) / 1000)) ms: $(jq -r .MESSAGE <<<"$pass")" >&3
	# stopped before the end: not all of it was collapsed
	[ "$(region_huge_kib "$pid" "$ADDR")" -lt $((REGION_KIB * 9 / 10)) ] ||
		fail "the pass had collapsed nearly everything before it stopped"
	wait $stress || true
	# the debt stayed: once the stall is over a pass pays the rest
	wait_until 180 region_at_least "$pid" "$ADDR" $((REGION_KIB * 9 / 10)) ||
		fail "$(region_huge_kib "$pid" "$ADDR") kB huge 180 s after the stall; thpd: $(status | jq -c .collapse)"
	hold_finish || fail "thp-touch failed: $(<"$HOLD_OUT")"
	[ "$(hold_value pattern_final)" = ok ] || fail "data after the collapse: $(<"$HOLD_OUT")"
}

@test "a failed hugepage allocation stops the pass (ENOMEM counted); the debt stays and is paid once allocations succeed" {
	need_budget
	mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
	[ -d "$FPA" ] || skip "no $FPA (CONFIG_FAIL_PAGE_ALLOC; make check's patched kernels have it)"
	thp_set enabled never
	hold_start "$THP_HELPERS/thp-touch" --size 16 --hold
	local addr mark
	addr=$(hold_value addr)
	thp_set enabled always
	# the first look for free blocks comes 10 s after the start: the
	# injection is on for thpd's task by then (at 5 s that left about 3 s
	# for systemctl's start to return and its show to name the PID, on a
	# guest with one vCPU)
	collapse_conf ReserveFreeBlocks=0 WatchIntervalSec=10
	mark=$(journal_mark)
	thpd_start
	# every order-9 allocation of thpd's fails, as MADV_COLLAPSE's would
	# on a host where the blocks went again
	fpa_fail_order9 "$(thpd_pid)"
	wait_until 60 collapse_field_ge failures_by.nomem 1 ||
		{ fpa_off; fail "no ENOMEM counted: $(status | jq -c .collapse)"; }
	# the pass stopped at the failure and said why; nothing was collapsed
	wait_until 30 bash -c "journalctl --sync; journalctl -q -u thpd.service --after-cursor='$mark' -o cat | grep -q 'Collapse pass stopped: .*a hugepage allocation failed (ENOMEM'" ||
		{ fpa_off; fail "no 'Collapse pass stopped ... ENOMEM' in the journal: $(journal_since "$mark" -o cat | tail -5)"; }
	[ "$(collapse_field hugepages)" -eq 0 ] || { fpa_off; fail "collapsed under the injection: $(status | jq -c .collapse)"; }
	[ "$(region_huge_kib "$HELD" "$addr")" -eq 0 ] || { fpa_off; fail "the region is huge under the injection"; }
	# stopped, not forgotten: with allocations back, a later pass collapses it
	fpa_off
	wait_until 120 region_is "$HELD" "$addr" 16384 ||
		fail "not collapsed once allocations succeed: $(region_huge_kib "$HELD" "$addr") kB; $(status | jq -c .collapse)"
	hold_finish
	[ "$(hold_value pattern_final)" = ok ]
}

@test "status and metrics count the collapses, bytes, failures and CPU time" {
	thp_set enabled never
	hold_start "$THP_HELPERS/thp-touch" --size 16 --hold
	thp_set enabled always
	collapse_conf
	thpd_start
	wait_until 120 collapse_field_ge hugepages 8 || fail "not collapsed: $(status | jq -c .collapse)"
	run -0 thpctl --json status
	run -0 jq -e '.thpd.collapse | .enabled and .processes == "rules" and .hugepages >= 8
		and .bytes >= 16777216 and .processes_collapsed >= 1 and .cpu_usec > 0
		and (.failures | type) == "number" and (.failures_by | keys) == ["again","busy","invalid","nomem","other"]' <<<"$output"
	# the short status says it in a line
	run -0 thpctl status
	assert_line --regexp '^thpd_collapse: +on \(rules\), [a-z, ]+: [1-9][0-9]* passes, [1-9][0-9]+ MiB in ([89]|[1-9][0-9]+) hugepages, [0-9]+ failures, CPU [0-9]+ ms'
	run -0 thpctl metrics
	assert_line --regexp '^thpd_collapse_enabled 1$'
	assert_line --regexp '^thpd_collapse_hugepages_total ([89]|[1-9][0-9]+)$'
	assert_line --regexp '^thpd_collapse_bytes_total [0-9]+$'
	assert_line --regexp '^thpd_collapse_failures_total\{reason="nomem"\} [0-9]+$'
	assert_line --regexp '^thpd_collapse_cpu_seconds_total [0-9.]+$'
	hold_finish
	[ "$(hold_value pattern_final)" = ok ]
}

@test "collapse keeps CAP_SYS_NICE (on a stock kernel only then)" {
	collapse_conf
	thpd_start
	local capeff
	capeff=$(awk '/^CapEff:/ { print $2 }' "/proc/$(thpd_pid)/status")
	# the documented sets (thpd(8), SECURITY): the usual ones plus
	# CAP_SYS_NICE (bit 23) and CAP_SYS_PTRACE (19)
	if [ -e /proc/self/thp_policy ]; then
		[ "$capeff" = 0000000001881002 ] || fail "CapEff $capeff with [Collapse] on"
	else
		[ "$capeff" = 0000000001880000 ] || fail "CapEff $capeff with [Collapse] on"
	fi
	thpd_stop
	: >"$THPD_CONF_DIR/thpd.conf"
	thpd_start
	capeff=$(awk '/^CapEff:/ { print $2 }' "/proc/$(thpd_pid)/status")
	[ "$capeff" = "$(thpd_expected_capeff)" ] || fail "CapEff $capeff with [Collapse] off"
}
