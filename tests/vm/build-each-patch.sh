#!/bin/bash
# Bisectability: build bzImage after each patch of kernel/sysfs-thp.patch in
# turn (same config as the guest kernel, incremental object directory).
# Slow: a full build, then one rebuild per patch (49 min for 4 patches on 2
# cores, partly shared), so `make check-series` is not part of `make check`.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/vm/lib.sh
. "$top/tests/vm/lib.sh"
cache=${THP_CACHE:-/var/cache/thp-stack}
work=$cache/series
rm -rf "$work"
mkdir -p "$work/split"
tar -C "$work" -xf /usr/src/linux-source-6.1.tar.xz
src=$work/linux-source-6.1
n=$(git mailsplit -o"$work/split" "$top/kernel/sysfs-thp.patch")
"$top/tests/vm/kconfig.sh" "$src" "$work/obj" "$top/kernel/thp-stack.config"
rc=0
for p in "$work"/split/*; do
	subj=$(patch_subject "$p")
	(cd "$src" && git apply --whitespace=error-all "$p")
	start=$(date +%s)
	if make -s -C "$src" O="$work/obj" -j"$(nproc)" bzImage >"$p.log" 2>&1; then
		echo "ok   $(basename "$p")/$n $subj ($(($(date +%s) - start)) s)"
	else
		echo "FAIL $(basename "$p")/$n $subj (log: $p.log)"
		tail -20 "$p.log"
		rc=1
		break
	fi
done
exit $rc
