/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libthp: what thpctl and thpd share — THP sysfs/procfs access, mode names,
 * counter parsing and the thpd socket protocol — and the aligned mappings the
 * test helpers and benchmarks fault in. See docs/abi.md.
 *
 * Every function returns 0 (or a non-negative value) on success and -errno on
 * failure; none of them prints anything.
 */
#ifndef THP_H
#define THP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define THP_SYSFS_DIR "/sys/kernel/mm/transparent_hugepage"
#define THP_SOCKET_PATH "/run/thpd.sock"
#define THP_MSG_MAX 4096

/* per-process policy prctl (patched kernel; see docs/abi.md) */
#ifndef PR_SET_THP_POLICY
#define PR_SET_THP_POLICY 0x54485001
#define PR_GET_THP_POLICY 0x54485002
#define PR_THP_POLICY_DEFAULT 0
#define PR_THP_POLICY_ADVISE 1
#define PR_THP_POLICY_NEVER 2
#endif

/*
 * Modes. A word sets `enabled` only; an RFC number sets enabled and defrag
 * together (docs/abi.md): 0 = madvise/madvise, 1 = always/madvise,
 * 2 = always/always.
 */
enum thp_enabled { THP_NEVER, THP_MADVISE, THP_ALWAYS };

struct thp_mode_req {
	enum thp_enabled enabled;
	const char *defrag;	/* NULL: leave defrag alone */
	int rfc;		/* 0/1/2, or -1 when given as a word */
};

/* "always"/"madvise"/"never"/"0"/"1"/"2" -> req; -EINVAL otherwise */
int thp_mode_parse(const char *s, struct thp_mode_req *req);
const char *thp_enabled_name(enum thp_enabled e);
int thp_enabled_from_name(const char *s);	/* enum value or -EINVAL */
/* "always"/"defer"/"defer+madvise"/"madvise"/"never" -> 0, else -EINVAL */
int thp_defrag_valid(const char *s);
/* the RFC number for a state: "0"/"1"/"2"/"never" */
const char *thp_rfc_mode(enum thp_enabled e, const char *defrag);

/*
 * Root prefix for every sysfs/procfs path libthp touches: "" on a real
 * system; tests point it at a fake tree (THP_ROOT in the environment is read
 * by thp_root_init()).
 */
void thp_set_root(const char *root);
const char *thp_root(void);
void thp_root_init(void);
/* "<root><path>" into buf; -ENAMETOOLONG if it does not fit */
int thp_path(char *buf, size_t size, const char *path);

/* whole small file (sysfs/procfs), NUL-terminated, trailing newline kept */
int thp_read_file(const char *path, char *buf, size_t size);
/* write a value the way `echo value > path` does, checking every error */
int thp_write_file(const char *path, const char *value);

/* does "<root><path>" exist? (feature detection) */
bool thp_exists(const char *path);

/* "always [madvise] never" -> "madvise" (copied into out) */
int thp_parse_bracketed(const char *text, char *out, size_t size);

/* --- system state (lib/thp-state.c) --- */

struct thp_state {
	enum thp_enabled enabled;
	char defrag[16];	/* "always", "defer", "defer+madvise", "madvise", "never" */
	char mode[8];		/* "0"/"1"/"2"/"never": the kernel's mode file, else thp_rfc_mode() */
	bool has_mode_file;	/* patched kernel: <root>THP_SYSFS_DIR/mode exists */
	bool has_thp_policy;	/* patched kernel: <root>/proc/self/thp_policy exists */
	bool has_thp_stat;	/* <root>/proc/self/thp_stat exists */
};

int thp_state_read(struct thp_state *st);
/*
 * Apply a parsed mode request: on a patched kernel a number is written to
 * `enabled` as the number (the kernel sets enabled+defrag); on a stock kernel
 * a number is translated to words (enabled, then defrag). A word writes
 * `enabled` only. Returns 0 or -errno of the first failed write; *failed_path
 * (if non-NULL) is set to the sysfs path that failed (without the root
 * prefix; a static string).
 */
int thp_state_apply(const struct thp_mode_req *req, const char **failed_path);
/* write `defrag` (validated first: -EINVAL for an unknown word) */
int thp_defrag_apply(const char *defrag, const char **failed_path);
/* khugepaged knob under THP_SYSFS_DIR/khugepaged/NAME, e.g. "pages_to_scan" */
int thp_khugepaged_read(const char *name, uint64_t *val);
int thp_khugepaged_write(const char *name, uint64_t val);

/* --- procfs (lib/thp-proc.c) --- */

/*
 * "name value" (vmstat, thp_stat) or "Name: value kB" (meminfo,
 * smaps_rollup) text: find the line whose first word is key (an optional ':'
 * after it), parse its value. -ENOENT if absent, -EBADMSG if not a number.
 */
int thp_kv_get(const char *text, const char *key, uint64_t *val);
/*
 * Free blocks of order >= min_order summed over all zones of
 * <root>/proc/buddyinfo, counted in units of order-min_order blocks (an
 * order-10 block counts 2 for min_order 9). Returns the count or -errno.
 */
long thp_buddyinfo_free_blocks(int min_order);
/* per-process policy: "default"/"advise"/"never" <-> PR_THP_POLICY_* */
int thp_policy_from_name(const char *s);	/* value or -EINVAL */
const char *thp_policy_name(int policy);	/* "unknown" if out of range */
/*
 * <root>/proc/<pid>/thp_policy read/write (patched kernel); -ENOENT on a
 * stock kernel or a gone process. pid <= 0 means "self".
 */
int thp_policy_get(pid_t pid, int *policy);
int thp_policy_set(pid_t pid, int policy);
/*
 * A "Name: N kB" field (e.g. "AnonHugePages") of the VMA containing addr in
 * <root>/proc/<pid>/smaps, in KiB. pid <= 0 means "self". -ENOENT if no VMA
 * contains addr or it has no such field.
 */
int thp_smaps_vma_kib(pid_t pid, unsigned long addr, const char *field, long *kib);

/* --- memory (lib/thp-mmap.c) --- */

/*
 * A private anonymous read-write mapping of size bytes at an align-aligned
 * address (align: a power of two, at least a page), with flags added to
 * MAP_PRIVATE | MAP_ANONYMOUS (e.g. MAP_NORESERVE). The slack mapped to
 * align it is unmapped again, so the region is a VMA of its own; munmap(addr,
 * size) releases it. -EINVAL for a size of 0 or a bad align.
 */
int thp_mmap_aligned(size_t size, size_t align, int flags, void **addr);

#endif
