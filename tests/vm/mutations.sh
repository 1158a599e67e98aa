#!/bin/bash
# The mutation table of a kernel series (issue 26, finding 7): for each
# one-line change in kernel/<base>/mutations.txt, build the patched tree with
# that change, boot it, run the kselftest thp_controls (and the guest race
# helpers the mutation names), and report which tests failed and whether the
# test it names did. A mutation no test catches is a gap in the tests.
#
# The guest boots fast: no disk image, no initrd, no systemd. Its root is a
# read-only 9p share holding tests/vm/mutation-init.c (PID 1), the static
# kselftest thp_controls and the static helper thp-policy; PID 1 runs them
# and powers off. The unmutated tree runs first, every test and race check
# included, and must pass, or nothing else runs.
#
# The tree: linux-source-<base> with the series applied, in
# $THP_CACHE/mutations-<base>/ (unpacked, configured with kconfig.sh like
# `make kernel`, and built once: 15-25 min of CPU; every mutation after that
# rebuilds one or two files and relinks). --tree/--obj use another patched
# tree instead (e.g. a git worktree of the series branch). Each mutation is
# applied with `git apply` and reverted after its boot, also on failure.
#
# Bases: 6.1 (the default) and 6.12; THP_BASE= or --base picks one. What
# differs is the kselftest's directory (selftests/vm on 6.1, selftests/mm
# on 6.12) and the helper sources it links (6.12's also thp_settings.c),
# as tests/vm/build-kernel.sh builds it; the guest's race helper, PID 1 and
# the config fragments are the same.
#
# usage: mutations.sh [--base 6.1|6.12] [--tree SRC --obj OBJ] [--list] [NAME...]
#   NAME...    only these mutations (the unmutated run always comes first)
#   --list     print the mutations and the test each names, build nothing
# env: THP_MUT_JOBS (make -j, default 2), THP_MUT_TIMEOUT (s per boot, 1200),
#      THP_RACE_ROUNDS (vfork-race and fork-race rounds, default 3000;
#      exec-thread-race runs a tenth of them, as 26-review-v3.bats does)
# Results: build/mutations/ (6.1) or build/mutations-<base>/ (the others):
# summary.txt (one line per mutation, with the build and boot seconds),
# table.txt (the same in <= 76 columns, for the cover letter), each boot's
# console log.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/vm/lib.sh
. "$top/tests/vm/lib.sh"
cache=${THP_CACHE:-/var/cache/thp-stack}
jobs=${THP_MUT_JOBS:-2}
boot_timeout=${THP_MUT_TIMEOUT:-1200}
rounds=${THP_RACE_ROUNDS:-3000}

base=${THP_BASE:-6.1} src='' obj='' list=''
while [ $# -gt 0 ]; do
	case $1 in
	--base) base=$2; shift 2 ;;
	--tree) src=$(realpath "$2"); shift 2 ;;
	--obj) obj=$(realpath -m "$2"); shift 2 ;;
	--list) list=1; shift ;;
	-*) echo "mutations: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
done
data=$top/kernel/$base/mutations.txt
series=$top/kernel/$base/thp.patch
log() { echo "mutations: $*" >&2; }
# the base's kselftest: its directory under tools/testing/selftests and the
# helper sources it links (build-kernel.sh's kst_dir_* and kst_helpers_*)
case $base in
6.1) kst_dir=vm kst_helpers="vm_util.c" ;;
6.12) kst_dir=mm kst_helpers="vm_util.c thp_settings.c" ;;
*) log "base '$base': the bases are 6.1 and 6.12"; exit 2 ;;
esac
# 6.1's results stay where docs/testing.md says; another base's beside them
out=$top/build/mutations
[ "$base" = 6.1 ] || out+=-$base
[ -f "$data" ] || { log "no kernel/$base/mutations.txt"; exit 2; }
[ -z "$src$obj" ] || { [ -n "$src" ] && [ -n "$obj" ]; } || { log "--tree and --obj go together"; exit 2; }

# kernel/<base>/mutations.txt: records of "mutation NAME", "change WHAT",
# "expect TEST...", optional "also ..." (what else catches it, not run
# here) and a git diff; "#" lines are comments, in the header and before a
# record (no line of a git diff starts with "#")
work=$cache/mutations-$base
mkdir -p "$work"
rm -rf "$work/diffs"
mkdir -p "$work/diffs"
awk -v d="$work/diffs" '
	/^#/ { next }
	/^mutation / { f = d "/" $2; print $2 >>(d "/order"); next }
	/^change / { sub(/^change /, ""); print >(f ".change"); next }
	/^expect / { sub(/^expect /, ""); print >(f ".expect"); next }
	/^also / { sub(/^also /, ""); print >(f ".also"); next }
	f { print >(f ".diff") }' "$data"
