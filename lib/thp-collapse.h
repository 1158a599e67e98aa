/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The collapse engine (lib/thp-collapse.c), shared by `thpctl policy
 * --collapse` and thpd's collapse (daemon/collapse.c): read a process's
 * /proc/PID/smaps, decide which of its VMAs may be collapsed into
 * PMD-sized hugepages and how many small-page bytes that would turn huge,
 * rank processes by that gain, and collapse them a few contiguous PMD
 * ranges at a time with process_madvise(pidfd, MADV_COLLAPSE) (Linux 6.1).
 *
 * MADV_COLLAPSE ignores the THP sysfs settings (enabled, the per-size
 * values, khugepaged's max_ptes_*): it collapses whatever it is asked to.
 * So the engine asks only where a scope allows:
 *
 *   THP_SCOPE_KERNEL  what the kernel itself would make huge now: the
 *                     VMA's THPeligible field in smaps, the kernel's own
 *                     answer for the PMD size under the mode, the size's
 *                     own value and the process's policy (6.1:
 *                     hugepage_vma_check(), 6.12: thp_vma_allowable_order()
 *                     with TVA_SMAPS | TVA_ENFORCE_SYSFS), and per range
 *                     khugepaged's max_ptes_none/swap/shared. thpd.
 *   THP_SCOPE_ASKED   every private anonymous writable VMA that
 *                     MADV_COLLAPSE may touch at all: not MADV_NOHUGEPAGE,
 *                     not in a process that disabled THP; an administrator
 *                     asked for this process (thpctl policy --collapse).
 *
 * Both leave out unpopulated ranges (/proc/PID/pagemap), which could only
 * fail. The parsing, the checks and the ranking are pure (host tests and
 * the smaps fuzzer feed them text); the rest reads /proc and calls the
 * kernel. Functions return 0 (or a count) or -errno and print nothing.
 */
#ifndef THP_COLLAPSE_H
#define THP_COLLAPSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

/* --- smaps (pure) --- */

/* one VMA of /proc/PID/smaps: its header line and the fields used here */
struct thp_smaps_vma {
	unsigned long start, end;
	char perms[5];		/* "rw-p" */
	unsigned long inode;
	char name[64];		/* "[heap]", "[anon:x]", a file (cut), "" anonymous */
	bool name_cut;		/* the name was longer than name */
	uint64_t anon_kib;	/* Anonymous: */
	uint64_t anon_huge_kib;	/* AnonHugePages: */
	uint64_t swap_kib;	/* Swap: */
	int thp_eligible;	/* THPeligible: 0/1, -1 when the kernel has no such line */
	bool hugepage;		/* VmFlags hg: MADV_HUGEPAGE */
	bool nohugepage;	/* VmFlags nh: MADV_NOHUGEPAGE */
};

/*
 * smaps read a line at a time: thp_smaps_line() with each line (with or
 * without its '\n', len bytes, not NUL-terminated) returns 1 when the line
 * began a new VMA and the previous one is complete in *out, 0 otherwise;
 * thp_smaps_end() returns 1 with the last VMA, 0 when there was none.
 * Lines that are neither a VMA header nor a known field are ignored, as is
 * any line with a NUL byte; a field that does not parse leaves its default
 * (0, -1 for THPeligible).
 */
struct thp_smaps_parser {
	struct thp_smaps_vma cur;
	bool in_vma;
};
void thp_smaps_init(struct thp_smaps_parser *p);
int thp_smaps_line(struct thp_smaps_parser *p, const char *line, size_t len,
		   struct thp_smaps_vma *out);
int thp_smaps_end(struct thp_smaps_parser *p, struct thp_smaps_vma *out);

/* --- what may be collapsed (pure) --- */

enum thp_collapse_scope { THP_SCOPE_KERNEL, THP_SCOPE_ASKED };

