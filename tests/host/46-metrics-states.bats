#!/usr/bin/env bats
# thpctl metrics in every state thpd can be in, on the build machine: a real
# thpd against a fake 6.12 tree (THP_ROOT) whose /proc/buddyinfo the test
# writes to make it step down and back up. promtool check metrics over the
# exposition of each state, and the shipped alert rules
# (systemd/thp-alerts.rules.yml) through promtool check rules and promtool
# test rules. The enabled x defrag pairs on each kernel generation are in
# 45-thpctl-metrics.bats; the same through node_exporter in the guest's
# 81-metrics.bats.

bats_require_minimum_version 1.5.0
load thpd-host
FIX=$BATS_TEST_DIRNAME/fixtures
SYS=sys/kernel/mm/transparent_hugepage
RULES=$BATS_TEST_DIRNAME/../../systemd/thp-alerts.rules.yml

setup() {
	[ -x "$THPD" ] || skip "no $THPD (run make first)"
	command -v promtool >/dev/null || skip "promtool (package prometheus) is not installed"
	THPCTL=$BUILD_DIR/thpctl
	R=$BATS_TEST_TMPDIR/root
	T=$R/$SYS
	GEN=6.12
	mkdir -p "$R/proc" "$BATS_TEST_TMPDIR/state" "$BATS_TEST_TMPDIR/run"
	cp -r "$FIX/$GEN/sys" "$R/"
	echo "BOOT_IMAGE=/vmlinuz root=/dev/sda1" >"$R/proc/cmdline"
	printf 'MemTotal:        2000000 kB\nAnonHugePages:      4096 kB\n' >"$R/proc/meminfo"
	printf 'thp_fault_alloc 12\nthp_fault_fallback 3\n' >"$R/proc/vmstat"
	free_blocks 64
	CONF=$BATS_TEST_TMPDIR/thpd.conf
	printf '[Adaptive]\nEnabled=yes\nMinFreeBlocks=8\nRecoverFreeBlocks=16\nCheckIntervalSec=0.1\nCalmSec=1\n' >"$CONF"
	thpd_sockdir
	PID=
}

teardown() {
	[ -z "$PID" ] || thpd_end || true
	rm -rf "$SOCKDIR"
}

# free_blocks N: /proc/buddyinfo showing N free order-9 blocks
free_blocks() {
	printf 'Node 0, zone   Normal      0      0      0      0      0      0      0      0      0 %6d      0\n' \
		"$1" >"$R/proc/buddyinfo"
}

# metrics_checked NAME: thpctl metrics as $output, accepted by promtool,
# kept as $BATS_TEST_TMPDIR/NAME.prom
metrics_checked() {
	local prom=$BATS_TEST_TMPDIR/$1.prom
	run -0 env THP_ROOT="$R" THPD_SOCKET="$SOCK" "$THPCTL" metrics
	printf '%s\n' "$output" >"$prom"
	run -0 promtool check metrics <"$prom"
	assert_output ''
	output=$(<"$prom")
	mapfile -t lines <"$prom"
}

metric() {
	awk -v k="$1" '$1 == k { print $2 }' <<<"$output"
}

# state_is WORD: thpd's adaptive state is WORD (the tree settled first: the
# status reads it)
state_is() {
	local st
	settle
	st=$(timeout 10 "$CLIENT" --socket "$SOCK" '{"cmd":"status"}') || return 1
	[ "$(jq -r .adaptive.state <<<"$st")" = "$1" ]
}

@test "promtool accepts the metrics in every thpd state: absent, installed and down, normal, stepped down, restored, stopped" {
	# no thpd at all
	metrics_checked absent
	assert_equal "$(metric thpd_installed)" 0
	refute_line --regexp '^thpd_up'

	# the unit is installed, thpd does not run
	mkdir -p "$R/lib/systemd/system"
	echo '[Service]' >"$R/lib/systemd/system/thpd.service"
	metrics_checked down
	assert_equal "$(metric thpd_installed)" 1
	assert_equal "$(metric thpd_up)" 0

	# normal, with an administrator's setting kept
	THP_ROOT=$R STATE_DIRECTORY=$BATS_TEST_TMPDIR/state RUNTIME_DIRECTORY=$BATS_TEST_TMPDIR/run \
		"$THPD" --config "$CONF" --socket "$SOCK" 2>"$BATS_TEST_TMPDIR/log" &
	PID=$!
	wait_until --pid "$PID" 10 state_is normal || fail "thpd did not come up: $(cat "$BATS_TEST_TMPDIR/log")"
	# (its reply reads the fake tree back before settle puts the brackets in)
	run -0 timeout 10 "$CLIENT" --socket "$SOCK" '{"cmd":"defrag","value":"madvise"}'
	settle
	run -0 cat "$BATS_TEST_TMPDIR/state/state"
	assert_output --partial '"defrag":"madvise"'
	metrics_checked normal
	assert_equal "$(metric thpd_up)" 1
	assert_equal "$(metric thpd_adaptive_enabled)" 1
	assert_equal "$(metric thpd_adaptive_stepped_down)" 0
	assert_equal "$(metric thpd_adaptive_switches_total)" 0
	assert_line 'thpd_persisted_info{enabled="",defrag="madvise"} 1'
	assert_line 'thp_mode_info{enabled="always",defrag="madvise",rfc_mode="1"} 1'
	assert_equal "$(metric thp_rfc_mode)" 1

	# stepped down: fragmentation; madvise/defer is no RFC mode
	free_blocks 0
	wait_until --pid "$PID" 30 state_is stepped-down || fail "thpd did not step down: $(cat "$BATS_TEST_TMPDIR/log")"
	metrics_checked stepped-down
	assert_equal "$(metric thpd_adaptive_stepped_down)" 1
	assert_equal "$(metric thpd_adaptive_switches_total)" 1
	assert_line 'thp_mode_info{enabled="madvise",defrag="defer",rfc_mode="custom"} 1'
	refute_line --regexp '^thp_rfc_mode '
	assert_line 'thp_size_anon_effective{size="2048kB",setting="madvise"} 1'

	# restored: blocks are back and it was calm
	free_blocks 64
	wait_until --pid "$PID" 30 state_is normal || fail "thpd did not step up: $(cat "$BATS_TEST_TMPDIR/log")"
	metrics_checked restored
	assert_equal "$(metric thpd_adaptive_stepped_down)" 0
	assert_equal "$(metric thpd_adaptive_switches_total)" 2
	assert_line 'thp_mode_info{enabled="always",defrag="madvise",rfc_mode="1"} 1'

	# stopped: thpd put the host's values back and is gone
	thpd_end
	settle
	metrics_checked stopped
	assert_equal "$(metric thpd_up)" 0
	refute_line --regexp '^thpd_adaptive'
	assert_line "thp_mode_info{enabled=\"$(word enabled)\",defrag=\"$(word defrag)\",rfc_mode=\"1\"} 1"
}

@test "the shipped alert rules: promtool check rules, and promtool test rules over each kind of host" {
	run -0 promtool check rules "$RULES"
	assert_output --partial 'SUCCESS: 5 rules found'
	# promtool test rules reads rule_files relative to the test file
	run -0 promtool test rules "$BATS_TEST_DIRNAME/thp-alerts.test.yml"
	assert_output --partial SUCCESS
	# every alert of the file is exercised
	run -0 grep -c '^      - alert: ' "$RULES"
	local n=$output
	run -0 awk '/alertname:/ { print $2 }' "$BATS_TEST_DIRNAME/thp-alerts.test.yml"
	assert_equal "$(sort -u <<<"$output" | wc -l)" "$n"
}
