# shellcheck shell=bash
# Shared by the kernel scripts in tests/vm (sourced).

# patch_subject FILE: the Subject of one mailsplit patch, unfolded, without
# the "[PATCH n/m] " prefix
patch_subject() {
	awk '/^Subject:/ { s = $0; while ((getline l) > 0 && l ~ /^[ \t]/) s = s l; print s; exit }' "$1" |
		sed 's/^Subject: \(\[PATCH[^]]*\] \)\?//; s/[[:space:]]\+/ /g'
}
