// SPDX-License-Identifier: GPL-2.0-or-later
/* thpd's collapse debt and budget, pure. See collapse-budget.h. */
#include "collapse-budget.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define USEC_PER_SEC 1000000ULL

void thpd_debt_init(struct thpd_debt *d)
{
	memset(d, 0, sizeof(*d));
	d->state = THPD_DEBT_NONE;
}

const char *thpd_debt_state_name(enum thpd_debt_state s)
{
	switch (s) {
	case THPD_DEBT_OWED:
		return "owed";
	case THPD_DEBT_PASS:
		return "collapsing";
	default:
		return "idle";
	}
}

void thpd_debt_raise(struct thpd_debt *d, const char *reason, uint64_t now)
{
	snprintf(d->reason, sizeof(d->reason), "%s", reason);
	if (d->state == THPD_DEBT_PASS)
		return;	/* the pass in progress sees it, or the next tick does */
	if (d->state == THPD_DEBT_NONE)
		d->times++;
	d->state = THPD_DEBT_OWED;
	d->since = now;
}

bool thpd_debt_counters(struct thpd_debt *d, uint64_t sum, uint64_t now)
{
	char reason[160];
	uint64_t before = d->counters;
	bool grew = d->have_counters && sum > before;

	d->counters = sum;
	d->have_counters = true;
	/* a pass in progress keeps its baseline: growth after it began is a new debt */
	if (!grew || d->state != THPD_DEBT_NONE)
		return false;
	snprintf(reason, sizeof(reason),
		 "%" PRIu64 " hugepage faults fell back, PMDs were split or collapses failed to allocate",
		 sum - before);
	thpd_debt_raise(d, reason, now);
	return true;
}

enum thpd_watch thpd_debt_watch(struct thpd_debt *d, const struct thpd_collapse_config *cfg,
				long free_blocks, long reserve, bool stepped_down, uint64_t now)
{
	if (d->state != THPD_DEBT_OWED)
		return THPD_WATCH_WAIT;
	if (!stepped_down && free_blocks > reserve)
		return THPD_WATCH_PASS;
	if (now - d->since >= cfg->watch_timeout_usec) {
		d->state = THPD_DEBT_NONE;
		return THPD_WATCH_FORGIVE;
	}
	return THPD_WATCH_WAIT;
}

void thpd_debt_pass_begin(struct thpd_debt *d, uint64_t sum, uint64_t now)
{
	d->state = THPD_DEBT_PASS;
	d->counters = sum;
	d->have_counters = true;
	d->since = now;
}

void thpd_debt_pass_end(struct thpd_debt *d, bool paid, uint64_t now)
{
	d->state = paid ? THPD_DEBT_NONE : THPD_DEBT_OWED;
	d->since = now;
}

/* ---- budget ---- */

static int64_t rate_bytes(const struct thpd_collapse_config *cfg)
{
	return (int64_t)(cfg->max_rate_mib << 20);
}

/* a second's worth of CPU time at the quota */
static int64_t cpu_cap(const struct thpd_collapse_config *cfg)
{
	return (int64_t)cfg->cpu_percent * (int64_t)(USEC_PER_SEC / 100);
}

void thpd_budget_reset(struct thpd_budget *b, const struct thpd_collapse_config *cfg, uint64_t now)
{
	b->bytes = rate_bytes(cfg);
	b->cpu_usec = cpu_cap(cfg);
	b->at = now;
}

/* at most an hour to pay back: a clock gone wrong cannot stop thpd for years */
#define MAX_OWED_SEC 3600

static void refill(int64_t *tokens, int64_t per_sec, uint64_t dt)
{
	unsigned __int128 add = (unsigned __int128)per_sec * dt / USEC_PER_SEC;

	if (*tokens < -per_sec * MAX_OWED_SEC)
		*tokens = -per_sec * MAX_OWED_SEC;
	*tokens = add >= (unsigned __int128)(per_sec - *tokens) ? per_sec : *tokens + (int64_t)add;
}

/* usec until tokens > 0 again at per_sec a second */
static uint64_t until_positive(int64_t tokens, int64_t per_sec)
{
	if (tokens > 0)
		return 0;
	return (uint64_t)(((unsigned __int128)(1 - tokens) * USEC_PER_SEC + (uint64_t)per_sec - 1) /
			  (uint64_t)per_sec);
}

uint64_t thpd_budget_wait(struct thpd_budget *b, const struct thpd_collapse_config *cfg,
			  uint64_t now)
{
	uint64_t dt = now > b->at ? now - b->at : 0, wb = 0, wc = 0;

	b->at = now > b->at ? now : b->at;
	/* no limit: the bucket stays empty and never holds anything back */
	if (cfg->max_rate_mib) {
		refill(&b->bytes, rate_bytes(cfg), dt);
		wb = until_positive(b->bytes, rate_bytes(cfg));
	} else {
		b->bytes = 0;
	}
	if (cfg->cpu_percent < 100) {
		refill(&b->cpu_usec, cpu_cap(cfg), dt);
		wc = until_positive(b->cpu_usec, cpu_cap(cfg));
	} else {
		b->cpu_usec = 0;
	}
	return wb > wc ? wb : wc;
}

static void take(int64_t *tokens, uint64_t n)
{
	/* far below anything refill() keeps: no overflow, whatever is charged */
	const int64_t floor = -(INT64_C(1) << 62);

	*tokens = n >= (uint64_t)(*tokens - floor) ? floor : *tokens - (int64_t)n;
}

void thpd_budget_charge(struct thpd_budget *b, uint64_t bytes, uint64_t cpu_usec)
{
	take(&b->bytes, bytes);
	take(&b->cpu_usec, cpu_usec);
}

int thpd_psi_some_total(const char *text, uint64_t *total)
{
	const char *t;
	char *end;
	unsigned long long v;

	if (strncmp(text, "some ", 5) != 0)
		return -EBADMSG;
	t = strstr(text, " total=");
	if (!t || (strchr(text, '\n') && t > strchr(text, '\n')))
		return -EBADMSG;
	t += 7;
	if (*t < '0' || *t > '9')
		return -EBADMSG;
	errno = 0;
	v = strtoull(t, &end, 10);
	if (errno || (*end && *end != '\n' && *end != ' '))
		return -EBADMSG;
	*total = v;
	return 0;
}
