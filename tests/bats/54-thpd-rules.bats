#!/usr/bin/env bats
# Per-application rules: a new process matching a [Rule] gets its THP
# policy from thpd (proc connector exec events -> /proc/PID/thp_policy)
# without any wrapper; on a stock kernel thpd says once that it cannot.

load helpers
load thpd

setup_file() {
	thpd_setup_file
	# a second executable, where nobody may run it
	mkdir -p /var/tmp/thpd-bats
	OTHER=/var/tmp/thpd-bats/other-touch
	cp "$THP_HELPERS/thp-touch" "$OTHER"
	chmod 755 /var/tmp/thpd-bats "$OTHER"
	export OTHER
}

teardown_file() {
	rm -rf /var/tmp/thpd-bats
	thpd_teardown_file
}

setup() {
	thpd_reset
	thp_set enabled madvise
	thp_set defrag madvise
	echo 3 >/proc/sys/vm/drop_caches
	echo 1 >/proc/sys/vm/compact_memory
}

rules_conf() {
	thpd_conf "$THPD_CONF_DIR/thpd.conf" <<-EOF
		[Rule touch]
		Exe=$THP_HELPERS/thp-touch
		Policy=advise

		[Rule nobody-never]
		Comm=other-touch
		User=nobody
		Policy=never
	EOF
}

@test "a rule for the helper's executable makes it huge under system madvise, no wrapper" {
	[ -e /proc/self/thp_policy ] || skip "kernel without the per-process THP policy"
	rules_conf
	thpd_start
	# the helper touches its memory once thpd has set its policy: the exec
	# event is handled within about 100 ms, which a guest with one vCPU on
	# a loaded host may stretch past a fixed wait (it had 300 ms)
	run -0 timeout 90 "$THP_HELPERS/thp-touch" --size 8 --wait-policy advise
	assert_kv pattern = ok
	assert_kv anon_huge_kib -eq 8192
	run -0 thpd_call '{"cmd":"status"}'
	assert_output --regexp '"rules":2,"rules_applied":[1-9]'
	journalctl --sync
	run -0 journalctl --no-pager -u thpd -n 20 -o cat THPD_EVENT=rule-applied
	assert_output --partial "[Rule touch]: policy advise for"
}

@test "the policy is visible in /proc/PID/thp_policy, also for another user's process" {
	[ -e /proc/self/thp_policy ] || skip "kernel without the per-process THP policy"
	rules_conf
	thpd_start
	local pid
	coproc HOLD { exec setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$THP_HELPERS/thp-touch" --size 4 --delay-ms 300 --hold; }
	pid=$HOLD_PID
	read -r -t 60 -u "${HOLD[0]}" line || true
	wait_until 10 grep -qx advise "/proc/$pid/thp_policy" ||
		fail "policy of $pid is $(cat /proc/$pid/thp_policy)"
	run -0 grep THP_policy "/proc/$pid/status"
	assert_output --regexp 'advise$'
	exec {HOLD[1]}>&-
	wait "$pid" || true
}

@test "a process no rule matches keeps the default policy and stays small" {
	[ -e /proc/self/thp_policy ] || skip "kernel without the per-process THP policy"
	rules_conf
	thpd_start
	run -0 timeout 60 "$OTHER" --size 8 --delay-ms 300
	assert_kv anon_huge_kib -eq 0
}

@test "User= and Comm= together: never for nobody's other-touch, even when madvised" {
	[ -e /proc/self/thp_policy ] || skip "kernel without the per-process THP policy"
	rules_conf
	thpd_start
	run -0 timeout 90 setpriv --reuid=65534 --regid=65534 --clear-groups "$OTHER" --size 8 --madvise --wait-policy never
	assert_kv anon_huge_kib -eq 0
	# root's other-touch is not matched: madvise makes it huge
	run -0 timeout 60 "$OTHER" --size 8 --madvise --delay-ms 300
	assert_kv anon_huge_kib -eq 8192
}

@test "stock kernel: thpd says once that rules cannot be applied" {
	[ ! -e /proc/self/thp_policy ] || skip "this kernel has the per-process THP policy"
	rules_conf
	local mark
	mark=$(journal_mark)
	thpd_start
	"$THP_HELPERS/thp-touch" --size 2 >/dev/null
	"$THP_HELPERS/thp-touch" --size 2 >/dev/null
	run -0 journal_messages "$mark" rules-unsupported
	assert_output --partial "rules cannot be applied"
	assert_equal "$(grep -c . <<<"$output")" 1
	run -0 thpd_call '{"cmd":"status"}'
	assert_output --partial '"rules":2,"rules_applied":0'
}
