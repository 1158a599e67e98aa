#!/usr/bin/env bats
# thpd's per-size and shmem targets on the build machine, against the THP
# layouts of each kernel generation (tests/host/fixtures, through THP_ROOT):
# [Size N] and Shmem= applied at start, a size the kernel lacks warned and
# skipped, the kernel command line's thp_anon=/transparent_hugepage_shmem=,
# the socket's size and shmem requests persisted and applied again at the
# next start, and the host's own values restored on stop. What needs the
# real kernel (a reboot, pressure) is in the guest suites 53 and 69.

bats_require_minimum_version 1.5.0
load thpd-host
FIX=$BATS_TEST_DIRNAME/fixtures
SYS=sys/kernel/mm/transparent_hugepage

setup() {
	[ -x "$THPD" ] || skip "no $THPD (run make first)"
	R=$BATS_TEST_TMPDIR/root
	T=$R/$SYS
	CONF=$BATS_TEST_TMPDIR/etc/thpd.conf
	STATE=$BATS_TEST_TMPDIR/state
	RUN=$BATS_TEST_TMPDIR/run
	mkdir -p "$R/proc" "$STATE" "$RUN" "$CONF.d"
	echo "BOOT_IMAGE=/vmlinuz root=/dev/sda1" >"$R/proc/cmdline"
	thpd_sockdir
	: >"$CONF"
	PID=
}

teardown() {
	stop_thpd
	rm -rf "$SOCKDIR"
}

# a fresh copy of generation $1's THP layout
use_gen() {
	GEN=$1
	rm -rf "${R:?}/sys"
	cp -r "$FIX/$GEN/sys" "$R/"
}

start_thpd() {
	THP_ROOT=$R STATE_DIRECTORY=$STATE RUNTIME_DIRECTORY=$RUN \
		"$THPD" --config "$CONF" --socket "$SOCK" 2>"$BATS_TEST_TMPDIR/log" &
	PID=$!
	# the socket comes before the configuration is applied; a ping is answered after
	if wait_until --pid "$PID" 10 "$CLIENT" --socket "$SOCK" '{"cmd":"ping"}'; then
		settle
		return 0
	fi
	cat "$BATS_TEST_TMPDIR/log" >&2
	fail "thpd did not come up"
}

stop_thpd() {
	[ -n "$PID" ] || return 0
	thpd_end || STOP_RC=$?
	settle
}

client() {
	run timeout 10 "$CLIENT" --socket "$SOCK" "$@"
	settle
}

@test "[Size N] and Shmem= are applied at start and restored on stop (6.12, 6.18)" {
	for g in 6.12 6.18; do
		use_gen "$g"
		printf '[Global]\nShmem=advise\n[Size 64K]\nEnabled=always\nShmem=within_size\n[Size 2M]\nEnabled=madvise\n' >"$CONF"
		start_thpd
		assert_equal "$g: $(word shmem_enabled)" "$g: advise"
		assert_equal "$g: $(word hugepages-64kB/enabled)" "$g: always"
		assert_equal "$g: $(word hugepages-64kB/shmem_enabled)" "$g: within_size"
		assert_equal "$g: $(word hugepages-2048kB/enabled)" "$g: madvise"
		# untouched: a size the configuration does not name
		assert_equal "$g: $(word hugepages-32kB/enabled)" "$g: never"
		run -0 cat "$RUN/saved"
		assert_line "hugepages-64kB/enabled never"
		assert_line "hugepages-2048kB/enabled inherit"
		assert_line "shmem_enabled never"
		STOP_RC=0
		stop_thpd
		assert_equal "$g: exit $STOP_RC" "$g: exit 0"
		for f in shmem_enabled hugepages-64kB/enabled hugepages-64kB/shmem_enabled hugepages-2048kB/enabled; do
			assert_equal "$g $f: $(<"$T/$f")" "$g $f: $(<"$FIX/$g/$SYS/$f")"
		done
		run -0 grep 'Restored THP settings' "$BATS_TEST_TMPDIR/log"
		assert_output --partial 'hugepages-64kB/enabled=never'
		[ ! -e "$RUN/saved" ] || fail "$g: the runtime 'saved' file outlived a clean stop"
	done
}

