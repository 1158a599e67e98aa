#!/usr/bin/env bats
# THP at fault in each mode, with and without MADV_HUGEPAGE: the VMA's
# AnonHugePages, the thp_fault_* events and the data pattern.

load helpers

setup_file() {
	thp_save_knobs
	# fault-time behaviour only: keep khugepaged from changing the picture
	echo 10000 >"$THP/khugepaged/scan_sleep_millisecs"
	echo 0 >/proc/sys/vm/compact_unevictable_allowed 2>/dev/null || true
	echo 3 >/proc/sys/vm/drop_caches
	echo 1 >/proc/sys/vm/compact_memory
}

teardown_file() {
	thp_restore_knobs
}

touch8() {
	run -0 "$THP_HELPERS/thp-touch" --size 8 "$@"
	assert_kv pattern = ok
	assert_kv size_kib -eq 8192
}

@test "always: plain anonymous memory is huge at fault" {
	thp_set enabled always
	touch8
	assert_kv anon_huge_kib -eq 8192
	assert_kv thp_fault_alloc -ge 4
	assert_kv minflt -lt 64
}

@test "always: MADV_HUGEPAGE region is huge" {
	thp_set enabled always
	touch8 --madvise
	assert_kv anon_huge_kib -eq 8192
	assert_kv thp_fault_alloc -ge 4
}

@test "always: MADV_NOHUGEPAGE region stays small" {
	thp_set enabled always
	touch8 --nohugepage
	assert_kv anon_huge_kib -eq 0
	assert_kv minflt -ge 2048
}

@test "madvise: plain anonymous memory stays small" {
	thp_set enabled madvise
	touch8
	assert_kv anon_huge_kib -eq 0
	assert_kv minflt -ge 2048
}

@test "madvise: MADV_HUGEPAGE region is huge" {
	thp_set enabled madvise
	touch8 --madvise
	assert_kv anon_huge_kib -eq 8192
	assert_kv thp_fault_alloc -ge 4
	assert_kv minflt -lt 64
}

@test "never: plain anonymous memory stays small" {
	thp_set enabled never
	touch8
	assert_kv anon_huge_kib -eq 0
	assert_kv minflt -ge 2048
}

@test "never: even a MADV_HUGEPAGE region stays small" {
	thp_set enabled never
	touch8 --madvise
	assert_kv anon_huge_kib -eq 0
	assert_kv minflt -ge 2048
}

@test "enabled reads back in the bracketed format every tool parses" {
	for m in always madvise never; do
		thp_set enabled $m
		run -0 cat "$THP/enabled"
		assert_output --regexp '^(\[?always\]? \[?madvise\]? \[?never\]?)$'
		assert_output --partial "[$m]"
	done
}
