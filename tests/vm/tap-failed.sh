#!/bin/bash
# Name each failed test of one guest run with its suite: "SUITE: NAME" per
# line, "?" for a suite the run did not time. make check repeats these lines
# at its end, where CI's tail of the output shows them.
# usage: tap-failed.sh RESULTS_DIR (a run's tap.N and times.N files)
files=()
for f in "$1"/times.* "$1"/tap.*; do
	[ ! -f "$f" ] || files+=("$f")
done
[ ${#files[@]} != 0 ] || exit 0
# times.N: "test SECONDS SUITE: NAME" (tests/vm/guest/run/tap-formatter)
awk '
	FILENAME ~ /[/]times[.][0-9]+$/ && $1 == "test" {
		t = $0; sub(/^test [^ ]+ /, "", t); i = index(t, ": ")
		suite[substr(t, i + 2)] = substr(t, 1, i - 1)
		next
	}
	FILENAME ~ /[/]tap[.][0-9]+$/ && /^not ok / {
		n = $0; sub(/^not ok [0-9]+ /, "", n)
		printf "%s: %s\n", (n in suite ? suite[n] : "?"), n
	}' "${files[@]}"
