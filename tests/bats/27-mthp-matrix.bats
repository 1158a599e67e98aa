#!/usr/bin/env bats
# The multi-size THP matrix (issue 27; the table is docs/abi.md's "The mTHP
# matrix", mirrored in fixtures/mthp-matrix.txt, which this suite reads):
# {2048K, 64K} x {always, madvise, inherit, never} x policy {default,
# advise, never} x {plain, MADV_HUGEPAGE, MADV_NOHUGEPAGE}. Each cell runs
# thp-touch over 4 MiB under the policy and checks, for the size under test,
# the process's own hugepages-<N>kB/anon_fault_alloc in /proc/self/thp_stat
# (exact: every block or none) and the system-wide
# hugepages-<N>kB/stats/anon_fault_alloc (at least the process's).
# Probes features: per-size controls (6.8+), /proc/self/thp_stat with sizes
# and /proc/self/thp_policy (the 6.12 series). On a kernel with per-size
# controls but without the series, the default and never cells still run,
# on the system-wide counters and PR_SET_THP_DISABLE; the advise cells skip.

load helpers

MATRIX=$BATS_TEST_DIRNAME/fixtures/mthp-matrix.txt
MIB=4

setup_file() {
	thp_take_knobs
}

teardown_file() {
	thp_give_back_knobs
}

have_sizes() {
	[ -e "$THP/hugepages-64kB/enabled" ] && [ -e "$THP/hugepages-$(pmd_kb)kB/enabled" ]
}

pmd_kb() {
	echo $(($(<"$THP/hpage_pmd_size") >> 10))
}

# does this kernel's thp_stat have the per-size lines?
have_size_stat() {
	grep -q '^hugepages-64kB/anon_fault_alloc ' /proc/self/thp_stat 2>/dev/null
}

have_policy() {
	[ -e /proc/self/thp_policy ]
}

# every anonymous size to never, then size KB to VALUE; the top level madvise
set_sizes() {
	local f
	thp_set enabled madvise
	thp_set defrag madvise
	for f in "$THP"/hugepages-*kB/enabled; do
		echo never >"$f" || fail "writing never to $f failed"
	done
	echo "$2" >"$THP/hugepages-$1kB/enabled" || fail "writing $2 to hugepages-$1kB/enabled failed"
}

# sys_alloc VAR KB: VAR = the system-wide anon_fault_alloc of size KB
sys_alloc() {
	read_line "$1" "$THP/hugepages-$2kB/stats/anon_fault_alloc"
}

# run_cell KB POLICY REGION: thp-touch under the policy; sets $output.
# Memory is compacted before a PMD-size cell, whose every 2 MiB block must
# come (a 64K folio is order 4: a guest this empty always has them).
run_cell() {
	local kb=$1 policy=$2 region=$3 touch=("$THP_HELPERS/thp-touch" --size "$MIB")
	case $region in
	MADV_HUGEPAGE) touch+=(--madvise) ;;
	MADV_NOHUGEPAGE) touch+=(--nohugepage) ;;
	esac
	[ "$kb" != "$PMD_KB" ] || echo 1 >/proc/sys/vm/compact_memory
	case $policy in
	default) run timeout 60 "$THP_HELPERS/thp-policy" disable 0 -- "${touch[@]}" ;;
	advise) run timeout 60 "$THP_HELPERS/thp-policy" set advise -- "${touch[@]}" ;;
	never)
		if have_policy; then
			run timeout 60 "$THP_HELPERS/thp-policy" set never -- "${touch[@]}"
		else
			run timeout 60 "$THP_HELPERS/thp-policy" disable 1 -- "${touch[@]}"
		fi
		;;
	esac
}

