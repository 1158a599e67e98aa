# shellcheck shell=bash
# Shared by the kernel scripts in tests/vm (sourced).

# patch_subject FILE: the Subject of one mailsplit patch, unfolded, without
# the "[PATCH n/m] " prefix
patch_subject() {
	awk '/^Subject:/ { s = $0; while ((getline l) > 0 && l ~ /^[ \t]/) s = s l; print s; exit }' "$1" |
		sed 's/^Subject: \(\[PATCH[^]]*\] \)\?//; s/[[:space:]]\+/ /g'
}

# timed_make LOG MAKE-ARGS...: make -s with its output in LOG (the last lines
# on failure). Says what the build cost, honestly on a shared machine: wall
# time, the CPU time of the build's processes, and the load average sampled
# every 10 s while it ran (other work on the machine shows there).
timed_make() {
	local log=$1 rc=0 start end t0 t1 loadf sampler me=$BASHPID
	shift
	loadf=$(mktemp)
	(while :; do cut -d' ' -f1 /proc/loadavg >>"$loadf"; sleep 10; done) &
	sampler=$!
	read -r t0 < <(awk '{ print $14 + $15 + $16 + $17 }' /proc/$me/stat)
	start=$(date +%s)
	make -s "$@" >"$log" 2>&1 || rc=$?
	end=$(date +%s)
	kill "$sampler" 2>/dev/null
	wait "$sampler" 2>/dev/null || true
	read -r t1 < <(awk '{ print $14 + $15 + $16 + $17 }' /proc/$me/stat)
	if [ $rc != 0 ]; then
		tail -40 "$log" >&2
	else
		echo "build: $((end - start)) s wall, $(((t1 - t0) / $(getconf CLK_TCK))) s CPU (user+sys)," \
			"load average $(sort -n "$loadf" | awk '{ v[NR] = $1; s += $1 } END { printf "%.1f-%.1f, mean %.1f", v[1], v[NR], s / NR }')" >&2
	fi
	rm -f "$loadf"
	return $rc
}

# The bases a series exists for, oldest first; kernel/<base>/thp.patch each.
THP_BASES="6.1 6.12"

# split_series MBOX DIR: one file per patch of the series in DIR (git
# mailsplit), 0001 the first patch, without the cover letter: a mail with no
# diff ("[PATCH v3 0/N]", from format-patch --cover-letter) is dropped.
# Prints the number of patches.
split_series() {
	local p n=0
	mkdir -p "$2"
	git mailsplit -o"$2" "$1" >/dev/null
	for p in "$2"/*; do
		[ -e "$p" ] || continue
		if grep -q '^diff --git ' "$p"; then
			n=$((n + 1))
			[ "$p" = "$2/$(printf %04d $n)" ] || mv "$p" "$2/$(printf %04d $n)"
		else
			rm -f "$p"
		fi
	done
	echo "$n"
}

# series_code_hash MBOX: the sha256 of what a series builds, its diffs only.
# Subjects, commit messages and the cover letter do not change a kernel, so
# rewording them keeps the cached build; any line from a "diff --git" to the
# end of that patch (the code, the kselftests' sources) is hashed.
series_code_hash() {
	awk '/^From [0-9a-f]+ / { d = 0 } /^diff --git / { d = 1 } d' "$1" | sha256sum | cut -d' ' -f1
}
