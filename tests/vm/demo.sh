#!/bin/bash
# `make demo`: runs as root in the guest. Shows the THP mode and a 64 MiB
# region faulted with and without hugepages.
set -u
THP=/sys/kernel/mm/transparent_hugepage
touch=$THP_HELPERS/thp-touch
saved_enabled=$(sed 's/.*\[\(.*\)\].*/\1/' $THP/enabled)
saved_defrag=$(sed 's/.*\[\(.*\)\].*/\1/' $THP/defrag)
trap 'echo "$saved_enabled" >$THP/enabled; echo "$saved_defrag" >$THP/defrag' EXIT

field() { sed -n "s/^$1=//p" <<<"$2"; }

show() {
	local title=$1 out
	shift
	echo 3 >/proc/sys/vm/drop_caches
	echo 1 >/proc/sys/vm/compact_memory
	out=$("$@") || { echo "demo: $* failed:"; echo "$out"; exit 1; }
	printf '  %-44s %8s faults  %6s KiB AnonHugePages  %3s thp_fault_alloc  pattern %s\n' \
		"$title" "$(field minflt "$out")" "$(field anon_huge_kib "$out")" \
		"$(field thp_fault_alloc "$out")" "$(field pattern "$out")"
}

echo "== thp-stack demo on $(uname -r)"
echo "enabled: $(cat $THP/enabled)"
echo "defrag:  $(cat $THP/defrag)"
if [ -e $THP/mode ]; then
	echo "mode:    $(cat $THP/mode)   (the RFC's number: 0 madvise, 1 always, 2 always+defrag)"
else
	echo "mode:    (no $THP/mode: this kernel does not carry the thp-stack series)"
fi
command -v thpctl >/dev/null && { echo; echo "\$ thpctl status"; thpctl status; }
echo
echo "first touch of a 64 MiB anonymous region (2 MiB aligned):"
echo always >$THP/enabled
show "always" "$touch" --size 64
echo madvise >$THP/enabled
show "madvise, no advice" "$touch" --size 64
show "madvise, MADV_HUGEPAGE" "$touch" --size 64 --madvise
if command -v thpctl >/dev/null && [ -e /proc/self/thp_policy ]; then
	show "madvise, thpctl run --advise (no madvise)" thpctl run --advise -- "$touch" --size 64
fi
echo never >$THP/enabled
show "never" "$touch" --size 64
echo
echo "AnonHugePages now: $(grep AnonHugePages /proc/meminfo)"
grep -E '^thp_(fault_alloc|fault_fallback|collapse_alloc|split_pmd) ' /proc/vmstat | sed 's/^/  /'
