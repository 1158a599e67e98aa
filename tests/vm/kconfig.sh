#!/bin/bash
# Configure a kernel tree for the thp-stack guest: `make allnoconfig` with
# the fragments as its starting point (KCONFIG_ALLCONFIG), so the kernel has
# what kernel/guest.config, kernel/thp-stack.config and any extra fragment
# (kernel/debug.config) ask for, what those need, and nothing else. Then it
# checks that every option the fragments ask for ended up set: an option
# whose dependencies are missing (or that a base does not have) fails here,
# not as a guest that does not boot.
#
# usage: kconfig.sh SRCDIR OBJDIR FRAGMENT...
set -euo pipefail

src=$1 obj=$2
shift 2
mkdir -p "$obj"
# later fragments override earlier ones (debug.config after the others)
cat "$@" >"$obj/thp-fragments.config"
make -s -C "$src" O="$obj" ARCH=x86_64 KCONFIG_ALLCONFIG="$obj/thp-fragments.config" \
	allnoconfig >"$obj/kconfig.log" 2>&1 || { cat "$obj/kconfig.log" >&2; exit 1; }

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
		# a later fragment may override an earlier one: check the last word
		last=$(grep -E "^(# )?$sym[= ]" "$obj/thp-fragments.config" | tail -1)
		[ "$last" = "$want" ] || continue
		got=$(grep -E "^(# )?$sym[= ]" "$obj/.config" || echo "# $sym is not set")
		if [ "$got" != "$want" ]; then
			echo "kconfig: ${frag##*/} asks for '$want' but the config has '$got'" >&2
			rc=1
		fi
	done <"$frag"
done
exit $rc
