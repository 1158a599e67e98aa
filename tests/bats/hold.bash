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
	hold_start_as hold "$@"
	HELD=$hold_PID
	HOLD_IN=$hold_IN
	HOLD_OUT=$hold_OUT
	exec 8>&"$hold_FD" {hold_FD}>&-
	HOLD_FDS=("${HOLD_FDS[@]:0:${#HOLD_FDS[@]}-1}")
}

# hold_start_as NAME CMD...: the same for one of several helpers held at
# once: sets NAME_PID, NAME_OUT, NAME_IN and NAME_FD (the FIFO's writing
# end); hold_finish_as NAME, hold_kill_as NAME. Each helper starts without
# the other helpers' FIFOs: one that held another's open would keep it
# from ever seeing its end.
HOLD_FDS=()
hold_start_as() {
	local d=${BATS_TEST_TMPDIR:-/tmp} name=$1 fd pid
	shift
	rm -f "$d/$name.in" "$d/$name.out"
	mkfifo "$d/$name.in"
	(
		for fd in 8 "${HOLD_FDS[@]}"; do
			eval "exec $fd>&-" 2>/dev/null
		done
		exec "$@"
	) <"$d/$name.in" >"$d/$name.out" 2>&1 3>&- &
	pid=$!
	exec {fd}>"$d/$name.in"
	HOLD_FDS+=("$fd")
	printf -v "${name}_PID" %s "$pid"
	printf -v "${name}_FD" %s "$fd"
	printf -v "${name}_IN" %s "$d/$name.in"
	printf -v "${name}_OUT" %s "$d/$name.out"
	wait_ready "$d/$name.out" "$pid" || fail "'$*' did not get ready: $(<"$d/$name.out")"
}

# hold_finish_as NAME: close its stdin, wait for it (60 s), return its status
hold_finish_as() {
	local pid_var=${1}_PID fd_var=${1}_FD i rc=0
	if [ -n "${!fd_var:-}" ]; then
		eval "exec ${!fd_var}>&-"
		printf -v "$fd_var" %s ''
	fi
	for ((i = 0; i < 600; i++)); do
		kill -0 "${!pid_var}" 2>/dev/null || break
		sleep 0.1
	done
	wait "${!pid_var}" || rc=$?
	printf -v "$pid_var" %s ''
	return "$rc"
}

# hold_kill_as NAME: for teardown
hold_kill_as() {
	local pid_var=${1}_PID fd_var=${1}_FD
	if [ -n "${!fd_var:-}" ]; then
		eval "exec ${!fd_var}>&-" 2>/dev/null || true
		printf -v "$fd_var" %s ''
	fi
	if [ -n "${!pid_var:-}" ]; then
		kill "${!pid_var}" 2>/dev/null || true
		wait "${!pid_var}" 2>/dev/null || true
		printf -v "$pid_var" %s ''
	fi
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
