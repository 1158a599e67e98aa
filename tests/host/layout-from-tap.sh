#!/bin/sh
# layout-from-tap.sh TAP DEST: rebuild a fixture tree (DEST/sys/kernel/mm/
# transparent_hugepage) from the "# layout FILE: VALUE" lines that the guest
# suite 41-thpctl-mthp.bats prints for the kernel it ran on (every THP sysfs
# file holds one line).
set -eu
[ $# -eq 2 ] || { echo "usage: $0 TAP DEST" >&2; exit 2; }
dest=$2/sys/kernel/mm/transparent_hugepage
grep -q '^# layout [^ ]*: ' "$1" || { echo "$0: no layout lines in $1" >&2; exit 1; }
rm -rf "$dest"
mkdir -p "$dest"
sed -n 's/^# layout \([^ ]*\): \(.*\)$/\1 \2/p' "$1" | while read -r file value; do
	case $file in
	*..*|/*) echo "$0: refusing path $file" >&2; exit 1 ;;
	esac
	mkdir -p "$dest/$(dirname "$file")"
	printf '%s\n' "$value" >"$dest/$file"
done
