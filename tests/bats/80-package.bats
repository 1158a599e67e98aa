#!/usr/bin/env bats
# The Debian packages (make deb) as an administrator meets them: installed
# with apt by the harness before any suite, thpd enabled and started by the
# package's maintainer scripts, thpd.conf a conffile; an upgrade keeps the
# administrator's thpd.conf edits and thpd's persisted state; a purge
# removes /var/lib/thpd. The suite ends with the packages installed as the
# harness left them and thpd running. After the reboot,
# reboot/10-package-boot.bats shows the enabled unit coming up at boot.

load helpers

DEBS=${THP_DEBS:-/mnt/payload/debs}
CONF=/etc/thpd/thpd.conf
STATE=/var/lib/thpd/state

setup_file() {
	dpkg-query -W thpd >/dev/null 2>&1 || skip "the thpd package is not installed"
	ls "$DEBS"/thpd_*.deb >/dev/null || skip "no packages in $DEBS"
	thp_save_knobs
	cp -a "$CONF" "$BATS_FILE_TMPDIR/thpd.conf.orig"
}

teardown_file() {
	[ -e "$BATS_FILE_TMPDIR/thpd.conf.orig" ] || return 0
	# the packages as the harness installed them, the configuration as shipped
	if [ "$(pkg_version thpd)" != "$(deb_version)" ] || ! dpkg-query -W thpd >/dev/null 2>&1; then
		apt_install --allow-downgrades "$DEBS"/thpd_*.deb || true
	fi
	if [ "$(pkg_version thpctl)" != "$(deb_version)" ]; then
		apt_install --allow-downgrades "$DEBS"/thpctl_*.deb || true
	fi
	timeout 60 systemctl disable --now thpctl-metrics.timer 2>/dev/null || true
	cp -a "$BATS_FILE_TMPDIR/thpd.conf.orig" "$CONF"
	timeout 60 systemctl stop thpd.service
	rm -f "$STATE"
	thp_restore_knobs
	timeout 60 systemctl start thpd.socket thpd.service
}

pkg_version() {
	dpkg-query -W -f='${Version}' "$1" 2>/dev/null
}

deb_version() {
	dpkg-deb -f "$(ls "$DEBS"/thpd_*.deb)" Version
}

apt_install() {
	DEBIAN_FRONTEND=noninteractive timeout 300 apt-get install -y -q --no-install-recommends "$@"
}

thpd_status() {
	timeout 15 thpctl --json status | jq -c .thpd
}

@test "thpctl and thpd are installed from the packages built from the tree" {
	for p in thpctl thpd; do
		run -0 dpkg-query -W -f='${db:Status-Status} ${Version}' "$p"
		assert_output "installed $(deb_version)"
	done
	assert_equal "$(command -v thpctl)" /usr/bin/thpctl
	assert_equal "$(command -v thpd)" /usr/sbin/thpd
	run -0 dpkg-query -W -f='${Conffiles}\n' thpd
	assert_output --partial "$CONF "
	run -0 dpkg -L thpctl
	assert_line /usr/share/man/man1/thpctl.1.gz
	assert_line /usr/share/bash-completion/completions/thpctl
	run -0 dpkg -L thpd
	assert_line /lib/systemd/system/thpd.service
	assert_line /usr/share/man/man5/thpd.conf.5.gz
	assert_line /usr/share/man/man8/thpd.8.gz
}

@test "the package enabled and started thpd and its socket" {
	run -0 systemctl is-enabled thpd.service thpd.socket
	assert_output $'enabled\nenabled'
	# enabled by the maintainer scripts (deb-systemd-helper), not by hand
	[ -e /var/lib/systemd/deb-systemd-helper-enabled/thpd.service.dsh-also ] ||
		fail "deb-systemd-helper has no record of enabling thpd.service"
	run -0 systemctl is-active thpd.service
	run -0 systemctl show -p ExecStart --value thpd.service
	assert_output --partial "path=/usr/sbin/thpd "
	run -0 thpd_status
	refute_output null
	assert_equal "$(jq -r .version <<<"$output")" "$(deb_version)"
}

