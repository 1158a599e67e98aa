// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * thpd's collapse: the event sources, the passes and the bookkeeping.
 *
 * Idle (no debt) it costs nothing: the debt counters are read on the
 * watchdog's tick (tick.c). Owed, a timer reads /proc/buddyinfo every
 * WatchIntervalSec until there are more free order-9 blocks than the
 * reserve; then a pass runs, in time slices of SLICE_USEC between which
 * the event loop serves everything else:
 *
 *   scan      every process in scope (Processes=all, or those a [Rule]
 *             names): its smaps through the engine (lib/thp-collapse.h,
 *             the kernel's own eligibility), kept when it has small pages
 *             in eligible VMAs; then ranked, biggest gain first
 *   collapse  up to BATCH_RANGES contiguous PMD ranges a call, each
 *             process in turn; before each call the free blocks, before
 *             each slice the step-down state, PSI and the budget
 *             (collapse-budget.c)
 *
 * A pass ends paid (everything tried) or owed: free blocks down to the
 * reserve, MADV_COLLAPSE's ENOMEM or EAGAIN (a failed allocation), PSI's
 * "some" stall growing, a step-down. An owed pass is tried again on the
 * next watch tick. Each process collapsed is one journal entry.
 */
#include "collapse.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collapse-budget.h"
#include "log.h"
#include "procinfo.h"
#include "rules.h"
#include "thp-collapse.h"

/* work between two returns to the event loop */
#define SLICE_USEC 20000
/* PMD ranges a MADV_COLLAPSE call: 16 MiB, a few ms on a real CPU */
#define BATCH_RANGES 8

enum fail_kind { FAIL_NOMEM, FAIL_AGAIN, FAIL_BUSY, FAIL_INVALID, FAIL_OTHER, FAIL_N };
static const char *const fail_names[FAIL_N] = { "nomem", "again", "busy", "invalid", "other" };

/* a process the scan kept */
struct pass_proc {
	struct thp_collapse_plan plan;
	char comm[32];
	char rule[64];		/* the [Rule] that named it, "" with Processes=all */
};

struct thpd_collapse {
	int unusable;			/* 0, or why collapse cannot run here (logged once) */
	int unusable_logged;
	unsigned long pmd_size;
	struct thp_collapse_limits limits;
	struct thpd_debt debt;
	struct thpd_budget budget;
	sd_event_source *watch_src, *step_src;

	/* the pass in progress */
	bool scanning;
	pid_t *pids;
	size_t n_pids, next_pid;
	struct pass_proc *procs;
	size_t n_procs, cap_procs;
	struct thp_collapse_rank *order;
	size_t cur;
	struct thp_collapse_cursor cursor;
	bool cursor_open;
	bool have_psi;
	uint64_t psi_total;
	uint64_t pass_start, pass_cpu, pass_bytes;
	unsigned int pass_procs;
	/* the process being collapsed */
	uint64_t proc_start, proc_cpu;
	unsigned long proc_ranges, proc_failed;
	int proc_err;

	/* since thpd started */
	unsigned long passes, processes, hugepages, ranges;
	uint64_t bytes, cpu_usec;
	unsigned long failures[FAIL_N];
	char last[320];
};

static uint64_t now_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* thpd's own CPU time: process_madvise's collapse runs in thpd and counts here */
static uint64_t cpu_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static bool stepped_down(const struct thpd *d)
{
	return d->machine.adaptive.state == THPD_ASTATE_STEPPED_DOWN;
}

static bool usable(const struct thpd *d)
{
	return d->collapse && d->cfg.collapse.enabled && !d->collapse->unusable &&
	       d->collapse->watch_src;
}

static void arm(sd_event_source *s, uint64_t usec)
{
	if (!s)
		return;
	sd_event_source_set_time_relative(s, usec);
	sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
}

/* the sum of the counters whose growth means small pages where hugepages could be */
static int debt_counters(uint64_t *sum)
{
	static const char *const names[] = {
		"thp_fault_fallback", "thp_split_pmd", "thp_collapse_alloc_failed",
	};
	char *buf = malloc(65536);
	int r;

	if (!buf)
		return -ENOMEM;
	r = thp_read_file("/proc/vmstat", buf, 65536);
	*sum = 0;
	for (size_t i = 0; r >= 0 && i < sizeof(names) / sizeof(names[0]); i++) {
		uint64_t v;

		/* "\nname value": never a longer name that starts with this one */
		if (thp_kv_get(buf, names[i], &v) == 0)
			*sum += v;
	}
	free(buf);
	return r < 0 ? r : 0;
}

/* PSI's "some" stall total of memory, false where the kernel has no PSI */
static bool psi_some(uint64_t *total)
{
	char buf[512];

	return thp_read_file("/proc/pressure/memory", buf, sizeof(buf)) > 0 &&
	       thpd_psi_some_total(buf, total) == 0;
}

static long reserve(const struct thpd *d)
{
	return d->cfg.collapse.reserve_blocks;
}

static long free_blocks(void)
{
	long b = thp_buddyinfo_free_blocks(9);

	return b < 0 ? 0 : b;
}

/* ---- one process ---- */

static enum fail_kind fail_kind(int err)
{
	switch (err) {
	case -ENOMEM:
		return FAIL_NOMEM;
	case -EAGAIN:
		return FAIL_AGAIN;
	case -EBUSY:
		return FAIL_BUSY;
	case -EINVAL:
		return FAIL_INVALID;
	default:
		return FAIL_OTHER;
	}
}

static void size_text(uint64_t bytes, char *buf, size_t size)
{
	if (bytes >= 10ULL << 20)
		snprintf(buf, size, "%" PRIu64 " MiB", bytes >> 20);
	else
		snprintf(buf, size, "%" PRIu64 " KiB", bytes >> 10);
}

/* the current process is done (or stopped): what it gained, in the journal */
static void proc_end(struct thpd *d, int err)
{
	struct thpd_collapse *c = d->collapse;
	struct pass_proc *p = &c->procs[c->order[c->cur].index];
	uint64_t before = 0, total, spans_after = 0, gained = 0, hugepages;
	char pid[32], bytes[48], huge[48], ranges[48], failed[48], cpu[48], what[32];
	char rule[80] = "";
	int r;

	if (c->cursor_open)
		thp_collapse_cursor_close(&c->cursor);
	c->cursor_open = false;
	if (c->proc_ranges) {
		for (size_t i = 0; i < p->plan.n_spans; i++)
			before += p->plan.spans[i].huge_kib;
		r = err == -ESRCH ? err : thp_collapse_plan_huge_now(&p->plan, &total, &spans_after);
		if (r == 0 && spans_after > before)
			gained = (spans_after - before) * 1024;
		hugepages = gained / c->pmd_size;
		c->processes++;
		c->pass_procs++;
		c->hugepages += hugepages;
		c->bytes += gained;
		c->pass_bytes += gained;
		snprintf(pid, sizeof(pid), "COLLAPSE_PID=%d", (int)p->plan.pid);
		snprintf(bytes, sizeof(bytes), "COLLAPSE_BYTES=%" PRIu64, gained);
		snprintf(huge, sizeof(huge), "COLLAPSE_HUGEPAGES=%" PRIu64, hugepages);
		snprintf(ranges, sizeof(ranges), "COLLAPSE_RANGES=%lu", c->proc_ranges);
		snprintf(failed, sizeof(failed), "COLLAPSE_FAILED=%lu", c->proc_failed);
		snprintf(cpu, sizeof(cpu), "COLLAPSE_CPU_USEC=%" PRIu64, c->proc_cpu);
		if (p->rule[0])
			snprintf(rule, sizeof(rule), ", [Rule %s]", p->rule);
		size_text(gained, what, sizeof(what));
		thpd_logf(LOG_INFO, &(const struct thpd_log_fields){
				.event = "collapse", .reason = p->rule[0] ? p->rule : NULL,
				.extra = (const char *const[]){ pid, bytes, huge, ranges, failed, cpu,
								 NULL } },
			  "Collapsed %s of PID %d (%s%s) into %" PRIu64
			  " hugepages: %lu ranges tried, %lu calls failed%s%s; %" PRIu64 " ms, CPU %" PRIu64
			  " ms%s",
			  what, (int)p->plan.pid, p->comm, rule, hugepages, c->proc_ranges,
			  c->proc_failed, c->proc_err ? " (last: " : "",
			  c->proc_err ? strerror(-c->proc_err) : "", (now_usec() - c->proc_start) / 1000,
			  c->proc_cpu / 1000,
			  c->proc_err ? ")" : r < 0 ? "; the process is gone" : "");
	}
	thp_collapse_plan_free(&p->plan);
	c->proc_ranges = c->proc_failed = 0;
	c->proc_cpu = 0;
	c->proc_err = 0;
	c->cur++;
}

/* ---- a pass ---- */

static void pass_free(struct thpd_collapse *c)
{
	if (c->cursor_open)
		thp_collapse_cursor_close(&c->cursor);
	c->cursor_open = false;
	for (size_t i = 0; i < c->n_procs; i++)
		thp_collapse_plan_free(&c->procs[i].plan);
	free(c->procs);
	free(c->pids);
	free(c->order);
	c->procs = NULL;
	c->pids = NULL;
	c->order = NULL;
	c->n_procs = c->cap_procs = c->n_pids = c->next_pid = c->cur = 0;
	c->scanning = false;
}

static void pass_end(struct thpd *d, bool paid, const char *why)
{
	struct thpd_collapse *c = d->collapse;
	char what[32];

	/* a process stopped half-way still says what it gained */
	if (!c->scanning && c->cur < c->n_procs && c->proc_ranges)
		proc_end(d, 0);
	pass_free(c);
	thpd_debt_pass_end(&c->debt, paid, now_usec());
	c->passes++;
	size_text(c->pass_bytes, what, sizeof(what));
	snprintf(c->last, sizeof(c->last), "%s in %u process%s, %" PRIu64 " ms, CPU %" PRIu64 " ms: %s",
		 what, c->pass_procs, c->pass_procs == 1 ? "" : "es",
		 (now_usec() - c->pass_start) / 1000, c->pass_cpu / 1000, why);
	thpd_logf(paid && !c->pass_procs ? LOG_DEBUG : LOG_INFO,
		  &(const struct thpd_log_fields){ .event = "collapse-pass", .reason = why },
		  "Collapse pass %s: %s", paid ? "done" : "stopped", c->last);
	if (!paid && !stepped_down(d))
		arm(c->watch_src, d->cfg.collapse.watch_usec);
}

/* the numeric entries of /proc but thpd */
static int list_pids(struct thpd_collapse *c)
{
	char path[PATH_MAX];
	struct dirent *de;
	size_t cap = 0;
	DIR *dir;
	int r = thp_path(path, sizeof(path), "/proc");

	if (r < 0)
		return r;
	dir = opendir(path);
	if (!dir)
		return -errno;
	while ((de = readdir(dir))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0 || pid == (long)getpid())
			continue;
		if (c->n_pids == cap) {
			pid_t *n = realloc(c->pids, (cap ? 2 * cap : 256) * sizeof(*n));

			if (!n) {
				closedir(dir);
				return -ENOMEM;
			}
			c->pids = n;
			cap = cap ? 2 * cap : 256;
		}
		c->pids[c->n_pids++] = (pid_t)pid;
	}
	closedir(dir);
	return 0;
}

