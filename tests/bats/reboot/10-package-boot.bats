#!/usr/bin/env bats
# After the reboot: the thpd package installed in the first boot is still
# installed (the harness did not install it again), and thpd.service,
# enabled by the package's maintainer scripts, came up at boot by itself,
# before the harness started. Runs before 50-thpd-persist.bats, whose
# teardown disables thpd.

load ../helpers

@test "the package installed in the first boot is not installed again" {
	local btime installed
	run -0 dpkg-query -W -f='${db:Status-Status}' thpd
	assert_output installed
	btime=$(awk '$1 == "btime" { print $2 }' /proc/stat)
	installed=$(stat -c %Y /var/lib/dpkg/info/thpd.list)
	[ "$installed" -lt "$btime" ] ||
		fail "thpd's package was installed at $installed, after this boot began ($btime)"
}

@test "thpd.service, enabled by the package, came up at boot before the harness" {
	local thpd_up harness_start
	run -0 systemctl is-enabled thpd.service thpd.socket
	[ -e /var/lib/systemd/deb-systemd-helper-enabled/thpd.service.dsh-also ] ||
		fail "deb-systemd-helper has no record of enabling thpd.service"
	run -0 systemctl is-active thpd.service
	thpd_up=$(systemctl show -p ActiveEnterTimestampMonotonic --value thpd.service)
	harness_start=$(systemctl show -p ExecMainStartTimestampMonotonic --value thp-guest.service)
	[ "$thpd_up" -gt 0 ] && [ "$thpd_up" -lt "$harness_start" ] ||
		fail "thpd active at ${thpd_up} us, harness started at ${harness_start} us"
	assert_equal "$(systemctl show -p NRestarts --value thpd.service)" 0
	run -0 timeout 15 thpctl --json status
	[ "$(jq -c .thpd <<<"$output")" != null ] || fail "thpctl does not reach thpd: $output"
}
