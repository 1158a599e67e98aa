#!/usr/bin/env bats
# The harness's own arithmetic (TAP counting, the benchmark report) and the
# runner's argument checks.

bats_require_minimum_version 1.5.0
load '/usr/lib/bats/bats-support/load'
load '/usr/lib/bats/bats-assert/load'

TOP=$BATS_TEST_DIRNAME/../..

@test "tap-summary counts passes, failures and skips across files" {
	printf '1..3\nok 1 a\nnot ok 2 b\nok 3 c # skip no feature\n' >"$BATS_TEST_TMPDIR/a.tap"
	printf '1..2\nok 1 d\nok 2 e # SKIP why\n# ok 9 not a result\n' >"$BATS_TEST_TMPDIR/b.tap"
	run -0 "$TOP/tests/vm/tap-summary.sh" check "$BATS_TEST_TMPDIR/a.tap" "$BATS_TEST_TMPDIR/b.tap"
	assert_output "check: 2 passed, 1 failed, 2 skipped"
}

@test "tap-summary of nothing is zero, not an error" {
	run -0 "$TOP/tests/vm/tap-summary.sh" guest "$BATS_TEST_TMPDIR/missing.tap"
	assert_output "guest: 0 passed, 0 failed, 0 skipped"
}

@test "bench report: medians, ratios against never, fault reduction" {
	for rep in 1 2 3; do
		echo "R boot=patched section=largepages case=never rep=$rep first_us=$((2000000 + rep)) repeat_us=400000 stride_us=40000 minflt=131072 anon_huge_kib=0"
		echo "R boot=patched section=largepages case=mode1 rep=$rep first_us=$((1000000 * rep)) repeat_us=400000 stride_us=20000 minflt=256 anon_huge_kib=524288"
	done >"$BATS_TEST_TMPDIR/raw"
	run -0 awk -f "$TOP/bench/report.awk" "$BATS_TEST_TMPDIR/raw"
	# mode1: median first 2000 ms of 1000/2000/3000; ratio to never's 2000.002 ms
	assert_line --regexp '^mode1 +2000\.0 +1000\.0\.\.3000\.0 +400\.0 +20\.0 +256 +512 +1\.000 +1\.000 +0\.500 +512\.000$'
	assert_line --regexp '^mode0 +not measured$'
}

@test "bench report: hook ratio patched/stock, of the minima and of the medians" {
	{
		echo "R boot=patched section=hooks case=fault4k rep=1 faults=10 ns_per_fault=1010"
		echo "R boot=patched section=hooks case=fault4k rep=2 faults=10 ns_per_fault=1500"
		echo "R boot=patched section=hooks case=fault4k rep=3 faults=10 ns_per_fault=1100"
		echo "R boot=stock section=hooks case=fault4k rep=1 faults=10 ns_per_fault=1000"
		echo "R boot=stock section=hooks case=fault4k rep=2 faults=10 ns_per_fault=1000"
	} >"$BATS_TEST_TMPDIR/raw"
	run -0 awk -f "$TOP/bench/report.awk" "$BATS_TEST_TMPDIR/raw"
	# minima 1010/1000; medians 1100/1000
	assert_line --regexp '^fault4k +1010\.0 ns +1000\.0 ns +1\.010 +1100\.0 ns +1000\.0 ns +1\.100$'
	assert_line --regexp '^faultthp +not measured'
}

@test "run-guest refuses a bad THP_STRESS_SECONDS before it boots anything" {
	local bad
	for bad in abc 0 -5 1e3 "60 s" 99999999; do
		THP_STRESS_SECONDS=$bad run -2 "$TOP/tests/vm/run-guest.sh" --payload /nonexistent --mode check
		assert_output --partial "THP_STRESS_SECONDS='$bad' is not a number of seconds"
	done
	# a good one passes this check (and stops at the missing payload)
	THP_STRESS_SECONDS=600 run -2 "$TOP/tests/vm/run-guest.sh" --payload /nonexistent --mode check
	assert_output --partial "no payload at '/nonexistent'"
}

