#!/usr/bin/env bats
# thpctl unit: a THP policy for one systemd service in one step, against a
# scripted systemctl (first on PATH) that keeps units in a fake tree:
# MemoryTHP= where "systemd" has it (FAKE_MEMORY_THP=1), else thpctl run in
# front of ExecStart=; daemon-reload; and what systemd then holds, asked,
# not assumed. The real systemd is the guest's (tests/bats/42-thpctl-unit).

bats_require_minimum_version 1.5.0
load '/usr/lib/bats/bats-support/load'
load '/usr/lib/bats/bats-assert/load'

load thpctl-gen

setup() {
	thpctl_env
	use_gen 6.12
	ETC=$THP_ROOT/etc/systemd/system
	LIB=$BATS_TEST_TMPDIR/lib-units
	mkdir -p "$ETC" "$LIB" "$BATS_TEST_TMPDIR/bin"
	SELF=$(readlink -f "$THPCTL")
	fake_systemctl
	PATH=$BATS_TEST_TMPDIR/bin:$PATH
	export FAKE_LOG=$BATS_TEST_TMPDIR/systemctl.log ETC LIB
	unset FAKE_MEMORY_THP
	printf '[Unit]\nDescription=app\n\n[Service]\nExecStartPre=/bin/true\nExecStart=-/usr/bin/app --flag "a b" \\\n  --more\nRestart=always\n' \
		>"$LIB/app.service"
}

# A systemctl that answers cat, show -p ExecStart|MemoryTHP|DropInPaths
# [--value] and daemon-reload from $LIB (units) and $ETC (their drop-ins,
# read in name order as systemd does), logging each call.
fake_systemctl() {
	cat >"$BATS_TEST_TMPDIR/bin/systemctl" <<'EOF'
#!/bin/bash
echo "$*" >>"$FAKE_LOG"
files() {
	echo "$LIB/$1"
	ls "$ETC/$1.d/"*.conf 2>/dev/null | sort
}
# the last value of KEY over the unit and its drop-ins ("" resets a list)
effective() {
	local f
	for f in $(files "$2"); do
		sed -e ':a' -e '/\\$/N; s/\\\n/ /; ta' "$f" | grep "^$1="
	done | awk -F= -v key="$1" '
		{ v = substr($0, length(key) + 2) }
		v == "" { n = 0; next }
		{ val[n++] = v }
		END { for (i = 0; i < n; i++) print val[i] }'
}
case $1 in
cat)
	[ -f "$LIB/$2" ] || { echo "No files found for $2." >&2; exit 1; }
	first=1
	for f in $(files "$2"); do
		[ -n "$first" ] || echo
		first=
		echo "# $f"
		cat "$f"
	done ;;
show)
	prop=$3 value= name=$4
	[ "$4" = --value ] && value=1 name=$5
	case $prop in
	MemoryTHP)
		[ -n "${FAKE_MEMORY_THP-}" ] || exit 0
		v=$(effective MemoryTHP "$name" | tail -1)
		[ -n "$value" ] || printf 'MemoryTHP='
		echo "${v:-inherit}" ;;
	ExecStart)
		[ -n "$value" ] || printf 'ExecStart='
		effective ExecStart "$name" | while IFS= read -r l; do
			l=${l#[-@:+!]}
			printf '{ path=%s ; argv[]=%s ; ignore_errors=no ; start_time=[n/a] ; stop_time=[n/a] ; pid=0 ; code=(null) ; status=0/0 } ' \
				"${l%% *}" "$l"
		done
		echo ;;
	DropInPaths)
		[ -n "$value" ] || printf 'DropInPaths='
		ls "$ETC/$name.d/"*.conf 2>/dev/null | sort | paste -sd' ' ;;
	esac ;;
daemon-reload) [ -z "${FAKE_RELOAD_FAILS-}" ] || exit 1 ;;
*) exit 2 ;;
esac
EOF
	chmod +x "$BATS_TEST_TMPDIR/bin/systemctl"
}

@test "unit NAME never without MemoryTHP=: thpctl run --never -q in front of ExecStart=, reloaded, said" {
	run -0 --separate-stderr "$THPCTL" unit app never
	assert_output "app.service: THP policy never through thpctl run --never -q in ExecStart= in $ETC/app.service.d/thp.conf; it applies from the service's next start ('systemctl restart app.service')"
	assert_equal "$stderr" ""
	run -0 cat "$ETC/app.service.d/thp.conf"
	assert_line '[Service]'
	assert_line 'ExecStart='
	# the prefix stays in front, the command line as it was written
	assert_line "ExecStart=-$SELF run --never -q -- /usr/bin/app --flag \"a b\"    --more"
	refute_output --partial ExecStartPre
	run -0 grep -c daemon-reload "$FAKE_LOG"
	assert_output 1
}

