/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * [Collapse] (collapse.c): thpd collapses small-page memory into hugepages
 * once free hugepage blocks are back, with the collapse engine of libthp
 * (lib/thp-collapse.h) in its "what the kernel would make huge" scope,
 * within a budget. When it owes a pass and what it may spend is
 * collapse-budget.c; this is the event sources, the passes and the
 * bookkeeping. See thpd.conf(5), [Collapse].
 */
#ifndef THPD_COLLAPSE_H
#define THPD_COLLAPSE_H

#include <json-c/json.h>

#include "thpd.h"

/*
 * Does the configuration at path ask for collapse? Read before the
 * capabilities are dropped (CAP_SYS_NICE stays only then); silent, the
 * start reads it again and says what is wrong with it.
 */
bool thpd_collapse_wanted(const char *path, bool must_exist);

/* after every (re)configuration: the sources [Collapse] asks for; 0 or -errno, logged */
int thpd_collapse_open(struct thpd *d);
/* stop: a pass in progress ends, the sources go; the totals stay */
void thpd_collapse_close(struct thpd *d);
/* on stop: everything, totals too */
void thpd_collapse_free(struct thpd *d);

/* the slow tick (tick.c): read the debt counters, no wakeup of its own */
void thpd_collapse_tick(struct thpd *d);
/* thpd stepped up: memory may be eligible again and blocks are free; look now */
void thpd_collapse_step_up(struct thpd *d);

/* thpd status: "collapse": {...} added to o */
void thpd_collapse_status(struct thpd *d, struct json_object *o);

#endif