@test "run-guest refuses a stock series it does not have before it builds anything" {
	run -2 "$TOP/tests/vm/run-guest.sh" --payload /nonexistent --mode check --stock 5.10
	assert_output --partial "--stock '5.10': the stock kernels are 6.1 and 6.12"
	run -2 "$TOP/tests/vm/run-guest.sh" --payload /nonexistent --mode check --stock 6.12
	assert_output --partial "no payload at '/nonexistent'"
}

@test "make check boots stock 6.12; STOCK= needs no patched kernel" {
	run -0 make -C "$TOP" --no-print-directory -p -n deps-quiet
	assert_line --regexp '^check-stock: deps-quiet '
	run -0 make -C "$TOP" --no-print-directory -n check-guest STOCK=6.12 SUITES=40-thpctl.bats
	assert_line --partial 'build-image.sh --stock'
	assert_line --regexp 'run-guest.sh --payload .* --stock 6.12 .*--suites "40-thpctl.bats"'
	refute_line --partial 'build-kernel.sh'
	run -0 grep -F 'check-guest STOCK=6.12 SUITES="$(STOCK_CHECK_SUITES)"' "$TOP/tests/vm/vm.mk"
}

@test "every target that builds installs the packages first (fresh machine)" {
	# deps-quiet must be phony: the Makefile's blanket .SECONDARY: lets make
	# skip a non-phony, file-less prerequisite as an intermediate, and then
	# demo/vm/check-debug compiled before anything was installed.
	# make -n still runs recipe lines that call $(MAKE), and check's removes
	# build/results/host.tap (this suite's own output): check is asked of
	# make's database instead of a dry run.
	local target
	run -0 make -C "$TOP" --no-print-directory -p -n deps-quiet
	assert_line --regexp '^\.PHONY: (.* )?deps-quiet( |$)'
	assert_line --regexp '^check: deps-quiet$'
	for target in demo vm vm-exec check-debug bench check-series check-stock; do
		run -0 make -C "$TOP" --no-print-directory -n "$target" SCRIPT=/bin/true
		assert_line --index 0 "tests/vm/deps.sh --quiet"
	done
}

@test "pkg-config is asked when a compile runs, not when the Makefile is read" {
	# deps-quiet installs the libraries after make has parsed the Makefile
	run -0 make -C "$TOP" --no-print-directory -p -n deps-quiet
	assert_line --regexp '^THP_CFLAGS = .*\$\(PKG_CFLAGS\)'
	assert_line --regexp '^PKG_CFLAGS = \$\(shell pkg-config'
}

@test "make reads every fragment of the tree, with include, not -include" {
	# `include`, never `-include`, for the project's own fragments: a
	# fragment that is not read would drop its targets without a word
	local mk
	run -0 make -C "$TOP" --no-print-directory -p -n deps-quiet
	for mk in $(cd "$TOP" && git ls-files '*.mk'); do
		assert_line --regexp "^MAKEFILE_LIST := .* $mk( |\$)"
	done
	run -0 grep -E '^-include ' "$TOP/Makefile"
	assert_output "-include \$(shell find \$(BUILD) -name '*.d' -type f 2>/dev/null)"
}

@test "README: under 120 lines, every table row on one line of at most 100 characters" {
	# what a newcomer reads in five minutes; longer text goes to docs/*.md
	run -0 wc -l <"$TOP/README.md"
	[ "$output" -lt 120 ] || fail "README.md has $output lines"
	run -0 awk '/^\|/ && length > 100 { print FILENAME ":" FNR ": " length " characters" }' \
		"$TOP/README.md" "$TOP/tests/README.md" "$TOP/docs/testing.md"
	assert_output ''
}

