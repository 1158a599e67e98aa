#!/bin/bash
# Benchmarks, run as root in the guest by tests/vm/bench.sh (make bench).
# Prints raw measurements as lines "R section=... case=... rep=N key=value...";
# bench/report.awk turns them into the table. Never fails on a time.
#
# usage: run.sh all|"SECTION..." [REPS [SIZE_MIB [COLLAPSE_REPS [COLLAPSE_MIB]]]]
#        (sections: largepages hooks launch thpd zerofault mthpfault collapse)
set -u
THP=/sys/kernel/mm/transparent_hugepage
H=${THP_HELPERS:-/opt/thp-stack/helpers}
THP_BATS=${THP_BATS:-/opt/thp-stack/bats}
section=${1:-all}
REPS=${2:-5}
SIZE=${3:-512}
COLLAPSE_REPS=${4:-3}
COLLAPSE_MIB=${5:-256}

knob() { sed 's/.*\[\(.*\)\].*/\1/' "$THP/$1"; }
saved_enabled=$(knob enabled)
saved_defrag=$(knob defrag)
# multi-size THP (6.8+): the 64K and PMD sizes the mTHP cases set
M64=hugepages-64kB/enabled
MPMD=hugepages-$(($(cat $THP/hpage_pmd_size) >> 10))kB/enabled
saved_m64= saved_mpmd=
if [ -e $THP/$M64 ]; then
	saved_m64=$(knob $M64)
	saved_mpmd=$(knob $MPMD)
fi
restore() {
	echo "$saved_enabled" >$THP/enabled
	echo "$saved_defrag" >$THP/defrag
	[ -z "$saved_m64" ] || { echo "$saved_m64" >$THP/$M64; echo "$saved_mpmd" >$THP/$MPMD; }
}
trap restore EXIT
echo 60000 >$THP/khugepaged/scan_sleep_millisecs

patched=0
[ -e $THP/mode ] && patched=1
have_policy=0
[ -e /proc/self/thp_policy ] && have_policy=1

# set_mode never|0|1|2: the RFC's numbers through the kernel when it has
# them, else the equivalent words
set_mode() {
	if [ "$1" = never ]; then
		echo never >$THP/enabled
	elif [ $patched = 1 ]; then
		echo "$1" >$THP/enabled
	else
		case $1 in
		0) echo madvise >$THP/enabled; echo madvise >$THP/defrag ;;
		1) echo always >$THP/enabled; echo madvise >$THP/defrag ;;
		2) echo always >$THP/enabled; echo always >$THP/defrag ;;
		esac
	fi
}

settle() {
	sync
	echo 3 >/proc/sys/vm/drop_caches
	echo 1 >/proc/sys/vm/compact_memory
}

meta() {
	echo "R section=meta kernel=$(uname -r) patched=$patched policy=$have_policy clock=$(grep -q 'thp.icount=1' /proc/cmdline && echo icount || echo tcg) cpus=$(nproc) mem_mib=$(($(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024)) size_mib=$SIZE reps=$REPS"
}

largepages() {
	local rep c out
	for rep in $(seq 1 "$REPS"); do
		# the cases alternate within each repetition
		for c in never mode0 mode0-advise mode1 mode2; do
			settle
			case $c in
			never) set_mode never; out=$("$H/largepages" --size "$SIZE") ;;
			mode0) set_mode 0; out=$("$H/largepages" --size "$SIZE") ;;
			mode0-advise)
				set_mode 0
				if command -v thpctl >/dev/null; then
					out=$(thpctl run --advise -- "$H/largepages" --size "$SIZE" 2>/dev/null)
				else
					out="unavailable=1"
				fi
				;;
			mode1) set_mode 1; out=$("$H/largepages" --size "$SIZE") ;;
			mode2) set_mode 2; out=$("$H/largepages" --size "$SIZE") ;;
			esac
			echo "R section=largepages case=$c rep=$rep $out"
		done
	done
}

