#!/usr/bin/env bats
# Permissions across two users (root and nobody): /proc/<pid>/thp_stat and
# /proc/<pid>/thp_policy (docs/abi.md: thp_stat read like smaps; thp_policy
# 0644, read by all like status, write needs CAP_SYS_NICE and ptrace read
# access to the target), thpd's socket file, and
# the unit's `systemd-analyze security` exposure level (recorded in the TAP output).
# thpd's capabilities against thpd(8) are checked by 50-thpd-service.bats.

load helpers

NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups --)
SOCK=/run/thpd.sock

setup_file() {
	thp_save_knobs
	if [ -x /usr/sbin/thpd ]; then
		systemctl -q is-active thpd.service && touch "$BATS_FILE_TMPDIR/thpd-was-active"
		systemctl reset-failed thpd.service 2>/dev/null || true
		systemctl start thpd.socket thpd.service
	fi
}

teardown_file() {
	if [ -x /usr/sbin/thpd ] && [ ! -e "$BATS_FILE_TMPDIR/thpd-was-active" ]; then
		systemctl stop thpd.service
	fi
	thp_restore_knobs
}

teardown() {
	[ -n "${VICTIM:-}" ] && kill "$VICTIM" 2>/dev/null
	return 0
}

# a process owned by root: VICTIM
start_victims() {
	sleep 600 &
	VICTIM=$!
}

@test "thp_stat: the owner and root read it, another user cannot" {
	[ -e /proc/self/thp_stat ] || skip "kernel without the thp-stack series: no /proc/<pid>/thp_stat"
	start_victims
	run -0 cat "/proc/$VICTIM/thp_stat"
	assert_output --partial thp_fault_alloc
	run "${NOBODY[@]}" cat "/proc/$VICTIM/thp_stat"
	assert_failure
	assert_output --partial "Permission denied"
	# nobody reads its own
	run -0 "${NOBODY[@]}" sh -c 'cat /proc/self/thp_stat'
	assert_output --partial thp_fault_alloc
}

@test "thp_policy: another user reads it (as status) but cannot write it; without CAP_SYS_NICE not even one's own" {
	[ -e /proc/self/thp_policy ] || skip "kernel without the thp-stack series: no /proc/<pid>/thp_policy"
	start_victims
	echo advise >"/proc/$VICTIM/thp_policy"
	run -0 "${NOBODY[@]}" cat "/proc/$VICTIM/thp_policy"
	assert_output advise
	run "${NOBODY[@]}" bash -c "echo never >/proc/$VICTIM/thp_policy"
	assert_failure
	assert_output --partial "Permission denied"
	[ "$(<"/proc/$VICTIM/thp_policy")" = advise ] || fail "nobody changed root's policy"
	# its own: readable, but writing needs CAP_SYS_NICE (EPERM)
	# bash, not dash: dash's echo reports every write error as "I/O error"
	run "${NOBODY[@]}" bash -c 'cat /proc/self/thp_policy; echo never >/proc/self/thp_policy'
	assert_failure
	assert_output --partial default
	assert_output --partial "Operation not permitted"
}

@test "thp_policy: root may set another user's process; it reads back there" {
	[ -e /proc/self/thp_policy ] || skip "kernel without the thp-stack series: no /proc/<pid>/thp_policy"
	"${NOBODY[@]}" sleep 600 &
	local npid=$!
	echo never >"/proc/$npid/thp_policy" || { kill "$npid"; fail "root could not set nobody's policy"; }
	local got
	got=$(<"/proc/$npid/thp_policy")
	grep -q '^THP_policy:[[:space:]]*never' "/proc/$npid/status" || { kill "$npid"; fail "status does not say THP_policy: never"; }
	kill "$npid"
	[ "$got" = never ] || fail "policy reads $got"
}

# what callers may do over it is 52-thpd-socket.bats ("a non-root caller ...")
@test "thpd socket: root's, mode 0666 (callers are told apart by SO_PEERCRED, not by file mode)" {
	[ -x /usr/sbin/thpd ] || skip "thpd is not installed"
	[ -S "$SOCK" ] || fail "$SOCK is not a socket"
	[ "$(stat -c %U:%a "$SOCK")" = root:666 ] || fail "$SOCK is $(stat -c %U:%a "$SOCK")"
	run -0 "${NOBODY[@]}" "$THP_HELPERS/thpd-client" --socket "$SOCK" '{"cmd":"ping"}'
	assert_output --partial '"ok":true'
}

@test "systemd-analyze security thpd.service: exposure level recorded, not worse than MEDIUM" {
	[ -x /usr/sbin/thpd ] || skip "thpd is not installed"
	run -0 systemd-analyze security --no-pager thpd.service
	local line level
	line=$(grep 'Overall exposure level' <<<"$output")
	echo "# ${line}" >&3
	level=$(sed -n 's/.*thpd.service: *\([0-9.]*\).*/\1/p' <<<"$line")
	[ -n "$level" ] || fail "no exposure level in: $line"
	# 0-10; systemd rates < 5 as OK or MEDIUM
	awk -v l="$level" 'BEGIN { exit !(l < 5.0) }' || fail "exposure $level is EXPOSED or worse"
}
