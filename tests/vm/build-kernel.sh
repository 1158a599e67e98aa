#!/bin/bash
# Build a thp-stack guest kernel: Debian's linux-source-<base> with the
# series kernel/<base>/thp.patch applied, configured by kconfig.sh.
#
# Bases: 6.1 (the default) and 6.12; THP_BASE= or --base picks one. A base
# whose series has not landed (no kernel/<base>/thp.patch) builds the
# unpatched tree, with a warning, so that the plumbing works before it does.
#
# The result is cached in $THP_CACHE/kernel/<base>-<flavor>-<key>/bzImage,
# where <key> hashes every input: the base, the source package version and
# tarball, the series' code (its diffs: a reworded commit message or cover
# letter builds the same kernel), the config fragments, these scripts, the
# kselftest list, and the compiler, binutils and C library versions. Unchanged inputs:
# no rebuild. The path of the bzImage is the last line printed.
#
# The kselftests of the base's list (below) are built from the same patched
# tree, statically, against its own uapi headers (make headers), into
# <dir>/kselftests/, for the guest suites (the payload carries them).
#
# usage: build-kernel.sh [--dir] [--base 6.1|6.12] [--stock] [--flavor NAME] [EXTRA_FRAGMENT...]
#   --dir            print the cache directory of that build, build nothing
#   --base B         the base tree and series (default $THP_BASE, else 6.1)
#   --stock          without the series (same config), for `make bench`
#   --flavor debug   e.g. with kernel/debug.config, cached separately
# env: THP_KSELFTESTS_LIST="a b" replaces the base's kselftest list (keyed)
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/vm/lib.sh
. "$top/tests/vm/lib.sh"
cache=${THP_CACHE:-/var/cache/thp-stack}

# The kselftests built beside each base's bzImage: the series' own, and on
# 6.12 upstream's that prove no THP path regressed and no flag collides
# (issue 27). Each is <selftests dir>/<name>.c linked with the base's helper
# sources; a kernel helper adding a test adds its name here.
kselftests_6_1="thp_controls"
kselftests_6_12="thp_controls khugepaged cow mdwe_test ksm_functional_tests"
# the directory and the helper sources each test of a base links
kst_dir_6_1=vm kst_helpers_6_1="vm_util.c"
kst_dir_6_12=mm kst_helpers_6_12="vm_util.c thp_settings.c"

base=${THP_BASE:-6.1} flavor=default print_dir= stock=
while [ $# -gt 0 ]; do
	case $1 in
	--dir) print_dir=1; shift ;;
	--base) base=$2; shift 2 ;;
	--stock) stock=1; shift ;;
	--flavor) flavor=$2; shift 2 ;;
	--) shift; break ;;
	-*) echo "build-kernel: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
done
if [ -n "$stock" ]; then
	[ "$flavor" = default ] && flavor=stock || flavor=stock-$flavor
fi
case $base in
6.1) kselftests=$kselftests_6_1 kst_dir=$kst_dir_6_1 kst_helpers=$kst_helpers_6_1 ;;
6.12) kselftests=$kselftests_6_12 kst_dir=$kst_dir_6_12 kst_helpers=$kst_helpers_6_12 ;;
*) echo "build-kernel: base '$base': the bases are 6.1 and 6.12" >&2; exit 2 ;;
esac
kselftests=${THP_KSELFTESTS_LIST-$kselftests}
pkg=linux-source-$base
tarball=/usr/src/$pkg.tar.xz
series=$top/kernel/$base/thp.patch
patch=$series
[ -z "$stock" ] || patch=/dev/null
frags=("$top/kernel/guest.config" "$top/kernel/thp-stack.config" "$@")

log() { echo "build-kernel: $*" >&2; }

if [ ! -f "$tarball" ]; then
	log "$tarball missing; run 'make deps'"
	exit 1
fi
version=$(dpkg-query -W -f='${Version}' "$pkg")
# liburing lets selftests/mm's cow test pin pages through io_uring
liburing=no
[ -f /usr/include/liburing.h ] && [ -f /usr/lib/x86_64-linux-gnu/liburing.a ] && liburing=yes

key=$(
	{
		echo "$pkg $version"
		stat -c '%s %Y' "$tarball"
		# contents, never paths: a clone elsewhere finds the same build
		echo "flavor: $flavor"
		echo "kselftests: $kselftests; liburing: $liburing"
		# the toolchain builds the kernel and links the static kselftests
		gcc -dumpfullversion
		dpkg-query -W -f='${Package} ${Version}\n' binutils libc6-dev 2>/dev/null || true
		# the series' diffs: a reworded commit message is the same kernel
		[ -s "$patch" ] && series_code_hash "$patch"
		for f in "${frags[@]}" "$top/tests/vm/kconfig.sh" "$top/tests/vm/lib.sh" "$0"; do
			sha256sum <"$f"
		done
	} | sha256sum | cut -c1-16
)
dir=$cache/kernel/$base-$flavor-$key
if [ -n "$print_dir" ]; then
	echo "$dir"
	exit 0
