// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What thpd writes, and when: start and reload (one path for both), the
 * administrator's changes through the socket, the stop. What the host
 * should hold is decided by the state machine (adaptive.h) from the target
 * (precedence.c: a pure function of the command line, persisted state,
 * configuration and originals); this file feeds it the events and makes
 * the host hold what it says (thpd_hold). The host's original values are
 * originals.c; what an administrator set is persist.c. See thpd.h.
 */
#include "thpd.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "log.h"
#include "safe-file.h"

/* ---- shmem_enabled and the sizes ---- */

/* the model of the running kernel, malloc'ed (every size's stats make it large); NULL: logged */
static struct thp_model *model_read(const char *what)
{
	struct thp_model *m = malloc(sizeof(*m));
	int r = m ? thp_model_read(m) : -ENOMEM;

	if (r < 0) {
		log_err("Cannot read the THP controls under %s%s%s%s: %s", thp_root(), THP_SYSFS_DIR,
			what ? " to " : "", what ? what : "", strerror(-r));
		free(m);
		return NULL;
	}
	return m;
}

/* " 16K 64K 2M": the sizes this kernel has directories for */
static const char *sizes_text(const struct thp_model *m, char *buf, size_t size)
{
	size_t used = 0;
	char name[16];

	buf[0] = '\0';
	for (int i = 0; i < m->nsizes; i++)
		if (m->size[i].has_dir && used < size)
			used += (size_t)snprintf(buf + used, size - used, " %s",
						 thp_size_name(m->size[i].kib, name, sizeof(name)));
	if (!used)
		snprintf(buf, size, " none");
	return buf;
}

/* the file of a knob, for messages: "shmem_enabled", "hugepages-64kB/enabled" */
static const char *knob_file(enum thp_knob_id knob, unsigned long kib, char *buf, size_t size)
{
	if (kib)
		snprintf(buf, size, "hugepages-%lukB/%s", kib, thp_knob(knob)->file);
	else
		snprintf(buf, size, "%s", thp_knob(knob)->file);
	return buf;
}

static struct thp_choice *model_choice(struct thp_model *m, enum thp_knob_id knob,
				       unsigned long kib)
{
	struct thp_size *s;

	if (!kib)
		return knob == THP_KNOB_ENABLED ? &m->enabled :
		       knob == THP_KNOB_DEFRAG ? &m->defrag : &m->shmem_enabled;
	s = (struct thp_size *)thp_model_size(m, kib);
	if (!s || !s->has_dir)
		return NULL;
	return knob == THP_KNOB_SIZE_ENABLED ? &s->enabled : &s->shmem_enabled;
}

/*
 * Can this kernel take word for the knob (at kib)? 0, or -ENOENT (no such
 * size), -EOPNOTSUPP (no such knob there), -EINVAL (a word it does not
 * list), with why saying which in words.
 */
static int knob_check(struct thp_model *m, enum thp_knob_id knob, unsigned long kib,
		      const char *word, char *why, size_t size)
{
	struct thp_choice *c = model_choice(m, knob, kib);
	char file[64], name[16], have[160];

	knob_file(knob, kib, file, sizeof(file));
	if (!c) {
		snprintf(why, size, "this kernel has no %s hugepages (no %s%s/hugepages-%lukB; its sizes:%s)",
			 thp_size_name(kib, name, sizeof(name)), thp_root(), THP_SYSFS_DIR, kib,
			 m->per_size ? sizes_text(m, have, sizeof(have)) : " none, no per-size controls");
		return -ENOENT;
	}
	if (!c->n) {
		snprintf(why, size, "this kernel has no %s", file);
		return -EOPNOTSUPP;
	}
	if (!thp_choice_offers(c, word)) {
		size_t used = 0;

		for (int i = 0; i < c->n && used < sizeof(have); i++)
			used += (size_t)snprintf(have + used, sizeof(have) - used, "%s%s",
						 i ? " " : "", c->word[i]);
		snprintf(why, size, "%s does not offer '%s' on this kernel (it offers: %s)", file,
			 word, have);
		return -EINVAL;
	}
	return 0;
}

/*
 * Apply one value of the target: a size or knob the kernel does not have
 * (or a word it does not offer) is a warning and skipped; a failed write is
 * an error. 0 or the write's -errno.
 */
static int apply_word(struct thp_model *m, enum thp_knob_id knob, unsigned long kib,
		      const char *word, const char *src, const struct thpd_config *cfg,
		      const struct thpd_size_config *zc, char *wrote, size_t wsize)
{
	struct thp_choice *c;
	char file[64], why[512], where[PATH_MAX + 64] = "";
	const char *cur;
	int r;

	knob_file(knob, kib, file, sizeof(file));
	if (zc && src && strcmp(src, "configuration") == 0) {
		char name[16];

		snprintf(where, sizeof(where), ", [Size %s] at %s:%u",
			 thp_size_name(kib, name, sizeof(name)),
			 thpd_config_file(cfg, zc->origin_file), zc->origin_line);
	}
	r = knob_check(m, knob, kib, word, why, sizeof(why));
	if (r < 0) {
		log_warn("Not setting %s=%s (from the %s%s): %s; skipped", file, word, src, where, why);
		return 0;
	}
	c = model_choice(m, knob, kib);
	cur = thp_choice_value(c);
	if (cur && strcmp(cur, word) == 0)
		return 0;
	r = thp_knob_set(m, knob, kib, word);
	if (r < 0)
		log_err("Failed to set %s=%s (from the %s%s): %s", file, word, src, where,
			strerror(-r));
	else if (wrote && strlen(wrote) < wsize)
		snprintf(wrote + strlen(wrote), wsize - strlen(wrote), " %s=%s", file, word);
	return r;
}

