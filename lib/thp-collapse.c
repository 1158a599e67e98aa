// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The collapse engine: smaps parsing, what may be collapsed, ranking, and
 * process_madvise(MADV_COLLAPSE) one PMD range at a time. See
 * thp-collapse.h.
 */
#include "thp-collapse.h"
#include "thp.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#define PAGE_4K 4096UL

/* ---- smaps ---- */

static const char *const skip_names[THP_SKIP_N] = {
	[THP_SKIP_NONE] = "none",
	[THP_SKIP_NOT_ANON] = "not_anonymous",
	[THP_SKIP_PROCESS] = "process_disabled",
	[THP_SKIP_NOHUGEPAGE] = "nohugepage",
	[THP_SKIP_NOT_ELIGIBLE] = "not_eligible",
	[THP_SKIP_TOO_SMALL] = "too_small",
	[THP_SKIP_NO_SMALL] = "no_small_pages",
	[THP_SKIP_EMPTY] = "empty",
	[THP_SKIP_NONE_PTES] = "max_ptes_none",
	[THP_SKIP_SWAP_PTES] = "max_ptes_swap",
	[THP_SKIP_SHARED_PTES] = "max_ptes_shared",
};

const char *thp_skip_name(enum thp_skip s)
{
	return (unsigned int)s < THP_SKIP_N ? skip_names[s] : "?";
}

void thp_smaps_init(struct thp_smaps_parser *p)
{
	memset(p, 0, sizeof(*p));
}

static void vma_reset(struct thp_smaps_vma *v)
{
	memset(v, 0, sizeof(*v));
	v->thp_eligible = -1;
}

