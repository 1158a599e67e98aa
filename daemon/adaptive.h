/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The adaptive state machine, pure: the event loop feeds it pressure
 * events, buddyinfo samples and timer ticks with the current time (usec,
 * CLOCK_MONOTONIC) and acts on what it returns.
 *
 *   normal --(pressure event, or free blocks < MinFreeBlocks)--> stepped-down
 *   stepped-down --(no trouble for CalmSec and free blocks >= RecoverFreeBlocks)--> normal
 *
 * Hysteresis comes from both: RecoverFreeBlocks above MinFreeBlocks, and
 * a calm period that every new pressure event or low sample restarts.
 */
#ifndef THPD_ADAPTIVE_H
#define THPD_ADAPTIVE_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"

enum thpd_astate { THPD_ASTATE_NORMAL, THPD_ASTATE_STEPPED_DOWN };
enum thpd_action { THPD_ACT_NONE, THPD_ACT_STEP_DOWN, THPD_ACT_STEP_UP };

struct thpd_adaptive {
	enum thpd_astate state;
	uint64_t last_trouble;	/* last pressure event or low sample */
	long last_blocks;	/* last buddyinfo sample, -1: none */
	unsigned long switches;
	char reason[160];	/* why the last switch happened */
};

void thpd_adaptive_init(struct thpd_adaptive *a);
const char *thpd_astate_name(enum thpd_astate s);

/* a PSI trigger fired */
enum thpd_action thpd_adaptive_pressure(struct thpd_adaptive *a,
					const struct thpd_adaptive_config *cfg, uint64_t now);
/* a buddyinfo sample: free order-9 blocks */
enum thpd_action thpd_adaptive_blocks(struct thpd_adaptive *a,
				      const struct thpd_adaptive_config *cfg, long blocks,
				      uint64_t now);
/* the calm-period deadline passed (or any time: it only acts when due) */
enum thpd_action thpd_adaptive_tick(struct thpd_adaptive *a,
				    const struct thpd_adaptive_config *cfg, uint64_t now);
/* thpd stops without restoring the originals: step up if stepped down */
enum thpd_action thpd_adaptive_stop(struct thpd_adaptive *a);
/*
 * Pure: what a size's own enabled word steps down to, the lower of it and
 * StepDownMode= (as the top level does), or NULL to leave it: inherit
 * follows the top level, which steps down itself, and a size already at or
 * below StepDownMode= stays.
 */
const char *thpd_adaptive_size_step(const char *cur, enum thp_enabled step_down);

/* when tick should be called next; 0 when nothing is pending */
uint64_t thpd_adaptive_deadline(const struct thpd_adaptive *a,
				const struct thpd_adaptive_config *cfg);

#endif
