#!/usr/bin/env bats
# thpctl against fake sysfs/procfs trees (THP_ROOT), no VM. Two flavours:
# "patched" (mode file, /proc/<pid>/thp_policy and thp_stat) and "stock".
# Write failures are simulated as root can see them: a knob replaced by a
# directory (EISDIR) or a missing sysfs directory (ENOENT); chmod does not
# stop root.

bats_require_minimum_version 1.5.0
load '/usr/lib/bats/bats-support/load'
load '/usr/lib/bats/bats-assert/load'
load ../bats/hold

SYS=sys/kernel/mm/transparent_hugepage

load thpctl-env

setup() {
	thpctl_env
}

# fake_proc PID COMM ANON_KIB [POLICY FAULT_ALLOC SPLIT_PMD]
fake_proc() {
	local d=$THP_ROOT/proc/$1
	mkdir -p "$d"
	echo "$2" >"$d/comm"
	printf 'Rss:               10240 kB\nAnonymous:          8192 kB\nAnonHugePages:    %s kB\nShmemPmdMapped:        0 kB\n' \
		"$3" >"$d/smaps_rollup"
	if [ -n "${4-}" ]; then
		echo "$4" >"$d/thp_policy"
		printf 'thp_fault_alloc %s\nthp_fault_fallback 1\nthp_fault_fallback_charge 0\nthp_collapse_alloc 2\nthp_collapse_alloc_failed 0\nthp_split_pmd %s\nthp_zero_page_fault 0\n' \
			"$5" "$6" >"$d/thp_stat"
	fi
}

fake_tree() {
	local flavour=$1 k
	rm -rf "$THP_ROOT"
	mkdir -p "$THP_ROOT/$SYS/khugepaged" "$THP_ROOT/proc/self"
	echo 'always [madvise] never' >"$THP_ROOT/$SYS/enabled"
	echo 'always defer defer+madvise [madvise] never' >"$THP_ROOT/$SYS/defrag"
	for k in defrag=1 pages_to_scan=4096 scan_sleep_millisecs=10000 \
		alloc_sleep_millisecs=60000 max_ptes_none=511 pages_collapsed=7 full_scans=3; do
		echo "${k#*=}" >"$THP_ROOT/$SYS/khugepaged/${k%%=*}"
	done
	printf 'MemTotal:        2000000 kB\nAnonHugePages:     14336 kB\n' >"$THP_ROOT/proc/meminfo"
	printf 'nr_free_pages 1000\nthp_fault_alloc 12\nthp_fault_fallback 3\nthp_collapse_alloc 4\nthp_split_pmd 1\npgfault 99\n' \
		>"$THP_ROOT/proc/vmstat"
	# order 9: 1 + 2 = 3; order 10: 4 (counts 2 each) -> 11 blocks of 2 MiB
	printf 'Node 0, zone      DMA      1      1      1      0      2      1      1      0      1      1      0\nNode 0, zone    DMA32      0      0      0      0      0      0      0      0      0      2      4\n' \
		>"$THP_ROOT/proc/buddyinfo"
	if [ "$flavour" = patched ]; then
		echo 0 >"$THP_ROOT/$SYS/mode"
		echo default >"$THP_ROOT/proc/self/thp_policy"
		echo 'thp_fault_alloc 0' >"$THP_ROOT/proc/self/thp_stat"
		fake_proc 100 bigapp 8192 advise 5 4
		fake_proc 200 small 2048 default 1 1
		fake_proc 300 none 0 never 0 0
	else
		fake_proc 100 bigapp 8192
		fake_proc 200 small 2048
	fi
	# a kernel thread: empty smaps_rollup
	mkdir -p "$THP_ROOT/proc/2"
	echo kthreadd >"$THP_ROOT/proc/2/comm"
	: >"$THP_ROOT/proc/2/smaps_rollup"
}

knob() { cat "$THP_ROOT/$SYS/$1"; }

# ---- generic command line ----

@test "--help goes to stdout and exits 0" {
	run -0 --separate-stderr "$THPCTL" --help
	assert_output --partial 'Usage:'
	assert_output --partial 'policy [--collapse] PID'
	[ -z "$stderr" ]
}

@test "--version" {
	run -0 "$THPCTL" --version
	assert_output --regexp '^thpctl [0-9]+\.[0-9]+'
}

@test "unknown verb: did you mean, exit 2, nothing on stdout" {
	run -2 --separate-stderr "$THPCTL" stauts
	assert_equal "$output" ""
	[[ $stderr == *"unknown command 'stauts'. Did you mean 'status'?"* ]] || fail "stderr: $stderr"
	[[ $stderr == *"Try 'thpctl --help'"* ]] || fail "stderr: $stderr"
}

@test "unknown verb far from every verb: no suggestion" {
	run -2 "$THPCTL" frobnicate
	assert_output --partial "unknown command 'frobnicate'"
	refute_output --partial 'Did you mean'
}

@test "no prefix matching" {
	run -2 "$THPCTL" stat
	assert_output --partial "Did you mean 'status'?"
}

@test "unknown option, missing and extra arguments are usage errors (exit 2)" {
	fake_tree patched
	run -2 "$THPCTL" --bogus
	assert_output --partial "unrecognized option '--bogus'"
	run -2 "$THPCTL" enable
	assert_output --partial 'enable: missing argument'
	run -2 "$THPCTL" enable always never
	assert_output --partial 'too many arguments'
	run -2 "$THPCTL" status extra
	run -2 "$THPCTL" --json enable always
	assert_output --partial 'not a read command'
	assert_equal "$(knob enabled)" 'always [madvise] never'
}

@test "verb --help exits 0" {
	run -0 "$THPCTL" status --help
	assert_output --partial 'Usage:'
	run -0 "$THPCTL" run --help
	assert_output --partial 'thpctl run'
	run -0 "$THPCTL" ps --help
}

