#!/usr/bin/env bats
# thpd on the build machine, against a fake sysfs tree (THP_ROOT): command
# line, configuration errors, the socket protocol's edges, reload, stop.
# What needs the real kernel (writes taking effect, rules, pressure) is in
# the guest suites tests/bats/5*.bats.

bats_require_minimum_version 1.5.0
load thpd-host

setup() {
	[ -x "$THPD" ] || skip "no $THPD (run make first)"
	R=$BATS_TEST_TMPDIR/root
	T=$R/sys/kernel/mm/transparent_hugepage
	mkdir -p "$T/khugepaged" "$R/proc" "$BATS_TEST_TMPDIR/etc/thpd.conf.d" "$BATS_TEST_TMPDIR/state"
	echo "always [madvise] never" >"$T/enabled"
	echo "always defer defer+madvise [madvise] never" >"$T/defrag"
	echo 4096 >"$T/khugepaged/pages_to_scan"
	echo "BOOT_IMAGE=/vmlinuz root=/dev/sda1" >"$R/proc/cmdline"
	CONF=$BATS_TEST_TMPDIR/etc/thpd.conf
	thpd_sockdir
	: >"$CONF"
	PID=
}

teardown() {
	[ -z "$PID" ] || thpd_end || true
	rm -rf "$SOCKDIR"
}

# thpd_up: thpd ($PID) has read its configuration and serves. Its socket
# exists before that (thpd listens, then reads the configuration and starts
# the loop), so a test that rewrote the configuration or sent SIGHUP as
# soon as the socket appeared raced the start-up: under load (check-host
# beside a guest boot) thpd read the broken next configuration at start and
# exited 78. A ping is answered only once the loop runs.
thpd_up() {
	wait_until --pid "$PID" 10 test -S "$SOCK" &&
		timeout 20 "$CLIENT" --socket "$SOCK" '{"cmd":"ping"}' >/dev/null 2>&1 && return 0
	cat "$BATS_TEST_TMPDIR/log" >&2
	fail "thpd did not come up"
}

start_thpd() {
	THP_ROOT=$R STATE_DIRECTORY=$BATS_TEST_TMPDIR/state \
		"$THPD" --config "$CONF" --socket "$SOCK" 2>"$BATS_TEST_TMPDIR/log" &
	PID=$!
	thpd_up
}

client() {
	run timeout 10 "$CLIENT" --socket "$SOCK" "$@"
}

@test "--help and --version (-V) exit 0 on stdout; a bad option exits 2" {
	run -0 "$THPD" --help
	assert_output --partial "Usage: thpd"
	assert_output --partial "-V, --version"
	run -0 "$THPD" --version
	assert_output --regexp '^thpd [0-9]'
	local long=$output
	run -0 "$THPD" -V
	assert_output "$long"
	run -2 "$THPD" --bogus
	assert_output --partial "Try 'thpd --help'"
}

@test "--check-config: OK, warnings with file:line, fatal errors exit 78 (EXIT_CONFIG)" {
	printf '[Global]\nMode=always\n[Rule a]\nExe=/bin/a\nPolicy=advise\n' >"$CONF"
	run -0 "$THPD" --check-config --config "$CONF"
	assert_output --partial "OK, 1 rule"
	printf '[Global]\nMode=always\nBogus=1\n' >"$CONF"
	run -0 "$THPD" --check-config --config "$CONF"
	assert_output --partial "$CONF:3: warning: unknown key Bogus="
	printf '[Global]\n\nMode=alwayz\n' >"$CONF"
	run -78 "$THPD" --check-config --config "$CONF"
	assert_output --partial "$CONF:3: error: invalid Mode=alwayz"
	printf '[Global]\nDefrag=x\n' >"$CONF.d/10-x.conf"
	printf '[Global]\nMode=always\n' >"$CONF"
	run -78 "$THPD" --check-config --config "$CONF"
	assert_output --partial "$CONF.d/10-x.conf:2: error: invalid Defrag=x"
}

