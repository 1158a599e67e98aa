#!/bin/sh
# capture-thp-layout.sh SRC DEST: copy the files of a THP sysfs directory
# (SRC, e.g. /sys/kernel/mm/transparent_hugepage) and their contents into
# DEST/sys/kernel/mm/transparent_hugepage, a fixture tree for THP_ROOT.
# Only reads SRC. Write-only files are recorded empty. Used on the build
# host (6.18) and in the guests (stock 6.1, 6.12, patched 6.1).
set -eu
[ $# -eq 2 ] || { echo "usage: $0 SRC DEST" >&2; exit 2; }
src=$1
mkdir -p "$2"
dest=$(cd "$2" && pwd)/sys/kernel/mm/transparent_hugepage
[ -r "$src/enabled" ] || { echo "$0: no THP controls under $src" >&2; exit 1; }
rm -rf "$dest"
mkdir -p "$dest"
cd "$src"
find . -type d | while read -r d; do mkdir -p "$dest/$d"; done
find . -type f | while read -r f; do
	cat "$f" >"$dest/$f" 2>/dev/null || : >"$dest/$f"
done