@test "unit NAME never where systemd has MemoryTHP=: MemoryTHP=disable, no wrapper" {
	export FAKE_MEMORY_THP=1
	run -0 --separate-stderr "$THPCTL" unit app.service never
	assert_output --partial 'app.service: THP policy never through MemoryTHP=disable in '
	run -0 cat "$ETC/app.service.d/thp.conf"
	assert_line 'MemoryTHP=disable'
	refute_output --partial ExecStart
}

@test "unit NAME advise: the wrapper even where MemoryTHP= exists (it has no such mode); a stock kernel's reach said" {
	export FAKE_MEMORY_THP=1
	put enabled madvise
	run -0 --separate-stderr "$THPCTL" unit app advise
	assert_output --partial 'through thpctl run --advise -q in ExecStart='
	[[ $stderr == *"covers only memory from malloc"* ]] || fail "stderr: $stderr"
	run -0 cat "$ETC/app.service.d/thp.conf"
	assert_line --partial "ExecStart=-$SELF run --advise -q -- /usr/bin/app"
	refute_output --partial MemoryTHP
}

@test "unit again: the unit's own ExecStart= wrapped, never the wrapper; default removes it" {
	run -0 "$THPCTL" unit app never
	run -0 "$THPCTL" unit app advise
	run -0 cat "$ETC/app.service.d/thp.conf"
	assert_line "ExecStart=-$SELF run --advise -q -- /usr/bin/app --flag \"a b\"    --more"
	refute_output --partial -- '--never'
	run -0 --separate-stderr "$THPCTL" unit app default
	assert_output "app.service: THP follows the system's settings again ($ETC/app.service.d/thp.conf removed)"
	[ ! -e "$ETC/app.service.d" ] || fail "the empty drop-in directory stayed"
	run -0 grep -c daemon-reload "$FAKE_LOG"
	assert_output 3
	# nothing to remove: still fine
	run -0 "$THPCTL" unit app default
}

@test "unit: a drop-in read after ours that sets ExecStart= again: not in effect (exit 3), the drop-ins named" {
	mkdir -p "$ETC/app.service.d"
	printf '[Service]\nExecStart=\nExecStart=/usr/bin/app --other\n' >"$ETC/app.service.d/zz-local.conf"
	run -3 --separate-stderr "$THPCTL" unit app never
	assert_equal "$output" ""
	[[ $stderr == *'systemd does not run app.service'"'"'s ExecStart= under thpctl run --never (0 of 1 lines are)'* ]] ||
		fail "stderr: $stderr"
	[[ $stderr == *"drop-ins: $ETC/app.service.d/thp.conf $ETC/app.service.d/zz-local.conf"* ]] ||
		fail "stderr: $stderr"
	# a MemoryTHP= of another drop-in wins the same way
	export FAKE_MEMORY_THP=1
	printf '[Service]\nMemoryTHP=inherit\n' >"$ETC/app.service.d/zz-local.conf"
	run -3 --separate-stderr "$THPCTL" unit app never
	[[ $stderr == *'systemd holds MemoryTHP=inherit for app.service, not disable'* ]] || fail "stderr: $stderr"
}

@test "unit NAME advise while THP is off: written, not in effect (exit 3)" {
	put enabled never
	run -3 --separate-stderr "$THPCTL" unit app advise
	assert_equal "$output" ""
	[ -e "$ETC/app.service.d/thp.conf" ] || fail "no drop-in"
	[[ $stderr == *'app.service would get no hugepages'* ]] || fail "stderr: $stderr"
}

@test "unit: usage errors, units it cannot wrap, a failed reload" {
	run -2 "$THPCTL" unit app.socket never
	assert_output --partial "'app.socket' is not a service"
	run -2 "$THPCTL" unit 'a/b' never
	assert_output --partial "invalid unit name 'a/b'"
	run -2 "$THPCTL" unit app sometimes
	assert_output --partial "invalid policy 'sometimes' (expected advise, advised-only, never or default)"
	run -2 "$THPCTL" unit app
	run -0 "$THPCTL" unit app help
	assert_output $'advise\nadvised-only\nnever\ndefault'
	run -1 "$THPCTL" unit nosuch never
	assert_output --partial 'systemctl cat nosuch.service failed'
	printf '[Service]\nType=oneshot\n' >"$LIB/none.service"
	run -1 "$THPCTL" unit none never
	assert_output --partial 'none.service has no ExecStart= to run under thpctl run --never'
	printf '[Service]\nExecStart=@/usr/bin/app app-name\n' >"$LIB/at.service"
	run -1 "$THPCTL" unit at never
	assert_output --partial "names its argv[0] with '@', which a wrapper cannot keep"
	[ ! -e "$ETC/at.service.d/thp.conf" ] || fail "a drop-in was written"
	FAKE_RELOAD_FAILS=1 run -1 "$THPCTL" unit app never
	assert_output --partial "systemctl daemon-reload failed (exit status 1): $ETC/app.service.d/thp.conf is written, but systemd has not read it"
}