static void pass_begin(struct thpd *d)
{
	struct thpd_collapse *c = d->collapse;
	uint64_t sum = 0;
	int r;

	r = list_pids(c);
	if (r < 0) {
		log_err("Cannot list the processes under %s/proc: %s; no collapse pass", thp_root(),
			strerror(-r));
		pass_free(c);
		arm(c->watch_src, d->cfg.collapse.watch_usec);
		return;
	}
	debt_counters(&sum);
	thpd_debt_pass_begin(&c->debt, sum, now_usec());
	c->have_psi = psi_some(&c->psi_total);
	c->scanning = true;
	c->pass_start = now_usec();
	c->pass_cpu = c->pass_bytes = 0;
	c->pass_procs = 0;
	log_debug("Collapse pass: %zu processes to look at (%s)", c->n_pids, c->debt.reason);
	arm(c->step_src, 0);
}

/* is pid in scope, and does it have small pages in eligible VMAs? kept in c->procs */
static void scan_one(struct thpd *d, pid_t pid)
{
	struct thpd_collapse *c = d->collapse;
	const struct thpd_rule *rule = NULL;
	struct thpd_proc_buf buf;
	struct thpd_proc_info info;
	struct pass_proc *p;

	if (thpd_proc_info_read(pid, &buf, &info) < 0)
		return;	/* gone */
	if (!d->cfg.collapse.all) {
		rule = thpd_rules_match(&d->cfg, &info);
		if (!rule)
			return;
	}
	if (c->n_procs == c->cap_procs) {
		size_t cap = c->cap_procs ? 2 * c->cap_procs : 16;
		struct pass_proc *n = realloc(c->procs, cap * sizeof(*n));

		if (!n)
			return;
		c->procs = n;
		c->cap_procs = cap;
	}
	p = &c->procs[c->n_procs];
	/* not allowed (another user's process without CAP_SYS_PTRACE), a kernel thread, gone */
	if (thp_collapse_plan_read(pid, THP_SCOPE_KERNEL, c->pmd_size, &p->plan) < 0)
		return;
	if (!p->plan.small_bytes) {
		thp_collapse_plan_free(&p->plan);
		return;
	}
	snprintf(p->comm, sizeof(p->comm), "%s", info.comm ? info.comm : "?");
	snprintf(p->rule, sizeof(p->rule), "%s", rule ? rule->name : "");
	c->n_procs++;
}

