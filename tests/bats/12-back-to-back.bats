#!/usr/bin/env bats
# 256 MiB first touch, back to back, alternating always/never five times: the
# guest must neither hang nor lose output, and each run must look like its mode.

load helpers

setup_file() {
	thp_save_knobs
	echo 10000 >"$THP/khugepaged/scan_sleep_millisecs"
}

teardown_file() {
	thp_restore_knobs
}

@test "five alternating always/never rounds of a 256 MiB first touch" {
	local round
	for round in 1 2 3 4 5; do
		echo 3 >/proc/sys/vm/drop_caches
		echo 1 >/proc/sys/vm/compact_memory
		thp_set enabled always
		run -0 timeout 300 "$THP_HELPERS/thp-touch" --size 256
		assert_kv pattern = ok
		# a fragmented guest may not have all 128 free: most must be huge
		assert_kv anon_huge_kib -ge $((200 * 1024))
		assert_kv minflt -lt 20000
		echo "# round $round always: $(kv minflt) faults, $(kv anon_huge_kib) KiB huge" >&3

		thp_set enabled never
		run -0 timeout 300 "$THP_HELPERS/thp-touch" --size 256
		assert_kv pattern = ok
		assert_kv anon_huge_kib -eq 0
		assert_kv minflt -ge 65536
		echo "# round $round never: $(kv minflt) faults" >&3
	done
}
