#!/usr/bin/env bats
# cli/thpctl.bash-completion: what TAB offers at each position.

bats_require_minimum_version 1.5.0
load '/usr/lib/bats/bats-support/load'
load '/usr/lib/bats/bats-assert/load'

FIX=$BATS_TEST_DIRNAME/fixtures

setup() {
	[ -x "${BUILD_DIR:?BUILD_DIR must point at the build directory}/thpctl" ] ||
		fail "no $BUILD_DIR/thpctl"
	# the completion asks thpctl, as it finds it on PATH: the one under test
	PATH=$BUILD_DIR:$PATH
	export THPD_SOCKET=$BATS_TEST_TMPDIR/no-thpd.sock
	use_gen 6.12
}

# use_gen GEN: THP_ROOT is a copy of that kernel generation's fixture
use_gen() {
	export THP_ROOT=$BATS_TEST_TMPDIR/root-$1
	rm -rf "$THP_ROOT"
	mkdir -p "$THP_ROOT"
	cp -r "$FIX/$1/." "$THP_ROOT/"
}

# comp WORD...: the completions for the last word (may be '')
comp() {
	# shellcheck disable=SC1091
	source "$BATS_TEST_DIRNAME/../../cli/thpctl.bash-completion"
	COMP_WORDS=("$@")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMPREPLY=()
	_thpctl thpctl "${COMP_WORDS[-1]}" "${COMP_WORDS[-2]}"
	echo "${COMPREPLY[*]}"
}

@test "verbs and global options" {
	run -0 comp thpctl ''
	assert_output 'status enable shmem defrag reset verify run ps policy cgroups metrics khugepaged unit'
	run -0 comp thpctl p
	assert_output 'ps policy'
	run -0 comp thpctl s
	assert_output 'status shmem'
	run -0 comp thpctl --
	assert_output '--json --help --version'
	run -0 comp thpctl --json st
	assert_output 'status'
}

@test "values of enable, shmem, defrag: what this kernel lists, from thpctl" {
	use_gen 6.1
	# no mode file: no numbers offered (a 0 reads as off)
	run -0 comp thpctl enable ''
	assert_output 'always madvise never'
	use_gen 6.1-patched
	run -0 comp thpctl enable ''
	assert_output 'always madvise never 0 1 2'
	run -0 comp thpctl shmem ''
	assert_output 'always within_size advise never deny force'
	run -0 comp thpctl defrag def
	assert_output 'defer defer+madvise'
	use_gen 6.12
	run -0 comp thpctl enable ''
	assert_output 'always madvise never inherit'
	run -0 comp thpctl shmem i
	assert_output 'inherit'
	# a kernel that lists other words: those, and only those
	local t=$THP_ROOT/sys/kernel/mm/transparent_hugepage
	echo 'always [madvise] never sometimes' >"$t/enabled"
	echo 'always defer [madvise] never' >"$t/defrag"
	run -0 comp thpctl enable s
	assert_output 'sometimes'
	run -0 comp thpctl defrag def
	assert_output 'defer'
	# no THP directory at all: nothing, and no message on the terminal
	rm -rf "$t"
	run -0 --separate-stderr comp thpctl enable ''
	assert_output ''
	assert_equal "$stderr" ''
}

@test "enable and shmem WORD with --size: the words those sizes take" {
	local t=$THP_ROOT/sys/kernel/mm/transparent_hugepage
	run -0 comp thpctl enable --size 64K,2M ''
	assert_output 'always inherit madvise never'
	run -0 comp thpctl shmem --size=8K w
	assert_output 'within_size'
	# a word one of the sizes lacks is not offered for the pair
	echo 'always [never]' >"$t/hugepages-64kB/enabled"
	run -0 comp thpctl enable --size 64K,2M ''
	assert_output 'always never'
}

@test "policy PID: the policies, where the kernel has them" {
	use_gen 6.1-patched
	mkdir -p "$THP_ROOT/proc/self"
	echo default >"$THP_ROOT/proc/self/thp_policy"
	run -0 comp thpctl policy $$ ''
	assert_output 'default advise never'
	run -0 comp thpctl policy --json $$ a
	assert_output 'advise'
	run -0 comp thpctl policy "$$"
	assert_output --regexp "(^| )$$"'( |$)'
	# stock: no thp_policy, nothing to set
	rm "$THP_ROOT/proc/self/thp_policy"
	run -0 comp thpctl policy $$ ''
	assert_output ''
}

@test "run: its options, then the command" {
	run -0 comp thpctl run --n
	assert_output '--never'
	run -0 comp thpctl run -- bas
	assert_output --regexp '(^| )bash( |$)'
	run -0 comp thpctl run --advise bas
	assert_output --regexp '(^| )bash( |$)'
}

@test "metrics: its options, --json among them" {
	run -0 comp thpctl metrics --
	assert_output '--output --depth --top --json --help'
	run -0 comp thpctl metrics --j
	assert_output '--json'
}

@test "ps --sort: the fields this kernel gives; cgroups --sort: memory.stat's" {
	use_gen 6.1
	run -0 comp thpctl ps --sort ''
	assert_output 'pid comm anon_huge_kib'
	use_gen 6.1-patched
	mkdir -p "$THP_ROOT/proc/self"
	echo default >"$THP_ROOT/proc/self/thp_policy"
	echo 'thp_fault_alloc 0' >"$THP_ROOT/proc/self/thp_stat"
	run -0 comp thpctl ps --sort anon
	assert_output 'anon_huge_kib'
	run -0 comp thpctl ps --sort thp_zero
	assert_output 'thp_zero_page_fault'
	run -0 comp thpctl ps --sort po
	assert_output 'policy'

	local cg=$THP_ROOT/sys/fs/cgroup
	mkdir -p "$cg/a.slice"
	echo memory >"$cg/cgroup.controllers"
	run -0 comp thpctl cgroups --sort ''
	assert_output 'thp cgroup anon_thp file_thp shmem_thp'
	printf 'anon 1\nanon_thp 0\nfile_thp 0\nshmem_thp 0\nthp_fault_alloc 1\nthp_swpout 0\n' \
		>"$cg/a.slice/memory.stat"
	run -0 comp thpctl cgroups --sort thp
	assert_output 'thp thp_fault_alloc thp_swpout'
}

