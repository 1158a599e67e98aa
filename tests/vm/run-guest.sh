#!/bin/bash
# Boot the thp-stack guest under QEMU and run something in it.
#
# usage: run-guest.sh --payload DIR --mode check|exec|shell [options] [-- ARGS]
#   --suites "a.bats b.bats"  check: only these (paths relative to tests/bats
#                             or under it); default all, then the after-reboot
#                             suites in tests/bats/reboot/ after a guest reboot
#   --filter REGEX            check: only tests whose name matches (bats --filter)
#   --script PATH             exec: run PATH as root in the guest with ARGS
#   --timeout SEC             hard limit per boot (default: check 3600,
#                             exec 1800, shell 14400); THP_VM_TIMEOUT too
#   --kvm                     use KVM instead of TCG (opt-in; slow here)
#   --memory MIB              guest memory (default 2048)
#   --cmdline "..."           extra kernel command line
#   --smp N                   guest CPUs (default 2)
#   --cpu MODEL               QEMU's CPU model (default max,erms=off,fsrm=off)
#   --icount SPEC             deterministic TCG: guest time follows executed
#                             instructions (e.g. shift=3,sleep=off; needs --smp 1)
#   --stock SERIES            boot Debian's own stock cloud kernel of SERIES
#                             (6.1 or 6.12, the newest apt offers) with its
#                             initrd, on the stock variant of the image
#                             (build-image.sh --stock), instead of our kernel
# env: THP_BASE=6.1|6.12 (which series: tests/vm/build-kernel.sh builds it,
#      and its kselftests go into this run's payload), THP_KERNEL=bzImage (use
#      this kernel, not the cached build of the series) with
#      THP_KSELFTESTS=DIR (the kselftests built with it), THP_CACHE,
#      THP_KCONFIG_FLAVOR/THP_KCONFIG_EXTRA (debug kernel),
#      THP_STRESS_SECONDS (70-stress.bats's duration, passed into the guest;
#      the check boot's default limit grows by as much),
#      THP_COLLAPSE_BUDGET=skip (55-thpd-collapse.bats's budget tests skip:
#      make check's patched 6.12 boot, which leaves them to patched 6.1)
#
# watchdog_thresh=60: a TCG vCPU thread starved by a loaded host looks like a
# CPU stuck in the kernel; at the default 10 (a report after 20 s) a grep
# reading procfs was reported as a soft lockup at host load 10. Real lockups
# are still reported, after 120 s.
# erms=off,fsrm=off: with ERMS the kernel clears and copies pages with
# `rep stosb`/`rep movsb`, and under TCG a byte-wide rep store into a page
# that held translated code (page cache freed by reclaim or drop_caches)
# takes the slow path for every byte: the first 256 MiB 4 KiB-page touch
# after `drop_caches` took 38-53 s with `-cpu max` and 11 s without ERMS
# (1 s once those pages are clean); 12-back-to-back.bats took 116 s and
# 58 s. The rest of `max` (LA57, PKU, SMAP, PCID) stays.
# no_timer_check: under a loaded TCG host the kernel's IO-APIC timer check can
# fail ("IO-APIC + timer doesn't work") and panic the boot (seen here once).
#
# Results come back on a 9p share, never the console (DESIGN.md). Debian's
# cloud kernels build no 9p (CONFIG_NET_9P is not set), so a stock boot uses
# the disk transport instead (thp.transport=disk, see guest/thp-guest-boot):
# the payload as a read-only ext4 disk, the results on an ext4 disk read back
# with debugfs after each boot (no loop mount), the stream live on a
# virtio-serial port. The guest's harness sees the same /mnt/payload and
# /mnt/results either way. Exit status:
# the suite's or script's; 124 on timeout; 1 when the console or dmesg shows a
# kernel splat (BUG, WARNING, Oops, lockdep, KASAN, hung task), even if the
# suites passed.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
payload= mode= suites= filter= script= timeout=${THP_VM_TIMEOUT:-} accel=tcg,thread=multi
memory=2048 cmdline_extra= smp=2 icount= stock= cpu=max,erms=off,fsrm=off
while [ $# -gt 0 ]; do
	case $1 in
	--payload) payload=$2; shift 2 ;;
	--mode) mode=$2; shift 2 ;;
	--suites) suites=$2; shift 2 ;;
	--filter) filter=$2; shift 2 ;;
	--script) script=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--kvm) accel=kvm; shift ;;
	--memory) memory=$2; shift 2 ;;
	--cmdline) cmdline_extra=$2; shift 2 ;;
	--smp) smp=$2; shift 2 ;;
	--cpu) cpu=$2; shift 2 ;;
	--icount) icount=$2; accel=tcg; shift 2 ;;
	--stock) stock=$2; shift 2 ;;
	--) shift; break ;;
	*) echo "run-guest: unknown option $1" >&2; exit 2 ;;
	esac
