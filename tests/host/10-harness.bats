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
	# make check's lane b boots stock 6.12 with vm.mk's STOCK_CHECK_SUITES
	run -0 grep -F 'STOCK_CHECK_SUITES="$(STOCK_CHECK_SUITES)"' "$TOP/tests/vm/vm.mk"
	run -0 grep -F -- '--stock 6.12 --suites "$STOCK_CHECK_SUITES"' "$TOP/tests/vm/check.sh"
}

@test "make check's workers: every boot prerequisite is built before they start" {
	# two workers running one make target at once would build the same files
	# at once: the jobs only call run-guest.sh and build nothing but kernels
	local prep lanes
	prep=$(grep -n 'prepare \$M programs payload image stock-image' "$TOP/tests/vm/check.sh" | cut -d: -f1)
	lanes=$(grep -n '^lane a worker &' "$TOP/tests/vm/check.sh" | cut -d: -f1)
	[ -n "$prep" ] && [ -n "$lanes" ] || fail "check.sh: no prepare step or no worker a"
	[ "$prep" -lt "$lanes" ] || fail "check.sh starts the workers (line $lanes) before prepare (line $prep)"
	run grep -nE '\$M (check-guest|payload|programs|image|stock-image|vm-exec)' "$TOP/tests/vm/check.sh"
	assert_output --regexp "^$prep:"
	assert_equal "${#lines[@]}" 1
}

