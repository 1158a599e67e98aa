// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What thpd applies, and when: start and reload (one path for both), the
 * administrator's changes through the socket, restoring the host on stop.
 * Which value wins is precedence.c; the host's original values are
 * originals.c; what an administrator set is persist.c. See thpd.h.
 */
#include "thpd.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "log.h"

void thpd_restore(struct thpd *d)
{
	const struct thpd_originals *o = &d->originals;
	struct thp_mode_req req;
	const char *failed = NULL;
	int r;

	if (!o->have_enabled && !o->have_defrag)
		return;	/* never got as far as saving anything */
	if (!d->cfg.restore_on_stop)
		goto out;
	if (o->have_enabled && thp_mode_parse(o->enabled, &req) == 0) {
		r = thp_state_apply(&req, &failed);
		if (r < 0)
			log_err("Failed to restore enabled=%s (%s): %s", o->enabled,
				failed ? failed : "?", strerror(-r));
	}
	if (o->have_defrag) {
		r = thp_defrag_apply(o->defrag, &failed);
		if (r < 0)
			log_err("Failed to restore defrag=%s (%s): %s", o->defrag,
				failed ? failed : "?", strerror(-r));
	}
	for (int k = 0; k < THPD_KH_N; k++) {
		if (!o->have_kh[k] || !d->cfg.kh_set[k])
			continue;
		r = thp_khugepaged_write(thpd_kh_file(k), o->kh[k]);
		if (r < 0)
			log_err("Failed to restore khugepaged/%s=%" PRIu64 ": %s", thpd_kh_file(k),
				o->kh[k], strerror(-r));
	}
	log_event(LOG_INFO, "restored", "Restored THP settings to enabled=%s defrag=%s",
		  o->enabled, o->defrag);
out:
	thpd_originals_forget(d->runtime_dir);
}

/* ---- applying ---- */

static void refresh_normal(struct thpd *d)
{
	struct thp_state st;

	if (thp_state_read(&st) == 0) {
		snprintf(d->normal_enabled, sizeof(d->normal_enabled), "%s",
			 thp_enabled_name(st.enabled));
		snprintf(d->normal_defrag, sizeof(d->normal_defrag), "%s", st.defrag);
		d->kernel = st;
	}
}

static int apply_target(struct thpd *d)
{
	const struct thpd_target *t = &d->target;
	struct thp_mode_req req;
	const char *failed = NULL;
	int r, ret = 0;

	if (t->mode[0] && thp_mode_parse(t->mode, &req) == 0) {
		r = thp_state_apply(&req, &failed);
		if (r < 0) {
			log_err("Failed to apply Mode=%s from the %s: writing %s: %s", t->mode,
				t->mode_src, failed ? failed : "?", strerror(-r));
			ret = r;
		}
	}
	if (t->defrag[0]) {
		r = thp_defrag_apply(t->defrag, &failed);
		if (r < 0) {
			log_err("Failed to apply Defrag=%s from the %s: writing %s: %s", t->defrag,
				t->defrag_src, failed ? failed : "?", strerror(-r));
			if (!ret)
				ret = r;
		}
	}
	for (int k = 0; k < THPD_KH_N; k++) {
		if (!d->cfg.kh_set[k])
			continue;
		r = thp_khugepaged_write(thpd_kh_file(k), d->cfg.kh_val[k]);
		if (r < 0) {
			log_err("Failed to set khugepaged/%s=%" PRIu64 ": %s", thpd_kh_file(k),
				d->cfg.kh_val[k], strerror(-r));
			if (!ret)
				ret = r;
		}
	}
	refresh_normal(d);
	return ret;
}

static void report_diag(void *userdata, enum thpd_diag_level level, const char *file,
			unsigned int line, const char *msg)
{
	struct thpd_log_fields f = { .event = "config", .file = file, .line = line };
	int prio = level == THPD_DIAG_FATAL ? LOG_ERR : LOG_WARNING;

	(void)userdata;
	if (file && line)
		thpd_logf(prio, &f, "%s:%u: %s", file, line, msg);
	else if (file)
		thpd_logf(prio, &f, "%s: %s", file, msg);
	else
		thpd_logf(prio, &f, "%s", msg);
}

