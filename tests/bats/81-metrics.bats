#!/usr/bin/env bats
# THP metrics the way a fleet collects them: the thpctl package's timer and
# service write thpctl metrics into node_exporter's textfile directory, the
# real prometheus-node-exporter (Debian's package, in the image) serves them
# on :9100, a scrape finds the values sysfs and procfs hold, and promtool
# (Debian's prometheus package) accepts the exposition. The scrape and the
# promtool verdict are saved in the results ($THP_RESULTS/metrics.*).

load helpers
load hold
load size-metrics

TEXTFILE=/var/lib/prometheus/node-exporter/thp.prom
SCRAPE_URL=http://localhost:9100/metrics

setup_file() {
	command -v prometheus-node-exporter >/dev/null || skip "prometheus-node-exporter is not in the image"
	command -v thpctl >/dev/null || skip "thpctl is not installed"
	thp_save_knobs
	systemctl -q is-active prometheus-node-exporter.service ||
		touch "$BATS_FILE_TMPDIR/stop-exporter"
	timeout 60 systemctl start prometheus-node-exporter.service
	# the exporter listens once it has started its collectors
	wait_until 60 curl -sf --max-time 5 -o /dev/null "$SCRAPE_URL" ||
		echo "# prometheus-node-exporter does not answer on $SCRAPE_URL" >&3
}

teardown_file() {
	hold_kill
	timeout 60 systemctl disable --now thpctl-metrics.timer 2>/dev/null || true
	rm -f "$TEXTFILE"
	[ -e "$BATS_FILE_TMPDIR/stop-exporter" ] &&
		timeout 60 systemctl stop prometheus-node-exporter.service
	thp_restore_knobs
	return 0
}

teardown() {
	hold_kill
	# a test that changed thpd's configuration puts it back
	if [ -e "$BATS_TEST_TMPDIR/thpd.conf.orig" ]; then
		cp -a "$BATS_TEST_TMPDIR/thpd.conf.orig" /etc/thpd/thpd.conf
		timeout 60 systemctl start thpd.socket || true
		timeout 60 systemctl restart thpd.service || true
	fi
}

# promtool_ok NAME: thpctl metrics, saved as $THP_RESULTS/metrics.NAME.prom,
# accepted by promtool with no finding; $output is the exposition
promtool_ok() {
	local prom=$THP_RESULTS/metrics.$1.prom
	run -0 timeout 60 thpctl metrics
	printf '%s\n' "$output" >"$prom"
	run -0 timeout 60 promtool check metrics <"$prom"
	assert_output ''
	run -0 cat "$prom"
}

# thpd_state_is WORD: thpd's adaptive state
thpd_state_is() {
	[ "$(timeout 15 thpctl --json status | jq -r .thpd.adaptive.state)" = "$1" ]
}

# textfile_changed STAMP: thp.prom is no longer the file of STAMP
textfile_changed() {
	[ "$(stat -c %Y.%y "$TEXTFILE")" != "$1" ]
}

scrape() {
	curl -sf --max-time 30 "$SCRAPE_URL"
}

# value NAME{LABELS} TEXT: the sample's value in TEXT, as an integer
# (node_exporter writes 25165824 as 2.5165824e+07)
value() {
	awk -v k="$1" '$1 == k { printf "%d\n", $2 }' <<<"$2"
}

@test "the package's service writes thp.prom atomically; its timer refreshes it" {
	run -0 systemctl cat thpctl-metrics.service
	assert_output --partial "ExecStart=/usr/bin/thpctl metrics --output=$TEXTFILE"
	rm -f "$TEXTFILE"
	run -0 timeout 60 systemctl start thpctl-metrics.service
	[ -s "$TEXTFILE" ] || fail "the service wrote nothing to $TEXTFILE"
	assert_equal "$(stat -c '%a %U' "$TEXTFILE")" "644 root"
	# nothing but the file itself: the temporary file was renamed
	run -0 ls /var/lib/prometheus/node-exporter
	assert_output thp.prom
	run -0 grep -c '^# TYPE ' "$TEXTFILE"
	[ "$output" -gt 20 ] || fail "only $output families in $TEXTFILE"

	local m0
	m0=$(stat -c %Y.%y "$TEXTFILE")
	run -0 timeout 60 systemctl enable --now thpctl-metrics.timer
	run -0 systemctl is-active thpctl-metrics.timer
	# OnUnitActiveSec=15s: a second write within two minutes (four times
	# the period: thpctl's own run takes seconds under TCG)
	wait_until 120 textfile_changed "$m0" || fail "the timer did not rewrite $TEXTFILE within 120 s"
	run -0 timeout 60 systemctl disable --now thpctl-metrics.timer
}

