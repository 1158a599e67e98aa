// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The event sources of the adaptive machine (adaptive.c decides): a PSI
 * trigger on /proc/pressure/memory, a buddyinfo check timer and the
 * calm-period timer, and the step down / step up they lead to.
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

static void describe(char *buf, size_t size, const char *enabled, const char *defrag)
{
	int e = thp_enabled_from_name(enabled);

	snprintf(buf, size, "mode=%s enabled=%s defrag=%s",
		 e < 0 ? "?" : thp_rfc_mode((enum thp_enabled)e, defrag), enabled, defrag);
}

/* the word a size steps down to, or NULL when it stays */
static const char *size_step_word(const struct thpd *d, const struct thp_size *s)
{
	const char *word = s->has_dir ?
		thpd_adaptive_size_step(thp_choice_value(&s->enabled),
					d->cfg.adaptive.step_down_enabled) : NULL;

	return word && thp_choice_offers(&s->enabled, word) ? word : NULL;
}

/* the index of kib in d->stepped, or d->n_stepped */
static unsigned int stepped_find(const struct thpd *d, unsigned long kib)
{
	unsigned int j;

	for (j = 0; j < d->n_stepped && d->stepped[j].kib != kib; j++)
		;
	return j;
}

/*
 * Step every size whose own enabled is above StepDownMode= down to it,
 * remembering its word for the step up (saved with the normal pair before
 * anything is written); " 64K=always" per size into from and
 * " 64K=madvise" into to. 0 or the first failed write's -errno.
 */
static int sizes_step_down(struct thpd *d, char *from, size_t fsize, char *to, size_t tsize)
{
	struct thp_model *m = malloc(sizeof(*m));
	int r, ret = 0;

	r = m ? thp_model_read(m) : -ENOMEM;
	if (r < 0) {
		log_err("Cannot read the THP controls to step the sizes down: %s", strerror(-r));
		free(m);
		thpd_stepped_save(d);
		return r;
	}
	for (int i = 0; i < m->nsizes && m->per_size; i++) {
		const struct thp_size *s = &m->size[i];
		unsigned int j = stepped_find(d, s->kib);

		/* stepped down twice (a reload in between): the first word is the normal one */
		if (!size_step_word(d, s) || j < d->n_stepped || j == THP_SIZES_MAX)
			continue;
		d->stepped[j].kib = s->kib;
		snprintf(d->stepped[j].enabled, sizeof(d->stepped[j].enabled), "%s",
			 thp_choice_value(&s->enabled));
		d->n_stepped++;
	}
	thpd_stepped_save(d);
	for (int i = 0; i < m->nsizes && m->per_size; i++) {
		const struct thp_size *s = &m->size[i];
		const char *word = size_step_word(d, s);
		char name[16], old[16];
		unsigned int j;

		if (!word)
			continue;
		snprintf(old, sizeof(old), "%s", thp_choice_value(&s->enabled));
		r = thp_knob_set(m, THP_KNOB_SIZE_ENABLED, s->kib, word);
		if (r < 0) {
			log_err("Failed to step hugepages-%lukB/enabled down to %s: %s", s->kib, word,
				strerror(-r));
			ret = ret ? ret : r;
			/* unchanged: nothing to put back */
			j = stepped_find(d, s->kib);
			if (j < d->n_stepped && strcmp(d->stepped[j].enabled, old) == 0)
				d->stepped[j] = d->stepped[--d->n_stepped];
			continue;
		}
		thp_size_name(s->kib, name, sizeof(name));
		if (strlen(from) < fsize)
			snprintf(from + strlen(from), fsize - strlen(from), " %s=%s", name, old);
		if (strlen(to) < tsize)
			snprintf(to + strlen(to), tsize - strlen(to), " %s=%s", name, word);
	}
	free(m);
	return ret;
}

static void act(struct thpd *d, enum thpd_action a)
{
	const struct thpd_adaptive_config *cfg = &d->cfg.adaptive;
	char from[512], to[512], to_enabled[16], to_defrag[16], why[512];
	struct thp_state st;
	int r, e;

	if (a == THPD_ACT_NONE)
		return;
	if (thp_state_read(&st) < 0)
		return;
	describe(from, sizeof(from), thp_enabled_name(st.enabled), st.defrag);
	if (a == THPD_ACT_STEP_DOWN) {
		e = thp_enabled_from_name(d->normal_enabled);
		if (e < 0 || (int)cfg->step_down_enabled < e)
			e = (int)cfg->step_down_enabled;
		snprintf(to_enabled, sizeof(to_enabled), "%s", thp_enabled_name((enum thp_enabled)e));
		snprintf(to_defrag, sizeof(to_defrag), "%s",
			 cfg->step_down_defrag[0] ? cfg->step_down_defrag : d->normal_defrag);
	} else {
		snprintf(to_enabled, sizeof(to_enabled), "%s", d->normal_enabled);
		snprintf(to_defrag, sizeof(to_defrag), "%s", d->normal_defrag);
	}
	describe(to, sizeof(to), to_enabled, to_defrag);
	/* the sizes that are on by their own value step with the top level */
	if (a == THPD_ACT_STEP_DOWN)
		sizes_step_down(d, from, sizeof(from), to, sizeof(to));
	else
		thpd_sizes_step_up(d, from, sizeof(from), to, sizeof(to));
	r = thpd_apply_settings(to_enabled, to_defrag, why, sizeof(why));
	if (r < 0)
		log_err("Failed to %s: %s", a == THPD_ACT_STEP_DOWN ? "step down" : "step up", why);
	if (a == THPD_ACT_STEP_UP) {
		thpd_stepped_forget(d);
		thpd_collapse_step_up(d);
	}
	thpd_logf(a == THPD_ACT_STEP_DOWN ? LOG_WARNING : LOG_NOTICE,
		  &(const struct thpd_log_fields){
			  .event = a == THPD_ACT_STEP_DOWN ? "step-down" : "step-up",
			  .from = from, .to = to, .reason = d->adaptive.reason },
		  "%s: %s -> %s (%s; switch #%lu)",
		  a == THPD_ACT_STEP_DOWN ? "Stepping down" : "Stepping up", from, to,
		  d->adaptive.reason, d->adaptive.switches);
}

static void arm_calm(struct thpd *d)
{
	uint64_t t = thpd_adaptive_deadline(&d->adaptive, &d->cfg.adaptive);

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
	act(d, thpd_adaptive_pressure(&d->adaptive, &d->cfg.adaptive, now_usec()));
	arm_calm(d);
	return 0;
}

static int on_check(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct thpd *d = userdata;
	long blocks;

	(void)usec;
	if (d->cfg.adaptive.min_free_blocks > 0) {
		blocks = thp_buddyinfo_free_blocks(9);
		if (blocks < 0) {
			log_err("Cannot read /proc/buddyinfo: %s; fragmentation checks stop",
				strerror((int)-blocks));
			return sd_event_source_set_enabled(s, SD_EVENT_OFF);
		}
		act(d, thpd_adaptive_blocks(&d->adaptive, &d->cfg.adaptive, blocks, now_usec()));
	} else {
		act(d, thpd_adaptive_tick(&d->adaptive, &d->cfg.adaptive, now_usec()));
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
	act(d, thpd_adaptive_tick(&d->adaptive, &d->cfg.adaptive, now_usec()));
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

void thpd_pressure_stop(struct thpd *d)
{
	act(d, thpd_adaptive_stop(&d->adaptive));
}