/* the scan is done: rank what it kept */
static bool scan_done(struct thpd *d)
{
	struct thpd_collapse *c = d->collapse;

	if (!c->n_procs) {
		pass_end(d, true, "nothing to collapse");
		return false;
	}
	c->order = calloc(c->n_procs, sizeof(*c->order));
	if (!c->order) {
		pass_end(d, false, "out of memory");
		return false;
	}
	for (size_t i = 0; i < c->n_procs; i++)
		c->order[i] = (struct thp_collapse_rank){
			.index = i, .pid = c->procs[i].plan.pid,
			.small_bytes = c->procs[i].plan.small_bytes,
			.start_time = c->procs[i].plan.start_time,
		};
	thp_collapse_rank_sort(c->order, c->n_procs);
	c->scanning = false;
	c->cur = 0;
	return true;
}

/* one slice of the scan; false when the pass ended */
static bool scan_slice(struct thpd *d, uint64_t t0)
{
	struct thpd_collapse *c = d->collapse;

	while (c->next_pid < c->n_pids && now_usec() - t0 < SLICE_USEC)
		scan_one(d, c->pids[c->next_pid++]);
	if (c->next_pid < c->n_pids)
		return true;
	return scan_done(d);
}

/* one slice of collapsing; the bytes tried into *bytes; false when the pass ended */
static bool collapse_slice(struct thpd *d, uint64_t t0, uint64_t *bytes)
{
	struct thpd_collapse *c = d->collapse;
	struct thp_collapse_step step;
	uint64_t cpu0;
	char why[160];
	long spare;
	int r;

	while (now_usec() - t0 < SLICE_USEC) {
		struct pass_proc *p;

		if (c->cur >= c->n_procs) {
			pass_end(d, true, "everything tried");
			return false;
		}
		p = &c->procs[c->order[c->cur].index];
		if (!c->cursor_open) {
			r = thp_collapse_cursor_open(&c->cursor, &p->plan, &c->limits);
			if (r < 0) {
				proc_end(d, r);
				continue;
			}
			c->cursor_open = true;
			c->proc_start = now_usec();
		}
		/* each range takes a block: leave the reserve to faults */
		spare = free_blocks() - reserve(d);
		if (spare <= 0) {
			snprintf(why, sizeof(why), "free hugepage blocks down to the reserve (%ld)",
				 reserve(d));
			pass_end(d, false, why);
			return false;
		}
		cpu0 = cpu_usec();
		r = thp_collapse_next(&c->cursor, spare < BATCH_RANGES ? (unsigned int)spare :
					  BATCH_RANGES, &step);
		c->proc_cpu += cpu_usec() - cpu0;
		if (r == 0)
			continue;
		if (r < 0) {
			/* -ENODATA: done; -ESRCH: gone; -EPERM: not ours to touch */
			proc_end(d, r == -ENODATA ? 0 : r);
			continue;
		}
		*bytes += step.nr * c->pmd_size;
		c->proc_ranges += step.nr;
		c->ranges += step.nr;
		if (!step.err)
			continue;
		c->proc_failed++;
		c->proc_err = step.err;
		c->failures[fail_kind(step.err)]++;
		if (step.err == -ENOMEM || step.err == -EAGAIN) {
			snprintf(why, sizeof(why), "a hugepage allocation failed (%s from %#lx in PID %d)",
				 step.err == -ENOMEM ? "ENOMEM" : "EAGAIN", step.addr, (int)p->plan.pid);
			pass_end(d, false, why);
			return false;
		}
		/* its memory cgroup is full: the next process */
		if (step.err == -EBUSY)
			proc_end(d, step.err);
	}
	return true;
}