@test "node_exporter serves the THP metrics with the values sysfs and procfs hold" {
	local before after s fa enabled defrag
	thp_set enabled madvise
	echo 3 >/proc/sys/vm/drop_caches
	echo 1 >/proc/sys/vm/compact_memory
	hold_start "$THP_HELPERS/thp-touch" --size 8 --madvise --hold
	[ "$(hold_value anon_huge_kib)" -eq 8192 ] || skip "no free hugepages for the 8 MiB region"

	before=$(vmstat thp_fault_alloc)
	run -0 timeout 60 systemctl start thpctl-metrics.service
	s=$(scrape) || fail "no scrape from $SCRAPE_URL"
	after=$(vmstat thp_fault_alloc)
	printf '%s\n' "$s" >"$THP_RESULTS/metrics.scrape"

	# node_exporter read the file without error
	assert_equal "$(value node_textfile_scrape_error "$s")" 0
	grep -q '^node_textfile_mtime_seconds{file=".*thp.prom"}' <<<"$s" ||
		fail "node_exporter does not list thp.prom"

	enabled=$(thp_get enabled)
	defrag=$(thp_get defrag)
	assert_equal "$(value "thp_enabled{setting=\"$enabled\"}" "$s")" 1
	for w in always madvise never; do
		[ "$w" = "$enabled" ] || assert_equal "$(value "thp_enabled{setting=\"$w\"}" "$s")" 0
	done
	assert_equal "$(value "thp_defrag{setting=\"$defrag\"}" "$s")" 1
	if [ -e "$THP/mode" ]; then
		assert_equal "$(value thp_rfc_mode "$s")" "$(<"$THP/mode")"
	fi
	assert_equal "$(value thp_khugepaged_pages_to_scan "$s")" "$(<"$THP/khugepaged/pages_to_scan")"
	fa=$(value thp_fault_alloc_total "$s")
	[ "$fa" -ge "$before" ] && [ "$fa" -le "$after" ] ||
		fail "thp_fault_alloc_total $fa, /proc/vmstat $before before and $after after"
	# the held 8 MiB are in AnonHugePages while it holds them
	[ "$(value thp_anon_huge_bytes "$s")" -ge $((8 << 20)) ] ||
		fail "thp_anon_huge_bytes $(value thp_anon_huge_bytes "$s") < 8 MiB"
	[ -n "$(value thp_free_hugepage_blocks "$s")" ] || fail "no thp_free_hugepage_blocks"
	# thpd runs (the package started it): its state is in the scrape
	assert_equal "$(value thpd_up "$s")" 1
	grep -q "^thpd_info{version=\"$(dpkg-query -W -f='${Version}' thpd)\"} 1$" <<<"$s" ||
		fail "no thpd_info with the package's version"
	run -0 timeout 15 thpctl --json status
	assert_equal "$(value thpd_rules_applied_total "$s")" "$(jq .thpd.rules_applied <<<"$output")"
	hold_finish
}

@test "per-size settings and stats/ counters are the values of each hugepages-<N>kB" {
	compgen -G "$THP/hugepages-*kB" >/dev/null ||
		skip "kernel without per-size THP controls (no $THP/hugepages-<N>kB: before 6.8)"
	local d=$BATS_TEST_TMPDIR s
	size_metrics_expected "$THP" >"$d/before"
	run -0 timeout 60 thpctl metrics
	printf '%s\n' "$output" >"$d/thp.prom"
	size_metrics_expected "$THP" >"$d/after"
	cp "$d/thp.prom" "$THP_RESULTS/metrics.per-size.prom"
	run -0 size_metrics_check "$d/before" "$d/after" "$d/thp.prom"
	echo "# $(grep -c . "$d/before") per-size samples checked against $THP" >&3
	# node_exporter serves the same families from the textfile
	run -0 timeout 60 systemctl start thpctl-metrics.service
	s=$(scrape) || fail "no scrape from $SCRAPE_URL"
	for f in thp_size_enabled thp_size_anon_effective thp_size_anon_fault_alloc_total thp_size_nr_anon; do
		grep -q "^# TYPE $f " <<<"$s" || fail "the scrape has no $f family"
	done
	assert_equal "$(value 'thp_size_enabled{setting="inherit",size="2048kB"}' "$s")" \
		"$(grep -q '\[inherit\]' "$THP/hugepages-2048kB/enabled" && echo 1 || echo 0)"
}

