#!/usr/bin/env bats
# Multi-size THP (6.8+) through thpctl, on the running kernel: faults in a
# region with hugepages-64kB/enabled=always and 2 MiB never are served by
# 64 KiB folios (hugepages-64kB/stats/anon_fault_alloc moves, the 2 MiB
# counters do not) and thpctl status reports exactly that; thpctl enable
# always with 2 MiB at never does not claim success; every read verb's
# --json parses and matches sysfs. Written for Debian's stock 6.12; skips,
# saying why, on a kernel without per-size controls (6.1, ours).

load helpers
load hold

setup_file() {
	thp_take_knobs
}

teardown_file() {
	thp_give_back_knobs
}

setup() {
	[ -e "$THP/enabled" ] || skip "kernel without THP"
	# the layout is worth capturing on every kernel
	[[ $BATS_TEST_DESCRIPTION == 'the layout'* ]] && return 0
	[ -d "$THP/hugepages-64kB" ] && [ -e "$THP/hugepages-64kB/enabled" ] ||
		skip "kernel without multi-size THP (no $THP/hugepages-64kB/enabled: before 6.8)"
	THPCTL=$(command -v thpctl) || fail "thpctl is not installed"
	unset GLIBC_TUNABLES THP_ROOT THPD_SOCKET
	HELD=
	# the state every test starts from: the kernel's boot defaults
	thp_set enabled madvise
	local d
	for d in "$THP"/hugepages-*kB; do
		[ -e "$d/enabled" ] && echo never >"$d/enabled"
	done
	echo inherit >"$THP/hugepages-2048kB/enabled"
}

teardown() {
	hold_kill
}

stat64() { cat "$THP/hugepages-64kB/stats/$1"; }
stat2m() { cat "$THP/hugepages-2048kB/stats/$1"; }

@test "the layout: captured into the TAP log for the host fixtures" {
	local f v
	echo "# layout of $(uname -r)" >&3
	# read, not cat: a fork+exec per file was 13 s of TCG time here
	while IFS= read -r f; do
		read_line v "$f" 2>/dev/null
		echo "# layout ${f#"$THP"/}: $v" >&3
	done < <(find "$THP" -type f | sort)
	[ -e "$THP/enabled" ] && [ -e "$THP/defrag" ]
}