@test "every verb's options go through the one parser: --collapse is policy's only" {
	local verb
	fake_tree patched
	for verb in status enable defrag run ps; do
		run -2 --separate-stderr "$THPCTL" "$verb" --collapse
		[[ $stderr == *"$verb: unrecognized option '--collapse'"* ]] || fail "$verb: $stderr"
	done
	run -2 "$THPCTL" ps --sort
	assert_output --partial "ps: option '--sort' requires an argument"
	run -2 "$THPCTL" run --json -- true
	assert_output --partial 'run: --json is not supported'
	run -2 "$THPCTL" ps -x
	assert_output --partial "ps: invalid option -- 'x'"
	assert_equal "$(knob enabled)" 'always [madvise] never'
}

@test "each verb's --help shows its own usage and options" {
	run -0 "$THPCTL" ps --help
	assert_line 'Usage: thpctl ps [--sort=FIELD] [PID...]'
	assert_output --partial '--sort=FIELD'
	run -0 "$THPCTL" policy --help
	assert_output --partial '--collapse'
	refute_output --partial '--sort'
	run -0 "$THPCTL" enable --help
	refute_output --partial '--json'
}

@test "no verb means status" {
	fake_tree patched
	run -0 "$THPCTL"
	assert_line --regexp '^2M +madvise +never +follows enabled \(madvise\)$'
}

# ---- status ----

@test "status: text on a patched tree" {
	fake_tree patched
	echo 2 >"$THP_ROOT/$SYS/mode"
	echo '[always] madvise never' >"$THP_ROOT/$SYS/enabled"
	echo '[always] defer defer+madvise madvise never' >"$THP_ROOT/$SYS/defrag"
	run -0 "$THPCTL" status --all
	assert_line --regexp '^enabled: +always$'
	assert_line --regexp '^rfc mode: +2 \(hugepages at fault everywhere, compacting for them\)$'
	assert_line --regexp '^defrag: +always$'
	assert_line --regexp '^ +pages_to_scan: +4096$'
	assert_line --regexp '^ +full_scans: +3$'
	assert_line --regexp '^ +pages_collapsed: +7$'
	assert_line --regexp '^free order-9\+ blocks: +11$'
	assert_line --regexp '^AnonHugePages \(KiB\): +14336$'
	assert_line --regexp '^ +thp_fault_alloc: +12$'
	refute_output --partial pgfault
	assert_line --regexp '^ +mode_file: +yes$'
	assert_line --regexp '^thpd: +not running$'
}

@test "status --json is valid and carries the same values" {
	fake_tree patched
	run -0 --separate-stderr "$THPCTL" status --json
	echo "$output" | jq -e . >/dev/null || fail "not JSON: $output"
	run -0 jq -e '.enabled == "madvise" and .mode == 0 and .defrag == "madvise"
		and .khugepaged.pages_to_scan == 4096 and .khugepaged.max_ptes_none == 511
		and .free_hugepage_blocks == 11 and .anon_huge_kib == 14336
		and .counters.thp_fault_alloc == 12 and (.counters | has("pgfault") | not)
		and .kernel_features == {"mode_file": true, "thp_policy": true, "thp_stat": true,
			"per_size": false, "shmem": false}
		and .thpd == null' <<<"$output"
	# the global form is the same
	run -0 "$THPCTL" --json status
	echo "$output" | jq -e '.mode == 0'
}

@test "status on a stock tree: no RFC mode (null), features absent" {
	fake_tree stock
	echo '[always] madvise never' >"$THP_ROOT/$SYS/enabled"
	echo 'always defer [defer+madvise] madvise never' >"$THP_ROOT/$SYS/defrag"
	run -0 "$THPCTL" --json status
	echo "$output" | jq -e '.mode == null and .defrag == "defer+madvise"
		and .kernel_features.mode_file == false and .kernel_features.thp_policy == false'
}

@test "status: missing optional files are shown as unknown, not fatal" {
	fake_tree stock
	rm "$THP_ROOT/proc/buddyinfo" "$THP_ROOT/proc/meminfo" "$THP_ROOT/$SYS/khugepaged/full_scans"
	run -0 "$THPCTL" --json status
	echo "$output" | jq -e '.free_hugepage_blocks == null and .anon_huge_kib == null
		and (.khugepaged | has("full_scans") | not)'
	run -0 "$THPCTL" status --all
	assert_line --regexp '^free order-9\+ blocks: +-$'
}

@test "status without THP sysfs fails with the path (exit 1)" {
	fake_tree stock
	rm "$THP_ROOT/$SYS/enabled"
	run -1 "$THPCTL" status
	assert_output --partial "$THP_ROOT/$SYS"
	assert_output --partial 'No such file or directory'
}

@test "status: a broken knob is reported, not guessed" {
	fake_tree stock
	echo 'always madvise never' >"$THP_ROOT/$SYS/enabled"
	run -1 "$THPCTL" status
	assert_output --partial 'Bad message'
}

@test "status: thpd socket that nobody serves means not running" {
	fake_tree stock
	# a plain file at the socket path: connect() is refused
	: >"$THPD_SOCKET"
	run -0 "$THPCTL" --json status
	echo "$output" | jq -e '.thpd == null'
}

@test "a write error on stdout is an error (exit 1)" {
	fake_tree stock
	[ -w /dev/full ] || skip "no /dev/full"
	run -1 --separate-stderr bash -c "'$THPCTL' status >/dev/full"
	[[ $stderr == *'write error'* ]] || fail "stderr: $stderr"
}

# ---- enable ----

@test "enable 2 on a patched kernel writes the number (kernel sets defrag)" {
	fake_tree patched
	run -0 --separate-stderr "$THPCTL" enable 2
	assert_equal "$(knob enabled)" 2
	assert_equal "$(knob defrag)" 'always defer defer+madvise [madvise] never'
	assert_output --partial 'written to sysfs: thpd is not running'
	[[ $stderr != *'no numeric'* ]] || fail "stderr: $stderr"
}

