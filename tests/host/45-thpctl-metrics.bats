#!/usr/bin/env bats
# thpctl metrics and thpctl cgroups against fake trees (THP_ROOT): the 6.12
# sysfs layout (tests/host/fixtures), /proc files and a cgroup v2 hierarchy
# made here. What node_exporter and promtool make of the output is the
# guest's business (tests/bats/81-metrics.bats); here: the values, the
# exposition format's structure, the limits and the atomic write.

bats_require_minimum_version 1.5.0
load '/usr/lib/bats/bats-support/load'
load '/usr/lib/bats/bats-assert/load'
load ../bats/size-metrics

SYS=sys/kernel/mm/transparent_hugepage
CG=sys/fs/cgroup

setup() {
	THPCTL=${BUILD_DIR:?BUILD_DIR must point at the build directory}/thpctl
	[ -x "$THPCTL" ] || fail "no $THPCTL"
	export THP_ROOT=$BATS_TEST_TMPDIR/root
	# never reach a real thpd from host tests
	export THPD_SOCKET=$BATS_TEST_TMPDIR/no-thpd.sock
	mkdir -p "$THP_ROOT/proc"
	cp -r "$BATS_TEST_DIRNAME/fixtures/6.12/." "$THP_ROOT/"
	echo 7 >"$THP_ROOT/$SYS/hugepages-64kB/stats/anon_fault_alloc"
	echo 3 >"$THP_ROOT/$SYS/hugepages-2048kB/stats/nr_anon"
	echo 'always inherit [madvise] never' >"$THP_ROOT/$SYS/hugepages-64kB/enabled"
	# the captured 6.12 boots at always (Debian's default); these tests want madvise
	echo 'always [madvise] never' >"$THP_ROOT/$SYS/enabled"
	printf 'MemTotal:        2000000 kB\nAnonHugePages:     14336 kB\nShmemHugePages:     2048 kB\n' >"$THP_ROOT/proc/meminfo"
	printf 'nr_free_pages 1000\nthp_fault_alloc 12\nthp_fault_fallback 3\nthp_collapse_alloc 4\npgfault 99\n' \
		>"$THP_ROOT/proc/vmstat"
	# order 9: 1; order 10: 2 (counting 2 each) -> 5 blocks of 2 MiB
	printf 'Node 0, zone   Normal      0      0      0      0      0      0      0      0      0      1      2\n' \
		>"$THP_ROOT/proc/buddyinfo"
	fake_cgroups
}

# memstat DIR ANON_THP SHMEM_THP FAULT_ALLOC: a cgroup with a memory.stat
memstat() {
	mkdir -p "$THP_ROOT/$CG$1"
	printf 'anon 99999999\nfile 0\nanon_thp %s\nfile_thp 0\nshmem_thp %s\npgfault 5\nthp_fault_alloc %s\nthp_collapse_alloc 0\n' \
		"$2" "$3" "$4" >"$THP_ROOT/$CG$1/memory.stat"
}

fake_cgroups() {
	mkdir -p "$THP_ROOT/$CG"
	echo "cpu memory pids" >"$THP_ROOT/$CG/cgroup.controllers"
	memstat /system.slice 6291456 0 4
	memstat /system.slice/big.service 4194304 0 2
	memstat /system.slice/small.service 2097152 0 1
	memstat /system.slice/shm.service 0 2097152 0
	memstat /user.slice 0 0 0
	memstat /machine.slice/a/b 2097152 0 1
	memstat /machine.slice/a/b/deep 2097152 0 1
	# a directory without memory.stat (memory controller not enabled there)
	mkdir -p "$THP_ROOT/$CG/init.scope"
	memstat '/odd"na\me.scope' 2097152 0 0
}

# metric NAME{LABELS}: the sample's value
metric() {
	awk -v k="$1" '$1 == k { print $2 }' <<<"$output"
}

