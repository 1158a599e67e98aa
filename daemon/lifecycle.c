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
	char why[512];
	int r;

	if (!o->have_enabled && !o->have_defrag)
		return;	/* never got as far as saving anything */
	if (!d->cfg.restore_on_stop)
		goto out;
	r = thpd_apply_settings(o->have_enabled ? o->enabled : NULL,
				o->have_defrag ? o->defrag : NULL, why, sizeof(why));
	if (r < 0)
		log_err("Failed to restore enabled=%s defrag=%s: %s", o->enabled, o->defrag, why);
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

/* enabled and defrag as the kernel has them now; -errno when unreadable */
static int read_pair(char *enabled, size_t esize, char *defrag, size_t dsize)
{
	char text[256];
	int r;

	r = thp_read_file(THP_SYSFS_DIR "/enabled", text, sizeof(text));
	if (r >= 0)
		r = thp_parse_bracketed(text, enabled, esize);
	if (r >= 0)
		r = thp_read_file(THP_SYSFS_DIR "/defrag", text, sizeof(text));
	if (r >= 0)
		r = thp_parse_bracketed(text, defrag, dsize);
	return r < 0 ? r : 0;
}

int thpd_apply_settings(const char *enabled, const char *defrag, char *why, size_t size)
{
	char old_enabled[16], old_defrag[16];
	const char *failed = NULL, *rb_failed = NULL;
	struct thp_mode_req req, old_req;
	bool changed_enabled = false, changed_defrag = false;
	int r = 0, rb = 0;

	why[0] = '\0';
	if (enabled && !*enabled)
		enabled = NULL;
	if (defrag && !*defrag)
		defrag = NULL;
	if ((enabled && thp_mode_parse(enabled, &req) < 0) || (defrag && thp_defrag_valid(defrag) < 0)) {
		snprintf(why, size, "invalid value");
		return -EINVAL;
	}
	/* what to go back to when a later write fails */
	r = read_pair(old_enabled, sizeof(old_enabled), old_defrag, sizeof(old_defrag));
	if (r < 0) {
		snprintf(why, size, "cannot read the current THP settings: %s; nothing was changed",
			 strerror(-r));
		return r;
	}
	if (enabled) {
		r = thp_state_apply(&req, &failed);
		/* a number on a stock kernel: enabled, then defrag */
		changed_enabled = r == 0 || (failed && strcmp(failed, THP_SYSFS_DIR "/defrag") == 0);
		changed_defrag = r == 0 && (req.defrag || req.rfc >= 0);
	}
	if (r == 0 && defrag) {
		r = thp_defrag_apply(defrag, &failed);
		changed_defrag |= r == 0;
	}
	if (r == 0)
		return 0;
	/* a change of two files happens whole or not at all: undo what was written */
	if (changed_enabled && thp_mode_parse(old_enabled, &old_req) == 0) {
		old_req.defrag = NULL;	/* a word: enabled only */
		rb = thp_state_apply(&old_req, &rb_failed);
	}
	if (rb == 0 && changed_defrag)
		rb = thp_defrag_apply(old_defrag, &rb_failed);
	if (rb == 0 && !changed_enabled && !changed_defrag)
		snprintf(why, size, "writing %s failed: %s; nothing was changed",
			 failed ? failed : "?", strerror(-r));
	else if (rb == 0)
		snprintf(why, size, "writing %s failed: %s; rolled back to enabled=%s defrag=%s",
			 failed ? failed : "?", strerror(-r), old_enabled, old_defrag);
	else
		snprintf(why, size,
			 "writing %s failed: %s; rolling back failed too (%s: %s): the host may be left half-changed",
			 failed ? failed : "?", strerror(-r), rb_failed ? rb_failed : "?", strerror(-rb));
	return r;
}

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
	char why[512];
	int r, ret = 0;

	r = thpd_apply_settings(t->mode, t->defrag, why, sizeof(why));
	if (r < 0) {
		log_err("Failed to apply Mode=%s (from the %s), Defrag=%s (from the %s): %s",
			t->mode[0] ? t->mode : "-", t->mode_src ? t->mode_src : "-",
			t->defrag[0] ? t->defrag : "-", t->defrag_src ? t->defrag_src : "-", why);
		ret = r;
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

/* ---- an administrator's change through the socket ---- */

/* the persisted state is saved first; the host is changed only after that */
static int change(struct thpd *d, const struct thpd_persist *next, const char *enabled,
		  const char *defrag, const char *what, const char *value, char *why, size_t size)
{
	char from[40], state[PATH_MAX + 16], applied[256];
	int r, r2;

	snprintf(state, sizeof(state), "%s/" THPD_STATE_FILE, d->state_dir);
	r = thpd_persist_save(d->state_dir, next);
	if (r < 0) {
		snprintf(why, size, "cannot save the setting in %s: %s; nothing was changed", state,
			 strerror(-r));
		log_err("Refused %s=%s: %s", what, value, why);
		return r;
	}
	r = thpd_apply_settings(enabled, defrag, applied, sizeof(applied));
	if (r < 0) {
		/* the disk goes back to what the host and status still say */
		r2 = thpd_persist_save(d->state_dir, &d->persist);
		snprintf(why, size, "%s%s%s", applied, r2 < 0 ? "; restoring " : "",
			 r2 < 0 ? state : "");
		if (r2 < 0)
			snprintf(why + strlen(why), size - strlen(why), " failed too: %s",
				 strerror(-r2));
		log_err("Failed to set %s=%s: %s", what, value, why);
		refresh_normal(d);
		return r;
	}
	snprintf(from, sizeof(from), "%s/%s", d->normal_enabled, d->normal_defrag);
	d->persist = *next;
	refresh_normal(d);
	if (d->adaptive.state == THPD_ASTATE_STEPPED_DOWN)
		log_event(LOG_NOTICE, "override",
			  "Administrator changed THP settings while stepped down; back to normal");
	d->adaptive.state = THPD_ASTATE_NORMAL;
	thpd_logf(LOG_NOTICE, &(const struct thpd_log_fields){
			.event = strcmp(what, "enabled") == 0 ? "set-enabled" : "set-defrag",
			.from = from, .to = value, .reason = "socket request" },
		  "%s set to %s through the socket (enabled/defrag was %s)", what, value, from);
	return 0;
}

int thpd_set_enabled(struct thpd *d, const char *value, char *why, size_t size)
{
	struct thpd_persist next = d->persist;
	struct thp_mode_req req;

	why[0] = '\0';
	if (thp_mode_parse(value, &req) < 0)
		return -EINVAL;
	snprintf(next.enabled, sizeof(next.enabled), "%s", thp_enabled_name(req.enabled));
	if (req.defrag)
		snprintf(next.defrag, sizeof(next.defrag), "%s", req.defrag);
	return change(d, &next, value, NULL, "enabled", value, why, size);
}

int thpd_set_defrag(struct thpd *d, const char *value, char *why, size_t size)
{
	struct thpd_persist next = d->persist;

	why[0] = '\0';
	if (thp_defrag_valid(value) < 0)
		return -EINVAL;
	snprintf(next.defrag, sizeof(next.defrag), "%s", value);
	return change(d, &next, NULL, value, "defrag", value, why, size);
}