@test "enable and shmem --size: the sizes with that control, after a comma too" {
	run -0 comp thpctl enable always --size ''
	assert_output 'all 16K 32K 64K 128K 256K 512K 1M 2M'
	run -0 comp thpctl shmem always --size ''
	assert_output 'all 8K 16K 32K 64K 128K 256K 512K 1M 2M'
	run -0 comp thpctl shmem advise --size 64K,2
	assert_output '64K,256K 64K,2M'
	run -0 comp thpctl enable --s
	assert_output '--size'
	use_gen 6.1
	run -0 comp thpctl enable always --size ''
	assert_output ''
}

@test "thpctl --help and thpctl(1) say how to list values" {
	run -0 thpctl --help
	assert_line "'help' as a value lists what this kernel takes there, e.g."
	# a verb's values, from libthp's table, and the pointer to 'help'
	run -0 thpctl enable --help
	assert_line 'MODE: always, madvise, never, 0, 1 or 2.'
	assert_line 'VALUE with --size: always, inherit, madvise or never.'
	assert_line "'help' in its place lists what this kernel takes."
	run -0 thpctl defrag --help
	assert_line 'VALUE: always, defer, defer+madvise, madvise or never.'
	# thpctl(1)'s SYNOPSIS names the same words for each verb
	local v line w man=$BATS_TEST_DIRNAME/../../man/thpctl.1.scd
	for v in enable shmem defrag policy; do
		run -0 thpctl "$v" --help
		while IFS= read -r line; do
			[[ $line =~ ^(MODE|VALUE|POLICY)( with --size)?:\ (.*)\.$ ]] || continue
			for w in ${BASH_REMATCH[3]//,/ }; do
				[ "$w" = or ] && continue
				grep -qF "*$v* " "$man" && grep -F "*$v* " "$man" | grep -qF "*$w*" ||
					fail "thpctl(1) SYNOPSIS: no *$w* for $v"
			done
		done <<<"$output"
	done
	grep -q '^# LISTING VALUES$' "$BATS_TEST_DIRNAME/../../man/thpctl.1.scd" ||
		fail "thpctl(1) has no LISTING VALUES section"
}

@test "--opt=value: the values of the option, as one word and as bash splits it at '='" {
	use_gen 6.1
	# one word (COMP_WORDBREAKS without '=', or bash-completion's -n =)
	run -0 comp thpctl ps --sort=an
	assert_output '--sort=anon_huge_kib'
	run -0 comp thpctl ps --sort=
	assert_output '--sort=pid --sort=comm --sort=anon_huge_kib'
	# bash's own split: "--sort" "=" "an"
	run -0 comp thpctl ps --sort = an
	assert_output 'anon_huge_kib'
	run -0 comp thpctl ps --sort =
	assert_output 'pid comm anon_huge_kib'
	use_gen 6.12
	run -0 comp thpctl enable always --size=6
	assert_output '--size=64K'
	run -0 comp thpctl shmem advise --size=64K,2
	assert_output '--size=64K,256K --size=64K,2M'
	run -0 comp thpctl enable always --size = 64K,2
	assert_output '64K,256K 64K,2M'
	# the words those sizes take, after --size = LIST
	run -0 comp thpctl enable --size = 64K,2M ''
	assert_output 'always inherit madvise never'
	run -0 comp thpctl --json=s
	assert_output '--json=short'
	run -0 comp thpctl status --json = ''
	assert_output 'pretty short'
	# a global --json=short split by bash is no verb
	run -0 comp thpctl --json = short st
	assert_output 'status'
	local cg=$THP_ROOT/sys/fs/cgroup
	mkdir -p "$cg/a.slice"
	echo memory >"$cg/cgroup.controllers"
	printf 'anon_thp 0\nfile_thp 0\nshmem_thp 0\nthp_fault_alloc 1\n' >"$cg/a.slice/memory.stat"
	run -0 comp thpctl cgroups --sort=thp_f
	assert_output '--sort=thp_fault_alloc'
	run -0 comp thpctl metrics --output="$BATS_TEST_TMPDIR/no"
	assert_output ''
	: >"$BATS_TEST_TMPDIR/thp.prom"
	run -0 comp thpctl metrics --output="$BATS_TEST_TMPDIR/thp."
	assert_output "--output=$BATS_TEST_TMPDIR/thp.prom"
}

@test "khugepaged: show or set, then the settings this kernel has, KEY=; status --all; run -q" {
	run -0 comp thpctl khugepaged ''
	assert_output 'show set'
	run -0 comp thpctl khugepaged set max
	assert_output 'max_ptes_none= max_ptes_swap= max_ptes_shared='
	rm "$THP_ROOT/sys/kernel/mm/transparent_hugepage/khugepaged/max_ptes_shared"
	run -0 comp thpctl khugepaged set max_ptes_s
	assert_output 'max_ptes_swap='
	run -0 comp thpctl status --a
	assert_output '--all'
	run -0 comp thpctl run --q
	assert_output '--quiet'
	run -0 comp thpctl unit app.service ''
	assert_output 'advise advised-only never default'
}