/* a hexadecimal or decimal number at *p (below end), no sign; false when none */
static bool number(const char **p, const char *end, int base, unsigned long long *out)
{
	unsigned long long v = 0;
	const char *s = *p;

	while (s < end) {
		int d;

		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (base == 16 && *s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else
			break;
		if (v > (~0ULL - (unsigned int)d) / (unsigned int)base)
			return false;	/* overflow: not a number the kernel prints */
		v = v * (unsigned int)base + (unsigned int)d;
		s++;
	}
	if (s == *p)
		return false;
	*p = s;
	*out = v;
	return true;
}

static void spaces(const char **p, const char *end)
{
	while (*p < end && (**p == ' ' || **p == '\t'))
		(*p)++;
}

/* "start-end perms offset major:minor inode [name]" */
static bool parse_header(const char *s, const char *end, struct thp_smaps_vma *v)
{
	unsigned long long start, stop, x;
	size_t len;

	if (!number(&s, end, 16, &start) || s >= end || *s++ != '-' ||
	    !number(&s, end, 16, &stop) || s >= end || *s++ != ' ')
		return false;
	/* [r-][w-][x-][sp], as show_map_vma() prints them */
	if (end - s < 5 || s[4] != ' ' || (s[0] != 'r' && s[0] != '-') ||
	    (s[1] != 'w' && s[1] != '-') || (s[2] != 'x' && s[2] != '-') ||
	    (s[3] != 's' && s[3] != 'p'))
		return false;
	vma_reset(v);
	memcpy(v->perms, s, 4);
	v->perms[4] = '\0';
	s += 5;
	if (!number(&s, end, 16, &x) || s >= end || *s++ != ' ' ||	/* offset */
	    !number(&s, end, 16, &x) || s >= end || *s++ != ':' ||	/* major */
	    !number(&s, end, 16, &x) || s >= end || *s++ != ' ' ||	/* minor */
	    !number(&s, end, 10, &x))					/* inode */
		return false;
	if (start > stop)
		return false;
	v->start = (unsigned long)start;
	v->end = (unsigned long)stop;
	v->inode = (unsigned long)x;
	spaces(&s, end);
	while (end > s && (end[-1] == '\n' || end[-1] == ' '))
		end--;
	len = (size_t)(end - s);
	v->name_cut = len >= sizeof(v->name);
	if (v->name_cut)
		len = sizeof(v->name) - 1;
	memcpy(v->name, s, len);
	v->name[len] = '\0';
	return true;
}

/* "Name:   N kB" -> N */
static void parse_kib(const char *s, const char *end, uint64_t *out)
{
	unsigned long long v;

	spaces(&s, end);
	if (number(&s, end, 10, &v))
		*out = v;
}

static void parse_vmflags(const char *s, const char *end, struct thp_smaps_vma *v)
{
	while (s < end) {
		const char *w;

		spaces(&s, end);
		w = s;
		while (s < end && *s != ' ' && *s != '\t' && *s != '\n')
			s++;
		if (s - w == 2 && memcmp(w, "hg", 2) == 0)
			v->hugepage = true;
		else if (s - w == 2 && memcmp(w, "nh", 2) == 0)
			v->nohugepage = true;
		else if (s == w)
			break;
	}
}

/* a field line "Name: value" of the current VMA */
static void parse_field(const char *s, const char *end, struct thp_smaps_vma *v)
{
	static const struct {
		const char *name;
		size_t offset;
	} kib_fields[] = {
		{ "Anonymous:", offsetof(struct thp_smaps_vma, anon_kib) },
		{ "AnonHugePages:", offsetof(struct thp_smaps_vma, anon_huge_kib) },
		{ "Swap:", offsetof(struct thp_smaps_vma, swap_kib) },
	};
	size_t len = (size_t)(end - s);

	for (size_t i = 0; i < sizeof(kib_fields) / sizeof(kib_fields[0]); i++) {
		size_t n = strlen(kib_fields[i].name);

		if (len >= n && memcmp(s, kib_fields[i].name, n) == 0) {
			parse_kib(s + n, end, (uint64_t *)((char *)v + kib_fields[i].offset));
			return;
		}
	}
	if (len >= 12 && memcmp(s, "THPeligible:", 12) == 0) {
		unsigned long long e;

		s += 12;
		spaces(&s, end);
		if (number(&s, end, 10, &e) && e <= 1)
			v->thp_eligible = (int)e;
	} else if (len >= 8 && memcmp(s, "VmFlags:", 8) == 0) {
		parse_vmflags(s + 8, end, v);
	}
}

int thp_smaps_line(struct thp_smaps_parser *p, const char *line, size_t len,
		   struct thp_smaps_vma *out)
{
	const char *end = line + len;
	struct thp_smaps_vma v;

	/* the kernel never prints a NUL: such a line is not smaps */
	if (memchr(line, '\0', len))
		return 0;
	/* a header starts with the hexadecimal start address; field names with a capital */
	if (len && ((*line >= '0' && *line <= '9') || (*line >= 'a' && *line <= 'f')) &&
	    parse_header(line, end, &v)) {
		bool had = p->in_vma;

		if (had)
			*out = p->cur;
		p->cur = v;
		p->in_vma = true;
		return had;
	}
	if (p->in_vma)
		parse_field(line, end, &p->cur);
	return 0;
}

int thp_smaps_end(struct thp_smaps_parser *p, struct thp_smaps_vma *out)
{
	if (!p->in_vma)
		return 0;
	*out = p->cur;
	p->in_vma = false;
	return 1;
}

/* ---- what may be collapsed ---- */

/* private anonymous and writable: MADV_COLLAPSE needs a writable PTE in a range */
static bool private_anon(const struct thp_smaps_vma *v)
{
	if (v->perms[1] != 'w' || v->perms[3] != 'p' || v->inode != 0 || v->name_cut)
		return false;
	return !v->name[0] || strcmp(v->name, "[heap]") == 0 || strcmp(v->name, "[stack]") == 0 ||
	       strncmp(v->name, "[anon:", 6) == 0;
}

enum thp_skip thp_collapse_vma_check(const struct thp_smaps_vma *v, enum thp_collapse_scope scope,
				     bool thp_disabled, unsigned long pmd_size,
				     struct thp_collapse_span *span)
{
	unsigned long start, end;
	uint64_t small;

	if (!private_anon(v))
		return THP_SKIP_NOT_ANON;
	if (thp_disabled)
		return THP_SKIP_PROCESS;
	if (v->nohugepage)
		return THP_SKIP_NOHUGEPAGE;
	if (scope == THP_SCOPE_KERNEL && v->thp_eligible != 1)
		return THP_SKIP_NOT_ELIGIBLE;
	if (!pmd_size || (pmd_size & (pmd_size - 1)))
		return THP_SKIP_TOO_SMALL;
	start = (v->start + pmd_size - 1) & ~(pmd_size - 1);
	end = v->end & ~(pmd_size - 1);
	if (start < v->start || start >= end)
		return THP_SKIP_TOO_SMALL;
	small = v->anon_kib > v->anon_huge_kib ? (v->anon_kib - v->anon_huge_kib) * 1024 : 0;
	if (small > end - start)
		small = end - start;
	if (!small)
		return THP_SKIP_NO_SMALL;
	span->start = start;
	span->end = end;
	span->small_bytes = small;
	span->huge_kib = v->anon_huge_kib;
	return THP_SKIP_NONE;
}

void thp_pagemap_count(const uint64_t *entries, size_t n, struct thp_range_count *c)
{
	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < n; i++) {
		uint64_t e = entries[i];

		if (e >> 63) {
			c->present++;
			if (!((e >> 56) & 1))
				c->shared++;
		} else if ((e >> 62) & 1) {
			c->swapped++;
		}
	}
}

