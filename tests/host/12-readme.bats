#!/usr/bin/env bats
# README.md gives an administrator their path first (issue 25): build the
# packages and install them, then use thpctl and thpd; the lab (kernel,
# guest, make check) comes after.

load '/usr/lib/bats/bats-support/load'
load '/usr/lib/bats/bats-assert/load'

README=${BATS_TEST_DIRNAME}/../../README.md

# line of the first match of an extended regex in README, or 0
first_line() {
	grep -n -m1 -E "$1" "$README" | cut -d: -f1 || true
}

@test "README: the first section is the administrators' (make deb, install, thpctl, thpd)" {
	local first
	first=$(grep -m1 '^## ' "$README")
	[[ $first == *administrators* ]] || fail "first section: $first"
	# its first code block: build the packages, install them, use them
	run awk '/^## /{n++} n==1 && /^```/{c++; next} n==1 && c==1' "$README"
	assert_line --regexp '^make deb'
	assert_line --regexp '^sudo apt install \./build/deb/thpctl_.*thpd_'
	assert_line --regexp '^thpctl status'
	assert_line --regexp '^sudo systemctl enable --now thpd'
}

@test "README: the administrator's path comes before the lab's kernel and guest" {
	local deb kernel demo check lab
	deb=$(first_line '^make deb')
	lab=$(first_line '^## .*lab')
	demo=$(first_line '^make demo')
	check=$(first_line '^make check')
	kernel=$(first_line 'make kernel')
	[ -n "$deb" ] && [ -n "$lab" ] && [ -n "$demo" ] && [ -n "$check" ] ||
		fail "README lacks one of: make deb ($deb), the lab section ($lab), make demo ($demo), make check ($check)"
	[ "$deb" -lt "$lab" ] || fail "make deb (line $deb) after the lab section (line $lab)"
	[ "$lab" -lt "$demo" ] && [ "$lab" -lt "$check" ] ||
		fail "make demo ($demo) or make check ($check) before the lab section ($lab)"
	[ -z "$kernel" ] || [ "$kernel" -gt "$deb" ] || fail "make kernel (line $kernel) before make deb (line $deb)"
}