/* why a VMA or a range is left alone; THP_SKIP_NONE: it is collapsed */
enum thp_skip {
	THP_SKIP_NONE,
	THP_SKIP_NOT_ANON,	/* a file, shared, special or read-only mapping */
	THP_SKIP_PROCESS,	/* the process disabled THP (PR_SET_THP_DISABLE, policy never) */
	THP_SKIP_NOHUGEPAGE,	/* MADV_NOHUGEPAGE */
	THP_SKIP_NOT_ELIGIBLE,	/* THPeligible 0 (or absent): the kernel would not */
	THP_SKIP_TOO_SMALL,	/* no whole PMD-aligned range inside */
	THP_SKIP_NO_SMALL,	/* no small-page anonymous memory: huge already, or empty */
	THP_SKIP_EMPTY,		/* range: nothing mapped */
	THP_SKIP_NONE_PTES,	/* range: more unmapped pages than max_ptes_none */
	THP_SKIP_SWAP_PTES,	/* range: more swapped-out pages than max_ptes_swap */
	THP_SKIP_SHARED_PTES,	/* range: more shared pages than max_ptes_shared */
	THP_SKIP_N
};
/* "not_anonymous", "process_disabled", "nohugepage", ... (JSON keys, logs) */
const char *thp_skip_name(enum thp_skip s);

/* the part of a VMA the engine works on: whole PMD ranges */
struct thp_collapse_span {
	unsigned long start, end;	/* PMD-aligned */
	uint64_t small_bytes;	/* the VMA's small-page anonymous bytes, at most end - start */
	uint64_t huge_kib;	/* the VMA's AnonHugePages when read */
};

/*
 * May v be collapsed under scope? thp_disabled: the process disabled THP
 * (THP_enabled: 0 in /proc/PID/status). THP_SKIP_NONE with *span set, or
 * the reason it may not.
 */
enum thp_skip thp_collapse_vma_check(const struct thp_smaps_vma *v, enum thp_collapse_scope scope,
				     bool thp_disabled, unsigned long pmd_size,
				     struct thp_collapse_span *span);

/* khugepaged's limits per PMD range (THP_SYSFS_DIR/khugepaged/max_ptes_*); -1: none */
struct thp_collapse_limits {
	long max_ptes_none, max_ptes_swap, max_ptes_shared;
};
#define THP_COLLAPSE_NO_LIMITS ((struct thp_collapse_limits){ -1, -1, -1 })

/* what /proc/PID/pagemap says of one PMD range's pages */
struct thp_range_count {
	unsigned int present, swapped, shared;	/* shared: present, not exclusively mapped */
};
/* count n pagemap entries (bit 63 present, 62 swapped, 56 exclusively mapped) */
void thp_pagemap_count(const uint64_t *entries, size_t n, struct thp_range_count *c);
/* may a range of nr pages with these counts be collapsed under the limits? */
enum thp_skip thp_collapse_range_check(const struct thp_range_count *c, unsigned int nr,
				       const struct thp_collapse_limits *l);

/* --- ranking (pure) --- */

struct thp_collapse_rank {
	size_t index;			/* the caller's, carried along */
	pid_t pid;
	uint64_t small_bytes;		/* the gain: small-page bytes in collapsible VMAs */
	unsigned long long start_time;	/* /proc/PID/stat field 22, clock ticks after boot */
};
/* biggest gain first; on a tie the longest-lived (earliest start) first, then the lower PID */
void thp_collapse_rank_sort(struct thp_collapse_rank *r, size_t n);
/* the same order for one process's spans: most small bytes first, then by address */
void thp_collapse_span_sort(struct thp_collapse_span *s, size_t n);

/* --- a process (reads /proc, calls the kernel) --- */

/* what may be collapsed in one process, biggest span first */
struct thp_collapse_plan {
	pid_t pid;
	enum thp_collapse_scope scope;
	unsigned long pmd_size;
	bool thp_disabled;
	unsigned long long start_time;
	uint64_t small_bytes;		/* sum over the spans */
	uint64_t anon_huge_kib;		/* AnonHugePages of the whole process */
	size_t n_spans;
	struct thp_collapse_span *spans;
	unsigned int vmas_skipped[THP_SKIP_N];	/* VMAs left alone, by reason */
};

