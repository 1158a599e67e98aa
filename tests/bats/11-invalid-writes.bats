#!/usr/bin/env bats
# Writing anything but a valid value to enabled or defrag fails with EINVAL
# and leaves the setting as it was.

load helpers

setup_file() {
	thp_save_knobs
}

teardown_file() {
	thp_restore_knobs
}

# write_rejected FILE VALUE: the write fails and FILE's content is unchanged
write_rejected() {
	local f=$THP/$1 before after
	before=$(cat "$f")
	# as `echo VALUE > FILE` would, newline included
	run bash -c 'printf "%s\n" "$1" >"$2"' _ "$2" "$f"
	assert_failure
	assert_output --partial "Invalid argument"
	after=$(cat "$f")
	[ "$before" = "$after" ] || fail "'$2' to $1 changed it: '$before' -> '$after'"
}

@test "enabled rejects unknown words, prefixes, numbers out of range, junk" {
	thp_set enabled madvise
	for v in bogus al alwaysx ALWAYS ' ' 3 -1 1x 0x1 '2 2' 10; do
		write_rejected enabled "$v"
	done
}

@test "enabled rejects an empty line and 4 KiB of junk" {
	thp_set enabled always
	write_rejected enabled ""
	write_rejected enabled "$(head -c 4000 /dev/zero | tr '\0' 'x')"
}

@test "defrag rejects unknown words and leaves the setting" {
	thp_set defrag madvise
	for v in bogus always+ defer+ '' 5 madvisex; do
		write_rejected defrag "$v"
	done
}

@test "every valid defrag word is accepted and reads back selected" {
	for v in always defer defer+madvise madvise never; do
		thp_set defrag "$v"
		[ "$(thp_get defrag)" = "$v" ] || fail "defrag: wrote $v, reads $(thp_get defrag)"
	done
}
