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
 * counts as a defrag setting of the same rank. The same again for
 * shmem_enabled (transparent_hugepage_shmem=, the persisted "shmem_enabled",
 * Shmem=) and for each size's enabled (thp_anon=) and shmem_enabled
 * (thp_shmem=, 6.14+), size by size: a size the command line does not name
 * takes the persisted value, then the one of its [Size N]. Each khugepaged
 * setting: the persisted value, then the configuration's Khugepaged*=.
 */
#ifndef THPD_PRECEDENCE_H
#define THPD_PRECEDENCE_H

#include <stddef.h>

#include "config.h"
#include "persist.h"

/* sizes thpd can name: the powers of two from 8K (order 1) to 1G */
#define THPD_TARGET_SIZES 18

/* one size's own values thpd keeps the host at */
struct thpd_size_target {
	unsigned long kib;
	char enabled[16];	/* "" = leave */
	const char *enabled_src;
	char shmem[16];		/* "" = leave */
	const char *shmem_src;
	const struct thpd_size_config *cfg;	/* its [Size N], NULL when none */
};

/* the settings thpd keeps the host at while nothing is wrong */
struct thpd_target {
	char mode[16];		/* thp_mode_parse() input, "" = leave */
	const char *mode_src;	/* "kernel command line", "persisted state", "configuration" */
	char defrag[16];	/* "" = leave */
	const char *defrag_src;
	char shmem[16];		/* top-level shmem_enabled, "" = leave */
	const char *shmem_src;
	unsigned int n_sizes;	/* ascending; only sizes with something to set */
	struct thpd_size_target sizes[THPD_TARGET_SIZES];
	bool kh_set[THPD_KH_N];	/* khugepaged/<thpd_kh_file(k)>: false = leave */
	uint64_t kh_val[THPD_KH_N];
	const char *kh_src[THPD_KH_N];
};

/* the boot-time THP parameters of /proc/cmdline, "" where absent */
struct thpd_cmdline {
	char thp[16];		/* transparent_hugepage= */
	char shmem[16];		/* transparent_hugepage_shmem= */
	char anon[256];		/* thp_anon=, every valid one, ';'-joined in order */
	char shmem_sizes[256];	/* thp_shmem=, the same */
	bool anon_bad, shmem_sizes_bad;	/* one was malformed (or too long): ignored */
};

/* the last transparent_hugepage= of /proc/cmdline text into out; -ENOENT */
int thpd_cmdline_thp(const char *cmdline, char *out, size_t size);
/* the last "key=" of /proc/cmdline text (key without '=') into out; -ENOENT */
int thpd_cmdline_param(const char *cmdline, const char *key, char *out, size_t size);
/*
 * Check a thp_anon= (knob THP_KNOB_SIZE_ENABLED) or thp_shmem=
 * (THP_KNOB_SIZE_SHMEM_ENABLED) value as the kernel parses it:
 * "SIZES:WORD;SIZES:WORD", SIZES a ','-list of sizes (16K, 2M, or bytes) and
 * ranges (16K-64K: every power of two between). 0, or -EINVAL: the kernel
 * ignores the whole parameter.
 */
int thpd_cmdline_sizes_valid(const char *spec, enum thp_knob_id knob);
/* the word a spec gives kib (the last part that names it) into out; -ENOENT, -EINVAL */
int thpd_cmdline_size_word(const char *spec, enum thp_knob_id knob, unsigned long kib, char *out,
			   size_t size);
/* every THP parameter of /proc/cmdline text */
void thpd_cmdline_parse(const char *cmdline, struct thpd_cmdline *cl);

/* fill t by the precedence above; cmdline_thp may be NULL or "" */
int thpd_target_compute(const struct thpd_config *cfg, const struct thpd_persist *persist,
			const char *cmdline_thp, struct thpd_target *t);
/*
 * then shmem_enabled and the sizes (cl may be NULL): by the same precedence,
 * the command line only when HonorKernelCmdline=yes
 */
void thpd_target_compute_sizes(const struct thpd_config *cfg, const struct thpd_persist *persist,
			       const struct thpd_cmdline *cl, struct thpd_target *t);

#endif
