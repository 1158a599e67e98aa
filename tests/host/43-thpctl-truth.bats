#!/usr/bin/env bats
# Saying only what is true, in the words administrators use (issue 25):
# an RFC mode number only where the kernel has one, never a bare 0 that
# reads as "off"; run --advise checked against what it can reach before the
# command runs; nothing on stdout that reads as a success when the change
# is not in effect (exit 3), for every verb that sets something; the short
# status view; -J. Against the THP layouts of each kernel generation
# (tests/host/fixtures), through THP_ROOT, no VM.

bats_require_minimum_version 1.5.0
load '/usr/lib/bats/bats-support/load'
load '/usr/lib/bats/bats-assert/load'
load ../bats/hold

load thpctl-gen

setup() {
	thpctl_env
}

teardown() {
	[ -z "${PEER-}" ] || kill "$PEER" 2>/dev/null || true
}

# ---- the RFC mode: a number only where the kernel has one ----

@test "status --json: mode is the kernel's RFC number, null where it has none" {
	local g
	for g in $GENERATIONS; do
		use_gen "$g"
		# madvise/madvise: the pair a stock kernel's thpctl called "0"
		put enabled madvise
		put defrag madvise
		[ "$g" = 6.1-patched ] && echo 0 >"$THP_ROOT/$SYS/mode"
		status_json
		if [ "$g" = 6.1-patched ]; then
			sj '.mode == 0 and (.mode | type) == "number"'
		else
			sj '.mode == null'
		fi
	done
	# the kernel's own never and custom are no RFC number either
	use_gen 6.1-patched
	for m in never custom; do
		echo "$m" >"$THP_ROOT/$SYS/mode"
		status_json
		sj '.mode == null'
	done
}

@test "status text: no bare mode number; the RFC mode with its meaning where the kernel has one" {
	use_gen 6.12
	put enabled madvise
	put defrag madvise
	run -0 "$THPCTL" status
	refute_output --regexp '(^|[^a-z])mode: *0'
	refute_output --partial 'rfc mode'
	run -0 "$THPCTL" status --all
	refute_line --regexp '^mode: +0$'
	assert_line --regexp '^rfc mode: +none$'
	use_gen 6.1-patched
	echo 0 >"$THP_ROOT/$SYS/mode"
	run -0 "$THPCTL" status
	assert_line --regexp '^rfc mode: +0 \(hugepages only in MADV_HUGEPAGE regions\)$'
}

@test "enable's result line: an RFC mode with its meaning where the kernel has one, none elsewhere" {
	use_gen 6.1
	put defrag madvise
	run -0 --separate-stderr "$THPCTL" enable madvise
	assert_output 'enabled=madvise defrag=madvise (written to sysfs: thpd is not running, so this lasts until reboot)'
	use_gen 6.1-patched
	put defrag madvise
	echo 0 >"$THP_ROOT/$SYS/mode"
	run -0 --separate-stderr "$THPCTL" enable madvise
	assert_output 'enabled=madvise defrag=madvise, rfc mode 0: hugepages only in MADV_HUGEPAGE regions (written to sysfs: thpd is not running, so this lasts until reboot)'
}

@test "enable help offers 0, 1 and 2 only where the kernel has numeric modes" {
	local g
	for g in $GENERATIONS; do
		use_gen "$g"
		run -0 "$THPCTL" enable help
		if [ "$g" = 6.1-patched ]; then
			assert_line 0
			assert_line 2
		else
			refute_line 0
			refute_line 1
			refute_line 2
		fi
	done
}

# ---- run --advise: what it reaches, checked before the command runs ----

@test "run --advise with every size off: refused (exit 3), the command not run; -q runs it" {
	local g
	for g in $PER_SIZE; do
		use_gen "$g"
		put hugepages-2048kB/enabled never
		run -3 --separate-stderr "$THPCTL" run --advise -- touch "$BATS_TEST_TMPDIR/ran"
		[ ! -e "$BATS_TEST_TMPDIR/ran" ] || fail "$g: the command ran"
		[[ $stderr == *'no hugepage size is used at fault on this host now'*'would get no hugepages'*'not run'* ]] ||
			fail "$g: stderr: $stderr"
		# a service's wrapper: no notice, no refusal
		run -0 --separate-stderr "$THPCTL" run --advise -q -- touch "$BATS_TEST_TMPDIR/ran"
		[ -e "$BATS_TEST_TMPDIR/ran" ] || fail "$g: -q did not run it"
		assert_equal "$stderr" ""
		rm "$BATS_TEST_TMPDIR/ran"
	done
}

