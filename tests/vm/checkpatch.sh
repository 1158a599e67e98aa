#!/bin/bash
# Run the kernel's scripts/checkpatch.pl --strict on every patch of a
# series (its cover letter skipped: there is no diff to check), inside a
# pristine tree of the base's linux-source package this machine has
# (unpacked once into $THP_CACHE/checkpatch/ and reused while the package
# version is the same).
#
# usage: checkpatch.sh [BASE [MBOX]]
#   BASE 6.1 (default) or 6.12; MBOX defaults to kernel/BASE/thp.patch. A
#   base whose default series has not landed yet is said and passes.
#
# Prints one line per patch: "ok|FAIL NN subject (E errors, W warnings,
# C checks)", the checkpatch report of every failing patch, and exits 1 if
# any patch has an error, a warning or a check (2 on setup trouble).
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/vm/lib.sh
. "$top/tests/vm/lib.sh"
cache=${THP_CACHE:-/var/cache/thp-stack}
base=${1:-6.1}
series=${2:-$top/kernel/$base/thp.patch}
pkg=linux-source-$base
tarball=/usr/src/$pkg.tar.xz

die() { echo "checkpatch: $*" >&2; exit 2; }

case " $THP_BASES " in
*" $base "*) ;;
*) die "base '$base': the bases are $THP_BASES" ;;
esac
if [ $# -lt 2 ] && [ ! -s "$series" ]; then
	echo "checkpatch: kernel/$base/thp.patch has not landed: nothing to check on $base"
	exit 0
fi
[ -f "$series" ] || die "$series missing"
[ -f "$tarball" ] || die "$tarball missing; run 'make deps'"
command -v git >/dev/null || die "git missing; run 'make deps'"
version=$(dpkg-query -W -f='${Version}' "$pkg") || die "$pkg not installed"

tree=$cache/checkpatch/$pkg-$version
if [ ! -f "$tree/.thp-unpacked" ]; then
	mkdir -p "$cache/checkpatch"
	tmp=$(mktemp -d "$cache/checkpatch/unpack.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	echo "checkpatch: unpacking $pkg $version" >&2
	tar -C "$tmp" -xf "$tarball"
	rm -rf "$tree"
	mv "$tmp/$pkg" "$tree"
	touch "$tree/.thp-unpacked"
	rm -rf "$tmp"
	trap - EXIT
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
n=$(split_series "$series" "$work")
[ "$n" -gt 0 ] || die "no patches in $series"
echo "checkpatch: $base, $n patch(es) of ${series#"$top"/}"

# covered FILE PATCH: does MAINTAINERS cover a file the patch adds, by a
# directory entry of the pristine tree or an F: line the patch itself adds?
covered() {
	grep -qxF "+F:	$1" "$2" && return 0
	awk -v f="$1" '/^F:\t.*\/$/ { d = substr($0, 4); if (index(f, d) == 1) found = 1 }
		END { exit !found }' "$tree/MAINTAINERS"
}

bad=0
for p in "$work"/*; do
	subj=$(patch_subject "$p")
	# the cover letter ([PATCH v3 0/N]) carries no diff: nothing to check
	if ! grep -q '^diff --git ' "$p"; then
		echo "skip $(basename "$p") $subj (no diff: the cover letter)"
		continue
	fi
	# checkpatch warns about every added file unless the patch touches
	# MAINTAINERS; where MAINTAINERS already covers each of them (a file in
	# tools/testing/selftests/vm/ or mm/, say) that warning is the only false one
	ignore=
	new=$(awk '/^diff --git / { f = substr($4, 3) } /^new file mode/ { print f }' "$p")
	if [ -n "$new" ]; then
		ignore=--ignore=FILE_PATH_CHANGES
		for f in $new; do
			covered "$f" "$p" || ignore=
		done
	fi
	# checkpatch exits non-zero on errors and warnings but not on checks:
	# judge by its summary line
	report=$(cd "$tree" && perl scripts/checkpatch.pl --strict --no-color $ignore "$p" 2>&1) || true
	total=$(grep -E '^total: [0-9]+ errors, [0-9]+ warnings, ([0-9]+ checks, )?[0-9]+ lines checked' <<<"$report" || true)
	if [[ $total =~ ^total:\ ([0-9]+)\ errors,\ ([0-9]+)\ warnings,\ ([0-9]+)\ checks ]]; then
		e=${BASH_REMATCH[1]} w=${BASH_REMATCH[2]} c=${BASH_REMATCH[3]}
	else
		echo "FAIL $(basename "$p") $subj (no checkpatch summary)"
		echo "$report" | sed 's/^/    /'
		bad=1
		continue
	fi
	if [ "$e" -eq 0 ] && [ "$w" -eq 0 ] && [ "$c" -eq 0 ]; then
		echo "ok   $(basename "$p") $subj (0 errors, 0 warnings, 0 checks)"
	else
		echo "FAIL $(basename "$p") $subj ($e errors, $w warnings, $c checks)"
		echo "$report" | sed 's/^/    /'
		bad=1
	fi
done
exit $bad