# check.sh THP_CHECK_DRY_RUN=1 [VAR=VALUE...]: a dry run of make check's
# queue in a copy of the tree's harness (check.sh clears build/results,
# where this suite's own TAP goes): each job's commands printed, nothing
# built or booted
dry_check() {
	local t=$BATS_TEST_TMPDIR/tree
	mkdir -p "$t/tests/vm" "$t/tests/bats/reboot"
	cp "$TOP"/tests/vm/{check.sh,timed.sh,tap-summary.sh} "$t/tests/vm/"
	(cd "$TOP/tests/bats" && for f in *.bats reboot/*.bats; do : >"$t/tests/bats/$f"; done)
	run env THP_CHECK_DRY_RUN=1 STOCK_CHECK_SUITES= MODE2_REGEX="command line" BUILD=build "$@" "$t/tests/vm/check.sh"
}

@test "make check's queue: every job runs once, every suite boots on patched 6.1, 6.12's halves are its list, vCPUs" {
	local jobs s
	dry_check STOCK_CHECK_SUITES="40-thpctl.bats reboot/50-thpd-persist.bats" \
		BASE61_FIRST_SUITES="10-modes.bats 70-stress.bats" BASE612_CHECK_SUITES="10-modes.bats 55-thpd-collapse.bats 70-stress.bats" \
		BASE612_FIRST_SUITES="10-modes.bats"
	assert_success
	jobs=$(grep -oE '^\[[ab]\] dry: [a-z0-9.-]+' <<<"$output" | awk '{print $3}' | sort | tr '\n' ' ')
	assert_equal "$jobs" "check-host checkpatch fuzz-smoke guest-6.1-1 guest-6.1-2 guest-6.1-mode2 guest-6.12-1 guest-6.12-2 stock-6.12 "
	# patched 6.1: the two halves are every suite, each once
	s=$(grep -E '^\[[ab]\] dry: guest-6\.1-[12] ' <<<"$output" | sed 's/.*--suites //' | tr ' ' '\n' | sort | tr '\n' ' ')
	assert_equal "$s" "$(cd "$TOP/tests/bats" && printf '%s\n' *.bats reboot/*.bats | sort | tr '\n' ' ')"
	# patched 6.12: the two halves are BASE612_CHECK_SUITES
	s=$(grep -E '^\[[ab]\] dry: guest-6\.12-[12] ' <<<"$output" | sed 's/.*--suites //' | tr ' ' '\n' | sort | tr '\n' ' ')
	assert_equal "$s" "10-modes.bats 55-thpd-collapse.bats 70-stress.bats "
	assert_line --regexp '^\[[ab]\] dry: stock-6\.12 .*--stock 6\.12 --suites 40-thpctl\.bats reboot/50-thpd-persist\.bats$'
	assert_line --regexp '^\[[ab]\] dry: guest-6\.1-mode2 .*--suites 20-modes\.bats --cmdline transparent_hugepage=2 --filter command line$'
	# two vCPUs (run-guest's default) only for the boots of the kernel
	# suites, whose races and stress want them; the stress at 90 s on each
	# patched kernel; 55's budget tests on patched 6.1 only
	s=$(grep -E '^\[[ab]\] dry: (stock|guest)-' <<<"$output" | grep -v -- '--smp 1 ' | awk '{print $3}' | sort | tr '\n' ' ')
	assert_equal "$s" "guest-6.1-1 guest-6.12-1 "
	s=$(grep -E '^\[[ab]\] dry: (stock|guest)-' <<<"$output" | grep -c -- ' THP_STRESS_SECONDS=90 ')
	assert_equal "$s" 6
	s=$(grep -E '^\[[ab]\] dry: ' <<<"$output" | grep -- ' THP_COLLAPSE_BUDGET=skip ' | awk '{print $3}' | tr '\n' ' ')
	assert_equal "$s" "guest-6.12-2 "
	# a stress length given to make check is kept
	dry_check THP_STRESS_SECONDS=1800 BASE61_FIRST_SUITES="10-modes.bats" BASE612_CHECK_SUITES="10-modes.bats" \
		BASE612_FIRST_SUITES="10-modes.bats"
	assert_line --regexp '^\[[ab]\] dry: guest-6\.1-1 THP_BASE=6\.1 THP_COLLAPSE_BUDGET= THP_STRESS_SECONDS=1800 '
}

@test "make check's queue: a first half naming what is not a suite of its boot is refused" {
	dry_check BASE61_FIRST_SUITES="10-modes.bats 99-nonesuch.bats" BASE612_CHECK_SUITES="10-modes.bats" \
		BASE612_FIRST_SUITES="10-modes.bats 55-thpd-collapse.bats"
	assert_failure 2
	assert_output --partial "not suites of their boot: BASE61_FIRST_SUITES: 99-nonesuch.bats BASE612_FIRST_SUITES: 55-thpd-collapse.bats"
}

@test "every target that builds installs the packages first (fresh machine)" {
	# deps-quiet must be phony: the Makefile's blanket .SECONDARY: lets make
	# skip a non-phony, file-less prerequisite as an intermediate, and then
	# demo/vm/check-debug compiled before anything was installed.
	# make -n still runs recipe lines that call $(MAKE): check's removes
	# build/results/host.tap (this suite's own output), check-stock's
	# build/results/guest.tap (make check's guest results, when its host
	# job runs after boots: seen, 513 of 565 guest results gone). Both are
	# asked of make's database instead of a dry run.
	local target
	run -0 make -C "$TOP" --no-print-directory -p -n deps-quiet
	assert_line --regexp '^\.PHONY: (.* )?deps-quiet( |$)'
	assert_line --regexp '^check: deps-quiet$'
	assert_line --regexp '^check-stock: deps-quiet( |$)'
	for target in demo vm vm-exec check-debug bench check-series; do
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

@test "kernel/README.md lists every patch of each series by its subject" {
	# the series are rewritten now and then: the README follows. Each base's
	# table sits under the heading that names its file; the cover letter is
	# no row. A base whose series has not landed has no table.
	. "$TOP/tests/vm/lib.sh"
	local base series rows n i subject checked=0
	for base in $THP_BASES; do
		series=$TOP/kernel/$base/thp.patch
		rows=$(awk -v h="kernel/$base/thp.patch" '/^## / { on = index($0, h) > 0; next }
			on && /^\| [0-9]+ \| /' "$TOP/kernel/README.md")
		if [ ! -s "$series" ]; then
			[ -z "$rows" ] || fail "kernel/README.md has a $base table, but kernel/$base/thp.patch is absent"
			continue
		fi
		n=$(split_series "$series" "$BATS_TEST_TMPDIR/$base")
		[ "$n" -gt 0 ] || fail "no patch in kernel/$base/thp.patch"
		for i in $(seq 1 "$n"); do
			subject=$(patch_subject "$BATS_TEST_TMPDIR/$base/$(printf %04d "$i")")
			grep -qF -e "| $i | $subject |" -e "| $i | ${subject#mm: thp: } |" <<<"$rows" ||
				fail "kernel/README.md's $base table has no row '| $i | $subject |'"
		done
		assert_equal "$(grep -c . <<<"$rows")" "$n"
		checked=$((checked + 1))
	done
	[ "$checked" -gt 0 ] || fail "no series in kernel/*/thp.patch"
}

# a series made as the kernel helpers make theirs: format-patch --cover-letter
make_series() {
	local d=$BATS_TEST_TMPDIR/repo
	git init -q "$d"
	git -C "$d" -c user.name=t -c user.email=t@t commit -q --allow-empty -m base
	printf 'a\n' >"$d/f"
	git -C "$d" add f
	git -C "$d" -c user.name=t -c user.email=t@t commit -q -m "mm: thp: one"
	printf 'b\n' >>"$d/f"
	git -C "$d" -c user.name=t -c user.email=t@t commit -q -am "mm: thp: two"
	git -C "$d" format-patch -q --cover-letter -v3 --stdout HEAD~2.. >"$1"
}

@test "split_series drops the cover letter and numbers the patches from 0001" {
	. "$TOP/tests/vm/lib.sh"
	make_series "$BATS_TEST_TMPDIR/s.mbox"
	run -0 grep -c '^Subject: \[PATCH v3 0/2\]' "$BATS_TEST_TMPDIR/s.mbox"
	run -0 split_series "$BATS_TEST_TMPDIR/s.mbox" "$BATS_TEST_TMPDIR/split"
	assert_output 2
	run -0 ls "$BATS_TEST_TMPDIR/split"
	assert_output "$(printf '0001\n0002')"
	run -0 patch_subject "$BATS_TEST_TMPDIR/split/0001"
	assert_output "mm: thp: one"
	run -0 patch_subject "$BATS_TEST_TMPDIR/split/0002"
	assert_output "mm: thp: two"
}

@test "the kernel scripts split every series through split_series (cover letters skipped)" {
	local f
	for f in build-kernel.sh build-each-patch.sh checkpatch.sh; do
		run -0 grep -c 'split_series ' "$TOP/tests/vm/$f"
		run ! grep -n 'git mailsplit' "$TOP/tests/vm/$f"
	done
}

@test "build-kernel, check-series and checkpatch refuse a base there is no series for" {
	THP_BASE=5.10 run -2 "$TOP/tests/vm/build-kernel.sh" --dir
	assert_output --partial "base '5.10': the bases are 6.1 and 6.12"
	run -2 "$TOP/tests/vm/build-each-patch.sh" 5.10
	assert_output --partial "base '5.10': the bases are 6.1 6.12"
	run -2 "$TOP/tests/vm/checkpatch.sh" 5.10
	assert_output --partial "base '5.10': the bases are 6.1 6.12"
	run -2 make -C "$TOP" --no-print-directory -n kernel BASE=5.10
	assert_output --partial "BASE=5.10: the bases are 6.1 6.12"
}

@test "the kernel cache key has the base in it, and each base's series" {
	local d61 d612
	d61=$(THP_CACHE=$BATS_TEST_TMPDIR "$TOP/tests/vm/build-kernel.sh" --dir)
	d612=$(THP_CACHE=$BATS_TEST_TMPDIR "$TOP/tests/vm/build-kernel.sh" --dir --base 6.12)
	[[ $d61 == "$BATS_TEST_TMPDIR/kernel/6.1-default-"* ]] || fail "6.1: $d61"
	[[ $d612 == "$BATS_TEST_TMPDIR/kernel/6.12-default-"* ]] || fail "6.12: $d612"
	assert_equal "$(THP_BASE=6.12 THP_CACHE=$BATS_TEST_TMPDIR "$TOP/tests/vm/build-kernel.sh" --dir)" "$d612"
	# the stock build and another kselftest list are other builds
	run -0 env THP_CACHE="$BATS_TEST_TMPDIR" "$TOP/tests/vm/build-kernel.sh" --dir --stock
	[[ $output == "$BATS_TEST_TMPDIR/kernel/6.1-stock-"* ]] || fail "stock: $output"
	run -0 env THP_CACHE="$BATS_TEST_TMPDIR" THP_KSELFTESTS_LIST=x "$TOP/tests/vm/build-kernel.sh" --dir
	[ "$output" != "$d61" ] || fail "the kselftest list is not in the key"
}

@test "the kernel cache key hashes a series' code: a reworded message keeps it, a changed line does not" {
	. "$TOP/tests/vm/lib.sh"
	local s=$BATS_TEST_TMPDIR/s h0
	cp "$TOP/kernel/6.1/thp.patch" "$s"
	h0=$(series_code_hash "$s")
	[ ${#h0} -eq 64 ] || fail "hash: $h0"
	# the cover letter and a commit message
	sed -i '0,/^Subject: /s/^Subject: .*/Subject: [PATCH v3 0\/8] reworded/; s/^This series /That series /' "$s"
	! cmp -s "$s" "$TOP/kernel/6.1/thp.patch" || fail "the rewording changed nothing"
	assert_equal "$(series_code_hash "$s")" "$h0"
	# one line of code
	sed -i '0,/^+\t/s/^+\t/+\t \t/' "$s"
	[ "$(series_code_hash "$s")" != "$h0" ] || fail "a changed diff line kept the key"
}

@test "BASE=6.12 reaches every guest target; the default is 6.1" {
	local target
	for target in kernel vm vm-exec demo check-guest bench check-series; do
		run -0 make -C "$TOP" --no-print-directory -n "$target" BASE=6.12 SCRIPT=/bin/true
		assert_line --regexp 'THP_BASE=6\.12 tests/vm/(build-kernel|run-guest|bench|build-each-patch)\.sh'
		run -0 make -C "$TOP" --no-print-directory -n "$target" SCRIPT=/bin/true
		assert_line --regexp 'THP_BASE=6\.1 tests/vm/(build-kernel|run-guest|bench|build-each-patch)\.sh'
	done
	run -0 make -C "$TOP" --no-print-directory -n checkpatch
	assert_output --partial 'for b in 6.1 6.12; do'
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

@test "the guest's bats formatter passes TAP through and times each test and suite" {
	local d=$BATS_TEST_TMPDIR/results
	mkdir -p "$d"
	run -0 env THP_RESULTS="$d" THP_PHASE=3 bash -c '
		{ printf "suite /opt/thp-stack/bats/10-modes.bats\nbegin 1 first\n"; sleep 0.3
		  printf "ok 1 first\nsuite ./reboot/20-x.bats\nbegin 2 second\nnot ok 2 second # why\n"; } |
			"$1"' _ "$TOP/tests/vm/guest/run/tap-formatter"
	assert_output "$(printf 'ok 1 first\nnot ok 2 second # why')"
	run -0 cat "$d/times.3"
	assert_line --index 0 --regexp '^test 0\.[3-9] 10-modes\.bats: first$'
	assert_line --index 1 --regexp '^suite 0\.[3-9] 10-modes\.bats$'
	assert_line --index 2 --regexp '^test [0-9]+\.[0-9] reboot/20-x\.bats: second$'
	assert_line --index 3 --regexp '^suite [0-9]+\.[0-9] reboot/20-x\.bats$'
	assert_equal "$(<"$d/current")" "20-x.bats: 2 second"
}

@test "tap-failed names each failed test of a guest run with its suite" {
	local d=$BATS_TEST_TMPDIR/results
	mkdir -p "$d"
	run -0 "$TOP/tests/vm/tap-failed.sh" "$d"
	assert_output ""
	printf 'ok 1 first\nnot ok 2 second: with a colon\n# (in test file x)\nnot ok 3 untimed\n' >"$d/tap.1"
	printf 'test 0.1 10-modes.bats: first\ntest 2.0 reboot/50-x.bats: second: with a colon\n' >"$d/times.1"
	printf 'not ok 1 other boot\n' >"$d/tap.2"
	printf 'test 1.0 55-thpd-collapse.bats: other boot\n' >"$d/times.2"
	run -0 "$TOP/tests/vm/tap-failed.sh" "$d"
	assert_output "$(printf 'reboot/50-x.bats: second: with a colon\n?: untimed\n55-thpd-collapse.bats: other boot')"
}

@test "make check ends by naming each failed test with its job" {
	dry_check THP_CHECK_DRY_FAIL=guest-6.1-2 BASE61_FIRST_SUITES="10-modes.bats" \
		BASE612_CHECK_SUITES="10-modes.bats" BASE612_FIRST_SUITES="10-modes.bats"
	assert_failure
	assert_line "check: failed in guest-6.1-2: 99-x.bats: a test of guest-6.1-2"
	[ "$(grep -c '^check: failed in ' <<<"$output")" = 1 ]
}
