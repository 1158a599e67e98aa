#!/bin/bash
# Install the Debian packages thp-stack needs to build, boot and test.
# Idempotent: when everything is present it only checks (a fraction of a second).
# usage: deps.sh [--quiet]
set -euo pipefail

pkgs=(
	# userspace build
	build-essential pkg-config libsystemd-dev libcap-dev libinih-dev
	libjson-c-dev scdoc
	# host tests: bats and its helpers, jq to validate --json, clang for fuzzing
	bats bats-support bats-assert jq clang libclang-rt-14-dev
	# guest kernels: the two bases of the series
	linux-source-6.1 linux-source-6.12 flex bison bc libelf-dev libssl-dev cpio xz-utils
	# guest image and VM
	debootstrap e2fsprogs qemu-system-x86 qemu-utils
	# make deb: the Debian packages the guest installs, and their checker
	debhelper lintian
	git
)

quiet=0
[ "${1:-}" = --quiet ] && quiet=1

missing=()
for p in "${pkgs[@]}"; do
	status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
	[ "$status" = installed ] || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
	[ $quiet = 1 ] || echo "deps: all ${#pkgs[@]} packages present"
	exit 0
fi

if [ "$(id -u)" != 0 ]; then
	echo "deps: missing packages: ${missing[*]}; run 'make deps' as root" >&2
	exit 1
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
