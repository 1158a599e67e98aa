#!/usr/bin/env bats
# Stress: concurrent fork/COW, splits inside hugepages (partial munmap,
# mprotect, MADV_DONTNEED), MADV_COLLAPSE with khugepaged at
# scan_sleep_millisecs=0, swap under a memcg limit, while the system mode and
# the per-process policies are flipped every few milliseconds. Every byte is
# checked against its data pattern; counters are checked for sanity; the
# harness fails the run on any kernel splat.
#
# The workers run at nice 19, khugepaged's nice (--worker-nice 19). At nice 0
# they starve khugepaged while it reclaims inside a collapse's memcg charge,
# and a write of "never" waits in kthread_stop() for it: 461 s on the debug
# kernel, a hung-task report that stock 6.1 gives too. thp-stress.c says
# more; tests/vm/khugepaged-stall-probe.sh shows it (nice 0 is its default).
#
# Duration: THP_STRESS_SECONDS (default 180); set on the host, run-guest.sh
# passes it into the guest and lengthens the boot's time limit. A long run:
#   THP_STRESS_SECONDS=1800 make check-guest SUITES=70-stress.bats

load helpers

STRESS_SECONDS=${THP_STRESS_SECONDS:-180}
CG=/sys/fs/cgroup/thp-stress
SWAPFILE=/var/tmp/thp-stress.swap
STATE=${BATS_FILE_TMPDIR:-/tmp}/thp-stress.state

setup_file() {
	thp_save_knobs
	: >"$STATE"
	thpd_units_stop "$STATE.thpd"
	echo 0 >"$THP/khugepaged/scan_sleep_millisecs"
	echo 0 >"$THP/khugepaged/alloc_sleep_millisecs"
	echo 4096 >"$THP/khugepaged/pages_to_scan"

	dmesg | wc -l >"$STATE.dmesg"
	# a hung-task report then shows what every CPU was running, i.e. who
	# kept the blocked writer waiting
	if [ -w /proc/sys/kernel/hung_task_all_cpu_backtrace ]; then
		echo "sysctl hung_task_all_cpu_backtrace $(cat /proc/sys/kernel/hung_task_all_cpu_backtrace)" >>"$STATE"
		echo 1 >/proc/sys/kernel/hung_task_all_cpu_backtrace
	fi

	# swap: a swapfile, unless the system already has swap
	if [ "$(awk 'NR > 1' /proc/swaps | wc -l)" -gt 0 ]; then
		echo "swap existing" >>"$STATE"
	else
		rm -f "$SWAPFILE"
		if dd if=/dev/zero of="$SWAPFILE" bs=1M count=192 status=none &&
			chmod 600 "$SWAPFILE" && mkswap "$SWAPFILE" >/dev/null &&
			swapon "$SWAPFILE"; then
			echo "swapfile $SWAPFILE" >>"$STATE"
			echo "swap file" >>"$STATE"
		else
			echo "noswap could not set up $SWAPFILE as swap" >>"$STATE"
			rm -f "$SWAPFILE"
		fi
	fi
	# a cgroup v2 with a memory limit below the swap worker's 64 MiB region
	if ! grep -qw memory /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null; then
		echo +memory >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || true
	fi
	if grep -qw memory /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null &&
		mkdir -p "$CG" && echo 32M >"$CG/memory.max"; then
		echo "memcg $CG" >>"$STATE"
	else
		echo "nomemcg no cgroup v2 memory controller" >>"$STATE"
	fi
}

teardown_file() {
	local what arg pid name val
	while read -r what arg; do
		case $what in
		memcg)
			# the workers have exited; anything left is moved out first
			for pid in $(cat "$arg/cgroup.procs" 2>/dev/null); do
				echo "$pid" >/sys/fs/cgroup/cgroup.procs 2>/dev/null || true
			done
			rmdir "$arg" || echo "# could not remove $arg" >&3
			;;
		sysctl)
			read -r name val <<<"$arg"
			echo "$val" >"/proc/sys/kernel/$name"
			;;
		swapfile)
			swapoff "$arg" || echo "# swapoff $arg failed" >&3
			rm -f "$arg"
			;;
		esac
	done <"$STATE"
	thp_restore_knobs
	thpd_units_restart "$STATE.thpd"
	return 0
}

