// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer target: the other text thpd reads from outside — its persisted
 * state file (daemon/persist.c) and /proc/PID/cgroup (daemon/rules.c);
 * /proc/cmdline has a target of its own (fuzz-cmdline.c).
 *
 * Properties: a state file parses to valid words or to -EBADMSG with an
 * empty result, and what thpd writes (thpd_persist_format) parses back to
 * the same state (sizes and shmem_enabled included); the cgroup parser
 * returns 0 with a NUL-terminated value that occurs in the input, or a
 * documented error.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "persist.h"
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
	char *text, cg[256];
	int r;

	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';

	check_persist(text);

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
