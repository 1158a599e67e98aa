#!/usr/bin/env bats
# Prepares the after-reboot check of thpd (reboot/50-thpd-persist.bats):
# sets `enabled` through thpd's socket (thpctl when installed), and on a
# kernel with per-size controls (6.8+) a size's enabled and shmem_enabled
# values, enables thpd.service and thpd.socket for the next boot and stops
# thpd again.
#
# Unlike the other thpd suites this one deliberately leaves two things
# behind for the second boot: the persisted state in /var/lib/thpd and the
# enabled units (plus a marker naming the expected mode). The after-reboot
# suite removes all of it. thpd is stopped and the knobs are restored here
# as usual, and thpd started again if it ran before (it then applies the
# persisted setting, as it will at the next boot). Numbered last of all
# suites so that no other one disturbs the state in between (80-package
# purges thpd, which removes /var/lib/thpd).

load helpers
load thpd

MARK_DIR=/var/lib/thp-stack-tests
MARK=$MARK_DIR/thpd-reboot-expected
# "file word" lines under $THP that the next boot must show (per-size kernels)
MARK_SIZES=$MARK_DIR/thpd-reboot-sizes

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

@test "persist per-size values through thpd: hugepages-64kB enabled=always (shmem_enabled=within_size), shmem_enabled=advise" {
	[ -e "$THP/hugepages-64kB/enabled" ] ||
		skip "no $THP/hugepages-64kB/enabled: this kernel has no per-size THP controls (6.8+)"
	local before64 before_shmem files=() f
	before64=$(thp_get hugepages-64kB/enabled)
	before_shmem=$(thp_get shmem_enabled)
	[ "$before64" != always ] || thp_set hugepages-64kB/enabled never
	before64=$(thp_get hugepages-64kB/enabled)
	[ "$before_shmem" != advise ] || thp_set shmem_enabled never
	before_shmem=$(thp_get shmem_enabled)
	thpd_start
	if command -v thpctl >/dev/null; then
		run -0 timeout 15 thpctl enable always --size 64K
		assert_output --partial "(set by thpd, which keeps it)"
		run -0 timeout 15 thpctl shmem advise
		assert_output --partial "(set by thpd, which keeps it)"
	else
		echo "# thpctl is not installed: using the raw protocol" >&3
		run -0 thpd_call '{"cmd":"enable","value":"always","size":"64K"}'
		run -0 thpd_call '{"cmd":"shmem","value":"advise"}'
	fi
	files=("hugepages-64kB/enabled always" "shmem_enabled advise")
	# per-size shmem_enabled came in 6.11
	if [ -e "$THP/hugepages-64kB/shmem_enabled" ]; then
		run -0 thpd_call '{"cmd":"shmem","value":"within_size","size":"64K"}'
		assert_output --partial '"ok":true'
		files+=("hugepages-64kB/shmem_enabled within_size")
	fi
	for f in "${files[@]}"; do
		assert_equal "${f%% *}=$(thp_get "${f%% *}")" "${f%% *}=${f#* }"
	done
	run -0 cat "$THPD_STATE"
	assert_output --partial '"shmem_enabled":"advise"'
	assert_output --partial '"64K":{"enabled":"always"'
	thpd_stop
	# stop restored the values from before thpd: the next boot starts from them
	assert_equal "$(thp_get hugepages-64kB/enabled)" "$before64"
	assert_equal "$(thp_get shmem_enabled)" "$before_shmem"
	mkdir -p "$MARK_DIR"
	printf '%s\n' "${files[@]}" >"$MARK_SIZES"
	sync
}