@test "enable with thpd unreachable for another reason: said so, then sysfs" {
	fake_tree patched
	THPD_SOCKET=/$(printf 'x%.0s' {1..200}) run -0 --separate-stderr "$THPCTL" enable 1
	assert_equal "$(knob enabled)" 1
	assert_output --partial 'written to sysfs: thpd is not running'
	[[ $stderr == *'could not reach thpd at /xxx'*': File name too long'* ]] || fail "stderr: $stderr"
	# nobody listening is the normal case and not worth a word
	run -0 --separate-stderr "$THPCTL" enable 1
	[ -z "$stderr" ] || fail "stderr: $stderr"
}

@test "enable N on a stock kernel: translated to words, and said so on stderr" {
	local n want_e want_d
	for n in 0 1 2; do
		fake_tree stock
		case $n in
		0) want_e=madvise want_d=madvise ;;
		1) want_e=always want_d=madvise ;;
		2) want_e=always want_d=always ;;
		esac
		run -0 --separate-stderr "$THPCTL" enable $n
		assert_equal "$(knob enabled)" "$want_e"
		assert_equal "$(knob defrag)" "$want_d"
		[[ $stderr == *"no numeric THP modes: $n is the RFC's mode $n ("*"), not off: enabled=$want_e defrag=$want_d"* ]] ||
			fail "stderr for $n: $stderr"
	done
}

@test "enable WORD writes enabled only" {
	fake_tree stock
	run -0 "$THPCTL" enable never
	assert_equal "$(knob enabled)" never
	assert_equal "$(knob defrag)" 'always defer defer+madvise [madvise] never'
}

@test "enable rejects bad values with exit 2 and writes nothing" {
	local v
	fake_tree patched
	for v in 3 -1 '' al 1x ALWAYS 'always '; do
		run -2 "$THPCTL" enable "$v"
		assert_equal "$(knob enabled)" 'always [madvise] never'
	done
	assert_output --partial "invalid mode"
}

@test "enable: write failure reports path and reason, exit 1 (EISDIR)" {
	fake_tree stock
	rm "$THP_ROOT/$SYS/defrag"
	mkdir "$THP_ROOT/$SYS/defrag"
	echo 'always [madvise] never' >"$THP_ROOT/$SYS/enabled"
	run -1 "$THPCTL" enable 2
	assert_output --partial "failed to write '2' to $THP_ROOT/$SYS/defrag: Is a directory"
}

@test "enable: write failure on enabled itself (EISDIR)" {
	fake_tree patched
	rm "$THP_ROOT/$SYS/enabled"
	mkdir "$THP_ROOT/$SYS/enabled"
	run -1 "$THPCTL" enable madvise
	assert_output --partial "$THP_ROOT/$SYS"
	assert_output --partial 'Is a directory'
}

# ---- defrag ----

@test "defrag writes each valid value" {
	local v
	fake_tree stock
	for v in always defer defer+madvise madvise never; do
		run -0 "$THPCTL" defrag "$v"
		assert_equal "$(knob defrag)" "$v"
		echo 'always defer defer+madvise [madvise] never' >"$THP_ROOT/$SYS/defrag"
	done
}

@test "defrag rejects junk (exit 2), reports write failures (exit 1)" {
	fake_tree stock
	run -2 "$THPCTL" defrag sometimes
	assert_output --partial "invalid value 'sometimes'"
	rm -r "$THP_ROOT/$SYS/defrag"
	mkdir "$THP_ROOT/$SYS/defrag"
	run -1 "$THPCTL" defrag never
	assert_output --partial "$THP_ROOT/$SYS/defrag: Is a directory"
}

@test "defrag with the sysfs directory gone: ENOENT with the path" {
	fake_tree stock
	rm -r "${THP_ROOT:?}/sys"
	run -1 "$THPCTL" defrag never
	assert_output --partial "$THP_ROOT/$SYS/defrag: No such file or directory"
}

# ---- run ----

@test "run --advise on a stock kernel sets GLIBC_TUNABLES and warns" {
	fake_tree stock
	run -0 --separate-stderr "$THPCTL" run --advise -- env
	assert_line 'GLIBC_TUNABLES=glibc.malloc.hugetlb=1'
	[[ $stderr == *'only memory from malloc'* ]] || fail "stderr: $stderr"
}

@test "run --advise on this (stock) host kernel makes malloc'd memory huge" {
	local mode malloc_helper
	fake_tree stock
	[ -e /proc/self/thp_policy ] && skip "host kernel has the per-process policy"
	mode=$(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null) || skip "host has no THP"
	[[ $mode == *'[madvise]'* ]] || skip "host THP mode is not madvise: $mode"
	# built without sanitizers (not this make's SAN=1): ASan's allocator
	# would bypass glibc malloc
	MAKEFLAGS= make -C "$BATS_TEST_DIRNAME/../.." --no-print-directory SAN= \
		build/helpers/thp-malloc >&2 || fail "cannot build thp-malloc"
	malloc_helper=$BATS_TEST_DIRNAME/../../build/helpers/thp-malloc
	run -0 "$malloc_helper" --size 16
	assert_line 'anon_huge_kib=0'
	run -0 "$THPCTL" run --advise -- "$malloc_helper" --size 16
	assert_line 'glibc_tunables=glibc.malloc.hugetlb=1'
	assert_line 'pattern=ok'
	refute_line 'anon_huge_kib=0'
}

@test "run --advise keeps other tunables and replaces an existing hugetlb" {
	fake_tree stock
	GLIBC_TUNABLES=glibc.malloc.check=3:glibc.malloc.hugetlb=0:glibc.malloc.tcache_count=5 \
		run -0 "$THPCTL" run --advise -- env
	assert_line 'GLIBC_TUNABLES=glibc.malloc.check=3:glibc.malloc.tcache_count=5:glibc.malloc.hugetlb=1'
}

