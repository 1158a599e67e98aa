#!/usr/bin/env bats
# cli/thpctl.bash-completion: what TAB offers at each position.

bats_require_minimum_version 1.5.0
load '/usr/lib/bats/bats-support/load'
load '/usr/lib/bats/bats-assert/load'

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
	assert_output 'status enable shmem defrag run ps policy cgroups metrics'
	run -0 comp thpctl p
	assert_output 'ps policy'
	run -0 comp thpctl s
	assert_output 'status shmem'
	run -0 comp thpctl --
	assert_output '--json --help --version'
	run -0 comp thpctl --json st
	assert_output 'status'
}

@test "values of enable, defrag, policy" {
	run -0 comp thpctl enable ''
	assert_output 'always madvise never inherit 0 1 2'
	run -0 comp thpctl defrag def
	assert_output 'defer defer+madvise'
	run -0 comp thpctl policy $$ ''
	assert_output 'default advise never'
	run -0 comp thpctl policy "$$"
	assert_output --regexp "(^| )$$"'( |$)'
}

@test "run: its options, then the command" {
	run -0 comp thpctl run --n
	assert_output '--never'
	run -0 comp thpctl run -- bas
	assert_output --regexp '(^| )bash( |$)'
	run -0 comp thpctl run --advise bas
	assert_output --regexp '(^| )bash( |$)'
}

@test "ps --sort fields" {
	run -0 comp thpctl ps --sort anon
	assert_output 'anon_huge_kib'
	run -0 comp thpctl ps --sort thp_zero
	assert_output 'thp_zero_page_fault'
}

@test "enable and shmem --size: the sizes this kernel has, after a comma too" {
	export THP_ROOT=$BATS_TEST_DIRNAME/fixtures/6.12
	run -0 comp thpctl enable always --size ''
	assert_output 'all 8K 16K 32K 64K 128K 256K 512K 1M 2M'
	run -0 comp thpctl shmem advise --size 64K,2
	assert_output '64K,256K 64K,2M'
	run -0 comp thpctl shmem w
	assert_output 'within_size'
	run -0 comp thpctl enable --s
	assert_output '--size'
}