@test "an upgrade keeps the administrator's thpd.conf edits and the persisted state" {
	local before after pid0 up=$BATS_TEST_TMPDIR/up
	echo "# edited by the administrator before the upgrade" >>"$CONF"
	before=$(sha256sum <"$CONF")
	run -0 timeout 15 thpctl enable madvise
	assert_output --partial "set by thpd"
	run -0 cat "$STATE"
	assert_output --partial '"enabled":"madvise"'
	cp "$STATE" "$BATS_TEST_TMPDIR/state.before"
	pid0=$(systemctl show -p MainPID --value thpd.service)

	# the same package under a higher version: a real upgrade path
	# (prerm upgrade, new files, postinst configure OLD-VERSION)
	dpkg-deb -R "$(ls "$DEBS"/thpd_*.deb)" "$up"
	sed -i "s/^Version: .*/Version: $(deb_version)+upgrade1/" "$up/DEBIAN/control"
	dpkg-deb -b "$up" "$BATS_TEST_TMPDIR/thpd-upgrade.deb" >/dev/null
	run -0 apt_install "$BATS_TEST_TMPDIR/thpd-upgrade.deb"
	assert_equal "$(pkg_version thpd)" "$(deb_version)+upgrade1"

	after=$(sha256sum <"$CONF")
	assert_equal "$after" "$before"
	run -0 grep -c "edited by the administrator" "$CONF"
	assert_output 1
	run -0 cmp "$BATS_TEST_TMPDIR/state.before" "$STATE"
	# restarted after the upgrade, and it put the persisted setting back
	run -0 systemctl is-active thpd.service
	[ "$(systemctl show -p MainPID --value thpd.service)" != "$pid0" ] ||
		fail "thpd was not restarted by the upgrade (MainPID $pid0)"
	run -0 thpd_status
	assert_equal "$(jq -r .persisted.enabled <<<"$output")" madvise
	assert_equal "$(thp_get enabled)" madvise

	# and back to the tree's package (a downgrade keeps them too)
	run -0 apt_install --allow-downgrades "$DEBS"/thpd_*.deb
	assert_equal "$(pkg_version thpd)" "$(deb_version)"
	assert_equal "$(sha256sum <"$CONF")" "$before"
}

