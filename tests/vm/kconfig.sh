#!/bin/bash
# Configure a kernel tree for the thp-stack guest:
#   x86_64 defconfig + kvm_guest.config + kernel/thp-stack.config [+ extra fragments]
# and check that every option the fragments ask for ended up set.
#
# usage: kconfig.sh SRCDIR OBJDIR FRAGMENT...
set -euo pipefail

src=$1 obj=$2
shift 2
mkdir -p "$obj"
make -s -C "$src" O="$obj" ARCH=x86_64 defconfig >/dev/null
make -s -C "$src" O="$obj" ARCH=x86_64 kvm_guest.config >/dev/null
"$src/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" "$@" >/dev/null
make -s -C "$src" O="$obj" ARCH=x86_64 olddefconfig >/dev/null

rc=0
for frag in "$@"; do
	while IFS= read -r line; do
		case $line in
		CONFIG_*=*) want=$line ;;
		"# CONFIG_"*" is not set") want=$line ;;
		*) continue ;;
		esac
		sym=${want#\# }
		sym=${sym%%[= ]*}
		got=$(grep -E "^(# )?$sym[= ]" "$obj/.config" || echo "# $sym is not set")
		if [ "$got" != "$want" ]; then
			echo "kconfig: $frag asks for '$want' but the config has '$got'" >&2
			rc=1
		fi
	done <"$frag"
done
exit $rc
