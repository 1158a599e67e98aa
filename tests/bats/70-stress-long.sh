#!/bin/bash
# A long stress run in the guest (the guest does not inherit the host's
# environment, so the duration comes in as an argument):
#   THP_VM_TIMEOUT=2400 make vm-exec SCRIPT=tests/bats/70-stress-long.sh ARGS=1800
# vm-exec's boot limit is 1800 s by default: for runs over ~25 minutes add
# THP_VM_TIMEOUT=<seconds + 600> in front of make.
set -u
seconds=${1:-600}
case $seconds in
'' | *[!0-9]*) echo "usage: 70-stress-long.sh SECONDS" >&2; exit 2 ;;
esac
export THP_STRESS_SECONDS=$seconds
exec bats --tap "${THP_BATS:-/opt/thp-stack/bats}/70-stress.bats"
