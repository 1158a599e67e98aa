#!/usr/bin/env bats
# thpctl khugepaged: show and set khugepaged's settings, checked against
# what the kernel takes, straight to sysfs without thpd and through thpd
# (which persists them) when it runs; and thpd's replies naming an RFC mode
# only where the kernel has one. Against the THP layouts of each kernel
# generation (tests/host/fixtures), through THP_ROOT, with thpd run on the
# build machine as in the host suites 50 and 51.

bats_require_minimum_version 1.5.0
load thpd-host
load thpctl-gen

KH=$SYS/khugepaged

setup() {
	thpctl_env
	[ -x "$THPD" ] || skip "no $THPD (run make first)"
	R=$THP_ROOT
	STATE=$BATS_TEST_TMPDIR/state
	RUN=$BATS_TEST_TMPDIR/run
	CONF=$BATS_TEST_TMPDIR/thpd.conf
	mkdir -p "$STATE" "$RUN"
	: >"$CONF"
	thpd_sockdir
	PID=
}

teardown() {
	[ -z "$PID" ] || thpd_end || true
	rm -rf "$SOCKDIR"
}

kh() { cat "$THP_ROOT/$KH/$1"; }

start_thpd() {
	echo "BOOT_IMAGE=/vmlinuz root=/dev/sda1" >"$R/proc/cmdline"
	THP_ROOT=$R STATE_DIRECTORY=$STATE RUNTIME_DIRECTORY=$RUN \
		"$THPD" --config "$CONF" --socket "$SOCK" 2>>"$BATS_TEST_TMPDIR/log" &
	PID=$!
	wait_until --pid "$PID" 10 "$CLIENT" --socket "$SOCK" '{"cmd":"ping"}' ||
		fail "thpd did not come up: $(cat "$BATS_TEST_TMPDIR/log")"
	settle
}

# end thpd; what it wrote back reads as the kernel shows it
stop_thpd() {
	thpd_end
	settle
}

@test "khugepaged show: every setting and counter the kernel has, as text and as JSON" {
	local g f
	for g in $GENERATIONS; do
		use_gen "$g"
		run -0 --separate-stderr "$THPCTL" khugepaged --json
		for f in "$THP_ROOT/$KH"/*; do
			jq -e --arg k "${f##*/}" --argjson v "$(<"$f")" '.[$k] == $v' <<<"$output" ||
				fail "$g: ${f##*/}: $output"
		done
		jq -e "length == $(ls "$THP_ROOT/$KH" | wc -l)" <<<"$output" || fail "$g: $output"
		run -0 "$THPCTL" khugepaged show
		assert_line --regexp '^pages_to_scan: +4096$'
		assert_line --regexp '^max_ptes_shared: +256$'
	done
}

@test "khugepaged set without thpd: checked, written to sysfs, said so" {
	use_gen 6.12
	run -0 --separate-stderr "$THPCTL" khugepaged set pages_to_scan=8192 scan_sleep_millisecs=1000 max_ptes_none=0
	assert_output 'pages_to_scan=8192 scan_sleep_millisecs=1000 max_ptes_none=0 (written to sysfs: thpd is not running, so this lasts until reboot)'
	assert_equal "$stderr" ""
	assert_equal "$(kh pages_to_scan) $(kh scan_sleep_millisecs) $(kh max_ptes_none)" "8192 1000 0"
	# the largest the kernel takes: one less than the pages of a PMD
	run -0 "$THPCTL" khugepaged set max_ptes_none=511 max_ptes_swap=511 max_ptes_shared=511 defrag=0
	assert_equal "$(kh max_ptes_swap) $(kh defrag)" "511 0"
}