@test "--config: an empty name is a usage error, a missing file is fatal" {
	run -2 "$THPD" --check-config --config ""
	assert_output --partial "--config needs a file name"
	run -78 "$THPD" --check-config --config "$CONF.typo"
	assert_output --partial "$CONF.typo: error: no such file"
	THP_ROOT=$R STATE_DIRECTORY=$BATS_TEST_TMPDIR/state run -78 "$THPD" --config "$CONF.typo" --socket "$SOCK"
	assert_output --partial "no such file"
	assert_equal "$(cat "$T/enabled")" "always [madvise] never"
}

@test "a drop-in that is not a regular file is refused at once (device, FIFO, directory)" {
	ln -s /dev/zero "$CONF.d/10-zero.conf"
	run -78 timeout 10 "$THPD" --check-config --config "$CONF"
	assert_output --partial "$CONF.d/10-zero.conf: error: not a regular file"
	rm "$CONF.d/10-zero.conf"
	mkfifo "$CONF.d/20-fifo.conf"
	run -78 timeout 10 "$THPD" --check-config --config "$CONF"
	assert_output --partial "$CONF.d/20-fifo.conf: error: not a regular file"
	rm "$CONF.d/20-fifo.conf"
	mkdir "$CONF.d/30-dir.conf"
	run -78 timeout 10 "$THPD" --check-config --config "$CONF"
	assert_output --partial "30-dir.conf: error:"
	rmdir "$CONF.d/30-dir.conf"
	# a symlink to a regular file is a normal drop-in
	printf '[Global]\nMode=never\n' >"$BATS_TEST_TMPDIR/real.conf"
	ln -s "$BATS_TEST_TMPDIR/real.conf" "$CONF.d/40-link.conf"
	run -0 "$THPD" --check-config --config "$CONF"
}

@test "over-long line, section name or value: fatal at file:line, the tail never applied" {
	# 197: Debian's libinih 55 splits the line right before Mode= and applied it
	{ printf '[Global]\n# %0197d' 0; printf 'Mode=sometimes\n'; } >"$CONF"
	run -78 "$THPD" --check-config --config "$CONF"
	assert_output --partial "$CONF:2: error: line longer than 198 characters"
	refute_output --partial "invalid Mode=sometimes"
	refute_output --partial "OK"
	printf '[Global]\n[Rule %060d]\nComm=x\n' 0 >"$CONF"
	run -78 "$THPD" --check-config --config "$CONF"
	assert_output --partial "$CONF:2: error: section name longer than 49 characters"
	printf '[Global]\nAdminGroup=%070d\n' 0 >"$CONF"
	run -78 "$THPD" --check-config --config "$CONF"
	assert_output --partial "$CONF:2: error: AdminGroup= in [Global] is longer than 63 characters"
	printf '[Global]\nMode=never\0junk\n' >"$CONF"
	run -78 "$THPD" --check-config --config "$CONF"
	assert_output --partial "$CONF:2: error: a NUL byte in the line"
}