@test "run defaults to --advise and stops option parsing at the command" {
	fake_tree stock
	run -0 "$THPCTL" run sh -c 'echo "$GLIBC_TUNABLES $1"' sh --never
	assert_output --partial 'glibc.malloc.hugetlb=1 --never'
}

@test "run --never on a stock kernel uses PR_SET_THP_DISABLE; --default undoes it" {
	fake_tree stock
	grep -q '^THP_enabled:' /proc/self/status || skip "host kernel has no THP_enabled in status"
	run -0 "$THPCTL" run --never -- grep '^THP_enabled:' /proc/self/status
	assert_output --regexp 'THP_enabled:\s+0'
	run -0 "$THPCTL" run --never -- "$THPCTL" run --default -- grep '^THP_enabled:' /proc/self/status
	assert_output --regexp 'THP_enabled:\s+1'
}

@test "run passes the command's exit status through (exec, no fork)" {
	fake_tree stock
	run -7 "$THPCTL" run --default -- sh -c 'exit 7'
	# exec: the command runs as the very process that started thpctl
	run -0 bash -c 'echo $$; exec "$1" run --default -- sh -c "echo \$\$"' _ "$THPCTL"
	[ "${lines[0]}" = "${lines[1]}" ] || fail "thpctl forked: pids ${lines[*]}"
}

@test "run: command not found 127, not executable 126, as a shell says" {
	fake_tree stock
	run -127 "$THPCTL" run --default -- no-such-command-xyz
	assert_output --partial 'no-such-command-xyz: command not found'
	run -127 "$THPCTL" run --default -- /nonexistent/cmd
	assert_output --partial '/nonexistent/cmd: No such file or directory'
	printf 'not a program\n' >"$BATS_TEST_TMPDIR/plain"
	chmod 644 "$BATS_TEST_TMPDIR/plain"
	run -126 "$THPCTL" run --default -- "$BATS_TEST_TMPDIR/plain"
	assert_output --partial 'Permission denied'
}

@test "run usage errors: no command, conflicting policies, unknown option" {
	fake_tree stock
	run -2 "$THPCTL" run
	assert_output --partial 'no command given'
	run -2 "$THPCTL" run --advise --never -- true
	assert_output --partial 'mutually exclusive'
	run -2 "$THPCTL" run --bogus -- true
	assert_output --partial "unrecognized option '--bogus'"
}

@test "run on a (fake) patched kernel uses prctl and reports its failure" {
	fake_tree patched
	[ -e /proc/self/thp_policy ] && skip "host kernel has the per-process policy"
	run -1 "$THPCTL" run --advise -- true
	assert_output --partial 'prctl(PR_SET_THP_MM_POLICY, advise): Invalid argument'
}

# ---- ps ----

@test "ps lists processes with policy and counters on a patched tree" {
	fake_tree patched
	run -0 "$THPCTL" ps
	assert_line --index 0 --regexp '^ *PID +COMM +POLICY +ANONHUGE_KIB +FAULT_ALLOC +FALLBACK'
	assert_line --index 1 --regexp '^ *100 +bigapp +advise +8192 +5 +1 '
	assert_line --index 2 --regexp '^ *200 +small +default +2048 '
	assert_line --index 3 --regexp '^ *300 +none +never +0 '
	# the kernel thread has no memory: left out
	refute_output --partial kthreadd
}

@test "ps --sort and --json" {
	fake_tree patched
	run -0 "$THPCTL" ps --sort=anon_huge_kib --json
	echo "$output" | jq -e '.processes | map(.pid) == [100, 200, 300]'
	run -0 "$THPCTL" ps --sort comm --json
	echo "$output" | jq -e '.processes | map(.comm) == ["bigapp", "none", "small"]'
	run -0 "$THPCTL" --json ps --sort=split_pmd
	echo "$output" | jq -e '.processes[0] | .pid == 100 and .thp_split_pmd == 4 and .policy == "advise"'
	run -2 "$THPCTL" ps --sort=bogus
	assert_output --partial "cannot sort by 'bogus'"
}

@test "ps PID...: only those; missing or unreadable named PIDs are errors" {
	fake_tree patched
	run -0 "$THPCTL" --json ps 200
	echo "$output" | jq -e '.processes | length == 1 and .[0].comm == "small" and .[0].anon_huge_kib == 2048'
	run -1 --separate-stderr "$THPCTL" --json ps 200 4242
	echo "$output" | jq -e '.processes | length == 1'
	[[ $stderr == *'no process with PID 4242'* ]] || fail "stderr: $stderr"
	run -2 "$THPCTL" ps abc
	assert_output --partial "invalid PID 'abc'"
}

@test "ps skips unreadable processes silently unless named" {
	fake_tree patched
	rm "$THP_ROOT/proc/200/smaps_rollup"
	mkdir "$THP_ROOT/proc/200/smaps_rollup"
	run -0 --separate-stderr "$THPCTL" --json ps
	echo "$output" | jq -e '.processes | map(.pid) == [100, 300]'
	[ -z "$stderr" ] || fail "stderr: $stderr"
	run -1 "$THPCTL" ps 200
	assert_output --partial "$THP_ROOT/proc/200/smaps_rollup: Is a directory"
	run -1 "$THPCTL" ps 2
	assert_output --partial 'kernel thread'
}

@test "ps on a stock tree: no policy or thp_stat columns" {
	fake_tree stock
	run -0 "$THPCTL" ps
	assert_line --index 0 --regexp '^ *PID +COMM +ANONHUGE_KIB$'
	run -0 "$THPCTL" ps --json
	echo "$output" | jq -e '.processes | length == 2 and (.[0] | keys) == ["anon_huge_kib", "comm", "pid"]'
	run -2 "$THPCTL" ps --sort=policy
}

@test "ps with no processes prints an empty named array" {
	fake_tree stock
	rm -r "$THP_ROOT/proc/100" "$THP_ROOT/proc/200"
	run -0 "$THPCTL" --json ps
	echo "$output" | jq -e '. == {"processes": []}'
}