@test "run --advise with enabled never: refused on every generation; --never and --default still run" {
	local g
	for g in $GENERATIONS; do
		use_gen "$g"
		put enabled never
		run -3 --separate-stderr "$THPCTL" run -- true
		[[ $stderr == *'enabled is never'* ]] || fail "$g: stderr: $stderr"
		# these ask for fewer hugepages: nothing to refuse (a fake patched tree
		# on this host's kernel: prctl itself fails, exit 1)
		if [ "$g" = 6.1-patched ]; then
			run -1 "$THPCTL" run --default -- true
			assert_output --partial 'prctl('
		else
			run -0 "$THPCTL" run --never -- true
			run -0 "$THPCTL" run --default -- true
		fi
	done
}

@test "run --advise on a stock kernel with enabled never and 64K at madvise: refused, glibc reads enabled only" {
	local g
	for g in $PER_SIZE; do
		use_gen "$g"
		put enabled never
		put hugepages-64kB/enabled madvise
		run -3 --separate-stderr "$THPCTL" run --advise -- true
		[[ $stderr == *'glibc.malloc.hugetlb=1 advises malloc'*'only while the top-level enabled is madvise or always'*'only 64K is used'* ]] ||
			fail "$g: stderr: $stderr"
	done
}

@test "run --advise on a stock kernel: says it reaches glibc's malloc only, at which sizes; -q says nothing" {
	use_gen 6.12
	put enabled madvise
	put hugepages-64kB/enabled madvise
	run -0 --separate-stderr "$THPCTL" run --advise -- env
	assert_line 'GLIBC_TUNABLES=glibc.malloc.hugetlb=1'
	[[ $stderr == *"makes glibc's malloc advise the memory it takes from the kernel (hugepages of 64K 2M)"* ]] ||
		fail "stderr: $stderr"
	[[ $stderr == *'memory the program maps itself, other allocators and static programs get none'* ]] ||
		fail "stderr: $stderr"
	run -0 --separate-stderr "$THPCTL" run --advise -q -- env
	assert_line 'GLIBC_TUNABLES=glibc.malloc.hugetlb=1'
	assert_equal "$stderr" ""
}

@test "run --advised-only with every size off: refused before the prctl" {
	use_gen 6.18
	put enabled never
	run -3 --separate-stderr "$THPCTL" run --advised-only -- touch "$BATS_TEST_TMPDIR/ran"
	[ ! -e "$BATS_TEST_TMPDIR/ran" ] || fail "the command ran"
	[[ $stderr == *'--advised-only: no hugepage size is used at fault'* ]] || fail "stderr: $stderr"
}

# ---- no false success: on exit 3 nothing on stdout ----

@test "enable with a per-size value winning: nothing on stdout; the result and why on stderr (exit 3)" {
	local g
	for g in $PER_SIZE; do
		use_gen "$g"
		put hugepages-2048kB/enabled never
		run -3 --separate-stderr "$THPCTL" enable always
		assert_equal "$output" ""
		[[ $stderr == *'thpctl: enabled=always defrag=madvise (written to sysfs: thpd is not running, so this lasts until reboot); not in effect:'* ]] ||
			fail "$g: stderr: $stderr"
		[[ $stderr == *'hugepages-2048kB/enabled is never, which wins'* ]] || fail "$g: stderr: $stderr"
	done
}

@test "enable and shmem --size, shmem: not in effect means nothing on stdout (exit 3)" {
	local g
	for g in $PER_SIZE; do
		use_gen "$g"
		put enabled never
		run -3 --separate-stderr "$THPCTL" enable inherit --size 64K
		assert_equal "$output" ""
		[[ $stderr == *'thpctl: 64K: enabled=inherit effective=never'* ]] || fail "$g: stderr: $stderr"
		[[ $stderr == *'64K now follows enabled, which is never'* ]] || fail "$g: stderr: $stderr"
		use_gen "$g"
		put hugepages-2048kB/shmem_enabled never
		run -3 --separate-stderr "$THPCTL" shmem always
		assert_equal "$output" ""
		[[ $stderr == *'thpctl: shmem_enabled=always'* ]] || fail "$g: stderr: $stderr"
		# and in effect: on stdout, nothing on stderr
		use_gen "$g"
		run -0 --separate-stderr "$THPCTL" enable madvise --size 64K
		assert_line '64K: enabled=madvise effective=madvise'
		assert_equal "$stderr" ""
	done
}

@test "defrag while no size is used at fault: written, nothing on stdout, exit 3" {
	local g
	for g in $GENERATIONS; do
		use_gen "$g"
		put enabled never
		put shmem_enabled never
		run -3 --separate-stderr "$THPCTL" defrag always
		assert_equal "$output" ""
		assert_equal "$(<"$THP_ROOT/$SYS/defrag")" always
		[[ $stderr == *'defrag is now always, but no hugepage size is used at fault'* ]] ||
			fail "$g: stderr: $stderr"
		# a size on (shmem counts: defrag rules its faults too): a success
		settle
		put shmem_enabled advise
		run -0 --separate-stderr "$THPCTL" defrag never
		assert_output --partial 'defrag=never'
	done
}