enum thp_skip thp_collapse_range_check(const struct thp_range_count *c, unsigned int nr,
				       const struct thp_collapse_limits *l)
{
	unsigned int mapped = c->present + c->swapped;

	if (!mapped)
		return THP_SKIP_EMPTY;
	if (l->max_ptes_none >= 0 && mapped < nr && nr - mapped > (unsigned long)l->max_ptes_none)
		return THP_SKIP_NONE_PTES;
	if (l->max_ptes_swap >= 0 && c->swapped > (unsigned long)l->max_ptes_swap)
		return THP_SKIP_SWAP_PTES;
	if (l->max_ptes_shared >= 0 && c->shared > (unsigned long)l->max_ptes_shared)
		return THP_SKIP_SHARED_PTES;
	return THP_SKIP_NONE;
}

/* ---- ranking ---- */

static int rank_cmp(const void *a, const void *b)
{
	const struct thp_collapse_rank *x = a, *y = b;

	if (x->small_bytes != y->small_bytes)
		return x->small_bytes > y->small_bytes ? -1 : 1;
	if (x->start_time != y->start_time)
		return x->start_time < y->start_time ? -1 : 1;
	return (x->pid > y->pid) - (x->pid < y->pid);
}

void thp_collapse_rank_sort(struct thp_collapse_rank *r, size_t n)
{
	if (n > 1)
		qsort(r, n, sizeof(*r), rank_cmp);
}

static int span_cmp(const void *a, const void *b)
{
	const struct thp_collapse_span *x = a, *y = b;

	if (x->small_bytes != y->small_bytes)
		return x->small_bytes > y->small_bytes ? -1 : 1;
	return (x->start > y->start) - (x->start < y->start);
}

void thp_collapse_span_sort(struct thp_collapse_span *s, size_t n)
{
	if (n > 1)
		qsort(s, n, sizeof(*s), span_cmp);
}

/* ---- a process ---- */

unsigned long thp_collapse_pmd_size(void)
{
	char buf[32];
	unsigned long v;
	char *end;

	if (thp_read_file(THP_SYSFS_DIR "/hpage_pmd_size", buf, sizeof(buf)) < 0)
		return 2UL << 20;
	v = strtoul(buf, &end, 10);
	if (end == buf || v < PAGE_4K || (v & (v - 1)))
		return 2UL << 20;
	return v;
}

void thp_collapse_read_limits(struct thp_collapse_limits *l)
{
	static const char *const names[] = { "max_ptes_none", "max_ptes_swap", "max_ptes_shared" };
	long *dst[] = { &l->max_ptes_none, &l->max_ptes_swap, &l->max_ptes_shared };
	uint64_t v;

	for (size_t i = 0; i < 3; i++)
		*dst[i] = thp_khugepaged_read(names[i], &v) == 0 && v < 1UL << 30 ? (long)v : -1;
}

static FILE *proc_open(pid_t pid, const char *what)
{
	char rel[64], path[PATH_MAX];

	snprintf(rel, sizeof(rel), "/proc/%d/%s", (int)pid, what);
	if (thp_path(path, sizeof(path), rel) < 0) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	return fopen(path, "re");
}

int thp_proc_thp_enabled(pid_t pid)
{
	char *line = NULL;
	size_t cap = 0;
	int r = -ENODATA;
	FILE *f = proc_open(pid, "status");

	if (!f)
		return -errno;
	/* whole lines: a Groups: line can be long */
	while (getline(&line, &cap, f) > 0) {
		uint64_t v;

		if (strncmp(line, "THP_enabled:", 12) != 0)
			continue;
		r = thp_kv_get(line, "THP_enabled", &v) == 0 && v <= 1 ? (int)v : -EBADMSG;
		break;
	}
	free(line);
	fclose(f);
	return r;
}