# the shipped files and the guest suites' fixtures: a typo there would
# only show as a daemon running on defaults
@test "--check-config: the shipped configurations and the test fixtures are clean" {
	local f
	for f in systemd/thpd.conf systemd/thpd.conf.d-example.conf tests/bats/fixtures/*.conf; do
		run -0 "$THPD" --check-config --config "$f"
		assert_output --partial "$f: OK, "
		refute_output --partial warning
	done
}

@test "start with an unusable configuration: exit 78, file:line on stderr, nothing changed" {
	printf '[Global]\nMode=sometimes\n' >"$CONF"
	THP_ROOT=$R STATE_DIRECTORY=$BATS_TEST_TMPDIR/state run -78 "$THPD" --config "$CONF" --socket "$SOCK"
	assert_output --partial "$CONF:2: invalid Mode=sometimes"
	assert_output --partial "unusable, not starting"
	run cat "$T/enabled"
	assert_output "always [madvise] never"
	[ ! -e "$SOCK" ]
}

@test "ping and status answer anyone; status has every documented field" {
	start_thpd
	client '{"cmd":"ping"}'
	assert_success
	assert_output --regexp '"ok":true.*"version":"[0-9]'
	client '{"cmd":"status"}'
	assert_success
	# no mode file: no RFC number (a "0" would read as off)
	refute_output --partial '"mode"'
	for f in '"enabled":"madvise"' '"defrag":"madvise"' '"adaptive":{' \
		'"state":"normal"' '"switches":0' '"stepped_sizes":{}' '"rules":0' '"rules_applied":0' '"persisted":null' \
		'"kernel_features":{"mode_file":false,"thp_policy":false}'; do
		assert_output --partial "$f"
	done
	run -0 setpriv --reuid=65534 --regid=65534 --clear-groups timeout 10 "$CLIENT" --socket "$SOCK" '{"cmd":"status"}'
	assert_output --partial '"ok":true'
}

@test "garbage, unknown commands and bad arguments get errors; the connection keeps serving" {
	start_thpd
	client 'this is not json' '{"cmd":42}' '[1,2]' '{"cmd":"frobnicate"}' \
		'{"cmd":"enable"}' '{"cmd":"enable","value":"3"}' '{"cmd":"defrag","value":"sometimes"}' \
		'{"cmd":"ping"}'
	assert_success
	assert_line --index 0 --regexp '"ok":false.*"errno":74'
	assert_line --index 1 --regexp '"ok":false.*"errno":22'
	assert_line --index 2 --regexp '"ok":false.*"errno":74'
	assert_line --index 3 '{"ok":false,"error":"unknown command '\''frobnicate'\''","errno":95}'
	assert_line --index 4 --regexp '"ok":false.*needs a string.*"errno":22'
	assert_line --index 5 --regexp "invalid value '3' for enable.*\"errno\":22"
	assert_line --index 6 --regexp "invalid value 'sometimes' for defrag.*\"errno\":22"
	assert_line --index 7 --partial '"ok":true'
	# nothing was written
	run cat "$T/enabled"
	assert_output "always [madvise] never"
}

@test "an oversized request: error reply, connection closed, thpd keeps serving" {
	start_thpd
	client --pad 4097 --check-closed '{"cmd":"ping"}'
	assert_success
	assert_line --index 0 --regexp '"ok":false.*4097 bytes.*"errno":90'
	assert_line --index 1 closed
	client --pad 65536 '{"cmd":"ping"}'
	assert_line --index 0 --regexp '"errno":90'
	client --pad 4096 '{"cmd":"ping"}'
	assert_success
	assert_output --partial '"ok":true'
}

@test "changes need root: a non-root caller is refused with EPERM" {
	start_thpd
	run -0 setpriv --reuid=65534 --regid=65534 --clear-groups timeout 10 "$CLIENT" --socket "$SOCK" \
		'{"cmd":"enable","value":"always"}' '{"cmd":"defrag","value":"never"}' '{"cmd":"reload"}'
	assert_line --index 0 --regexp '"ok":false.*permission denied.*"errno":1}'
	assert_line --index 1 --regexp '"ok":false.*permission denied.*"errno":1}'
	assert_line --index 2 --regexp '"ok":false.*permission denied.*"errno":1}'
	run cat "$T/enabled"
	assert_output "always [madvise] never"
	[ ! -e "$BATS_TEST_TMPDIR/state/state" ]
}

@test "AdminGroup= members may change settings" {
	printf '[Global]\nAdminGroup=65534\n' >"$CONF"
	start_thpd
	setpriv --reuid=65534 --regid=100 --groups=65534 timeout 10 "$CLIENT" --socket "$SOCK" \
		'{"cmd":"defrag","value":"never"}' >"$BATS_TEST_TMPDIR/out" || true
	# the fake sysfs does not answer in the kernel's bracketed format after a
	# write, but the write and the persisted state show the request was allowed
	run cat "$T/defrag"
	assert_output --regexp '^never'
	run cat "$BATS_TEST_TMPDIR/state/state"
	assert_output '{"version":1,"enabled":null,"defrag":"never"}'
}

@test "reload with a broken configuration keeps running on the last good one" {
	printf '[Adaptive]\nEnabled=no\n' >"$CONF"
	start_thpd
	printf '[Global]\nMode=nonsense\n' >"$CONF"
	kill -HUP "$PID"
	client '{"cmd":"reload"}'
	assert_output --regexp '"ok":false.*unusable.*"errno":22'
	kill -0 "$PID"
	client '{"cmd":"ping"}'
	assert_output --partial '"ok":true'
	run grep -c "$CONF:2: invalid Mode=nonsense" "$BATS_TEST_TMPDIR/log"
	assert_output 2
	assert_equal "$(cat "$T/enabled")" "always [madvise] never"
}

@test "SIGTERM: clean exit 0, the socket it created is removed" {
	start_thpd
	kill -TERM "$PID"
	rc=0
	wait "$PID" || rc=$?
	PID=
	assert_equal "$rc" 0
	[ ! -e "$SOCK" ]
	run cat "$BATS_TEST_TMPDIR/log"
	assert_output --partial "stopping"
}

@test "a second instance refuses a socket in use" {
	start_thpd
	THP_ROOT=$R STATE_DIRECTORY=$BATS_TEST_TMPDIR/state run -1 "$THPD" --config "$CONF" --socket "$SOCK"
	assert_output --partial "Address already in use"
	client '{"cmd":"ping"}'
	assert_success
}

@test "connection limits: one user's idle connections do not lock out others or root" {
	[ -x "$BUILD_DIR/helpers/thp-stress-sock" ] || skip "no thp-stress-sock helper"
	start_thpd
	local out=$BATS_TEST_TMPDIR/idle.out
	# in use (a ping every 2 s), so that thpd's idle timeout does not free them
	setpriv --reuid=65534 --regid=65534 --clear-groups -- \
		"$BUILD_DIR/helpers/thp-stress-sock" --socket "$SOCK" --idle 40 --keepalive-ms 2000 \
		--hold-seconds 30 >"$out" 2>&1 &
	local holder=$!
	wait_ready "$out" "$holder" 10 || fail "the idle clients did not connect: $(cat "$out")"
	# the 17th connection of the same user is told it is busy (or, when
	# its request crossed thpd's close, finds the connection closed)
	run setpriv --reuid=65534 --regid=65534 --clear-groups -- timeout 10 "$CLIENT" --socket "$SOCK" '{"cmd":"ping"}'
	assert_output --regexp '("ok":false.*too many connections.*"errno":16|^closed$)'
	refute_output --partial '"ok":true'
	# another user and root are served
	run -0 setpriv --reuid=65533 --regid=65533 --clear-groups -- timeout 10 "$CLIENT" --socket "$SOCK" '{"cmd":"ping"}'
	assert_output --partial '"ok":true'
	client '{"cmd":"ping"}'
	assert_success
	assert_output --partial '"ok":true'
	kill "$holder"
	wait "$holder" || true
}

@test "an idle connection is closed after 10 s; one in use stays open" {
	[ -x "$BUILD_DIR/helpers/thp-stress-sock" ] || skip "no thp-stress-sock helper"
	start_thpd
	local idle=$BATS_TEST_TMPDIR/idle.out busy=$BATS_TEST_TMPDIR/busy.out p1 p2
	"$BUILD_DIR/helpers/thp-stress-sock" --socket "$SOCK" --idle 3 --hold-seconds 60 \
		--until-closed >"$idle" 2>&1 &
	p1=$!
	# a ping every 2 s for 25 s: never idle for 10 s
	"$BUILD_DIR/helpers/thp-stress-sock" --socket "$SOCK" --idle 2 --keepalive-ms 2000 \
		--hold-seconds 25 >"$busy" 2>&1 &
	p2=$!
	wait "$p1" || fail "thp-stress-sock: $(cat "$idle")"
	wait "$p2" || fail "thp-stress-sock: $(cat "$busy")"
	run -0 cat "$idle"
	assert_line idle_open=3
	assert_line idle_closed=3
	run -0 cat "$busy"
	assert_line idle_served=2
	assert_line idle_closed=0
	run -0 sed -n 's/^keepalive_ok=//p' "$busy"
	[ "$output" -ge 20 ] || fail "only $output keepalive pings answered in 25 s"
	client '{"cmd":"ping"}'
	assert_output --partial '"ok":true'
}

@test "a dozen users at their connection limit lock out neither AdminGroup= members nor root" {
	[ -x "$BUILD_DIR/helpers/thp-stress-sock" ] || skip "no thp-stress-sock helper"
	printf '[Global]\nAdminGroup=65500\n' >"$CONF"
	start_thpd
	local u pids=()
	# 12 users, 16 connections each, all in use: every slot an unprivileged
	# user may take
	for u in $(seq 65510 65521); do
		setpriv --reuid="$u" --regid="$u" --clear-groups -- \
			"$BUILD_DIR/helpers/thp-stress-sock" --socket "$SOCK" --idle 16 --keepalive-ms 2000 \
			--hold-seconds 20 >"$BATS_TEST_TMPDIR/hold.$u" 2>&1 &
		pids+=($!)
	done
	for u in $(seq 65510 65521); do
		wait_ready "$BATS_TEST_TMPDIR/hold.$u" "${pids[$((u - 65510))]}" 30 ||
			fail "user $u: $(cat "$BATS_TEST_TMPDIR/hold.$u")"
		run -0 grep -x idle_served=16 "$BATS_TEST_TMPDIR/hold.$u"
	done
	# a 13th unprivileged user is told to try later
	run setpriv --reuid=65530 --regid=65530 --clear-groups -- timeout 10 "$CLIENT" --socket "$SOCK" '{"cmd":"ping"}'
	assert_output --regexp '("ok":false.*too many connections.*"errno":16|^closed$)'
	# a member of AdminGroup= and root are served
	run -0 setpriv --reuid=65531 --regid=65531 --groups=65500 -- timeout 10 "$CLIENT" --socket "$SOCK" \
		'{"cmd":"ping"}'
	assert_output --partial '"ok":true'
	client '{"cmd":"ping"}'
	assert_success
	assert_output --partial '"ok":true'
	for u in $(seq 65510 65521); do
		wait "${pids[$((u - 65510))]}" || true
		run -0 grep -x idle_closed=0 "$BATS_TEST_TMPDIR/hold.$u"
	done
	# the dozen gone, the 13th is served
	run -0 setpriv --reuid=65530 --regid=65530 --clear-groups -- timeout 10 "$CLIENT" --socket "$SOCK" '{"cmd":"ping"}'
	assert_output --partial '"ok":true'
}

# ---- issue 20, class 1: saving state is safe and truthful ----

# start thpd with environment overrides: start_thpd_env VAR=value...
start_thpd_env() {
	env THP_ROOT="$R" STATE_DIRECTORY="$BATS_TEST_TMPDIR/state" "$@" \
		"$THPD" --config "$CONF" --socket "$SOCK" 2>"$BATS_TEST_TMPDIR/log" &
	PID=$!
	thpd_up
}

# a state directory that cannot be written: the host is not changed, the
# reply says why, status claims nothing
assert_enable_refused_unchanged() {
	client '{"cmd":"enable","value":"always"}' '{"cmd":"status"}'
	assert_line --index 0 --regexp '"ok":false.*cannot save the setting in .*nothing was changed'
	assert_line --index 1 --partial '"persisted":null'
	assert_line --index 1 --partial '"enabled":"madvise"'
	assert_equal "$(cat "$T/enabled")" "always [madvise] never"
}

@test "state directory missing: enable is refused before sysfs changes, status agrees" {
	start_thpd_env STATE_DIRECTORY="$BATS_TEST_TMPDIR/no-such-dir"
	assert_enable_refused_unchanged
}

@test "state directory is not a directory: enable is refused, nothing changed" {
	: >"$BATS_TEST_TMPDIR/state-file"
	start_thpd_env STATE_DIRECTORY="$BATS_TEST_TMPDIR/state-file"
	assert_enable_refused_unchanged
}

@test "state directory read-only (immutable): enable is refused, nothing changed" {
	chattr +i "$BATS_TEST_TMPDIR/state" 2>/dev/null || skip "chattr +i does not work on this file system"
	start_thpd_env
	run assert_enable_refused_unchanged
	chattr -i "$BATS_TEST_TMPDIR/state"
	assert_success
}

@test "a FIFO planted as the state file does not block start-up; it is refused and replaced" {
	mkfifo "$BATS_TEST_TMPDIR/state/state"
	start_thpd_env
	client '{"cmd":"ping"}'
	assert_success
	assert_output --partial '"ok":true'
	run grep -c "Cannot read .*/state: Operation not permitted" "$BATS_TEST_TMPDIR/log"
	assert_output 1
	# (the fake sysfs is not bracketed after a write, so the reply's state
	# read fails; the write and the saved state show the change was made)
	client '{"cmd":"defrag","value":"never"}'
	refute_output --partial 'cannot save'
	assert_equal "$(cat "$T/defrag")" never
	[ -f "$BATS_TEST_TMPDIR/state/state" ] && [ ! -p "$BATS_TEST_TMPDIR/state/state" ]
}

