#!/usr/bin/env bats
# thpd's configuration: drop-ins override the file in lexical order,
# warnings carry file:line, an unusable configuration fails the start
# with file:line in the journal, a bad reload keeps the last good one.

load helpers
load thpd

setup_file() {
	thpd_setup_file
}

teardown_file() {
	rm -f "$THPD_CONF_DIR/thpd.conf.d/91-bats-test.conf"
	thpd_teardown_file
}

setup() {
	thpd_reset
	rm -f "$THPD_CONF_DIR/thpd.conf.d/91-bats-test.conf"
	thp_set enabled madvise
	thp_set defrag madvise
}

@test "drop-ins override thpd.conf, in lexical order" {
	thpd_conf "$THPD_CONF_DIR/thpd.conf" <<-EOF
		[Global]
		Mode=always
		Defrag=defer
	EOF
	thpd_conf "$THPD_CONF_DIR/thpd.conf.d/91-bats-test.conf" <<-EOF
		[Global]
		Mode=madvise
	EOF
	thpd_conf "$THPD_DROPIN" <<-EOF
		[Global]
		Mode=never
		Defrag=always
	EOF
	thpd_start
	# 91 comes after 90: Mode from 91, Defrag from 90
	assert_equal "$(thp_get enabled)" madvise
	assert_equal "$(thp_get defrag)" always
}

@test "a numeric Mode= sets enabled and defrag; Defrag= after it wins" {
	thpd_conf "$THPD_CONF_DIR/thpd.conf" <<-EOF
		[Global]
		Mode=2
	EOF
	thpd_start
	assert_equal "$(thp_get enabled)" always
	assert_equal "$(thp_get defrag)" always
	thpd_stop
	thpd_conf "$THPD_DROPIN" <<-EOF
		[Global]
		Defrag=defer+madvise
	EOF
	thpd_start
	assert_equal "$(thp_get enabled)" always
	assert_equal "$(thp_get defrag)" defer+madvise
}

@test "unknown keys and bad values: warnings with file:line, the rest applies" {
	thpd_conf "$THPD_DROPIN" <<-EOF
		[Global]
		Mode=never
		Frobnicate=yes
		KhugepagedPagesToScan=lots
	EOF
	local mark
	mark=$(journal_mark)
	thpd_start
	assert_equal "$(thp_get enabled)" never
	run -0 journal_since "$mark" -o cat
	assert_output --partial "$THPD_DROPIN:3: unknown key Frobnicate= in [Global], ignored"
	assert_output --partial "$THPD_DROPIN:4: invalid KhugepagedPagesToScan=lots (expected an integer from 0 to 4294967295), ignored"
}

@test "start with an unusable configuration fails with file:line in the journal" {
	thpd_conf "$THPD_DROPIN" <<-EOF
		[Global]

		Mode=sometimes
	EOF
	local mark
	mark=$(journal_mark)
	run timeout 60 systemctl start thpd.service
	assert_failure
	run -0 systemctl show -p Result --value thpd.service
	assert_output exit-code
	run -0 systemctl show -p ExecMainStatus --value thpd.service
	assert_output 78
	# systemd names it from its table of exit codes
	run systemctl status thpd.service --no-pager
	assert_output --partial "status=78/CONFIG"
	run -0 journal_since "$mark" -o cat
	assert_output --partial "$THPD_DROPIN:3: invalid Mode=sometimes"
	assert_output --partial "unusable, not starting"
	assert_equal "$(thp_get enabled)" madvise
}

@test "reload with a broken configuration keeps the last good one" {
	thpd_conf "$THPD_CONF_DIR/thpd.conf" <<-EOF
		[Global]
		Mode=always
	EOF
	thpd_start
	local pid mark
	pid=$(thpd_pid)
	thpd_conf "$THPD_DROPIN" <<-EOF
		[Global]
		Mode=never
		Defrag=sometimes
	EOF
	mark=$(journal_mark)
	run -0 timeout 60 systemctl reload thpd.service
	journal_wait 60 "$mark" reload-failed
	run -0 journal_since "$mark" -o cat
	assert_output --partial "$THPD_DROPIN:3: invalid Defrag=sometimes"
	assert_output --partial "keeping the last good configuration"
	assert_equal "$(thpd_pid)" "$pid"
	run -0 systemctl is-active thpd.service
	assert_equal "$(thp_get enabled)" always
	# the socket's reload says so too
	run -0 thpd_call '{"cmd":"reload"}'
	assert_output --regexp '"ok":false.*"errno":22'
}

