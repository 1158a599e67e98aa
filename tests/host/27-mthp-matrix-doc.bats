#!/usr/bin/env bats
# docs/abi.md states the multi-size THP matrix of the 6.12 series ("The mTHP
# matrix"); the guest suite tests/bats/27-mthp-matrix.bats reads the same
# table from tests/bats/fixtures/mthp-matrix.txt. They must not drift.

bats_require_minimum_version 1.5.0
load '/usr/lib/bats/bats-support/load'
load '/usr/lib/bats/bats-assert/load'

TOP=$BATS_TEST_DIRNAME/../..

# the rows of the first markdown table after the "The mTHP matrix" heading,
# as "value policy plain madv_hugepage madv_nohugepage" (backquotes dropped)
doc_rows() {
	awk '/^#+ The mTHP matrix/ { on = 1; next }
		on && /^#/ { exit }
		on && /^\|/ { if (++n <= 2) next	# header and separator
			gsub(/`/, ""); gsub(/^\| *| *\|$/, ""); gsub(/ *\| */, " "); print; t = 1; next }
		on && t { exit }' "$TOP/docs/abi.md"
}

fixture_rows() {
	grep -v '^#' "$TOP/tests/bats/fixtures/mthp-matrix.txt" | tr -s ' '
}

@test "docs/abi.md shows the mTHP matrix the guest suite checks" {
	run doc_rows
	assert_success
	[ -n "$output" ] || fail "no table under a 'The mTHP matrix' heading in docs/abi.md"
	assert_equal "$output" "$(fixture_rows)"
}