@test "symlinks and hard links planted at the state file and its temporary are never written through" {
	echo precious >"$BATS_TEST_TMPDIR/target-a"
	echo precious >"$BATS_TEST_TMPDIR/target-b"
	ln -s "$BATS_TEST_TMPDIR/target-a" "$BATS_TEST_TMPDIR/state/state"
	ln "$BATS_TEST_TMPDIR/target-b" "$BATS_TEST_TMPDIR/state/.state.tmp"
	start_thpd_env
	# an answered ping means start-up, and its log line, are done
	client '{"cmd":"ping"}'
	assert_success
	run grep -c "Cannot read .*/state: Too many levels of symbolic links" "$BATS_TEST_TMPDIR/log"
	assert_output 1
	# (the fake sysfs is not bracketed after a write, so the reply's state
	# read fails; the write and the saved state show the change was made)
	client '{"cmd":"defrag","value":"never"}'
	refute_output --partial 'cannot save'
	assert_equal "$(cat "$T/defrag")" never
	assert_equal "$(cat "$BATS_TEST_TMPDIR/target-a")" precious
	assert_equal "$(cat "$BATS_TEST_TMPDIR/target-b")" precious
	[ ! -L "$BATS_TEST_TMPDIR/state/state" ]
	run cat "$BATS_TEST_TMPDIR/state/state"
	assert_output '{"version":1,"enabled":null,"defrag":"never"}'
}

