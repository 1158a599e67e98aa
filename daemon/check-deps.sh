#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Fails when thpd's files depend on each other in a circle.
#
#   daemon/check-deps.sh OBJ...       the call graph of the objects (nm):
#                                     A -> B when A.o uses a symbol B.o defines
#   daemon/check-deps.sh --headers    the include graph of daemon/*.h
#   daemon/check-deps.sh --self-test  a planted circle must be found
#
# Each graph goes through tsort(1), which fails on a loop and names it.
# The intended layering (thpd.h): thpd.c wires; server.c, pressure.c and
# exec-events.c call lifecycle.c; lifecycle.c calls the pure and file
# modules (precedence, originals, persist, config, adaptive, rules); none
# calls back up. Printed as "A -> B" lines after the verdict.
set -euo pipefail

check() {	# $1: what; stdin: "A B" pairs
	local what=$1 pairs err
	pairs=$(sort -u)
	if ! err=$(printf '%s\n' "$pairs" | tsort 2>&1 >/dev/null) || [ -n "$err" ]; then
		echo "not ok - $what: dependency circle"
		printf '%s\n' "$err" | sed 's/^/# /'
		return 1
	fi
	echo "ok - $what: no dependency circle ($(printf "%s\n" "$pairs" | awk "\$1 != \$2" | grep -c .) edges)"
}

objects() {
	local o sym
	declare -A def=()
	for o in "$@"; do
		while read -r sym; do def[$sym]=$(basename "$o" .o); done \
			< <(nm --defined-only -g "$o" | awk 'NF == 3 { print $3 }')
	done
	for o in "$@"; do
		local me
		me=$(basename "$o" .o)
		echo "$me $me"	# every module is a node, even without edges
		nm --undefined-only -g "$o" | awk '{ print $NF }' | while read -r sym; do
			if [ -n "${def[$sym]:-}" ] && [ "${def[$sym]}" != "$me" ]; then
				echo "$me ${def[$sym]}"
			fi
		done
	done
}

headers() {
	local h inc dir
	dir=$(dirname "$0")
	for h in "$dir"/*.h; do
		echo "$(basename "$h") $(basename "$h")"
		sed -n 's/^#include "\(.*\)"/\1/p' "$h" | while read -r inc; do
			if [ -e "$dir/$inc" ]; then echo "$(basename "$h") $inc"; fi
		done
	done
}

case "${1:-}" in
--headers)
	headers | check "daemon/*.h includes"
	;;
--self-test)
	if printf 'server lifecycle\nlifecycle server\n' | check "planted circle" >/dev/null; then
		echo "not ok - the check misses a planted circle"
		exit 1
	fi
	echo "ok - a planted circle (server -> lifecycle -> server) is found"
	;;
"")
	echo "usage: $0 OBJ... | --headers | --self-test" >&2
	exit 2
	;;
*)
	objects "$@" | check "thpd objects ($#) call graph"
	objects "$@" | awk '$1 != $2 { print "# " $1 " -> " $2 }' | sort -u
	;;
esac
