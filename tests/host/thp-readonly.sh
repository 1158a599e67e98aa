#!/bin/sh
# thp-readonly.sh COMMAND [ARG...]: run COMMAND (make check-host's host
# tests) with this machine's THP sysfs directory read-only to it. Host tests
# work on fake trees (THP_ROOT); one that reaches the real directory by
# mistake must fail there, never change the machine's THP settings.
#
# As root: a private mount namespace (unshare -m) in which
# /sys/kernel/mm/transparent_hugepage is bound read-only onto itself, so
# every write below it (enabled, defrag, khugepaged/, hugepages-<N>kB/)
# fails with EROFS, root or not; nothing of it is seen outside. As another
# user the kernel refuses the writes anyway (the files are root's, 0644).
# THP_HOST_GUARD tells the tests what holds: ro, unprivileged or absent (no
# such directory); where a namespace cannot be made (a container without
# CAP_SYS_ADMIN) it is left unset, said on stderr, and the tests proving the
# guard skip saying so.
set -eu

THP=/sys/kernel/mm/transparent_hugepage

if [ "${THP_HOST_GUARD_INNER-}" = 1 ]; then
	# inside the new namespace: make the bind read-only, then run
	unset THP_HOST_GUARD_INNER
	if mount --bind "$THP" "$THP" && mount -o remount,bind,ro "$THP"; then
		export THP_HOST_GUARD=ro
	else
		echo "thp-readonly: could not bind $THP read-only in a new mount namespace:" \
			"the host tests run WITHOUT that guard" >&2
	fi
	exec "$@"
fi

unset THP_HOST_GUARD
if [ ! -d "$THP" ]; then
	THP_HOST_GUARD=absent exec "$@"
fi
if [ "$(id -u)" != 0 ]; then
	THP_HOST_GUARD=unprivileged exec "$@"
fi
if why=$(unshare -m --propagation private true 2>&1); then
	THP_HOST_GUARD_INNER=1 exec unshare -m --propagation private "$0" "$@"
fi
echo "thp-readonly: cannot make a mount namespace here (unshare -m: ${why:-failed}):" \
	"the host tests run WITHOUT $THP read-only, as root" >&2
exec "$@"