@test "a FIFO planted at the state file's temporary does not block a change" {
	start_thpd_env
	mkfifo "$BATS_TEST_TMPDIR/state/.state.tmp"
	# (the fake sysfs is not bracketed after a write, so the reply's state
	# read fails; the write and the saved state show the change was made)
	client '{"cmd":"defrag","value":"never"}'
	refute_output --partial 'cannot save'
	assert_equal "$(cat "$T/defrag")" never
	run cat "$BATS_TEST_TMPDIR/state/state"
	assert_output '{"version":1,"enabled":null,"defrag":"never"}'
}

@test "the runtime 'saved' file: a FIFO does not block start-up, links are not written through" {
	local run=$BATS_TEST_TMPDIR/run
	mkdir "$run"
	mkfifo "$run/saved"
	echo precious >"$BATS_TEST_TMPDIR/target"
	ln -s "$BATS_TEST_TMPDIR/target" "$run/.saved.tmp"
	ln -s "$BATS_TEST_TMPDIR/target" "$run/saved.tmp"
	start_thpd_env RUNTIME_DIRECTORY="$run"
	client '{"cmd":"ping"}'
	assert_output --partial '"ok":true'
	assert_equal "$(cat "$BATS_TEST_TMPDIR/target")" precious
	run cat "$run/saved"
	assert_output --partial "enabled madvise"
	[ -f "$run/saved" ] && [ ! -p "$run/saved" ]
}

