#!/usr/bin/env bats
# The kselftests the kernel series adds (thp_controls.c: 6.1's in
# tools/testing/selftests/vm/, 6.12's in selftests/mm/), built from the
# patched tree by tests/vm/build-kernel.sh and carried in the payload. The binary runs once; each of its TAP results
# is one test here, so they count in make check's totals.

load helpers

KST=${THP_KSELFTESTS_DIR:-/mnt/payload/kselftests}

setup_file() {
	thp_save_knobs
	echo 10000 >"$THP/khugepaged/scan_sleep_millisecs"
	echo 1 >"$THP/use_zero_page"
	if [ -x "$KST/thp_controls" ]; then
		# a failing case fails its own test below, not the whole file
		local rc=0
		"$KST/thp_controls" >"$BATS_FILE_TMPDIR/thp_controls.tap" 2>&1 || rc=$?
		echo "$rc" >"$BATS_FILE_TMPDIR/thp_controls.rc"
	fi
}

teardown_file() {
	thp_restore_knobs
}

# The cases of each series' thp_controls. The 6.12 series (multi-size THP:
# a per-size sysfs directory) has its own; a case of the other series skips.
CASES_6_1="thp.mode_read_back_write thp.mode_numbers thp.mode_rejects global.thp_stat_format thp.stat_fork thp.stat_zero_page thp.stat_collapse_split thp.stat_shmem_collapse_split thp.stat_held_across_exec thp.stat_policy_no_mm thp.policy_prctl thp.policy_advise_eligible thp.policy_advise_fault thp.policy_advise_no_direct_reclaim thp.policy_exec thp.policy_secure_exec thp.policy_procfs thp.policy_write_permissions"
CASES_6_12="thp.mode_read_back_write thp.mode_numbers thp.mode_rejects global.thp_stat_format thp.thp_stat_pmd_faults thp.thp_stat_mthp_faults thp.thp_stat_zero_page thp.thp_stat_fork thp.thp_stat_collapse_split thp.thp_stat_fd_across_exec global.no_mm_esrch thp.policy_prctl thp.policy_advise_pmd_fault thp.policy_advise_sizes thp.policy_advise_no_direct_reclaim thp.policy_advise_khugepaged thp.policy_exec thp.policy_secure_exec thp.policy_procfs_permissions thp.policy_procfs thp.policy_vfork_race thp.policy_fork_race"

# the series this kernel carries: 6.12's where sizes have their own controls
kst_series() {
	if compgen -G "$THP/hugepages-*kB" >/dev/null; then echo 6.12; else echo 6.1; fi
}

# kst_case NAME: the harness's result line for NAME passed
kst_case() {
	local tap=$BATS_FILE_TMPDIR/thp_controls.tap series list
	have_thp_stack_kernel || skip "kernel without the thp-stack series"
	series=$(kst_series)
	list=CASES_${series//./_}
	[[ " ${!list} " == *" $1 "* ]] || skip "not a case of the $series series' thp_controls"
	[ -f "$tap" ] || skip "no kselftests in the payload ($KST): THP_KERNEL without THP_KSELFTESTS"
	if grep -Eq "^ok [0-9]+ $1( |$)" "$tap"; then
		grep -Eq "^ok [0-9]+ $1 # SKIP" "$tap" && fail "$1 skipped on a thp-stack kernel as root: $(grep -A3 "RUN.* $1 " "$tap")"
		return 0
	fi
	fail "kselftest $1: $(grep -E "^(not )?ok [0-9]+ $1( |$)" "$tap" || echo 'no result'); log:
$(sed -n "/RUN .* $1 \.\.\./,/ok [0-9]* $1/p" "$tap")"
}

@test "kselftest thp_controls: the binary's own verdict, and every case listed here" {
	local tap=$BATS_FILE_TMPDIR/thp_controls.tap series list n want
	[ -f "$tap" ] || skip "no kselftests in the payload ($KST)"
	have_thp_stack_kernel || skip "kernel without the thp-stack series"
	grep '^# Totals' "$tap" | sed 's/^/# /' >&3
	[ "$(<"$BATS_FILE_TMPDIR/thp_controls.rc")" = 0 ] || fail "thp_controls exited $(<"$BATS_FILE_TMPDIR/thp_controls.rc"): $(<"$tap")"
	series=$(kst_series)
	list=CASES_${series//./_}
	want=$(wc -w <<<"${!list}")
	n=$(grep -Ec '^(not )?ok [0-9]+ ' "$tap")
	[ "$n" -eq "$want" ] || fail "expected the $want cases of the $series series listed in this file, the binary ran $n"
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
@test "kselftest thp.thp_stat_pmd_faults" { kst_case thp.thp_stat_pmd_faults; }
@test "kselftest thp.thp_stat_mthp_faults" { kst_case thp.thp_stat_mthp_faults; }
@test "kselftest thp.thp_stat_zero_page" { kst_case thp.thp_stat_zero_page; }
@test "kselftest thp.thp_stat_fork" { kst_case thp.thp_stat_fork; }
@test "kselftest thp.thp_stat_collapse_split" { kst_case thp.thp_stat_collapse_split; }
@test "kselftest thp.thp_stat_fd_across_exec" { kst_case thp.thp_stat_fd_across_exec; }
@test "kselftest global.no_mm_esrch" { kst_case global.no_mm_esrch; }
@test "kselftest thp.policy_advise_pmd_fault" { kst_case thp.policy_advise_pmd_fault; }
@test "kselftest thp.policy_advise_sizes" { kst_case thp.policy_advise_sizes; }
@test "kselftest thp.policy_advise_khugepaged" { kst_case thp.policy_advise_khugepaged; }
@test "kselftest thp.policy_procfs_permissions" { kst_case thp.policy_procfs_permissions; }
@test "kselftest thp.policy_vfork_race" { kst_case thp.policy_vfork_race; }
@test "kselftest thp.policy_fork_race" { kst_case thp.policy_fork_race; }
