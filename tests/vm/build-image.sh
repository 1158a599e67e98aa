#!/bin/bash
# Build the guest root filesystem: debootstrap --variant=minbase bookworm with
# systemd, bats and the libraries thp-stack links, as an ext4 image made by
# mkfs.ext4 -d (no loop device). Cached in $THP_CACHE/image/<key>/root.img,
# where <key> hashes the package list, this script and the files it bakes in.
# The project itself is never baked in: each run brings it on the payload share.
# The path of the image is the last line printed.
#
# usage: build-image.sh [--stock]
#   --stock  the same image plus Debian's own stock kernels, installed by the
#            package manager with initramfs-tools (their drivers are modules,
#            so they boot with the initrd their postinst makes): the newest
#            linux-image-6.1.0-N-cloud-amd64-unsigned and
#            linux-image-6.12.N+deb12-cloud-amd64-unsigned that this machine's
#            apt offers. Beside root.img: vmlinuz-KVER, initrd.img-KVER and
#            `kernels` (lines "SERIES KVER", e.g. "6.12 6.12.118+deb12-cloud-amd64").
#            The key adds each kernel package's name and version, so a newer
#            kernel in the archive makes a new image.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
cache=${THP_CACHE:-/var/cache/thp-stack}
suite=bookworm
size=2G
# the runtime dependencies of the project's packages (make deb; each run
# installs them with apt), the test tools, and the metrics consumers:
# node_exporter and promtool (package prometheus), curl to scrape
packages=systemd,systemd-sysv,udev,dbus,bats,bats-assert,bats-support,libcap2,libcap2-bin,libsystemd0,libinih1,libjson-c5,procps,kmod,iproute2,util-linux,jq,less,psmisc,e2fsprogs,apt,prometheus-node-exporter,prometheus,curl

stock=0
case ${1:-} in
--stock) stock=1 ;;
"") ;;
*) echo "build-image: usage: build-image.sh [--stock]" >&2; exit 2 ;;
esac

log() { echo "build-image: $*" >&2; }

# The newest stock kernel package of each series, "SERIES PACKAGE VERSION",
# as this machine's apt sees them (the kernels come from its own sources,
# which include the security suite: debootstrap reads only the main one).
stock_kernels() {
	local series re pkg
	for series in 6.1 6.12; do
		case $series in
		6.1) re='^linux-image-6\.1\.0-[0-9]+-cloud-amd64-unsigned$' ;;
		6.12) re='^linux-image-6\.12\.[0-9]+\+deb12-cloud-amd64-unsigned$' ;;
		esac
		pkg=$(apt-cache search --names-only 'linux-image-6.*cloud-amd64-unsigned' | cut -d' ' -f1 |
			grep -E "$re" | sort -V | tail -1)
		[ -n "$pkg" ] || { log "apt offers no package matching $re (apt-get update?)"; return 1; }
		echo "$series $pkg $(apt-cache show --no-all-versions "$pkg" | awk '/^Version:/ { print $2; exit }')"
	done
}
kernels=
if [ $stock = 1 ]; then
	# a fresh machine may have no package lists yet (deps.sh updates them
	# only when it installs something)
	if ! kernels=$(stock_kernels 2>/dev/null); then
		log "apt's lists name no stock kernel: apt-get update"
		apt-get update -q >&2
		kernels=$(stock_kernels)
	fi
	packages=$packages,initramfs-tools,linux-base,busybox,zstd
fi

# The Debian mirror this machine's apt already uses: the first deb822 URIs or
# one-line "deb" entry that serves the main archive (not security, not updates).
mirror() {
	local f
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		awk -v s="$suite" '
			/^[ \t]*$/ { if (u != "" && ok) print u; u = ""; ok = 0; next }
			/^URIs:/ { u = $2 }
			/^Suites:/ { for (i = 2; i <= NF; i++) if ($i == s) ok = 1 }
			END { if (u != "" && ok) print u }' "$f"
	done
	cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
		awk -v s="$suite" '$1 == "deb" { for (i = 2; i < NF; i++) if ($i ~ /^[a-z]+:\/\// && $(i + 1) == s) print $i }'
	return 0
}

key=$(
	{
		echo "$suite $size $packages"
		echo "$kernels"
		for f in "$0" "$top"/tests/vm/guest/thp-guest.service "$top"/tests/vm/guest/thp-guest-boot; do
			sha256sum <"$f"
		done
	} | sha256sum | cut -c1-16
)
dir=$cache/image/$key
[ $stock = 0 ] || dir=$cache/image/stock-$key
mkdir -p "$cache/image"
exec 9>"$dir.lock"
flock 9

