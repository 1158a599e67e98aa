// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What thpd applies, and when: the start-up / reload path (one function
 * for both), the precedence of the kernel command line, the persisted
 * state and the configuration, socket-initiated changes, and restoring the
 * host on stop.
 *
 * Precedence of the `enabled` setting (documented in thpd(8)):
 *   1. transparent_hugepage= on the kernel command line, when
 *      HonorKernelCmdline=yes (the default): the boot-time override wins;
 *   2. what an administrator set through the socket (persisted state);
 *   3. [Global] Mode= of the configuration;
 *   4. otherwise thpd leaves it alone.
 * The same for defrag, where a numeric Mode (which sets defrag as well)
 * counts as a defrag setting of the same rank.
 */
#include "thpd.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "log.h"

uint64_t thpd_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

int thpd_cmdline_thp(const char *cmdline, char *out, size_t size)
{
	static const char key[] = "transparent_hugepage=";
	const char *p = cmdline;
	int found = -ENOENT;

	/* the last one wins, as for the kernel's own __setup() parsing */
	while (*p) {
		size_t len;

		while (*p == ' ' || *p == '\n' || *p == '\t')
			p++;
		len = strcspn(p, " \t\n");
		if (len > sizeof(key) - 1 && strncmp(p, key, sizeof(key) - 1) == 0) {
			size_t vlen = len - (sizeof(key) - 1);

			if (vlen < size) {
				memcpy(out, p + sizeof(key) - 1, vlen);
				out[vlen] = '\0';
				found = 0;
			}
		}
		p += len;
	}
	return found;
}

int thpd_target_compute(const struct thpd_config *cfg, const struct thpd_persist *persist,
			const char *cmdline_thp, struct thpd_target *t)
{
	struct thp_mode_req req;
	bool cmdline = cfg->honor_kernel_cmdline && cmdline_thp && *cmdline_thp &&
		       thp_mode_parse(cmdline_thp, &req) == 0;

	memset(t, 0, sizeof(*t));
	if (cmdline) {
		snprintf(t->mode, sizeof(t->mode), "%s", cmdline_thp);
		t->mode_src = "kernel command line";
		if (req.rfc >= 0) {
			/* the number already chose defrag at boot */
			return 0;
		}
	} else if (persist->enabled[0]) {
		snprintf(t->mode, sizeof(t->mode), "%s", persist->enabled);
		t->mode_src = "persisted state";
	} else if (cfg->mode[0]) {
		snprintf(t->mode, sizeof(t->mode), "%s", cfg->mode);
		t->mode_src = "configuration";
	}
	if (persist->defrag[0]) {
		snprintf(t->defrag, sizeof(t->defrag), "%s", persist->defrag);
		t->defrag_src = "persisted state";
	} else if (cfg->defrag[0]) {
		snprintf(t->defrag, sizeof(t->defrag), "%s", cfg->defrag);
		t->defrag_src = "configuration";
	}
	return 0;
}

/* ---- the host's values before thpd, kept across crash restarts ---- */

static int saved_path(const struct thpd *d, char *buf, size_t size)
{
	if (!d->runtime_dir[0])
		return -ENOENT;
	if ((size_t)snprintf(buf, size, "%s/saved", d->runtime_dir) >= size)
		return -ENAMETOOLONG;
	return 0;
}

static int saved_load(struct thpd *d)
{
	char path[PATH_MAX], line[128], name[64], val[16];
	FILE *f;

	if (saved_path(d, path, sizeof(path)) < 0)
		return -ENOENT;
	f = fopen(path, "re");
	if (!f)
		return -errno;
	memset(&d->saved, 0, sizeof(d->saved));
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%63s %15s", name, val) != 2)
			continue;
		if (strcmp(name, "enabled") == 0 && thp_enabled_from_name(val) >= 0) {
			d->saved.have_enabled = true;
			snprintf(d->saved.enabled, sizeof(d->saved.enabled), "%s", val);
		} else if (strcmp(name, "defrag") == 0 && thp_defrag_valid(val) == 0) {
			d->saved.have_defrag = true;
			snprintf(d->saved.defrag, sizeof(d->saved.defrag), "%s", val);
		} else {
			for (int k = 0; k < THPD_KH_N; k++)
				if (strcmp(name, thpd_kh_file(k)) == 0) {
					d->saved.have_kh[k] = true;
					d->saved.kh[k] = strtoull(val, NULL, 10);
				}
		}
	}
	fclose(f);
	return 0;
}

static void saved_store(const struct thpd *d)
{
	char path[PATH_MAX], tmp[PATH_MAX + 8];
	FILE *f;

	if (saved_path(d, path, sizeof(path)) < 0)
		return;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "we");
	if (!f) {
		log_warn("Cannot write %s: %m; a restart after a crash will not know the original settings",
			 tmp);
		return;
	}
	if (d->saved.have_enabled)
		fprintf(f, "enabled %s\n", d->saved.enabled);
	if (d->saved.have_defrag)
		fprintf(f, "defrag %s\n", d->saved.defrag);
	for (int k = 0; k < THPD_KH_N; k++)
		if (d->saved.have_kh[k])
			fprintf(f, "%s %" PRIu64 "\n", thpd_kh_file(k), d->saved.kh[k]);
	if (fclose(f) != 0 || rename(tmp, path) < 0)
		log_warn("Cannot write %s: %m", path);
}

