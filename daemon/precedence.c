// SPDX-License-Identifier: GPL-2.0-or-later
/* Precedence of the kernel command line, persisted state and configuration. See precedence.h. */
#include "precedence.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "thp.h"
int thpd_cmdline_thp(const char *cmdline, char *out, size_t size)
{
	static const char key[] = "transparent_hugepage=";
	const char *p = cmdline;
	int found = -ENOENT;

	/* the last one wins, as for the kernel's own __setup() parsing */
	while (*p) {
		size_t len;

		while (*p == ' ' || *p == '\n' || *p == '\t')
			p++;
		len = strcspn(p, " \t\n");
		if (len > sizeof(key) - 1 && strncmp(p, key, sizeof(key) - 1) == 0) {
			size_t vlen = len - (sizeof(key) - 1);

			if (vlen < size) {
				memcpy(out, p + sizeof(key) - 1, vlen);
				out[vlen] = '\0';
				found = 0;
			}
		}
		p += len;
	}
	return found;
}

int thpd_target_compute(const struct thpd_config *cfg, const struct thpd_persist *persist,
			const char *cmdline_thp, struct thpd_target *t)
{
	struct thp_mode_req req;
	bool cmdline = cfg->honor_kernel_cmdline && cmdline_thp && *cmdline_thp &&
		       thp_mode_parse(cmdline_thp, &req) == 0;

	memset(t, 0, sizeof(*t));
	if (cmdline) {
		snprintf(t->mode, sizeof(t->mode), "%s", cmdline_thp);
		t->mode_src = "kernel command line";
		if (req.rfc >= 0) {
			/* the number already chose defrag at boot */
			return 0;
		}
	} else if (persist->enabled[0]) {
		snprintf(t->mode, sizeof(t->mode), "%s", persist->enabled);
		t->mode_src = "persisted state";
	} else if (cfg->mode[0]) {
		snprintf(t->mode, sizeof(t->mode), "%s", cfg->mode);
		t->mode_src = "configuration";
	}
	if (persist->defrag[0]) {
		snprintf(t->defrag, sizeof(t->defrag), "%s", persist->defrag);
		t->defrag_src = "persisted state";
	} else if (cfg->defrag[0]) {
		snprintf(t->defrag, sizeof(t->defrag), "%s", cfg->defrag);
		t->defrag_src = "configuration";
	}
	return 0;
}
