// SPDX-License-Identifier: GPL-2.0-or-later
/* thpd's slow tick: the watchdog ping and the debt check on one wakeup. See tick.h. */
#include "tick.h"

#include <errno.h>

#include <systemd/sd-daemon.h>

#include "collapse.h"

#define USEC_PER_MINUTE 60000000ULL

static void arm(struct thpd *d)
{
	uint64_t next, accuracy;

	if (d->watchdog_usec) {
		/* what sd_event_set_watchdog() does: ping between 1/2 and 3/4 of the period */
		next = d->watchdog_last + d->watchdog_usec / 2;
		accuracy = d->watchdog_usec / 4;
	} else if (d->cfg.collapse.enabled) {
		/* no watchdog: once a minute, where sd-event wakes the system anyway */
		sd_event_now(d->event, CLOCK_MONOTONIC, &next);
		next += USEC_PER_MINUTE;
		accuracy = USEC_PER_MINUTE;
	} else {
		sd_event_source_set_enabled(d->tick_src, SD_EVENT_OFF);
		return;
	}
	sd_event_source_set_time(d->tick_src, next);
	sd_event_source_set_time_accuracy(d->tick_src, accuracy ? accuracy : 1);
	sd_event_source_set_enabled(d->tick_src, SD_EVENT_ONESHOT);
}

static int on_tick(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct thpd *d = userdata;

	(void)s;
	(void)usec;	/* the time it was due, not the time it ran */
	if (d->watchdog_usec) {
		sd_notify(0, "WATCHDOG=1");
		sd_event_now(d->event, CLOCK_MONOTONIC, &d->watchdog_last);
	}
	thpd_collapse_tick(d);
	arm(d);
	return 0;
}

int thpd_tick_open(struct thpd *d)
{
	uint64_t usec = 0;
	int r = sd_watchdog_enabled(0, &usec);

	if (r < 0)
		return r;
	d->watchdog_usec = r > 0 ? usec : 0;
	r = sd_event_now(d->event, CLOCK_MONOTONIC, &d->watchdog_last);
	if (r < 0)
		return r;
	r = sd_event_add_time(d->event, &d->tick_src, CLOCK_MONOTONIC, 0, 0, on_tick, d);
	if (r < 0)
		return r;
	/* the watchdog cannot wait for a busy loop's other sources */
	sd_event_source_set_priority(d->tick_src, SD_EVENT_PRIORITY_IMPORTANT);
	if (d->watchdog_usec)
		sd_notify(0, "WATCHDOG=1");
	arm(d);
	return 0;
}

void thpd_tick_rearm(struct thpd *d)
{
	if (d->tick_src && !d->watchdog_usec)
		arm(d);
}

void thpd_tick_close(struct thpd *d)
{
	d->tick_src = sd_event_source_disable_unref(d->tick_src);
}
