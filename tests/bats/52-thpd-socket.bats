#!/usr/bin/env bats
# thpd's socket (docs/abi.md): thpctl enable persists across restarts,
# callers are authenticated, garbage and oversized requests are answered
# with errors and thpd keeps serving; idle connections are closed.

load helpers
load thpd

setup() {
	thpd_setup always
	thpd_start
}

thpctl_or_skip() {
	command -v thpctl >/dev/null || skip "thpctl is not installed"
}

@test "thpctl enable madvise goes through thpd and persists across systemctl restart thpd" {
	thpctl_or_skip
	local mark
	mark=$(journal_mark)
	run -0 timeout 15 thpctl enable madvise
	assert_equal "$(thp_get enabled)" madvise
	# thpctl talked to thpd (not to sysfs directly): thpd logged and persisted it
	run -0 journal_messages "$mark" set-enabled
	assert_output --partial "enabled set to madvise through the socket"
	run -0 cat "$THPD_STATE"
	assert_output --partial '"enabled":"madvise"'
	run -0 timeout 60 systemctl restart thpd.service
	assert_equal "$(thp_get enabled)" madvise
	run -0 thpd_call '{"cmd":"status"}'
	assert_output --partial '"persisted":{"enabled":"madvise"'
}

@test "enable through the raw protocol: reply, persisted atomically, back after restart" {
	run -0 thpd_call '{"cmd":"enable","value":"never"}'
	# never is no RFC mode: no "mode" (a number only where the kernel has one)
	assert_output --regexp '^\{"ok":true,"enabled":"never","defrag":"madvise"\}$'
	run -0 cat "$THPD_STATE"
	assert_output '{"version":1,"enabled":"never","defrag":null}'
	run -0 ls -A /var/lib/thpd
	assert_output state
	run -0 timeout 60 systemctl restart thpd.service
	assert_equal "$(thp_get enabled)" never
}

@test "a number sets enabled and defrag; both are persisted" {
	run -0 thpd_call '{"cmd":"enable","value":"2"}'
	if [ -e "$THP/mode" ]; then
		assert_output --partial '"enabled":"always","defrag":"always","mode":2}'
	else
		assert_output --partial '"enabled":"always","defrag":"always"}'
	fi
	run -0 thpd_call '{"cmd":"defrag","value":"defer"}'
	assert_output --partial '"defrag":"defer"}'
	run -0 cat "$THPD_STATE"
	assert_output '{"version":1,"enabled":"always","defrag":"defer"}'
	thp_set defrag never
	run -0 timeout 60 systemctl restart thpd.service
	assert_equal "$(thp_get defrag)" defer
}

@test "status has the documented fields" {
	run -0 thpd_call '{"cmd":"status"}'
	if [ -e "$THP/mode" ]; then
		assert_output --partial '"mode":1,'
	else
		refute_output --partial '"mode"'
	fi
	for f in '"ok":true' '"version":"' '"enabled":"always"' '"defrag":"madvise"' \
		'"adaptive":{"enabled":false,"state":"normal","switches":0' '"rules":0' \
		'"rules_applied":0' '"persisted":null' '"kernel_features":{"mode_file":'; do
		assert_output --partial "$f"
	done
}

@test "a non-root caller may read status but not change anything" {
	run -0 setpriv --reuid=65534 --regid=65534 --clear-groups timeout 15 "$THPD_CLIENT" '{"cmd":"status"}'
	assert_output --partial '"ok":true'
	run -0 setpriv --reuid=65534 --regid=65534 --clear-groups timeout 15 "$THPD_CLIENT" \
		'{"cmd":"enable","value":"never"}' '{"cmd":"defrag","value":"never"}' '{"cmd":"reload"}'
	assert_line --index 0 --regexp '"ok":false.*permission denied.*"errno":1}$'
	assert_line --index 1 --regexp '"ok":false.*permission denied.*"errno":1}$'
	assert_line --index 2 --regexp '"ok":false.*permission denied.*"errno":1}$'
	assert_equal "$(thp_get enabled)" always
	assert_equal "$(thp_get defrag)" madvise
	[ ! -e "$THPD_STATE" ]
	journalctl --sync
	run -0 journalctl --no-pager -u thpd -n 20 -o cat THPD_EVENT=denied
	assert_output --partial "from uid 65534"
}