hooks() {
	local rep out
	set_mode 1
	for rep in $(seq 1 "$REPS"); do
		settle
		out=$("$H/faultloop" 4k 20 64)
		echo "R section=hooks case=fault4k rep=$rep $out"
		out=$("$H/faultloop" thp 20 64)
		echo "R section=hooks case=faultthp rep=$rep $out"
		out=$("$H/spawn" 200 /bin/true)
		echo "R section=hooks case=forkexec rep=$rep $out"
		# mTHP faults (alloc_anon_folio()): 64K at always, PMD size off
		if [ -n "$saved_m64" ]; then
			echo always >$THP/$M64
			echo never >$THP/$MPMD
			out=$("$H/faultloop" mthp 20 64)
			echo "R section=hooks case=fault64k rep=$rep $out"
			echo "$saved_m64" >$THP/$M64
			echo "$saved_mpmd" >$THP/$MPMD
		fi
	done
}

# many threads of one process read-faulting the huge zero page: each fault
# increments the per-mm thp_zero_page_fault of the series, one word shared
# by all threads (issue 26, finding 5). Needs 2 CPUs to show contention.
zerofault() {
	local rep t out zp
	zp=$(cat $THP/use_zero_page)
	echo 1 >$THP/use_zero_page
	set_mode 1
	for rep in $(seq 1 "$REPS"); do
		for t in 1 2 8; do
			out=$("$H/threadfault" zero "$t" 5 1024)
			echo "R section=zerofault case=t$t rep=$rep $out"
		done
	done
	echo "$zp" >$THP/use_zero_page
}

# many threads of one process write-faulting 64K mTHPs (alloc_anon_folio()):
# with the 6.12 series each fault increments the mm's per-size
# hugepages-64kB/anon_fault_alloc, one word shared by all threads. Needs 2
# CPUs to show contention, and multi-size THP.
mthpfault() {
	local rep t out
	if [ -z "$saved_m64" ]; then
		echo "R section=mthpfault case=t1 unavailable=1"
		return
	fi
	set_mode 1
	echo always >$THP/$M64
	echo never >$THP/$MPMD
	for rep in $(seq 1 "$REPS"); do
		for t in 1 2 8; do
			out=$("$H/threadfault" write "$t" 5 16 64)
			echo "R section=mthpfault case=t$t rep=$rep $out"
		done
	done
	echo "$saved_m64" >$THP/$M64
	echo "$saved_mpmd" >$THP/$MPMD
}

launch() {
	local rep out
	command -v thpctl >/dev/null || { echo "R section=launch case=thpctl unavailable=1"; return; }
	for rep in $(seq 1 "$REPS"); do
		out=$("$H/spawn" 200 /bin/true)
		echo "R section=launch case=true rep=$rep $out"
		out=$("$H/spawn" 200 thpctl run -- /bin/true)
		echo "R section=launch case=thpctl-run rep=$rep $out"
		# the floor for any exec wrapper: one more exec of a small dynamic binary
		out=$("$H/spawn" 200 env /bin/true)
		echo "R section=launch case=env rep=$rep $out"
	done
}

# memory of a process, in KiB: VmRSS split into anon, file and shmem; PSS; USS
rss_fields() {
	awk '/^(VmRSS|RssAnon|RssFile|RssShmem):/ {sub(":", "", $1); printf "%s_kib=%s ", tolower($1), $2}' /proc/"$1"/status
	# USS: what the process alone holds (freed if it exits)
	awk '/^Pss:/ {p=$2} /^Private_(Clean|Dirty):/ {u+=$2} END {printf "pss_kib=%s uss_kib=%s", p, u}' /proc/"$1"/smaps_rollup
}

ctxsw() {
	awk '/^voluntary_ctxt_switches/ {v=$2} /^nonvoluntary_ctxt_switches/ {n=$2} END {print v+n}' /proc/"$1"/status
}