/* field 22 of /proc/PID/stat, after the comm in parentheses (which may hold anything) */
static int read_start_time(pid_t pid, unsigned long long *start)
{
	char rel[64], buf[1024], *p;
	int r;

	snprintf(rel, sizeof(rel), "/proc/%d/stat", (int)pid);
	r = thp_read_file(rel, buf, sizeof(buf));
	if (r < 0)
		return r;
	p = strrchr(buf, ')');
	if (!p)
		return -EBADMSG;
	/* ") S ppid pgrp ..." : the state is field 3, start_time 22 */
	for (int field = 2; field < 22; field++) {
		p = strchr(p + 1, ' ');
		if (!p)
			return -EBADMSG;
	}
	return sscanf(p + 1, "%llu", start) == 1 ? 0 : -EBADMSG;
}

/* calls each(vma, userdata) for every VMA of /proc/PID/smaps */
static int smaps_each(pid_t pid, void (*each)(const struct thp_smaps_vma *v, void *userdata),
		      void *userdata)
{
	struct thp_smaps_parser p;
	struct thp_smaps_vma v;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	FILE *f = proc_open(pid, "smaps");
	int r = 0;

	if (!f)
		return -errno;
	thp_smaps_init(&p);
	errno = 0;
	while ((n = getline(&line, &cap, f)) > 0)
		if (thp_smaps_line(&p, line, (size_t)n, &v))
			each(&v, userdata);
	/* a process that exits while read ends its smaps early: said by ESRCH */
	if (ferror(f))
		r = errno ? -errno : -EIO;
	if (thp_smaps_end(&p, &v))
		each(&v, userdata);
	free(line);
	fclose(f);
	return r;
}

struct plan_build {
	struct thp_collapse_plan *plan;
	size_t cap;
	int err;
};

static void plan_add(const struct thp_smaps_vma *v, void *userdata)
{
	struct plan_build *b = userdata;
	struct thp_collapse_plan *plan = b->plan;
	struct thp_collapse_span span;
	enum thp_skip s;

	plan->anon_huge_kib += v->anon_huge_kib;
	s = thp_collapse_vma_check(v, plan->scope, plan->thp_disabled, plan->pmd_size, &span);
	if (s != THP_SKIP_NONE) {
		plan->vmas_skipped[s]++;
		return;
	}
	if (plan->n_spans == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 16;
		struct thp_collapse_span *ns = realloc(plan->spans, cap * sizeof(*ns));

		if (!ns) {
			b->err = -ENOMEM;
			return;
		}
		plan->spans = ns;
		b->cap = cap;
	}
	plan->spans[plan->n_spans++] = span;
	plan->small_bytes += span.small_bytes;
}

int thp_collapse_plan_read(pid_t pid, enum thp_collapse_scope scope, unsigned long pmd_size,
			   struct thp_collapse_plan *plan)
{
	struct plan_build b = { .plan = plan };
	int r;

	memset(plan, 0, sizeof(*plan));
	plan->pid = pid;
	plan->scope = scope;
	plan->pmd_size = pmd_size;
	r = thp_proc_thp_enabled(pid);
	plan->thp_disabled = r == 0;
	/* a kernel before 5.0 has no THP_enabled: line; THPeligible still says */
	r = r == -ENODATA || r >= 0 ? read_start_time(pid, &plan->start_time) : r;
	if (r == 0)
		r = smaps_each(pid, plan_add, &b);
	if (r == 0)
		r = b.err;
	if (r < 0) {
		thp_collapse_plan_free(plan);
		return r;
	}
	thp_collapse_span_sort(plan->spans, plan->n_spans);
	return 0;
}

void thp_collapse_plan_free(struct thp_collapse_plan *plan)
{
	free(plan->spans);
	plan->spans = NULL;
	plan->n_spans = 0;
}

struct huge_now {
	const struct thp_collapse_plan *plan;
	uint64_t total, spans;
};

static void huge_add(const struct thp_smaps_vma *v, void *userdata)
{
	struct huge_now *h = userdata;

	h->total += v->anon_huge_kib;
	for (size_t i = 0; i < h->plan->n_spans; i++)
		if (h->plan->spans[i].start >= v->start && h->plan->spans[i].start < v->end) {
			h->spans += v->anon_huge_kib;
			break;
		}
}

int thp_collapse_plan_huge_now(const struct thp_collapse_plan *plan, uint64_t *total_kib,
			       uint64_t *spans_kib)
{
	struct huge_now h = { .plan = plan };
	int r = smaps_each(plan->pid, huge_add, &h);

	if (r < 0)
		return r;
	*total_kib = h.total;
	*spans_kib = h.spans;
	return 0;
}