@test "metrics: settings and per-size settings as one gauge per word, from sysfs" {
	run -0 "$THPCTL" metrics
	assert_line 'thp_enabled{setting="madvise"} 1'
	assert_line 'thp_enabled{setting="always"} 0'
	assert_line 'thp_enabled{setting="never"} 0'
	assert_line 'thp_defrag{setting="madvise"} 1'
	assert_line 'thp_size_enabled{size="64kB",setting="madvise"} 1'
	assert_line 'thp_size_enabled{size="64kB",setting="inherit"} 0'
	assert_line 'thp_size_enabled{size="2048kB",setting="inherit"} 1'
	assert_line 'thp_size_shmem_enabled{size="2048kB",setting="inherit"} 1'
	# 2M inherits madvise; 64K is madvise itself; 32K is never
	assert_line 'thp_size_anon_effective{size="2048kB",setting="madvise"} 1'
	assert_line 'thp_size_anon_effective{size="64kB",setting="madvise"} 1'
	assert_line 'thp_size_anon_effective{size="32kB",setting="never"} 1'
	assert_equal "$(metric thp_khugepaged_scan_sleep_seconds)" 10.000
}

@test "metrics: per-size families are the hugepages-<N>kB values of every generation" {
	local g d f i=0 n
	for g in 6.1 6.1-patched 6.12 6.18; do
		rm -rf "$THP_ROOT/$SYS"
		cp -r "$BATS_TEST_DIRNAME/fixtures/$g/." "$THP_ROOT/"
		# a distinct value in every stats file: a sample under the wrong
		# size or the wrong name cannot match by chance
		for f in "$THP_ROOT/$SYS"/hugepages-*kB/stats/*; do
			[ -e "$f" ] && echo $((i += 7)) >"$f"
		done
		run -0 "$THPCTL" metrics
		printf '%s\n' "$output" >"$BATS_TEST_TMPDIR/$g.prom"
		if ! compgen -G "$THP_ROOT/$SYS/hugepages-*kB" >/dev/null; then
			n=$(grep -c '^thp_size_' "$BATS_TEST_TMPDIR/$g.prom" || true)
			assert_equal "$g: $n per-size samples" "$g: 0 per-size samples"
			continue
		fi
		size_metrics_expected "$THP_ROOT/$SYS" >"$BATS_TEST_TMPDIR/$g.want"
		run -0 size_metrics_check "$BATS_TEST_TMPDIR/$g.want" "$BATS_TEST_TMPDIR/$g.want" \
			"$BATS_TEST_TMPDIR/$g.prom"
		# the comparison saw every size's settings and stats
		n=$(grep -c '^thp_size_.*_total{' "$BATS_TEST_TMPDIR/$g.want")
		[ "$n" -ge 90 ] || fail "$g: only $n per-size counters in sysfs"
		grep -q '^thp_size_shmem_enabled{size="8kB"' "$BATS_TEST_TMPDIR/$g.want" ||
			fail "$g: no shmem-only 8kB size"
	done
}

@test "metrics: size_metrics_check fails on a value, a label or a sample sysfs does not back" {
	size_metrics_expected "$THP_ROOT/$SYS" >"$BATS_TEST_TMPDIR/want"
	run -0 "$THPCTL" metrics
	printf '%s\n' "$output" >"$BATS_TEST_TMPDIR/good.prom"
	run -0 size_metrics_check "$BATS_TEST_TMPDIR/want" "$BATS_TEST_TMPDIR/want" "$BATS_TEST_TMPDIR/good.prom"
	sed 's/^\(thp_size_anon_fault_alloc_total{size="64kB"}\) 7$/\1 8/' "$BATS_TEST_TMPDIR/good.prom" >"$BATS_TEST_TMPDIR/bad.prom"
	run -1 size_metrics_check "$BATS_TEST_TMPDIR/want" "$BATS_TEST_TMPDIR/want" "$BATS_TEST_TMPDIR/bad.prom"
	assert_output 'thp_size_anon_fault_alloc_total{size="64kB"} is 8, sysfs read 7 before and 7 after'
	sed 's/^thp_size_nr_anon{size="2048kB"}/thp_size_nr_anon{size="2MB"}/' "$BATS_TEST_TMPDIR/good.prom" >"$BATS_TEST_TMPDIR/bad.prom"
	run -1 size_metrics_check "$BATS_TEST_TMPDIR/want" "$BATS_TEST_TMPDIR/want" "$BATS_TEST_TMPDIR/bad.prom"
	assert_line 'missing: thp_size_nr_anon{size="2048kB"} (sysfs: 3)'
	assert_line 'not in sysfs: thp_size_nr_anon{size="2MB"} 3'
}

@test "metrics: counters and figures carry the values the kernel files hold" {
	run -0 "$THPCTL" metrics
	assert_equal "$(metric thp_fault_alloc_total)" 12
	assert_equal "$(metric thp_collapse_alloc_total)" 4
	refute_output --partial pgfault
	assert_equal "$(metric 'thp_size_anon_fault_alloc_total{size="64kB"}')" 7
	assert_equal "$(metric 'thp_size_anon_fault_alloc_total{size="128kB"}')" 0
	assert_equal "$(metric 'thp_size_nr_anon{size="2048kB"}')" 3
	assert_line '# TYPE thp_size_nr_anon gauge'
	assert_line '# TYPE thp_size_split_total counter'
	assert_equal "$(metric thp_anon_huge_bytes)" $((14336 * 1024))
	assert_equal "$(metric thp_shmem_huge_bytes)" $((2048 * 1024))
	assert_equal "$(metric thp_free_hugepage_blocks)" 5
	assert_equal "$(metric thpd_up)" 0
	refute_output --partial thpd_rules
}

@test "metrics: exposition structure: HELP and TYPE once before each family, valid names, counters end in _total" {
	run -0 "$THPCTL" metrics
	run -0 awk '
		/^# HELP / { if (help[$3]++) { print "second HELP for " $3; bad = 1 }; next }
		/^# TYPE / { if (type[$3]) { print "second TYPE for " $3; bad = 1 }
			     type[$3] = $4; cur = $3
			     if ($4 == "counter" && $3 !~ /_total$/) { print "counter " $3 " without _total"; bad = 1 }
			     if ($4 != "counter" && $4 != "gauge") { print "type " $4; bad = 1 }
			     next }
		/^#/ { print "stray comment: " $0; bad = 1; next }
		{ name = $1; sub(/\{.*/, "", name)
		  if (name != cur) { print "sample " name " outside its family " cur; bad = 1 }
		  if (name !~ /^[a-zA-Z_:][a-zA-Z0-9_:]*$/) { print "bad name " name; bad = 1 }
		  if ($NF !~ /^-?[0-9]+(\.[0-9]+)?$/) { print "bad value " $0; bad = 1 }
		  n++ }
		END { if (n < 50) { print "only " n " samples"; bad = 1 }; exit bad }' <<<"$output"
}

