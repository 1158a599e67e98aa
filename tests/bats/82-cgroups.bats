#!/usr/bin/env bats
# Per-cgroup THP figures: two transient services (systemd-run), each in its
# own cgroup, touch different amounts of THP memory (16 MiB and 4 MiB with
# MADV_HUGEPAGE, enabled=madvise so that nothing else in them gets
# hugepages); thpctl cgroups and thpctl metrics show each one's figures as
# its memory.stat and its process's smaps hold them. The figures are saved
# in the results ($THP_RESULTS/cgroups.json).

load helpers
load hold

OUT=/run/thp-cg-test

setup_file() {
	[ -e /sys/fs/cgroup/cgroup.controllers ] || skip "no cgroup v2 hierarchy"
	command -v thpctl >/dev/null || skip "thpctl is not installed"
	thp_save_knobs
	thp_set enabled madvise
	thp_set defrag madvise
	echo 3 >/proc/sys/vm/drop_caches
	echo 1 >/proc/sys/vm/compact_memory
	mkdir -p "$OUT"
	start_toucher thp-cg-big 16
	start_toucher thp-cg-small 4
}

teardown_file() {
	timeout 60 systemctl stop thp-cg-big.service thp-cg-small.service 2>/dev/null || true
	rm -rf "$OUT"
	thp_restore_knobs
	return 0
}

# start_toucher UNIT MIB: a transient service that touches MIB MiB with
# MADV_HUGEPAGE and holds them (stdin: a pipe that never ends), its output
# in $OUT/UNIT.out; waits for its "ready"
start_toucher() {
	local unit=$1 mib=$2
	timeout 60 systemd-run --quiet --unit="$unit" -p MemoryAccounting=yes \
		-p StandardOutput="file:$OUT/$unit.out" -p StandardError="file:$OUT/$unit.out" \
		/bin/bash -c "exec $THP_HELPERS/thp-touch --size $mib --madvise --hold < <(exec sleep infinity)" ||
		fail "systemd-run $unit failed"
	wait_until 120 grep -qx ready "$OUT/$unit.out" ||
		fail "$unit did not get ready: $(<"$OUT/$unit.out")"
}

# out_value UNIT KEY: KEY=value printed by the unit's thp-touch
out_value() {
	sed -n "s/^$2=//p" "$OUT/$1.out" | tail -1
}

# memstat UNIT KEY: the unit's own memory.stat
memstat() {
	awk -v k="$2" '$1 == k { print $2 }' "/sys/fs/cgroup/system.slice/$1.service/memory.stat"
}

# row JSON UNIT: the unit's row of thpctl cgroups --json
row() {
	jq -c --arg c "/system.slice/$2.service" '.cgroups[] | select(.cgroup == $c)' <<<"$1"
}

@test "each service's cgroup holds the THP memory its process got" {
	for u in thp-cg-big:16 thp-cg-small:4; do
		local unit=${u%:*} mib=${u#*:} huge
		huge=$(out_value "$unit" anon_huge_kib)
		[ "$huge" -eq $((mib * 1024)) ] || skip "$unit got $huge KiB of hugepages, not $mib MiB (fragmented memory)"
		assert_equal "$(out_value "$unit" pattern)" ok
		run -0 systemctl show -p ControlGroup --value "$unit.service"
		assert_output "/system.slice/$unit.service"
		assert_equal "$(memstat "$unit" anon_thp)" $((mib << 20))
		# one PMD fault per hugepage, counted in the cgroup
		assert_equal "$(memstat "$unit" thp_fault_alloc)" $((mib / 2))
	done
}

@test "thpctl cgroups: each service's figures, biggest first, as systemd names the cgroups" {
	local j big small
	run -0 timeout 60 thpctl cgroups --json --top=0 --depth=2
	j=$output
	printf '%s\n' "$j" >"$THP_RESULTS/cgroups.json"
	big=$(row "$j" thp-cg-big)
	small=$(row "$j" thp-cg-small)
	[ -n "$big" ] && [ -n "$small" ] || fail "the services are missing: $j"
	assert_equal "$(jq .anon_thp <<<"$big")" "$(memstat thp-cg-big anon_thp)"
	assert_equal "$(jq .anon_thp <<<"$small")" "$(memstat thp-cg-small anon_thp)"
	assert_equal "$(jq .thp_fault_alloc <<<"$big")" "$(memstat thp-cg-big thp_fault_alloc)"
	assert_equal "$(jq .thp_fault_alloc <<<"$small")" "$(memstat thp-cg-small thp_fault_alloc)"
	assert_equal "$(jq .shmem_thp <<<"$big")" 0
	[ "$(jq .anon_thp <<<"$big")" -gt "$(jq .anon_thp <<<"$small")" ] || fail "big <= small: $big $small"
	# the big one before the small one, the slice (which holds both) before either
	run -0 jq -r '.cgroups | map(.cgroup) | index("/system.slice/thp-cg-big.service") < index("/system.slice/thp-cg-small.service") and index("/system.slice") < index("/system.slice/thp-cg-big.service")' <<<"$j"
	assert_output true
	# the same, sorted by the event counter
	run -0 timeout 60 thpctl cgroups --json --sort=thp_fault_alloc --depth=2 --top=0
	run -0 jq -r '.cgroups | map(.cgroup) | index("/system.slice/thp-cg-big.service") < index("/system.slice/thp-cg-small.service")' <<<"$output"
	assert_output true
	# --depth=1 stops at the slices
	run -0 timeout 60 thpctl cgroups --json --depth=1 --top=0
	run -0 jq -r '[.cgroups[].cgroup | select(test("\\.service$"))] | length' <<<"$output"
	assert_output 0
	# the text table
	run -0 timeout 60 thpctl cgroups --depth=2
	assert_line --regexp "^/system.slice/thp-cg-big.service +$((16 << 20)) +$((16 << 20)) +0 +0 +8 "
}

@test "thpctl metrics: the services' figures, labelled with their cgroup, within --top" {
	run -0 timeout 60 thpctl metrics --depth=2 --top=0
	assert_line "thp_cgroup_anon_bytes{cgroup=\"/system.slice/thp-cg-big.service\"} $(memstat thp-cg-big anon_thp)"
	assert_line "thp_cgroup_anon_bytes{cgroup=\"/system.slice/thp-cg-small.service\"} $(memstat thp-cg-small anon_thp)"
	assert_line "thp_cgroup_fault_alloc_total{cgroup=\"/system.slice/thp-cg-big.service\"} $(memstat thp-cg-big thp_fault_alloc)"
	# the limit bounds the series: --top=2 keeps the two largest, whatever
	# the number of cgroups
	run -0 timeout 60 thpctl metrics --depth=2 --top=2
	assert_equal "$(grep -c '^thp_cgroup_anon_bytes{' <<<"$output")" 2
	assert_line "thp_cgroups_exported 2"
}