@test "promtool check metrics accepts thpctl metrics and the scraped THP families" {
	command -v promtool >/dev/null || skip "promtool (package prometheus) is not in the image"
	run -0 timeout 60 thpctl metrics
	printf '%s\n' "$output" >"$BATS_TEST_TMPDIR/thp.prom"
	run -0 timeout 60 promtool check metrics <"$BATS_TEST_TMPDIR/thp.prom"
	assert_output ''
	# as node_exporter re-exposes them
	s=$(scrape) || fail "no scrape from $SCRAPE_URL"
	grep -E '^(# (HELP|TYPE) )?thpd?_' <<<"$s" >"$BATS_TEST_TMPDIR/scraped.prom"
	[ "$(grep -c '^# TYPE' "$BATS_TEST_TMPDIR/scraped.prom")" -gt 20 ] ||
		fail "the scrape has few THP families: $(head "$BATS_TEST_TMPDIR/scraped.prom")"
	run -0 timeout 60 promtool check metrics <"$BATS_TEST_TMPDIR/scraped.prom"
	assert_output ''
	{
		echo "promtool check metrics: exit 0, no findings"
		promtool --version 2>&1 | head -1
	} >"$THP_RESULTS/metrics.promtool"
}

@test "promtool accepts the metrics for every enabled x defrag pair this kernel takes; the mode is labels" {
	command -v promtool >/dev/null || skip "promtool (package prometheus) is not in the image"
	local e d n=0 mode
	for e in always madvise never; do
		for d in always defer defer+madvise madvise never; do
			thp_set enabled "$e"
			thp_set defrag "$d"
			promtool_ok "pair"
			mode=$(awk -F'"' '/^thp_mode_info\{/ { print $6 }' <<<"$output")
			assert_line "thp_mode_info{enabled=\"$e\",defrag=\"$d\",rfc_mode=\"$mode\"} 1"
			[ ! -e "$THP/mode" ] || assert_equal "$e/$d: $mode" "$e/$d: $(<"$THP/mode")"
			case $mode in
			custom) refute_line --regexp '^thp_rfc_mode ' ;;
			never) assert_line 'thp_rfc_mode -1' ;;
			*) assert_line "thp_rfc_mode $mode" ;;
			esac
			n=$((n + 1))
		done
	done
	assert_equal "$n" 15
}

@test "promtool accepts the metrics in each thpd state: normal, stepped down, stopped and restored" {
	command -v promtool >/dev/null || skip "promtool (package prometheus) is not in the image"
	[ -x /usr/sbin/thpd ] || skip "thpd is not installed"
	cp -a /etc/thpd/thpd.conf "$BATS_TEST_TMPDIR/thpd.conf.orig"
	thp_set enabled always
	thp_set defrag madvise
	# no guest has a million free 2 MiB blocks: thpd steps down at once
	printf '[Global]\nMode=always\n[Adaptive]\nEnabled=yes\nMinFreeBlocks=0\nCalmSec=1\nCheckIntervalSec=1\n' \
		>/etc/thpd/thpd.conf
	run -0 timeout 60 systemctl restart thpd.service
	wait_until 30 thpd_state_is normal || fail "thpd is not in its normal state"
	promtool_ok thpd-normal
	assert_line 'thpd_up 1'
	assert_line 'thpd_adaptive_stepped_down 0'
	assert_line 'thp_mode_info{enabled="always",defrag="madvise",rfc_mode="1"} 1'

	sed -i 's/^MinFreeBlocks=.*/MinFreeBlocks=1000000/' /etc/thpd/thpd.conf
	run -0 timeout 60 systemctl reload thpd.service
	wait_until 60 thpd_state_is stepped-down || fail "thpd did not step down"
	promtool_ok thpd-stepped-down
	assert_line 'thpd_adaptive_stepped_down 1'
	# thpd's step-down pair has no RFC number: a label, never a value
	assert_line 'thp_mode_info{enabled="madvise",defrag="defer",rfc_mode="custom"} 1'
	refute_line --regexp '^thp_rfc_mode '

	# stopped: thpd restores the host's values and is gone (the step-up on
	# calm is host suite 46's; a reload is thpd's model of normal, 5x)
	# (the socket too: a connection to it would start thpd again)
	run -0 timeout 60 systemctl stop thpd.service thpd.socket
	promtool_ok thpd-restored
	assert_line 'thpd_up 0'
	refute_line --regexp '^thpd_adaptive'
	assert_line 'thp_mode_info{enabled="always",defrag="madvise",rfc_mode="1"} 1'
}

@test "the package's example alert rules pass promtool check rules" {
	command -v promtool >/dev/null || skip "promtool (package prometheus) is not in the image"
	local rules=/usr/share/doc/thpctl/examples/thp-alerts.rules.yml
	run -0 dpkg -L thpctl
	assert_line "$rules"
	run -0 timeout 60 promtool check rules "$rules"
	assert_output --partial 'SUCCESS: 5 rules found'
}
