#!/usr/bin/env bats
# thpd as a systemd service: start with the configuration applied, restore
# on stop, crash and watchdog restarts, socket activation, least privilege.

load helpers
load thpd

setup() {
	thpd_setup
}

@test "start: active (running) with the configuration applied" {
	local before
	before=$(<"$THP/khugepaged/pages_to_scan")
	thpd_conf "$THPD_CONF_DIR/thpd.conf" <<-EOF
		[Global]
		Mode=always
		Defrag=defer
		KhugepagedPagesToScan=1234
	EOF
	local mark
	mark=$(journal_mark)
	thpd_start
	run -0 systemctl status thpd.service --no-pager
	assert_output --partial "active (running)"
	assert_equal "$(thp_get enabled)" always
	assert_equal "$(thp_get defrag)" defer
	assert_equal "$(<"$THP/khugepaged/pages_to_scan")" 1234
	run -0 journal_messages "$mark" started
	assert_output --partial "enabled=always defrag=defer"
	[ "$before" != 1234 ] || skip "pages_to_scan was already 1234"
}

@test "stop restores what thpd changed (RestoreOnStop=yes, the default)" {
	local before
	before=$(<"$THP/khugepaged/pages_to_scan")
	thpd_conf "$THPD_CONF_DIR/thpd.conf" <<-EOF
		[Global]
		Mode=never
		Defrag=never
		KhugepagedPagesToScan=777
	EOF
	thpd_start
	assert_equal "$(thp_get enabled)" never
	thpd_stop
	assert_equal "$(thp_get enabled)" madvise
	assert_equal "$(thp_get defrag)" madvise
	assert_equal "$(<"$THP/khugepaged/pages_to_scan")" "$before"
}

@test "RestoreOnStop=no leaves the settings in place" {
	thpd_conf "$THPD_CONF_DIR/thpd.conf" <<-EOF
		[Global]
		Mode=never
		RestoreOnStop=no
	EOF
	thpd_start
	thpd_stop
	assert_equal "$(thp_get enabled)" never
}

@test "kill -9: systemd restarts thpd, the state is back, stop still restores the original" {
	thpd_conf "$THPD_CONF_DIR/thpd.conf" <<-EOF
		[Global]
		Mode=always
	EOF
	thpd_start
	run -0 thpd_call '{"cmd":"enable","value":"never"}'
	assert_output --partial '"enabled":"never"'
	local pid
	pid=$(thpd_pid)
	kill -9 "$pid"
	# RestartSec=1s; TCG is slow: allow 30 s
	wait_until 30 bash -c "[ \"\$(systemctl show -p MainPID --value thpd)\" != $pid ] && [ \"\$(systemctl show -p MainPID --value thpd)\" != 0 ] && systemctl is-active -q thpd" ||
		fail "thpd was not restarted after kill -9 (MainPID $(thpd_pid))"
	run -0 systemctl show -p NRestarts --value thpd
	[ "$output" -ge 1 ] || fail "NRestarts=$output"
	assert_equal "$(thp_get enabled)" never
	run -0 thpd_call '{"cmd":"status"}'
	assert_output --partial '"persisted":{"enabled":"never"'
	# the original from before the first start survived the crash
	thpd_stop
	assert_equal "$(thp_get enabled)" madvise
}

# (5 s, as below: at 3 s a stalled vCPU could miss a ping, and the restart
# come before the kill)
@test "kill -STOP: the watchdog restarts thpd" {
	thpd_unit_dropin <<-EOF
		[Service]
		WatchdogSec=5s
		TimeoutAbortSec=5s
	EOF
	thpd_start
	local pid mark
	pid=$(thpd_pid)
	mark=$(journal_mark)
	kill -STOP "$pid"
	wait_until 60 bash -c "p=\$(systemctl show -p MainPID --value thpd); [ \"\$p\" != $pid ] && [ \"\$p\" != 0 ] && systemctl is-active -q thpd" ||
		{ kill -CONT "$pid" 2>/dev/null; fail "the watchdog did not restart thpd (MainPID $(thpd_pid))"; }
	run -0 journal_since "$mark" -o cat
	assert_output --regexp "[Ww]atchdog timeout"
}

# thpd pings between a half and three quarters of the period (tick.c): at
# 2 s that left half a second for a guest with one vCPU on a loaded host,
# where the vCPU can stop that long; at 5 s, 1.25 s. Twelve seconds are
# still more than two periods.
@test "the watchdog is fed while thpd idles" {
	thpd_unit_dropin <<-EOF
		[Service]
		WatchdogSec=5s
	EOF
	thpd_start
	local pid
	pid=$(thpd_pid)
	sleep 12
	assert_equal "$(thpd_pid)" "$pid"
	run -0 systemctl show -p NRestarts --value thpd
	assert_output 0
}

@test "CapEff and CapPrm are the documented set, CapBnd the unit's; nothing inheritable or ambient" {
	thpd_start
	local pid want
	pid=$(thpd_pid)
	want=$(thpd_expected_capeff)
	run -0 grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):' "/proc/$pid/status"
	assert_line "CapEff:	$want"
	assert_line "CapPrm:	$want"
	# the unit's CapabilityBoundingSet= (without CAP_SETPCAP thpd cannot
	# shrink it further; it never executes anything, NoNewPrivs is set)
	assert_line "CapBnd:	0000000001881002"
	assert_line "CapInh:	0000000000000000"
	assert_line "CapAmb:	0000000000000000"
	assert_line "NoNewPrivs:	1"
	run -0 capsh --decode="$want"
	echo "# thpd CapEff: $output" >&3
}

@test "thpd.socket: a connection starts thpd (socket activation)" {
	local mark
	mark=$(journal_mark)
	timeout 60 systemctl start thpd.socket
	run ! systemctl is-active -q thpd.service
	# the reply waits for thpd's whole start (seconds under TCG): no 5 s limit
	run -0 thpd_call --timeout-ms 60000 '{"cmd":"ping"}'
	assert_output --partial '"ok":true'
	run -0 systemctl is-active thpd.service
	# this start used the socket systemd gave it (its own lines: earlier
	# starts in this file logged the same)
	run -0 journal_since "$mark" -o cat
	refute_output --partial "Cannot listen"
	assert_output --partial "(thpd.socket)"
}

@test "READY=1 comes after the self-check: an unwritable sysfs fails the start" {
	thpd_unit_dropin <<-EOF
		[Service]
		ReadOnlyPaths=/sys/kernel/mm/transparent_hugepage
	EOF
	local mark
	mark=$(journal_mark)
	run timeout 60 systemctl start thpd.service
	assert_failure
	run -0 journal_since "$mark" -o cat
	assert_output --partial "Cannot write /sys/kernel/mm/transparent_hugepage/enabled"
	assert_equal "$(thp_get enabled)" madvise
}
