#!/usr/bin/env bats
# thpctl unit under the guest's real systemd: the drop-in it writes, the
# daemon-reload, and what the service's process then has (PR_SET_THP_DISABLE
# as THP_enabled: in its status, glibc's tunable or the per-process policy),
# started from a unit of this suite's own. systemd 252 (Debian 12) has no
# MemoryTHP=, so this is the wrapper; MemoryTHP= is tested on the host with a
# scripted systemctl (tests/host/46-thpctl-unit.bats).

load helpers

UNIT=thp-unit-test.service
OUT=/run/thp-unit-test.out

setup_file() {
	thp_take_knobs
}

teardown_file() {
	rm -rf "/etc/systemd/system/$UNIT" "/etc/systemd/system/$UNIT.d" /usr/local/bin/thp-unit-test.sh "$OUT"
	systemctl daemon-reload || true
	thp_give_back_knobs
}

setup() {
	[ -e "$THP/enabled" ] || skip "kernel without THP"
	THPCTL=$(command -v thpctl) || fail "thpctl is not installed"
	unset GLIBC_TUNABLES THP_ROOT THPD_SOCKET
	# what the service's process has, written where the test reads it (on
	# the root file system: an initrd's /run is noexec)
	cat >/usr/local/bin/thp-unit-test.sh <<'EOF'
#!/bin/sh
{
	grep '^THP_enabled:' /proc/self/status
	echo "GLIBC_TUNABLES=${GLIBC_TUNABLES-}"
	[ -e /proc/self/thp_policy ] && echo "thp_policy=$(cat /proc/self/thp_policy)"
	echo "args=$*"
} >/run/thp-unit-test.out
EOF
	chmod 755 /usr/local/bin/thp-unit-test.sh
	printf '[Service]\nType=oneshot\nExecStart=-/usr/local/bin/thp-unit-test.sh "one arg" two\n' >"/etc/systemd/system/$UNIT"
	rm -rf "/etc/systemd/system/$UNIT.d" "$OUT"
	systemctl daemon-reload
}

# start the unit (oneshot: returns when it ran) and read what it wrote
start_unit() {
	rm -f "$OUT"
	run -0 timeout 60 systemctl start "$UNIT"
	run -0 cat "$OUT"
}

@test "unit never: the service's process starts with THP disabled; default gives it back" {
	grep -q '^THP_enabled:' /proc/self/status || skip "kernel without THP_enabled: in /proc/PID/status"
	thp_set enabled always
	start_unit
	assert_line --regexp '^THP_enabled:\s+1$'
	run -0 "$THPCTL" unit thp-unit-test never
	assert_output --partial 'through thpctl run --never -q in ExecStart='
	run -0 systemctl show -p ExecStart --value "$UNIT"
	assert_output --partial "argv[]=$(readlink -f "$THPCTL") run --never -q -- /usr/local/bin/thp-unit-test.sh one arg two"
	start_unit
	assert_line --regexp '^THP_enabled:\s+0$'
	assert_line 'args=one arg two'
	run -0 "$THPCTL" unit thp-unit-test default
	[ ! -e "/etc/systemd/system/$UNIT.d/thp.conf" ] || fail "drop-in still there"
	start_unit
	assert_line --regexp '^THP_enabled:\s+1$'
}

@test "unit advise: the policy (patched) or glibc's tunable (stock) in the service's process" {
	thp_set enabled madvise
	run -0 --separate-stderr "$THPCTL" unit thp-unit-test advise
	start_unit
	assert_line 'args=one arg two'
	if [ -e /proc/self/thp_policy ]; then
		assert_line 'thp_policy=advise'
		[ -z "$stderr" ] || fail "stderr: $stderr"
	else
		assert_line 'GLIBC_TUNABLES=glibc.malloc.hugetlb=1'
		[[ $stderr == *'covers only memory from malloc'* ]] || fail "stderr: $stderr"
	fi
	# with THP off: written, said not in effect, and the service still starts (-q)
	thp_set enabled never
	run -3 --separate-stderr "$THPCTL" unit thp-unit-test advise
	[[ $stderr == *'thp-unit-test.service would get no hugepages'* ]] || fail "stderr: $stderr"
	start_unit
	assert_line 'args=one arg two'
}

@test "unit: a later drop-in that resets ExecStart= is found, exit 3" {
	mkdir -p "/etc/systemd/system/$UNIT.d"
	printf '[Service]\nExecStart=\nExecStart=/usr/local/bin/thp-unit-test.sh local\n' >"/etc/systemd/system/$UNIT.d/zz-local.conf"
	run -3 --separate-stderr "$THPCTL" unit thp-unit-test never
	[[ $stderr == *'a drop-in read after thp.conf sets ExecStart= again'* ]] || fail "stderr: $stderr"
	[[ $stderr == *zz-local.conf* ]] || fail "stderr: $stderr"
}
