# Shared by every guest suite: `load helpers` at the top of a .bats file.
# shellcheck shell=bash

bats_require_minimum_version 1.5.0

# bats-support and bats-assert, their files sourced here rather than through
# their load.bash: that runs `dirname` once per file it sources, 15
# processes for every test, and under TCG that cost 0.67 s per test (a
# fork+exec is about 25 ms there): 3 minutes of a 6.1 boot's 268 tests.
# The files only define functions; bats-support's come first, as its own
# load.bash orders them.
for _f in /usr/lib/bats/bats-support/src/{output,error,lang}.bash /usr/lib/bats/bats-assert/src/*.bash; do
	# shellcheck source=/dev/null
	source "$_f"
done
unset _f

THP=/sys/kernel/mm/transparent_hugepage
: "${THP_HELPERS:=/opt/thp-stack/helpers}"
THP_KNOB_SAVE=${BATS_FILE_TMPDIR:-/tmp}/thp-knobs.saved

# The knobs a suite may touch. Saved in setup_file, restored in teardown_file
# (bats runs teardown_file even when tests fail or are interrupted).
thp_knobs() {
	echo "$THP/enabled" "$THP/defrag" "$THP/use_zero_page" \
		"$THP/khugepaged/defrag" "$THP/khugepaged/pages_to_scan" \
		"$THP/khugepaged/scan_sleep_millisecs" "$THP/khugepaged/alloc_sleep_millisecs" \
		"$THP/khugepaged/max_ptes_none" "$THP/shmem_enabled"
	# per-size controls (6.8+), after the top level they may inherit from
	ls "$THP"/hugepages-*kB/enabled "$THP"/hugepages-*kB/shmem_enabled 2>/dev/null
}

# read_line VAR FILE: VAR = the first line of FILE (empty if it cannot be
# read), in this shell: $(cat FILE) is a fork+exec, about 30 ms under TCG,
# and the suites read sysfs files (one line each) thousands of times
read_line() {
	local -n _line=$1
	_line=
	{ IFS= read -r _line || :; } <"$2"
}

# the value to write back: the bracketed word of a multiple-choice file
thp_knob_value() {
	local v
	read_line v "$1"
	if [[ $v == *\[*\]* ]]; then
		v=${v#*[}
		v=${v%%]*}
	fi
	echo "$v"
}

thp_save_knobs() {
	local k
	: >"$THP_KNOB_SAVE"
	for k in $(thp_knobs); do
		[ -e "$k" ] && echo "$k $(thp_knob_value "$k")" >>"$THP_KNOB_SAVE"
	done
	return 0
}

thp_restore_knobs() {
	local k v
	[ -f "$THP_KNOB_SAVE" ] || return 0
	while read -r k v; do
		echo "$v" >"$k" || echo "# could not restore $k to $v" >&3
	done <"$THP_KNOB_SAVE"
}

# thp_set KNOB VALUE: write and check it took
thp_set() {
	local f=$THP/$1
	echo "$2" >"$f" || fail "writing '$2' to $f failed"
}

# the selected word of enabled/defrag
thp_get() {
	thp_knob_value "$THP/$1"
}

# kv KEY: the value of KEY=... in $output (thp-touch style key=value lines)
kv() {
	local line
	while IFS= read -r line; do
		if [[ $line == "$1="* ]]; then
			echo "${line#*=}"
			return 0
		fi
	done <<<"$output"
	echo "kv: no '$1=' in output:" >&2
	echo "$output" >&2
	return 1
}

# assert_kv KEY OP VALUE  e.g. assert_kv anon_huge_kib -eq 8192
assert_kv() {
	local got
	got=$(kv "$1") || fail "no $1= in output: $output"
	# shellcheck disable=SC2086
	[ "$got" $2 "$3" ] || fail "expected $1 $2 $3, got $got (output: $(echo $output))"
}

vmstat() {
	awk -v k="$1" '$1 == k { print $2 }' /proc/vmstat
}

# does the kernel carry the thp-stack series?
have_thp_stack_kernel() {
	[ -e "$THP/mode" ]
}

# thpd_units_stop FILE: stop thpd and its socket, where installed and
# active, so they cannot rewrite the mode under a suite; the units stopped
# are listed in FILE for thpd_units_restart (teardown_file). The socket too,
# or the next connect would start thpd again; the service first: stopping the
# socket stops the service with it, and a service found inactive after that
# would not be started again.
thpd_units_stop() {
	local u
	: >"$1"
	for u in thpd.service thpd.socket; do
		if systemctl -q is-active "$u" 2>/dev/null; then
			echo "$u" >>"$1"
			systemctl stop "$u"
		fi
	done
}

# thpd_units_restart FILE: start again what thpd_units_stop stopped
thpd_units_restart() {
	local u
	[ -f "$1" ] || return 0
	while read -r u; do
		systemctl start "$u"
	done <"$1"
}

# The file-level setup of a suite that owns the THP knobs alone: save them
# and stop thpd (thpd_units_stop), so nothing rewrites them under the suite.
# setup_file() { thp_take_knobs; }  teardown_file() { thp_give_back_knobs; }
thp_take_knobs() {
	thp_save_knobs
	thpd_units_stop "$BATS_FILE_TMPDIR/thpd-units"
}

# restore what thp_take_knobs saved, then start again the thpd units it stopped
thp_give_back_knobs() {
	thp_restore_knobs
	thpd_units_restart "$BATS_FILE_TMPDIR/thpd-units"
	return 0
}

# fail_page_alloc (CONFIG_FAIL_PAGE_ALLOC, in make check's patched kernels):
# fpa_fail_order9 [PID] fails every allocation of order 9 or more, those
# that may reclaim too; with PID, only that task's (task-filter,
# make-it-fail). fpa_off undoes it (safe to call in any teardown).
FPA=/sys/kernel/debug/fail_page_alloc
fpa_fail_order9() {
	FPA_PID=${1:-}
	echo 9 >"$FPA/min-order"
	echo N >"$FPA/ignore-gfp-wait"
	echo N >"$FPA/ignore-gfp-highmem"
	echo 0 >"$FPA/space"
	echo 1 >"$FPA/interval"
	echo 0 >"$FPA/verbose"
	echo -1 >"$FPA/times"
	if [ -n "$FPA_PID" ]; then
		echo Y >"$FPA/task-filter"
		echo 1 >"/proc/$FPA_PID/make-it-fail"
	else
		echo N >"$FPA/task-filter"
	fi
	FPA_ON=1
	echo 100 >"$FPA/probability"
}
fpa_off() {
	[ -n "${FPA_ON:-}" ] || return 0
	echo 0 >"$FPA/probability"
	echo 1 >"$FPA/times"
	echo N >"$FPA/task-filter"
	[ -z "${FPA_PID:-}" ] || echo 0 >"/proc/$FPA_PID/make-it-fail" 2>/dev/null || true
	FPA_ON= FPA_PID=
}