@test "a size the kernel lacks: warning with file:line, skipped, the rest applied (6.12, 6.18)" {
	for g in 6.12 6.18; do
		use_gen "$g"
		printf '[Size 64K]\nEnabled=always\n\n[Size 4M]\nEnabled=madvise\n' >"$CONF"
		start_thpd
		run -0 grep 'hugepages-4096kB/enabled=madvise' "$BATS_TEST_TMPDIR/log"
		assert_output --partial "warning: Not setting hugepages-4096kB/enabled=madvise (from the configuration, [Size 4M] at $CONF:5): this kernel has no 4M hugepages"
		assert_output --partial "its sizes:"
		assert_output --partial "2M); skipped"
		assert_equal "$(word hugepages-64kB/enabled)" always
		stop_thpd
	done
	# 6.12's anonymous sizes start at 16K: 8K has shmem_enabled only
	use_gen 6.12
	printf '[Size 8K]\nEnabled=always\nShmem=advise\n' >"$CONF"
	start_thpd
	run -0 grep 'hugepages-8kB' "$BATS_TEST_TMPDIR/log"
	assert_output --partial "Not setting hugepages-8kB/enabled=always (from the configuration, [Size 8K] at $CONF:2): this kernel has no hugepages-8kB/enabled; skipped"
	assert_equal "$(word hugepages-8kB/shmem_enabled)" advise
}

@test "every legal size, 8K to 1G (18 [Size] sections): accepted; what the kernel lacks is skipped (6.18)" {
	local kib name n=0
	use_gen 6.18
	: >"$CONF"
	for ((kib = 8; kib <= 1048576; kib *= 2)); do
		if ((kib >= 1048576)); then name=$((kib / 1048576))G
		elif ((kib >= 1024)); then name=$((kib / 1024))M
		else name=${kib}K
		fi
		printf '[Size %s]\nShmem=advise\n' "$name" >>"$CONF"
		n=$((n + 1))
	done
	assert_equal "$n sections" "18 sections"
	run -0 "$THPD" --check-config --config "$CONF"
	assert_output --partial "$CONF: OK"
	refute_output --partial error
	start_thpd
	# the sizes 6.18 has took the value; the 9 it lacks are named and skipped
	for kib in 8 16 32 64 128 256 512 1024 2048; do
		assert_equal "${kib}kB: $(word "hugepages-${kib}kB/shmem_enabled")" "${kib}kB: advise"
	done
	run -0 grep -c 'this kernel has no .* hugepages.*; skipped' "$BATS_TEST_TMPDIR/log"
	assert_output 9
	run -0 grep 'hugepages-1048576kB/shmem_enabled=advise' "$BATS_TEST_TMPDIR/log"
	assert_output --partial "[Size 1G] at $CONF:36): this kernel has no 1G hugepages"
	stop_thpd

	# a kernel with every size (none has them all today, but all are legal):
	# the layout of 6.18 with 4M to 1G added. Each size takes the
	# configuration's value, and one socket request may name all 18.
	mkdir -p "$BATS_TEST_TMPDIR/fix/all"
	cp -r "$FIX/6.18/sys" "$BATS_TEST_TMPDIR/fix/all/"
	FIX=$BATS_TEST_TMPDIR/fix
	for ((kib = 4096; kib <= 1048576; kib *= 2)); do
		cp -r "$FIX/all/$SYS/hugepages-2048kB" "$FIX/all/$SYS/hugepages-${kib}kB"
	done
	use_gen all
	start_thpd
	for ((kib = 8; kib <= 1048576; kib *= 2)); do
		assert_equal "${kib}kB: $(word "hugepages-${kib}kB/shmem_enabled")" "${kib}kB: advise"
	done
	refute grep -q 'skipped' "$BATS_TEST_TMPDIR/log"
	client '{"cmd":"shmem","value":"never","size":"8K,16K,32K,64K,128K,256K,512K,1M,2M,4M,8M,16M,32M,64M,128M,256M,512M,1G"}'
	assert_output --partial '"ok":true'
	for ((kib = 8; kib <= 1048576; kib *= 2)); do
		assert_equal "${kib}kB: $(word "hugepages-${kib}kB/shmem_enabled")" "${kib}kB: never"
	done
	run -0 jq -r '.sizes | keys | length' "$STATE/state"
	assert_output 18
	# thpctl sees every size too
	THP_ROOT=$R THPD_SOCKET=$BATS_TEST_TMPDIR/none run -0 "$BUILD_DIR/thpctl" metrics
	run -0 grep -c '^thp_size_shmem_enabled{size="[0-9]*kB",setting="never"} 1$' <<<"$output"
	assert_output 18
}

