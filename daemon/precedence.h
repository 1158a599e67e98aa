/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Which value thpd keeps the host at, and where it came from: pure
 * functions of the configuration, the persisted state and the kernel
 * command line (no I/O; tests feed them fixtures).
 *
 * Precedence of the `enabled` setting (documented in thpd(8)):
 *   1. transparent_hugepage= on the kernel command line, when
 *      HonorKernelCmdline=yes (the default): the boot-time override wins;
 *   2. what an administrator set through the socket (persisted state);
 *   3. [Global] Mode= of the configuration;
 *   4. otherwise thpd leaves it alone.
 * The same for defrag, where a numeric Mode (which sets defrag as well)
 * counts as a defrag setting of the same rank.
 */
#ifndef THPD_PRECEDENCE_H
#define THPD_PRECEDENCE_H

#include <stddef.h>

#include "config.h"
#include "persist.h"

/* the settings thpd keeps the host at while nothing is wrong */
struct thpd_target {
	char mode[16];		/* thp_mode_parse() input, "" = leave */
	const char *mode_src;	/* "kernel command line", "persisted state", "configuration" */
	char defrag[16];	/* "" = leave */
	const char *defrag_src;
};

/* the last transparent_hugepage= of /proc/cmdline text into out; -ENOENT */
int thpd_cmdline_thp(const char *cmdline, char *out, size_t size);
/* fill t by the precedence above; cmdline_thp may be NULL or "" */
int thpd_target_compute(const struct thpd_config *cfg, const struct thpd_persist *persist,
			const char *cmdline_thp, struct thpd_target *t);

#endif