/* sysfs readable and writable, before READY=1 */
static int self_check(struct thpd *d)
{
	static const char *const files[] = { THP_SYSFS_DIR "/enabled", THP_SYSFS_DIR "/defrag" };
	char path[PATH_MAX];
	int r;

	r = thp_state_read(&d->kernel);
	if (r < 0) {
		log_err("Cannot read the THP state under %s%s: %s", thp_root(), THP_SYSFS_DIR,
			strerror(-r));
		return r;
	}
	for (size_t i = 0; i < 2; i++) {
		r = thp_path(path, sizeof(path), files[i]);
		if (r == 0 && access(path, W_OK) < 0)
			r = -errno;
		if (r < 0) {
			log_err("Cannot write %s: %s", path, strerror(-r));
			return r;
		}
	}
	return 0;
}

/* the host's values before thpd: from a crashed instance's file, else the kernel */
static void originals_init(struct thpd *d)
{
	int r = thpd_originals_load(d->runtime_dir, &d->originals);

	if (r == 0) {
		log_info("Restarted: original settings from %s/" THPD_ORIGINALS_FILE
			 " (enabled=%s defrag=%s)", d->runtime_dir, d->originals.enabled,
			 d->originals.defrag);
		return;
	}
	if (r != -ENOENT)
		log_warn("Ignoring %s/" THPD_ORIGINALS_FILE ": %s", d->runtime_dir, strerror(-r));
	thpd_originals_read_kernel(&d->originals);
	if (!d->runtime_dir[0])
		return;
	r = thpd_originals_store(d->runtime_dir, &d->originals);
	if (r < 0)
		log_warn("Cannot write %s/" THPD_ORIGINALS_FILE
			 ": %s; a restart after a crash will not know the original settings",
			 d->runtime_dir, strerror(-r));
}

static void boot_inputs_init(struct thpd *d)
{
	char cmdline[4096];
	int r = thpd_persist_load(d->state_dir, &d->persist);

	if (r == -EBADMSG)
		log_warn("Ignoring %s/" THPD_STATE_FILE ": not a valid thpd state file", d->state_dir);
	else if (r < 0 && r != -ENOENT)
		log_warn("Cannot read %s/" THPD_STATE_FILE ": %s", d->state_dir, strerror(-r));
	if (thp_read_file("/proc/cmdline", cmdline, sizeof(cmdline)) < 0 ||
	    thpd_cmdline_thp(cmdline, d->cmdline_thp, sizeof(d->cmdline_thp)) < 0)
		d->cmdline_thp[0] = '\0';
}