static int on_step(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct thpd *d = userdata;
	struct thpd_collapse *c = d->collapse;
	uint64_t now = now_usec(), wait, cpu0, spent, bytes = 0, psi;
	char why[160];
	bool going;

	(void)s;
	(void)usec;
	if (stepped_down(d)) {
		pass_end(d, false, "stepped down");
		return 0;
	}
	/*
	 * The first sign of pressure: a task stalled on memory since the last
	 * slice, thpd too (a collapse that had to reclaim or compact)
	 */
	if (c->have_psi && psi_some(&psi)) {
		if (psi > c->psi_total) {
			snprintf(why, sizeof(why), "memory pressure (PSI some stall +%" PRIu64 " us)",
				 psi - c->psi_total);
			pass_end(d, false, why);
			return 0;
		}
		c->psi_total = psi;
	}
	wait = thpd_budget_wait(&c->budget, &d->cfg.collapse, now);
	if (wait) {
		arm(c->step_src, wait);
		return 0;
	}
	cpu0 = cpu_usec();
	going = c->scanning ? scan_slice(d, now) : collapse_slice(d, now, &bytes);
	spent = cpu_usec() - cpu0;
	thpd_budget_charge(&c->budget, bytes, spent);
	c->cpu_usec += spent;
	c->pass_cpu += spent;
	if (going)
		arm(c->step_src, 0);
	return 0;
}