@test "enable 2 without the mode file, defrag cannot be written: enabled rolled back, nothing persisted" {
	start_thpd
	chattr +i "$T/defrag" 2>/dev/null || skip "chattr +i does not work on this file system"
	client '{"cmd":"enable","value":"2"}'
	chattr -i "$T/defrag"
	assert_output --regexp '"ok":false.*writing .*/defrag failed.*rolled back to enabled=madvise defrag=madvise'
	assert_equal "$(cat "$T/enabled")" madvise
	assert_equal "$(cat "$T/defrag")" "always defer defer+madvise [madvise] never"
	[ ! -s "$BATS_TEST_TMPDIR/state/state" ] || run -0 grep -q '"enabled":null' "$BATS_TEST_TMPDIR/state/state"
}

# ---- issue 20, class 2 (protocol) and class 4 (descriptors) ----

# every line of $output is one valid JSON document in valid UTF-8
assert_replies_valid_json() {
	printf '%s\n' "$output" | python3 -c '
import json, sys
for n, raw in enumerate(sys.stdin.buffer.read().splitlines()):
    json.loads(raw.decode("utf-8", errors="strict"))
' || fail "a reply is not valid JSON in UTF-8: $output"
}

@test "a string with an embedded NUL is refused, never taken as its prefix" {
	start_thpd
	client '{"cmd":"enable","value":"never\u0000junk"}' '{"cmd\u0000junk":"ping"}' \
		'{"cmd":"ping","x":"\\u0000"}' '{"cmd":"ping"}'
	assert_line --index 0 '{"ok":false,"error":"malformed request: expected one JSON object","errno":74}'
	assert_line --index 1 --regexp '"ok":false.*"errno":74'
	# an escaped backslash before u0000 is text, not a NUL (refused for the member)
	assert_line --index 2 --regexp 'unexpected member \\"x\\".*"errno":22'
	assert_line --index 3 --partial '"ok":true'
	assert_equal "$(cat "$T/enabled")" "always [madvise] never"
}