done
stress=${THP_STRESS_SECONDS:-}
[[ -z $stress || $stress =~ ^[1-9][0-9]{0,5}$ ]] ||
	{ echo "run-guest: THP_STRESS_SECONDS='$stress' is not a number of seconds" >&2; exit 2; }
budget=${THP_COLLAPSE_BUDGET:-}
case $budget in
'' | skip) ;;
*) echo "run-guest: THP_COLLAPSE_BUDGET='$budget': the one value is skip" >&2; exit 2 ;;
esac
case $stock in
'' | 6.1 | 6.12) ;;
*) echo "run-guest: --stock '$stock': the stock kernels are 6.1 and 6.12" >&2; exit 2 ;;
esac
case $mode in
check) : "${timeout:=$((3600 + ${stress:-0}))}" ;;
exec) : "${timeout:=1800}"; [ -n "$script" ] || { echo "run-guest: --mode exec needs --script" >&2; exit 2; } ;;
shell) : "${timeout:=14400}" ;;
*) echo "run-guest: --mode check|exec|shell" >&2; exit 2 ;;
esac
[ -d "$payload" ] || { echo "run-guest: no payload at '$payload' (make payload)" >&2; exit 2; }

log() { echo "run-guest: $*" >&2; }

image= initrd= transport=9p kselftests=
if [ -n "$stock" ]; then
	image=$("$top/tests/vm/build-image.sh" --stock | tail -1)
	kver=$(awk -v s="$stock" '$1 == s { print $2 }' "$(dirname "$image")/kernels")
	[ -n "$kver" ] || { log "--stock $stock: no such series (have: $(cut -d' ' -f1 "$(dirname "$image")/kernels" | xargs))"; exit 2; }
	kernel=$(dirname "$image")/vmlinuz-$kver
	initrd=$(dirname "$image")/initrd.img-$kver
	transport=disk
	log "kernel: Debian's stock $kver with its initrd"
elif [ -n "${THP_KERNEL:-}" ]; then
	kernel=$THP_KERNEL
	kselftests=${THP_KSELFTESTS:-}
	log "kernel: $kernel (THP_KERNEL)${kselftests:+, kselftests from $kselftests}"
else
	# shellcheck disable=SC2086
	kernel=$("$top/tests/vm/build-kernel.sh" ${THP_KCONFIG_FLAVOR:+--flavor $THP_KCONFIG_FLAVOR} ${THP_KCONFIG_EXTRA:-} | tail -1)
	kselftests=$(dirname "$kernel")/kselftests
	log "kernel: ${THP_BASE:-6.1} series, $(cat "$(dirname "$kernel")/VERSION" 2>/dev/null)"
fi
[ -n "$image" ] || image=$("$top/tests/vm/build-image.sh" | tail -1)
[ -f "$kernel" ] && [ -f "$image" ] && { [ -z "$initrd" ] || [ -f "$initrd" ]; }

runs=$top/build/vm
mkdir -p "$runs"
run=$(mktemp -d "$runs/run-$(date +%Y%m%d-%H%M%S)-XXXX")
results=$run/results
mkdir -p "$results" "$run/payload"
ln -sfn "$(basename "$run")" "$runs/last"
log "run directory: $run"

# a private copy of the payload, so that concurrent runs do not share one
(
	flock 9
	cp -a "$payload/." "$run/payload/"
) 9>"$payload.lock"
# the kselftests built with this kernel (25-kselftests.bats runs them)
rm -rf "$run/payload/kselftests"
[ -z "$kselftests" ] || [ ! -d "$kselftests" ] || cp -r "$kselftests" "$run/payload/kselftests"
{
	echo "MODE=$mode"
	printf 'SUITES=%q\n' "$suites"
	printf 'FILTER=%q\n' "$filter"
	[ -z "$script" ] || echo "SCRIPT=script"
	[ -z "$stress" ] || echo "export THP_STRESS_SECONDS=$stress"
	[ -z "$budget" ] || echo "export THP_COLLAPSE_BUDGET=$budget"
} >"$run/payload/run.conf"
if [ -n "$script" ]; then
	mkdir -p "$run/payload/exec"
	cp "$script" "$run/payload/exec/script"
	chmod +x "$run/payload/exec/script"
	: >"$run/payload/exec/args"
	for a in "$@"; do printf '%s\n' "$a" >>"$run/payload/exec/args"; done
