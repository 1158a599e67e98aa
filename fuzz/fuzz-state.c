// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer target: the other text thpd reads from outside — its persisted
 * state file (daemon/persist.c), /proc/cmdline (transparent_hugepage=,
 * transparent_hugepage_shmem=, thp_anon=, thp_shmem=, in
 * daemon/precedence.c) and /proc/PID/cgroup (daemon/rules.c).
 *
 * Properties: a state file parses to valid words or to -EBADMSG with an
 * empty result, and what thpd writes (thpd_persist_format) parses back to
 * the same state (sizes and shmem_enabled included); the cmdline and
 * cgroup parsers return 0 with a NUL-terminated value that occurs in the
 * input, or a documented error; what thp_anon=/thp_shmem= give a size is a
 * word of that knob.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "persist.h"
#include "precedence.h"
#include "rules.h"
#include "thp.h"

static void check_persist(const char *text)
{
	struct thpd_persist p, again;
	char *fmt;
	int r;

	memset(&p, 0x5a, sizeof(p));
	r = thpd_persist_parse(text, &p);
	if (r != 0) {
		if (r != -EBADMSG || !thpd_persist_empty(&p))
			abort();
		return;
	}
	if (!memchr(p.enabled, '\0', sizeof(p.enabled)) || !memchr(p.defrag, '\0', sizeof(p.defrag)))
		abort();
	if (p.enabled[0] && thp_enabled_from_name(p.enabled) < 0)
		abort();
	if (p.defrag[0] && thp_defrag_valid(p.defrag) < 0)
		abort();
	fmt = thpd_persist_format(&p);
	if (!fmt)
		return;
	if (thpd_persist_parse(fmt, &again) != 0 || memcmp(&again, &p, sizeof(p)) != 0)
		abort();
	free(fmt);
}

static void check_cmdline(const char *text)
{
	struct thpd_cmdline cl;
	char w[16];

	thpd_cmdline_parse(text, &cl);
	if (!memchr(cl.anon, '\0', sizeof(cl.anon)) || !memchr(cl.shmem_sizes, '\0', sizeof(cl.shmem_sizes)))
		abort();
	if (cl.shmem[0] && !thp_knob_word_known(THP_KNOB_SHMEM_ENABLED, cl.shmem))
		abort();
	for (unsigned long kib = 8; kib <= 1024UL * 1024; kib <<= 1) {
		if (cl.anon[0] && thpd_cmdline_size_word(cl.anon, THP_KNOB_SIZE_ENABLED, kib, w, sizeof(w)) == 0 &&
		    !thp_knob_word_known(THP_KNOB_SIZE_ENABLED, w))
			abort();
		if (cl.shmem_sizes[0] &&
		    thpd_cmdline_size_word(cl.shmem_sizes, THP_KNOB_SIZE_SHMEM_ENABLED, kib, w, sizeof(w)) == 0 &&
		    !thp_knob_word_known(THP_KNOB_SIZE_SHMEM_ENABLED, w))
			abort();
	}
	/* the whole input as one value */
	(void)thpd_cmdline_sizes_valid(text, THP_KNOB_SIZE_ENABLED);
}

static void check_value(const char *text, int r, const char *out, size_t size)
{
	if (r != 0)
		return;
	if (!memchr(out, '\0', size) || !strstr(text, out))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text, out[16], cg[256];
	int r;

	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';

	check_persist(text);

	memset(out, 'Z', sizeof(out));
	r = thpd_cmdline_thp(text, out, sizeof(out));
	if (r != 0 && r != -ENOENT)
		abort();
	check_value(text, r, out, sizeof(out));
	check_cmdline(text);

	memset(cg, 'Z', sizeof(cg));
	r = thpd_cgroup_parse(text, cg, sizeof(cg));
	if (r != 0 && r != -ENOENT && r != -ENAMETOOLONG)
		abort();
	check_value(text, r, cg, sizeof(cg));
	/* as a Cgroup= glob too; few '*' (glibc fnmatch is exponential in them) */
	if (r == 0 && strchr(cg, '*') == strrchr(cg, '*'))
		(void)thpd_cgroup_match(cg, "/system.slice/app.service");
	free(text);
	return 0;
}