@test "a zero-length message gets the documented error reply; the connection keeps serving" {
	start_thpd
	client '' '{"cmd":"ping"}'
	assert_success
	assert_line --index 0 '{"ok":false,"error":"empty message: expected one JSON object","errno":74}'
	assert_line --index 1 --partial '"ok":true'
}

@test "bytes that are not UTF-8 are never echoed: every reply is valid JSON" {
	start_thpd
	client $'{"cmd":"\xff\xfe"}' $'{"cmd":"enable","value":"\xc3"}' \
		'{"cmd":"caf\u00e9 \u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9"}' \
		'{"cmd":"enable","value":"\u00ff\u001b[2J"}'
	assert_success
	assert_replies_valid_json
	assert_line --index 0 --regexp '"ok":false.*"errno":74'
	assert_line --index 1 --regexp '"ok":false.*"errno":74'
	# valid UTF-8 is escaped byte by byte and cut, never split inside a character
	assert_line --index 2 --regexp "unknown command 'caf\\\\\\\\xc3\\\\\\\\xa9 .*\\.\\.\\.'"
	assert_line --index 3 --regexp 'control character.*"errno":22'
}

@test "requests that are not exactly the protocol are refused" {
	start_thpd
	client '{"cmd":"ping","extra":1}' '{"cmd":"status","value":"never"}' "{'cmd':'ping'}" \
		'{"cmd":"ping",}' $'{"cmd":"pi\tng"}' '{"cmd":"enable","value":"never","force":true}' \
		'{"cmd":"ping"} {"cmd":"ping"}' '{"cmd":"ping"}'
	assert_success
	assert_replies_valid_json
	assert_line --index 0 --regexp 'unexpected member \\"extra\\" in a .ping. request.*"errno":22'
	assert_line --index 1 --regexp 'unexpected member \\"value\\" in a .status. request.*"errno":22'
	assert_line --index 2 --regexp '"ok":false.*"errno":74'
	assert_line --index 3 --regexp '"ok":false.*"errno":74'
	assert_line --index 4 --regexp 'control character.*"errno":22'
	assert_line --index 5 --regexp 'unexpected member \\"force\\".*"errno":22'
	assert_line --index 6 --regexp '"ok":false.*"errno":74'
	assert_line --index 7 --partial '"ok":true'
	assert_equal "$(cat "$T/enabled")" "always [madvise] never"
}

