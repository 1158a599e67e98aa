# Shared by the thpd suites (50-69): `load helpers` then `load thpd`.
# shellcheck shell=bash
#
# Every suite starts with thpd and thpd.socket stopped, no test
# configuration or unit drop-ins, no persisted state, and ends with the THP
# knobs as they were and thpd running again if it ran before (the package
# starts it at install and boot): thpd_setup_file / thpd_teardown_file. They are also the default
# setup_file and teardown_file (defined at the end); a suite that needs more
# defines its own and calls them.

# wait_until, wait_ready
# shellcheck source=hold.bash
. "${BASH_SOURCE[0]%/*}/hold.bash"

THPD_CONF_DIR=/etc/thpd
THPD_DROPIN=$THPD_CONF_DIR/thpd.conf.d/90-bats-test.conf
THPD_UNIT_DROPIN_DIR=/run/systemd/system/thpd.service.d
THPD_UNIT_DROPIN=$THPD_UNIT_DROPIN_DIR/90-bats-test.conf
THPD_STATE=/var/lib/thpd/state
THPD_CLIENT=$THP_HELPERS/thpd-client

thpd_setup_file() {
	[ -x /usr/sbin/thpd ] || skip "thpd is not installed"
	systemctl -q is-active thpd.service && touch "$BATS_FILE_TMPDIR/thpd-was-active"
	thpd_stop
	thp_save_knobs
	mkdir -p "$THPD_CONF_DIR/thpd.conf.d"
	# the suite owns thpd.conf while it runs; keep the installed one
	if [ -e "$THPD_CONF_DIR/thpd.conf" ]; then
		cp -a "$THPD_CONF_DIR/thpd.conf" "$BATS_FILE_TMPDIR/thpd.conf.orig"
	fi
	: >"$THPD_CONF_DIR/thpd.conf"
	rm -f "$THPD_STATE" "$THPD_DROPIN"
	systemctl reset-failed thpd.service thpd.socket 2>/dev/null || true
}

thpd_teardown_file() {
	thpd_stop
	rm -f "$THPD_DROPIN" "$THPD_STATE" "$THPD_UNIT_DROPIN"
	rmdir "$THPD_UNIT_DROPIN_DIR" 2>/dev/null || true
	timeout 60 systemctl daemon-reload
	if [ -e "$BATS_FILE_TMPDIR/thpd.conf.orig" ]; then
		cp -a "$BATS_FILE_TMPDIR/thpd.conf.orig" "$THPD_CONF_DIR/thpd.conf"
	fi
	systemctl reset-failed thpd.service thpd.socket 2>/dev/null || true
	thp_restore_knobs
	thpd_restart_if_was_active
}

# as the suite found it: running (with the installed configuration)
thpd_restart_if_was_active() {
	[ -e "$BATS_FILE_TMPDIR/thpd-was-active" ] || return 0
	timeout 120 systemctl start thpd.socket thpd.service ||
		echo "# thpd ran before this suite and does not start again" >&3
}

# per test: nothing running, no test configuration, no persisted state
thpd_reset() {
	thpd_stop
	rm -f "$THPD_DROPIN" "$THPD_STATE"
	: >"$THPD_CONF_DIR/thpd.conf"
	if [ -e "$THPD_UNIT_DROPIN" ]; then
		rm -f "$THPD_UNIT_DROPIN"
		timeout 60 systemctl daemon-reload
	fi
	systemctl reset-failed thpd.service thpd.socket 2>/dev/null || true
}

# thpd_setup [ENABLED]: the usual start of a test: thpd_reset, enabled
# ENABLED (default madvise) and defrag madvise
thpd_setup() {
	thpd_reset
	thp_set enabled "${1:-madvise}"
	thp_set defrag madvise
}

# systemctl's own bound is systemd's: TimeoutStartSec (90 s) and
# TimeoutStopSec (15 s) end a start or stop that hangs. 120 s for the
# client lets systemd say so; 60 s cut off a start that a stalled guest
# disk had held up 89 s (55's "collapse off" in a make check, thpd up
# and running a second later).
thpd_stop() {
	timeout 120 systemctl stop thpd.service thpd.socket || true
}