@test "reload with a good configuration applies it" {
	thpd_conf "$THPD_CONF_DIR/thpd.conf" <<-EOF
		[Global]
		Mode=always
	EOF
	thpd_start
	local pid
	pid=$(thpd_pid)
	thpd_conf "$THPD_DROPIN" <<-EOF
		[Global]
		Mode=never
	EOF
	run -0 timeout 60 systemctl reload thpd.service
	wait_until 10 bash -c '[ "$(cat /sys/kernel/mm/transparent_hugepage/enabled)" = "always madvise [never]" ]' ||
		fail "enabled is $(thp_get enabled) after reload"
	assert_equal "$(thpd_pid)" "$pid"
	# and through the socket
	thpd_conf "$THPD_DROPIN" <<-EOF
		[Global]
		Mode=madvise
	EOF
	run -0 thpd_call '{"cmd":"reload"}'
	assert_output '{"ok":true}'
	assert_equal "$(thp_get enabled)" madvise
}

@test "a persisted setting beats Mode= of the configuration" {
	thpd_conf "$THPD_CONF_DIR/thpd.conf" <<-EOF
		[Global]
		Mode=always
	EOF
	thpd_start
	run -0 thpd_call '{"cmd":"enable","value":"never"}'
	run -0 timeout 60 systemctl restart thpd.service
	assert_equal "$(thp_get enabled)" never
	journalctl --sync
	run -0 journalctl --no-pager -u thpd -n 20 -o cat THPD_EVENT=started
	assert_output --partial "Mode from persisted state"
}

# thpd ignores a thp_anon=, transparent_hugepage_shmem= or thp_shmem= that
# the running kernel does not take, told by the parameter's handler missing
# from /proc/kallsyms (host suite 51-thpd-sizes checks the logic). That
# holds only if the kernel lists its __setup handlers there after freeing
# them, and thpd's sandbox lets it read the file.
@test "the kernel lists its THP boot parameter handlers in /proc/kallsyms, and thpd may read it" {
	run -0 grep -cw setup_transparent_hugepage /proc/kallsyms
	echo "# $(uname -r) takes: $(grep -ow 'setup_thp_anon\|setup_transparent_hugepage_shmem\|setup_thp_shmem' /proc/kallsyms | sort -u | tr '\n' ' ')" >&3
	run -0 systemctl show -p ProcSubset --value thpd.service
	assert_output all
}

# thpctl reset without thpd writes the boot defaults it can know
# (thpctl(1), BOOT DEFAULTS): here this kernel's /boot/config-$(uname -r)
# and its command line, which sets no THP parameter in these boots
@test "reset without thpd: this kernel's boot defaults from /boot/config and its command line" {
	command -v thpctl >/dev/null || skip "thpctl is not installed"
	local cfg=/boot/config-$(uname -r) want
	[ -r "$cfg" ] || skip "no $cfg: the kernel's build default is not known here"
	! grep -qw 'transparent_hugepage\|thp_anon' /proc/cmdline ||
		skip "this boot's command line sets THP: $(cat /proc/cmdline)"
	want=$(sed -n 's/^CONFIG_TRANSPARENT_HUGEPAGE_\(ALWAYS\|MADVISE\|NEVER\)=y$/\1/p' "$cfg" | tr A-Z a-z)
	[ -n "$want" ] || fail "$cfg names no THP default"
	thp_set enabled never
	[ "$want" != never ] || thp_set enabled always
	thp_set defrag never
	[ ! -e "$THP/hugepages-64kB/enabled" ] || thp_set hugepages-64kB/enabled always
	[ ! -e "$THP/hugepages-2048kB/enabled" ] || thp_set hugepages-2048kB/enabled never
	run -0 timeout 15 thpctl reset
	assert_line --regexp "^enabled=$want \(was [a-z]+: CONFIG_TRANSPARENT_HUGEPAGE_[A-Z]+\)$"
	assert_equal "$(thp_get enabled) $(thp_get defrag)" "$want madvise"
	if [ -e "$THP/hugepages-64kB/enabled" ]; then
		assert_equal "$(thp_get hugepages-64kB/enabled) $(thp_get hugepages-2048kB/enabled)" "never inherit"
	fi
	run -0 timeout 15 thpctl reset
	assert_output --partial "already at the boot defaults"
}