# ---- ps: process names are data, not terminal commands (issue 20, class 3) ----
# A process of this test names itself (raw bytes into /proc/self/comm, as
# prctl(PR_SET_NAME) does) and waits; thpctl ps reads the real /proc.

# named NAME: start a process that names itself NAME with prctl(PR_SET_NAME)
# (raw bytes, up to 15) and waits; sets NAMED_PID (teardown ends it)
named() {
	local fifo=$BATS_TEST_TMPDIR/hold
	command -v python3 >/dev/null || skip "no python3 for a process that renames itself"
	mkfifo "$fifo"
	python3 -c 'import ctypes, os, sys
if ctypes.CDLL(None, use_errno=True).prctl(15, os.fsencode(sys.argv[1]), 0, 0, 0):
    sys.exit("PR_SET_NAME: " + os.strerror(ctypes.get_errno()))
sys.stdin.read()' "$1" <"$fifo" >/dev/null 2>&1 3>&- &
	NAMED_PID=$!
	exec 8>"$fifo"
	timeout 10 bash -c 'until [ "$(cat /proc/$1/comm)" = "$2" ]; do sleep 0.05; done' _ "$NAMED_PID" "$1" ||
		fail "process $NAMED_PID did not rename itself"
}

release() {
	[ -n "${NAMED_PID-}" ] || return 0
	exec 8>&-
	wait "$NAMED_PID" 2>/dev/null || true
	NAMED_PID=
}

teardown() {
	release
}

# ps_text PID: the text output, checked to hold no control byte but newlines
ps_text() {
	run -0 --separate-stderr "$THPCTL" ps "$1"
	if printf '%s' "$output" | LC_ALL=C grep -q '[[:cntrl:]]'; then
		fail "control bytes reached the terminal: $(printf '%s' "$output" | od -c | head -5)"
	fi
}

# hostile NAME TEXT JSON: a process named NAME shows as the one row TEXT (a
# regex) in a UTF-8 locale, and its comm in JSON is JSON (a jq string);
# the JSON is valid UTF-8 (iconv refuses anything else)
hostile() {
	unset THP_ROOT
	named "$1"
	LC_ALL=C.UTF-8 ps_text "$NAMED_PID"
	assert_equal "${#lines[@]}" 2
	assert_line --index 1 --regexp "^ *$NAMED_PID +$2 +[0-9]+\$"
	run -0 "$THPCTL" --json ps "$NAMED_PID"
	printf '%s' "$output" | iconv -f UTF-8 -t UTF-8 >/dev/null || fail "not UTF-8: $output"
	echo "$output" | jq -e ".processes[0].comm == $3"
}

@test "ps: an escape sequence in a name is shown as '?', not sent to the terminal" {
	hostile $'\e]0;pwned\a\e[2J' '\?\]0;pwned\?\?\[2J' '"\u001b]0;pwned\u0007\u001b[2J"'
}

@test "ps: a newline in a name cannot forge a row" {
	hostile $'x\n    1 root' 'x\?    1 root' '"x\n    1 root"'
}

@test "ps: invalid UTF-8 in a name: '?' per byte in text, U+FFFD in valid JSON" {
	hostile $'bad\xff\xfe\xc3(ok' 'bad\?\?\?\(ok' '"bad\ufffd\ufffd\ufffd(ok"'
}

@test "ps: C1 controls (U+0080..U+009F, CSI) and DEL are escaped, other UTF-8 is kept" {
	hostile $'c\xc2\x9b2J\x7fcaf\xc3\xa9' 'c\?2J\?café' '"c\u009b2J\u007fcafé"'
	# JSON: the controls as \u escapes, no raw C1 byte for a terminal
	[[ $output == *'"c\u009b2J\u007fcafé"'* ]] || fail "comm not escaped: $output"
	# in a locale that is not UTF-8 every non-ASCII byte is '?', as ps does
	LC_ALL=C ps_text "$NAMED_PID"
	assert_line --index 1 --regexp "^ *$NAMED_PID +c\?\?2J\?caf\?\? +[0-9]+\$"
}

@test "ps: hostile names in a whole listing keep one row per process" {
	fake_tree stock
	fake_proc 300 $'evil\n  999 forged' 0
	run -0 "$THPCTL" ps
	assert_equal "${#lines[@]}" 4
	refute_line --regexp '^ +999 forged'
	assert_line --regexp '^ *300 +evil\?  999 forged +0$'
}

# ---- policy ----

@test "policy PID reads, policy PID WORD sets" {
	fake_tree patched
	run -0 "$THPCTL" policy 100
	assert_line --regexp '^policy: +advise$'
	run -0 "$THPCTL" policy 300 advise
	assert_equal "$(cat "$THP_ROOT/proc/300/thp_policy")" advise
	run -0 "$THPCTL" policy --json 300
	echo "$output" | jq -e '. == {"pid": 300, "comm": "none", "policy": "advise"}'
}

@test "policy: bad input is exit 2, missing process exit 1" {
	fake_tree patched
	run -2 "$THPCTL" policy
	run -2 "$THPCTL" policy x
	assert_output --partial "invalid PID 'x'"
	run -2 "$THPCTL" policy 100 sometimes
	assert_output --partial "invalid policy 'sometimes'"
	assert_equal "$(cat "$THP_ROOT/proc/100/thp_policy")" advise
	run -2 "$THPCTL" policy 100 never extra
	run -1 "$THPCTL" policy 4242 never
	assert_output --partial 'no process with PID 4242'
}

@test "policy: write failure names the path (exit 1)" {
	fake_tree patched
	rm "$THP_ROOT/proc/100/thp_policy"
	mkdir "$THP_ROOT/proc/100/thp_policy"
	run -1 "$THPCTL" policy 100 never
	assert_output --partial "failed to write 'never' to $THP_ROOT/proc/100/thp_policy: Is a directory"
}

