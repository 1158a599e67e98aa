# thpd run on the build machine against a fake THP tree (THP_ROOT): what
# the host suites 50-thpd and 51-thpd-sizes share.

load '/usr/lib/bats/bats-support/load'
load '/usr/lib/bats/bats-assert/load'
load ../bats/hold

: "${BUILD_DIR:=build}"
THPD=$BUILD_DIR/thpd
CLIENT=$BUILD_DIR/helpers/thpd-client

# thpd_sockdir: SOCKDIR, a directory others may traverse (tests connect as
# nobody), and SOCK in it
thpd_sockdir() {
	SOCKDIR=$(mktemp -d /tmp/thpd-host.XXXXXX)
	chmod 755 "$SOCKDIR"
	SOCK=$SOCKDIR/thpd.sock
}

# thpd_end: end the thpd in PID (SIGTERM, then SIGKILL after 5 s: a thpd
# stuck where SIGTERM cannot end it must not hang the suite) and reap it;
# returns its exit status
thpd_end() {
	local rc=0
	if kill -0 "$PID" 2>/dev/null; then
		kill -TERM "$PID"
		for _ in $(seq 50); do
			kill -0 "$PID" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$PID" 2>/dev/null || true
	fi
	wait "$PID" || rc=$?
	PID=
	return "$rc"
}

# As the kernel shows a knob after a store: the fixture's word list with the
# written word in brackets (a plain file keeps the bare word, which thpd's
# next read would refuse). Run between two things thpd does. The tree is
# $T (in the root $R), copied from the fixture $FIX/$GEN.
settle() {
	local f rel w list new
	while IFS= read -r f; do
		rel=${f#"$R"/}
		[ -f "$FIX/$GEN/$rel" ] || continue
		w=$(<"$f")
		[[ $w == *'['* ]] && continue
		list=$(tr -d '[]' <"$FIX/$GEN/$rel")
		[[ " $list " == *" $w "* ]] || fail "thpd wrote '$w' to $rel, which lists only: $list"
		new=" $list "
		new=${new/ $w / [$w] }
		new=${new# }
		echo "${new% }" >"$f"
	done < <(find "$T" -path '*/khugepaged' -prune -o -type f \
		\( -name enabled -o -name shmem_enabled -o -name defrag \) -print)
}

# the current word of a knob (relative to the THP directory)
word() {
	local v
	v=$(<"$T/$1")
	if [[ $v == *'['* ]]; then
		v=${v#*[}
		v=${v%%]*}
	fi
	echo "$v"
}
