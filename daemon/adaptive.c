// SPDX-License-Identifier: GPL-2.0-or-later
/* thpd's state machine: the table and what each event does are in adaptive.h. */
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

void thpd_overlay(const struct thpd_target *t, const struct thpd_adaptive_config *cfg,
		  struct thpd_target *out)
{
	int e = thp_enabled_from_name(t->enabled);
	const char *en, *df;

	if (out != t)
		*out = *t;
	/* the lower of the target's enabled and StepDownMode= */
	en = thp_enabled_name(e >= 0 && e < (int)cfg->step_down_enabled ? (enum thp_enabled)e :
			      cfg->step_down_enabled);
	df = cfg->step_down_defrag[0] ? cfg->step_down_defrag : t->defrag;
	if (strcmp(en, out->enabled) != 0 || strcmp(df, out->defrag) != 0)
		out->rfc = -1;
	if (strcmp(en, out->enabled) != 0) {
		snprintf(out->enabled, sizeof(out->enabled), "%s", en);
		out->enabled_src = THPD_SRC_STEP_DOWN;
	}
	if (strcmp(df, out->defrag) != 0) {
		snprintf(out->defrag, sizeof(out->defrag), "%s", df);
		out->defrag_src = THPD_SRC_STEP_DOWN;
	}
	for (unsigned int i = 0; i < out->n_sizes; i++) {
		struct thpd_size_target *z = &out->sizes[i];
		const char *w = thpd_adaptive_size_step(z->enabled, cfg->step_down_enabled);

		if (!w)
			continue;
		snprintf(z->enabled, sizeof(z->enabled), "%s", w);
		z->enabled_src = THPD_SRC_STEP_DOWN;
	}
}

void thpd_machine_start(struct thpd_machine *m, const struct thpd_inputs *in)
{
	thpd_adaptive_init(&m->adaptive);
	thpd_target_compute(in, &m->target);
}

bool thpd_knob_stepped(enum thp_knob_id knob)
{
	return knob == THP_KNOB_ENABLED || knob == THP_KNOB_DEFRAG || knob == THP_KNOB_SIZE_ENABLED;
}

bool thpd_machine_set(struct thpd_machine *m, const struct thpd_inputs *in, bool stepped)
{
	bool ended = stepped && m->adaptive.state == THPD_ASTATE_STEPPED_DOWN;

	thpd_target_compute(in, &m->target);
	/* not a switch of the machine's own: the trouble may still be there, and steps down again */
	if (ended)
		m->adaptive.state = THPD_ASTATE_NORMAL;
	return ended;
}

void thpd_machine_held(const struct thpd_machine *m, const struct thpd_adaptive_config *cfg,
		       struct thpd_target *out)
{
	if (m->adaptive.state == THPD_ASTATE_STEPPED_DOWN)
		thpd_overlay(&m->target, cfg, out);
	else
		*out = m->target;
}

bool thpd_machine_stop(struct thpd_machine *m, enum thpd_stop how,
		       const struct thpd_originals *o, struct thpd_target *out)
{
	switch (how) {
	case THPD_STOP_RESTORE:
		thpd_target_originals(o, out);
		return true;
	case THPD_STOP_KEEP:
		thpd_adaptive_stop(&m->adaptive);
		*out = m->target;
		return true;
	default:
		return false;
	}
}
