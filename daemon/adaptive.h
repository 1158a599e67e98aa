/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * thpd's state machine, pure: the event loop and the socket feed it events
 * (with the current time, usec of CLOCK_MONOTONIC, where time matters) and
 * write what it says the host should hold. Nothing here reads the kernel.
 *
 * The machine holds the target (precedence.h: a pure function of the
 * command line, the persisted state, the configuration and the host's
 * originals) and one of two states:
 *   normal        the host holds the target;
 *   stepped-down  the host holds the target with the step-down's overlay
 *                 on top (thpd_overlay()): enabled at most StepDownMode=,
 *                 defrag StepDownDefrag=, each size whose own enabled is
 *                 above StepDownMode= at StepDownMode=. The overlay is
 *                 computed from the target whenever it is needed, never
 *                 kept or learned back from the kernel.
 *
 *  event                               normal              stepped-down
 *  ----------------------------------  ------------------  ------------------------
 *  start, restart after a crash        normal (target)     (a new thpd starts normal)
 *  reload                              normal, new target  normal, new target
 *  set enabled, defrag, a size's       normal, new target  normal, new target
 *    enabled; reset (the socket)                           ("override")
 *  set shmem_enabled (any size), a     normal, new target  stepped-down, new target
 *    khugepaged knob (the socket)
 *  pressure, free blocks low           stepped-down        stepped-down (calm restarts)
 *  calm for CalmSec= (and blocks back  -                   normal
 *    to RecoverFreeBlocks=)
 *  stop, RestoreOnStop=yes             the originals       the originals
 *  stop, RestoreOnStop=no              the target          normal: the target
 *  stop for a package upgrade          nothing written     nothing written
 *
 * Hysteresis comes from both: RecoverFreeBlocks above MinFreeBlocks, and a
 * calm period that every new pressure event or low sample restarts.
 * tests/host/test-thpd-logic.c runs this table; tests/bats/53 runs it on
 * a real kernel under systemd.
 */
#ifndef THPD_ADAPTIVE_H
#define THPD_ADAPTIVE_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "precedence.h"

enum thpd_astate { THPD_ASTATE_NORMAL, THPD_ASTATE_STEPPED_DOWN };
enum thpd_action { THPD_ACT_NONE, THPD_ACT_STEP_DOWN, THPD_ACT_STEP_UP };

struct thpd_adaptive {
	enum thpd_astate state;
	uint64_t last_trouble;	/* last pressure event or low sample */
	long last_blocks;	/* last buddyinfo sample, -1: none */
	unsigned long switches;
	char reason[160];	/* why the last switch happened */
};

/* the whole machine: the state and the target it holds the host at */
struct thpd_machine {
	struct thpd_adaptive adaptive;
	struct thpd_target target;
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
 * What a size's own enabled word steps down to, the lower of it and
 * StepDownMode= (as the top level does), or NULL to leave it: inherit
 * follows the top level, which steps down itself, and a size already at or
 * below StepDownMode= stays.
 */
const char *thpd_adaptive_size_step(const char *cur, enum thp_enabled step_down);

/* when tick should be called next; 0 when nothing is pending */
uint64_t thpd_adaptive_deadline(const struct thpd_adaptive *a,
				const struct thpd_adaptive_config *cfg);

/* t with the step-down's overlay on top, into out (may be t) */
void thpd_overlay(const struct thpd_target *t, const struct thpd_adaptive_config *cfg,
		  struct thpd_target *out);

/* start, a restart after a crash, reload: the target of in, normal */
void thpd_machine_start(struct thpd_machine *m, const struct thpd_inputs *in);
/*
 * An administrator's change (the persisted state in in is the new one):
 * the new target; when the change is of a value the step-down holds
 * (stepped, see thpd_knob_stepped()) a step-down ends. true when it ended
 * one.
 */
bool thpd_machine_set(struct thpd_machine *m, const struct thpd_inputs *in, bool stepped);
/* does a step-down hold this knob (enabled, defrag, a size's enabled)? */
bool thpd_knob_stepped(enum thp_knob_id knob);
/* what the host should hold now, into out */
void thpd_machine_held(const struct thpd_machine *m, const struct thpd_adaptive_config *cfg,
		       struct thpd_target *out);

enum thpd_stop {
	THPD_STOP_RESTORE,	/* RestoreOnStop=yes */
	THPD_STOP_KEEP,		/* RestoreOnStop=no */
	THPD_STOP_HANDOVER,	/* a package upgrade restarts thpd: the next one takes over */
};
/*
 * thpd stops: true with what to write into out (the originals, or the
 * target after a step-up), false when nothing is to be written
 */
bool thpd_machine_stop(struct thpd_machine *m, enum thpd_stop how,
		       const struct thpd_originals *o, struct thpd_target *out);

#endif
