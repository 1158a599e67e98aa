// SPDX-License-Identifier: GPL-2.0-or-later
#include "adaptive.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

void thpd_adaptive_init(struct thpd_adaptive *a)
{
	memset(a, 0, sizeof(*a));
	a->state = THPD_ASTATE_NORMAL;
	a->last_blocks = -1;
}

const char *thpd_astate_name(enum thpd_astate s)
{
	return s == THPD_ASTATE_STEPPED_DOWN ? "stepped-down" : "normal";
}

static enum thpd_action trouble(struct thpd_adaptive *a, uint64_t now, const char *reason)
{
	a->last_trouble = now;
	if (a->state == THPD_ASTATE_STEPPED_DOWN)
		return THPD_ACT_NONE;
	a->state = THPD_ASTATE_STEPPED_DOWN;
	a->switches++;
	snprintf(a->reason, sizeof(a->reason), "%s", reason);
	return THPD_ACT_STEP_DOWN;
}

enum thpd_action thpd_adaptive_pressure(struct thpd_adaptive *a,
					const struct thpd_adaptive_config *cfg, uint64_t now)
{
	char reason[160];

	if (!cfg->enabled)
		return THPD_ACT_NONE;
	snprintf(reason, sizeof(reason), "memory pressure: %s stall above %" PRIu32 " us in %" PRIu32 " us",
		 cfg->pressure_full ? "full" : "some", cfg->pressure_threshold_us,
		 cfg->pressure_window_us);
	return trouble(a, now, reason);
}

enum thpd_action thpd_adaptive_blocks(struct thpd_adaptive *a,
				      const struct thpd_adaptive_config *cfg, long blocks,
				      uint64_t now)
{
	char reason[160];

	if (!cfg->enabled)
		return THPD_ACT_NONE;
	a->last_blocks = blocks;
	if (cfg->min_free_blocks > 0 && blocks < cfg->min_free_blocks) {
		snprintf(reason, sizeof(reason), "fragmentation: %ld free order-9 blocks, below %ld",
			 blocks, cfg->min_free_blocks);
		return trouble(a, now, reason);
	}
	return thpd_adaptive_tick(a, cfg, now);
}

enum thpd_action thpd_adaptive_tick(struct thpd_adaptive *a,
				    const struct thpd_adaptive_config *cfg, uint64_t now)
{
	if (!cfg->enabled || a->state != THPD_ASTATE_STEPPED_DOWN)
		return THPD_ACT_NONE;
	if (now - a->last_trouble < cfg->calm_usec)
		return THPD_ACT_NONE;
	if (cfg->min_free_blocks > 0 && a->last_blocks >= 0 &&
	    a->last_blocks < cfg->recover_free_blocks)
		return THPD_ACT_NONE;
	a->state = THPD_ASTATE_NORMAL;
	a->switches++;
	if (cfg->min_free_blocks > 0 && a->last_blocks >= 0)
		snprintf(a->reason, sizeof(a->reason),
			 "calm for %" PRIu64 " s, %ld free order-9 blocks", cfg->calm_usec / 1000000,
			 a->last_blocks);
	else
		snprintf(a->reason, sizeof(a->reason), "calm for %" PRIu64 " s",
			 cfg->calm_usec / 1000000);
	return THPD_ACT_STEP_UP;
}

uint64_t thpd_adaptive_deadline(const struct thpd_adaptive *a,
				const struct thpd_adaptive_config *cfg)
{
	if (!cfg->enabled || a->state != THPD_ASTATE_STEPPED_DOWN)
		return 0;
	return a->last_trouble + cfg->calm_usec;
}

const char *thpd_adaptive_size_step(const char *cur, enum thp_enabled step_down)
{
	int e = cur ? thp_enabled_from_name(cur) : -EINVAL;

	if (e < 0 || e <= (int)step_down)
		return NULL;
	return thp_enabled_name(step_down);
}

enum thpd_action thpd_adaptive_stop(struct thpd_adaptive *a)
{
	if (a->state != THPD_ASTATE_STEPPED_DOWN)
		return THPD_ACT_NONE;
	a->state = THPD_ASTATE_NORMAL;
	a->switches++;
	snprintf(a->reason, sizeof(a->reason), "stopping with RestoreOnStop=no");
	return THPD_ACT_STEP_UP;
}