mapfile -t all <"$work/diffs/order"
names=("$@")
[ ${#names[@]} -gt 0 ] || names=("${all[@]}")
for n in "${names[@]}"; do
	[ -f "$work/diffs/$n.diff" ] || { log "no mutation '$n' in kernel/$base/mutations.txt"; exit 2; }
done
files_of() { sed -n 's|^+++ b/||p' "$work/diffs/$1.diff" | sort -u | paste -sd' '; }
if [ -n "$list" ]; then
	for n in "${names[@]}"; do
		printf '%-26s %-18s %s\n' "$n" "$(files_of "$n")" "$(cat "$work/diffs/$n.expect")"
	done
	exit 0
fi

# the patched tree, unless given; rebuilt when the series, the tarball or
# the config fragments change
# (kernel/mutations.config adds Yama: 6.1's write-attach mutation needs it;
# the 6.12 kernel has it too, as Debian's do)
frags=("$top/kernel/guest.config" "$top/kernel/thp-stack.config" "$top/kernel/mutations.config")
if [ -z "$src" ]; then
	src=$work/linux-source-$base obj=$work/obj
	tarball=/usr/src/linux-source-$base.tar.xz
	stamp=$({ stat -c '%s %Y' "$tarball"; cat "$series" "${frags[@]}"; } | sha256sum | cut -c1-16)
	if [ "$(cat "$work/stamp" 2>/dev/null)" != "$stamp" ]; then
		log "unpacking linux-source-$base and applying kernel/$base/thp.patch into $work"
		rm -rf "$src" "$obj" "$work/split" "$work/stamp"
		tar -C "$work" -xf "$tarball"
		split_series "$series" "$work/split" >/dev/null
		for p in "$work"/split/*; do
			(cd "$src" && git apply --whitespace=error-all "$p")
		done
		"$top/tests/vm/kconfig.sh" "$src" "$obj" "${frags[@]}"
		echo "$stamp" >"$work/stamp"
	fi
elif [ ! -f "$obj/.config" ]; then
	"$top/tests/vm/kconfig.sh" "$src" "$obj" "${frags[@]}"
fi

# the guest's root: PID 1, the kselftest and the race helper, all static
root=$work/root
rm -rf "$root"
mkdir -p "$root"/{proc,sys,tmp,dev} "$out"
gcc -static -std=gnu11 -O2 -Wall -Wextra -Werror "$top/tests/vm/mutation-init.c" -o "$root/init"
make -s -C "$top" BUILD="$work/static" LDFLAGS=-static THP_LIBS=-lpthread "$work/static/helpers/thp-policy"
cp "$work/static/helpers/thp-policy" "$root/"
[ -f "$obj/usr/include/linux/prctl.h" ] || nice -n 19 make -s -C "$src" O="$obj" headers >/dev/null
sel=$src/tools/testing/selftests/$kst_dir
helpers=()
for h in $kst_helpers; do helpers+=("$sel/$h"); done
gcc -static -O2 -Wall -D_GNU_SOURCE= -I "$sel" -isystem "$obj/usr/include" \
	-isystem "$src/tools/include/uapi" "$sel/thp_controls.c" "${helpers[@]}" \
	-lrt -lpthread -lm -o "$root/thp_controls"

# revert the applied mutation whatever happens
applied=
revert() {
	[ -z "$applied" ] || git -C "$src" apply -R "$work/diffs/$applied.diff" || log "REVERTING $applied FAILED: $src is mutated"
	applied=
}
trap revert EXIT
trap "exit 130" INT TERM

# build: the seconds it took in $secs
build() {
	local t0=$SECONDS
	nice -n 19 make -s -C "$src" O="$obj" -j"$jobs" bzImage >"$out/$1.build.log" 2>&1 ||
		{ tail -20 "$out/$1.build.log" >&2; return 1; }
	secs=$((SECONDS - t0))
}

# boot NAME ITEMS: boot the tree's bzImage running ITEMS (mutation-init.c);
# the console log in $out/NAME.console.log, the seconds in $secs
boot() {
	local t0=$SECONDS
	timeout -k 10 "$boot_timeout" nice -n 19 qemu-system-x86_64 -accel tcg,thread=multi -cpu max \
		-smp 2 -m 2G -no-reboot -nic none -display none -monitor none \
		-serial "file:$out/$1.console.log" -kernel "$obj/arch/x86/boot/bzImage" \
		-virtfs "local,path=$root,mount_tag=root,security_model=none,readonly=on" \
		-append "console=ttyS0 root=root rootfstype=9p rootflags=trans=virtio,version=9p2000.L ro init=/init panic=-1 loglevel=5 mutrun=$2" \
		</dev/null >"$out/$1.qemu.log" 2>&1 || true
	secs=$((SECONDS - t0))
	sed -i 's/\r$//' "$out/$1.console.log"
}

# the output of ITEM in LOG, between mutation-init's markers
item_output() { sed -n "/^mutinit: begin $2\$/,/^mutinit: end $2 /p" "$1"; }

# failed LOG: the tests that failed, one per line. Kselftests by their TAP
# name; the races as 26-review-v3.bats judges them: race.vfork,
# race.exec-thread, race.fork; "boot" when the guest did not get to the end,
# "splat" for a kernel warning or oops.
failed() {
	local f=$1 o re
	grep -q '^mutinit: done$' "$f" || echo boot
	! grep -qE '(BUG|WARNING|Oops|Kernel panic)' "$f" || echo splat
	if grep -q '^mutinit: begin kselftest$' "$f"; then
		o=$(item_output "$f" kselftest)
		grep -oE '^not ok [0-9]+ [^ ]+' <<<"$o" | cut -d' ' -f4
		grep -q '^mutinit: end kselftest exit=' <<<"$o" || echo kselftest
	fi
	if grep -q '^mutinit: begin vfork-race:' "$f"; then
		o=$(item_output "$f" "vfork-race:$rounds")
		grep -qE "^rounds=$rounds pre=$rounds flipped=0\$" <<<"$o" || echo race.vfork
	fi
	if grep -q '^mutinit: begin exec-thread-race:' "$f"; then
		o=$(item_output "$f" "exec-thread-race:$((rounds / 10)):disable"; item_output "$f" "exec-thread-race:$((rounds / 10)):advise")
		re='^rounds=[0-9]+ set=[1-9][0-9]* lost=0$'
		[ "$(grep -cE "$re" <<<"$o")" = 2 ] || echo race.exec-thread
	fi
	if grep -q '^mutinit: begin fork-race:' "$f"; then
		o=$(item_output "$f" "fork-race:$rounds")
		grep -qE '^forks=[0-9]+ at_k=[0-9]+ at_k1=[1-9][0-9]* stale=0 markers=[0-9]+$' <<<"$o" || echo race.fork
	fi
}

# the mutation-init items that test EXPECT (the kselftest always runs)
items_for() {
	local items=kselftest t
	for t in $1; do
		case $t in
		race.vfork) items+=",vfork-race:$rounds" ;;
		race.exec-thread) items+=",exec-thread-race:$((rounds / 10)):disable,exec-thread-race:$((rounds / 10)):advise" ;;
		race.fork) items+=",fork-race:$rounds" ;;
		esac
	done
	echo "$items"
}

# table NAME FAILED OK: the record in table.txt, wrapped at 76 columns
table() {
	echo " $1: $(cat "$work/diffs/$1.change")"
	echo "$(files_of "$1"), caught: $3; failed: ${2:-none}" |
		fold -s -w 71 | sed 's/^/     /; s/ *$//'
}

summary=$out/summary.txt
log "building the unmutated tree ($src, objects in $obj)"
build unmutated || { log "the unmutated tree does not build"; exit 1; }
log "  built in $secs s; booting it with every test"
boot unmutated "$(items_for "race.vfork race.exec-thread race.fork")"
bad=$(failed "$out/unmutated.console.log" | paste -sd' ')
skips=$(grep -cE '^ok [0-9]+ .*# SKIP' "$out/unmutated.console.log" || true)
log "  booted in $secs s: $(grep -cE '^ok [0-9]+ ' "$out/unmutated.console.log") ok ($skips skipped), failed: ${bad:-none}"
if [ -n "$bad" ]; then
	log "the unmutated series fails $bad (log: $out/unmutated.console.log): nothing to compare against"
	exit 1
fi
{
	echo "# kernel/$base/mutations.txt on $(git -C "$top" rev-parse --short HEAD), $(date -u +%F)"
	printf '%-26s %-17s %-6s %-5s %-8s %s\n' mutation file build boot expected "tests that failed"
} >"$summary"
: >"$out/table.txt"
caught=0 missed=0
for n in "${names[@]}"; do
	expect=$(cat "$work/diffs/$n.expect")
	git -C "$src" apply --check "$work/diffs/$n.diff" || { log "$n does not apply: mutations.txt is stale"; exit 1; }
	git -C "$src" apply "$work/diffs/$n.diff"
	applied=$n
	if ! build "$n"; then
		log "$n: the mutated tree does not build (log: $out/$n.build.log)"
		revert
		printf '%-26s %-17s %-6s %-5s %-8s %s\n' "$n" "$(files_of "$n")" - - - "(does not build)" >>"$summary"
		table "$n" "(does not build)" no >>"$out/table.txt"
		missed=$((missed + 1))
		continue
	fi
	bsecs=$secs
	revert
	boot "$n" "$(items_for "$expect")"
	got=$(failed "$out/$n.console.log" | paste -sd' ')
	ok=yes
	for t in $expect; do
		[[ " $got " == *" $t "* ]] || ok=no
	done
	if [ $ok = yes ]; then caught=$((caught + 1)); else missed=$((missed + 1)); fi
	printf '%-26s %-17s %-6s %-5s %-8s %s\n' "$n" "$(files_of "$n")" "${bsecs}s" "${secs}s" \
		"$ok" "${got:-(none)}" | tee -a "$summary" >&2
	table "$n" "$got" "$ok" >>"$out/table.txt"
done
# the unmutated tree again, so that its objects match the source
build unmutated-after || log "rebuilding the unmutated tree failed"
echo "# $caught caught by the test they name, $missed not" >>"$summary"
cat "$summary"
[ "$missed" = 0 ]