@test "metrics: the cgroups of thpctl cgroups, label values escaped" {
	run -0 "$THPCTL" metrics
	assert_equal "$(metric 'thp_cgroup_anon_bytes{cgroup="/system.slice/big.service"}')" 4194304
	assert_equal "$(metric 'thp_cgroup_shmem_bytes{cgroup="/system.slice/shm.service"}')" 2097152
	assert_equal "$(metric 'thp_cgroup_fault_alloc_total{cgroup="/system.slice/big.service"}')" 2
	assert_line 'thp_cgroup_anon_bytes{cgroup="/odd\"na\\me.scope"} 2097152'
	# depth 3 by default: /machine.slice/a/b is in, .../deep (4) is not
	assert_output --partial 'cgroup="/machine.slice/a/b"'
	refute_output --partial deep
	# no THP at all: left out
	refute_output --partial user.slice
	assert_equal "$(metric thp_cgroups_exported)" 6
	run -0 "$THPCTL" metrics --top=2
	assert_equal "$(metric thp_cgroups_exported)" 2
	assert_equal "$(grep -c '^thp_cgroup_anon_bytes{' <<<"$output")" 2
	assert_output --partial 'cgroup="/system.slice"'
	assert_output --partial 'cgroup="/system.slice/big.service"'
}

