#!/bin/bash
# `make demo`: runs as root in the guest. Shows the THP mode and a 64 MiB
# region faulted with and without hugepages, then thpd (installed from the
# package, running since it was installed) at work: the setting it applied
# and persisted, and a program that one of its rules gets hugepages for.
set -u
THP=/sys/kernel/mm/transparent_hugepage
touch=$THP_HELPERS/thp-touch
saved_enabled=$(sed 's/.*\[\(.*\)\].*/\1/' $THP/enabled)
saved_defrag=$(sed 's/.*\[\(.*\)\].*/\1/' $THP/defrag)
DEMO_RULE=/etc/thpd/thpd.conf.d/50-demo.conf
restore() {
	if [ -e $DEMO_RULE ]; then
		rm -f $DEMO_RULE
		systemctl reload thpd.service 2>/dev/null
	fi
	echo "$saved_enabled" >$THP/enabled
	echo "$saved_defrag" >$THP/defrag
}
trap restore EXIT

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

if ! systemctl -q is-active thpd.service; then
	echo
	echo "thpd is not running: $(systemctl is-enabled thpd.service 2>&1)"
	exit 1
fi
echo
echo "== thpd: $(dpkg-query -W -f='${Package} ${Version}' thpd 2>/dev/null), $(systemctl is-enabled thpd.service) and $(systemctl is-active thpd.service) since $(systemctl show -p ActiveEnterTimestamp --value thpd.service)"
echo "\$ thpctl enable madvise     (through thpd, which applies and persists it)"
thpctl enable madvise
echo "\$ cat /var/lib/thpd/state"
cat /var/lib/thpd/state
echo "\$ echo always >enabled; systemctl restart thpd; thpctl status   (the persisted setting comes back)"
echo always >$THP/enabled
systemctl restart thpd.service
thpctl status
echo
echo "a rule in $DEMO_RULE (then systemctl reload thpd):"
cat >$DEMO_RULE <<EOF
[Rule demo]
Exe=$touch
Policy=advise
EOF
sed 's/^/  /' $DEMO_RULE
systemctl reload thpd.service
sleep 1
if [ -e /proc/self/thp_policy ]; then
	# thpd handles the exec event within 100 ms; the program waits 300 ms
	# between its mmap and its first touch
	show "madvise, thpd rule (no wrapper, no madvise)" "$touch" --size 64 --delay-ms 300
	journalctl --sync
	journalctl --no-pager -u thpd -n 3 -o cat THPD_EVENT=rule-applied | sed 's/^/  journal: /'
else
	echo "  (this kernel has no per-process THP policy: rules cannot apply)"
fi
echo
echo "\$ thpctl status"
thpctl status