static int pmadvise(int pidfd, unsigned long addr, size_t len)
{
	struct iovec iov = { .iov_base = (void *)addr, .iov_len = len };

	return syscall(SYS_process_madvise, pidfd, len ? &iov : NULL, len ? 1 : 0, MADV_COLLAPSE,
		       0) < 0 ? -errno : 0;
}

int thp_collapse_cursor_open(struct thp_collapse_cursor *c, const struct thp_collapse_plan *plan,
			     const struct thp_collapse_limits *limits)
{
	char rel[64], path[PATH_MAX];
	size_t nr = plan->pmd_size / PAGE_4K;

	memset(c, 0, sizeof(*c));
	c->plan = plan;
	c->limits = *limits;
	c->pagemap_fd = -1;
	c->pidfd = (int)syscall(SYS_pidfd_open, plan->pid, 0);
	if (c->pidfd < 0)
		return -errno;
	c->entries = malloc(nr * sizeof(*c->entries));
	if (!c->entries) {
		close(c->pidfd);
		c->pidfd = -1;
		return -ENOMEM;
	}
	snprintf(rel, sizeof(rel), "/proc/%d/pagemap", (int)plan->pid);
	if (thp_path(path, sizeof(path), rel) == 0)
		c->pagemap_fd = open(path, O_RDONLY | O_CLOEXEC);
	return 0;
}

/* the range's pagemap counts; false when unreadable (the range is tried then) */
static bool range_count(struct thp_collapse_cursor *c, unsigned long addr,
			struct thp_range_count *count)
{
	size_t nr = c->plan->pmd_size / PAGE_4K, want = nr * sizeof(*c->entries);

	if (c->pagemap_fd < 0 ||
	    pread(c->pagemap_fd, c->entries, want, (off_t)(addr / PAGE_4K * sizeof(*c->entries))) !=
		    (ssize_t)want)
		return false;
	thp_pagemap_count(c->entries, nr, count);
	return true;
}

/* may the range at addr be tried? counted in ranges_skipped when not */
static bool range_ok(struct thp_collapse_cursor *c, unsigned long addr)
{
	unsigned int nr = (unsigned int)(c->plan->pmd_size / PAGE_4K);
	struct thp_range_count count;
	enum thp_skip skip;

	if (!range_count(c, addr, &count))
		return true;
	skip = thp_collapse_range_check(&count, nr, &c->limits);
	if (skip == THP_SKIP_NONE)
		return true;
	c->ranges_skipped[skip]++;
	return false;
}

int thp_collapse_next(struct thp_collapse_cursor *c, unsigned int max_ranges,
		      struct thp_collapse_step *step)
{
	const struct thp_collapse_plan *plan = c->plan;
	unsigned long pmd = plan->pmd_size;

	for (int looked = 0; looked < 64;) {
		const struct thp_collapse_span *s;
		unsigned long addr;
		unsigned int n = 1;
		int r;

		if (c->span >= plan->n_spans)
			return -ENODATA;
		s = &plan->spans[c->span];
		if (c->addr < s->start)
			c->addr = s->start;
		if (c->addr >= s->end) {
			c->span++;
			c->addr = 0;
			continue;
		}
		addr = c->addr;
		c->addr += pmd;
		looked++;
		if (!range_ok(c, addr))
			continue;
		/* the ranges right after it, while they may be tried too */
		while (n < max_ranges && c->addr < s->end && looked < 64) {
			looked++;
			if (!range_ok(c, c->addr)) {
				c->addr += pmd;
				break;
			}
			c->addr += pmd;
			n++;
		}
		r = pmadvise(c->pidfd, addr, n * pmd);
		if (r == -ESRCH || r == -EPERM)
			return r;
		step->addr = addr;
		step->nr = n;
		step->err = r;
		return 1;
	}
	return 0;
}

void thp_collapse_cursor_close(struct thp_collapse_cursor *c)
{
	if (c->pidfd >= 0)
		close(c->pidfd);
	if (c->pagemap_fd >= 0)
		close(c->pagemap_fd);
	free(c->entries);
	c->entries = NULL;
	c->pidfd = c->pagemap_fd = -1;
}

int thp_collapse_probe(void)
{
	int pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0), r;

	if (pidfd < 0)
		return errno == ENOSYS ? -EOPNOTSUPP : -errno;
	r = pmadvise(pidfd, 0, 0);
	close(pidfd);
	return r == -EINVAL || r == -ENOSYS ? -EOPNOTSUPP : r;
}