fi
qemu-img create -q -f qcow2 -F raw -b "$image" "$run/disk.qcow2"
: >"$results/stream"
chmod 0777 "$results"

# A task blocked 10 minutes panics the guest (panic=-1 and -no-reboot end
# QEMU): a hang then costs that, not the whole boot timeout, and the boot
# fails with the blocked task's stack on the console.
cmdline="console=ttyS0 root=/dev/vda rw panic=-1 no_timer_check watchdog_thresh=60"
cmdline+=" sysctl.kernel.hung_task_panic=1 sysctl.kernel.hung_task_timeout_secs=600"
cmdline+=" thp.harness=1 ${icount:+thp.icount=1 }$cmdline_extra"
# cache=unsafe: the guest's flushes (journald's syncs, which the suites ask
# for often, and apt's) are not passed on to the host as fdatasync, which
# waits on a disk the other guest keeps busy. Both disks are thrown away
# with the run, so a flush protects nothing (the results disk is read
# after QEMU has written it and exited).
qemu=(qemu-system-x86_64 -accel "$accel" -cpu "$cpu" -smp "$smp" -m "$memory"
	${icount:+-icount "$icount"}
	-no-reboot -nic none
	-kernel "$kernel" ${initrd:+-initrd "$initrd"}
	-drive "file=$run/disk.qcow2,if=virtio,format=qcow2,cache=unsafe")
if [ $transport = 9p ]; then
	qemu+=(-virtfs "local,path=$run/payload,mount_tag=payload,security_model=none,readonly=on"
		-virtfs "local,path=$results,mount_tag=results,security_model=none")
else
	# sizes: the payload and a margin; results hold journals and dmesg of
	# every boot (sparse files, so the unused part costs nothing)
	mb=$(($(du -sm "$run/payload" | cut -f1) + 64))
	truncate -s "${mb}M" "$run/payload.img"
	mkfs.ext4 -q -F -O ^has_journal -L thp-payload -d "$run/payload" "$run/payload.img"
	truncate -s 1G "$run/results.img"
	mkfs.ext4 -q -F -O ^has_journal -L thp-results -E root_owner=0:0 "$run/results.img"
	qemu+=(-drive "file=$run/payload.img,if=virtio,format=raw,readonly=on"
		-drive "file=$run/results.img,if=virtio,format=raw,cache=unsafe"
		-device virtio-serial-pci
		-chardev "file,id=thpstream,path=$results/stream,append=on"
		-device virtserialport,chardev=thpstream,name=thp.stream)
	cmdline="$cmdline thp.transport=disk"
fi

# disk transport: copy what the guest wrote to the results disk into
# $results (the stream, which the host has been receiving live, at the end)
collect() {
	[ $transport = disk ] || return 0
	rm -rf "$run/results.disk"
	mkdir -p "$run/results.disk"
	debugfs -R "rdump / $run/results.disk" "$run/results.img" >/dev/null 2>"$run/debugfs.log" ||
		{ log "reading the results disk failed: $(tail -3 "$run/debugfs.log")"; return 0; }
	local d=$run/results.disk
	find "$d" -mindepth 1 -maxdepth 1 ! -name lost+found ! -name stream -exec cp -a -t "$results" {} +
	[ "${1:-}" != final ] || [ ! -f "$d/stream" ] || cp "$d/stream" "$results/stream"
}

if [ "$mode" = shell ]; then
	log "root shell on the console; 'poweroff' leaves (Ctrl-a x kills QEMU)"
	exec timeout -k 10 "$timeout" "${qemu[@]}" -nographic -append "$cmdline"
fi

cmdline="$cmdline systemd.mask=serial-getty@ttyS0.service"
tail -n +1 -F "$results/stream" 2>/dev/null &
tailpid=$!
trap 'kill $tailpid 2>/dev/null || true' EXIT

# CPU seconds (user+sys) of this script's children that have ended
children_cpu() { awk -v t="$(getconf CLK_TCK)" '{ print int(($16 + $17) / t) }' "/proc/$$/stat"; }

