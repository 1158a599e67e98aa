#!/bin/bash
# Diagnosis, not a test (#7): run thp-stress as 70-stress.bats does (swap
# worker in a 32M memcg, khugepaged at scan_sleep_millisecs=0) and print
# once a second khugepaged's pid, state, schedstat (ns on CPU, ns waiting
# to run, timeslices) and kernel stack, with the enabled word. Samples
# that read [never] while a khugepaged still exists are a write of never
# waiting in kthread_stop() for it.
#   make vm-exec SCRIPT=tests/vm/khugepaged-stall-probe.sh ARGS="150 [NICE]"
# NICE is the workers' nice (default 0, where the stall shows; 70-stress.bats
# runs them at 19).
# The guest is a throw-away overlay: nothing is restored.
set -u
seconds=${1:-150}
nice=${2:-0}
T=/sys/kernel/mm/transparent_hugepage
H=${THP_HELPERS:-/opt/thp-stack/helpers}
systemctl stop thpd.service thpd.socket 2>/dev/null
echo 0 >$T/khugepaged/scan_sleep_millisecs
echo 0 >$T/khugepaged/alloc_sleep_millisecs
echo 4096 >$T/khugepaged/pages_to_scan
dd if=/dev/zero of=/var/tmp/probe.swap bs=1M count=192 status=none &&
	chmod 600 /var/tmp/probe.swap && mkswap /var/tmp/probe.swap >/dev/null &&
	swapon /var/tmp/probe.swap
echo +memory >/sys/fs/cgroup/cgroup.subtree_control
mkdir -p /sys/fs/cgroup/probe && echo 32M >/sys/fs/cgroup/probe/memory.max
"$H/thp-stress" --seconds "$seconds" --worker-nice "$nice" --memcg /sys/fs/cgroup/probe >/tmp/probe.out 2>&1 &
stress=$!
while kill -0 $stress 2>/dev/null; do
	k=$(pgrep -x khugepaged)
	if [ -n "$k" ]; then
		echo "t=$SECONDS pid=$k state=$(awk '{print $3}' /proc/"$k"/stat 2>/dev/null)" \
			"schedstat=$(cat /proc/"$k"/schedstat 2>/dev/null) enabled=$(cat $T/enabled) |" \
			"$(tr '\n' ' ' </proc/"$k"/stack 2>/dev/null)"
	else
		echo "t=$SECONDS no khugepaged, enabled=$(cat $T/enabled)"
	fi
	sleep 1
done
wait $stress
rc=$?
grep -E '^(worker_nice|mode_write_max_ms|policy_write_max_ms|khugepaged_starts|mode_flips)=|^thp-stress: ' /tmp/probe.out
exit $rc
