#!/usr/bin/env bats
# thpd under faults, under systemd: state directory read-only or full, sysfs
# write refused, socket floods (many, idle and non-reading clients), the
# configuration deleted while running, SIGSTOP -> watchdog restart.
# Faults are injected inside thpd's own mount namespace (nsenter), so the rest
# of the system is untouched and a restart of thpd clears them.
# Covered elsewhere, not repeated here: oversized and malformed requests
# (tests/host/50-thpd.bats, 52-thpd-socket.bats), SIGSTOP -> watchdog restart
# and an unwritable sysfs at start (50-thpd-service.bats).

load helpers
# wait_ready
load hold

SOCK=/run/thpd.sock
CONF=/etc/thpd/thpd.conf
STATE_FILE=/var/lib/thpd/state

setup_file() {
	[ -x /usr/sbin/thpd ] || return 0
	thp_save_knobs
	local saved=$BATS_FILE_TMPDIR/saved
	mkdir -p "$saved"
	[ -e "$CONF" ] && cp -a "$CONF" "$saved/thpd.conf"
	[ -e "$STATE_FILE" ] && cp -a "$STATE_FILE" "$saved/state"
	systemctl -q is-active thpd.service && touch "$saved/was-active"
	systemctl start thpd.socket thpd.service
}

teardown_file() {
	[ -x /usr/sbin/thpd ] || return 0
	local saved=$BATS_FILE_TMPDIR/saved
	systemctl stop thpd.service
	[ -e "$saved/thpd.conf" ] && cp -a "$saved/thpd.conf" "$CONF"
	if [ -e "$saved/state" ]; then
		cp -a "$saved/state" "$STATE_FILE"
	else
		rm -f "$STATE_FILE"
	fi
	thp_restore_knobs
	systemctl reset-failed thpd.service 2>/dev/null || true
	[ -e "$saved/was-active" ] && systemctl start thpd.service
	return 0
}

setup() {
	[ -x /usr/sbin/thpd ] || skip "thpd is not installed"
	# every test starts from a fresh thpd (a fresh mount namespace)
	systemctl reset-failed thpd.service 2>/dev/null || true
	systemctl restart thpd.service || fail "thpd does not start: $(journalctl -u thpd -n 20 --no-pager)"
	PID=$(main_pid)
	[ "$PID" -gt 0 ] || fail "no MainPID for thpd"
	CURSOR=$(journalctl -n 0 --show-cursor --no-pager | sed -n 's/^-- cursor: //p')
}

main_pid() {
	systemctl show -p MainPID --value thpd.service
}