@test "64K always, 2M never: faults get 64 KiB folios, counted at 64K only; status says so" {
	local a64 f64 a2m f2m vm j
	run -0 "$THPCTL" enable always --size 64K
	assert_line '64K: enabled=always effective=always'
	run -0 "$THPCTL" enable never --size 2M
	assert_line '2M: enabled=never effective=never'
	[ "$(thp_knob_value "$THP/hugepages-64kB/enabled")" = always ] || fail "64K not always"
	[ "$(thp_knob_value "$THP/hugepages-2048kB/enabled")" = never ] || fail "2M not never"

	a64=$(stat64 anon_fault_alloc) f64=$(stat64 anon_fault_fallback)
	a2m=$(stat2m anon_fault_alloc) f2m=$(stat2m anon_fault_fallback)
	vm=$(vmstat thp_fault_alloc)
	# 4 MiB, 2 MiB-aligned, not advised: 64 faults of 64 KiB each
	run -0 "$THP_HELPERS/thp-touch" --size 4
	assert_kv pattern = ok
	assert_kv anon_huge_kib -eq 0
	assert_kv minflt -lt 1024
	assert_kv thp_fault_alloc -eq 0
	local d64=$(($(stat64 anon_fault_alloc) - a64)) fb64=$(($(stat64 anon_fault_fallback) - f64))
	local d2m=$(($(stat2m anon_fault_alloc) - a2m)) fb2m=$(($(stat2m anon_fault_fallback) - f2m))
	echo "# 64K anon_fault_alloc +$d64 (fallback +$fb64), 2M anon_fault_alloc +$d2m (fallback +$fb2m), vmstat thp_fault_alloc +$(($(vmstat thp_fault_alloc) - vm)), helper minflt $(kv minflt)" >&3
	# the helper's 64 faults at least (other processes fault 64K folios too)
	[ "$((d64 + fb64))" -ge 64 ] || fail "64K faults +$d64, fallbacks +$fb64: fewer than the helper's 64"
	[ "$d64" -ge 32 ] || fail "64K anon_fault_alloc moved by $d64 only (fallback +$fb64)"
	[ "$d2m" -eq 0 ] || fail "2M anon_fault_alloc moved by $d2m with 2M at never"
	[ "$fb2m" -eq 0 ] || fail "2M anon_fault_fallback moved by $fb2m with 2M at never"

	run -0 --separate-stderr "$THPCTL" status --json
	j=$output
	jq -e '.sizes[] | select(.kib == 64) | .enabled == "always" and .effective == "always"' <<<"$j" ||
		fail "status 64K: $(jq -c '.sizes[] | select(.kib == 64)' <<<"$j")"
	jq -e '.sizes[] | select(.kib == 2048) | .enabled == "never" and .effective == "never"' <<<"$j" ||
		fail "status 2M: $(jq -c '.sizes[] | select(.kib == 2048)' <<<"$j")"
	jq -e '[.sizes[] | select(.kib != 64 and .kib != 2048) | .effective] | all(. == "never")' <<<"$j" ||
		fail "status: other sizes not never"
	# the counters status shows are the ones that moved
	jq -e --argjson a "$((a64 + 64))" '.sizes[] | select(.kib == 64) | .stats.anon_fault_alloc + .stats.anon_fault_fallback >= $a' <<<"$j" ||
		fail "status 64K counters: $(jq -c '.sizes[] | select(.kib == 64) | .stats' <<<"$j")"
	jq -e --argjson a "$a2m" '.sizes[] | select(.kib == 2048) | .stats.anon_fault_alloc == $a' <<<"$j" ||
		fail "status 2M anon_fault_alloc moved"
	# the short view: what each size does now, and why
	run -0 "$THPCTL" status
	assert_line --regexp '^64K +always +[a-z_]+ +own value always$'
	assert_line --regexp '^2M +never +[a-z_]+ +own value never$'
}

@test "enable always with 2M at never does not claim success (exit 3); inherit --size 2M does" {
	run -0 "$THPCTL" enable never --size 2M
	run -3 --separate-stderr "$THPCTL" enable always
	[[ $stderr == *'hugepages-2048kB/enabled is never, which wins: 2M hugepages are never used'* ]] ||
		fail "stderr: $stderr"
	[ "$(thp_get enabled)" = always ] || fail "enabled is $(thp_get enabled)"
	run -0 --separate-stderr "$THPCTL" enable inherit --size 2M
	assert_line '2M: enabled=inherit effective=always'
	run -0 --separate-stderr "$THPCTL" enable always
	[ -z "$stderr" ] || fail "stderr: $stderr"
	# and the kernel agrees: an always region gets a PMD hugepage
	run -0 "$THP_HELPERS/thp-touch" --size 4
	assert_kv anon_huge_kib -ge 2048
}

@test "enable never with 64K at always does not claim success; never --size all turns it off" {
	run -0 "$THPCTL" enable always --size 64K
	run -3 --separate-stderr "$THPCTL" enable never
	[[ $stderr == *'hugepages-64kB/enabled is always, which wins: 64K hugepages are used at fault everywhere'* ]] ||
		fail "stderr: $stderr"
	run -0 "$THPCTL" enable never --size all
	run -0 "$THPCTL" enable never
	local a64
	a64=$(stat64 anon_fault_alloc)
	run -0 "$THP_HELPERS/thp-touch" --size 4
	assert_kv anon_huge_kib -eq 0
	assert_kv minflt -ge 1024
	[ "$(stat64 anon_fault_alloc)" -eq "$a64" ] || fail "64K folios faulted with every size off"
}