@test "kernels without per-size controls (6.1, patched 6.1): sizes skipped saying why, Shmem= applied" {
	for g in 6.1 6.1-patched; do
		use_gen "$g"
		printf '[Global]\nShmem=within_size\n[Size 2M]\nEnabled=always\n' >"$CONF"
		start_thpd
		run -0 grep 'hugepages-2048kB' "$BATS_TEST_TMPDIR/log"
		assert_output --partial "this kernel has no 2M hugepages (no $T/hugepages-2048kB; its sizes: none, no per-size controls); skipped"
		assert_equal "$g: $(word shmem_enabled)" "$g: within_size"
		run -0 "$CLIENT" --socket "$SOCK" '{"cmd":"ping"}'
		stop_thpd
		assert_equal "$g: $(<"$T/shmem_enabled")" "$g: $(<"$FIX/$g/$SYS/shmem_enabled")"
	done
}

@test "bad Shmem=, Enabled= and [Size N]: fatal at file:line (exit 78), nothing changed" {
	use_gen 6.12
	printf '[Global]\nMode=madvise\n[Size 64K]\n\nEnabled=within_size\n' >"$CONF"
	run -78 "$THPD" --check-config --config "$CONF"
	assert_output --partial "$CONF:5: error: invalid Enabled=within_size in [Size 64K] (expected always, inherit, madvise or never)"
	printf '[Size 48K]\nEnabled=always\n' >"$CONF.d/10-size.conf"
	printf '[Global]\n' >"$CONF"
	run -78 "$THPD" --check-config --config "$CONF"
	assert_output --partial "$CONF.d/10-size.conf:2: error: [Size 48K]: not a hugepage size"
	rm "$CONF.d/10-size.conf"
	printf '[Global]\nShmem=inherit\n' >"$CONF"
	run -78 env THP_ROOT="$R" STATE_DIRECTORY="$STATE" "$THPD" --config "$CONF" --socket "$SOCK"
	assert_output --partial "error: $CONF:2: invalid Shmem=inherit (expected always, within_size, advise, never, deny or force)"
	diff -r "$FIX/6.12/sys" "$R/sys" || fail "a fatal configuration changed the tree"
}

@test "thp_anon= and transparent_hugepage_shmem= on the kernel command line win over the configuration" {
	use_gen 6.12
	echo "BOOT_IMAGE=/vmlinuz thp_anon=16K-32K:always;128K,512K:inherit transparent_hugepage_shmem=advise thp_anon=64K:sometimes" \
		>"$R/proc/cmdline"
	printf '[Global]\nShmem=within_size\n[Size 32K]\nEnabled=never\n[Size 64K]\nEnabled=madvise\n' >"$CONF"
	start_thpd
	run -0 cat "$BATS_TEST_TMPDIR/log"
	assert_output --partial "transparent_hugepage_shmem=advise on the kernel command line takes precedence over Shmem=within_size"
	assert_output --partial "thp_anon= on the kernel command line sets 32K to always, over Enabled=never of [Size 32K]"
	assert_output --partial "Ignoring 1 thp_anon= on the kernel command line: the kernel refused it whole"
	assert_equal "$(word shmem_enabled)" advise
	assert_equal "$(word hugepages-16kB/enabled)" always
	assert_equal "$(word hugepages-32kB/enabled)" always
	assert_equal "$(word hugepages-128kB/enabled)" inherit
	# the malformed thp_anon= is ignored whole: 64K keeps its configured value
	assert_equal "$(word hugepages-64kB/enabled)" madvise
	stop_thpd
	# HonorKernelCmdline=no: the configuration applies
	printf '[Global]\nHonorKernelCmdline=no\nShmem=within_size\n[Size 32K]\nEnabled=madvise\n' >"$CONF"
	start_thpd
	assert_equal "$(word shmem_enabled)" within_size
	assert_equal "$(word hugepages-32kB/enabled)" madvise
}

# a word of "never madvise always inherit" (the first of them when $2 is
# "top": without inherit) that the text $1 does not contain
word_not_in() {
	local w words="never madvise always"
	[ "${2:-}" = top ] || words+=" inherit"
	for w in $words; do
		[[ $1 == *"$w"* ]] || { echo "$w"; return; }
	done
	echo never
}