static int configure(struct thpd *d, bool starting)
{
	struct thpd_diag diag = { .report = report_diag };
	struct thpd_config *cfg;
	char msrc[64], dsrc[64];
	int r;

	/* large: keep it off the stack */
	cfg = malloc(sizeof(*cfg));
	if (!cfg) {
		log_err("Cannot load the configuration: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	r = thpd_config_load(cfg, d->config_path, d->config_must_exist, &diag);
	if (r < 0) {
		if (starting)
			log_event(LOG_ERR, "config-error",
				  "Configuration %s is unusable, not starting (see above)",
				  d->config_path);
		else
			log_event(LOG_ERR, "reload-failed",
				  "Configuration %s is unusable, keeping the last good configuration (see above)",
				  d->config_path);
		free(cfg);
		return -EINVAL;
	}
	d->cfg = *cfg;
	free(cfg);

	if (starting) {
		r = self_check(d);
		if (r < 0)
			return r;
		originals_init(d);
		boot_inputs_init(d);
	}

	thpd_target_compute(&d->cfg, &d->persist, d->cmdline_thp, &d->target);
	if (d->cmdline_thp[0] && d->cfg.honor_kernel_cmdline &&
	    (d->cfg.mode[0] || d->persist.enabled[0]))
		log_info("transparent_hugepage=%s on the kernel command line takes precedence over Mode=%s",
			 d->cmdline_thp, d->persist.enabled[0] ? d->persist.enabled : d->cfg.mode);
	r = apply_target(d);
	if (r < 0 && starting) {
		log_err("Start-up self-check failed: the configured settings cannot be applied");
		return r == -EINVAL ? -EIO : r;	/* -EINVAL means "bad configuration" */
	}

	thpd_adaptive_init(&d->adaptive);
	if (d->event && d->on_configured)
		d->on_configured(d);

	snprintf(msrc, sizeof(msrc), d->target.mode_src ? "Mode from %s" : "Mode not set",
		 d->target.mode_src);
	snprintf(dsrc, sizeof(dsrc), d->target.defrag_src ? "Defrag from %s" : "Defrag not set",
		 d->target.defrag_src);
	log_event(LOG_INFO, starting ? "started" : "reloaded",
		  "%s: enabled=%s defrag=%s mode=%s (%s, %s), %u rule%s, adaptive %s",
		  starting ? "Configuration applied" : "Configuration reloaded", d->normal_enabled,
		  d->normal_defrag, d->kernel.mode, msrc, dsrc, d->cfg.n_rules,
		  d->cfg.n_rules == 1 ? "" : "s", d->cfg.adaptive.enabled ? "on" : "off");
	return r;
}

int thpd_start(struct thpd *d)
{
	return configure(d, true);
}

int thpd_reload(struct thpd *d)
{
	int r;

	sd_notify(0, "RELOADING=1");
	r = configure(d, false);
	sd_notify(0, "READY=1");
	return r;
}

/* an administrator's change through the socket: apply, then persist */
static int after_change(struct thpd *d, const char **failed_path)
{
	static char path[PATH_MAX];
	int r;

	refresh_normal(d);
	if (d->adaptive.state == THPD_ASTATE_STEPPED_DOWN)
		log_event(LOG_NOTICE, "override",
			  "Administrator changed THP settings while stepped down; back to normal");
	d->adaptive.state = THPD_ASTATE_NORMAL;
	r = thpd_persist_save(d->state_dir, &d->persist);
	if (r < 0) {
		if ((size_t)snprintf(path, sizeof(path), "%s/" THPD_STATE_FILE, d->state_dir) >=
		    sizeof(path))
			path[0] = '\0';
		*failed_path = path;
		log_err("Failed to persist the new setting in %s: %s", path, strerror(-r));
	}
	return r;
}
int thpd_set_enabled(struct thpd *d, const char *value, const char **failed_path)
{
	struct thp_mode_req req;
	char from[16];
	int r;

	r = thp_mode_parse(value, &req);
	if (r < 0)
		return r;
	snprintf(from, sizeof(from), "%s", d->normal_enabled);
	r = thp_state_apply(&req, failed_path);
	if (r < 0)
		return r;
	snprintf(d->persist.enabled, sizeof(d->persist.enabled), "%s",
		 thp_enabled_name(req.enabled));
	if (req.defrag)
		snprintf(d->persist.defrag, sizeof(d->persist.defrag), "%s", req.defrag);
	thpd_logf(LOG_NOTICE, &(const struct thpd_log_fields){
			.event = "set-enabled", .from = from, .to = value, .reason = "socket request" },
		  "enabled set to %s through the socket (was %s)", value, from);
	return after_change(d, failed_path);
}

int thpd_set_defrag(struct thpd *d, const char *value, const char **failed_path)
{
	char from[16];
	int r;

	if (thp_defrag_valid(value) < 0)
		return -EINVAL;
	snprintf(from, sizeof(from), "%s", d->normal_defrag);
	r = thp_defrag_apply(value, failed_path);
	if (r < 0)
		return r;
	snprintf(d->persist.defrag, sizeof(d->persist.defrag), "%s", value);
	thpd_logf(LOG_NOTICE, &(const struct thpd_log_fields){
			.event = "set-defrag", .from = from, .to = value, .reason = "socket request" },
		  "defrag set to %s through the socket (was %s)", value, from);
	return after_change(d, failed_path);
}