@test "khugepaged set: what the kernel would refuse is a usage error, and nothing is written" {
	local bad
	use_gen 6.12
	for bad in max_ptes_none=512 pages_to_scan=0 defrag=2 scan_sleep_millisecs=4294967296 \
		pages_to_scan=-1 pages_to_scan=abc pages_to_scan= 'pages_to_scan=1 ' pages_to_scan=0x10; do
		run -2 --separate-stderr "$THPCTL" khugepaged set max_ptes_swap=1 "$bad"
		[[ $stderr == *'takes a whole number from '*" not '${bad#*=}'"* ]] || fail "$bad: stderr: $stderr"
	done
	run -2 "$THPCTL" khugepaged set sleep=5
	assert_output --partial "unknown setting in 'sleep=5' (expected KEY=VALUE, KEY one of defrag, pages_to_scan"
	run -2 "$THPCTL" khugepaged set full_scans=1
	assert_output --partial 'full_scans is a counter, not a setting'
	run -2 "$THPCTL" khugepaged set pages_to_scan
	assert_output --partial "not a setting: 'pages_to_scan'"
	run -2 "$THPCTL" khugepaged set pages_to_scan=1 pages_to_scan=2
	assert_output --partial 'pages_to_scan given twice'
	run -2 "$THPCTL" khugepaged set
	assert_output --partial 'expected KEY=VALUE'
	run -2 "$THPCTL" khugepaged frob
	assert_output --partial "unknown action 'frob' (expected show or set)"
	run -0 diff -r "$FIX/6.12/$KH" "$THP_ROOT/$KH"
}

@test "khugepaged set: a write that fails puts back what was written before it (exit 1)" {
	use_gen 6.12
	# readable, and root cannot write it: a 0444 sysctl
	[ -r /proc/sys/kernel/ngroups_max ] || skip "no /proc/sys/kernel/ngroups_max"
	ln -sf /proc/sys/kernel/ngroups_max "$THP_ROOT/$KH/max_ptes_shared"
	run -1 --separate-stderr "$THPCTL" khugepaged set pages_to_scan=100 max_ptes_shared=5
	[[ $stderr == *"failed to write 5 to $THP_ROOT/$SYS/khugepaged/max_ptes_shared: Permission denied"* ]] ||
		fail "stderr: $stderr"
	assert_equal "$output" ""
	assert_equal "$(kh pages_to_scan)" 4096
	# a setting this kernel lacks: said, nothing written
	rm "$THP_ROOT/$KH/max_ptes_shared"
	run -1 "$THPCTL" khugepaged set pages_to_scan=100 max_ptes_shared=5
	assert_output --partial "this kernel has no $THP_ROOT/$SYS/khugepaged/max_ptes_shared"
	assert_equal "$(kh pages_to_scan)" 4096
	run -0 "$THPCTL" khugepaged set help
	refute_line max_ptes_shared
	assert_line pages_to_scan
}

@test "khugepaged set while khugepaged cannot run: written, nothing on stdout, exit 3" {
	local g
	for g in $GENERATIONS; do
		use_gen "$g"
		put enabled never
		put shmem_enabled never
		run -3 --separate-stderr "$THPCTL" khugepaged set pages_to_scan=64
		assert_equal "$output" ""
		assert_equal "$(kh pages_to_scan)" 64
		[[ $stderr == *'khugepaged is not running'* ]] || fail "$g: stderr: $stderr"
	done
}

@test "khugepaged set through thpd: persisted, applied at the next start, the host's own back on stop" {
	use_gen 6.12
	start_thpd
	run -0 --separate-stderr env THPD_SOCKET="$SOCK" timeout 10 "$THPCTL" khugepaged set pages_to_scan=8192 max_ptes_swap=10
	assert_output 'pages_to_scan=8192 max_ptes_swap=10 (set by thpd, which keeps it)'
	assert_equal "$(kh pages_to_scan) $(kh max_ptes_swap)" "8192 10"
	run -0 cat "$STATE/state"
	assert_output --partial '"khugepaged":{"pages_to_scan":8192,"max_ptes_swap":10}'
	run -0 env THPD_SOCKET="$SOCK" timeout 10 "$THPCTL" status
	assert_line --regexp '^thpd: +running \([^)]*\), normal; keeps khugepaged.pages_to_scan=8192 khugepaged.max_ptes_swap=10$'
	# thpd checks too, and says what it refused (error replies, exit 0)
	run -0 timeout 10 "$CLIENT" --socket "$SOCK" '{"cmd":"khugepaged","set":{"max_ptes_none":600}}'
	assert_output --partial 'max_ptes_none takes 0 to 511, not 600; nothing was changed'
	run -0 timeout 10 "$CLIENT" --socket "$SOCK" '{"cmd":"khugepaged","set":{"full_scans":1}}'
	assert_output --partial "unknown khugepaged setting 'full_scans'"
	run -0 timeout 10 "$CLIENT" --socket "$SOCK" '{"cmd":"khugepaged","set":{"pages_to_scan":"8"}}'
	assert_output --partial 'needs a number'
	run -0 timeout 10 "$CLIENT" --socket "$SOCK" '{"cmd":"khugepaged","value":"8"}'
	assert_output --partial 'unexpected member'
	if command -v setpriv >/dev/null; then
		run -0 setpriv --reuid=65534 --regid=65534 --clear-groups timeout 10 "$CLIENT" --socket "$SOCK" \
			'{"cmd":"khugepaged","set":{"pages_to_scan":1}}'
		assert_output --partial "permission denied: 'khugepaged' needs root"
	fi
	assert_equal "$(kh pages_to_scan) $(kh max_ptes_none)" "8192 511"
	# stop: the host's own values back; start: thpd's again
	stop_thpd
	assert_equal "$(kh pages_to_scan) $(kh max_ptes_swap)" "4096 64"
	start_thpd
	assert_equal "$(kh pages_to_scan) $(kh max_ptes_swap)" "8192 10"
	# over the configuration's value, as enable's are
	stop_thpd
	printf '[Global]\nKhugepagedPagesToScan=2048\nKhugepagedMaxPtesShared=100\n' >"$CONF"
	start_thpd
	assert_equal "$(kh pages_to_scan) $(kh max_ptes_shared)" "8192 100"
}