# thpd idle cost over 60 s, with the configuration installed in the guest
# (case idle), or that and [Collapse] on with nothing owed (idle-collapse)
thpd_idle() {
	local case=${1:-idle} pid s0 s1 c0 c1 conf=/etc/thpd/thpd.conf.d/90-bench-collapse.conf
	if [ "$case" = idle-collapse ]; then
		mkdir -p "${conf%/*}"
		printf '[Collapse]\nEnabled=yes\n' >"$conf"
	fi
	systemctl start thpd.service || { echo "R section=thpd case=$case unavailable=1"; rm -f "$conf"; return 1; }
	sleep 2
	pid=$(systemctl show -p MainPID --value thpd.service)
	c0=$(ctxsw "$pid")
	s0=$(awk '{print $14 + $15}' /proc/"$pid"/stat)
	sleep "${BENCH_IDLE_SECONDS:-60}"
	c1=$(ctxsw "$pid")
	s1=$(awk '{print $14 + $15}' /proc/"$pid"/stat)
	echo "R section=thpd case=$case rep=1 seconds=${BENCH_IDLE_SECONDS:-60} $(rss_fields "$pid") cpu_ticks=$((s1 - s0)) ctxsw=$((c1 - c0)) watchdog_usec=$(systemctl show -p WatchdogUSec --value thpd.service)"
	systemctl stop thpd.service
	rm -f "$conf"
}

# the first thpd step-down logged after journal cursor $1, as
# "__REALTIME_TIMESTAMP", or nothing
step_down_after() {
	journalctl --sync 2>/dev/null
	journalctl --no-pager -q -u thpd.service --after-cursor="$1" -o json |
		jq -r 'select(.THPD_EVENT == "step-down") | .__REALTIME_TIMESTAMP' | head -1
}

# The delay from memory pressure to the logged switch: a process in a cgroup
# with memory.high 16M and no swap touches 128 MiB (throttled: a memory
# stall); thpd's PSI trigger (100 ms of "some" stall in a 1 s window) fires
# and it steps down. Timed from just before the process starts to the
# journal entry's own timestamp (both the guest's clock).
thpd_pressure() {
	local cg=/sys/fs/cgroup/thp-bench-pressure conf=/etc/thpd/thpd.conf
	local rep mark t0 ts pid i
	[ -e /proc/pressure/memory ] || { echo "R section=thpd case=pressure unavailable=1"; return; }
	[ -e $conf ] && cp -a $conf /run/thp-bench-thpd.conf
	mkdir -p /etc/thpd
	# the same daemon configuration as 53-thpd-adaptive.bats
	cp "$THP_BATS/fixtures/thpd-adaptive-pressure.conf" $conf
	grep -qw memory /sys/fs/cgroup/cgroup.subtree_control ||
		echo +memory >/sys/fs/cgroup/cgroup.subtree_control
	mkdir -p $cg
	echo 16M >$cg/memory.high
	[ ! -e $cg/memory.swap.max ] || echo 0 >$cg/memory.swap.max
	systemctl restart thpd.service
	for rep in $(seq 1 "$REPS"); do
		# stepped up again (calm period over) before the next round
		for i in $(seq 1 300); do [ "$(knob enabled)" = always ] && break; sleep 0.1; done
		mark=$(journalctl -n 0 --show-cursor --no-pager | sed -n 's/^-- cursor: //p')
		t0=$(date +%s%6N)
		timeout 8 bash -c "echo \$\$ >$cg/cgroup.procs && exec $H/thp-touch --size 128" >/dev/null 2>&1 &
		pid=$!
		ts=
		for i in $(seq 1 150); do
			ts=$(step_down_after "$mark")
			[ -n "$ts" ] && break
			sleep 0.1
		done
		wait $pid
		if [ -n "$ts" ]; then
			echo "R section=thpd case=pressure rep=$rep delay_ms=$(((ts - t0) / 1000))"
		else
			echo "R section=thpd case=pressure rep=$rep missed=1"
		fi
	done
	systemctl stop thpd.service
	rmdir $cg
	if [ -e /run/thp-bench-thpd.conf ]; then mv /run/thp-bench-thpd.conf $conf; else rm -f $conf; fi
}

