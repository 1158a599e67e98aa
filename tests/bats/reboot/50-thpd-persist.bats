#!/usr/bin/env bats
# After the reboot: thpd was started by systemd at boot and put back what
# was set through its socket before the reboot (99-thpd-reboot-prep.bats).
# Cleans up everything that suite left behind.

load ../helpers
load ../thpd

MARK=/var/lib/thp-stack-tests/thpd-reboot-expected
MARK_SIZES=/var/lib/thp-stack-tests/thpd-reboot-sizes

setup_file() {
	[ -e "$MARK" ] || skip "99-thpd-reboot-prep.bats did not run before the reboot"
	EXPECTED=$(<"$MARK")
	export EXPECTED
}

teardown_file() {
	timeout 60 systemctl disable --now thpd.service thpd.socket || true
	rm -f "$MARK" "$MARK_SIZES" "$THPD_STATE"
	rmdir /var/lib/thp-stack-tests 2>/dev/null || true
	systemctl reset-failed thpd.service thpd.socket 2>/dev/null || true
}

@test "thpd is active (running) after boot, started by systemd" {
	run -0 systemctl is-active thpd.service
	run -0 systemctl status thpd.service --no-pager
	assert_output --partial "active (running)"
	run -0 journalctl --no-pager -b -u thpd -o cat THPD_EVENT=started
	assert_output --partial "Mode from persisted state"
}

@test "the setting made through the socket before the reboot is back" {
	assert_equal "$(thp_get enabled)" "$EXPECTED"
	run -0 thpd_call '{"cmd":"status"}'
	assert_output --partial "\"persisted\":{\"enabled\":\"$EXPECTED\""
}

@test "the per-size and shmem values set through the socket before the reboot are back" {
	[ -e "$MARK_SIZES" ] ||
		skip "99-thpd-reboot-prep.bats persisted no per-size values (this kernel has no per-size THP controls)"
	local file want
	while read -r file want; do
		assert_equal "$file=$(thp_knob_value "$THP/$file")" "$file=$want"
	done <"$MARK_SIZES"
	run -0 thpd_call '{"cmd":"status"}'
	assert_output --partial '"shmem_enabled":"advise","sizes":{"64K":{"enabled":"always"'
}