thpd_start() {
	timeout 120 systemctl start thpd.service || {
		journalctl -u thpd -n 30 --no-pager >&3
		fail "systemctl start thpd failed"
	}
}

thpd_pid() {
	systemctl show -p MainPID --value thpd.service
}

# thpd_conf FILE <<EOF ... : write a configuration file
thpd_conf() {
	cat >"$1"
}

# thpd_unit_dropin <<EOF ... : a runtime unit drop-in, gone at reboot
thpd_unit_dropin() {
	mkdir -p "$THPD_UNIT_DROPIN_DIR"
	cat >"$THPD_UNIT_DROPIN"
	timeout 60 systemctl daemon-reload
}

thpd_call() {
	timeout 70 "$THPD_CLIENT" "$@"
}

# a journal cursor to look at what happens after this point
journal_mark() {
	journalctl -n 0 --show-cursor --no-pager 2>/dev/null | sed -n 's/^-- cursor: //p'
}

# journal_since CURSOR [journalctl args...]: thpd's entries after CURSOR.
# --sync first: journald may not have written what thpd just sent.
journal_since() {
	local c=$1
	shift
	journalctl --sync 2>/dev/null || true
	journalctl --no-pager -q -u thpd.service --after-cursor="$c" "$@"
}

# journal_events CURSOR EVENT: thpd's entries with THPD_EVENT=EVENT after
# CURSOR, one JSON object a line. (journalctl --after-cursor combined with a
# field match returns nothing on systemd 252: filter the lines instead.)
# grep, not jq: journal_wait polls this, and jq 1.6 takes 0.5 s to start
# under TCG. journalctl -o json writes one object a line, and the text
# '"THPD_EVENT":"EVENT"' can only be that field: inside a string value its
# quotes would be escaped. (EVENT is a word with dashes: no regex in it.)
journal_events() {
	journal_since "$1" -o json | grep -E "\"THPD_EVENT\" ?: ?\"$2\"" || true
}

# journal_messages CURSOR EVENT: the MESSAGE= of those entries
journal_messages() {
	journal_events "$1" "$2" | jq -r .MESSAGE
}

journal_has() {
	journal_events "$1" "$2" | grep -q .
}

# journal_wait SECONDS CURSOR EVENT
journal_wait() {
	wait_until "$1" journal_has "$2" "$3"
}

# the documented capability set (thpd(8), SECURITY)
thpd_expected_capeff() {
	if [ -e /proc/self/thp_policy ]; then
		# CAP_DAC_OVERRIDE(1) CAP_NET_ADMIN(12) CAP_SYS_PTRACE(19) CAP_SYS_NICE(23)
		# CAP_SYS_RESOURCE(24)
		echo 0000000001881002
	else
		echo 0000000001000000
	fi
}

# the defaults for a suite that loads this file; its own override them
setup_file() {
	thpd_setup_file
}

teardown_file() {
	thpd_teardown_file
}

# Memory stalls on demand: a cgroup with memory.high 16M and no swap. A
# thp-touch beyond memory.high there cannot be reclaimed: it is throttled,
# which is a memory stall (PSI "some").
# pressure_start CGROUP SECONDS [THP-TOUCH ARG...]: in the background
# (STRESS), a thp-touch in CGROUP (made if missing), for at most SECONDS
pressure_start() {
	local cg=$1 secs=$2
	shift 2
	grep -qw memory /sys/fs/cgroup/cgroup.subtree_control ||
		echo +memory >/sys/fs/cgroup/cgroup.subtree_control
	mkdir -p "$cg"
	echo 16M >"$cg/memory.high"
	[ ! -e "$cg/memory.swap.max" ] || echo 0 >"$cg/memory.swap.max"
	# shellcheck disable=SC2016
	timeout "$secs" bash -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' _ \
		"$cg" "$THP_HELPERS/thp-touch" "$@" >/dev/null 2>&1 &
	STRESS=$!
}

# pressure_remove CGROUP: its processes killed, the cgroup removed (teardown)
pressure_remove() {
	[ -d "$1" ] || return 0
	while read -r p; do kill -9 "$p" 2>/dev/null; done <"$1/cgroup.procs"
	wait_until 10 rmdir "$1" || echo "# could not remove $1" >&3
}