thpd_bench() {
	if ! systemctl cat thpd.service >/dev/null 2>&1; then
		echo "R section=thpd case=idle unavailable=1"
		return
	fi
	thpd_idle && thpd_idle idle-collapse && thpd_pressure
}

# hold NAME CMD...: CMD in the background with stdin from a FIFO kept open
# on a descriptor (NAME_fd), output in /run/thp-bench-NAME.out; waits for
# "ready" (10 min). NAME_pid is its pid. It starts without the FIFOs of
# those held before, or they would never see their end.
HELD_FDS=()
hold() {
	local name=$1 fifo=/run/thp-bench-$1.in out=/run/thp-bench-$1.out i fd
	shift
	rm -f "$fifo" "$out"
	mkfifo "$fifo"
	(
		for fd in "${HELD_FDS[@]}"; do eval "exec $fd>&-"; done
		exec "$@"
	) <"$fifo" >"$out" 2>&1 &
	printf -v "${name}_pid" %s $!
	exec {fd}>"$fifo"
	HELD_FDS+=("$fd")
	printf -v "${name}_fd" %s "$fd"
	for i in $(seq 1 6000); do
		grep -qx ready "$out" && return 0
		kill -0 "$!" 2>/dev/null || break
		sleep 0.1
	done
	echo "bench: $* did not get ready: $(cat "$out")" >&2
	return 1
}

value() { sed -n "s/^$2=//p" "/run/thp-bench-$1.out" | tail -1; }
global_huge_kib() { awk '$1 == "AnonHugePages:" { print $2 }' /proc/meminfo; }
collapse_cpu_usec() { thpctl --json status 2>/dev/null | jq -r '.thpd.collapse.cpu_usec // 0'; }

# Collapse after fragmentation (issue 28): thp-frag fragments the guest, a
# process (touchloop) faults SIZE MiB as 4 KiB pages and keeps reading it;
# then the fragmentation is released. Measured from the release: the time
# until 90% of the region is huge (polled in /proc/meminfo, which takes no
# lock of the process; checked in its smaps at the end), with thpd's
# [Collapse] on and with only khugepaged at its defaults, up to 10 minutes;
# thpd's CPU time for it (its own count, and its utime+stime); the
# process's largest gap between two reads while it was collapsed, and over
# as long a quiet time before the release.
collapse_case() {
	local case=$1 rep=$2 size=$3 conf=/etc/thpd/thpd.conf
	local base taken want t0 t90='' now huge i st cpu0 cpu1 tk0 tk1 quiet gap final pid
	settle
	echo always >$THP/enabled
	echo madvise >$THP/defrag
	echo 0 >/proc/sys/vm/compaction_proactiveness
	echo 4096 >$THP/khugepaged/pages_to_scan
	echo 10000 >$THP/khugepaged/scan_sleep_millisecs
	echo 60000 >$THP/khugepaged/alloc_sleep_millisecs
	if [ "$case" = thpd ]; then
		printf '[Collapse]\nEnabled=yes\n\n[Rule bench]\nExe=%s\nPolicy=default\n' "$H/touchloop" >$conf
	else
		: >$conf
	fi
	systemctl restart thpd.service
	hold frag "$H/thp-frag" --leave 48 --take-blocks || return
	hold loop "$H/touchloop" "$size" || { exec {frag_fd}>&-; return; }
	pid=$loop_pid
	taken=$(($(value frag taken_mib) * 1024))
	if [ "$case" = thpd ]; then
		# thpd sees the fallbacks on its watchdog tick
		for i in $(seq 1 120); do
			st=$(thpctl --json status | jq -r .thpd.collapse.state)
			[ "$st" = owed ] && break
			sleep 1
		done
	fi
	base=$(global_huge_kib)
	want=$((size * 1024 * 9 / 10))
	# a quiet span first, for the gap the process sees anyway
	kill -USR1 "$pid"
	sleep 5
	kill -USR1 "$pid"
	cpu0=$(collapse_cpu_usec)
	tk0=$(awk '{print $14 + $15}' /proc/"$(systemctl show -p MainPID --value thpd.service)"/stat)
	t0=$(date +%s%6N)
	exec {frag_fd}>&-
	for i in $(seq 1 6000); do
		now=$(date +%s%6N)
		huge=$(($(global_huge_kib) - base + taken))
		if [ "$huge" -ge "$want" ]; then
			t90=$(((now - t0) / 1000))
			break
		fi
		[ $((now - t0)) -lt 600000000 ] || break
		# fine-grained for the first 10 s, then once a second
		if [ $((now - t0)) -lt 10000000 ]; then sleep 0.05; else sleep 1; fi
	done
	kill -USR1 "$pid"
	cpu1=$(collapse_cpu_usec)
	tk1=$(awk '{print $14 + $15}' /proc/"$(systemctl show -p MainPID --value thpd.service)"/stat)
	wait "$frag_pid"
	sleep 1
	quiet=$(sed -n 's/^gap_max_us=\([0-9]*\).*/\1/p' /run/thp-bench-loop.out | sed -n 2p)
	gap=$(sed -n 's/^gap_max_us=\([0-9]*\).*/\1/p' /run/thp-bench-loop.out | sed -n 3p)
	exec {loop_fd}>&-
	wait "$pid"
	final=$(value loop anon_huge_kib_final)
	echo "R section=collapse case=$case rep=$rep size_mib=$size pre_huge_kib=$(value loop anon_huge_kib) reached=$([ -n "$t90" ] && echo 1 || echo 0) t90_ms=${t90:-600000} final_huge_kib=$final pattern=$(value loop pattern_final) thpd_cpu_ms=$(((cpu1 - cpu0) / 1000)) thpd_ticks=$((tk1 - tk0)) gap_quiet_us=${quiet:-0} gap_max_us=${gap:-0}"
	: >$conf
}

