// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer target: the collapse engine's reading of /proc/PID/smaps
 * (thp_smaps_line, thp_smaps_end) and what it decides from it
 * (thp_collapse_vma_check under both scopes, lib/thp-collapse.c), and the
 * per-range check of pagemap entries (thp_pagemap_count,
 * thp_collapse_range_check).
 *
 * The input is smaps text, fed a line at a time and without a NUL after
 * each line (as getline() hands it over, and past the end the bytes are
 * not the line's). Properties: a VMA comes out only at a header or the
 * end, at most one per line; its addresses are ordered, perms four
 * characters, name NUL-terminated within its field (cut and said so when
 * longer), THPeligible -1, 0 or 1; a span lies within its VMA, PMD-aligned,
 * non-empty, with no more small bytes than it holds; nothing is eligible
 * for thpd that the kernel's THPeligible did not say, nor under
 * MADV_NOHUGEPAGE or in a process that disabled THP. The last 4096 bytes
 * of the input, read as 512 pagemap entries, give counts that add up and a
 * range check that agrees with them.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "thp-collapse.h"

#define PMD (2UL << 20)

static void check_vma(const struct thp_smaps_vma *v)
{
	struct thp_collapse_span s;
	enum thp_skip k, a;

	if (v->start > v->end || strlen(v->perms) != 4 || !memchr(v->name, '\0', sizeof(v->name)) ||
	    (v->name_cut && strlen(v->name) != sizeof(v->name) - 1) || v->thp_eligible < -1 ||
	    v->thp_eligible > 1)
		abort();
	for (int scope = 0; scope < 2; scope++) {
		for (int disabled = 0; disabled < 2; disabled++) {
			memset(&s, 0xa5, sizeof(s));
			k = thp_collapse_vma_check(v, (enum thp_collapse_scope)scope, disabled, PMD, &s);
			if (k >= THP_SKIP_N || !strcmp(thp_skip_name(k), "?"))
				abort();
			if (k != THP_SKIP_NONE)
				continue;
			if (disabled || v->nohugepage || s.start < v->start || s.end > v->end ||
			    s.start >= s.end || (s.start | s.end) & (PMD - 1) || !s.small_bytes ||
			    s.small_bytes > s.end - s.start || s.huge_kib != v->anon_huge_kib ||
			    (scope == THP_SCOPE_KERNEL && v->thp_eligible != 1))
				abort();
		}
	}
	/* the asked scope takes at least what the kernel's takes */
	k = thp_collapse_vma_check(v, THP_SCOPE_KERNEL, false, PMD, &s);
	a = thp_collapse_vma_check(v, THP_SCOPE_ASKED, false, PMD, &s);
	if (k == THP_SKIP_NONE && a != THP_SKIP_NONE)
		abort();
}

static void check_range(const uint8_t *data, size_t size)
{
	static const struct thp_collapse_limits none = THP_COLLAPSE_NO_LIMITS;
	uint64_t e[512];
	struct thp_range_count c;
	struct thp_collapse_limits l;
	enum thp_skip k;

	if (size < sizeof(e) + 3)
		return;
	memcpy(e, data + size - sizeof(e), sizeof(e));
	thp_pagemap_count(e, 512, &c);
	if (c.present + c.swapped > 512 || c.shared > c.present)
		abort();
	l = (struct thp_collapse_limits){ data[0] * 2L - 1, data[1] * 2L - 1, data[2] * 2L - 1 };
	k = thp_collapse_range_check(&c, 512, &l);
	if ((k == THP_SKIP_EMPTY) != (c.present + c.swapped == 0))
		abort();
	if (k == THP_SKIP_NONE &&
	    ((l.max_ptes_none >= 0 && 512 - c.present - c.swapped > (unsigned long)l.max_ptes_none) ||
	     (l.max_ptes_swap >= 0 && c.swapped > (unsigned long)l.max_ptes_swap) ||
	     (l.max_ptes_shared >= 0 && c.shared > (unsigned long)l.max_ptes_shared)))
		abort();
	k = thp_collapse_range_check(&c, 512, &none);
	if (k != THP_SKIP_NONE && k != THP_SKIP_EMPTY)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct thp_smaps_parser p;
	struct thp_smaps_vma v;
	const char *text = (const char *)data, *end = text + size, *line = text;
	size_t lines = 0, vmas = 0;
	char *copy;

	thp_smaps_init(&p);
	while (line < end) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		size_t len = nl ? (size_t)(nl - line + 1) : (size_t)(end - line);

		/* a copy of exactly the line: reading past it is caught by ASan */
		copy = malloc(len ? len : 1);
		if (!copy)
			return 0;
		memcpy(copy, line, len);
		lines++;
		if (thp_smaps_line(&p, copy, len, &v)) {
			vmas++;
			check_vma(&v);
		}
		free(copy);
		line += len;
	}
	if (thp_smaps_end(&p, &v)) {
		vmas++;
		check_vma(&v);
	}
	if (vmas > lines || thp_smaps_end(&p, &v))
		abort();
	check_range(data, size);
	return 0;
}