static void saved_read_kernel(struct thpd *d)
{
	struct thp_state st;

	memset(&d->saved, 0, sizeof(d->saved));
	if (thp_state_read(&st) == 0) {
		d->saved.have_enabled = true;
		snprintf(d->saved.enabled, sizeof(d->saved.enabled), "%s",
			 thp_enabled_name(st.enabled));
		d->saved.have_defrag = true;
		snprintf(d->saved.defrag, sizeof(d->saved.defrag), "%s", st.defrag);
	}
	for (int k = 0; k < THPD_KH_N; k++)
		d->saved.have_kh[k] = thp_khugepaged_read(thpd_kh_file(k), &d->saved.kh[k]) == 0;
}

void thpd_restore(struct thpd *d)
{
	char path[PATH_MAX];
	struct thp_mode_req req;
	const char *failed = NULL;
	int r;

	if (!d->saved.have_enabled && !d->saved.have_defrag)
		return;	/* never got as far as saving anything */
	if (!d->cfg.restore_on_stop)
		goto out;
	if (d->saved.have_enabled && thp_mode_parse(d->saved.enabled, &req) == 0) {
		r = thp_state_apply(&req, &failed);
		if (r < 0)
			log_err("Failed to restore enabled=%s (%s): %s", d->saved.enabled,
				failed ? failed : "?", strerror(-r));
	}
	if (d->saved.have_defrag) {
		r = thp_defrag_apply(d->saved.defrag, &failed);
		if (r < 0)
			log_err("Failed to restore defrag=%s (%s): %s", d->saved.defrag,
				failed ? failed : "?", strerror(-r));
	}
	for (int k = 0; k < THPD_KH_N; k++) {
		if (!d->saved.have_kh[k] || !d->cfg.kh_set[k])
			continue;
		r = thp_khugepaged_write(thpd_kh_file(k), d->saved.kh[k]);
		if (r < 0)
			log_err("Failed to restore khugepaged/%s=%" PRIu64 ": %s", thpd_kh_file(k),
				d->saved.kh[k], strerror(-r));
	}
	log_event(LOG_INFO, "restored", "Restored THP settings to enabled=%s defrag=%s",
		  d->saved.enabled, d->saved.defrag);
out:
	/* a clean stop: the next start reads the kernel afresh */
	if (saved_path(d, path, sizeof(path)) == 0)
		unlink(path);
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

struct diag_state {
	bool starting;
	unsigned int warnings;
};

static void report_diag(void *userdata, enum thpd_diag_level level, const char *file,
			unsigned int line, const char *msg)
{
	struct diag_state *ds = userdata;
	struct thpd_log_fields f = { .event = "config", .file = file, .line = line };

	ds->warnings++;
	if (file && line)
		thpd_logf(level == THPD_DIAG_FATAL ? LOG_ERR : LOG_WARNING, &f, "%s:%u: %s", file,
			  line, msg);
	else if (file)
		thpd_logf(level == THPD_DIAG_FATAL ? LOG_ERR : LOG_WARNING, &f, "%s: %s", file, msg);
	else
		thpd_logf(level == THPD_DIAG_FATAL ? LOG_ERR : LOG_WARNING, &f, "%s", msg);
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

int thpd_configure(struct thpd *d, bool starting)
{
	struct diag_state ds = { .starting = starting };
	struct thpd_diag diag = { .report = report_diag, .userdata = &ds };
	struct thpd_config *cfg;
	char cmdline[4096], msrc[64], dsrc[64];
	int r;

	/* large: keep it off the stack */
	cfg = malloc(sizeof(*cfg));
	if (!cfg)
		return -ENOMEM;
	r = thpd_config_load(cfg, d->config_path, &diag);
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
		if (saved_load(d) == 0) {
			log_info("Restarted: original settings from %s/saved (enabled=%s defrag=%s)",
				 d->runtime_dir, d->saved.enabled, d->saved.defrag);
		} else {
			saved_read_kernel(d);
			saved_store(d);
		}
		r = thpd_persist_load(d->state_dir, &d->persist);
		if (r == -EBADMSG)
			log_warn("Ignoring %s/" THPD_STATE_FILE ": not a valid thpd state file",
				 d->state_dir);
		else if (r < 0 && r != -ENOENT)
			log_warn("Cannot read %s/" THPD_STATE_FILE ": %s", d->state_dir,
				 strerror(-r));
		if (thp_read_file("/proc/cmdline", cmdline, sizeof(cmdline)) < 0 ||
		    thpd_cmdline_thp(cmdline, d->cmdline_thp, sizeof(d->cmdline_thp)) < 0)
			d->cmdline_thp[0] = '\0';
	}

	thpd_target_compute(&d->cfg, &d->persist, d->cmdline_thp, &d->target);
	if (d->cmdline_thp[0] && d->cfg.honor_kernel_cmdline &&
	    (d->cfg.mode[0] || d->persist.enabled[0]))
		log_info("transparent_hugepage=%s on the kernel command line takes precedence over Mode=%s",
			 d->cmdline_thp, d->persist.enabled[0] ? d->persist.enabled : d->cfg.mode);
	r = apply_target(d);
	if (r < 0 && starting)
		return r == -EINVAL ? -EIO : r;	/* -EINVAL means "bad configuration" */

	thpd_adaptive_init(&d->adaptive);
	thpd_adaptive_sources_close(d);
	if (d->event) {
		int s = thpd_adaptive_sources(d);

		if (s < 0)
			log_warn("Adaptive switching is not available: %s", strerror(-s));
		thpd_rules_source_close(d);
		thpd_rules_source(d);
	}

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

void thpd_teardown(struct thpd *d)
{
	thpd_rules_source_close(d);
	thpd_adaptive_sources_close(d);
	thpd_server_close(d);
}