@test "policy on a stock kernel: unsupported, exit 2" {
	fake_tree stock
	run -2 "$THPCTL" policy 100
	assert_output --partial 'per-process THP policy is not supported by this kernel'
	run -2 "$THPCTL" policy 100 advise
	run -2 "$THPCTL" policy --collapse 100 advise
	run -2 "$THPCTL" status --collapse
}

@test "policy PID on a stock kernel: read from THP_enabled: in /proc/PID/status" {
	fake_tree stock
	printf 'Name:\tbigapp\nUid:\t0\t0\t0\t0\nTHP_enabled:\t0\nThreads:\t1\n' >"$THP_ROOT/proc/100/status"
	printf 'Name:\tsmall\nTHP_enabled:\t1\n' >"$THP_ROOT/proc/200/status"
	run -0 "$THPCTL" --json policy 100
	echo "$output" | jq -e '. == {"pid": 100, "comm": "bigapp", "policy": "never", "thp_enabled": 0}'
	run -0 "$THPCTL" policy 200
	assert_line --regexp '^policy: +default$'
	assert_line --regexp '^thp_enabled: +1$'
	# setting another process's state is not possible there: said, exit 2
	run -2 "$THPCTL" policy 200 never
	assert_output --partial 'can be read, not set'
	assert_output --partial 'thpctl run --never'
	# a status line that is not 0 or 1 is not guessed at
	printf 'THP_enabled:\t7\n' >"$THP_ROOT/proc/200/status"
	run -1 "$THPCTL" policy 200
	assert_output --partial "$THP_ROOT/proc/200/status: Bad message"
}

@test "policy PID on this host's kernel: a process started with run --never reads never" {
	local pid
	unset THP_ROOT
	[ -e /proc/self/thp_policy ] && skip "host has the per-process policy: covered in the guest"
	grep -q '^THP_enabled:' /proc/self/status || skip "host kernel has no THP_enabled: in /proc/PID/status"
	"$THPCTL" run --never -- sleep 60 &
	pid=$!
	sleep 60 &
	timeout 10 bash -c 'until [ "$(cat /proc/$1/comm)" = sleep ]; do sleep 0.05; done' _ "$pid" ||
		fail "thpctl run did not exec sleep"
	run -0 "$THPCTL" --json policy "$pid"
	run -0 jq -e '.comm == "sleep" and .policy == "never" and .thp_enabled == 0' <<<"$output"
	run -0 "$THPCTL" --json policy "$!"
	kill "$pid" "$!"
	run -0 jq -e '.policy == "default" and .thp_enabled == 1' <<<"$output"
}

@test "run --advised-only: PR_THP_DISABLE_EXCEPT_ADVISED on this host's kernel (6.18+), or said plainly" {
	local prog
	unset THP_ROOT
	command -v python3 >/dev/null || skip "no python3 to read PR_GET_THP_DISABLE"
	# PR_GET_THP_DISABLE (42): 1 | PR_THP_DISABLE_EXCEPT_ADVISED (2) = 3; then
	# 32 MiB of plain memory, touched: huge only if advised
	prog='import ctypes, sys
print("get_thp_disable=%d" % ctypes.CDLL(None).prctl(42, 0, 0, 0, 0))
b = bytearray(32 << 20)
for i in range(0, len(b), 4096): b[i] = 1
for l in open("/proc/self/smaps_rollup"):
    if l.startswith("AnonHugePages:"): print("anon_huge_kib=" + l.split()[1])'
	run --separate-stderr "$THPCTL" run --advised-only -- python3 -c "$prog"
	if [ "$status" -eq 1 ] && [[ $stderr == *'needs PR_THP_DISABLE_EXCEPT_ADVISED (Linux 6.18 or later)'* ]]; then
		refute_output --partial get_thp_disable
		skip "host kernel $(uname -r) has no PR_THP_DISABLE_EXCEPT_ADVISED: thpctl said so and ran nothing"
	fi
	[ "$status" -eq 0 ] || fail "exit $status: $stderr"
	# kept across exec into the command
	assert_line 'get_thp_disable=3'
	assert_line 'anon_huge_kib=0'
	# and --default undoes it for a command run below
	run -0 "$THPCTL" run --advised-only -- "$THPCTL" run --default -- python3 -c "$prog"
	assert_line 'get_thp_disable=0'
}

@test "policy --collapse on this host's real kernel (MADV_COLLAPSE via process_madvise)" {
	local pid out=$BATS_TEST_TMPDIR/holder.out
	unset THP_ROOT
	command -v python3 >/dev/null || skip "no python3 for a process holding memory"
	[ -e /proc/self/thp_policy ] && skip "host has the per-process policy: covered in the guest"
	grep -q '\[never\]' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null &&
		skip "THP is off on this host"
	# 32 MiB of plain (not advised) anonymous memory, touched, held
	mkfifo "$BATS_TEST_TMPDIR/fifo"
	python3 -c 'import sys, time
b = bytearray(32 << 20)
for i in range(0, len(b), 4096): b[i] = 1
print("ready", flush=True)
sys.stdin.read()' <"$BATS_TEST_TMPDIR/fifo" >"$out" 3>&- &
	pid=$!
	exec 8>"$BATS_TEST_TMPDIR/fifo"
	wait_ready "$out" "$pid" 30 || fail "holder not ready: $(cat "$out")"
	run --separate-stderr "$THPCTL" --json policy --collapse "$pid"
	exec 8>&-
	wait "$pid" || true
	if [[ $stderr == *'not supported by this kernel'* ]]; then
		skip "host kernel without MADV_COLLAPSE in process_madvise"
	fi
	[ "$status" -eq 0 ] || fail "exit $status: $stderr"
	# with THP at "always" the faults may have been huge already: nothing to show
	echo "$output" | jq -e '.collapse.anon_huge_kib_before < 16384' >/dev/null ||
		skip "the memory was already huge at fault (host THP mode: $(cat /sys/kernel/mm/transparent_hugepage/enabled))"
	echo "$output" | jq -e '.collapse.ranges >= 1 and .collapse.anon_huge_kib_after >= 16384
		and .collapse.anon_huge_kib_after > .collapse.anon_huge_kib_before'
}

