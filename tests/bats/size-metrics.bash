# thpctl metrics' per-size families against the hugepages-<N>kB directories
# they come from, shared by the guest (81-metrics: the running kernel) and
# the host (45-thpctl-metrics: each generation's fixture). `load
# size-metrics` (host: `load ../bats/size-metrics`).
# shellcheck shell=bash

# size_metrics_expected DIR: the samples sysfs under DIR (a THP directory)
# says thpctl metrics must print, one "name{labels} value" a line: a gauge
# per word of each size's enabled and shmem_enabled (1 for the bracketed
# word), and each stats/ file as thp_size_FILE_total (nr_*: a gauge, no
# _total), labelled size="<N>kB" as the directory names it
size_metrics_expected() {
	local d s k w v f n
	for d in "$1"/hugepages-*kB; do
		[ -d "$d" ] || continue
		s=${d##*/hugepages-}
		for k in enabled shmem_enabled; do
			[ -r "$d/$k" ] || continue
			for w in $(<"$d/$k"); do
				v=0
				if [[ $w == \[*\] ]]; then
					w=${w:1:-1}
					v=1
				fi
				echo "thp_size_$k{size=\"$s\",setting=\"$w\"} $v"
			done
		done
		for f in "$d"/stats/*; do
			[ -r "$f" ] || continue
			n=${f##*/}
			[[ $n == nr_* ]] || n=${n}_total
			echo "thp_size_$n{size=\"$s\"} $(<"$f")"
		done
	done
}

# size_metrics_check BEFORE AFTER METRICS: every sample of BEFORE (from
# size_metrics_expected, read just before METRICS was printed; AFTER just
# after) is in METRICS with a value between the two, and METRICS has no
# per-size sample sysfs does not back (thp_size_anon_effective is derived,
# not read, and 45-thpctl-metrics checks it). Says what differs; 1 if any.
size_metrics_check() {
	awk -v before="$1" -v after_file="$2" '
		BEGIN {
			while ((getline l < before) > 0) { split(l, f, " "); want[f[1]] = f[2]; order[++n] = f[1] }
			close(before)
			while ((getline l < after_file) > 0) { split(l, f, " "); after[f[1]] = f[2] }
		}
		/^thp_size_/ { got[$1] = $2 }
		END {
			if (n == 0) { print "sysfs has no hugepages-<N>kB to compare with"; bad = 1 }
			for (i = 1; i <= n; i++) {
				k = order[i]; lo = want[k] + 0; hi = after[k] + 0
				if (lo > hi) { t = lo; lo = hi; hi = t }
				if (!(k in got)) { print "missing: " k " (sysfs: " want[k] ")"; bad = 1 }
				else if (got[k] + 0 < lo || got[k] + 0 > hi) {
					print k " is " got[k] ", sysfs read " want[k] " before and " after[k] " after"
					bad = 1
				}
			}
			for (k in got)
				if (!(k in want) && k !~ /^thp_size_anon_effective\{/) {
					print "not in sysfs: " k " " got[k]; bad = 1
				}
			exit bad
		}' "$3"
}
