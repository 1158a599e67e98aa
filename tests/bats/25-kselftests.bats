#!/usr/bin/env bats
# The kselftests the kernel series adds (tools/testing/selftests/vm/
# thp_controls.c), built from the patched tree by tests/vm/build-kernel.sh
# and carried in the payload. The binary runs once; each of its TAP results
# is one test here, so they count in make check's totals.

load helpers

KST=${THP_KSELFTESTS_DIR:-/mnt/payload/kselftests}

setup_file() {
	thp_save_knobs
	echo 10000 >"$THP/khugepaged/scan_sleep_millisecs"
	echo 1 >"$THP/use_zero_page"
	if [ -x "$KST/thp_controls" ]; then
		"$KST/thp_controls" >"$BATS_FILE_TMPDIR/thp_controls.tap" 2>&1
		echo $? >"$BATS_FILE_TMPDIR/thp_controls.rc"
	fi
}

teardown_file() {
	thp_restore_knobs
}

# kst_case NAME: the harness's result line for NAME passed
kst_case() {
	local tap=$BATS_FILE_TMPDIR/thp_controls.tap
	have_thp_stack_kernel || skip "kernel without the thp-stack series"
	[ -f "$tap" ] || skip "no kselftests in the payload ($KST): THP_KERNEL without THP_KSELFTESTS"
	if grep -Eq "^ok [0-9]+ $1( |$)" "$tap"; then
		grep -Eq "^ok [0-9]+ $1 # SKIP" "$tap" && fail "$1 skipped on a thp-stack kernel as root: $(grep -A3 "RUN.* $1 " "$tap")"
		return 0
	fi
	fail "kselftest $1: $(grep -E "^(not )?ok [0-9]+ $1( |$)" "$tap" || echo 'no result'); log:
$(sed -n "/RUN .* $1 \.\.\./,/ok [0-9]* $1/p" "$tap")"
}

@test "kselftest thp_controls: the binary's own verdict, and every case listed here" {
	local tap=$BATS_FILE_TMPDIR/thp_controls.tap
	[ -f "$tap" ] || skip "no kselftests in the payload ($KST)"
	have_thp_stack_kernel || skip "kernel without the thp-stack series"
	grep '^# Totals' "$tap" | sed 's/^/# /' >&3
	[ "$(cat "$BATS_FILE_TMPDIR/thp_controls.rc")" = 0 ] || fail "thp_controls exited $(cat "$BATS_FILE_TMPDIR/thp_controls.rc"): $(cat "$tap")"
	local n
	n=$(grep -Ec '^(not )?ok [0-9]+ ' "$tap")
	[ "$n" -eq 18 ] || fail "expected the 18 cases listed in this file, the binary ran $n"
}

# Each case names, in the series' cover letter and in issue 26's note, the
# one-line change to the series that makes it fail.
@test "kselftest thp.mode_read_back_write" { kst_case thp.mode_read_back_write; }
@test "kselftest thp.mode_numbers" { kst_case thp.mode_numbers; }
@test "kselftest thp.mode_rejects" { kst_case thp.mode_rejects; }
@test "kselftest global.thp_stat_format" { kst_case global.thp_stat_format; }
@test "kselftest thp.stat_fork" { kst_case thp.stat_fork; }
@test "kselftest thp.stat_zero_page" { kst_case thp.stat_zero_page; }
@test "kselftest thp.stat_collapse_split" { kst_case thp.stat_collapse_split; }
@test "kselftest thp.stat_shmem_collapse_split" { kst_case thp.stat_shmem_collapse_split; }
@test "kselftest thp.stat_held_across_exec" { kst_case thp.stat_held_across_exec; }
@test "kselftest thp.stat_policy_no_mm" { kst_case thp.stat_policy_no_mm; }
@test "kselftest thp.policy_prctl" { kst_case thp.policy_prctl; }
@test "kselftest thp.policy_advise_eligible" { kst_case thp.policy_advise_eligible; }
@test "kselftest thp.policy_advise_fault" { kst_case thp.policy_advise_fault; }
@test "kselftest thp.policy_advise_no_direct_reclaim" { kst_case thp.policy_advise_no_direct_reclaim; }
@test "kselftest thp.policy_exec" { kst_case thp.policy_exec; }
@test "kselftest thp.policy_secure_exec" { kst_case thp.policy_secure_exec; }
@test "kselftest thp.policy_procfs" { kst_case thp.policy_procfs; }
@test "kselftest thp.policy_write_permissions" { kst_case thp.policy_write_permissions; }
