/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What an administrator set through the socket, kept in the state directory
 * ($STATE_DIRECTORY, /var/lib/thpd) as one small JSON file:
 *   {"version":1,"enabled":"madvise","defrag":null,"shmem_enabled":"advise",
 *    "sizes":{"64K":{"enabled":"always","shmem_enabled":null}}}
 * (one line; "shmem_enabled", "sizes" and "khugepaged" (
 * {"pages_to_scan":4096,...}) are written only when set, so a state of the
 * pair alone reads as earlier versions wrote it, and an earlier thpd
 * ignores them; a khugepaged name this thpd does not know is skipped)
 * written atomically (temporary file, fsync, rename, fsync of the directory)
 * and read so that only a regular file of ours is used (safe-file.h).
 */
#ifndef THPD_PERSIST_H
#define THPD_PERSIST_H

#include <stdbool.h>

#include "config.h"
#include "thp.h"

#define THPD_STATE_DIR "/var/lib/thpd"
#define THPD_STATE_FILE "state"

struct thpd_persist_size {
	unsigned long kib;
	char enabled[16];	/* hugepages-<N>kB/enabled, "" = not set through thpd */
	char shmem[16];		/* hugepages-<N>kB/shmem_enabled */
};

struct thpd_persist {
	char enabled[16];	/* "" = not set through thpd */
	char defrag[16];
	char shmem[16];		/* top-level shmem_enabled */
	unsigned int n_sizes;	/* ascending by kib, none with both values "" */
	struct thpd_persist_size sizes[THP_SIZES_MAX];
	bool kh_set[THPD_KH_N];	/* khugepaged/<thpd_kh_file(k)> set through thpd */
	uint64_t kh[THPD_KH_N];
};

/* the entry of kib, created (ascending) when create; NULL when absent or full */
struct thpd_persist_size *thpd_persist_size(struct thpd_persist *p, unsigned long kib, bool create);
/* drop entries with nothing set */
void thpd_persist_compact(struct thpd_persist *p);

/* parse the file's text; -EBADMSG when it is not a valid state */
int thpd_persist_parse(const char *text, struct thpd_persist *p);
/* the file's text, malloc'ed; NULL on ENOMEM */
char *thpd_persist_format(const struct thpd_persist *p);
/*
 * load from dir; -ENOENT when nothing was ever persisted, -EBADMSG when it
 * is not a valid state, -EPERM/-ELOOP when something else sits there
 */
int thpd_persist_load(const char *dir, struct thpd_persist *p);
int thpd_persist_save(const char *dir, const struct thpd_persist *p);
static inline bool thpd_persist_empty(const struct thpd_persist *p)
{
	for (int k = 0; k < THPD_KH_N; k++)
		if (p->kh_set[k])
			return false;
	return !p->enabled[0] && !p->defrag[0] && !p->shmem[0] && !p->n_sizes;
}

#endif
