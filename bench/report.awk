#!/usr/bin/awk -f
# Turns the "R boot=... section=... case=... key=value" lines of bench/run.sh
# into the table `make bench` prints. Medians over repetitions; min..max shown
# where the spread matters. Portable awk (mawk): no asort.

function median(list,    n, a, i, j, t) {
	n = split(list, a, " ")
	for (i = 2; i <= n; i++) {
		t = a[i] + 0
		for (j = i - 1; j >= 1 && a[j] + 0 > t; j--)
			a[j + 1] = a[j]
		a[j + 1] = t
	}
	if (n == 0)
		return ""
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function minof(list,    n, a, i, m) {
	n = split(list, a, " "); m = a[1] + 0
	for (i = 2; i <= n; i++) if (a[i] + 0 < m) m = a[i] + 0
	return m
}
function maxof(list,    n, a, i, m) {
	n = split(list, a, " "); m = a[1] + 0
	for (i = 2; i <= n; i++) if (a[i] + 0 > m) m = a[i] + 0
	return m
}
function ratio(a, b) { return b > 0 ? sprintf("%.3f", a / b) : "-" }
# threads_table SECTION COUNTER: faults/s of 1, 2 and 8 threads, patched
# against stock, and the series' per-mm COUNTER against the faults the
# threads made (counted/faults, 1.000 when it saw every one)
function threads_table(sec, counter,    t, c, pa, st, cnt, fl, cf, sm, sr) {
	printf "%-8s %12s %18s %12s %18s %8s %14s\n", "threads", "patched", "(min..max)", "stock", "(min..max)", "ratio", "counted/faults"
	for (t = 1; t <= 3; t++) {
		c = t == 1 ? "t1" : t == 2 ? "t2" : "t8"
		pa = v["patched/" sec "/" c "/faults_per_s"]; st = v["stock/" sec "/" c "/faults_per_s"]
		if (pa == "") { printf "%-8s %s\n", substr(c, 2), "not measured"; continue }
		cnt = median(v["patched/" sec "/" c "/" counter]); fl = median(v["patched/" sec "/" c "/faults"])
		cf = (fl > 0 && cnt != "" && cnt >= 0) ? sprintf("%.3f", cnt / fl) : "-"
		sm = (st == "") ? "-" : sprintf("%.0f", median(st))
		sr = (st == "") ? "" : sprintf("%8.0f..%-9.0f", minof(st), maxof(st))
		printf "%-8s %12.0f %8.0f..%-9.0f %12s %18s %8s %14s\n", substr(c, 2), median(pa), minof(pa), maxof(pa),
			sm, sr, (st == "") ? "-" : ratio(median(pa), median(st)), cf
	}
	print "ratio = patched/stock (>= 1 is faster with the series); counted/faults must be 1.000"
}

$1 == "R" {
	delete kv
	for (i = 2; i <= NF; i++) {
		eq = index($i, "=")
		if (eq) kv[substr($i, 1, eq - 1)] = substr($i, eq + 1)
	}
	key = kv["boot"] "/" kv["section"] "/" kv["case"]
	if (kv["section"] == "meta") { meta[kv["boot"] ", " kv["clock"]] = $0; next }
	if ("unavailable" in kv) { unavail[key] = 1; next }
	for (k in kv)
		if (k != "boot" && k != "section" && k != "case" && k != "rep")
			v[key "/" k] = v[key "/" k] " " kv[k]
}

END {
	for (b in meta) print "# " b ": " substr(meta[b], 3)
	print ""
	print "1. largepages (the RFC's largepages3), medians of the repetitions, times in ms"
	printf "%-13s %10s %16s %10s %10s %9s %11s %8s %8s %8s %9s\n", "case", "first", "(min..max)", "repeat", "stride", "faults", "huge MiB", "first/n", "rep/n", "str/n", "n/faults"
	split("never mode0 mode0-advise mode1 mode2", cases, " ")
	nf = median(v["patched/largepages/never/first_us"])
	nr = median(v["patched/largepages/never/repeat_us"])
	ns = median(v["patched/largepages/never/stride_us"])
	nflt = median(v["patched/largepages/never/minflt"])
	for (c = 1; c <= 5; c++) {
		k = "patched/largepages/" cases[c]
		if (k in unavail) { printf "%-13s %s\n", cases[c], "unavailable (no thpctl in the guest)"; continue }
		if (v[k "/first_us"] == "") { printf "%-13s %s\n", cases[c], "not measured"; continue }
		f = median(v[k "/first_us"]); r = median(v[k "/repeat_us"]); s = median(v[k "/stride_us"])
		flt = median(v[k "/minflt"])
		printf "%-13s %10.1f %7.1f..%-8.1f %10.1f %10.1f %9d %11d %8s %8s %8s %9s\n", cases[c], f / 1000,
			minof(v[k "/first_us"]) / 1000, maxof(v[k "/first_us"]) / 1000, r / 1000, s / 1000, flt,
			median(v[k "/anon_huge_kib"]) / 1024, ratio(f, nf), ratio(r, nr), ratio(s, ns), ratio(nflt, flt)
	}
	print "RFC (2009, bare metal): first touch 1.566/2.182 s = 0.72, repeat 453/460 ms = 0.98, stride 41.6/44.0 ms = 0.95"
	print "goals: n/faults >= 500 with hugepages; first/n <= 0.6; mode0-advise reaches mode1's fault reduction"
	print ""
	print "2. cost of the series' kernel hooks: same config with and without the series"
	print "   (deterministic clock: QEMU -icount, one CPU; guest time follows executed instructions,"
	print "   so noise only adds: the ratio of the minima is the cost, that of the medians an upper bound)"
	printf "%-10s %16s %16s %10s %16s %16s %10s\n", "case", "patched min", "stock min", "ratio", "patched median", "stock median", "ratio"
	split("fault4k:ns_per_fault faultthp:ns_per_fault fault64k:ns_per_fault forkexec:us_per_launch", hk, " ")
	for (i = 1; i <= 4; i++) {
		split(hk[i], p, ":")
		pa = v["patched/hooks/" p[1] "/" p[2]]; st = v["stock/hooks/" p[1] "/" p[2]]
		u = p[2] ~ /ns/ ? "ns" : "us"
		if (p[1] == "fault64k" && pa == "" && st == "") continue	# no multi-size THP
		if (pa == "" || st == "") { printf "%-10s %s\n", p[1], "not measured (needs both kernels)"; continue }
		printf "%-10s %13.1f %-2s %13.1f %-2s %10s %13.1f %-2s %13.1f %-2s %10s\n", p[1], minof(pa), u, minof(st), u, ratio(minof(pa), minof(st)), median(pa), u, median(st), u, ratio(median(pa), median(st))
	}
	print "goal: within 1% (ratio <= 1.010)"
	print ""
	print "3. launch: thpctl run -- /bin/true vs /bin/true, microseconds per launch (medians);"
	print "   env /bin/true is the floor for any exec wrapper (one more exec of a small dynamic binary)"
	for (bi = 1; bi <= 2; bi++) {
		b = bi == 1 ? "patched" : "host"
		t = median(v[b "/launch/true/us_per_launch"]); w = median(v[b "/launch/thpctl-run/us_per_launch"])
		e = median(v[b "/launch/env/us_per_launch"])
		if (t == "" || w == "") { printf "%-8s %s\n", b == "patched" ? "guest" : b, "not measured"; continue }
		printf "%-8s true %8.1f us   thpctl run %8.1f us   extra %8.1f us", b == "patched" ? "guest" : b, t, w, w - t
		if (e != "") printf "   (env: extra %8.1f us)", e - t
		printf "\n"
	}
	print "goal: <= 1000 us extra"
	print ""
	print "4. thpd"
	k = "patched/thpd/idle"
	if (k in unavail || v[k "/vmrss_kib"] == "") print "idle: not measured (thpd unavailable)"
	else {
		wd = v[k "/watchdog_usec"]; sub(/^ +/, "", wd)
		printf "idle over %s s: %s CPU ticks, %s context switches (WatchdogSec=%s)\n", median(v[k "/seconds"]), median(v[k "/cpu_ticks"]), median(v[k "/ctxsw"]), wd
		printf "memory: RSS %s KiB = anon %s + file %s + shmem %s; PSS %s KiB; USS (its own) %s KiB\n", median(v[k "/vmrss_kib"]), median(v[k "/rssanon_kib"]), median(v[k "/rssfile_kib"]), median(v[k "/rssshmem_kib"]), median(v[k "/pss_kib"]), median(v[k "/uss_kib"])
	}
	k = "patched/thpd/pressure"
	if (k in unavail || v[k "/delay_ms"] == "") print "pressure -> step-down: not measured"
	else {
		n = split(v[k "/missed"], miss, " ")
		printf "pressure -> logged step-down: median %d ms (%d..%d, %d runs, %d without a step-down in 15 s)\n", median(v[k "/delay_ms"]), minof(v[k "/delay_ms"]), maxof(v[k "/delay_ms"]), split(v[k "/delay_ms"], dd, " "), n
	}
	k = "patched/thpd/idle-collapse"
	if (v[k "/ctxsw"] != "")
		printf "idle with [Collapse] on, nothing owed: %s CPU ticks, %s context switches\n", median(v[k "/cpu_ticks"]), median(v[k "/ctxsw"])
	print "goals: RSS <= 2048 KiB, no wakeups beyond the watchdog, step-down <= 2000 ms"
	print ""
	print "5. huge zero page read faults, THREADS threads of one process (TCG -smp 2, 5 s each;"
	print "   every fault increments the mm's thp_zero_page_fault with the series), faults/s"
	threads_table("zerofault", "zero_page_faults")
	if (v["patched/mthpfault/t1/faults_per_s"] != "" || v["stock/mthpfault/t1/faults_per_s"] != "") {
		print ""
		print "6. 64K mTHP write faults, THREADS threads of one process (TCG -smp 2, 5 s each;"
		print "   every fault increments the mm's hugepages-64kB/anon_fault_alloc with the 6.12 series), faults/s"
		threads_table("mthpfault", "per_process")
	}
	print ""
	print "7. collapse after fragmentation: a process faults " (v["patched/collapse/thpd/size_mib"] != "" ? median(v["patched/collapse/thpd/size_mib"]) : "?") " MiB as 4 KiB pages, reads it in a loop;"
	print "   from the release of the fragmentation: time until 90% of it is huge (up to 10 min),"
	print "   thpd's CPU time for it, the loop's largest gap between two reads (medians)"
	printf "%-11s %5s %12s %18s %12s %12s %14s %8s\n", "case", "runs", "to 90% (ms)", "(min..max)", "reached", "thpd CPU ms", "gap max (us)", "quiet"
	split("thpd khugepaged", cc, " ")
	for (c = 1; c <= 2; c++) {
		k = "patched/collapse/" cc[c]
		if (k in unavail) { printf "%-11s %s\n", cc[c], "unavailable (no thpd in the guest)"; continue }
		if (v[k "/t90_ms"] == "") { printf "%-11s %s\n", cc[c], "not measured"; continue }
		n = split(v[k "/reached"], rr, " "); got = 0
		for (i = 1; i <= n; i++) got += rr[i]
		printf "%-11s %5d %12d %8d..%-9d %7d of %d %12s %14d %8d\n", cc[c], n, median(v[k "/t90_ms"]), minof(v[k "/t90_ms"]), maxof(v[k "/t90_ms"]), got, n, cc[c] == "thpd" ? median(v[k "/thpd_cpu_ms"]) : "-", median(v[k "/gap_max_us"]), median(v[k "/gap_quiet_us"])
	}
	t = median(v["patched/collapse/thpd/t90_ms"]); kh = median(v["patched/collapse/khugepaged/t90_ms"])
	if (t != "" && kh != "" && t > 0)
		printf "khugepaged/thpd: %.1fx (khugepaged's runs that did not get there count as 10 min)\n", kh / t
	print "goal (issue 28): thpd >= 90% huge within 2000 ms of the release; khugepaged's defaults do not"
}