@test "policy PID advise while THP is off: written, and exit 3" {
	use_gen 6.1-patched
	put enabled never
	run -3 --separate-stderr "$THPCTL" policy 100 advise
	assert_equal "$(<"$THP_ROOT/proc/100/thp_policy")" advise
	[[ $stderr == *"process 100's policy is now advise, but no hugepage size is used at fault"* ]] ||
		fail "stderr: $stderr"
	put enabled madvise
	run -0 --separate-stderr "$THPCTL" policy 100 advise
	assert_equal "$stderr" ""
}

# ---- status: the short view first ----

@test "status: each size's state and why, thpd in one line; everything behind --all" {
	use_gen 6.18
	run -0 --separate-stderr "$THPCTL" status
	assert_line --index 0 --regexp '^SIZE +ANON +SHMEM +WHY$'
	assert_line --regexp '^8K +never +never +no anonymous control at this size$'
	assert_line --regexp '^16K-1M +never +never +own value never$'
	assert_line --regexp '^2M +madvise +never +inherits enabled \(madvise\)$'
	assert_line --regexp '^defrag: +madvise$'
	assert_line --regexp '^thpd: +not running$'
	[ "${#lines[@]}" -le 8 ] || fail "short view of ${#lines[@]} lines: $output"
	refute_output --partial khugepaged
	run -0 --separate-stderr "$THPCTL" status --all
	assert_line --regexp '^khugepaged:$'
	assert_line --regexp '^counters:$'
	assert_line --regexp '^ +split_deferred +'
	[ "${#lines[@]}" -gt 40 ] || fail "--all shows only ${#lines[@]} lines"
	# JSON is everything, as before, plus each size's why
	run -0 --separate-stderr "$THPCTL" status --json
	jq -e 'keys == ["anon_huge_kib", "counters", "defrag", "enabled", "free_hugepage_blocks",
		"kernel_features", "khugepaged", "mode", "other_files", "shmem_enabled",
		"shrink_underused", "sizes", "thpd", "use_zero_page"]
		and (.sizes[] | select(.size == "2M") | .why == "inherits enabled (madvise)")' <<<"$output" ||
		fail "status --json: $output"
}

@test "status: a size thpd stepped down says so, and thpd's line says why" {
	use_gen 6.12
	put hugepages-64kB/enabled madvise
	peer '{"ok": true, "version": "0.1.0", "enabled": "madvise", "defrag": "defer",
		"adaptive": {"enabled": true, "state": "stepped-down", "switches": 1,
			"reason": "memory pressure: some stall above 150000 us in 1000000 us",
			"stepped_sizes": {"64K": "always"}},
		"rules": 0, "rules_applied": 0,
		"persisted": {"enabled": "always", "defrag": null, "sizes": {"64K": {"enabled": "always", "shmem_enabled": null}}},
		"kernel_features": {"mode_file": false, "thp_policy": false}}'
	run -0 --separate-stderr "$THPCTL" status
	wait "$PEER"
	assert_line --regexp "^64K +madvise +never +own value madvise, thpd's step-down \\(back to always when calm\\)$"
	assert_line --regexp "^2M +always +never +inherits enabled \\(always, thpd's step-down\\)$"
	assert_line 'thpd:   running (0.1.0), stepped-down (memory pressure: some stall above 150000 us in 1000000 us); keeps enabled=always 64K.enabled=always'
}

# ---- -J, as util-linux spells --json ----

@test "-J is --json, before or after the verb, wherever --json is taken" {
	use_gen 6.1-patched
	run -0 --separate-stderr "$THPCTL" -J
	jq -e '.enabled == "always"' <<<"$output" || fail "thpctl -J: $output"
	run -0 --separate-stderr "$THPCTL" status -J
	jq -e '.mode == 1' <<<"$output" || fail "status -J: $output"
	run -0 --separate-stderr "$THPCTL" ps -J 100
	jq -e '.processes[0].pid == 100' <<<"$output" || fail "ps -J: $output"
	run -0 --separate-stderr "$THPCTL" -J policy 100
	jq -e '.policy == "advise"' <<<"$output" || fail "policy -J: $output"
	run -0 --separate-stderr "$THPCTL" khugepaged -J
	jq -e '.pages_to_scan == 4096' <<<"$output" || fail "khugepaged -J: $output"
	# and refused where --json is
	run -2 --separate-stderr "$THPCTL" enable -J always
	[[ $stderr == *'enable: --json is not supported (not a read command)'* ]] || fail "stderr: $stderr"
	run -2 "$THPCTL" -J defrag never
	assert_output --partial 'not a read command'
}
