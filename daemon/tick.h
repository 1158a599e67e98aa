/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * thpd's slow tick (tick.c): the watchdog ping, and the checks that must
 * not cost a wakeup of their own (collapse's debt counters) on the same
 * wakeup. It replaces sd-event's own watchdog timer and wakes as it did:
 * between 1/2 and 3/4 of WATCHDOG_USEC after the last ping, at a point
 * sd-event chooses to coalesce with the rest of the system. Without a
 * watchdog it runs only while [Collapse] is on, once a minute.
 */
#ifndef THPD_TICK_H
#define THPD_TICK_H

#include "thpd.h"

/* 0 or -errno (logged by the caller) */
int thpd_tick_open(struct thpd *d);
/* after a (re)configuration: the tick follows [Collapse] when there is no watchdog */
void thpd_tick_rearm(struct thpd *d);
void thpd_tick_close(struct thpd *d);

#endif
