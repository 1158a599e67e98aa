#!/bin/bash
# Bisectability: build bzImage after each patch of kernel/<base>/thp.patch in
# turn (its cover letter skipped), with the guest kernel's config, in one
# incremental object directory. BASE: THP_BASE or the argument (default 6.1).
# Slow: a full build, then one rebuild per patch, so `make check-series` is
# not part of `make check`.
# usage: build-each-patch.sh [BASE]
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/vm/lib.sh
. "$top/tests/vm/lib.sh"
cache=${THP_CACHE:-/var/cache/thp-stack}
base=${1:-${THP_BASE:-6.1}}
case " $THP_BASES " in
*" $base "*) ;;
*) echo "build-each-patch: base '$base': the bases are $THP_BASES" >&2; exit 2 ;;
esac
series=$top/kernel/$base/thp.patch
[ -s "$series" ] || { echo "build-each-patch: kernel/$base/thp.patch is absent or empty: nothing to build" >&2; exit 1; }
work=$cache/series-$base
rm -rf "$work"
mkdir -p "$work"
tar -C "$work" -xf "/usr/src/linux-source-$base.tar.xz"
src=$work/linux-source-$base
n=$(split_series "$series" "$work/split")
"$top/tests/vm/kconfig.sh" "$src" "$work/obj" "$top/kernel/guest.config" "$top/kernel/thp-stack.config"
rc=0
for p in "$work"/split/*; do
	subj=$(patch_subject "$p")
	(cd "$src" && git apply --whitespace=error-all "$p")
	if timed_make "$p.log" -C "$src" O="$work/obj" -j"$(nproc)" bzImage 2>"$p.time"; then
		echo "ok   $(basename "$p")/$n $subj ($(sed 's/^build: //' "$p.time"))"
	else
		echo "FAIL $(basename "$p")/$n $subj (log: $p.log)"
		cat "$p.time"
		rc=1
		break
	fi
done
exit $rc