fi

mkdir -p "$cache/kernel"
exec 9>"$dir.lock"
flock 9

if [ -f "$dir/bzImage" ]; then
	log "cached: $dir ($pkg $version, $flavor)"
	echo "$dir/bzImage"
	exit 0
fi

work=$dir.tmp
rm -rf "$work"
mkdir -p "$work"
log "unpacking $pkg $version into $work"
tar -C "$work" -xf "$tarball"
src=$work/$pkg

if [ -s "$patch" ]; then
	n=$(split_series "$patch" "$work/series")
	log "applying $n patch(es) from kernel/$base/thp.patch"
	for p in "$work"/series/*; do
		subj=$(patch_subject "$p")
		if ! (cd "$src" && git apply --whitespace=error-all "$p"); then
			log "FAILED to apply: $subj"
			exit 1
		fi
		log "  applied: $subj"
	done
elif [ -n "$stock" ]; then
	log "stock: building $pkg without the series"
else
	log "WARNING: kernel/$base/thp.patch is empty or absent: building the UNPATCHED $pkg tree"
	log "WARNING: the suites that need the series will skip on this kernel"
fi

log "configuring (allnoconfig + ${frags[*]##*/})"
"$top/tests/vm/kconfig.sh" "$src" "$work/obj" "${frags[@]}"
log "building bzImage with -j$(nproc)"
timed_make "$work/build.log" -C "$src" O="$work/obj" -j"$(nproc)" bzImage ||
	{ log "kernel build FAILED (log: $work/build.log)"; exit 1; }

# The kselftests, as tools/testing/selftests/<dir>/Makefile builds them
# (its CFLAGS, the tree's uapi headers, the helper sources linked in), but
# static: the guest has no build tools. -include kselftest.h: 6.12.118's
# khugepaged.c uses KSFT_SKIP without including it.
mkdir -p "$work/kselftests"
if [ -n "$kselftests" ]; then
	make -s -C "$src" O="$work/obj" headers >"$work/headers.log" 2>&1 ||
		{ tail -20 "$work/headers.log" >&2; log "make headers FAILED"; exit 1; }
	sel=$src/tools/testing/selftests/$kst_dir
	cflags=(-static -O2 -Wall -D_GNU_SOURCE= -U_FORTIFY_SOURCE
		-Werror=implicit-function-declaration -Werror=int-conversion
		-include "$sel/../kselftest.h" -I "$work/kselftests.inc" -I "$src"
		-isystem "$work/obj/usr/include" -isystem "$src/tools/include/uapi")
	libs=(-lrt -lpthread -lm)
	mkdir -p "$work/kselftests.inc"
	if [ $liburing = yes ]; then
		echo '#define LOCAL_CONFIG_HAVE_LIBURING 1' >"$work/kselftests.inc/local_config.h"
		libs+=(-luring)
	else
		: >"$work/kselftests.inc/local_config.h"
	fi
	helpers=()
	for h in $kst_helpers; do
		[ ! -f "$sel/$h" ] || helpers+=("$sel/$h")
	done
	for t in $kselftests; do
		if [ ! -f "$sel/$t.c" ]; then
			if [ -s "$patch" ]; then
				log "kselftest $t: no $kst_dir/$t.c in the patched tree (the list in tests/vm/build-kernel.sh?)"
				exit 1
			fi
			log "  kselftest $t: no $kst_dir/$t.c in the unpatched tree, not built"
			continue
		fi
		if ! gcc "${cflags[@]}" "$sel/$t.c" "${helpers[@]}" "${libs[@]}" -o "$work/kselftests/$t" \
			2>"$work/kselftests.log"; then
			cat "$work/kselftests.log" >&2
			log "building the kselftest $t FAILED"
			exit 1
		fi
		log "  kselftest: $kst_dir/$t"
	done
	if [ $liburing = no ] && [[ " $kselftests " == *" cow "* ]]; then
		log "  kselftest cow: built without liburing (no liburing-dev here): its io_uring cases skip"
	fi
fi

mkdir -p "$dir"
cp -r "$work/kselftests" "$dir/"
cp "$work/obj/arch/x86/boot/bzImage" "$work/obj/.config" "$work/obj/System.map" "$dir/"
echo "$pkg $version, $flavor, series code sha256 $([ -s "$patch" ] && series_code_hash "$patch" | cut -c1-16)" >"$dir/VERSION"
rm -rf "$work"
echo "$dir/bzImage"
