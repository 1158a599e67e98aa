#!/bin/bash
# Run a command and say how long it took (make check's phases): one line
# "NAME: N s wall, load average A -> B" on stderr and in build/results/phases.
# usage: timed.sh NAME COMMAND...
name=$1
shift
start=$(date +%s) load0=$(cut -d' ' -f1 /proc/loadavg)
"$@"
rc=$?
line="$name: $(($(date +%s) - start)) s wall, load average $load0 -> $(cut -d' ' -f1 /proc/loadavg)$([ $rc = 0 ] || echo ", exit $rc")"
mkdir -p build/results
echo "$line" >>build/results/phases
echo "timed: $line" >&2
exit $rc
