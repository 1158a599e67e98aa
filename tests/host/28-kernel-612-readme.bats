#!/usr/bin/env bats
# kernel/README.md's 6.12 section lists the patches of kernel/6.12/thp.patch
# by subject, in order (the 6.1 table has its check in 10-harness.bats).

bats_require_minimum_version 1.5.0
load '/usr/lib/bats/bats-support/load'
load '/usr/lib/bats/bats-assert/load'

TOP=$BATS_TEST_DIRNAME/../..
SERIES=$TOP/kernel/6.12/thp.patch

@test "kernel/README.md lists every patch of the 6.12 series by its subject" {
	local n=0 subject listed
	[ -f "$SERIES" ] || skip "no $SERIES"
	listed=$(awk '/^## 6.12/ { on = 1; next } on && /^## / { exit } on && /^[0-9]+\. / { print }' \
		"$TOP/kernel/README.md")
	while IFS= read -r subject; do
		n=$((n + 1))
		grep -qxF "$n. $subject" <<<"$listed" ||
			fail "kernel/README.md's 6.12 section has no line '$n. $subject'"
	done < <(awk '/^Subject: /{s=$0; getline; while ($0 ~ /^ /) { s = s $0; getline } print s}' "$SERIES" |
		sed -n 's/^Subject: \[PATCH v[0-9]* [1-9][0-9]*\/[0-9]*\] //p')
	[ "$n" -gt 0 ] || fail "no patch subject in $SERIES"
	assert_equal "$(grep -c . <<<"$listed")" "$n"
}