@test "metrics --output: written whole and renamed into place, readable by node_exporter" {
	local out=$BATS_TEST_TMPDIR/textfile/thp.prom
	mkdir -p "${out%/*}"
	echo stale >"$out"
	run -0 "$THPCTL" metrics --output="$out"
	assert_output ''
	run -0 "$THPCTL" metrics
	assert_equal "$(cat "$out")" "$output"
	assert_equal "$(stat -c %a "$out")" 644
	run -0 ls "${out%/*}"
	assert_output thp.prom
	run -1 "$THPCTL" metrics --output="$BATS_TEST_TMPDIR/missing/thp.prom"
	assert_output --partial "cannot create a file beside"
}

@test "cgroups: largest THP first, within --depth, at most --top, --json an object with a named array" {
	run -0 "$THPCTL" cgroups --json
	run -0 jq -r '.cgroups | map(.cgroup) | join(" ")' <<<"$output"
	assert_output '/system.slice /system.slice/big.service /machine.slice/a/b /odd"na\me.scope /system.slice/shm.service /system.slice/small.service'
	run -0 "$THPCTL" cgroups --json --depth=1 --top=2
	run -0 jq -c '[.depth, .top, .memory_cgroups, .shown, (.cgroups | map(.cgroup))]' <<<"$output"
	assert_output '[1,2,3,2,["/system.slice","/odd\"na\\me.scope"]]'
	run -0 "$THPCTL" cgroups --json --sort=thp_fault_alloc --top=3
	run -0 jq -c '.cgroups | map([.cgroup, .thp_fault_alloc])' <<<"$output"
	assert_output '[["/system.slice",4],["/system.slice/big.service",2],["/machine.slice/a/b",1]]'
	run -0 "$THPCTL" cgroups --json --all --sort=cgroup --top=0
	run -0 jq -r '.cgroups | map(.cgroup) | join(" ")' <<<"$output"
	assert_output '/machine.slice/a/b /odd"na\me.scope /system.slice /system.slice/big.service /system.slice/shm.service /system.slice/small.service /user.slice'
}

@test "cgroups: text is a table of the same figures" {
	run -0 "$THPCTL" cgroups --top=1
	assert_line --regexp '^CGROUP +THP +ANON_THP +FILE_THP +SHMEM_THP +FAULT_ALLOC +COLLAPSE$'
	assert_line --regexp '^/system.slice +6291456 +6291456 +0 +0 +4 +0$'
}

@test "cgroups and metrics: usage errors and a missing hierarchy" {
	run -2 "$THPCTL" cgroups --depth=x
	assert_output --partial "--depth needs a number"
	run -2 "$THPCTL" cgroups --sort=pgfault
	assert_output --partial "cannot sort by 'pgfault'"
	run -2 "$THPCTL" metrics --top=-1
	run -2 "$THPCTL" metrics extra
	rm -rf "${THP_ROOT:?}/sys/fs"
	run -1 "$THPCTL" cgroups
	assert_output --partial "no cgroup v2 hierarchy"
	# metrics go on without cgroups
	run -0 "$THPCTL" metrics
	refute_output --partial thp_cgroup
}

@test "--json=short is one line, --json=pretty and plain --json indented; the same data" {
	run -0 "$THPCTL" cgroups --json=short
	assert_equal "${#lines[@]}" 1
	local short=$output
	run -0 "$THPCTL" --json=pretty cgroups
	[ "${#lines[@]}" -gt 10 ] || fail "pretty JSON in ${#lines[@]} lines"
	assert_equal "$(jq -c . <<<"$output")" "$(jq -c . <<<"$short")"
	run -0 "$THPCTL" --json cgroups
	assert_equal "$(jq -c . <<<"$output")" "$(jq -c . <<<"$short")"
	[ "${#lines[@]}" -gt 10 ] || fail "plain --json is not indented any more"
	run -0 "$THPCTL" ps --json=short
	assert_equal "${#lines[@]}" 1
	run -0 jq -e 'keys == ["processes"] and (.processes | type) == "array"' <<<"$output"
	run -2 "$THPCTL" cgroups --json=compact
	assert_output --partial "--json takes 'pretty' or 'short', not 'compact'"
	run -2 "$THPCTL" enable --json=short madvise
	assert_output --partial "not a read command"
}
