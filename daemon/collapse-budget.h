/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * thpd's collapse, the pure part: when it owes the host a collapse pass
 * (the debt), and how much it may do (the budget). The event loop
 * (collapse.c) feeds them samples with the current time (usec,
 * CLOCK_MONOTONIC) and acts on what they return.
 *
 *   none --(thp_fault_fallback + thp_split_pmd + thp_collapse_alloc_failed
 *           grew; thpd's own step-up; a rule's process started; start)--> owed
 *   owed --(a watch tick sees more free order-9 blocks than the reserve,
 *           not stepped down)--> pass
 *   pass --(everything tried)--> none
 *   pass --(blocks down to the reserve, a failed allocation, pressure,
 *           a step-down)--> owed
 *   owed --(WatchTimeoutSec without a pass)--> none (forgiven)
 *
 * Only "owed" costs wakeups (a buddyinfo read every WatchIntervalSec);
 * the counters are read on the watchdog's tick, which happens anyway.
 *
 * The budget is two token buckets that hold at most one second's worth:
 * bytes at MaxRateMiB per second, CPU time at CPUQuota of one CPU
 * (process_madvise runs in thpd, so thpd's own CPU time is what a
 * collapse costs). Work may start while both hold a token; what it cost
 * is charged after, so a bucket can go below zero and the wait pays it
 * back: over any span T, at most rate x T + one second's worth + one step.
 * More than an hour's worth below zero is forgiven.
 */
#ifndef THPD_COLLAPSE_BUDGET_H
#define THPD_COLLAPSE_BUDGET_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"

enum thpd_debt_state { THPD_DEBT_NONE, THPD_DEBT_OWED, THPD_DEBT_PASS };

struct thpd_debt {
	enum thpd_debt_state state;
	bool have_counters;
	uint64_t counters;	/* the sum at the last sample or pass start */
	uint64_t since;		/* owed since (or since the last pass) */
	unsigned long times;	/* how often a debt began */
	char reason[160];	/* why the last one began */
};

enum thpd_watch { THPD_WATCH_WAIT, THPD_WATCH_PASS, THPD_WATCH_FORGIVE };

void thpd_debt_init(struct thpd_debt *d);
const char *thpd_debt_state_name(enum thpd_debt_state s);
/*
 * The slow tick's sample of the debt counters' sum. The first sample only
 * sets the baseline. true when a debt began now (reason says how much the
 * counters grew).
 */
bool thpd_debt_counters(struct thpd_debt *d, uint64_t sum, uint64_t now);
/* something made memory eligible or will want hugepages: owe a pass */
void thpd_debt_raise(struct thpd_debt *d, const char *reason, uint64_t now);
/* a watch tick: free order-9 blocks now, the reserve, stepped down or not */
enum thpd_watch thpd_debt_watch(struct thpd_debt *d, const struct thpd_collapse_config *cfg,
				long free_blocks, long reserve, bool stepped_down, uint64_t now);
/* a pass starts with the counters at sum: what grows later is a new debt */
void thpd_debt_pass_begin(struct thpd_debt *d, uint64_t sum, uint64_t now);
/* it ended: paid (everything tried) or still owed */
void thpd_debt_pass_end(struct thpd_debt *d, bool paid, uint64_t now);

struct thpd_budget {
	int64_t bytes;		/* tokens; below zero: owed */
	int64_t cpu_usec;
	uint64_t at;		/* last refill */
};

/* both buckets full */
void thpd_budget_reset(struct thpd_budget *b, const struct thpd_collapse_config *cfg, uint64_t now);
/* refill up to now; then the usec to wait until both hold a token (0: go) */
uint64_t thpd_budget_wait(struct thpd_budget *b, const struct thpd_collapse_config *cfg,
			  uint64_t now);
/* what a step cost */
void thpd_budget_charge(struct thpd_budget *b, uint64_t bytes, uint64_t cpu_usec);

/*
 * "some avg10=0.00 avg60=0.00 avg300=0.00 total=N" of /proc/pressure/memory:
 * N, the microseconds some task stalled on memory. 0 or -EBADMSG.
 */
int thpd_psi_some_total(const char *text, uint64_t *total);

#endif