@test "kernel/README.md lists every patch of the series by its subject" {
	# the series is rewritten now and then: its README follows
	local n=0 subject
	while IFS= read -r subject; do
		n=$((n + 1))
		grep -qF "| $n | ${subject#mm: thp: } |" "$TOP/kernel/README.md" ||
			fail "kernel/README.md has no row '| $n | ${subject#mm: thp: } |'"
	# "[PATCH v3 k/N] ": the version is optional; the cover letter (0/N) is no patch
	done < <(awk '/^Subject: /{s=$0; getline; while ($0 ~ /^ /) { s = s $0; getline } print s}' \
		"$TOP/kernel/sysfs-thp.patch" |
		sed -nE '/^Subject: \[PATCH( v[0-9]+)? 0\//d; s/^Subject: \[PATCH( v[0-9]+)? [0-9]+\/[0-9]+\] //p')
	[ "$n" -gt 0 ] || fail "no Subject: line in kernel/sysfs-thp.patch"
	run -0 grep -cE '^\| [0-9]+ \| ' "$TOP/kernel/README.md"
	assert_output "$n"
}

# make check-host runs every host test through tests/host/thp-readonly.sh
THP_DIR=/sys/kernel/mm/transparent_hugepage

@test "host tests see this machine's THP sysfs read-only: opening a knob for writing fails" {
	local want f n=0
	case ${THP_HOST_GUARD-} in
	ro) want='Read-only file system' ;;
	unprivileged) want='Permission denied' ;;
	absent) skip "this machine has no $THP_DIR" ;;
	*) skip "not run under make check-host's guard (tests/host/thp-readonly.sh)" ;;
	esac
	for f in "$THP_DIR"/enabled "$THP_DIR"/defrag "$THP_DIR"/khugepaged/pages_to_scan \
		"$THP_DIR"/hugepages-*kB/enabled; do
		[ -e "$f" ] || continue
		# opened read-write, never written: if the guard failed, nothing changes
		run ! sh -c 'exec 3<>"$1"' sh "$f"
		assert_output --partial "$want"
		n=$((n + 1))
	done
	[ "$n" -ge 3 ] || fail "only $n knobs tried under $THP_DIR"
}

@test "thp-readonly.sh: without a mount namespace it says so and runs the tests unguarded" {
	[ "$(id -u)" = 0 ] || skip "as another user the guard is the kernel's permissions, no namespace"
	[ -d "$THP_DIR" ] || skip "this machine has no $THP_DIR"
	mkdir -p "$BATS_TEST_TMPDIR/bin"
	printf '#!/bin/sh\necho "unshare: unshare failed: Operation not permitted" >&2\nexit 1\n' \
		>"$BATS_TEST_TMPDIR/bin/unshare"
	chmod +x "$BATS_TEST_TMPDIR/bin/unshare"
	PATH=$BATS_TEST_TMPDIR/bin:$PATH THP_HOST_GUARD=ro run -0 --separate-stderr \
		"$TOP/tests/host/thp-readonly.sh" sh -c 'echo "guard=${THP_HOST_GUARD-unset}"'
	assert_output 'guard=unset'
	[[ $stderr == *'cannot make a mount namespace here (unshare -m: unshare: unshare failed: Operation not permitted): the host tests run WITHOUT'* ]] ||
		fail "stderr: $stderr"
}

@test "thp-readonly.sh: in its namespace the directory is a read-only bind, unseen outside" {
	[ "$(id -u)" = 0 ] || skip "as another user the guard is the kernel's permissions, no namespace"
	[ -d "$THP_DIR" ] || skip "this machine has no $THP_DIR"
	unshare -m --propagation private true 2>/dev/null || skip "no mount namespace here (unshare -m not permitted)"
	local outside
	outside=$(findmnt -no OPTIONS -T "$THP_DIR")
	run -0 "$TOP/tests/host/thp-readonly.sh" sh -c \
		'echo "guard=$THP_HOST_GUARD"; findmnt -no TARGET,OPTIONS -T "$0"' "$THP_DIR"
	assert_line 'guard=ro'
	assert_line --regexp "^$THP_DIR +ro,"
	# the bind lives in the namespace only
	assert_equal "$(findmnt -no OPTIONS -T "$THP_DIR")" "$outside"
}