/*
 * The PMD size in bytes: THP_SYSFS_DIR/hpage_pmd_size, 2 MiB where absent.
 * The per-range limits of khugepaged (THP_NO_LIMITS where unreadable).
 */
unsigned long thp_collapse_pmd_size(void);
void thp_collapse_read_limits(struct thp_collapse_limits *l);
/*
 * Read <root>/proc/PID/smaps (and status, stat) into plan; 0 or -errno
 * (-ENOENT/-ESRCH: gone, -EACCES: not allowed). Free with plan_free.
 */
int thp_collapse_plan_read(pid_t pid, enum thp_collapse_scope scope, unsigned long pmd_size,
			   struct thp_collapse_plan *plan);
void thp_collapse_plan_free(struct thp_collapse_plan *plan);
/*
 * After collapsing: AnonHugePages of the whole process now, and the part
 * of it in the plan's spans' VMAs (their growth is what was collapsed)
 */
int thp_collapse_plan_huge_now(const struct thp_collapse_plan *plan, uint64_t *total_kib,
			       uint64_t *spans_kib);

/* one call tried: where, how many PMD ranges from there, the kernel's answer */
struct thp_collapse_step {
	unsigned long addr;
	unsigned int nr;
	int err;	/* 0, or MADV_COLLAPSE's -errno: -ENOMEM (no hugepage), -EAGAIN
			 * (pages busy), -EBUSY (memory cgroup charge), -EINVAL (a range
			 * cannot be: pinned, ...); for several ranges, the last failure */
};

/*
 * Walks a plan's spans range by range: each call to next() skips what the
 * limits leave alone (counted in ranges_skipped) and tries at most
 * max_ranges contiguous ranges in one process_madvise() call, looking at
 * no more than 64 ranges, so a caller can keep its time slices short.
 * Several ranges a call save the kernel's per-call work (a drain of every
 * CPU's LRU caches, the VMA walk); the process's mmap lock is still taken
 * once a range, so it waits no longer.
 */
struct thp_collapse_cursor {
	const struct thp_collapse_plan *plan;
	struct thp_collapse_limits limits;
	int pidfd, pagemap_fd;		/* pagemap_fd -1: unreadable, every range tried */
	size_t span;
	unsigned long addr;
	unsigned int ranges_skipped[THP_SKIP_N];
	uint64_t *entries;		/* one range of pagemap */
};
/*
 * pidfd_open and /proc/PID/pagemap; 0 or -errno (-ESRCH: gone). Only the
 * pidfd must open: without pagemap (-EACCES) ranges are not checked.
 */
int thp_collapse_cursor_open(struct thp_collapse_cursor *c, const struct thp_collapse_plan *plan,
			     const struct thp_collapse_limits *limits);
/*
 * 1 with *step set when a range was tried, 0 when none was within the 64
 * ranges looked at (call again), -ENODATA at the end of the plan, or a
 * -errno that ends it: -ESRCH (gone), -EPERM (not allowed: CAP_SYS_NICE,
 * ptrace access).
 */
int thp_collapse_next(struct thp_collapse_cursor *c, unsigned int max_ranges,
		      struct thp_collapse_step *step);
void thp_collapse_cursor_close(struct thp_collapse_cursor *c);

/*
 * THP_enabled: of <root>/proc/PID/status (Linux 5.0+): 0 when the process
 * disabled THP (PR_SET_THP_DISABLE, policy never; thpctl run --never), else
 * 1; -ENODATA when the kernel has no such line, or -errno.
 */
int thp_proc_thp_enabled(pid_t pid);

/*
 * Does process_madvise() take MADV_COLLAPSE here (an empty vector on this
 * process)? 0, -EOPNOTSUPP (too old a kernel), -EPERM (no CAP_SYS_NICE)
 * or another -errno.
 */
int thp_collapse_probe(void);

#endif