# Every case of the table tests/host/fixtures/cmdline.txt (a stock kernel's:
# FLAGS "-"), as /proc/cmdline of a 6.12 tree whose kernel takes thp_anon=:
# thpd holds enabled and each size as the kernel took them, and where the
# kernel took nothing, the configuration's value, a word the line does not
# contain (so a parameter the kernel refused, or that is init's, cannot pass
# for taken).
@test "every case of the command-line table: thpd holds what the kernel took, the configuration elsewhere" {
	local flags text expect x anon cfgw topw name kib want w n=0 size got bad=()
	printf '%s\n' 'ffffffff835b0ae0 t setup_transparent_hugepage' 'ffffffff835bb870 t setup_thp_anon' \
		>"$R/proc/kallsyms"
	while IFS= read -r line; do
		[[ -n $line && $line != '#'* ]] || continue
		flags=${line%%$'\t'*}
		text=${line#*$'\t'}
		expect=${text#*$'\t'}
		text=${text%%$'\t'*}
		[ "$flags" = - ] || continue
		[[ $text == *shmem* ]] && continue	# this kernel has no shmem parameters
		n=$((n + 1))
		use_gen 6.12
		printf '%b' "$text" >"$R/proc/cmdline"
		x=$(grep -o '^transparent_hugepage=[a-z0-9]*' <<<"$expect" | cut -d= -f2 || true)
		anon=$(grep -o 'thp_anon=[^ ]*' <<<"$expect" | cut -d= -f2 || true)
		topw=$(word_not_in "$text${x:+ $x}" top)
		cfgw=$(word_not_in "$text")
		{
			printf '[Global]\nMode=%s\n' "$topw"
			for kib in 16 32 64 128 256 512 1024 2048; do
				printf '[Size %sK]\nEnabled=%s\n' "$kib" "$cfgw"
			done
		} >"$CONF"
		start_thpd
		got="enabled=$(word enabled)"
		want="enabled=${x:-$topw}"
		for kib in 16 32 64 128 256 512 1024 2048; do
			thp_size_name_of "$kib"
			w=$cfgw
			for size in ${anon//;/ }; do
				[ "${size%%:*}" != "$name" ] || w=${size#*:}
			done
			got+=" $name=$(word hugepages-${kib}kB/enabled)"
			want+=" $name=$w"
		done
		[ "$got" = "$want" ] || bad+=("'$text': want $want, got $got")
		stop_thpd
	done <"$FIX/cmdline.txt"
	[ "$n" -ge 50 ] || fail "only $n cases in $FIX/cmdline.txt"
	[ "${#bad[@]}" -eq 0 ] || fail "$(printf '%s\n' "${#bad[@]} of $n cases differ:" "${bad[@]}")"
}

# name: 16K, 2M ... for a size in KiB
thp_size_name_of() {
	if [ "$1" -ge 1024 ]; then name=$(($1 / 1024))M; else name=${1}K; fi
}

@test "a boot parameter the running kernel does not take (no handler in /proc/kallsyms) is ignored, saying so" {
	use_gen 6.12
	echo "BOOT_IMAGE=/vmlinuz thp_anon=32K:always transparent_hugepage_shmem=advise thp_shmem=64K:always" \
		>"$R/proc/cmdline"
	printf '[Global]\nShmem=within_size\n[Size 32K]\nEnabled=never\n[Size 64K]\nShmem=advise\n' >"$CONF"
	# as Debian's 6.12 has it: thp_anon= yes, the shmem parameters (6.13/6.14) no
	printf '%s\n' 'ffffffff835b0ae0 t setup_transparent_hugepage' 'ffffffff835bb870 t setup_thp_anon' \
		'ffffffffc0a01000 t setup_other	[some_module]' >"$R/proc/kallsyms"
	start_thpd
	run -0 cat "$BATS_TEST_TMPDIR/log"
	assert_output --partial "Ignoring transparent_hugepage_shmem= on the kernel command line: this kernel does not take it (no setup_transparent_hugepage_shmem in /proc/kallsyms)"
	assert_output --partial "Ignoring thp_shmem= on the kernel command line: this kernel does not take it (no setup_thp_shmem in /proc/kallsyms)"
	refute_output --partial "Ignoring thp_anon="
	assert_equal "$(word hugepages-32kB/enabled)" always
	assert_equal "$(word shmem_enabled)" within_size
	assert_equal "$(word hugepages-64kB/shmem_enabled)" advise
	stop_thpd
	# a kernel that takes all three: the command line wins again
	printf '%s\n' 'ffffffff835b0ae0 t setup_transparent_hugepage_shmem' 'ffffffff835b0b80 t setup_thp_shmem' \
		'ffffffff835bb870 t setup_thp_anon' >"$R/proc/kallsyms"
	start_thpd
	run -0 cat "$BATS_TEST_TMPDIR/log"
	refute_output --partial "this kernel does not take it"
	assert_equal "$(word shmem_enabled)" advise
	assert_equal "$(word hugepages-64kB/shmem_enabled)" always
}

@test "socket: enable/shmem with a size are persisted, applied again at the next start, restored on stop" {
	use_gen 6.12
	start_thpd
	# one request at a time: the fake tree is settled between thpd's changes
	client '{"cmd":"enable","value":"always","size":"64K,2M"}'
	assert_output --partial '"ok":true'
	client '{"cmd":"shmem","value":"within_size","size":"64K"}'
	assert_output --partial '"ok":true'
	client '{"cmd":"shmem","value":"advise"}'
	assert_output --partial '"ok":true'
	assert_equal "$(word hugepages-64kB/enabled)" always
	assert_equal "$(word hugepages-2048kB/enabled)" always
	assert_equal "$(word hugepages-64kB/shmem_enabled)" within_size
	assert_equal "$(word shmem_enabled)" advise
	run -0 cat "$STATE/state"
	assert_output '{"version":1,"enabled":null,"defrag":null,"shmem_enabled":"advise","sizes":{"64K":{"enabled":"always","shmem_enabled":"within_size"},"2M":{"enabled":"always","shmem_enabled":null}}}'
	client '{"cmd":"status"}'
	assert_output --partial '"persisted":{"enabled":null,"defrag":null,"shmem_enabled":"advise","sizes":{"64K":{"enabled":"always","shmem_enabled":"within_size"},"2M":{"enabled":"always","shmem_enabled":null}}}'
	run -0 grep 'set through the socket' "$BATS_TEST_TMPDIR/log"
	assert_line --partial 'hugepages-64kB/enabled=always hugepages-2048kB/enabled=always set through the socket (was hugepages-64kB/enabled=never hugepages-2048kB/enabled=inherit)'
	stop_thpd
	# stop put back the host's values; the next start applies the persisted ones
	assert_equal "$(word hugepages-64kB/enabled)" never
	assert_equal "$(word hugepages-2048kB/enabled)" inherit
	assert_equal "$(word shmem_enabled)" never
	start_thpd
	assert_equal "$(word hugepages-64kB/enabled)" always
	assert_equal "$(word hugepages-2048kB/enabled)" always
	assert_equal "$(word hugepages-64kB/shmem_enabled)" within_size
	assert_equal "$(word shmem_enabled)" advise
	# inherit is a size's own value like any other
	client '{"cmd":"enable","value":"inherit","size":"2M"}'
	assert_output --partial '"ok":true'
	assert_equal "$(word hugepages-2048kB/enabled)" inherit
	run -0 cat "$STATE/state"
	assert_output --partial '"2M":{"enabled":"inherit","shmem_enabled":null}'
}

@test "socket: sizes and words the kernel lacks, bad sizes and members are refused, nothing changed" {
	use_gen 6.12
	start_thpd
	client '{"cmd":"enable","value":"always","size":"64K,4M"}' \
		'{"cmd":"enable","value":"within_size","size":"64K"}' \
		'{"cmd":"enable","value":"always","size":"63K"}' \
		'{"cmd":"enable","value":"always","size":"64K,"}' \
		'{"cmd":"enable","value":"always","size":64}' \
		'{"cmd":"defrag","value":"always","size":"64K"}' \
		'{"cmd":"shmem","value":"inherit"}' \
		'{"cmd":"shmem","value":"deny","size":"64K"}' \
		'{"cmd":"enable","value":"always","size":"8K"}' \
		'{"cmd":"shmem"}' \
		'{"cmd":"ping"}'
	assert_success
	assert_line --index 0 --regexp 'this kernel has no 4M hugepages .*nothing was changed.*"errno":2'
	assert_line --index 1 --regexp "invalid value 'within_size' for enable --size \(expected always, inherit, madvise or never\).*\"errno\":22"
	assert_line --index 2 --regexp "invalid size '63K'.*\"errno\":22"
	assert_line --index 3 --regexp 'invalid \\"size\\".*"errno":22'
	assert_line --index 4 --regexp '\\"size\\" must be a string.*"errno":22'
	assert_line --index 5 --regexp 'unexpected member \\"size\\" in a .defrag. request.*"errno":22'
	assert_line --index 6 --regexp "invalid value 'inherit' for shmem \(expected always, within_size, advise, never, deny or force\).*\"errno\":22"
	assert_line --index 7 --regexp "invalid value 'deny' for shmem --size.*\"errno\":22"
	assert_line --index 8 --regexp 'this kernel has no hugepages-8kB\\/enabled; nothing was changed.*"errno":95'
	assert_line --index 9 --regexp "'shmem' needs a string .*\"errno\":22"
	assert_line --index 10 --partial '"ok":true'
	assert_equal "$(word hugepages-64kB/enabled)" never
	[ ! -e "$STATE/state" ] || fail "a refused change was persisted: $(cat "$STATE/state")"
	run -0 setpriv --reuid=65534 --regid=65534 --clear-groups timeout 10 "$CLIENT" --socket "$SOCK" \
		'{"cmd":"enable","value":"always","size":"64K"}'
	assert_output --regexp "permission denied: 'enable' needs root.*\"errno\":1"
	# no per-size controls at all
	stop_thpd
	use_gen 6.1
	start_thpd
	client '{"cmd":"enable","value":"always","size":"2M"}' '{"cmd":"shmem","value":"advise"}'
	assert_line --index 0 --regexp 'this kernel has no 2M hugepages .*no per-size controls.*"errno":2'
	assert_line --index 1 --partial '"ok":true'
	assert_equal "$(word shmem_enabled)" advise
}

@test "a persisted size the kernel lacks (state from another kernel): warning, skipped, thpd runs" {
	use_gen 6.12
	echo '{"version":1,"enabled":null,"defrag":null,"sizes":{"4M":{"enabled":"always","shmem_enabled":null},"64K":{"enabled":"madvise","shmem_enabled":null}}}' \
		>"$STATE/state"
	start_thpd
	run -0 cat "$BATS_TEST_TMPDIR/log"
	assert_output --partial "Not setting hugepages-4096kB/enabled=always (from the persisted state): this kernel has no 4M hugepages"
	assert_equal "$(word hugepages-64kB/enabled)" madvise
}

@test "thpctl enable --size and shmem go through thpd when it runs, which persists them" {
	use_gen 6.12
	start_thpd
	THPCTL=$BUILD_DIR/thpctl
	run -0 env THP_ROOT="$R" THPD_SOCKET="$SOCK" timeout 10 "$THPCTL" enable always --size 64K,2M
	assert_output --partial "64K: enabled=always effective=always"
	assert_output --partial "(set by thpd, which keeps it)"
	settle
	run -0 env THP_ROOT="$R" THPD_SOCKET="$SOCK" timeout 10 "$THPCTL" shmem advise
	assert_output --partial "(set by thpd, which keeps it)"
	settle
	run -0 cat "$STATE/state"
	assert_output --partial '"shmem_enabled":"advise","sizes":{"64K":{"enabled":"always","shmem_enabled":null},"2M":{"enabled":"always","shmem_enabled":null}}'
	assert_equal "$(word hugepages-64kB/enabled)" always
	# thpd's refusal (here: it cannot save) is thpctl's failure, and nothing
	# is written behind its back
	rm -rf "$STATE"
	run -1 env THP_ROOT="$R" THPD_SOCKET="$SOCK" timeout 10 "$THPCTL" shmem within_size
	assert_output --partial "thpd refused 'shmem within_size': cannot save the setting"
	assert_equal "$(word shmem_enabled)" advise
	run -1 env THP_ROOT="$R" THPD_SOCKET="$SOCK" timeout 10 "$THPCTL" enable never --size 64K
	assert_output --partial "thpd refused 'enable never'"
	assert_equal "$(word hugepages-64kB/enabled)" always
	# without thpd: straight to sysfs, and said so
	stop_thpd
	run -0 env THP_ROOT="$R" THPD_SOCKET="$SOCK" timeout 10 "$THPCTL" enable madvise --size 32K
	assert_output --partial "(written to sysfs: thpd is not running, so this lasts until reboot)"
}

# thpctl against this suite's thpd and tree
thpctl_here() {
	env THP_ROOT="$R" THPD_SOCKET="$SOCK" timeout 10 "$BUILD_DIR/thpctl" "$@"
}

# a knob as the kernel would show it after a write of WORD: FILE WORD
set_word() {
	local list
	list=$(tr -d '[]' <"$FIX/$GEN/$SYS/$1")
	list=" $list "
	list=${list/ $2 / [$2] }
	list=${list# }
	echo "${list% }" >"$T/$1"
}

@test "status names the target, value by value with its source; thpctl verify compares it with sysfs" {
	use_gen 6.12
	printf '[Global]\nKhugepagedPagesToScan=1234\n[Size 64K]\nEnabled=always\n' >"$CONF"
	start_thpd
	client '{"cmd":"status"}'
	assert_success
	assert_equal "$(jq -c '.target.enabled' <<<"$output")" '{"value":"always","source":"host'"'"'s original value"}'
	assert_equal "$(jq -c '.target["hugepages-64kB/enabled"]' <<<"$output")" '{"value":"always","source":"configuration"}'
	assert_equal "$(jq -c '.target["hugepages-2048kB/shmem_enabled"]' <<<"$output")" '{"value":"inherit","source":"host'"'"'s original value"}'
	assert_equal "$(jq -c '.target["khugepaged/pages_to_scan"]' <<<"$output")" '{"value":1234,"source":"configuration"}'
	assert_equal "$(jq -c .overlay <<<"$output")" null
	run -0 thpctl_here verify
	assert_line --regexp '^drift: +0$'
	assert_output --regexp 'hugepages-64kB/enabled +always +always +configuration +ok'
	run -0 thpctl_here --json=short verify
	assert_equal "$(jq -c '[.drift, .checked > 20, .thpd_state]' <<<"$output")" '[0,true,"normal"]'
	# a value written behind thpd's back is drift: exit 3, the file named
	set_word hugepages-64kB/enabled madvise
	echo 4096 >"$T/khugepaged/pages_to_scan"
	run -3 thpctl_here verify
	assert_output --regexp 'hugepages-64kB/enabled +always +madvise +configuration +DRIFT'
	assert_output --regexp 'khugepaged/pages_to_scan +1234 +4096 +configuration +DRIFT'
	assert_line --regexp '^drift: +2$'
	run -0 thpctl_here metrics
	assert_line "thpd_drift_files 2"
	# a reload puts the target back
	client '{"cmd":"reload"}'
	run -0 thpctl_here verify
	stop_thpd
	run -1 thpctl_here verify
	assert_output --partial "thpd is not running"
	run -0 thpctl_here metrics
	refute_output --partial thpd_drift_files
}

@test "stepped down: status names the overlay on the target; verify counts the overlay, no drift" {
	use_gen 6.12
	# plenty of free 2 MiB blocks until thpd has started and the tree is settled
	echo "Node 0, zone   Normal      1      1      1      1      1      1      1      1      1    100      0" \
		>"$R/proc/buddyinfo"
	printf '[Global]\nMode=always\n[Size 64K]\nEnabled=always\n[Adaptive]\nEnabled=yes\nMinFreeBlocks=10\nCheckIntervalSec=1\nCalmSec=1h\n' >"$CONF"
	start_thpd
	# then none: the next check steps down
	echo "Node 0, zone   Normal      1      1      1      1      1      1      1      1      1      0      0" \
		>"$R/proc/buddyinfo"
	# the step-down writes the sizes, then enabled, then defrag last
	wait_until 10 grep -qx defer "$T/defrag" || fail "no step-down: $(cat "$BATS_TEST_TMPDIR/log")"
	settle
	client '{"cmd":"status"}'
	assert_equal "$(jq -c '[.adaptive.state, .adaptive.stepped_sizes]' <<<"$output")" '["stepped-down",{"64K":"always"}]'
	assert_equal "$(jq -c '.overlay' <<<"$output")" '{"enabled":{"value":"madvise","source":"step-down"},"defrag":{"value":"defer","source":"step-down"},"hugepages-64kB/enabled":{"value":"madvise","source":"step-down"}}'
	assert_equal "$(jq -c '.target.enabled' <<<"$output")" '{"value":"always","source":"configuration"}'
	run -0 thpctl_here verify
	assert_output --regexp 'enabled +madvise +madvise +step-down +ok'
	assert_line --regexp '^thpd_state: +stepped-down$'
	run -0 thpctl_here metrics
	assert_line "thpd_drift_files 0"
}

@test "reset: thpd forgets what was set through it, and holds its target again; a non-root caller may not" {
	use_gen 6.12
	printf '[Size 64K]\nEnabled=always\n' >"$CONF"
	start_thpd
	client '{"cmd":"enable","value":"madvise","size":"128K,64K"}'
	client '{"cmd":"shmem","value":"advise","size":"32K"}'
	assert_equal "$(word hugepages-64kB/enabled) $(word hugepages-128kB/enabled) $(word hugepages-32kB/shmem_enabled)" \
		"madvise madvise advise"
	run setpriv --reuid=65534 --regid=65534 --clear-groups timeout 10 "$CLIENT" --socket "$SOCK" '{"cmd":"reset"}'
	assert_output --partial "permission denied: 'reset' needs root"
	client '{"cmd":"reset","value":"x"}'
	assert_output --partial 'unexpected member \"value\"'
	run -0 thpctl_here reset
	settle
	assert_output --partial "thpd forgot what was set through it"
	# the configuration's 64K, the host's own 128K and 32K
	assert_equal "$(word hugepages-64kB/enabled) $(word hugepages-128kB/enabled) $(word hugepages-32kB/shmem_enabled)" \
		"always never never"
	client '{"cmd":"status"}'
	assert_equal "$(jq -c .persisted <<<"$output")" null
	run -0 cat "$STATE/state"
	refute_output --partial madvise
}

@test "reset without thpd: the boot defaults it can know (command line, kernel configuration), the rest said" {
	use_gen 6.12
	mkdir -p "$R/proc/sys/kernel" "$R/boot"
	echo 6.12.0-test >"$R/proc/sys/kernel/osrelease"
	printf 'CONFIG_TRANSPARENT_HUGEPAGE=y\nCONFIG_TRANSPARENT_HUGEPAGE_MADVISE=y\n' >"$R/boot/config-6.12.0-test"
	printf 'MemTotal:        2014624 kB\n' >"$R/proc/meminfo"
	echo "BOOT_IMAGE=/vmlinuz thp_anon=64K:always -- transparent_hugepage=never" >"$R/proc/cmdline"
	set_word enabled never
	set_word defrag defer
	set_word shmem_enabled advise
	set_word hugepages-2048kB/enabled always
	set_word hugepages-32kB/shmem_enabled always
	run -0 env THP_ROOT="$R" THPD_SOCKET="$SOCK" timeout 10 "$BUILD_DIR/thpctl" reset
	settle
	assert_output --partial "enabled=madvise (was never: CONFIG_TRANSPARENT_HUGEPAGE_MADVISE)"
	assert_output --partial "hugepages-64kB/enabled=always (was never: thp_anon= on the kernel command line)"
	assert_output --partial "thpd is not running"
	# thp_anon= names 64K: the other sizes booted never, 2M included
	assert_equal "$(word enabled) $(word defrag) $(word shmem_enabled)" "madvise madvise never"
	assert_equal "$(word hugepages-64kB/enabled) $(word hugepages-2048kB/enabled) $(word hugepages-32kB/enabled)" "always never never"
	assert_equal "$(word hugepages-32kB/shmem_enabled) $(word hugepages-2048kB/shmem_enabled)" "never inherit"
	run -0 env THP_ROOT="$R" THPD_SOCKET="$SOCK" timeout 10 "$BUILD_DIR/thpctl" reset
	assert_output --partial "already at the boot defaults"
	# no kernel configuration and no transparent_hugepage=: enabled is not known, left, exit 3
	rm "$R/boot/config-6.12.0-test"
	set_word enabled always
	run -3 env THP_ROOT="$R" THPD_SOCKET="$SOCK" timeout 10 "$BUILD_DIR/thpctl" reset
	assert_output --partial "enabled: left as it is"
	assert_equal "$(word enabled)" always
	# under 512 MiB the kernel boots with THP off, whatever else says
	printf 'MemTotal:        262144 kB\n' >"$R/proc/meminfo"
	run -3 env THP_ROOT="$R" THPD_SOCKET="$SOCK" timeout 10 "$BUILD_DIR/thpctl" reset
	settle
	assert_equal "$(word enabled) $(word defrag)" "never never"
}

@test "a change through the socket of a value the kernel command line sets is refused, saying so" {
	use_gen 6.12
	printf '%s\n' 'ffffffff835bb870 t setup_thp_anon' >"$R/proc/kallsyms"
	echo "BOOT_IMAGE=/vmlinuz transparent_hugepage=always thp_anon=64K:always" >"$R/proc/cmdline"
	start_thpd
	client '{"cmd":"enable","value":"never"}'
	assert_output --partial '"errno":16'
	assert_output --partial "transparent_hugepage= on the kernel command line sets enabled to always"
	client '{"cmd":"enable","value":"never","size":"64K"}'
	run -0 jq -r .error <<<"$output"
	assert_output --partial "thp_anon= on the kernel command line sets hugepages-64kB/enabled to always"
	assert_equal "$(word enabled) $(word hugepages-64kB/enabled)" "always always"
	[ ! -e "$STATE/state" ] || fail "a refused change was persisted: $(cat "$STATE/state")"
	# what the command line does not name is the socket's to set
	client '{"cmd":"enable","value":"madvise","size":"128K"}'
	assert_output --partial '"ok":true'
	assert_equal "$(word hugepages-128kB/enabled)" madvise
}

@test "thpctl status: thpd's collapse in a line of its own, off by default" {
	use_gen 6.12
	start_thpd
	run -0 env THP_ROOT="$R" THPD_SOCKET="$SOCK" timeout 10 "$BUILD_DIR/thpctl" status
	assert_line --regexp '^thpd: +running '
	assert_line --regexp '^thpd_collapse: +off \(\[Collapse\] Enabled=no in thpd.conf\)$'
	# without thpd, no such line
	run -0 env THP_ROOT="$R" THPD_SOCKET="$BATS_TEST_TMPDIR/none" timeout 10 "$BUILD_DIR/thpctl" status
	refute_line --partial thpd_collapse
}