@test "shmem: per-size and top-level values through thpctl, checked" {
	[ -e "$THP/hugepages-64kB/shmem_enabled" ] || skip "kernel without per-size shmem controls (before 6.11)"
	run -0 "$THPCTL" shmem advise
	assert_line 'shmem_enabled=advise'
	[ "$(thp_knob_value "$THP/shmem_enabled")" = advise ] || fail "shmem_enabled not advise"
	run -0 "$THPCTL" shmem never --size 2M
	run -3 --separate-stderr "$THPCTL" shmem always
	[[ $stderr == *'hugepages-2048kB/shmem_enabled is never, which wins'* ]] || fail "stderr: $stderr"
	run -0 "$THPCTL" shmem inherit --size 2M
	run -0 "$THPCTL" shmem never
	# the kernel refuses force while a smaller size inherits: thpctl says why
	# (inherit from never: written, but not in effect)
	run -3 "$THPCTL" shmem inherit --size 64K
	run -1 "$THPCTL" shmem force
	assert_output --partial 'force only while no size but the PMD size inherits'
	run -0 "$THPCTL" shmem never --size 64K
}

@test "status --json matches sysfs: every file, every size" {
	local d kib f b a s name
	run -0 "$THPCTL" enable always --size 64K
	run -0 --separate-stderr "$THPCTL" status --json
	j=$output
	jq -e . >/dev/null <<<"$j" || fail "not JSON"
	jq -e --arg e "$(thp_get enabled)" --arg d "$(thp_get defrag)" --arg s "$(thp_knob_value "$THP/shmem_enabled")" \
		'.enabled == $e and .defrag == $d and .shmem_enabled == $s and .kernel_features.per_size' <<<"$j" ||
		fail "top level: $(jq -c '{enabled, defrag, shmem_enabled}' <<<"$j")"
	jq -e --argjson z "$(<"$THP/use_zero_page")" '.use_zero_page == $z' <<<"$j" || fail use_zero_page
	if [ -e "$THP/shrink_underused" ]; then
		jq -e --argjson v "$(<"$THP/shrink_underused")" '.shrink_underused == $v' <<<"$j" || fail shrink_underused
	else
		jq -e '.shrink_underused == null' <<<"$j" || fail "shrink_underused not null"
	fi
	# one jq for every size (jq per file is minutes under TCG)
	local -A own stat
	local k e sh n
	while read -r k e sh; do
		own[$k]="$e $sh"
	done < <(jq -r '.sizes[] | "\(.kib) \(.enabled) \(.shmem_enabled)"' <<<"$j")
	while read -r k name s; do
		stat[$k/$name]=$s
	done < <(jq -r '.sizes[] | .kib as $k | .stats | to_entries[] | "\($k) \(.key) \(.value)"' <<<"$j")
	[ "${#own[@]}" -eq "$(ls -d "$THP"/hugepages-*kB | wc -l)" ] || fail "size count ${#own[@]}"
	n=0
	for d in "$THP"/hugepages-*kB; do
		kib=${d##*-}
		kib=${kib%kB}
		e=null sh=null
		[ -e "$d/enabled" ] && e=$(thp_knob_value "$d/enabled")
		[ -e "$d/shmem_enabled" ] && sh=$(thp_knob_value "$d/shmem_enabled")
		[ "${own[$kib]-}" = "$e $sh" ] || fail "$d: status '${own[$kib]-}', sysfs '$e $sh'"
		for f in "$d"/stats/*; do
			name=${f##*/}
			n=$((n + 1))
			# counters move while we look: status's value is at most what sysfs shows after
			s=${stat[$kib/$name]-}
			read_line a "$f"
			[ -n "$s" ] || fail "status has no $kib kB $name"
			[ "$s" -le "$a" ] || [ "$name" = nr_anon ] || [ "$name" = nr_anon_partially_mapped ] ||
				fail "$f: status $s > sysfs $a read after it"
		done
	done
	[ "${#stat[@]}" -eq "$n" ] || fail "status shows ${#stat[@]} counters, sysfs has $n"
	# ps --json parses and matches the process's smaps_rollup
	hold_start "$THP_HELPERS/thp-touch" --size 4 --hold
	run -0 --separate-stderr "$THPCTL" ps --json "$HELD"
	b=$(awk '/^AnonHugePages:/ { print $2 }' "/proc/$HELD/smaps_rollup")
	jq -e --argjson p "$HELD" --argjson b "$b" '.processes[] | select(.pid == $p) | .anon_huge_kib == $b' <<<"$output" ||
		fail "ps: $output (smaps_rollup AnonHugePages $b)"
}