/* ---- watching for free blocks ---- */

static int on_watch(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct thpd *d = userdata;
	struct thpd_collapse *c = d->collapse;
	long blocks = free_blocks();

	(void)s;
	(void)usec;
	switch (thpd_debt_watch(&c->debt, &d->cfg.collapse, blocks, reserve(d), stepped_down(d),
				now_usec())) {
	case THPD_WATCH_PASS:
		pass_begin(d);
		break;
	case THPD_WATCH_FORGIVE:
		log_debug("No collapse pass for %" PRIu64 " s (free hugepage blocks: %ld, reserve %ld); not watching until more fall back",
			  d->cfg.collapse.watch_timeout_usec / 1000000, blocks, reserve(d));
		break;
	case THPD_WATCH_WAIT:
		/* while stepped down the step-up looks again */
		if (c->debt.state == THPD_DEBT_OWED && !stepped_down(d))
			arm(c->watch_src, d->cfg.collapse.watch_usec);
		break;
	}
	return 0;
}

static void owe(struct thpd *d, const char *reason, uint64_t delay)
{
	struct thpd_collapse *c = d->collapse;

	thpd_debt_raise(&c->debt, reason, now_usec());
	if (c->debt.state == THPD_DEBT_OWED)
		arm(c->watch_src, delay);
}

void thpd_collapse_tick(struct thpd *d)
{
	struct thpd_collapse *c = d->collapse;
	uint64_t sum;

	if (!usable(d) || debt_counters(&sum) < 0)
		return;
	if (thpd_debt_counters(&c->debt, sum, now_usec())) {
		log_debug("Owing a collapse pass: %s", c->debt.reason);
		arm(c->watch_src, 0);
	}
}

void thpd_collapse_step_up(struct thpd *d)
{
	if (usable(d))
		owe(d, "stepped up", 0);
}

/* ---- configuration ---- */

bool thpd_collapse_wanted(const char *path, bool must_exist)
{
	struct thpd_config *cfg = malloc(sizeof(*cfg));
	struct thpd_diag silent = { 0 };
	bool want;

	if (!cfg)
		return false;
	want = thpd_config_load(cfg, path, must_exist, &silent) == 0 && cfg->collapse.enabled;
	free(cfg);
	return want;
}

static void say_unusable(struct thpd *d, int r)
{
	struct thpd_collapse *c = d->collapse;

	if (c->unusable_logged == r)
		return;
	c->unusable_logged = r;
	if (r == -EOPNOTSUPP)
		log_warn("[Collapse] is on, but this kernel's process_madvise() does not take MADV_COLLAPSE (Linux 6.1 or later); nothing will be collapsed");
	else if (r == -EPERM)
		log_warn("[Collapse] is on, but thpd does not have CAP_SYS_NICE (dropped at start when [Collapse] was off): restart thpd to collapse");
	else
		log_warn("[Collapse] is on, but process_madvise(MADV_COLLAPSE) fails: %s; nothing will be collapsed",
			 strerror(-r));
}