if [ -f "$dir/root.img" ]; then
	log "cached: $dir"
	echo "$dir/root.img"
	exit 0
fi

url=$(mirror | awk "NR == 1")
if [ -z "$url" ]; then
	log "no Debian mirror for $suite found in /etc/apt/sources.list{,.d}"
	exit 1
fi

work=$dir.tmp
rm -rf "$work"
mkdir -p "$work"
root=$work/root
log "debootstrap $suite (minbase) from this machine's apt mirror (about a minute)"
if ! debootstrap --variant=minbase --include="$packages" "$suite" "$root" "$url" >"$work/debootstrap.log" 2>&1; then
	tail -20 "$work/debootstrap.log" >&2
	log "debootstrap FAILED (log: $work/debootstrap.log)"
	exit 1
fi

log "configuring the guest"
echo thp-guest >"$root/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 thp-guest\n' >"$root/etc/hosts"
printf '/dev/vda / ext4 rw,relatime 0 1\n' >"$root/etc/fstab"
chroot "$root" passwd -qd root
install -Dm755 "$top/tests/vm/guest/thp-guest-boot" "$root/usr/local/sbin/thp-guest-boot"
install -Dm644 "$top/tests/vm/guest/thp-guest.service" "$root/etc/systemd/system/thp-guest.service"
ln -sf /etc/systemd/system/thp-guest.service "$root/etc/systemd/system/multi-user.target.wants/thp-guest.service"
# a root shell on the console for `make vm`
mkdir -p "$root/etc/systemd/system/serial-getty@ttyS0.service.d"
cat >"$root/etc/systemd/system/serial-getty@ttyS0.service.d/autologin.conf" <<'UNIT'
[Service]
ExecStart=
ExecStart=-/sbin/agetty --autologin root --keep-baud 115200,57600,38400,9600 %I $TERM
UNIT
# nothing periodic or networked in a test guest
for u in apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer \
	systemd-timesyncd.service systemd-networkd-wait-online.service; do
	ln -sf /dev/null "$root/etc/systemd/system/$u"
done
# Prometheus is here for promtool; node_exporter runs only when a test
# starts it (a Go heap in every boot would add to the THP counters that
# other suites measure)
ln -sf /dev/null "$root/etc/systemd/system/prometheus.service"
rm -f "$root"/etc/systemd/system/multi-user.target.wants/prometheus-node-exporter.service
mkdir -p "$root/var/log/journal"
if [ $stock = 1 ]; then
	# apt-get download: the ordinary client with this machine's sources
	mkdir -p "$work/debs"
	while read -r series pkg version; do
		log "stock $series: $pkg $version"
		(cd "$work/debs" && apt-get download -q "$pkg=$version" >/dev/null 2>"$work/download.log") ||
			{ cat "$work/download.log" >&2; log "apt-get download $pkg FAILED"; exit 1; }
	done <<<"$kernels"
	cp "$work"/debs/*.deb "$root/tmp/"
	log "installing the stock kernels in the guest (their postinst makes the initrds)"
	if ! chroot "$root" sh -c 'dpkg -i /tmp/*.deb' >"$work/dpkg.log" 2>&1; then
		tail -20 "$work/dpkg.log" >&2
		log "installing the stock kernels FAILED (log: $work/dpkg.log)"
		exit 1
	fi
	rm -f "$root"/tmp/*.deb
	mkdir -p "$work/boot"
	while read -r series pkg version; do
		kver=${pkg#linux-image-}
		kver=${kver%-unsigned}
		[ -f "$root/boot/vmlinuz-$kver" ] && [ -f "$root/boot/initrd.img-$kver" ] ||
			{ log "$pkg left no /boot/vmlinuz-$kver and initrd.img-$kver"; exit 1; }
		cp "$root/boot/vmlinuz-$kver" "$root/boot/initrd.img-$kver" "$work/boot/"
		echo "$series $kver" >>"$work/boot/kernels"
	done <<<"$kernels"
fi
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*

truncate -s "$size" "$work/root.img"
mkfs.ext4 -q -F -L thp-root -d "$root" "$work/root.img"
mkdir -p "$dir"
[ $stock = 0 ] || mv "$work"/boot/* "$dir/"
mv "$work/root.img" "$dir/root.img"
rm -rf "$work"
log "built $dir/root.img"
echo "$dir/root.img"
