#!/usr/bin/env bats
# Permissions across two users (root and nobody): /proc/<pid>/thp_stat and
# /proc/<pid>/thp_policy (docs/abi.md: read like smaps, write needs
# CAP_SYS_ADMIN and ptrace-attach over the target), thpd's socket (anyone
# may ping and status, changes need root or AdminGroup=), thpd's effective
# capabilities against the documented set, and the unit's
# `systemd-analyze security` exposure level (recorded in the TAP output).

load helpers

NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups --)
SOCK=/run/thpd.sock

setup_file() {
	thp_save_knobs
	if [ -x /usr/local/sbin/thpd ]; then
		systemctl -q is-active thpd.service && touch "$BATS_FILE_TMPDIR/thpd-was-active"
		systemctl reset-failed thpd.service 2>/dev/null || true
		systemctl start thpd.socket thpd.service
	fi
}

teardown_file() {
	if [ -x /usr/local/sbin/thpd ] && [ ! -e "$BATS_FILE_TMPDIR/thpd-was-active" ]; then
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

@test "thp_policy: another user can neither read nor write it; without CAP_SYS_ADMIN not even one's own" {
	[ -e /proc/self/thp_policy ] || skip "kernel without the thp-stack series: no /proc/<pid>/thp_policy"
	start_victims
	echo advise >"/proc/$VICTIM/thp_policy"
	run "${NOBODY[@]}" cat "/proc/$VICTIM/thp_policy"
	assert_failure
	assert_output --partial "Permission denied"
	run "${NOBODY[@]}" sh -c "echo never >/proc/$VICTIM/thp_policy"
	assert_failure
	[ "$(cat "/proc/$VICTIM/thp_policy")" = advise ] || fail "nobody changed root's policy"
	# its own: readable, but writing needs CAP_SYS_ADMIN (EPERM)
	run "${NOBODY[@]}" sh -c 'cat /proc/self/thp_policy; echo never >/proc/self/thp_policy'
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
	got=$(cat "/proc/$npid/thp_policy")
	grep -q '^THP_policy:[[:space:]]*never' "/proc/$npid/status" || { kill "$npid"; fail "status does not say THP_policy: never"; }
	kill "$npid"
	[ "$got" = never ] || fail "policy reads $got"
}

@test "thpd socket: mode 0666; nobody may ping and status, but not change anything (EPERM)" {
	[ -x /usr/local/sbin/thpd ] || skip "thpd is not installed"
	local cmd reply
	[ "$(stat -c %a "$SOCK")" = 666 ] || fail "$SOCK has mode $(stat -c %a "$SOCK")"
	thp_set enabled madvise
	run -0 "${NOBODY[@]}" "$THP_HELPERS/thpd-client" --socket "$SOCK" '{"cmd":"ping"}' '{"cmd":"status"}'
	[ "$(jq -rs 'map(.ok) | all' <<<"$output")" = true ] || fail "ping/status as nobody: $output"
	for cmd in '{"cmd":"enable","value":"always"}' '{"cmd":"enable","value":"2"}' \
		'{"cmd":"defrag","value":"never"}' '{"cmd":"reload"}'; do
		run "${NOBODY[@]}" "$THP_HELPERS/thpd-client" --socket "$SOCK" "$cmd"
		reply=${output##*$'\n'}
		[ "$(jq -r .ok <<<"$reply")" = false ] && [ "$(jq -r .errno <<<"$reply")" = 1 ] ||
			fail "$cmd as nobody: want ok=false errno=1 (EPERM), got $reply"
	done
	[ "$(thp_get enabled)" = madvise ] || fail "enabled changed to $(thp_get enabled)"
	# and thpctl, the way an administrator would try
	run "${NOBODY[@]}" thpctl enable always
	assert_failure
	[ "$(thp_get enabled)" = madvise ] || fail "thpctl as nobody changed enabled"
}

# capability names of a CapXxx hex mask
decode_caps() {
	capsh --decode="$1" | sed 's/^0x[0-9a-f]*=//'
}

@test "thpd's capabilities are exactly the documented set" {
	[ -x /usr/local/sbin/thpd ] || skip "thpd is not installed"
	local pid eff prm inh amb want want_names
	pid=$(systemctl show -p MainPID --value thpd.service)
	[ "$pid" -gt 0 ] || fail "thpd is not running"
	eff=$(awk '/^CapEff:/ { print $2 }' "/proc/$pid/status")
	prm=$(awk '/^CapPrm:/ { print $2 }' "/proc/$pid/status")
	inh=$(awk '/^CapInh:/ { print $2 }' "/proc/$pid/status")
	amb=$(awk '/^CapAmb:/ { print $2 }' "/proc/$pid/status")
	# thpd(8) SECURITY, thpd.service: CAP_SYS_RESOURCE; with the per-process
	# policy also CAP_SYS_ADMIN, CAP_SYS_PTRACE, CAP_NET_ADMIN
	if [ -e /proc/self/thp_policy ]; then
		want=$(printf '%016x' $(((1 << 24) | (1 << 21) | (1 << 19) | (1 << 12))))
		want_names="cap_net_admin,cap_sys_ptrace,cap_sys_admin,cap_sys_resource"
	else
		want=$(printf '%016x' $((1 << 24)))
		want_names="cap_sys_resource"
	fi
	echo "# thpd CapEff=$eff ($(decode_caps "0x$eff")) CapPrm=$prm CapInh=$inh CapAmb=$amb; documented: $want_names" >&3
	[ "$eff" = "$want" ] || fail "CapEff $eff ($(decode_caps "0x$eff")), documented $want ($want_names)"
	[ "$prm" = "$want" ] || fail "CapPrm $prm ($(decode_caps "0x$prm")), documented $want"
	[ "$inh" = 0000000000000000 ] || fail "CapInh $inh"
	[ "$amb" = 0000000000000000 ] || fail "CapAmb $amb"
	# the man page, once installed, names every one of them
	local man
	man=$(ls /usr/local/share/man/man8/thpd.8* 2>/dev/null | head -1)
	if [ -n "$man" ]; then
		local c text
		text=$(zcat -f "$man")
		for c in ${want_names//,/ }; do
			grep -qi "${c}" <<<"$text" || fail "thpd(8) does not document ${c^^}"
		done
	else
		echo "# thpd(8) is not installed: checked against thpd.service's documented set only" >&3
	fi
}

@test "systemd-analyze security thpd.service: exposure level recorded, not worse than MEDIUM" {
	[ -x /usr/local/sbin/thpd ] || skip "thpd is not installed"
	run -0 systemd-analyze security --no-pager thpd.service
	local line level
	line=$(grep 'Overall exposure level' <<<"$output")
	echo "# ${line}" >&3
	level=$(sed -n 's/.*thpd.service: *\([0-9.]*\).*/\1/p' <<<"$line")
	[ -n "$level" ] || fail "no exposure level in: $line"
	# 0-10; systemd rates < 5 as OK or MEDIUM
	awk -v l="$level" 'BEGIN { exit !(l < 5.0) }' || fail "exposure $level is EXPOSED or worse"
}