@test "thpd's replies: the RFC mode as a number where the kernel has one, absent elsewhere" {
	use_gen 6.12
	start_thpd
	run -0 timeout 10 "$CLIENT" --socket "$SOCK" '{"cmd":"status"}'
	assert_output --partial '"enabled":"always","defrag":"madvise","version":'
	refute_output --partial '"mode"'
	stop_thpd
	use_gen 6.1-patched
	start_thpd
	run -0 timeout 10 "$CLIENT" --socket "$SOCK" '{"cmd":"status"}'
	assert_output --partial '"defrag":"madvise","mode":1,'
	# thpctl status shows thpd's under --all with its meaning
	run -0 env THPD_SOCKET="$SOCK" timeout 10 "$THPCTL" status --all
	assert_line --regexp '^ +rfc mode: +1 \(hugepages at fault when one is free, compaction only for MADV_HUGEPAGE regions\)$'
}

@test "khugepaged set through thpd: part of its target (persisted state), verified, forgotten by reset" {
	use_gen 6.12
	printf '[Global]\nKhugepagedPagesToScan=2048\n' >"$CONF"
	start_thpd
	assert_equal "$(kh pages_to_scan)" 2048
	run -0 env THPD_SOCKET="$SOCK" timeout 10 "$THPCTL" khugepaged set pages_to_scan=8192 max_ptes_swap=10
	run -0 timeout 10 "$CLIENT" --socket "$SOCK" '{"cmd":"status"}'
	assert_equal "$(jq -c '.target["khugepaged/pages_to_scan"]' <<<"$output")" \
		'{"value":8192,"source":"persisted state"}'
	assert_equal "$(jq -c '.target["khugepaged/max_ptes_swap"]' <<<"$output")" \
		'{"value":10,"source":"persisted state"}'
	# what sysfs holds is the target: no drift; a write behind thpd's back is drift
	run -0 env THPD_SOCKET="$SOCK" timeout 10 "$THPCTL" verify
	assert_line --regexp '^khugepaged/pages_to_scan +8192 +8192 +persisted state +ok$'
	echo 100 >"$THP_ROOT/$KH/pages_to_scan"
	run -3 env THPD_SOCKET="$SOCK" timeout 10 "$THPCTL" verify
	assert_line --regexp '^khugepaged/pages_to_scan +8192 +100 +persisted state +DRIFT$'
	# reset: the configuration's value, and the host's own where none is configured
	run -0 env THPD_SOCKET="$SOCK" timeout 10 "$THPCTL" reset
	assert_equal "$(kh pages_to_scan) $(kh max_ptes_swap)" "2048 64"
	run -0 timeout 10 "$CLIENT" --socket "$SOCK" '{"cmd":"status"}'
	assert_equal "$(jq -c '.target["khugepaged/pages_to_scan"].source' <<<"$output")" '"configuration"'
	assert_equal "$(jq -c .persisted <<<"$output")" null
}