/* v's shmem_enabled and sizes, " file=word" written into wrote; 0 or the first failed write's -errno */
static int hold_sizes(struct thpd *d, const struct thpd_target *v, char *wrote, size_t wsize)
{
	bool force = strcmp(v->shmem, "force") == 0;
	struct thp_model *m;
	int r, ret = 0;

	if (!v->shmem[0] && !v->n_sizes)
		return 0;
	m = model_read("set shmem_enabled and the sizes");
	if (!m)
		return -EIO;
	/* force is refused while a size but the PMD size inherits: sizes first then */
	if (v->shmem[0] && !force)
		ret = apply_word(m, THP_KNOB_SHMEM_ENABLED, 0, v->shmem, v->shmem_src, &d->cfg, NULL, wrote, wsize);
	for (unsigned int i = 0; i < v->n_sizes; i++) {
		const struct thpd_size_target *z = &v->sizes[i];

		if (z->enabled[0]) {
			r = apply_word(m, THP_KNOB_SIZE_ENABLED, z->kib, z->enabled, z->enabled_src,
				       &d->cfg, z->cfg, wrote, wsize);
			ret = ret ? ret : r;
		}
		if (z->shmem[0]) {
			r = apply_word(m, THP_KNOB_SIZE_SHMEM_ENABLED, z->kib, z->shmem, z->shmem_src,
				       &d->cfg, z->cfg, wrote, wsize);
			ret = ret ? ret : r;
		}
	}
	if (force) {
		r = apply_word(m, THP_KNOB_SHMEM_ENABLED, 0, v->shmem, v->shmem_src, &d->cfg, NULL, wrote, wsize);
		ret = ret ? ret : r;
	}
	free(m);
	return ret;
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

/*
 * v's enabled and defrag as one change (an RFC number as the number), where
 * the kernel holds another value; 0 or -errno with why
 */
static int hold_pair(const struct thpd_target *v, char *why, size_t size)
{
	char num[16], cur_e[16], cur_d[16];
	bool same_e, same_d;

	why[0] = '\0';
	if (read_pair(cur_e, sizeof(cur_e), cur_d, sizeof(cur_d)) == 0) {
		same_e = !v->enabled[0] || strcmp(cur_e, v->enabled) == 0;
		same_d = !v->defrag[0] || strcmp(cur_d, v->defrag) == 0;
		if (same_e && same_d)
			return 0;
		if (v->rfc < 0)
			return thpd_apply_settings(same_e ? NULL : v->enabled, same_d ? NULL : v->defrag,
						   why, size);
	}
	if (v->rfc >= 0) {
		snprintf(num, sizeof(num), "%d", v->rfc);
		return thpd_apply_settings(num, NULL, why, size);
	}
	return thpd_apply_settings(v->enabled, v->defrag, why, size);
}

/*
 * the khugepaged knobs of v where the kernel holds another value; 0 or the
 * first -errno (its knob into failed, may be NULL)
 */
static int hold_khugepaged(const struct thpd_target *v, int *failed)
{
	int r, ret = 0;

	for (int k = 0; k < THPD_KH_N; k++) {
		uint64_t cur;

		if (!v->kh_set[k] || (thp_khugepaged_read(thpd_kh_file(k), &cur) == 0 && cur == v->kh[k]))
			continue;
		r = thp_khugepaged_write(thpd_kh_file(k), v->kh[k]);
		if (r < 0) {
			log_err("Failed to set khugepaged/%s=%" PRIu64 " (from the %s): %s",
				thpd_kh_file(k), v->kh[k], v->kh_src[k] ? v->kh_src[k] : "-",
				strerror(-r));
			if (!ret && failed)
				*failed = k;
			ret = ret ? ret : r;
		}
	}
	return ret;
}

int thpd_hold(struct thpd *d, const struct thpd_target *v, const char *what, char *wrote,
	      size_t wsize)
{
	char why[512];
	int r, ret;

	if (wrote && wsize)
		wrote[0] = '\0';
	/*
	 * shmem_enabled and the sizes first: their own values do not depend on
	 * the top level, and every read of this change comes before its writes
	 */
	ret = hold_sizes(d, v, wrote, wsize);
	r = hold_pair(v, why, sizeof(why));
	if (r < 0) {
		log_err("Failed to %s enabled=%s (from the %s), defrag=%s (from the %s): %s", what,
			v->enabled[0] ? v->enabled : "-", v->enabled_src ? v->enabled_src : "-",
			v->defrag[0] ? v->defrag : "-", v->defrag_src ? v->defrag_src : "-", why);
		ret = ret ? ret : r;
	}
	r = hold_khugepaged(v, NULL);
	ret = ret ? ret : r;
	thp_state_read(&d->kernel);
	return ret;
}

void thpd_held(const struct thpd *d, struct thpd_target *v)
{
	thpd_machine_held(&d->machine, &d->cfg.adaptive, v);
}

/* $RUNTIME_DIRECTORY/handover, written by the package's postinst: true (and gone) when it was there */
static bool handover_take(const struct thpd *d)
{
	char text[64];
	int r;

	if (!d->runtime_dir[0])
		return false;
	r = thpd_safe_read(d->runtime_dir, THPD_HANDOVER_FILE, text, sizeof(text));
	if (r == -ENOENT)
		return false;
	thpd_safe_remove(d->runtime_dir, THPD_HANDOVER_FILE);
	return r >= 0;
}

/* "mode=1 enabled=always defrag=madvise" */
static void describe(char *buf, size_t size, const char *enabled, const char *defrag)
{
	int e = thp_enabled_from_name(enabled);

	snprintf(buf, size, "mode=%s enabled=%s defrag=%s",
		 e < 0 ? "?" : thp_rfc_mode((enum thp_enabled)e, defrag), enabled, defrag);
}

void thpd_act(struct thpd *d, enum thpd_action a, const struct thpd_target *before)
{
	char from[512], to[512], name[16];
	struct thpd_target after;
	struct thp_state st;
	struct thp_model *m;
	size_t fl, tl;

	if (a == THPD_ACT_NONE)
		return;
	thpd_held(d, &after);
	/* FROM= is what the kernel holds; TO= what it is to hold */
	if (thp_state_read(&st) == 0)
		describe(from, sizeof(from), thp_enabled_name(st.enabled), st.defrag);
	else
		snprintf(from, sizeof(from), "?");
	describe(to, sizeof(to), after.enabled, after.defrag);
	m = malloc(sizeof(*m));
	if (m && thp_model_read(m) < 0) {
		free(m);
		m = NULL;
	}
	/* the sizes the step changes */
	for (unsigned int i = 0; i < after.n_sizes; i++) {
		const struct thpd_size_target *z = &after.sizes[i], *b = thpd_target_size(before, z->kib);
		const struct thp_choice *c = m ? model_choice(m, THP_KNOB_SIZE_ENABLED, z->kib) : NULL;

		if (!b || strcmp(b->enabled, z->enabled) == 0 || !c || !thp_choice_value(c))
			continue;
		thp_size_name(z->kib, name, sizeof(name));
		fl = strlen(from);
		tl = strlen(to);
		if (fl < sizeof(from))
			snprintf(from + fl, sizeof(from) - fl, " %s=%s", name, thp_choice_value(c));
		if (tl < sizeof(to))
			snprintf(to + tl, sizeof(to) - tl, " %s=%s", name, z->enabled);
	}
	free(m);
	thpd_hold(d, &after, a == THPD_ACT_STEP_DOWN ? "step down to" : "step up to", NULL, 0);
	thpd_logf(a == THPD_ACT_STEP_DOWN ? LOG_WARNING : LOG_NOTICE,
		  &(const struct thpd_log_fields){
			  .event = a == THPD_ACT_STEP_DOWN ? "step-down" : "step-up",
			  .from = from, .to = to, .reason = d->machine.adaptive.reason },
		  "%s: %s -> %s (%s; switch #%lu)",
		  a == THPD_ACT_STEP_DOWN ? "Stepping down" : "Stepping up", from, to,
		  d->machine.adaptive.reason, d->machine.adaptive.switches);
}

void thpd_stop(struct thpd *d)
{
	const struct thpd_originals *o = &d->originals;
	bool was_down = d->machine.adaptive.state == THPD_ASTATE_STEPPED_DOWN;
	enum thpd_stop how = d->cfg.restore_on_stop ? THPD_STOP_RESTORE : THPD_STOP_KEEP;
	struct thpd_target before, v;
	struct thp_state st;
	char wrote[512];

	if (!o->have_enabled && !o->have_defrag && !o->have_shmem && !o->n_sizes)
		return;	/* never got as far as saving anything */
	if (handover_take(d))
		how = THPD_STOP_HANDOVER;
	thpd_held(d, &before);
	if (!thpd_machine_stop(&d->machine, how, o, &v)) {
		if (thp_state_read(&st) < 0)
			memset(&st, 0, sizeof(st));
		log_event(LOG_INFO, "handover",
			  "Stopping for a package upgrade: the host keeps enabled=%s defrag=%s; the next thpd takes over with the originals in %s/" THPD_ORIGINALS_FILE,
			  thp_enabled_name(st.enabled), st.defrag[0] ? st.defrag : "?", d->runtime_dir);
		return;
	}
	if (how == THPD_STOP_RESTORE) {
		thpd_hold(d, &v, "restore", wrote, sizeof(wrote));
		log_event(LOG_INFO, "restored", "Restored THP settings to enabled=%s defrag=%s%s",
			  v.enabled, v.defrag, wrote);
	} else if (was_down) {
		/* RestoreOnStop=no leaves the target, not a step-down's values */
		thpd_act(d, THPD_ACT_STEP_UP, &before);
	}
	thpd_originals_forget(d->runtime_dir, THPD_ORIGINALS_FILE);
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
	int r = thpd_originals_load(d->runtime_dir, THPD_ORIGINALS_FILE, &d->originals);

	if (d->runtime_dir[0]) {
		/* an earlier thpd's record of a step-down: the target is computed now, not recovered */
		thpd_safe_remove(d->runtime_dir, "stepped-down");
		/* an upgrade's handover that no stop took (an older thpd stopped) */
		thpd_safe_remove(d->runtime_dir, THPD_HANDOVER_FILE);
	}
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
	r = thpd_originals_store(d->runtime_dir, THPD_ORIGINALS_FILE, &d->originals);
	if (r < 0)
		log_warn("Cannot write %s/" THPD_ORIGINALS_FILE
			 ": %s; a restart after a crash will not know the original settings",
			 d->runtime_dir, strerror(-r));
}

/*
 * Which of the boot parameters newer than transparent_hugepage= the running
 * kernel takes, from their __setup handlers in /proc/kallsyms (init code
 * stays listed after it is freed). A kernel hands a parameter it does not
 * know to init instead: Debian's 6.12 takes thp_anon= but not
 * transparent_hugepage_shmem= or thp_shmem=. Unreadable: all taken, as
 * before (no kallsyms, no way to tell).
 */
static const struct {
	const char *param, *handler;
} boot_params[] = {
	{ "thp_anon", "setup_thp_anon" },
	{ "transparent_hugepage_shmem", "setup_transparent_hugepage_shmem" },
	{ "thp_shmem", "setup_thp_shmem" },
};
#define N_BOOT_PARAMS (sizeof(boot_params) / sizeof(boot_params[0]))

static int boot_params_known(bool known[N_BOOT_PARAMS])
{
	char path[PATH_MAX], *line = NULL, *name;
	size_t cap = 0;
	FILE *f;
	int r = thp_path(path, sizeof(path), "/proc/kallsyms");

	if (r < 0)
		return r;
	f = fopen(path, "re");
	if (!f)
		return -errno;
	memset(known, 0, N_BOOT_PARAMS * sizeof(known[0]));
	/* "ffffffff835bb870 t setup_thp_anon", a module's with " [name]" after */
	while (getline(&line, &cap, f) > 0) {
		name = strchr(line, ' ');
		name = name ? strchr(name + 1, ' ') : NULL;
		if (!name || strncmp(name + 1, "setup_", 6) != 0)
			continue;
		name[1 + strcspn(name + 1, " \t\n")] = '\0';
		for (size_t i = 0; i < N_BOOT_PARAMS; i++)
			known[i] |= strcmp(name + 1, boot_params[i].handler) == 0;
	}
	free(line);
	fclose(f);
	return 0;
}

/* a parameter on the command line that the running kernel ignored is ignored too */
static void drop_unknown_boot_params(struct thp_cmdline *cl)
{
	bool set[N_BOOT_PARAMS] = { cl->anon_set, cl->shmem[0] != '\0', cl->shmem_sizes_set };
	bool known[N_BOOT_PARAMS];

	if (!set[0] && !set[1] && !set[2])
		return;
	if (boot_params_known(known) < 0)
		return;
	for (size_t i = 0; i < N_BOOT_PARAMS; i++) {
		if (!set[i] || known[i])
			continue;
		log_warn("Ignoring %s= on the kernel command line: this kernel does not take it (no %s in /proc/kallsyms)",
			 boot_params[i].param, boot_params[i].handler);
		if (i == 0) {
			cl->anon_set = false;
			memset(cl->anon, 0, sizeof(cl->anon));
		} else if (i == 1) {
			cl->shmem[0] = '\0';
		} else {
			cl->shmem_sizes_set = false;
			memset(cl->shmem_sizes, 0, sizeof(cl->shmem_sizes));
		}
	}
}

static void boot_inputs_init(struct thpd *d)
{
	char cmdline[8192];
	int r = thpd_persist_load(d->state_dir, &d->persist);

	if (r == -EBADMSG)
		log_warn("Ignoring %s/" THPD_STATE_FILE ": not a valid thpd state file", d->state_dir);
	else if (r < 0 && r != -ENOENT)
		log_warn("Cannot read %s/" THPD_STATE_FILE ": %s", d->state_dir, strerror(-r));
	if (thp_read_file("/proc/cmdline", cmdline, sizeof(cmdline)) < 0)
		cmdline[0] = '\0';
	/* read as this kernel read it: ours takes the RFC numbers, a stock one does not */
	if (thp_cmdline_parse(cmdline, d->kernel.has_mode_file ? THP_CMDLINE_NUMBERS : 0,
			      &d->cmdline) < 0)
		memset(&d->cmdline, 0, sizeof(d->cmdline));
	drop_unknown_boot_params(&d->cmdline);
	for (int i = 0; i < THP_CMDLINE_N; i++)
		if (d->cmdline.refused[i])
			log_warn("Ignoring %u %s= on the kernel command line: the kernel refused %s whole",
				 d->cmdline.refused[i], thp_cmdline_param_name((enum thp_cmdline_param)i),
				 d->cmdline.refused[i] == 1 ? "it" : "each");
	if (d->cmdline.for_init)
		log_info("Ignoring %u THP parameter%s after \"--\" on the kernel command line: arguments for init, not the kernel",
			 d->cmdline.for_init, d->cmdline.for_init == 1 ? "" : "s");
}

/* where the command line wins over the persisted state or the configuration, say so */
static void log_cmdline_precedence(const struct thpd *d)
{
	const struct thpd_target *t = &d->machine.target;
	char name[16];

	if (t->enabled_src && strcmp(t->enabled_src, THPD_SRC_CMDLINE) == 0 &&
	    (d->cfg.mode[0] || d->persist.enabled[0]))
		log_info("transparent_hugepage=%s on the kernel command line takes precedence over Mode=%s",
			 d->cmdline.thp, d->persist.enabled[0] ? d->persist.enabled : d->cfg.mode);
	if (t->shmem_src && strcmp(t->shmem_src, THPD_SRC_CMDLINE) == 0 &&
	    (d->persist.shmem[0] || d->cfg.shmem[0]))
		log_info("transparent_hugepage_shmem=%s on the kernel command line takes precedence over Shmem=%s",
			 t->shmem, d->persist.shmem[0] ? d->persist.shmem : d->cfg.shmem);
	for (unsigned int i = 0; i < t->n_sizes; i++) {
		const struct thpd_size_target *z = &t->sizes[i];
		const struct thpd_size_config *c = z->cfg;
		struct thpd_persist_size *p =
			thpd_persist_size((struct thpd_persist *)&d->persist, z->kib, false);

		thp_size_name(z->kib, name, sizeof(name));
		if (z->enabled_src && strcmp(z->enabled_src, THPD_SRC_CMDLINE) == 0 &&
		    ((p && p->enabled[0]) || (c && c->enabled[0])))
			log_info("thp_anon= on the kernel command line sets %s to %s, over Enabled=%s of [Size %s]",
				 name, z->enabled, p && p->enabled[0] ? p->enabled : c->enabled, name);
		if (z->shmem_src && strcmp(z->shmem_src, THPD_SRC_CMDLINE) == 0 &&
		    ((p && p->shmem[0]) || (c && c->shmem[0])))
			log_info("thp_shmem= on the kernel command line sets %s to %s, over Shmem=%s of [Size %s]",
				 name, z->shmem, p && p->shmem[0] ? p->shmem : c->shmem, name);
	}
}

static struct thpd_inputs inputs(const struct thpd *d, const struct thpd_persist *persist)
{
	return (struct thpd_inputs){ .cfg = &d->cfg, .persist = persist, .cmdline = &d->cmdline,
				     .originals = &d->originals };
}

static int configure(struct thpd *d, bool starting)
{
	struct thpd_diag diag = { .report = report_diag };
	struct thpd_config *cfg;
	struct thpd_inputs in;
	struct thpd_target v;
	char msrc[80], dsrc[80];
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

	/* start and reload alike: the target of the inputs, normal (a step-down ends) */
	in = inputs(d, &d->persist);
	thpd_machine_start(&d->machine, &in);
	log_cmdline_precedence(d);
	thpd_held(d, &v);
	r = thpd_hold(d, &v, "apply", NULL, 0);
	if (r < 0 && starting) {
		log_err("Start-up self-check failed: the configured settings cannot be applied");
		return r == -EINVAL ? -EIO : r;	/* -EINVAL means "bad configuration" */
	}

	if (d->event && d->on_configured)
		d->on_configured(d);

	snprintf(msrc, sizeof(msrc), "Mode from %s", v.enabled_src ? v.enabled_src : "nowhere");
	snprintf(dsrc, sizeof(dsrc), "Defrag from %s", v.defrag_src ? v.defrag_src : "nowhere");
	log_event(LOG_INFO, starting ? "started" : "reloaded",
		  "%s: enabled=%s defrag=%s mode=%s (%s, %s), %u rule%s, adaptive %s",
		  starting ? "Configuration applied" : "Configuration reloaded", v.enabled,
		  v.defrag, d->kernel.mode, msrc, dsrc, d->cfg.n_rules,
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

/*
 * A change is saved before the host is written: next into the state file
 * (its path into state), or why it could not be and -errno
 */
static int save_first(struct thpd *d, const struct thpd_persist *next, char *state,
		      size_t ssize, char *why, size_t size)
{
	int r;

	snprintf(state, ssize, "%s/" THPD_STATE_FILE, d->state_dir);
	r = thpd_persist_save(d->state_dir, next);
	if (r < 0)
		snprintf(why, size, "cannot save the setting in %s: %s; nothing was changed", state,
			 strerror(-r));
	return r;
}

/*
 * A value the kernel command line sets wins over one set through the
 * socket (PRECEDENCE in thpd(8)): such a change is refused, saying so,
 * rather than saved and never held. -EBUSY with why, or 0.
 */
static int cmdline_holds(const struct thpd *d, const struct thpd_persist *next,
			 enum thp_knob_id knob, const unsigned long *kibs, int n, char *why,
			 size_t size)
{
	static const enum thp_cmdline_param param[THP_KNOB_COUNT] = {
		[THP_KNOB_ENABLED] = THP_CMDLINE_THP,
		[THP_KNOB_DEFRAG] = THP_CMDLINE_THP,
		[THP_KNOB_SHMEM_ENABLED] = THP_CMDLINE_SHMEM,
		[THP_KNOB_SIZE_ENABLED] = THP_CMDLINE_ANON,
		[THP_KNOB_SIZE_SHMEM_ENABLED] = THP_CMDLINE_SHMEM_SIZES,
	};
	struct thpd_inputs in = inputs(d, next);
	struct thpd_target t;
	char file[64];

	thpd_target_compute(&in, &t);
	for (int i = 0; i < (n ? n : 1); i++) {
		unsigned long kib = n ? kibs[i] : 0;
		const struct thpd_size_target *z = kib ? thpd_target_size(&t, kib) : NULL;
		const char *src = knob == THP_KNOB_ENABLED ? t.enabled_src :
				  knob == THP_KNOB_DEFRAG ? t.defrag_src :
				  knob == THP_KNOB_SHMEM_ENABLED ? t.shmem_src :
				  !z ? NULL : knob == THP_KNOB_SIZE_ENABLED ? z->enabled_src : z->shmem_src;
		const char *val = knob == THP_KNOB_ENABLED ? t.enabled :
				  knob == THP_KNOB_DEFRAG ? t.defrag :
				  knob == THP_KNOB_SHMEM_ENABLED ? t.shmem :
				  !z ? "" : knob == THP_KNOB_SIZE_ENABLED ? z->enabled : z->shmem;

		if (!src || strcmp(src, THPD_SRC_CMDLINE) != 0)
			continue;
		snprintf(why, size,
			 "%s= on the kernel command line sets %s to %s, and takes precedence over a value set through thpd (HonorKernelCmdline=no in thpd.conf lets it through); nothing was changed",
			 thp_cmdline_param_name(param[knob]), knob_file(knob, kib, file, sizeof(file)), val);
		return -EBUSY;
	}
	return 0;
}

/*
 * The persisted state becomes next (saved first), the machine takes the
 * change (adaptive.h: one of a value a step-down holds ends it), and the
 * host is made to hold what the machine says, enabled and defrag as one
 * change: when that fails, the disk and the machine go back. what/value
 * for the log (event: set-enabled, set-defrag, reset).
 */
static int change(struct thpd *d, const struct thpd_persist *next, enum thp_knob_id knob,
		  const char *event, const char *what, const char *value, char *why, size_t size)
{
	char from[40], state[PATH_MAX + 16], applied[256];
	struct thpd_machine old = d->machine;
	struct thpd_inputs in = inputs(d, next);
	struct thpd_target v;
	bool ended;
	int r, r2;

	r = knob == THP_KNOB_COUNT ? 0 : cmdline_holds(d, next, knob, NULL, 0, why, size);
	if (r == 0)
		r = save_first(d, next, state, sizeof(state), why, size);
	if (r < 0) {
		log_err("Refused %s=%s: %s", what, value, why);
		return r;
	}
	thpd_held(d, &v);
	snprintf(from, sizeof(from), "%s/%s", v.enabled, v.defrag);
	ended = thpd_machine_set(&d->machine, &in, true);
	thpd_held(d, &v);
	r = hold_pair(&v, applied, sizeof(applied));
	if (r < 0) {
		/* the disk and the machine go back to what the host and status still say */
		d->machine = old;
		r2 = thpd_persist_save(d->state_dir, &d->persist);
		snprintf(why, size, "%s%s%s", applied, r2 < 0 ? "; restoring " : "",
			 r2 < 0 ? state : "");
		if (r2 < 0)
			snprintf(why + strlen(why), size - strlen(why), " failed too: %s",
				 strerror(-r2));
		log_err("Failed to set %s=%s: %s", what, value, why);
		thp_state_read(&d->kernel);
		return r;
	}
	d->persist = *next;
	if (ended)
		log_event(LOG_NOTICE, "override",
			  "Administrator changed THP settings while stepped down; back to normal");
	/* the rest: the sizes a step-down held go back, the configuration's values are kept */
	thpd_hold(d, &v, "set", NULL, 0);
	if (knob == THP_KNOB_COUNT)
		thpd_logf(LOG_NOTICE, &(const struct thpd_log_fields){
				.event = event, .from = from, .to = "", .reason = "socket request" },
			  "Forgot every value set through the socket (enabled/defrag was %s)", from);
	else
		thpd_logf(LOG_NOTICE, &(const struct thpd_log_fields){
				.event = event, .from = from, .to = value, .reason = "socket request" },
			  "%s set to %s through the socket (enabled/defrag was %s)", what, value, from);
	return 0;
}

/* cmdline_holds(), logged */
static bool change_refused(struct thpd *d, const struct thpd_persist *next, enum thp_knob_id knob,
			   char *why, size_t size)
{
	if (cmdline_holds(d, next, knob, NULL, 0, why, size) == 0)
		return false;
	log_err("Refused a change through the socket: %s", why);
	return true;
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
	/* a number sets defrag too: the command line may hold either */
	if (req.defrag && change_refused(d, &next, THP_KNOB_DEFRAG, why, size))
		return -EBUSY;
	return change(d, &next, THP_KNOB_ENABLED, "set-enabled", "enabled", value, why, size);
}

int thpd_set_defrag(struct thpd *d, const char *value, char *why, size_t size)
{
	struct thpd_persist next = d->persist;

	why[0] = '\0';
	if (thp_defrag_valid(value) < 0)
		return -EINVAL;
	snprintf(next.defrag, sizeof(next.defrag), "%s", value);
	return change(d, &next, THP_KNOB_DEFRAG, "set-defrag", "defrag", value, why, size);
}

int thpd_reset(struct thpd *d, char *why, size_t size)
{
	struct thpd_persist next;

	why[0] = '\0';
	memset(&next, 0, sizeof(next));
	return change(d, &next, THP_KNOB_COUNT, "reset", "reset", "", why, size);
}

int thpd_set_knob(struct thpd *d, enum thp_knob_id knob, const char *value,
		  const unsigned long *kibs, int n, char *why, size_t size)
{
	static const unsigned long top = 0;
	struct thpd_persist next = d->persist;
	char old[THP_SIZES_MAX][16], file[64], state[PATH_MAX + 16], from[512] = "", to[512] = "";
	char err[512];
	struct thp_model *m;
	struct thpd_inputs in;
	struct thpd_target v;
	bool ended;
	int r = 0, r2, done = 0;

	why[0] = '\0';
	if ((knob != THP_KNOB_SHMEM_ENABLED && knob != THP_KNOB_SIZE_ENABLED &&
	     knob != THP_KNOB_SIZE_SHMEM_ENABLED) || !thp_knob_word_known(knob, value))
		return -EINVAL;
	if (knob == THP_KNOB_SHMEM_ENABLED) {
		kibs = &top;
		n = 1;
	}
	if (n < 1 || n > THP_SIZES_MAX) {
		snprintf(why, size, "between 1 and %d sizes, got %d", THP_SIZES_MAX, n);
		return -EINVAL;
	}
	m = malloc(sizeof(*m));
	r = m ? thp_model_read(m) : -ENOMEM;
	if (r < 0) {
		snprintf(why, size, "cannot read the THP controls: %s; nothing was changed",
			 strerror(-r));
		goto out;
	}
	/* every size is checked before anything is saved or written */
	for (int i = 0; i < n; i++) {
		r = knob_check(m, knob, kibs[i], value, err, sizeof(err));
		if (r < 0) {
			snprintf(why, size, "%s; nothing was changed", err);
			goto out;
		}
		snprintf(old[i], sizeof(old[i]), "%s",
			 thp_choice_value(model_choice(m, knob, kibs[i])));
		if (knob == THP_KNOB_SHMEM_ENABLED) {
			snprintf(next.shmem, sizeof(next.shmem), "%s", value);
		} else {
			struct thpd_persist_size *z = thpd_persist_size(&next, kibs[i], true);

			if (!z) {
				r = -ENOSPC;
				snprintf(why, size, "more than %d sizes to keep; nothing was changed",
					 THP_SIZES_MAX);
				goto out;
			}
			snprintf(knob == THP_KNOB_SIZE_ENABLED ? z->enabled : z->shmem,
				 sizeof(z->enabled), "%s", value);
		}
	}
	r = cmdline_holds(d, &next, knob, knob == THP_KNOB_SHMEM_ENABLED ? NULL : kibs,
			  knob == THP_KNOB_SHMEM_ENABLED ? 0 : n, why, size);
	if (r == 0)
		r = save_first(d, &next, state, sizeof(state), why, size);
	if (r < 0)
		goto out;
	for (done = 0; done < n; done++) {
		r = thp_knob_set(m, knob, kibs[done], value);
		if (r < 0)
			break;
		knob_file(knob, kibs[done], file, sizeof(file));
		if (strlen(from) < sizeof(from))
			snprintf(from + strlen(from), sizeof(from) - strlen(from), "%s%s=%s",
				 done ? " " : "", file, old[done]);
	}
	if (r < 0) {
		/* one change: what was written goes back, and so does the disk */
		int rb = 0;

		knob_file(knob, kibs[done], file, sizeof(file));
		for (int i = done - 1; i >= 0; i--) {
			int x = thp_knob_set(m, knob, kibs[i], old[i]);

			rb = rb ? rb : x;
		}
		r2 = thpd_persist_save(d->state_dir, &d->persist);
		snprintf(why, size, "writing %s failed: %s; %s%s%s%s", file, strerror(-r),
			 !done ? "nothing was changed" : rb ? "rolling back failed too: the host may be left half-changed" :
			 "rolled back", r2 < 0 ? "; restoring " : "", r2 < 0 ? state : "",
			 r2 < 0 ? " failed too" : "");
		goto out;
	}
	in = inputs(d, &next);
	ended = thpd_machine_set(&d->machine, &in, thpd_knob_stepped(knob));
	d->persist = next;
	if (ended)
		log_event(LOG_NOTICE, "override",
			  "Administrator changed THP settings while stepped down; back to normal");
	/* what a step-down held goes back to the target; what was written stays */
	thpd_held(d, &v);
	thpd_hold(d, &v, "set", NULL, 0);
	for (int i = 0; i < n; i++) {
		knob_file(knob, kibs[i], file, sizeof(file));
		if (strlen(to) < sizeof(to))
			snprintf(to + strlen(to), sizeof(to) - strlen(to), "%s%s=%s", i ? " " : "",
				 file, value);
	}
	thpd_logf(LOG_NOTICE, &(const struct thpd_log_fields){
			.event = knob == THP_KNOB_SHMEM_ENABLED ? "set-shmem" : "set-size",
			.from = from, .to = to, .reason = "socket request" },
		  "%s set through the socket (was %s)", to, from);
out:
	if (r < 0 && why[0])
		log_err("Refused %s=%s: %s", knob_file(knob, kibs[0], file, sizeof(file)), value, why);
	free(m);
	return r;
}

/* one less than the pages of a PMD: what the max_ptes_* stores take at most */
static unsigned long pmd_pages(void)
{
	char buf[32];
	long page = sysconf(_SC_PAGESIZE);
	unsigned long long bytes = 2UL << 20;

	if (thp_read_file(THP_SYSFS_DIR "/hpage_pmd_size", buf, sizeof(buf)) > 0)
		bytes = strtoull(buf, NULL, 10);
	return page > 0 ? (unsigned long)(bytes / (unsigned long)page) : 512;
}

int thpd_set_khugepaged(struct thpd *d, const bool set[THPD_KH_N],
			const uint64_t val[THPD_KH_N], char *why, size_t size)
{
	struct thpd_persist next = d->persist;
	struct thpd_machine old_machine = d->machine;
	struct thpd_inputs in = inputs(d, &next);
	struct thpd_target v;
	uint64_t old[THPD_KH_N], min, max;
	char state[PATH_MAX + 16], from[512] = "", to[512] = "";
	unsigned long pages = pmd_pages();
	int k, r = 0, n = 0, failed = 0;

	why[0] = '\0';
	/* every value is checked, and every old one read, before anything is saved or written */
	for (k = 0; k < THPD_KH_N; k++) {
		if (!set[k])
			continue;
		n++;
		if (thp_khugepaged_limits(thpd_kh_file(k), pages, &min, &max) < 0 ||
		    val[k] < min || val[k] > max) {
			snprintf(why, size, "khugepaged/%s takes %" PRIu64 " to %" PRIu64 ", not %" PRIu64
				 "; nothing was changed", thpd_kh_file(k), min, max, val[k]);
			return -EINVAL;
		}
		r = thp_khugepaged_read(thpd_kh_file(k), &old[k]);
		if (r < 0) {
			snprintf(why, size, "%s khugepaged/%s: %s; nothing was changed",
				 r == -ENOENT ? "this kernel has no" : "cannot read", thpd_kh_file(k),
				 r == -ENOENT ? "no such setting" : strerror(-r));
			return r;
		}
		next.kh_set[k] = true;
		next.kh[k] = val[k];
		if (strlen(from) < sizeof(from))
			snprintf(from + strlen(from), sizeof(from) - strlen(from), "%s%s=%" PRIu64,
				 from[0] ? " " : "", thpd_kh_file(k), old[k]);
		if (strlen(to) < sizeof(to))
			snprintf(to + strlen(to), sizeof(to) - strlen(to), "%s%s=%" PRIu64,
				 to[0] ? " " : "", thpd_kh_file(k), val[k]);
	}
	if (!n) {
		snprintf(why, size, "no khugepaged setting given");
		return -EINVAL;
	}
	r = save_first(d, &next, state, sizeof(state), why, size);
	if (r < 0)
		goto out;
	/* persisted state is an input of the target; a step-down does not hold khugepaged */
	thpd_machine_set(&d->machine, &in, false);
	thpd_held(d, &v);
	r = hold_khugepaged(&v, &failed);
	if (r < 0) {
		/* one change: the machine, what was written and the disk go back */
		int rb = 0, r2;

		d->machine = old_machine;
		for (int j = 0; j < THPD_KH_N; j++)
			if (set[j] && j != failed && thp_khugepaged_write(thpd_kh_file(j), old[j]) < 0)
				rb = -EIO;
		r2 = thpd_persist_save(d->state_dir, &d->persist);
		snprintf(why, size, "writing khugepaged/%s failed: %s; %s%s%s%s", thpd_kh_file(failed),
			 strerror(-r), rb ? "rolling back failed too: the host may be left half-changed" :
			 "nothing was changed", r2 < 0 ? "; restoring " : "", r2 < 0 ? state : "",
			 r2 < 0 ? " failed too" : "");
		goto out;
	}
	d->persist = next;
	thpd_logf(LOG_NOTICE, &(const struct thpd_log_fields){
			.event = "set-khugepaged", .from = from, .to = to, .reason = "socket request" },
		  "khugepaged %s set through the socket (was %s)", to, from);
out:
	if (r < 0)
		log_err("Refused khugepaged %s: %s", to, why);
	return r;
}