status=0
phase=1
retried=
while :; do
	log "boot $phase (timeout ${timeout}s, accel $accel)"
	start=$(date +%s)
	cpu0=$(children_cpu)
	streamed=$(stat -c %s "$results/stream")
	set +e
	timeout -k 10 "$timeout" "${qemu[@]}" -display none -monitor none \
		-serial "file:$run/console.$phase.log" -append "$cmdline" </dev/null
	qrc=$?
	set -e
	# QEMU's CPU time against the wall time: how busy the guest kept the
	# host (a guest that mostly waits could share the host with another)
	wall=$(($(date +%s) - start)) cpu=$(($(children_cpu) - cpu0))
	log "boot $phase ended after $wall s, QEMU used $cpu s of CPU ($(awk -v c="$cpu" -v w="$wall" 'BEGIN { printf "%.2f", w ? c / w : 0 }') cores on average)"
	collect
	# A kernel that panicked before the harness said a word ran no test:
	# seen with Debian's stock 6.12 under TCG (an int3 Oops while patching
	# static keys at 2 s, once in about 20 boots). Boot once more; the
	# crashed console stays as crashed-console.N.log, outside the splat
	# check, and the run says so. A kernel that always dies still fails.
	if [ -z "$retried" ] && [ $qrc = 0 ] && [ ! -f "$results/rc.$phase" ] &&
		[ "$(stat -c %s "$results/stream")" = "$streamed" ] &&
		grep -q "Kernel panic" "$run/console.$phase.log"; then
		log "boot $phase: the kernel panicked before the harness started; booting again once:"
		grep -E "Oops|BUG|Kernel panic" "$run/console.$phase.log" | head -3 >&2 || true
		mv "$run/console.$phase.log" "$run/crashed-console.$phase.log"
		retried=1
		continue
	fi
	if [ $qrc = 124 ] || [ $qrc = 137 ]; then
		log "TIMEOUT after ${timeout}s in boot $phase; running: $(cat "$results/current" 2>/dev/null || echo '(no test started)')"
		log "console: $run/console.$phase.log; last lines:"
		tail -20 "$run/console.$phase.log" >&2 || true
		status=124
		break
	fi
	next=$(cat "$results/phase" 2>/dev/null || echo 1)
	if [ -f "$results/rc.$phase" ] && [ "$next" -gt "$phase" ] && [ "$phase" -lt 3 ]; then
		phase=$next
		continue
	fi
	break
done
sleep 0.3
kill $tailpid 2>/dev/null || true
collect final

for p in $(seq 1 "$phase"); do
	if [ ! -f "$results/rc.$p" ]; then
		[ $status != 0 ] || { log "boot $p ended without a result (guest crash? see $run/console.$p.log)"; tail -20 "$run/console.$p.log" >&2 || true; }
		status=${status/#0/1}
		continue
	fi
	rc=$(cat "$results/rc.$p")
	[ "$rc" = 0 ] || { [ $status != 0 ] || status=$rc; }
done

# kernel splats fail the run whatever the suites said
splat='(BUG:|WARNING:|Oops|general protection fault|Kernel panic|kernel BUG at|KASAN|UBSAN|blocked for more than|possible circular locking|possible recursive locking|inconsistent lock state|list_(add|del) corruption|Bad page (state|map)|page dumped because)'
if grep -hE "^\[ *[0-9]+\.[0-9]+\] .*$splat" "$run"/console.*.log "$results"/dmesg.* 2>/dev/null | sort -u >"$run/splats" && [ -s "$run/splats" ]; then
	log "KERNEL SPLAT on the console or in dmesg:"
	head -20 "$run/splats" >&2
	[ $status != 0 ] || status=1
fi

if [ "$mode" = check ]; then
	# where the time went: the slowest suites (guest seconds, tap-formatter)
	if ls "$results"/times.* >/dev/null 2>&1; then
		log "seconds per suite, slowest first: $(awk '$1 == "suite" { printf "%s %s\n", $2, $3 }' "$results"/times.* |
			sort -rn | awk '{ printf "%s%s %.0f", (NR > 1 ? ", " : ""), $2, $1 }')"
	fi
	# each failed test with its suite (make check repeats them at its end)
	"$top/tests/vm/tap-failed.sh" "$results" | sed 's/^/run-guest: failed: /' >&2
	"$top/tests/vm/tap-summary.sh" guest "$results"/tap.* >&2
	# make check's closing line counts every guest run of the invocation
	mkdir -p "$top/build/results"
	# (two runs of make check's lanes may end at once: one at a time)
	(
		flock 9
		cat "$results"/tap.* 2>/dev/null || true
		[ $status = 0 ] || echo "not ok - guest run $(basename "$run") failed (exit $status)"
	) 9>>"$top/build/results/guest.tap.lock" >>"$top/build/results/guest.tap"
fi
log "results: $results (exit $status)"
exit $status
