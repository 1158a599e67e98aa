# The THP layouts of each kernel generation (tests/host/fixtures) as a
# THP_ROOT for thpctl, and what the host suites 42-46 share to write
# to them as a kernel would and read them back. `load thpctl-gen`.
# shellcheck shell=bash

load thpctl-env

SYS=sys/kernel/mm/transparent_hugepage
FIX=$BATS_TEST_DIRNAME/fixtures
GENERATIONS='6.1 6.1-patched 6.12 6.18'
PER_SIZE='6.12 6.18'

# a fresh copy of generation $1's layout, with a little procfs beside it
use_gen() {
	GEN=$1
	rm -rf "$THP_ROOT"
	mkdir -p "$THP_ROOT/proc/self" "$THP_ROOT/proc/100"
	cp -r "$FIX/$GEN/sys" "$THP_ROOT/"
	printf 'MemTotal: 2000000 kB\nAnonHugePages: 4096 kB\n' >"$THP_ROOT/proc/meminfo"
	printf 'thp_fault_alloc 2\nthp_fault_fallback 1\n' >"$THP_ROOT/proc/vmstat"
	printf 'Node 0, zone DMA32 0 0 0 0 0 0 0 0 0 2 1\n' >"$THP_ROOT/proc/buddyinfo"
	echo app >"$THP_ROOT/proc/100/comm"
	printf 'Rss: 8192 kB\nAnonymous: 8192 kB\nAnonHugePages: 4096 kB\n' >"$THP_ROOT/proc/100/smaps_rollup"
	if [ "$GEN" = 6.1-patched ]; then
		echo default >"$THP_ROOT/proc/self/thp_policy"
		echo advise >"$THP_ROOT/proc/100/thp_policy"
		printf 'thp_fault_alloc 2\nthp_zero_page_fault 2\n' >"$THP_ROOT/proc/100/thp_stat"
	fi
}

# As the kernel shows a knob after a store: the fixture's word list with the
# written word in brackets (a plain file keeps the bare word).
settle() {
	local f rel w list new
	while IFS= read -r f; do
		rel=${f#"$THP_ROOT"/}
		[ -f "$FIX/$GEN/$rel" ] || continue
		w=$(<"$f")
		[[ $w == *'['* ]] && continue
		list=$(tr -d '[]' <"$FIX/$GEN/$rel")
		[[ " $list " == *" $w "* ]] || continue
		new=" $list "
		new=${new/ $w / [$w] }
		new=${new# }
		echo "${new% }" >"$f"
	done < <(find "$THP_ROOT/$SYS" -path '*/khugepaged' -prune -o -type f \
		\( -name enabled -o -name shmem_enabled -o -name defrag \) -print)
}

# set knob (relative to the THP directory) to word, as the kernel shows it
put() {
	echo "$2" >"$THP_ROOT/$SYS/$1"
	settle
}

bracketed() {
	local v
	v=$(<"$1")
	v=${v#*[}
	echo "${v%%]*}"
}

is_per_size() { [[ " $PER_SIZE " == *" $1 "* ]]; }

status_json() {
	run -0 --separate-stderr "$THPCTL" status --json
	STATUS=$output
	jq -e . >/dev/null <<<"$STATUS" || fail "$GEN: status --json is not JSON: $STATUS"
}

# jq expression on the last status --json, must be true
sj() {
	jq -e "$1" >/dev/null <<<"$STATUS" || fail "$GEN: status --json: $1 is false in: $STATUS"
}