@test "a non-root thpctl enable is refused" {
	thpctl_or_skip
	run setpriv --reuid=65534 --regid=65534 --clear-groups timeout 15 thpctl enable never
	assert_failure
	assert_output --partial "ermission denied"
	assert_equal "$(thp_get enabled)" always
}

@test "garbage and unknown commands get errors; the connection and thpd keep serving" {
	run -0 thpd_call 'garbage' '{"cmd":"enable","value":"sometimes"}' '{"cmd":"nope"}' \
		'{"no":"cmd"}' '{"cmd":"ping"}'
	assert_line --index 0 --regexp '"ok":false.*"errno":74}$'
	assert_line --index 1 --regexp "invalid value 'sometimes' for enable.*\"errno\":22}$"
	assert_line --index 2 '{"ok":false,"error":"unknown command '\''nope'\''","errno":95}'
	assert_line --index 3 --regexp '"ok":false.*"errno":22}$'
	assert_line --index 4 --regexp '^\{"ok":true,"version":'
	assert_equal "$(thp_get enabled)" always
}

@test "an oversized request gets an error, the connection is closed, thpd keeps serving" {
	local pid
	pid=$(thpd_pid)
	run -0 thpd_call --pad 5000 --check-closed '{"cmd":"enable","value":"never"}'
	assert_line --index 0 --regexp '"ok":false.*exceeds the limit of 4096 bytes.*"errno":90}$'
	assert_line --index 1 closed
	assert_equal "$(thp_get enabled)" always
	for _ in 1 2 3; do
		run -0 thpd_call --pad 100000 '{"cmd":"ping"}'
		assert_line --index 0 --regexp '"errno":90}$'
	done
	run -0 thpd_call '{"cmd":"ping"}'
	assert_output --partial '"ok":true'
	assert_equal "$(thpd_pid)" "$pid"
}

@test "many clients at once: thpd answers every one" {
	local i
	# 30 s each for the answer, not the client's 5: twenty clients start
	# at once, forty fork+execs on a guest that may have one vCPU
	for i in $(seq 20); do
		thpd_call --timeout-ms 30000 '{"cmd":"ping"}' >"$BATS_TEST_TMPDIR/c.$i" &
	done
	wait
	for i in $(seq 20); do
		run -0 cat "$BATS_TEST_TMPDIR/c.$i"
		assert_output --partial '"ok":true'
	done
}

@test "an idle connection is closed after 10 s; one in use stays open" {
	local idle=$BATS_TEST_TMPDIR/idle.out busy=$BATS_TEST_TMPDIR/busy.out p1 p2
	[ -x "$THP_HELPERS/thp-stress-sock" ] || skip "no thp-stress-sock helper"
	"$THP_HELPERS/thp-stress-sock" --idle 3 --hold-seconds 120 --until-closed >"$idle" 2>&1 &
	p1=$!
	# a ping every 2 s for 25 s: never idle for 10 s
	"$THP_HELPERS/thp-stress-sock" --idle 2 --keepalive-ms 2000 --hold-seconds 25 >"$busy" 2>&1 &
	p2=$!
	wait "$p1" || fail "thp-stress-sock: $(<"$idle")"
	wait "$p2" || fail "thp-stress-sock: $(<"$busy")"
	run -0 cat "$idle"
	assert_line idle_open=3
	assert_line idle_closed=3
	run -0 cat "$busy"
	assert_line idle_served=2
	assert_line idle_closed=0
	run -0 thpd_call '{"cmd":"ping"}'
	assert_output --partial '"ok":true'
}
