# Run a helper in the background (thp-touch --hold, thp-frag) and talk to it
# through files instead of a coproc: bash closes a coproc's descriptors when
# it reaps it, which loses the last lines the helper printed. `load hold`
# (the host suites: `load ../bats/hold`).
# shellcheck shell=bash

# wait_until [--pid PID] SECONDS CMD...: run CMD every 0.1 s until it
# succeeds (0) or SECONDS pass (1); with --pid, stop early (1) once process
# PID has exited. The suites' one polling loop: every wait on something to
# become ready goes through it.
wait_until() {
	local pid='' t end
	if [ "$1" = --pid ]; then
		pid=$2
		shift 2
	fi
	t=$1
	shift
	end=$(($(date +%s%N) + t * 1000000000))
	while [ "$(date +%s%N)" -lt "$end" ]; do
		"$@" >/dev/null 2>&1 && return 0
		[ -z "$pid" ] || kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	"$@" >/dev/null 2>&1
}

# wait_ready FILE PID [SECONDS]: until the background process PID has printed
# a line "ready" into FILE (default ${HOLD_TIMEOUT:-120} s)
wait_ready() {
	wait_until --pid "$2" "${3:-${HOLD_TIMEOUT:-120}}" grep -qx ready "$1"
}

# hold_start CMD...: start CMD with stdin from a FIFO we keep open (fd 8),
# output to $HOLD_OUT; wait up to ${HOLD_TIMEOUT:-120} s for a "ready" line.
# Sets HELD (the pid).
hold_start() {
	local d=${BATS_TEST_TMPDIR:-/tmp}
	HOLD_IN=$d/hold.in
	HOLD_OUT=$d/hold.out
	rm -f "$HOLD_IN" "$HOLD_OUT"
	mkfifo "$HOLD_IN"
	"$@" <"$HOLD_IN" >"$HOLD_OUT" 2>&1 3>&- &
	HELD=$!
	exec 8>"$HOLD_IN"
	wait_ready "$HOLD_OUT" "$HELD" || fail "'$*' did not get ready: $(cat "$HOLD_OUT")"
}

# hold_value KEY: KEY=value from the helper's output so far
hold_value() {
	sed -n "s/^$1=//p" "$HOLD_OUT" | tail -1
}

# hold_finish: close the helper's stdin, wait for it (60 s), return its status
hold_finish() {
	local i rc=0
	exec 8>&-
	for ((i = 0; i < 600; i++)); do
		kill -0 "$HELD" 2>/dev/null || break
		sleep 0.1
	done
	wait "$HELD" || rc=$?
	HELD=
	return "$rc"
}

# hold_kill: for teardown
hold_kill() {
	exec 8>&- 2>/dev/null || true
	if [ -n "${HELD:-}" ]; then
		kill "$HELD" 2>/dev/null || true
		wait "$HELD" 2>/dev/null || true
		HELD=
	fi
}