# ---- the thpd client side, against a scripted peer ----
# Not a thpd: a SOCK_SEQPACKET listener that records each request and sends
# a canned reply (or none), to check thpctl's side of the protocol: what it
# sends, how it reads answers, refusals and silence. The real daemon is
# tested end to end by the thpd suites.

@test "enable through thpd: request framing, and no sysfs write by thpctl" {
	fake_tree stock
	peer '{"ok": true, "enabled": "always", "defrag": "always", "mode": "2"}'
	run -0 --separate-stderr "$THPCTL" enable 2
	wait "$PEER"
	run -0 jq -e '. == {"cmd": "enable", "value": "2"}' "$BATS_TEST_TMPDIR/request"
	assert_equal "$(knob enabled)" 'always [madvise] never'
}

@test "enable through thpd: output says thpd did it" {
	fake_tree patched
	peer '{"ok": true, "enabled": "madvise", "defrag": "madvise", "mode": "0"}'
	run -0 "$THPCTL" enable madvise
	wait "$PEER"
	assert_output 'enabled=madvise defrag=madvise, rfc mode 0: hugepages only in MADV_HUGEPAGE regions (set by thpd, which keeps it)'
}

@test "thpd refusing a change: its message, exit 1, no fallback to sysfs" {
	fake_tree patched
	peer '{"ok": false, "error": "permission denied: not in AdminGroup", "errno": 1}'
	run -1 "$THPCTL" defrag never
	wait "$PEER"
	assert_output --partial "thpd refused 'defrag never': permission denied: not in AdminGroup"
	assert_equal "$(knob defrag)" 'always defer defer+madvise [madvise] never'
}

@test "status with thpd answering: its state under thpd" {
	fake_tree patched
	peer '{"ok": true, "version": "0.1.0", "enabled": "madvise", "mode": "0", "defrag": "madvise",
		"adaptive": {"enabled": true, "state": "normal", "switches": 0, "reason": ""},
		"rules": 2, "rules_applied": 5, "persisted": null,
		"kernel_features": {"mode_file": true, "thp_policy": true}}'
	run -0 "$THPCTL" status --json
	wait "$PEER"
	echo "$output" | jq -e '.thpd.version == "0.1.0" and .thpd.rules_applied == 5
		and .thpd.adaptive.state == "normal" and (.thpd | has("ok") | not)'
	run -0 jq -e '. == {"cmd": "status"}' "$BATS_TEST_TMPDIR/request"
}

@test "thpd answering garbage or nothing: reported, exit 1" {
	fake_tree patched
	peer 'not json'
	run -1 "$THPCTL" enable 1
	wait "$PEER"
	assert_output --partial 'talking to thpd'
	assert_output --partial 'Bad message'
	peer silent
	run -1 "$THPCTL" enable 1
	assert_output --partial 'did not answer'
	kill "$PEER" 2>/dev/null || true
	assert_equal "$(knob enabled)" 'always [madvise] never'
}

# ---- what does not fit is refused, never cut short (issue 20, class 2) ----
# One test per fixed-size buffer of lib/ and cli/ that input can overflow;
# each fails on the code that truncated.

