#!/bin/bash
# Build the thp-stack guest kernel: Debian's linux-source-6.1 with
# kernel/sysfs-thp.patch applied, configured by kconfig.sh.
#
# The result is cached in $THP_CACHE/kernel/<key>/bzImage, where <key> hashes
# every input: the source package version and tarball, the patch series, the
# config fragments, and these scripts. Unchanged inputs: no rebuild. The path
# of the bzImage is the last line printed.
#
# The kselftests the series adds (tools/testing/selftests/vm/$KSELFTESTS) are
# built from the same patched tree, statically, into <key>/kselftests/, for
# the guest suite 25-kselftests.bats (the payload carries them).
#
# usage: build-kernel.sh [--dir] [--stock] [--flavor NAME] [EXTRA_FRAGMENT...]
#   --dir            print the cache directory of that build, build nothing
#   --stock          without the series (same config), for `make bench`
#   --flavor debug   e.g. with kernel/debug.config, cached separately
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/vm/lib.sh
. "$top/tests/vm/lib.sh"
cache=${THP_CACHE:-/var/cache/thp-stack}
flavor=default
patch=$top/kernel/sysfs-thp.patch
print_dir=
KSELFTESTS="thp_controls"
if [ "${1:-}" = --dir ]; then
	print_dir=1
	shift
fi
if [ "${1:-}" = --stock ]; then
	flavor=stock
	patch=/dev/null
	shift
fi
if [ "${1:-}" = --flavor ]; then
	flavor=$flavor-$2
	shift 2
fi
tarball=/usr/src/linux-source-6.1.tar.xz
frags=("$top/kernel/guest.config" "$top/kernel/thp-stack.config" "$@")

if [ ! -f "$tarball" ]; then
	echo "build-kernel: $tarball missing; run 'make deps'" >&2
	exit 1
fi

log() { echo "build-kernel: $*" >&2; }

version=$(dpkg-query -W -f='${Version}' linux-source-6.1)
key=$(
	{
		echo "linux-source-6.1 $version"
		stat -c '%s %Y' "$tarball"
		# contents, never paths: a clone elsewhere finds the same build
		echo "flavor: $flavor"
		[ -f "$patch" ] && sha256sum <"$patch"
		for f in "${frags[@]}" "$top/tests/vm/kconfig.sh" "$top/tests/vm/lib.sh" "$0"; do
			sha256sum <"$f"
		done
	} | sha256sum | cut -c1-16
)
dir=$cache/kernel/$flavor-$key
if [ -n "$print_dir" ]; then
	echo "$dir"
	exit 0
fi

mkdir -p "$cache/kernel"
exec 9>"$dir.lock"
flock 9

if [ -f "$dir/bzImage" ]; then
	log "cached: $dir (linux-source-6.1 $version, $flavor)"
	echo "$dir/bzImage"
	exit 0
fi

work=$dir.tmp
rm -rf "$work"
mkdir -p "$work"
log "unpacking linux-source-6.1 $version into $work"
tar -C "$work" -xf "$tarball"
src=$work/linux-source-6.1

if [ -s "$patch" ]; then
	mkdir "$work/series"
	n=$(git mailsplit -o"$work/series" "$patch")
	log "applying $n patch(es) from kernel/sysfs-thp.patch"
	for p in "$work"/series/*; do
		subj=$(patch_subject "$p")
		if ! (cd "$src" && git apply --whitespace=error-all "$p"); then
			log "FAILED to apply: $subj"
			exit 1
		fi
		log "  applied: $subj"
	done
else
	log "kernel/sysfs-thp.patch is empty or absent: building the stock tree"
fi

log "configuring (allnoconfig + ${frags[*]##*/})"
"$top/tests/vm/kconfig.sh" "$src" "$work/obj" "${frags[@]}"
log "building bzImage with -j$(nproc)"
timed_make "$work/build.log" -C "$src" O="$work/obj" -j"$(nproc)" bzImage ||
	{ log "kernel build FAILED (log: $work/build.log)"; exit 1; }

mkdir -p "$work/kselftests"
for t in $KSELFTESTS; do
	c=$src/tools/testing/selftests/vm/$t.c
	[ -f "$c" ] || continue
	# the tree's own uapi copy (tools/include), as the selftests build does
	if ! gcc -static -O2 -Wall -isystem "$src/tools/include/uapi" \
		-I "$src/tools/testing/selftests" "$c" -o "$work/kselftests/$t" 2>"$work/kselftests.log"; then
		cat "$work/kselftests.log" >&2
		log "building the kselftest $t FAILED"
		exit 1
	fi
	log "  kselftest: $t"
done

mkdir -p "$dir"
cp -r "$work/kselftests" "$dir/"
cp "$work/obj/arch/x86/boot/bzImage" "$work/obj/.config" "$work/obj/System.map" "$dir/"
echo "linux-source-6.1 $version, $flavor, patch sha256 $(sha256sum <"$patch" 2>/dev/null | cut -c1-16)" >"$dir/VERSION"
rm -rf "$work"
echo "$dir/bzImage"
