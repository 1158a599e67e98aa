# The environment of every host test of thpctl: the binary under test, a
# fake root (THP_ROOT) per test, and never a real thpd or a caller's
# GLIBC_TUNABLES. `load thpctl-env`, then call thpctl_env in setup. And a
# scripted thpd for thpctl's side of the protocol (peer).
# shellcheck shell=bash

thpctl_env() {
	THPCTL=${BUILD_DIR:?BUILD_DIR must point at the build directory}/thpctl
	[ -x "$THPCTL" ] || fail "no $THPCTL"
	export THP_ROOT=$BATS_TEST_TMPDIR/root
	# never reach a real thpd from host tests
	export THPD_SOCKET=$BATS_TEST_TMPDIR/no-thpd.sock
	unset GLIBC_TUNABLES
}

# peer REPLY_JSON|silent: serve one connection on $THPD_SOCKET: not a thpd,
# a listener that records the request in $BATS_TEST_TMPDIR/request and sends
# a canned reply (or none); PEER is its PID. Needs `load ../bats/hold`.
peer() {
	command -v python3 >/dev/null || skip "no python3 for the scripted peer"
	rm -f "$THPD_SOCKET"
	python3 - "$THPD_SOCKET" "$1" "$BATS_TEST_TMPDIR/request" 3>&- <<'PY' &
import socket, sys, time
path, reply, log = sys.argv[1:4]
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind(path)
s.listen(1)
s.settimeout(30)
c, _ = s.accept()
req = c.recv(8192)
open(log, "wb").write(req)
if reply == "silent":
    time.sleep(8)
else:
    c.send(reply.encode())
c.close()
PY
	PEER=$!
	wait_until --pid "$PEER" 10 test -S "$THPD_SOCKET" || fail "scripted peer did not start"
}