int thpd_collapse_open(struct thpd *d)
{
	const struct thpd_collapse_config *cfg = &d->cfg.collapse;
	struct thpd_collapse *c = d->collapse;
	int r;

	if (!cfg->enabled)
		return 0;
	if (!c) {
		c = d->collapse = calloc(1, sizeof(*c));
		if (!c) {
			log_err("Cannot set up collapse: %s", strerror(ENOMEM));
			return -ENOMEM;
		}
		thpd_debt_init(&c->debt);
		thpd_budget_reset(&c->budget, cfg, now_usec());
	}
	c->unusable = thp_collapse_probe();
	if (c->unusable) {
		say_unusable(d, c->unusable);
		return c->unusable;
	}
	c->pmd_size = thp_collapse_pmd_size();
	thp_collapse_read_limits(&c->limits);
	r = sd_event_add_time(d->event, &c->watch_src, CLOCK_MONOTONIC, 0, 1000, on_watch, d);
	if (r >= 0)
		r = sd_event_add_time(d->event, &c->step_src, CLOCK_MONOTONIC, 0, 1, on_step, d);
	if (r < 0) {
		log_err("Cannot set up the collapse timers: %s; collapse is off", strerror(-r));
		thpd_collapse_close(d);
		return r;
	}
	sd_event_source_set_enabled(c->watch_src, SD_EVENT_OFF);
	sd_event_source_set_enabled(c->step_src, SD_EVENT_OFF);
	/* everything else first: the socket, pressure, exec events */
	sd_event_source_set_priority(c->step_src, SD_EVENT_PRIORITY_IDLE);
	log_info("Collapse on: %s, at most %" PRIu64 " MiB/s and %" PRIu32
		 "%% of a CPU, free blocks watched every %" PRIu64 " ms while owed, %ld kept free",
		 cfg->all ? "all processes" : "the processes rules name", cfg->max_rate_mib,
		 cfg->cpu_percent, cfg->watch_usec / 1000, cfg->reserve_blocks);
	/* what is small now may be collapsible already: look once the start has settled */
	owe(d, "started", cfg->watch_usec);
	return 0;
}

void thpd_collapse_close(struct thpd *d)
{
	struct thpd_collapse *c = d->collapse;

	if (!c)
		return;
	if (c->debt.state == THPD_DEBT_PASS)
		pass_end(d, false, "reconfigured");
	pass_free(c);
	c->watch_src = sd_event_source_disable_unref(c->watch_src);
	c->step_src = sd_event_source_disable_unref(c->step_src);
}

void thpd_collapse_free(struct thpd *d)
{
	thpd_collapse_close(d);
	free(d->collapse);
	d->collapse = NULL;
}

void thpd_collapse_status(struct thpd *d, struct json_object *o)
{
	struct thpd_collapse *c = d->collapse;
	struct json_object *j = json_object_new_object(), *f = json_object_new_object();
	unsigned long failures = 0;
	const char *state;

	if (!j || !f) {
		json_object_put(j);
		json_object_put(f);
		return;
	}
	state = !d->cfg.collapse.enabled ? "off" :
		!c || c->unusable ? "unavailable" :
		stepped_down(d) && c->debt.state == THPD_DEBT_OWED ? "owed, stepped down" :
		thpd_debt_state_name(c->debt.state);
	json_object_object_add(j, "enabled", json_object_new_boolean(d->cfg.collapse.enabled));
	json_object_object_add(j, "processes",
			       json_object_new_string(d->cfg.collapse.all ? "all" : "rules"));
	json_object_object_add(j, "state", json_object_new_string(state));
	json_object_object_add(j, "reason", c && c->debt.reason[0] ?
				       json_object_new_string(c->debt.reason) : NULL);
	json_object_object_add(j, "passes", json_object_new_int64(c ? (int64_t)c->passes : 0));
	json_object_object_add(j, "processes_collapsed",
			       json_object_new_int64(c ? (int64_t)c->processes : 0));
	json_object_object_add(j, "hugepages", json_object_new_int64(c ? (int64_t)c->hugepages : 0));
	json_object_object_add(j, "bytes", json_object_new_int64(c ? (int64_t)c->bytes : 0));
	json_object_object_add(j, "ranges", json_object_new_int64(c ? (int64_t)c->ranges : 0));
	for (int i = 0; i < FAIL_N; i++) {
		failures += c ? c->failures[i] : 0;
		json_object_object_add(f, fail_names[i],
				       json_object_new_int64(c ? (int64_t)c->failures[i] : 0));
	}
	json_object_object_add(j, "failures", json_object_new_int64((int64_t)failures));
	json_object_object_add(j, "failures_by", f);
	json_object_object_add(j, "cpu_usec", json_object_new_int64(c ? (int64_t)c->cpu_usec : 0));
	json_object_object_add(j, "last_pass", c && c->last[0] ? json_object_new_string(c->last) :
								  NULL);
	json_object_object_add(o, "collapse", j);
}