# long_dir BASE LEN: BASE extended with path components to exactly LEN bytes
long_dir() {
	local d=$1 n
	while ((${#d} < $2)); do
		n=$(($2 - ${#d} - 1))
		((n > 200)) && n=200
		((n < 1)) && n=1
		d=$d/$(printf 'd%.0s' $(seq "$n"))
	done
	printf '%s' "$d"
}

@test "THP_ROOT longer than 1023 bytes is refused, not cut to a tree it names" {
	local short
	# a tree at the first 511 bytes: where the old 512-byte buffer led
	short=$(long_dir "$BATS_TEST_TMPDIR/r" 511)
	THP_ROOT=$short fake_tree stock
	export THP_ROOT
	THP_ROOT=$(long_dir "$short" 1100)
	run -2 --separate-stderr "$THPCTL" status
	assert_equal "$output" ""
	[[ $stderr == *'THP_ROOT is 1100 bytes long, the limit is 1023: refused'* ]] || fail "stderr: $stderr"
	# 1023 bytes are accepted (and there is no tree there)
	THP_ROOT=$(long_dir "$short" 1023)
	run -1 "$THPCTL" status
	assert_output --partial 'No such file or directory'
}

@test "ps: a name longer than thpctl reads is refused, not shown cut" {
	fake_tree stock
	fake_proc 300 "$(printf 'n%.0s' {1..300})" 0
	run -1 --separate-stderr "$THPCTL" ps 300
	[[ $stderr == *"cannot read $THP_ROOT/proc/300/comm: File too large"* ]] || fail "stderr: $stderr"
	# in a listing too: said, the others still shown
	run -1 --separate-stderr "$THPCTL" --json ps
	echo "$output" | jq -e '.processes | map(.pid) == [100, 200]'
	[[ $stderr == *"proc/300/comm: File too large"* ]] || fail "stderr: $stderr"
}

@test "ps: an smaps_rollup too long to read whole is refused" {
	fake_tree stock
	{ for i in $(seq 1000); do echo "Pad$i:          0 kB"; done
	  echo 'AnonHugePages:   4096 kB'; } >"$THP_ROOT/proc/200/smaps_rollup"
	run -1 "$THPCTL" ps 200
	assert_output --partial "$THP_ROOT/proc/200/smaps_rollup: File too large"
}

@test "ps: thp_stat counters with long names are kept whole" {
	local name
	fake_tree patched
	name=thp_$(printf 'x%.0s' {1..70})
	echo "$name 42" >>"$THP_ROOT/proc/100/thp_stat"
	run -0 "$THPCTL" --json ps 100
	echo "$output" | jq -e --arg n "$name" '.processes[0][$n] == 42'
	# text: its column header whole, in capitals
	run -0 "$THPCTL" ps 100
	assert_line --index 0 --partial "${name^^}"
}

@test "ps: a table of more than 32 columns shows all of them" {
	fake_tree patched
	for i in $(seq 40); do echo "thp_extra_$i $i"; done >>"$THP_ROOT/proc/100/thp_stat"
	run -0 "$THPCTL" ps 100
	assert_line --index 0 --regexp 'THP_EXTRA_40$'
	assert_line --index 1 --regexp ' 40$'
}

@test "ps: a thp_policy file longer than its buffer is refused" {
	fake_tree patched
	printf 'advise\n%s\n' "$(printf 'x%.0s' {1..40})" >"$THP_ROOT/proc/100/thp_policy"
	run -1 "$THPCTL" ps 100
	assert_output --partial "$THP_ROOT/proc/100/thp_policy: File too large"
}

@test "status: vmstat counters with long names are kept whole; a too long vmstat is refused" {
	local name
	fake_tree stock
	name=thp_$(printf 'y%.0s' {1..70})
	echo "$name 7" >>"$THP_ROOT/proc/vmstat"
	run -0 "$THPCTL" --json status
	echo "$output" | jq -e --arg n "$name" '.counters[$n] == 7'
	{ for i in $(seq 5000); do echo "nr_pad_$i 0"; done; echo 'thp_late 1'; } >>"$THP_ROOT/proc/vmstat"
	run -1 --separate-stderr "$THPCTL" --json status
	[[ $stderr == *"$THP_ROOT/proc/vmstat: File too large"* ]] || fail "stderr: $stderr"
	echo "$output" | jq -e '.counters | has("thp_late") | not'
}

@test "status: a meminfo too long to read whole is refused, not shown as unknown" {
	fake_tree stock
	{ for i in $(seq 1000); do echo "Pad$i:        0 kB"; done
	  echo 'AnonHugePages:     14336 kB'; } >"$THP_ROOT/proc/meminfo"
	run -1 --separate-stderr "$THPCTL" --json status
	[[ $stderr == *"$THP_ROOT/proc/meminfo: File too large"* ]] || fail "stderr: $stderr"
}

@test "status: a khugepaged value longer than its buffer is refused, not read as its prefix" {
	fake_tree stock
	# 66 zeros and 4096: its first 63 bytes read as 0
	printf '%066d4096\n' 0 >"$THP_ROOT/$SYS/khugepaged/pages_to_scan"
	run -1 --separate-stderr "$THPCTL" --json status
	[[ $stderr == *"khugepaged/pages_to_scan: File too large"* ]] || fail "stderr: $stderr"
	echo "$output" | jq -e '.khugepaged | has("pages_to_scan") | not'
}

@test "status: an enabled file longer than its buffer is refused, not parsed from its prefix" {
	fake_tree stock
	printf 'always [madvise] never%300s[always]\n' '' >"$THP_ROOT/$SYS/enabled"
	run -1 "$THPCTL" status
	assert_output --partial 'File too large'
}

@test "status: a mode file longer than its buffer is refused" {
	fake_tree patched
	printf '2\n%40s\n' x >"$THP_ROOT/$SYS/mode"
	run -1 "$THPCTL" status
	assert_output --partial 'File too large'
}

# fake_collapse_target SMAPS_TEXT [STATUS_TEXT]: a real process (sleep, in
# $pid) whose /proc files in the fake tree say what the test wants
fake_collapse_target() {
	sleep 60 &
	pid=$!
	mkdir -p "$THP_ROOT/proc/$pid"
	echo sleep >"$THP_ROOT/proc/$pid/comm"
	printf '%s' "$1" >"$THP_ROOT/proc/$pid/smaps"
	printf '%s' "${2:-$(printf 'Name:\tsleep\nTHP_enabled:\t1\n')}" >"$THP_ROOT/proc/$pid/status"
	echo "$pid (sleep) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 4242 0 0" >"$THP_ROOT/proc/$pid/stat"
}

# policy --collapse on the fake tree: skip where the host cannot, else the JSON in $output
collapse_fake() {
	run --separate-stderr "$THPCTL" --json policy --collapse "$pid"
	kill "$pid"
	if [[ $stderr == *'not supported by this kernel'* ]]; then
		skip "host kernel without MADV_COLLAPSE in process_madvise"
	fi
	[ "$status" -eq 0 ] || fail "exit $status: $stderr"
}

@test "policy --collapse: an smaps line longer than any buffer is not split into a forged mapping" {
	local pid long
	fake_tree stock
	# a file mapping whose name's tail, past 4096 bytes, reads as anonymous memory
	long='7f0000000000-7f0000001000 r--p 00000000 08:02 17 /'
	long=$long$(printf 'f%.0s' $(seq $((4096 - ${#long}))))
	fake_collapse_target "$(printf '%s7f1000000000-7f1000400000 rw-p 00000000 00:00 0\nAnonymous: 4096 kB\n' "$long")"
	collapse_fake
	echo "$output" | jq -e '.collapse.ranges == 0 and .collapse.skipped == {}'
}

@test "policy --collapse: what MADV_COLLAPSE may not touch is skipped, and said why" {
	local pid vmas
	fake_tree stock
	vmas='7f1000000000-7f1000400000 rw-p 00000000 00:00 0
Anonymous: 4096 kB
THPeligible: 0
VmFlags: rd wr mr mw me ac sd nh
'
	fake_collapse_target "$vmas"
	collapse_fake
	echo "$output" | jq -e '.collapse.ranges == 0 and .collapse.skipped == {"nohugepage": 1}'
	# a process that disabled THP: nothing of it, whatever its VMAs say
	fake_collapse_target "${vmas/ nh/}" "$(printf 'Name:\tsleep\nTHP_enabled:\t0\n')"
	collapse_fake
	echo "$output" | jq -e '.collapse.ranges == 0 and .collapse.skipped == {"process_disabled": 1}'
}
