#!/usr/bin/env bats
# Every thpctl verb against the THP layout of each kernel generation
# (tests/host/fixtures: stock 6.1, patched 6.1, stock 6.12, the build
# machine's 6.18), through THP_ROOT, no VM. What thpctl reports is checked
# against the fixture's own files, and every write is checked for what it
# leaves the (fake) kernel in: no false success (thpctl(1), EXIT STATUS 3).

bats_require_minimum_version 1.5.0
load '/usr/lib/bats/bats-support/load'
load '/usr/lib/bats/bats-assert/load'

load thpctl-gen

setup() {
	thpctl_env
}

@test "status --json matches the fixture's files on every generation" {
	local g d kib f want top
	for g in $GENERATIONS; do
		use_gen "$g"
		status_json
		top=$(bracketed "$THP_ROOT/$SYS/enabled")
		sj ".enabled == \"$top\" and .defrag == \"$(bracketed "$THP_ROOT/$SYS/defrag")\""
		sj ".shmem_enabled == \"$(bracketed "$THP_ROOT/$SYS/shmem_enabled")\""
		sj '.use_zero_page == 1'
		if [ -e "$THP_ROOT/$SYS/shrink_underused" ]; then
			sj ".shrink_underused == $(<"$THP_ROOT/$SYS/shrink_underused")"
		else
			sj '.shrink_underused == null'
		fi
		if [ "$g" = 6.1-patched ]; then sj '.kernel_features.mode_file'; else sj '.kernel_features.mode_file | not'; fi
		if is_per_size "$g"; then
			sj '.kernel_features.per_size'
			# one row per hugepages-<N>kB directory, ascending, nothing else
			want=$(cd "$THP_ROOT/$SYS" && ls -d hugepages-*kB | sed 's/hugepages-//; s/kB//' | sort -n | paste -sd,)
			sj "[.sizes[].kib] == [$want]"
			for d in "$THP_ROOT/$SYS"/hugepages-*kB; do
				kib=${d##*-}
				kib=${kib%kB}
				if [ -e "$d/enabled" ]; then
					sj ".sizes[] | select(.kib == $kib) | .enabled == \"$(bracketed "$d/enabled")\""
				else
					sj ".sizes[] | select(.kib == $kib) | .enabled == null and .effective == \"never\""
				fi
				sj ".sizes[] | select(.kib == $kib) | .shmem_enabled == \"$(bracketed "$d/shmem_enabled")\""
				for f in "$d"/stats/*; do
					sj ".sizes[] | select(.kib == $kib) | .stats.$(basename "$f") == $(<"$f")"
				done
				sj ".sizes[] | select(.kib == $kib) | .stats | length == $(ls "$d/stats" | wc -l)"
			done
			# 2M inherits enabled; the other sizes are never at boot
			sj ".sizes[] | select(.kib == 2048) | .enabled == \"inherit\" and .effective == \"$top\""
			sj '[.sizes[] | select(.kib != 2048) | .effective] | all(. == "never")'
		else
			# before 6.8: one size, the PMD size, following enabled
			sj '.kernel_features.per_size | not'
			sj ".sizes == [{\"size\": \"2M\", \"kib\": 2048, \"enabled\": null, \"effective\": \"$top\", \"shmem_enabled\": null, \"shmem_effective\": \"never\", \"why\": \"follows enabled ($top)\", \"stats\": {}}]"
		fi
	done
}

@test "status text shows the sizes, their effective state and counters" {
	use_gen 6.12
	put enabled madvise
	put hugepages-64kB/enabled always
	echo 7 >"$THP_ROOT/$SYS/hugepages-64kB/stats/anon_fault_alloc"
	echo 27 >"$THP_ROOT/$SYS/hugepages-2048kB/stats/anon_fault_alloc"
	run -0 "$THPCTL" status --all
	assert_line --regexp '^64K +64 +always +always +never +never +own value always$'
	assert_line --regexp '^2M +2048 +inherit +madvise +inherit +never +inherits enabled \(madvise\)$'
	assert_line --regexp '^8K +8 +- +never +never +never +no anonymous control at this size$'
	assert_line --regexp '^ +anon_fault_alloc +- +0 +0 +7 +0 +0 +0 +0 +27$'
	assert_line --regexp '^shrink_underused: +1$'
	use_gen 6.1
	run -0 "$THPCTL" status -a
	assert_line --regexp '^shrink_underused: +-$'
	assert_line --regexp "^2M +2048 +- +$(bracketed "$THP_ROOT/$SYS/enabled") +- +never +follows enabled \\($(bracketed "$THP_ROOT/$SYS/enabled")\\)\$"
}

@test "status: a per-size value wins over enabled, inherit follows it" {
	local g
	for g in $PER_SIZE; do
		use_gen "$g"
		put enabled 'never'
		put hugepages-64kB/enabled always
		put hugepages-32kB/enabled madvise
		status_json
		sj '.sizes[] | select(.kib == 64) | .effective == "always"'
		sj '.sizes[] | select(.kib == 32) | .effective == "madvise"'
		sj '.sizes[] | select(.kib == 2048) | .enabled == "inherit" and .effective == "never"'
		put shmem_enabled force
		status_json
		sj '.sizes[] | select(.kib == 2048) | .shmem_effective == "always"'
		put hugepages-64kB/shmem_enabled always
		status_json
		sj '.sizes[] | select(.kib == 64) | .shmem_effective == "never"'
	done
}

@test "status shows top-level files it does not know, as they read" {
	use_gen 6.18
	[ -e "$THP_ROOT/$SYS/anon_beside_full" ] || skip "this 6.18 capture has no extra file"
	status_json
	sj ".other_files.anon_beside_full == \"$(<"$THP_ROOT/$SYS/anon_beside_full")\""
}

@test "enable always with 2M at never: not a success (exit 3), said plainly" {
	local g
	for g in $PER_SIZE; do
		use_gen "$g"
		put hugepages-2048kB/enabled never
		run -3 --separate-stderr "$THPCTL" enable always
		[[ $stderr == *'enabled is now always, but hugepages-2048kB/enabled is never, which wins: 2M hugepages are never used'* ]] ||
			fail "$g: stderr: $stderr"
		[[ $stderr == *'no hugepage size can be used at fault'* ]] || fail "$g: stderr: $stderr"
		assert_equal "$(<"$THP_ROOT/$SYS/enabled")" always
		# what it says to do works
		settle
		run -0 "$THPCTL" enable inherit --size 2M
		settle
		status_json
		sj '.sizes[] | select(.kib == 2048) | .effective == "always"'
	done
}

@test "enable always with 2M inheriting: success, and 2M is always" {
	local g
	for g in $GENERATIONS; do
		use_gen "$g"
		run -0 --separate-stderr "$THPCTL" enable always
		[ -z "$stderr" ] || fail "$g: stderr: $stderr"
		settle
		status_json
		sj '.sizes[] | select(.kib == 2048) | .effective == "always"'
	done
}

@test "enable never with a size at always: not a success (exit 3) until every size is off" {
	local g
	for g in $PER_SIZE; do
		use_gen "$g"
		put hugepages-64kB/enabled always
		run -3 --separate-stderr "$THPCTL" enable never
		[[ $stderr == *'hugepages-64kB/enabled is always, which wins: 64K hugepages are used at fault everywhere'* ]] ||
			fail "$g: stderr: $stderr"
		settle
		run -0 "$THPCTL" enable never --size all
		settle
		status_json
		sj '[.sizes[].effective] | all(. == "never")'
		run -0 "$THPCTL" enable never
	done
}

@test "enable MODE --size sets only those sizes; a per-size word needs no top-level change" {
	local g
	for g in $PER_SIZE; do
		use_gen "$g"
		run -0 --separate-stderr "$THPCTL" enable always --size 64K,2M
		assert_line '64K: enabled=always effective=always'
		assert_line '2M: enabled=always effective=always'
		assert_equal "$(<"$THP_ROOT/$SYS/hugepages-64kB/enabled")" always
		assert_equal "$(<"$THP_ROOT/$SYS/hugepages-2048kB/enabled")" always
		assert_equal "$(bracketed "$THP_ROOT/$SYS/hugepages-32kB/enabled")" never
		assert_equal "$(bracketed "$THP_ROOT/$SYS/enabled")" "$(bracketed "$FIX/$g/$SYS/enabled")"
		settle
		run -0 "$THPCTL" enable madvise --size=32K
		settle
		status_json
		sj '.sizes[] | select(.kib == 32) | .effective == "madvise"'
	done
}

@test "enable inherit: follows enabled; with enabled at never it is not a success (exit 3)" {
	local g
	for g in $PER_SIZE; do
		use_gen "$g"
		put enabled never
		run -3 --separate-stderr "$THPCTL" enable inherit --size 64K,2M
		[[ $stderr == *'64K now follows enabled, which is never: 64K hugepages are never used at fault'* ]] ||
			fail "$g: stderr: $stderr"
		[[ $stderr == *"'thpctl enable madvise'"* ]] || fail "$g: stderr: $stderr"
		settle
		run -0 "$THPCTL" enable madvise
		settle
		# inherit without --size: every size with an anonymous control
		run -0 "$THPCTL" enable inherit
		settle
		status_json
		sj '[.sizes[] | select(.enabled != null) | .enabled] | all(. == "inherit")'
		sj '[.sizes[] | select(.enabled != null) | .effective] | all(. == "madvise")'
		sj '.sizes[] | select(.kib == 8) | .enabled == null'
	done
}

@test "enable --size errors: unknown size, bad size, shmem-only size, numbers, old kernels" {
	use_gen 6.12
	run -1 "$THPCTL" enable always --size 4M
	assert_output --partial 'this kernel has no 4M hugepages (no hugepages-4096kB in'
	assert_output --partial 'sizes: 8K 16K 32K 64K 128K 256K 512K 1M 2M'
	run -2 "$THPCTL" enable always --size 64
	assert_output --partial "invalid size '64'"
	run -1 "$THPCTL" enable always --size 8K
	assert_output --partial '8K hugepages have no anonymous control on this kernel (shmem only)'
	run -2 "$THPCTL" enable 2 --size 2M
	assert_output --partial "enable --size: invalid value '2' (expected always, inherit, madvise or never)"
	run -2 "$THPCTL" enable inherit-ish
	run -2 "$THPCTL" enable always --size
	assert_output --partial 'requires an argument'
	# nothing was written
	run -0 diff -r "$FIX/6.12/sys" "$THP_ROOT/sys"
	for g in 6.1 6.1-patched; do
		use_gen "$g"
		run -1 "$THPCTL" enable always --size 2M
		assert_output --partial 'this kernel has no per-size THP controls'
		assert_output --partial '2M follows the top-level enabled'
		run -1 "$THPCTL" enable inherit
		run -0 diff -r "$FIX/$g/sys" "$THP_ROOT/sys"
	done
}

@test "enable: a word the kernel does not list is refused before writing" {
	use_gen 6.12
	put hugepages-64kB/enabled 'always never'
	echo 'always [never]' >"$THP_ROOT/$SYS/hugepages-64kB/enabled"
	run -1 "$THPCTL" enable madvise --size 64K
	assert_output --partial "hugepages-64kB/enabled does not offer 'madvise' on this kernel"
	assert_equal "$(<"$THP_ROOT/$SYS/hugepages-64kB/enabled")" 'always [never]'
}

@test "enable --size: a failed write names the file and exits 1, after the sizes already set" {
	use_gen 6.12
	rm "$THP_ROOT/$SYS/hugepages-2048kB/enabled"
	mkdir "$THP_ROOT/$SYS/hugepages-2048kB/enabled"
	# a directory does not parse as a knob: the model refuses to guess
	run -1 "$THPCTL" enable always --size 64K,2M
	assert_output --partial 'Is a directory'
}

@test "enable words and numbers on every generation (numbers as words on stock)" {
	local g
	for g in $GENERATIONS; do
		use_gen "$g"
		run -0 "$THPCTL" enable 2
		if [ "$g" = 6.1-patched ]; then
			assert_equal "$(<"$THP_ROOT/$SYS/enabled")" 2
		else
			assert_equal "$(<"$THP_ROOT/$SYS/enabled")" always
			assert_equal "$(<"$THP_ROOT/$SYS/defrag")" always
		fi
		use_gen "$g"
		run -0 "$THPCTL" enable never
		assert_equal "$(<"$THP_ROOT/$SYS/enabled")" never
	done
}

@test "shmem: top-level word, checked against the PMD size" {
	local g
	for g in $GENERATIONS; do
		use_gen "$g"
		run -0 --separate-stderr "$THPCTL" shmem advise
		assert_line 'shmem_enabled=advise'
		assert_line --regexp '^2M: shmem_enabled=(inherit|\(null\)) effective=advise$'
		assert_equal "$(<"$THP_ROOT/$SYS/shmem_enabled")" advise
		settle
		status_json
		sj '.shmem_enabled == "advise"'
		sj '.sizes[] | select(.kib == 2048) | .shmem_effective == "advise"'
		run -0 "$THPCTL" shmem deny
		run -2 "$THPCTL" shmem sometimes
		assert_output --partial 'expected always, within_size, advise, never, deny or force'
	done
}

@test "shmem: 2M at never, or a size left on by never, is not a success (exit 3)" {
	local g
	for g in $PER_SIZE; do
		use_gen "$g"
		put hugepages-2048kB/shmem_enabled never
		run -3 --separate-stderr "$THPCTL" shmem always
		[[ $stderr == *'shmem_enabled is now always, but hugepages-2048kB/shmem_enabled is never, which wins: 2M hugepages are never used for shmem'* ]] ||
			fail "$g: stderr: $stderr"
		use_gen "$g"
		put hugepages-64kB/shmem_enabled within_size
		run -3 --separate-stderr "$THPCTL" shmem never
		[[ $stderr == *'64K hugepages are used within i_size for shmem'* ]] || fail "$g: stderr: $stderr"
		# deny turns every size off: a success
		settle
		run -0 "$THPCTL" shmem deny
	done
}

@test "shmem --size: per-size values, inherit and force semantics" {
	local g
	for g in $PER_SIZE; do
		use_gen "$g"
		run -0 "$THPCTL" shmem always --size 64K
		assert_line '64K: shmem_enabled=always effective=always'
		settle
		run -3 --separate-stderr "$THPCTL" shmem inherit --size 64K
		[[ $stderr == *'64K shmem now follows shmem_enabled, which is never'* ]] || fail "$g: stderr: $stderr"
		settle
		run -2 "$THPCTL" shmem force --size 64K
		# force: only the sizes that inherit get shmem hugepages
		use_gen "$g"
		put shmem_enabled force
		run -3 --separate-stderr "$THPCTL" shmem always --size 64K
		[[ $stderr == *'64K hugepages are never used for shmem: shmem_enabled is force'* ]] ||
			fail "$g: stderr: $stderr"
		# 8K has a shmem control
		use_gen "$g"
		run -0 "$THPCTL" shmem advise --size 8K
	done
	use_gen 6.1
	run -1 "$THPCTL" shmem always --size 2M
	assert_output --partial 'no per-size THP controls'
	rm "$THP_ROOT/$SYS/shmem_enabled"
	run -1 "$THPCTL" shmem always
	assert_output --partial 'this kernel has no shmem THP control'
}

@test "defrag, ps, run on every generation; policy where the kernel has it" {
	local g
	for g in $GENERATIONS; do
		use_gen "$g"
		run -0 "$THPCTL" defrag defer
		assert_equal "$(<"$THP_ROOT/$SYS/defrag")" defer
		run -0 --separate-stderr "$THPCTL" ps --json
		jq -e '.processes[] | select(.pid == 100) | .comm == "app" and .anon_huge_kib == 4096' <<<"$output" ||
			fail "$g: ps: $output"
		if [ "$g" = 6.1-patched ]; then
			# the fake tree says prctl policy, this host's kernel has none
			run -1 "$THPCTL" run --default -- true
			assert_output --partial 'prctl('
		else
			run -0 "$THPCTL" run --default -- true
		fi
	done
	use_gen 6.1-patched
	run -0 "$THPCTL" policy 100 --json
	jq -e '.policy == "advise"' <<<"$output" || fail "policy: $output"
}
