#!/usr/bin/env bats
# Prepares the after-reboot check of thpd (reboot/50-thpd-persist.bats):
# sets `enabled` through thpd's socket (thpctl when installed), enables
# thpd.service and thpd.socket for the next boot and stops thpd again.
#
# Unlike the other thpd suites this one deliberately leaves two things
# behind for the second boot: the persisted state in /var/lib/thpd and the
# enabled units (plus a marker naming the expected mode). The after-reboot
# suite removes all of it. thpd is stopped and the knobs are restored here
# as usual, and thpd started again if it ran before (it then applies the
# persisted setting, as it will at the next boot). Numbered last of the
# thpd range so that no other suite disturbs the state in between.

load helpers
load thpd

MARK_DIR=/var/lib/thp-stack-tests
MARK=$MARK_DIR/thpd-reboot-expected

setup_file() {
	thpd_setup_file
}

teardown_file() {
	thpd_stop
	if [ -e "$BATS_FILE_TMPDIR/thpd.conf.orig" ]; then
		cp -a "$BATS_FILE_TMPDIR/thpd.conf.orig" "$THPD_CONF_DIR/thpd.conf"
	fi
	systemctl reset-failed thpd.service thpd.socket 2>/dev/null || true
	thp_restore_knobs
	thpd_restart_if_was_active
}

@test "persist enabled=madvise through thpd and enable thpd for the next boot" {
	thp_set enabled always
	thpd_start
	if command -v thpctl >/dev/null; then
		run -0 timeout 15 thpctl enable madvise
	else
		echo "# thpctl is not installed: using the raw protocol" >&3
		run -0 thpd_call '{"cmd":"enable","value":"madvise"}'
	fi
	assert_equal "$(thp_get enabled)" madvise
	run -0 cat "$THPD_STATE"
	assert_output --partial '"enabled":"madvise"'
	run -0 timeout 60 systemctl enable thpd.service
	run -0 systemctl is-enabled thpd.service thpd.socket
	thpd_stop
	# stop restored the value from before thpd: the next boot starts from always
	assert_equal "$(thp_get enabled)" always
	mkdir -p "$MARK_DIR"
	echo madvise >"$MARK"
	sync
}