# the reply to one raw request
request() {
	run timeout 20 "$THP_HELPERS/thpd-client" --socket "$SOCK" "$1"
	REPLY_JSON=${output##*$'\n'}
}

reply_field() {
	jq -r "$1" <<<"$REPLY_JSON"
}

# thpd is still the same running process and answers ping and status
assert_still_serving() {
	systemctl -q is-active thpd.service || fail "thpd is no longer active"
	[ "$(main_pid)" = "$PID" ] || fail "thpd was restarted: MainPID $PID -> $(main_pid)"
	request '{"cmd":"ping"}'
	[ "$(reply_field .ok)" = true ] || fail "ping: $REPLY_JSON"
	request '{"cmd":"status"}'
	[ "$(reply_field .ok)" = true ] || fail "status: $REPLY_JSON"
}

# thpd's journal since setup() has a line matching $1
assert_journal() {
	journalctl --sync
	run journalctl -u thpd.service --after-cursor "$CURSOR" --no-pager -o cat
	assert_output --regexp "$1"
}

# run a shell command in thpd's mount namespace (and only there)
in_thpd_ns() {
	[ "$(readlink /proc/"$PID"/ns/mnt)" != "$(readlink /proc/self/ns/mnt)" ] ||
		skip "thpd shares the host's mount namespace: cannot inject the fault privately"
	nsenter -t "$PID" -m -- sh -c "$1"
}

@test "state directory read-only: the change is refused before sysfs is written, thpd keeps running" {
	thp_set enabled madvise
	in_thpd_ns 'mountpoint -q /var/lib/thpd || mount --bind /var/lib/thpd /var/lib/thpd
		mount -o remount,bind,ro /var/lib/thpd'
	request '{"cmd":"enable","value":"always"}'
	echo "# reply: $REPLY_JSON" >&3
	[ "$(reply_field .ok)" = false ] || fail "the failed persist was not reported: $REPLY_JSON"
	[ "$(reply_field .errno)" = 30 ] || fail "want errno 30 (EROFS): $REPLY_JSON"
	reply_field .error | grep -q /var/lib/thpd || fail "the error does not name the state directory: $REPLY_JSON"
	# saved first, applied after: disk, reply and sysfs agree
	assert_equal "$(thp_get enabled)" madvise
	assert_journal 'persist|/var/lib/thpd'
	assert_still_serving
}

@test "state directory full: the change is refused, sysfs unchanged, thpd keeps running" {
	thp_set enabled madvise
	in_thpd_ns 'mount -t tmpfs -o size=64k,mode=0755 thp-full /var/lib/thpd &&
		{ dd if=/dev/zero of=/var/lib/thpd/filler bs=4k status=none 2>/dev/null; true; }'
	request '{"cmd":"enable","value":"never"}'
	echo "# reply: $REPLY_JSON" >&3
	[ "$(reply_field .ok)" = false ] || fail "the failed persist was not reported: $REPLY_JSON"
	[ "$(reply_field .errno)" = 28 ] || fail "want errno 28 (ENOSPC): $REPLY_JSON"
	assert_equal "$(thp_get enabled)" madvise
	assert_journal 'persist|/var/lib/thpd'
	assert_still_serving
}

@test "sysfs write refused: reported to the caller, state unchanged and shown by status, thpd keeps running" {
	thp_set enabled madvise
	in_thpd_ns "mount --bind $THP/enabled $THP/enabled && mount -o remount,bind,ro $THP/enabled"
	request '{"cmd":"enable","value":"always"}'
	echo "# reply: $REPLY_JSON" >&3
	[ "$(reply_field .ok)" = false ] || fail "a refused sysfs write was not reported: $REPLY_JSON"
	[ "$(reply_field .errno)" = 30 ] || fail "want errno 30 (EROFS): $REPLY_JSON"
	reply_field .error | grep -q "$THP/enabled" || fail "the error does not name the file: $REPLY_JSON"
	[ "$(thp_get enabled)" = madvise ] || fail "enabled changed to $(thp_get enabled)"
	# a reload re-applies the configuration against the refusing file
	systemctl reload thpd.service
	assert_still_serving
	request '{"cmd":"status"}'
	[ "$(reply_field .enabled)" = madvise ] || fail "status does not show the real state: $REPLY_JSON"
}

@test "socket flood: 200 clients at once, 3 rounds: each is answered or told busy, thpd keeps serving" {
	run -0 timeout 120 "$THP_HELPERS/thp-stress-sock" --socket "$SOCK" --flood 200 --rounds 3 \
		--timeout-ms 20000
	echo "# $(echo $output)" >&3
	assert_kv flood_ok -gt 0
	# every client hears back: served, or told busy; never dropped unanswered
	assert_kv flood_closed -eq 0
	assert_kv flood_timeout -eq 0
	assert_kv flood_error -eq 0
	assert_still_serving
}

@test "one unprivileged user floods: it is told busy beyond its share, root is still served" {
	run -0 timeout 120 setpriv --reuid=65534 --regid=65534 --clear-groups -- \
		"$THP_HELPERS/thp-stress-sock" --socket "$SOCK" --flood 100 --rounds 2 --timeout-ms 20000 --ping
	echo "# nobody: $(echo $output)" >&3
	assert_kv flood_ok -gt 0
	assert_kv flood_closed -eq 0
	assert_kv flood_timeout -eq 0
	assert_kv flood_error -eq 0
	run -0 timeout 60 "$THP_HELPERS/thp-stress-sock" --socket "$SOCK" --flood 50 --timeout-ms 20000
	echo "# root: $(echo $output)" >&3
	assert_kv flood_ok -eq 50
	assert_still_serving
}

@test "a client that never reads its replies does not stop thpd from serving others" {
	run -0 timeout 60 "$THP_HELPERS/thp-stress-sock" --socket "$SOCK" --no-read 10000 --ping \
		--timeout-ms 10000
	echo "# $(echo $output)" >&3
	assert_kv noread_sent -gt 0
	assert_kv ping = ok
	assert_still_serving
}

# Any local user may connect (SocketMode=0666): idle connections must not use
# up what root needs to reach thpd.
@test "64 idle connections of an unprivileged user do not lock root out" {
	local out=$BATS_TEST_TMPDIR/idle.out
	setpriv --reuid=65534 --regid=65534 --clear-groups -- \
		"$THP_HELPERS/thp-stress-sock" --socket "$SOCK" --idle 64 --hold-seconds 90 >"$out" 2>&1 &
	local holder=$!
	wait_ready "$out" "$holder" 20 || { kill "$holder"; fail "the idle clients did not connect: $(<"$out")"; }
	echo "# $(tr '\n' ' ' <"$out")" >&3
	run timeout 60 "$THP_HELPERS/thp-stress-sock" --socket "$SOCK" --ping --timeout-ms 20000
	kill "$holder" 2>/dev/null || true
	wait "$holder" 2>/dev/null || true
	echo "# root client while flooded: $(echo $output)" >&3
	assert_kv ping = ok
	assert_still_serving
}

@test "configuration deleted while running: reload keeps thpd running on the defaults" {
	[ -e "$CONF" ] || skip "no $CONF installed"
	rm -f "$CONF"
	systemctl reload thpd.service
	# the reload is asynchronous (SIGHUP): give it a moment, bounded
	wait_until 10 bash -c '[ "$(systemctl show -p ActiveState --value thpd.service)" = active ]' || true
	assert_still_serving
	cp -a "$BATS_FILE_TMPDIR/saved/thpd.conf" "$CONF"
	systemctl reload thpd.service
	assert_still_serving
}