state_has() {
	grep -q "^$1 " "$STATE"
}

# the reason recorded for a missing piece (after the keyword)
state_reason() {
	sed -n "s/^$1 //p" "$STATE"
}

@test "thp-stress notices a corrupted byte (the checker can fail)" {
	run -1 timeout 120 "$THP_HELPERS/thp-stress" --seconds 2 --no-flip --region-mib 4 \
		--inject-corruption
	assert_kv corrupted_bytes -ge 1
	assert_output --partial "CORRUPTION after injected corruption"
}

@test "stress: ${STRESS_SECONDS}s of COW, splits, collapse, swap, mode and policy flips: 0 corrupted bytes" {
	local memcg=() enabled0 defrag0 swpout0 swpout1 kcoll0 kcoll1
	if state_has memcg && state_has swap; then
		memcg=(--memcg "$CG")
	else
		# a kernel without swap or memcg support: the rest still runs
		echo "# no swap worker: $(state_reason noswap)$(state_reason nomemcg)" >&3
	fi
	enabled0=$(thp_get enabled)
	defrag0=$(thp_get defrag)
	swpout0=$(vmstat pswpout)
	kcoll0=$(<"$THP/khugepaged/pages_collapsed")

	run timeout $((STRESS_SECONDS + 240)) "$THP_HELPERS/thp-stress" \
		--seconds "$STRESS_SECONDS" --worker-nice 19 "${memcg[@]}"
	swpout1=$(vmstat pswpout)
	kcoll1=$(<"$THP/khugepaged/pages_collapsed")
	echo "# $(grep '^thp-stress: ' <<<"$output")" >&3
	echo "# mode_file=$(kv mode_file) policy_prctl=$(kv policy_prctl) policy_procfs=$(kv policy_procfs) forks=$(kv forks) splits=$(kv splits) collapse_ok=$(kv collapse_ok) collapse_failed=$(kv collapse_failed) mode_flips=$(kv mode_flips) policy_flips=$(kv policy_flips) self_policy_flips=$(kv self_policy_flips) swap_passes=$(kv swap_passes) khugepaged_starts=$(kv khugepaged_starts) mode_write_max_ms=$(kv mode_write_max_ms) policy_write_max_ms=$(kv policy_write_max_ms) pswpout=$((swpout1 - swpout0)) khugepaged_pages_collapsed=$((kcoll1 - kcoll0))" >&3
	assert_success
	assert_kv corrupted_bytes -eq 0
	assert_kv violations -eq 0
	assert_kv errors -eq 0
	assert_kv failed_processes -eq 0
	assert_kv ops -gt 0
	assert_kv bytes_verified -gt 0
	assert_kv forks -gt 0
	assert_kv splits -gt 0
	assert_kv collapse_ok -gt 0
	[ $((kcoll1 - kcoll0)) -gt 0 ] || fail "khugepaged collapsed nothing (khugepaged/pages_collapsed did not grow)"
	assert_kv mode_flips -gt 0
	assert_kv self_policy_flips -gt 0
	if [ -e /proc/self/thp_policy ]; then
		assert_kv policy_procfs = yes
		assert_kv policy_flips -gt 0
	fi
	if [ ${#memcg[@]} -gt 0 ]; then
		assert_kv swap_passes -gt 0
		[ $((swpout1 - swpout0)) -gt 0 ] || fail "the swap worker never got swapped out (pswpout did not grow)"
	fi
	# the mode flipper puts enabled/defrag back the way they were
	[ "$(thp_get enabled)" = "$enabled0" ] || fail "enabled: $enabled0 before, $(thp_get enabled) after"
	[ "$(thp_get defrag)" = "$defrag0" ] || fail "defrag: $defrag0 before, $(thp_get defrag) after"
}

@test "no kernel splat in dmesg since the stress suite started" {
	local from
	from=$(<"$STATE.dmesg")
	run -0 bash -c "dmesg | tail -n +$((from + 1))"
	# the harness's pattern (tests/vm/run-guest.sh), here to name the suite
	refute_output --regexp '(BUG:|WARNING:|Oops|general protection fault|Kernel panic|kernel BUG at|KASAN|UBSAN|blocked for more than|possible circular locking|possible recursive locking|inconsistent lock state|list_(add|del) corruption|Bad page (state|map)|page dumped because)'
}
