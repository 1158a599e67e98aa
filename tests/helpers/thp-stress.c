// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * thp-stress: hammer the THP paths for a bounded time and prove that no data
 * was lost or corrupted on the way.
 *
 * Worker processes (each --jobs times):
 *   cow       fork in a loop; parent and child write different pages of the
 *             same hugepage-backed region (copy-on-write of PMD-mapped pages,
 *             the child also splits its copy), each checks its own view
 *   split     mprotect of one 4 KiB page, MADV_DONTNEED of a sub-range and
 *             partial munmap + remap inside hugepages; the touched hugepage
 *             is checked after every split
 *   collapse  makes hugepages PTE-mapped (partial DONTNEED, rewrites) and
 *             collapses them again with MADV_COLLAPSE (khugepaged works on
 *             the same regions when the suite sets scan_sleep_millisecs=0)
 *   swap      (with --memcg DIR) moves itself into the cgroup DIR, whose
 *             memory.max the caller made smaller than its region, and cycles
 *             through the region so that it keeps being swapped out and in
 * Every worker also flips its own policy now and then: prctl(PR_SET_THP_MM_POLICY)
 * on a kernel with the thp-stack series, else PR_SET_THP_DISABLE.
 *
 * Flippers (unless --no-flip):
 *   mode      writes enabled always/madvise/never (and 0/1/2; the numbers and
 *             never also to the mode file, when the kernel has it, which
 *             refuses always and madvise) and defrag words every --flip-ms
 *             milliseconds; checks that what it reads back matches docs/abi.md
 *   policy    writes default/advise/never to /proc/<worker>/thp_policy (when
 *             the kernel has it)
 *
 * Every 4 KiB page carries a pattern derived from (region, page, generation);
 * the expected state of each page (unmapped, zero, generation) is tracked
 * outside the region and every region is checked completely at the end.
 * Counters: /proc/vmstat thp_* deltas must be non-negative, fallback_charge <=
 * fallback; each worker's /proc/self/thp_stat (when present) must hold
 * non-negative values, thp_fault_fallback_charge <= thp_fault_fallback,
 * and thp_collapse_alloc <= the
 * collapse attempts it can have seen (its MADV_COLLAPSE hugepages plus one per
 * hugepage per khugepaged pass: full scans, and the restarts that leaving
 * "never" causes, which the mode flipper counts).
 *
 * --worker-nice N runs the workers at nice N. khugepaged runs at nice 19 and
 * does not check kthread_should_stop() inside a collapse: its hugepage charge
 * to a memcg at its limit reclaims (up to 17 passes of 512 pages). Workers
 * at nice 0 that saturate the CPUs leave it under 1% of one, so a write of
 * "never" (kthread_stop) waits for that collapse for minutes on a debug
 * kernel under TCG: stock 6.1 behaviour, not a deadlock. At nice 19 the
 * workers compete with khugepaged on equal weights and the writer's wait
 * measures the code, not the scheduler; mode_write_max_ms reports it.
 *
 * --inject-corruption flips one byte behind the checker's back (the suite
 * uses it to prove that corruption is detected).
 *
 * Output: key=value lines (ops, bytes_verified, corrupted_bytes, ...) and a
 * closing summary line. Exit: 0 clean, 1 corruption or a counter/state
 * violation, 2 usage, 3 system error.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "page-check.h"
#include "test-util.h"
#include "thp.h"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

#define PAGE TEST_PAGE
#define HPAGE TEST_HPAGE
#define PPH (HPAGE / PAGE)	/* pages per hugepage */
#define MAX_WORKERS 64

enum counter {
	C_OPS, C_BYTES, C_CORRUPT, C_ERRORS, C_VIOLATIONS, C_FORKS, C_SPLITS,
	C_COLLAPSE_OK, C_COLLAPSE_FAIL, C_MODE_FLIPS, C_POLICY_FLIPS, C_SELF_POLICY,
	C_SWAP_PASSES, C_KHUGEPAGED_STARTS, C_MODE_WRITE_MAX_MS, C_POLICY_WRITE_MAX_MS, C_NR
};

static const char *const counter_name[C_NR] = {
	"ops", "bytes_verified", "corrupted_bytes", "errors", "violations", "forks",
	"splits", "collapse_ok", "collapse_failed", "mode_flips", "policy_flips",
	"self_policy_flips", "swap_passes", "khugepaged_starts", "mode_write_max_ms",
	"policy_write_max_ms",
};

struct shared {
	uint64_t c[C_NR];
	int nworkers;
	pid_t worker[MAX_WORKERS];
	int reported;		/* first corruption/violation messages printed */
};

