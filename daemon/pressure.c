// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The event sources of the adaptive machine (adaptive.c decides): a PSI
 * trigger on /proc/pressure/memory, a buddyinfo check timer and the
 * calm-period timer; the machine (adaptive.h) decides, thpd_act() writes.
 */
#include "pressure.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collapse.h"
#include "log.h"

static uint64_t now_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* an event of the machine: what it held before, then what it says now is written (thpd_act) */
static void feed(struct thpd *d, enum thpd_action (*ev)(struct thpd_adaptive *,
							const struct thpd_adaptive_config *, uint64_t))
{
	struct thpd_target before;

	enum thpd_action a;

	thpd_held(d, &before);
	a = ev(&d->machine.adaptive, &d->cfg.adaptive, now_usec());
	thpd_act(d, a, &before);
	/* free blocks are back: a collapse pass may be owed ([Collapse]) */
	if (a == THPD_ACT_STEP_UP)
		thpd_collapse_step_up(d);
}

static void arm_calm(struct thpd *d)
{
	uint64_t t = thpd_adaptive_deadline(&d->machine.adaptive, &d->cfg.adaptive);

	if (!d->calm_src)
		return;
	if (!t) {
		sd_event_source_set_enabled(d->calm_src, SD_EVENT_OFF);
		return;
	}
	sd_event_source_set_time(d->calm_src, t);
	sd_event_source_set_enabled(d->calm_src, SD_EVENT_ONESHOT);
}

static int on_psi(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct thpd *d = userdata;

	(void)fd;
	if (revents & EPOLLERR) {
		log_err("The pressure trigger went away; adaptive pressure monitoring stops");
		sd_event_source_set_enabled(s, SD_EVENT_OFF);
		return 0;
	}
	feed(d, thpd_adaptive_pressure);
	arm_calm(d);
	return 0;
}

static int on_check(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct thpd *d = userdata;
	struct thpd_target before;
	long blocks;

	(void)usec;
	if (d->cfg.adaptive.min_free_blocks > 0) {
		blocks = thp_buddyinfo_free_blocks(9);
		if (blocks < 0) {
			log_err("Cannot read /proc/buddyinfo: %s; fragmentation checks stop",
				strerror((int)-blocks));
			return sd_event_source_set_enabled(s, SD_EVENT_OFF);
		}
		thpd_held(d, &before);
		thpd_act(d, thpd_adaptive_blocks(&d->machine.adaptive, &d->cfg.adaptive, blocks,
						 now_usec()), &before);
	} else {
		feed(d, thpd_adaptive_tick);
	}
	arm_calm(d);
	sd_event_source_set_time_relative(s, d->cfg.adaptive.check_interval_usec);
	return sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
}

static int on_calm(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct thpd *d = userdata;

	(void)s;
	(void)usec;
	feed(d, thpd_adaptive_tick);
	arm_calm(d);
	return 0;
}

static int psi_open(const struct thpd_adaptive_config *cfg)
{
	char path[PATH_MAX], trig[64];
	int fd, r, len;

	r = thp_path(path, sizeof(path), "/proc/pressure/memory");
	if (r < 0)
		return r;
	fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	len = snprintf(trig, sizeof(trig), "%s %" PRIu32 " %" PRIu32,
		       cfg->pressure_full ? "full" : "some", cfg->pressure_threshold_us,
		       cfg->pressure_window_us);
	/* the kernel overwrites the last byte written with NUL: send the NUL */
	if (write(fd, trig, (size_t)len + 1) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

int thpd_pressure_open(struct thpd *d)
{
	const struct thpd_adaptive_config *cfg = &d->cfg.adaptive;
	const char *what;
	int r;

	if (!cfg->enabled)
		return 0;
	r = psi_open(cfg);
	if (r >= 0) {
		d->psi_fd = r;
		what = "the memory pressure trigger";
		r = sd_event_add_io(d->event, &d->psi_src, d->psi_fd, EPOLLPRI, on_psi, d);
		if (r < 0)
			goto fail;
	} else {
		log_warn("Cannot register a memory pressure trigger on /proc/pressure/memory: %s; "
			 "only fragmentation checks will step down", strerror(-r));
	}
	what = "the fragmentation check timer";
	r = sd_event_add_time_relative(d->event, &d->check_src, CLOCK_MONOTONIC,
				       cfg->check_interval_usec, 100000, on_check, d);
	if (r < 0)
		goto fail;
	sd_event_source_set_enabled(d->check_src, SD_EVENT_ONESHOT);
	what = "the calm-period timer";
	r = sd_event_add_time(d->event, &d->calm_src, CLOCK_MONOTONIC, 0, 10000, on_calm, d);
	if (r < 0)
		goto fail;
	sd_event_source_set_enabled(d->calm_src, SD_EVENT_OFF);
	log_info("Adaptive switching on: %s %" PRIu32 " us per %" PRIu32
		 " us pressure, at least %ld free order-9 blocks (%ld to step up), calm period %" PRIu64 " s",
		 cfg->pressure_full ? "full" : "some", cfg->pressure_threshold_us,
		 cfg->pressure_window_us, cfg->min_free_blocks, cfg->recover_free_blocks,
		 cfg->calm_usec / 1000000);
	return 0;
fail:
	log_err("Cannot watch %s: %s; adaptive switching is off", what, strerror(-r));
	thpd_pressure_close(d);
	return r;
}

void thpd_pressure_close(struct thpd *d)
{
	d->psi_src = sd_event_source_disable_unref(d->psi_src);
	d->check_src = sd_event_source_disable_unref(d->check_src);
	d->calm_src = sd_event_source_disable_unref(d->calm_src);
	if (d->psi_fd >= 0)
		close(d->psi_fd);
	d->psi_fd = -1;
}
