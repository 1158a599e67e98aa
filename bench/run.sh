#!/bin/bash
# Benchmarks, run as root in the guest by tests/vm/bench.sh (make bench).
# Prints raw measurements as lines "R section=... case=... rep=N key=value...";
# bench/report.awk turns them into the table. Never fails on a time.
#
# usage: run.sh all|"SECTION..." [REPS [SIZE_MIB]]  (largepages hooks launch thpd)
set -u
THP=/sys/kernel/mm/transparent_hugepage
H=${THP_HELPERS:-/opt/thp-stack/helpers}
section=${1:-all}
REPS=${2:-5}
SIZE=${3:-512}

knob() { sed 's/.*\[\(.*\)\].*/\1/' "$THP/$1"; }
saved_enabled=$(knob enabled)
saved_defrag=$(knob defrag)
trap 'echo "$saved_enabled" >$THP/enabled; echo "$saved_defrag" >$THP/defrag' EXIT
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
	done
}

launch() {
	local rep out
	command -v thpctl >/dev/null || { echo "R section=launch case=thpctl unavailable=1"; return; }
	for rep in $(seq 1 "$REPS"); do
		out=$("$H/spawn" 200 /bin/true)
		echo "R section=launch case=true rep=$rep $out"
		out=$("$H/spawn" 200 thpctl run -- /bin/true)
		echo "R section=launch case=thpctl-run rep=$rep $out"
	done
}

# thpd idle cost over 60 s and the delay from memory pressure to a switch
thpd_bench() {
	local pid s0 s1 c0 c1 v0 v1 rss
	if ! systemctl cat thpd.service >/dev/null 2>&1; then
		echo "R section=thpd case=idle unavailable=1"
		return
	fi
	systemctl start thpd.service || { echo "R section=thpd case=idle unavailable=1"; return; }
	sleep 2
	pid=$(systemctl show -p MainPID --value thpd.service)
	read -r c0 v0 < <(awk '/^voluntary_ctxt_switches/ {v=$2} /^nonvoluntary_ctxt_switches/ {n=$2} END {print v+n, v}' /proc/"$pid"/status)
	s0=$(awk '{print $14 + $15}' /proc/"$pid"/stat)
	sleep "${BENCH_IDLE_SECONDS:-60}"
	read -r c1 v1 < <(awk '/^voluntary_ctxt_switches/ {v=$2} /^nonvoluntary_ctxt_switches/ {n=$2} END {print v+n, v}' /proc/"$pid"/status)
	s1=$(awk '{print $14 + $15}' /proc/"$pid"/stat)
	rss=$(awk '/^VmRSS/ {print $2}' /proc/"$pid"/status)
	echo "R section=thpd case=idle rep=1 seconds=${BENCH_IDLE_SECONDS:-60} rss_kib=$rss cpu_ticks=$((s1 - s0)) ctxsw=$((c1 - c0)) watchdog_usec=$(systemctl show -p WatchdogUSec --value thpd.service)"
	systemctl stop thpd.service
}

meta
[ "$section" = all ] && section="largepages hooks launch thpd"
for s in $section; do
	case $s in
	largepages) largepages ;;
	hooks) hooks ;;
	launch) launch ;;
	thpd) thpd_bench ;;
	*) echo "usage: run.sh all|\"SECTION...\" [REPS [SIZE_MIB]]; sections: largepages hooks launch thpd" >&2; exit 2 ;;
	esac
done