collapse_bench() {
	local rep size=$COLLAPSE_MIB conf=/etc/thpd/thpd.conf
	if ! systemctl cat thpd.service >/dev/null 2>&1; then
		echo "R section=collapse case=thpd unavailable=1"
		return
	fi
	[ -e $conf ] && cp -a $conf /run/thp-bench-collapse.conf
	mkdir -p /etc/thpd
	local proact khp ksleep kalloc
	proact=$(cat /proc/sys/vm/compaction_proactiveness)
	khp=$(cat $THP/khugepaged/pages_to_scan)
	ksleep=$(cat $THP/khugepaged/scan_sleep_millisecs)
	kalloc=$(cat $THP/khugepaged/alloc_sleep_millisecs)
	# khugepaged may take minutes each time: fewer repetitions than the rest
	for rep in $(seq 1 "$COLLAPSE_REPS"); do
		collapse_case thpd "$rep" "$size"
		collapse_case khugepaged "$rep" "$size"
	done
	systemctl stop thpd.service
	echo "$proact" >/proc/sys/vm/compaction_proactiveness
	echo "$khp" >$THP/khugepaged/pages_to_scan
	echo "$ksleep" >$THP/khugepaged/scan_sleep_millisecs
	echo "$kalloc" >$THP/khugepaged/alloc_sleep_millisecs
	if [ -e /run/thp-bench-collapse.conf ]; then mv /run/thp-bench-collapse.conf $conf; else rm -f $conf; fi
}

meta
[ "$section" = all ] && section="largepages hooks launch thpd zerofault mthpfault collapse"
for s in $section; do
	case $s in
	largepages) largepages ;;
	hooks) hooks ;;
	launch) launch ;;
	thpd) thpd_bench ;;
	zerofault) zerofault ;;
	mthpfault) mthpfault ;;
	collapse) collapse_bench ;;
	*) echo "usage: run.sh all|\"SECTION...\" [REPS [SIZE_MIB]]; sections: largepages hooks launch thpd zerofault mthpfault collapse" >&2; exit 2 ;;
	esac
done
