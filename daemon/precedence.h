/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What thpd wants the host to hold, and where each value came from: a pure
 * function of its inputs (no I/O, never what the kernel holds now; tests
 * feed it fixtures). The inputs are the kernel command line (as the kernel
 * read it, lib/thp-cmdline.c), what an administrator set (persist.h), the
 * configuration (config.h) and the host's values from before thpd
 * (originals.h). A step-down is an overlay on top of the result
 * (machine.h), never an input to it.
 *
 * Precedence of every value (documented in thpd(8)), highest first:
 *   1. the kernel command line, when HonorKernelCmdline=yes (the default):
 *      transparent_hugepage= for enabled (a number for defrag too),
 *      transparent_hugepage_shmem=, thp_anon= and thp_shmem= for the
 *      sizes they name;
 *   2. what an administrator set through the socket (persisted state):
 *      enable, defrag, shmem and the khugepaged command's knobs;
 *   3. the configuration: Mode= (a number counts for defrag too, below
 *      Defrag=), Defrag=, Shmem=, [Size N], the Khugepaged*= knobs;
 *   4. the host's own value from before thpd started.
 */
#ifndef THPD_PRECEDENCE_H
#define THPD_PRECEDENCE_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "originals.h"
#include "persist.h"
#include "thp.h"

/* sizes thpd can name: the powers of two from 8K (order 1) to 1G */
#define THPD_TARGET_SIZES 18

/* where a value came from, for messages, the journal and status */
#define THPD_SRC_CMDLINE "kernel command line"
#define THPD_SRC_PERSIST "persisted state"
#define THPD_SRC_CONFIG "configuration"
#define THPD_SRC_ORIGINAL "host's original value"
#define THPD_SRC_STEP_DOWN "step-down"

/* one size's own values */
struct thpd_size_target {
	unsigned long kib;
	char enabled[16];	/* hugepages-<N>kB/enabled, "" = none known: left alone */
	const char *enabled_src;
	char shmem[16];		/* hugepages-<N>kB/shmem_enabled */
	const char *shmem_src;
	const struct thpd_size_config *cfg;	/* its [Size N], NULL when none */
};

/*
 * Values of the THP controls: what thpd wants (the target), what the host
 * should hold (the target with a step-down's overlay), or what a stop puts
 * back (the originals). "" = none known: left alone.
 */
struct thpd_target {
	char enabled[16];
	const char *enabled_src;
	char defrag[16];
	const char *defrag_src;
	int rfc;		/* 0/1/2: enabled and defrag are this number's pair, written as one; -1 */
	char shmem[16];		/* top-level shmem_enabled */
	const char *shmem_src;
	unsigned int n_sizes;	/* ascending; only sizes with something to hold */
	struct thpd_size_target sizes[THPD_TARGET_SIZES];
	bool kh_set[THPD_KH_N];	/* khugepaged knobs */
	uint64_t kh[THPD_KH_N];
	const char *kh_src[THPD_KH_N];
};

struct thpd_inputs {
	const struct thpd_config *cfg;
	const struct thpd_persist *persist;
	const struct thp_cmdline *cmdline;	/* NULL: none */
	const struct thpd_originals *originals;
};

/* the target: every value by the precedence above */
void thpd_target_compute(const struct thpd_inputs *in, struct thpd_target *t);
/* what a stop with RestoreOnStop=yes puts back: the originals, every one */
void thpd_target_originals(const struct thpd_originals *o, struct thpd_target *t);
/* the size entry of kib, NULL when t has none */
const struct thpd_size_target *thpd_target_size(const struct thpd_target *t, unsigned long kib);

#endif
