#!/usr/bin/env bats
# The kernel's own selftests/mm that cover the paths and the mm flag bits
# the series touches -- khugepaged (collapse, khugepaged registration),
# cow (THP and mTHP copy-on-write), mdwe_test (MMF_HAS_MDWE and its
# no-inherit bit, kept by fork and exec) and ksm_functional_tests
# (MMF_VM_MERGE_ANY across fork and exec) -- built statically from the
# patched tree and run twice (khugepaged once, below): with the THP policy
# at default, and at advise, set by a wrapper (thp-policy set advise -- BINARY) that the binary inherits
# by exec. Proof that no flag collides and no THP path regressed.
# Probes: the binaries in the payload's kselftests directory (built from a
# tree with tools/testing/selftests/mm), and /proc/self/thp_policy for the
# advise runs.

load helpers

KST=${THP_KSELFTESTS_DIR:-/mnt/payload/kselftests}

setup_file() {
	thp_take_knobs
}

teardown_file() {
	thp_give_back_knobs
}

# kst BINARY POLICY [ARGS...]: run it under the policy, as the kernel's
# run_vmtests.sh would; pass on exit 0 with no "not ok", skip on 4 (KSFT_SKIP)
kst() {
	local bin=$1 policy=$2 log rc
	shift 2
	[ -x "$KST/$bin" ] || skip "no $bin in the payload ($KST): a kernel tree without selftests/mm, or THP_KERNEL without THP_KSELFTESTS"
	if [ "$policy" = advise ]; then
		[ -e /proc/self/thp_policy ] || skip "kernel without the THP policy"
		run -0 "$THP_HELPERS/thp-policy" set advise -- "$THP_HELPERS/thp-policy" get
		assert_line advise
	fi
	local cmd=("$KST/$bin" "$@")
	# without the policy (a stock kernel) default is the only state: run bare
	[ ! -e /proc/self/thp_policy ] || cmd=("$THP_HELPERS/thp-policy" set "$policy" -- "${cmd[@]}")
	log=$BATS_TEST_TMPDIR/$bin.log
	# each binary sets the THP knobs it needs and restores them itself
	cd "$BATS_TEST_TMPDIR" || return
	rc=0
	timeout 1800 "${cmd[@]}" >"$log" 2>&1 || rc=$?
	grep -E '^# Totals|^# SUMMARY|^# Planned|^ok [0-9]+ .*# SKIP' "$log" | sed 's/^/# /' >&3 || true
	[ "$rc" -ne 4 ] || skip "$bin skipped itself: $(tail -3 "$log")"
	[ "$rc" -eq 0 ] || fail "$bin (policy $policy) exited $rc:
$(grep -E '^not ok|FAIL|\[FAIL\]' "$log" | head -40)
--- last lines:
$(tail -20 "$log")"
	! grep -Eq '^not ok ' "$log" || fail "$bin (policy $policy) exited 0 but reported: $(grep -E '^not ok ' "$log")"
}

@test "selftests/mm khugepaged, policy default" { kst khugepaged default; }
# Not khugepaged under advise: its premise, that memory without
# MADV_HUGEPAGE stays small while enabled is madvise (it checks "no huge
# page" after a fault, and after splitting a PMD with MADV_DONTNEED), is the
# very thing advise changes; on patched 6.12 it fails there, by design.
# khugepaged under advise is thp_controls' policy_advise_khugepaged
# (25-kselftests).
@test "selftests/mm cow, policy default" { kst cow default; }
@test "selftests/mm cow, policy advise" { kst cow advise; }
@test "selftests/mm mdwe_test, policy default" { kst mdwe_test default; }
@test "selftests/mm mdwe_test, policy advise" { kst mdwe_test advise; }
@test "selftests/mm ksm_functional_tests, policy default" { kst ksm_functional_tests default; }
@test "selftests/mm ksm_functional_tests, policy advise" { kst ksm_functional_tests advise; }