static struct shared *sh;
static struct timespec deadline;
static unsigned long opt_seconds = 60, opt_region_mib = 16, opt_swap_mib = 64;
static unsigned long opt_jobs = 1, opt_flip_ms = 3, opt_worker_nice;
static uint64_t opt_seed;
static const char *opt_memcg;
static bool opt_flip = true, opt_inject;
static bool have_policy_prctl, have_policy_proc, have_mode_file;
static const char *who = "main";
static const char *check_after;	/* what the check in progress follows */

static void add(enum counter c, uint64_t n)
{
	__atomic_fetch_add(&sh->c[c], n, __ATOMIC_RELAXED);
}

/* the longest a flipper's write took: a stalled writer shows here */
static void note_max(enum counter c, uint64_t v)
{
	uint64_t old = __atomic_load_n(&sh->c[c], __ATOMIC_RELAXED);

	while (v > old && !__atomic_compare_exchange_n(&sh->c[c], &old, v, false,
						       __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

static void msg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "thp-stress[%s %d]: ", who, (int)getpid());
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* a system call that should not fail did: count it, say it once per place */
static void sys_error(const char *what, int err)
{
	add(C_ERRORS, 1);
	msg("%s: %s", what, strerror(err));
}

/* at most 20 corruption/violation reports in total, to keep logs readable */
static bool may_report(void)
{
	return __atomic_fetch_add(&sh->reported, 1, __ATOMIC_RELAXED) < 20;
}

static void violation(const char *fmt, ...)
{
	va_list ap;

	add(C_VIOLATIONS, 1);
	if (!may_report())
		return;
	va_start(ap, fmt);
	fprintf(stderr, "thp-stress[%s %d]: VIOLATION: ", who, (int)getpid());
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static bool time_up(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec > deadline.tv_sec ||
	       (now.tv_sec == deadline.tv_sec && now.tv_nsec >= deadline.tv_nsec);
}

static void rng_seed(uint64_t s)
{
	rnd_seed(s * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL);
	rnd();
}

/* ---------------------------------------------------------------- regions */

static void report_damage(const struct region *r, const struct page_damage *d)
{
	if (may_report())
		msg("CORRUPTION after %s: region %" PRIu64 " page %zu (%p) state %u: "
		    "%" PRIu64 " bad bytes, first at word %zu: want %016" PRIx64 " got %016" PRIx64,
		    check_after, r->id, d->page, (void *)(r->base + d->page * PAGE), d->state,
		    d->bytes, d->word, d->want, d->got);
}

/* check pages [first, first + n) and count what was verified and damaged */
static uint64_t check_pages(struct region *r, size_t first, size_t n, const char *after)
{
	uint64_t verified = 0, bad;

	check_after = after;
	bad = region_check(r, first, n, &verified, report_damage);
	add(C_BYTES, verified);
	add(C_CORRUPT, bad);
	return bad;
}

static uint64_t check_region(struct region *r, const char *after)
{
	return check_pages(r, 0, r->npages, after);
}

static uint64_t check_hpage(struct region *r, size_t h, const char *after)
{
	return check_pages(r, h * PPH, PPH, after);
}

/* ------------------------------------------------------------ thp_stat */

/* "name value" counters with the prefix; a negative or underflowed one is a violation */
static int read_counters(const char *path, const char *prefix, struct stat_set *set)
{
	int r = stats_read(path, prefix, set);

	for (int i = 0; r == 0 && i < set->n; i++)
		if (set->bad[i])
			violation("%s: %s is negative or underflowed", path, set->name[i]);
	return r;
}

static uint64_t full_scans(void)
{
	uint64_t v = 0;

	thp_khugepaged_read("full_scans", &v);
	return v;
}

/* what a worker knows to bound its own thp_stat */
struct bounds {
	uint64_t full_scans_start;
	uint64_t starts_start;		/* C_KHUGEPAGED_STARTS when the worker began */
	uint64_t collapse_hpages;	/* hugepages passed to MADV_COLLAPSE */
	uint64_t max_hpages;		/* hugepages mapped at most at once */
};

static struct bounds bounds_start(void)
{
	return (struct bounds){
		.full_scans_start = full_scans(),
		.starts_start = __atomic_load_n(&sh->c[C_KHUGEPAGED_STARTS], __ATOMIC_RELAXED),
	};
}

static void check_thp_stat(const struct bounds *b)
{
	struct stat_set s;
	uint64_t fb = 0, fbc = 0, coll = 0, limit, passes, scans, starts;
	int r = read_counters("/proc/self/thp_stat", "thp_", &s);

	if (r == -ENOENT)
		return;
	if (r < 0) {
		sys_error("reading /proc/self/thp_stat", -r);
		return;
	}
	if (stats_get(&s, "thp_fault_fallback", &fb) &&
	    stats_get(&s, "thp_fault_fallback_charge", &fbc) && fbc > fb)
		violation("thp_stat: thp_fault_fallback_charge %" PRIu64
			  " > thp_fault_fallback %" PRIu64, fbc, fb);
	/*
	 * khugepaged visits each address of an mm at most once per pass over
	 * its mm list. A pass ends either by wrapping (khugepaged/full_scans
	 * counts it) or because the thread was stopped: writing "never" stops
	 * khugepaged, which forgets its cursor (khugepaged_scan.mm_slot =
	 * NULL) without counting a full scan, and the next enabling write
	 * starts a new thread from the head of the list. So the passes seen
	 * are at most the full scans plus the restarts the mode flipper made,
	 * plus the passes in progress when the worker began and when it
	 * checks (+2).
	 */
	scans = full_scans() - b->full_scans_start;
	starts = __atomic_load_n(&sh->c[C_KHUGEPAGED_STARTS], __ATOMIC_RELAXED) - b->starts_start;
	passes = scans + starts + 2;
	limit = b->collapse_hpages + passes * b->max_hpages;
	if (stats_get(&s, "thp_collapse_alloc", &coll) && coll > limit)
		violation("thp_stat: thp_collapse_alloc %" PRIu64 " > %" PRIu64
			  " possible attempts (%" PRIu64 " MADV_COLLAPSE hugepages, %" PRIu64
			  " hugepages x (%" PRIu64 " full scans + %" PRIu64
			  " khugepaged restarts + 2))", coll, limit,
			  b->collapse_hpages, b->max_hpages, scans, starts);
}

/* ---------------------------------------------------------- policies */

/* flip this process's own THP policy (or THP-disable bit on a stock kernel) */
static void flip_self_policy(void)
{
	if (rnd_below(8))
		return;
	if (have_policy_prctl) {
		int want = (int)rnd_below(3);

		if (prctl(PR_SET_THP_MM_POLICY, want, 0, 0, 0) < 0) {
			sys_error("prctl(PR_SET_THP_MM_POLICY)", errno);
			return;
		}
	} else if (prctl(PR_SET_THP_DISABLE, (unsigned long)rnd_below(2), 0, 0, 0) < 0) {
		sys_error("prctl(PR_SET_THP_DISABLE)", errno);
		return;
	}
	add(C_SELF_POLICY, 1);
}

/* --------------------------------------------------------------- workers */

static void worker_start(const char *name, unsigned long idx)
{
	who = name;
	rng_seed(opt_seed ^ mix64((uint64_t)getpid() << 8 ^ idx));
	/* --worker-nice 19: khugepaged's own nice, see the header comment */
	if (opt_worker_nice && setpriority(PRIO_PROCESS, 0, (int)opt_worker_nice) < 0)
		sys_error("setpriority", errno);
}

/* COW: fork, both sides write and check their own view */
static int run_cow(unsigned long idx)
{
	struct bounds b = bounds_start();
	struct region r;
	int e;

	worker_start("cow", idx);
	e = region_init(&r, opt_region_mib, 0x1000 + idx);
	if (e < 0) {
		sys_error("mmap cow region", -e);
		return 3;
	}
	b.max_hpages = r.size / HPAGE;
	while (!time_up()) {
		size_t i, n = 1 + rnd_below(64);
		pid_t pid;
		int status;

		flip_self_policy();
		pid = fork();
		if (pid < 0) {
			sys_error("fork", errno);
			sleep_ms(10);
			continue;
		}
		if (pid == 0) {
			/* child: new generations in its copy, a split, check all */
			uint32_t g;
			size_t h = rnd_below(r.size / HPAGE);

			who = "cow-child";
			rng_seed(rnd() ^ (uint64_t)getpid());
			g = region_new_gen(&r);
			for (i = 0; i < n; i++)
				region_fill_page(&r, rnd_below(r.npages), g);
			if (rnd_below(2)) {
				size_t p = h * PPH + rnd_below(PPH - 1);

				if (madvise(r.base + p * PAGE, PAGE, MADV_DONTNEED) == 0) {
					region_set_state(&r, p, PAGE_ZERO);
					add(C_SPLITS, 1);
				}
				check_hpage(&r, h, "COW child split");
			}
			add(C_OPS, n + 1);
			_exit(check_region(&r, "COW child writes") ? 1 : 0);
		}
		add(C_FORKS, 1);
		{
			uint32_t g = region_new_gen(&r);

			for (i = 0; i < n; i++)
				region_fill_page(&r, rnd_below(r.npages), g);
		}
		add(C_OPS, n);
		while (waitpid(pid, &status, 0) < 0) {
			if (errno != EINTR) {
				sys_error("waitpid", errno);
				return 3;
			}
		}
		if (!WIFEXITED(status) || (WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 1)) {
			msg("COW child %d died: status 0x%x", (int)pid, status);
			add(C_ERRORS, 1);
		}
		/* the child's writes must not be visible here */
		check_region(&r, "COW parent, child exited");
	}
	check_region(&r, "end of run");
	check_thp_stat(&b);
	return 0;
}

/* splits inside hugepages; the touched hugepage is checked after each */
static int run_split(unsigned long idx)
{
	struct bounds b = bounds_start();
	struct region r;
	int e;

	worker_start("split", idx);
	e = region_init(&r, opt_region_mib, 0x2000 + idx);
	if (e < 0) {
		sys_error("mmap split region", -e);
		return 3;
	}
	b.max_hpages = r.size / HPAGE;
	if (opt_inject) {	/* proves the checker can fail: one byte behind its back */
		r.base[r.size / 2 + 12345] ^= 0x5a;
		check_region(&r, "injected corruption");
	}
	while (!time_up()) {
		size_t h = rnd_below(r.size / HPAGE), base = h * PPH;
		size_t p = base + rnd_below(PPH), n = 1 + rnd_below(PPH / 2), i;
		uint8_t *a = r.base + p * PAGE;

		if (p + n > base + PPH)
			n = base + PPH - p;
		flip_self_policy();
		switch (rnd_below(5)) {
		case 0:	/* mprotect one page read-only and back: splits the PMD */
			if (r.st[p] == PAGE_UNMAPPED)
				break;
			if (mprotect(a, PAGE, PROT_READ) < 0) {
				sys_error("mprotect(PROT_READ)", errno);
				break;
			}
			add(C_SPLITS, 1);
			check_hpage(&r, h, "mprotect split");
			if (mprotect(a, PAGE, PROT_READ | PROT_WRITE) < 0) {
				sys_error("mprotect(PROT_READ|PROT_WRITE)", errno);
				return 3;
			}
			region_fill_page(&r, p, region_new_gen(&r));
			check_hpage(&r, h, "mprotect restore + write");
			break;
		case 1:	/* MADV_DONTNEED a sub-range: zero pages */
			if (madvise(a, n * PAGE, MADV_DONTNEED) < 0) {
				sys_error("madvise(MADV_DONTNEED)", errno);
				break;
			}
			for (i = p; i < p + n; i++)
				if (r.st[i] != PAGE_UNMAPPED)
					region_set_state(&r, i, PAGE_ZERO);
			add(C_SPLITS, 1);
			check_hpage(&r, h, "MADV_DONTNEED split");
			break;
		case 2:	/* punch a hole with munmap, check, map it again */
			if (munmap(a, n * PAGE) < 0) {
				sys_error("munmap", errno);
				break;
			}
			for (i = p; i < p + n; i++)
				region_set_state(&r, i, PAGE_UNMAPPED);
			add(C_SPLITS, 1);
			check_hpage(&r, h, "partial munmap");
			if (mmap(a, n * PAGE, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE,
				 -1, 0) == MAP_FAILED) {
				sys_error("mmap(MAP_FIXED) of the hole", errno);
				return 3;
			}
			madvise(a, n * PAGE, MADV_HUGEPAGE);	/* lets the VMAs merge again */
			for (i = p; i < p + n; i++)
				region_set_state(&r, i, PAGE_ZERO);
			check_hpage(&r, h, "hole remapped");
			break;
		case 3:	/* rewrite the whole hugepage (fault may give a new THP) */
			{
				uint32_t g = region_new_gen(&r);

				for (i = base; i < base + PPH; i++)
					region_fill_page(&r, i, g);
				check_hpage(&r, h, "hugepage rewrite");
			}
			break;
		default:	/* rewrite a few pages */
			{
				uint32_t g = region_new_gen(&r);

				for (i = p; i < p + n && i < p + 8; i++)
					if (r.st[i] != PAGE_UNMAPPED)
						region_fill_page(&r, i, g);
				check_hpage(&r, h, "partial rewrite");
			}
			break;
		}
		add(C_OPS, 1);
	}
	for (size_t i = 0; i < r.npages; i++)
		if (r.st[i] == PAGE_UNMAPPED)
			add(C_ERRORS, 1);	/* every hole is remapped at once */
	check_region(&r, "end of run");
	check_thp_stat(&b);
	return 0;
}

/* PTE-map hugepages, then MADV_COLLAPSE them */
static int run_collapse(unsigned long idx)
{
	struct bounds b = bounds_start();
	struct region r;
	int e;

	worker_start("collapse", idx);
	e = region_init(&r, opt_region_mib, 0x3000 + idx);
	if (e < 0) {
		sys_error("mmap collapse region", -e);
		return 3;
	}
	b.max_hpages = r.size / HPAGE;
	while (!time_up()) {
		size_t h = rnd_below(r.size / HPAGE), base = h * PPH, n, i;
		size_t nh = 1 + rnd_below(2);
		uint32_t g;

		if (h + nh > r.size / HPAGE)
			nh = 1;
		flip_self_policy();
		/* split: zap a few pages, rewrite some others */
		n = 1 + rnd_below(16);
		for (i = 0; i < n; i++) {
			size_t p = base + rnd_below(PPH);

			if (madvise(r.base + p * PAGE, PAGE, MADV_DONTNEED) < 0)
				sys_error("madvise(MADV_DONTNEED)", errno);
			else
				region_set_state(&r, p, PAGE_ZERO);
		}
		g = region_new_gen(&r);
		for (i = 0; i < n; i++)
			region_fill_page(&r, base + rnd_below(PPH), g);
		add(C_SPLITS, 1);
		check_hpage(&r, h, "pre-collapse split");
		b.collapse_hpages += nh;
		if (madvise(r.base + base * PAGE, nh * HPAGE, MADV_COLLAPSE) == 0) {
			add(C_COLLAPSE_OK, 1);
		} else {
			/* EAGAIN/ENOMEM/EINVAL (policy never, THP disabled) are expected */
			if (errno != EAGAIN && errno != ENOMEM && errno != EINVAL)
				sys_error("madvise(MADV_COLLAPSE)", errno);
			add(C_COLLAPSE_FAIL, 1);
		}
		check_pages(&r, base, nh * PPH, "MADV_COLLAPSE");
		add(C_OPS, 1);
	}
	check_region(&r, "end of run");
	check_thp_stat(&b);
	return 0;
}

/* in a memcg smaller than the region: swap out and in all the time */
static int run_swap(unsigned long idx)
{
	struct bounds b = bounds_start();
	char path[4096], pid[32];
	struct region r;
	int e;

	worker_start("swap", idx);
	snprintf(path, sizeof(path), "%s/cgroup.procs", opt_memcg);
	snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	e = thp_write_file(path, pid);
	if (e < 0) {
		sys_error(path, -e);
		return 3;
	}
	e = region_init(&r, opt_swap_mib, 0x4000 + idx);
	if (e < 0) {
		sys_error("mmap swap region", -e);
		return 3;
	}
	b.max_hpages = r.size / HPAGE;
	while (!time_up()) {
		size_t h, nh = r.size / HPAGE, i;
		uint32_t g = region_new_gen(&r);

		flip_self_policy();
		/* rewrite a random quarter, hugepage by hugepage, then read it all */
		for (i = 0; i < nh / 4 + 1 && !time_up(); i++) {
			size_t p;

			h = rnd_below(nh);
			for (p = h * PPH; p < (h + 1) * PPH; p++)
				region_fill_page(&r, p, g);
			add(C_OPS, 1);
		}
		check_region(&r, "swap cycle");
		add(C_SWAP_PASSES, 1);
	}
	check_region(&r, "end of run");
	check_thp_stat(&b);
	return 0;
}

/* -------------------------------------------------------------- flippers */

static int read_word(const char *file, char *out, size_t size)
{
	char path[256], buf[256];
	int r;

	snprintf(path, sizeof(path), THP_SYSFS_DIR "/%s", file);
	r = thp_read_file(path, buf, sizeof(buf));
	if (r < 0)
		return r;
	if (strchr(buf, '['))
		return thp_parse_bracketed(buf, out, size);
	buf[strcspn(buf, "\n")] = '\0';
	if (strlen(buf) >= size)
		return -ENAMETOOLONG;
	memcpy(out, buf, strlen(buf) + 1);
	return 0;
}

static int write_knob(const char *file, const char *val)
{
	char path[256];

	snprintf(path, sizeof(path), THP_SYSFS_DIR "/%s", file);
	return thp_write_file(path, val);
}

/* write enabled or mode, keeping the longest write (a stop of khugepaged) */
static int write_mode_timed(const char *file, const char *val)
{
	uint64_t t0 = now_ms();
	int r = write_knob(file, val);

	note_max(C_MODE_WRITE_MAX_MS, now_ms() - t0);
	return r;
}

/*
 * After writing v to enabled/mode: do enabled, defrag and mode agree with
 * abi.md? Leaves the enabled word it read in en; false if it could not read.
 */
static bool check_mode_state(const char *file, const char *v, const char *defrag_before,
			     char *en, size_t en_size)
{
	static const char *const rfc_enabled[] = { "madvise", "always", "always" };
	static const char *const rfc_defrag[] = { "madvise", "madvise", "always" };
	char df[32], mode[32], want_mode[8];
	int r;

	if ((r = read_word("enabled", en, en_size)) < 0 ||
	    (r = read_word("defrag", df, sizeof(df))) < 0) {
		sys_error("reading enabled/defrag", -r);
		return false;
	}
	if (v[0] >= '0' && v[0] <= '2') {
		int n = v[0] - '0';

		if (strcmp(en, rfc_enabled[n]) || strcmp(df, rfc_defrag[n]))
			violation("wrote %s to %s: enabled=%s defrag=%s, want %s/%s", v, file,
				  en, df, rfc_enabled[n], rfc_defrag[n]);
	} else if (strcmp(en, v) || strcmp(df, defrag_before)) {
		violation("wrote %s to %s: enabled=%s defrag=%s, want %s/%s (defrag unchanged)",
			  v, file, en, df, v, defrag_before);
	}
	if (!have_mode_file)
		return true;
	if ((r = read_word("mode", mode, sizeof(mode))) < 0) {
		sys_error("reading mode", -r);
		return true;
	}
	snprintf(want_mode, sizeof(want_mode), "%s",
		 thp_rfc_mode(thp_enabled_from_name(en) < 0 ? THP_NEVER :
			      (enum thp_enabled)thp_enabled_from_name(en), df));
	if (strcmp(mode, want_mode))
		violation("wrote %s to %s: mode reads %s, want %s (enabled=%s defrag=%s)",
			  v, file, mode, want_mode, en, df);
	return true;
}

/*
 * Leaving "never" starts a new khugepaged thread, which scans from the head
 * of its list again (start_stop_khugepaged()); the workers' collapse bound
 * counts these restarts.
 */
static void count_khugepaged_start(const char *en, bool *was_never)
{
	if (*was_never && strcmp(en, "never"))
		add(C_KHUGEPAGED_STARTS, 1);
	*was_never = strcmp(en, "never") == 0;
}

static int run_mode_flipper(void)
{
	static const char *const words[] = { "always", "madvise", "never", "0", "1", "2" };
	static const char *const defrags[] = { "always", "defer", "defer+madvise", "madvise", "never" };
	char en0[32], df0[32];
	bool was_never;
	int r;

	worker_start("mode-flip", 0);
	if ((r = read_word("enabled", en0, sizeof(en0))) < 0 ||
	    (r = read_word("defrag", df0, sizeof(df0))) < 0) {
		sys_error("reading enabled/defrag", -r);
		return 3;
	}
	was_never = strcmp(en0, "never") == 0;
	while (!time_up()) {
		size_t nw = have_mode_file ? 6 : 3;
		const char *v, *file = "enabled";
		char df[32], en[32];

		if (rnd_below(6) == 0) {
			v = defrags[rnd_below(5)];
			if ((r = write_knob("defrag", v)) < 0)
				sys_error("writing defrag", -r);
			else
				add(C_MODE_FLIPS, 1);
		} else {
			v = words[rnd_below(nw)];
			/* mode takes what it shows: the numbers and never (v3) */
			if (have_mode_file && rnd_below(2) &&
			    ((v[0] >= '0' && v[0] <= '2') || strcmp(v, "never") == 0))
				file = "mode";
			if ((r = read_word("defrag", df, sizeof(df))) < 0) {
				sys_error("reading defrag", -r);
			} else if ((r = write_mode_timed(file, v)) < 0) {
				msg("writing '%s' to %s: %s", v, file, strerror(-r));
				add(C_ERRORS, 1);
			} else {
				add(C_MODE_FLIPS, 1);
				if (check_mode_state(file, v, df, en, sizeof(en)))
					count_khugepaged_start(en, &was_never);
			}
		}
		sleep_ms(1 + rnd_below(opt_flip_ms * 2));
	}
	/* words, not numbers: restores exactly what was there */
	if ((r = write_knob("enabled", en0)) < 0 || (r = write_knob("defrag", df0)) < 0)
		sys_error("restoring enabled/defrag", -r);
	return 0;
}

static int run_policy_flipper(void)
{
	static const char *const policies[] = { "default\n", "advise\n", "never\n" };

	worker_start("policy-flip", 0);
	while (!time_up()) {
		int n = __atomic_load_n(&sh->nworkers, __ATOMIC_ACQUIRE);
		char path[64];
		int r;

		if (n > 0) {
			pid_t pid = sh->worker[rnd_below((unsigned long)n)];
			uint64_t t0 = now_ms();

			snprintf(path, sizeof(path), "/proc/%d/thp_policy", (int)pid);
			r = thp_write_file(path, policies[rnd_below(3)]);
			note_max(C_POLICY_WRITE_MAX_MS, now_ms() - t0);
			if (r == 0)
				add(C_POLICY_FLIPS, 1);
			else if (r != -ENOENT && r != -ESRCH)	/* worker already gone */
				sys_error(path, -r);
		}
		sleep_ms(1 + rnd_below(opt_flip_ms * 2));
	}
	return 0;
}

/* ------------------------------------------------------------------ main */

static pid_t spawn(int (*fn)(unsigned long), unsigned long idx, bool is_worker)
{
	pid_t pid = fork();

	if (pid < 0) {
		sys_error("fork", errno);
		return -1;
	}
	if (pid == 0) {
		fflush(stdout);
		_exit(fn(idx));
	}
	if (is_worker && sh->nworkers < MAX_WORKERS) {
		sh->worker[sh->nworkers] = pid;
		__atomic_store_n(&sh->nworkers, sh->nworkers + 1, __ATOMIC_RELEASE);
	}
	return pid;
}

static int mode_flipper_fn(unsigned long idx)
{
	(void)idx;
	return run_mode_flipper();
}

static int policy_flipper_fn(unsigned long idx)
{
	(void)idx;
	return run_policy_flipper();
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: thp-stress [--seconds N] [--jobs N] [--region-mib N] [--swap-mib N]\n"
		"                  [--memcg DIR] [--flip-ms N] [--no-flip] [--seed N]\n"
		"                  [--worker-nice N] [--inject-corruption]\n");
}

static int parse_ulong(const char *s, unsigned long *out)
{
	char *end;

	errno = 0;
	*out = strtoul(s, &end, 10);
	return (errno || end == s || *end || s[0] == '-') ? -EINVAL : 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "jobs", required_argument, NULL, 'j' },
		{ "region-mib", required_argument, NULL, 'r' },
		{ "swap-mib", required_argument, NULL, 'w' },
		{ "memcg", required_argument, NULL, 'm' },
		{ "flip-ms", required_argument, NULL, 'f' },
		{ "no-flip", no_argument, NULL, 'n' },
		{ "seed", required_argument, NULL, 'S' },
		{ "worker-nice", required_argument, NULL, 'N' },
		{ "inject-corruption", no_argument, NULL, 'I' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	pid_t pids[MAX_WORKERS + 2];
	struct stat_set v0, v1;
	unsigned long seed = (unsigned long)time(NULL), j;
	int npids = 0, c, i, rc = 0, failed_procs = 0;
	struct timespec start, end;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		unsigned long *dst = NULL;

		switch (c) {
		case 's': dst = &opt_seconds; break;
		case 'j': dst = &opt_jobs; break;
		case 'r': dst = &opt_region_mib; break;
		case 'w': dst = &opt_swap_mib; break;
		case 'f': dst = &opt_flip_ms; break;
		case 'S': dst = &seed; break;
		case 'N': dst = &opt_worker_nice; break;
		case 'm': opt_memcg = optarg; break;
		case 'n': opt_flip = false; break;
		case 'I': opt_inject = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
		if (dst && parse_ulong(optarg, dst) < 0) {
			fprintf(stderr, "thp-stress: bad number '%s'\n", optarg);
			return 2;
		}
	}
	if (optind != argc || opt_jobs == 0 || opt_jobs > 8 || opt_region_mib == 0 ||
	    opt_swap_mib == 0 || opt_flip_ms == 0 || opt_worker_nice > 19) {
		usage(stderr);
		return 2;
	}
	opt_seed = seed;
	setvbuf(stdout, NULL, _IOLBF, 0);

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		perror("thp-stress: mmap");
		return 3;
	}
	memset(sh, 0, sizeof(*sh));

	have_mode_file = access(THP_SYSFS_DIR "/mode", F_OK) == 0;
	have_policy_proc = access("/proc/self/thp_policy", F_OK) == 0;
	errno = 0;
	have_policy_prctl = prctl(PR_GET_THP_MM_POLICY, 0, 0, 0, 0) >= 0;
	printf("seed=%lu\nseconds=%lu\nmode_file=%s\npolicy_prctl=%s\npolicy_procfs=%s\nmemcg=%s\n"
	       "worker_nice=%lu\n",
	       seed, opt_seconds, have_mode_file ? "yes" : "no",
	       have_policy_prctl ? "yes" : "no", have_policy_proc ? "yes" : "no",
	       opt_memcg ? opt_memcg : "none", opt_worker_nice);

	if (read_counters("/proc/vmstat", "thp_", &v0) < 0) {
		perror("thp-stress: /proc/vmstat");
		return 3;
	}
	clock_gettime(CLOCK_MONOTONIC, &start);
	deadline = start;
	deadline.tv_sec += (time_t)opt_seconds;

	for (j = 0; j < opt_jobs; j++) {
		pids[npids++] = spawn(run_cow, j, true);
		pids[npids++] = spawn(run_split, j, true);
		pids[npids++] = spawn(run_collapse, j, true);
		if (opt_memcg)
			pids[npids++] = spawn(run_swap, j, true);
	}
	if (opt_flip) {
		pids[npids++] = spawn(mode_flipper_fn, 0, false);
		if (have_policy_proc)
			pids[npids++] = spawn(policy_flipper_fn, 0, false);
	}
	for (i = 0; i < npids; i++) {
		int status;

		if (pids[i] < 0) {
			failed_procs++;
			continue;
		}
		while (waitpid(pids[i], &status, 0) < 0 && errno == EINTR)
			;
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			fprintf(stderr, "thp-stress: process %d %s %d\n", (int)pids[i],
				WIFEXITED(status) ? "exited with" : "killed by signal",
				WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
			failed_procs++;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &end);

	if (read_counters("/proc/vmstat", "thp_", &v1) < 0) {
		perror("thp-stress: /proc/vmstat");
		return 3;
	}
	for (i = 0; i < v1.n; i++) {
		uint64_t before;

		if (!stats_get(&v0, v1.name[i], &before))
			continue;
		if (v1.val[i] < before)
			violation("/proc/vmstat %s went backwards: %" PRIu64 " -> %" PRIu64,
				  v1.name[i], before, v1.val[i]);
		else
			printf("vmstat.%s=%" PRIu64 "\n", v1.name[i], v1.val[i] - before);
	}
	{
		uint64_t fb0 = 0, fb1 = 0, fbc0 = 0, fbc1 = 0;

		if (stats_get(&v0, "thp_fault_fallback", &fb0) &&
		    stats_get(&v1, "thp_fault_fallback", &fb1) &&
		    stats_get(&v0, "thp_fault_fallback_charge", &fbc0) &&
		    stats_get(&v1, "thp_fault_fallback_charge", &fbc1) &&
		    fbc1 - fbc0 > fb1 - fb0)
			violation("/proc/vmstat: thp_fault_fallback_charge grew by %" PRIu64
				  ", more than thp_fault_fallback (%" PRIu64 ")",
				  fbc1 - fbc0, fb1 - fb0);
	}

	printf("workers=%d\nelapsed_s=%.1f\n", sh->nworkers,
	       (double)(end.tv_sec - start.tv_sec) + (end.tv_nsec - start.tv_nsec) / 1e9);
	for (i = 0; i < C_NR; i++)
		printf("%s=%" PRIu64 "\n", counter_name[i], sh->c[i]);
	printf("failed_processes=%d\n", failed_procs);
	printf("thp-stress: %lu s, %" PRIu64 " operations, %" PRIu64 " bytes verified, %"
	       PRIu64 " corrupted bytes, %" PRIu64 " violations, %" PRIu64 " errors\n",
	       opt_seconds, sh->c[C_OPS], sh->c[C_BYTES], sh->c[C_CORRUPT],
	       sh->c[C_VIOLATIONS], sh->c[C_ERRORS]);
	if (sh->c[C_CORRUPT] || sh->c[C_VIOLATIONS])
		rc = 1;
	else if (sh->c[C_ERRORS] || failed_procs)
		rc = 3;
	return rc;
}
