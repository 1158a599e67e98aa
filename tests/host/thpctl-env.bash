# The environment of every host test of thpctl: the binary under test, a
# fake root (THP_ROOT) per test, and never a real thpd or a caller's
# GLIBC_TUNABLES. `load thpctl-env`, then call thpctl_env in setup.
# shellcheck shell=bash

thpctl_env() {
	THPCTL=${BUILD_DIR:?BUILD_DIR must point at the build directory}/thpctl
	[ -x "$THPCTL" ] || fail "no $THPCTL"
	export THP_ROOT=$BATS_TEST_TMPDIR/root
	# never reach a real thpd from host tests
	export THPD_SOCKET=$BATS_TEST_TMPDIR/no-thpd.sock
	unset GLIBC_TUNABLES
}