# matrix_row KB VALUE: the 9 cells (3 policies x 3 regions) of one size at
# one value; one line per cell in the log, every mismatch in the failure
matrix_row() {
	local kb=$1 value=$2 v policy plain mh mnh region want cell g0 g1 mine fb n size_stat=
	local bad=() regions=(plain MADV_HUGEPAGE MADV_NOHUGEPAGE)
	have_sizes || skip "kernel without per-size THP controls (hugepages-64kB and the PMD size)"
	[ -f "$MATRIX" ] || fail "no $MATRIX"
	PMD_KB=$(pmd_kb)
	have_size_stat && size_stat=1
	n=$(((MIB << 10) / kb))
	set_sizes "$kb" "$value"
	while read -r v policy plain mh mnh; do
		[ "$v" = "$value" ] || continue
		if [ "$policy" = advise ] && ! have_policy; then
			echo "# $kb kB $value $policy: skipped (no THP policy in this kernel)" >&3
			continue
		fi
		want=("$plain" "$mh" "$mnh")
		for i in 0 1 2; do
			region=${regions[$i]}
			cell="${kb}kB=$value policy=$policy $region"
			sys_alloc g0 "$kb"
			run_cell "$kb" "$policy" "$region"
			sys_alloc g1 "$kb"
			if [ "$status" -ne 0 ]; then
				bad+=("$cell: thp-touch exited $status: ${output//$'\n'/ }")
				continue
			fi
			if [ -n "$size_stat" ]; then
				mine=$(kv "thp_stat.hugepages-${kb}kB/anon_fault_alloc")
				fb=$(kv "thp_stat.hugepages-${kb}kB/anon_fault_fallback")
			else
				# no per-process counters: the system-wide ones stand in
				mine=$((g1 - g0))
				fb=0
			fi
			echo "# $cell: want ${want[$i]}, process $mine of $n (fallback $fb), system +$((g1 - g0))" >&3
			if [ "${want[$i]}" = yes ]; then
				[ "$mine" -eq "$n" ] ||
					bad+=("$cell: want $n ${kb}kB faults, the process counted $mine (fallback $fb)")
			else
				[ "$mine" -eq 0 ] && [ "$fb" -eq 0 ] ||
					bad+=("$cell: want no ${kb}kB fault, the process counted $mine (fallback $fb)")
			fi
			[ $((g1 - g0)) -ge "$mine" ] ||
				bad+=("$cell: the system-wide anon_fault_alloc rose by $((g1 - g0)), less than the process's $mine")
			# the PMD size is also thp_fault_alloc, as in /proc/vmstat
			if [ "$kb" = "$PMD_KB" ] && [ -n "$size_stat" ]; then
				[ "$(kv thp_stat.thp_fault_alloc)" -eq "$mine" ] ||
					bad+=("$cell: thp_fault_alloc $(kv thp_stat.thp_fault_alloc) != hugepages-${kb}kB/anon_fault_alloc $mine")
			fi
		done
	done <"$MATRIX"
	[ ${#bad[@]} -eq 0 ] || fail "$(printf '%s\n' "${bad[@]}")"
}

@test "mTHP matrix: 2048K at always" { matrix_row "$(pmd_kb)" always; }
@test "mTHP matrix: 2048K at madvise" { matrix_row "$(pmd_kb)" madvise; }
@test "mTHP matrix: 2048K at inherit (top level madvise)" { matrix_row "$(pmd_kb)" inherit; }
@test "mTHP matrix: 2048K at never" { matrix_row "$(pmd_kb)" never; }
@test "mTHP matrix: 64K at always" { matrix_row 64 always; }
@test "mTHP matrix: 64K at madvise" { matrix_row 64 madvise; }
@test "mTHP matrix: 64K at inherit (top level madvise)" { matrix_row 64 inherit; }
@test "mTHP matrix: 64K at never" { matrix_row 64 never; }

@test "mTHP matrix: the fixture has the 12 rows docs/abi.md shows" {
	local rows
	rows=$(grep -cv '^#' "$MATRIX")
	[ "$rows" -eq 12 ] || fail "$MATRIX has $rows rows, want 12 (4 values x 3 policies)"
}