@test "out of descriptors: accept backs off (logged once, no spinning) and resumes when a connection closes" {
	[ -x "$BUILD_DIR/helpers/thp-stress-sock" ] || skip "no thp-stress-sock helper"
	THP_ROOT=$R STATE_DIRECTORY=$BATS_TEST_TMPDIR/state \
		prlimit --nofile=24 "$THPD" --config "$CONF" --socket "$SOCK" 2>"$BATS_TEST_TMPDIR/log" &
	PID=$!
	thpd_up
	local out=$BATS_TEST_TMPDIR/idle.out
	"$BUILD_DIR/helpers/thp-stress-sock" --socket "$SOCK" --idle 40 --hold-seconds 4 >"$out" 2>&1 &
	local holder=$!
	for _ in $(seq 100); do
		grep -q '^ready' "$out" && break
		sleep 0.1
	done
	# CPU ticks thpd used while 40 connections wait behind a full descriptor table
	local t0 t1
	t0=$(awk '{ print $14 + $15 }' "/proc/$PID/stat")
	sleep 2
	t1=$(awk '{ print $14 + $15 }' "/proc/$PID/stat")
	[ $((t1 - t0)) -lt 20 ] || fail "thpd used $((t1 - t0)) ticks of CPU in 2 s while out of descriptors"
	wait "$holder" || true
	run grep -c "Cannot accept connections: Too many open files" "$BATS_TEST_TMPDIR/log"
	assert_output 1
	client '{"cmd":"ping"}'
	assert_success
	assert_output --partial '"ok":true'
}

@test "a state or runtime directory longer than thpd keeps is refused, never cut" {
	local long
	long=/tmp/$(printf 'd%.0s' $(seq 4200))
	THP_ROOT=$R STATE_DIRECTORY=$long run -1 timeout 10 "$THPD" --config "$CONF" --socket "$SOCK"
	assert_output --partial "state directory (\$STATE_DIRECTORY) is longer than 4095 characters"
	THP_ROOT=$R run -1 timeout 10 "$THPD" --config "$CONF" --socket "$SOCK" --state-dir "$long"
	assert_output --partial "(--state-dir) is longer than"
	THP_ROOT=$R STATE_DIRECTORY=$BATS_TEST_TMPDIR/state RUNTIME_DIRECTORY=$long:/run/x \
		run -1 timeout 10 "$THPD" --config "$CONF" --socket "$SOCK"
	assert_output --partial "\$RUNTIME_DIRECTORY is longer than 4095 characters"
	assert_equal "$(cat "$T/enabled")" "always [madvise] never"
}
