/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The host's THP values from before thpd changed anything, so that a stop
 * puts them back. They are kept in $RUNTIME_DIRECTORY/saved (a tmpfs, gone
 * at reboot) so that a restart after a crash restores the host's values,
 * not the ones the crashed instance had applied:
 *   enabled madvise
 *   defrag madvise
 *   shmem_enabled never
 *   hugepages-64kB/enabled never
 *   hugepages-64kB/shmem_enabled inherit
 *   pages_to_scan 4096
 * one "name value" per line, the name a file under THP_SYSFS_DIR (the
 * khugepaged knobs without their directory). Not to be confused with persist.h, which keeps
 * what an administrator asked for across reboots. The originals are one
 * input of thpd's target (precedence.h) and what a stop puts back.
 */
#ifndef THPD_ORIGINALS_H
#define THPD_ORIGINALS_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "thp.h"

#define THPD_ORIGINALS_FILE "saved"

struct thpd_original_size {
	unsigned long kib;
	bool have_enabled, have_shmem;
	char enabled[16];
	char shmem[16];
};

struct thpd_originals {
	bool have_enabled, have_defrag, have_shmem;
	char enabled[16];
	char defrag[16];
	char shmem[16];
	unsigned int n_sizes;	/* ascending by kib */
	struct thpd_original_size sizes[THP_SIZES_MAX];
	bool have_kh[THPD_KH_N];
	uint64_t kh[THPD_KH_N];
};

/* pure: parse / format the file's text (format: malloc'ed, NULL on ENOMEM) */
int thpd_originals_parse(const char *text, struct thpd_originals *o);
char *thpd_originals_format(const struct thpd_originals *o);

/*
 * what the kernel has now: top-level enabled/defrag/shmem_enabled, every
 * size's enabled/shmem_enabled (those the kernel has) and the khugepaged
 * knobs
 */
void thpd_originals_read_kernel(struct thpd_originals *o);
/* dir/name (THPD_ORIGINALS_FILE); -ENOENT when there is none */
int thpd_originals_load(const char *dir, const char *name, struct thpd_originals *o);
int thpd_originals_store(const char *dir, const char *name, const struct thpd_originals *o);
/* a clean stop: the next start reads the kernel afresh */
void thpd_originals_forget(const char *dir, const char *name);

#endif
