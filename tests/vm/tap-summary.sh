#!/bin/bash
# Count TAP results: "LABEL: N passed, N failed, N skipped".
# usage: tap-summary.sh LABEL FILE...
label=$1
shift
cat "$@" 2>/dev/null | awk -v label="$label" '
	/^ok / { if (tolower($0) ~ /# skip/) s++; else p++ }
	/^not ok / { if (tolower($0) ~ /# todo/) s++; else f++ }
	END { printf "%s: %d passed, %d failed, %d skipped\n", label, p, f, s }'