# watch_start FILE...: record every value the THP files take, one line per
# change ("enabled=never defrag=madvise"), until watch_stop; a builtin read
# loop samples them far more often than a stop and a start take
watch_start() {
	WATCH_LOG=$BATS_TEST_TMPDIR/watch.log
	WATCH_STOP=$BATS_TEST_TMPDIR/watch.stop
	rm -f "$WATCH_STOP"
	(
		local f v line last= n=0
		while [ ! -e "$WATCH_STOP" ]; do
			line=
			for f in "$@"; do
				read -r v <"$THP/$f"
				v=${v#*[}
				line+="$f=${v%%]*} "
			done
			[ "$line" = "$last" ] || echo "$line"
			last=$line
			n=$((n + 1))
		done
		echo "samples=$n"
	) >"$WATCH_LOG" 2>&1 &
	WATCH_PID=$!
}

watch_stop() {
	touch "$WATCH_STOP"
	wait "$WATCH_PID" || true
}

# watch_values FILE: the values FILE took while watched, in order (run's output)
watch_values() {
	run -0 bash -c "grep -o '$1=[^ ]*' '$WATCH_LOG' | cut -d= -f2 | uniq"
}

# thpd_events_after CURSOR EVENT: thpd's THPD_EVENT=EVENT entries after CURSOR
thpd_events_after() {
	journalctl --sync 2>/dev/null || true
	journalctl --no-pager -q -u thpd.service --after-cursor="$1" -o json |
		jq -r --arg e "$2" 'select(.THPD_EVENT == $e) | .MESSAGE'
}

# install_watched WHAT APT-ARGS...: apt installs the packages while every
# value of enabled and defrag is recorded: enabled stays $want, defrag
# never changes, and thpd restores nothing
install_watched() {
	local what=$1 mark
	shift
	mark=$(journalctl -n 0 --show-cursor --no-pager | sed -n 's/^-- cursor: //p')
	watch_start enabled defrag
	run -0 apt_install "$@"
	watch_stop
	echo "# the $what: $(tr '\n' ' ' <"$WATCH_LOG")" >&3
	watch_values enabled
	assert_output "$want"
	watch_values defrag
	assert_equal "${#lines[@]}" 1
	run -0 thpd_events_after "$mark" restored
	assert_output ""
}

@test "an upgrade and a downgrade never revert a THP value: thpd hands the host over" {
	local orig up=$BATS_TEST_TMPDIR/up pid0
	run -0 cat /run/thpd/saved
	orig=$(sed -n 's/^enabled //p' <<<"$output")
	[ -n "$orig" ] || fail "no enabled in /run/thpd/saved: $output"
	# a setting of thpd's own that differs from the host's original (install_watched's)
	want=never
	[ "$orig" != never ] || want=madvise
	run -0 timeout 15 thpctl enable "$want"
	assert_equal "$(thp_get enabled)" "$want"
	dpkg-deb -R "$(ls "$DEBS"/thpd_*.deb)" "$up"
	sed -i "s/^Version: .*/Version: $(deb_version)+upgrade1/" "$up/DEBIAN/control"
	dpkg-deb -b "$up" "$BATS_TEST_TMPDIR/thpd-upgrade.deb" >/dev/null
	pid0=$(systemctl show -p MainPID --value thpd.service)

	install_watched upgrade "$BATS_TEST_TMPDIR/thpd-upgrade.deb"
	assert_equal "$(pkg_version thpd)" "$(deb_version)+upgrade1"
	[ "$(systemctl show -p MainPID --value thpd.service)" != "$pid0" ] ||
		fail "the upgrade did not restart thpd (MainPID $pid0)"
	# the new thpd knows the host's originals from the old one
	run -0 cat /run/thpd/saved
	assert_line "enabled $orig"
	[ ! -e /run/thpd/handover ] || fail "/run/thpd/handover outlived the upgrade"

	install_watched downgrade --allow-downgrades "$DEBS"/thpd_*.deb
	assert_equal "$(pkg_version thpd)" "$(deb_version)"

	# a plain stop still restores the host's own value
	timeout 60 systemctl stop thpd.service
	assert_equal "$(thp_get enabled)" "$orig"
	timeout 60 systemctl start thpd.service
}

@test "remove keeps /var/lib/thpd and thpd.conf; purge removes both; install enables thpd again" {
	run -0 timeout 15 thpctl enable madvise
	[ -s "$STATE" ] || fail "no persisted state before the removal"

	run -0 timeout 300 apt-get remove -y -q thpd
	refute systemctl -q is-active thpd.service
	[ -s "$STATE" ] || fail "remove deleted thpd's state"
	[ -e "$CONF" ] || fail "remove deleted the conffile"
	run -0 timeout 15 thpctl status
	assert_line --regexp '^thpd: +not running$'

	run -0 timeout 300 apt-get purge -y -q thpd
	[ ! -e /var/lib/thpd ] || fail "purge left /var/lib/thpd: $(ls -la /var/lib/thpd)"
	[ ! -e "$CONF" ] || fail "purge left the conffile $CONF"
	run -0 dpkg-query -W -f='${db:Status-Status}' thpd
	assert_output not-installed
	# thpctl stays and works without thpd
	run -0 timeout 15 thpctl status --json
	assert_equal "$(jq -c .thpd <<<"$output")" null

	run -0 apt_install "$DEBS"/thpd_*.deb
	run -0 systemctl is-enabled thpd.service thpd.socket
	run -0 systemctl is-active thpd.service
	run -0 thpd_status
	assert_equal "$(jq -c .persisted <<<"$output")" null
	run -0 cmp "$BATS_FILE_TMPDIR/thpd.conf.orig" "$CONF"
}

@test "removing or purging thpctl deletes thp.prom, which node_exporter would go on exporting" {
	local dir=/var/lib/prometheus/node-exporter
	# the service writes only where node_exporter's textfile directory is
	mkdir -p "$dir"
	run -0 timeout 60 systemctl start thpctl-metrics.service
	[ -s "$dir/thp.prom" ] || fail "thpctl-metrics.service wrote no $dir/thp.prom"
	run -0 timeout 60 systemctl enable --now thpctl-metrics.timer
	# a temporary file a write left behind goes too; other files stay
	: >"$dir/thp.prom.AbC123"
	echo 'other_metric 1' >"$dir/other.prom"

	run -0 timeout 300 apt-get remove -y -q thpctl
	[ ! -e "$dir/thp.prom" ] || fail "remove left $dir/thp.prom"
	[ ! -e "$dir/thp.prom.AbC123" ] || fail "remove left a temporary file"
	[ -e "$dir/other.prom" ] || fail "remove deleted another collector's file"
	run systemctl is-active thpctl-metrics.timer
	refute_output active

	run -0 apt_install "$DEBS"/thpctl_*.deb
	run -0 timeout 60 systemctl start thpctl-metrics.service
	[ -s "$dir/thp.prom" ] || fail "no thp.prom after the reinstall"
	run -0 timeout 300 apt-get purge -y -q thpctl
	[ ! -e "$dir/thp.prom" ] || fail "purge left $dir/thp.prom"
	run -0 dpkg-query -W -f='${db:Status-Status}' thpctl
	assert_output not-installed

	rm -f "$dir/other.prom"
	run -0 apt_install "$DEBS"/thpctl_*.deb
	assert_equal "$(pkg_version thpctl)" "$(deb_version)"
}
