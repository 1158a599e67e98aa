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
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "log.h"

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
		      const struct thpd_size_config *zc)
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
	return r;
}

/* the target's shmem_enabled and sizes; 0 or the first failed write's -errno */
static int apply_sizes(struct thpd *d)
{
	const struct thpd_target *t = &d->target;
	bool force = strcmp(t->shmem, "force") == 0;
	struct thp_model *m;
	int r, ret = 0;

	if (!t->shmem[0] && !t->n_sizes)
		return 0;
	m = model_read("apply shmem_enabled and the sizes");
	if (!m)
		return -EIO;
	/* force is refused while a size but the PMD size inherits: sizes first then */
	if (t->shmem[0] && !force)
		ret = apply_word(m, THP_KNOB_SHMEM_ENABLED, 0, t->shmem, t->shmem_src, &d->cfg, NULL);
	for (unsigned int i = 0; i < t->n_sizes; i++) {
		const struct thpd_size_target *z = &t->sizes[i];

		if (z->enabled[0]) {
			r = apply_word(m, THP_KNOB_SIZE_ENABLED, z->kib, z->enabled, z->enabled_src,
				       &d->cfg, z->cfg);
			ret = ret ? ret : r;
		}
		if (z->shmem[0]) {
			r = apply_word(m, THP_KNOB_SIZE_SHMEM_ENABLED, z->kib, z->shmem, z->shmem_src,
				       &d->cfg, z->cfg);
			ret = ret ? ret : r;
		}
	}
	if (force) {
		r = apply_word(m, THP_KNOB_SHMEM_ENABLED, 0, t->shmem, t->shmem_src, &d->cfg, NULL);
		ret = ret ? ret : r;
	}
	free(m);
	return ret;
}

/* write back one original value when the kernel holds another; " 64K=never" into out */
static void restore_word(struct thp_model *m, enum thp_knob_id knob, unsigned long kib,
			 const char *word, char *out, size_t size)
{
	struct thp_choice *c = model_choice(m, knob, kib);
	const char *cur = c ? thp_choice_value(c) : NULL;
	char file[64];
	size_t used = strlen(out);
	int r;

	if (!cur || strcmp(cur, word) == 0)
		return;
	knob_file(knob, kib, file, sizeof(file));
	r = thp_knob_set(m, knob, kib, word);
	if (r < 0)
		log_err("Failed to restore %s=%s: %s", file, word, strerror(-r));
	else if (used < size)
		snprintf(out + used, size - used, " %s=%s", file, word);
}

/*
 * shmem_enabled and every size's values as they were before thpd, where
 * the kernel holds another value now (thpd's, an administrator's through
 * the socket, a step-down's); what was written into out for the log
 */
static void restore_shmem_sizes(const struct thpd_originals *o, char *out, size_t size)
{
	bool force = o->have_shmem && strcmp(o->shmem, "force") == 0;
	struct thp_model *m;

	out[0] = '\0';
	if (!o->have_shmem && !o->n_sizes)
		return;
	m = model_read("restore shmem_enabled and the sizes");
	if (!m)
		return;
	if (o->have_shmem && !force)
		restore_word(m, THP_KNOB_SHMEM_ENABLED, 0, o->shmem, out, size);
	for (unsigned int i = 0; i < o->n_sizes; i++) {
		const struct thpd_original_size *z = &o->sizes[i];

		if (z->have_enabled)
			restore_word(m, THP_KNOB_SIZE_ENABLED, z->kib, z->enabled, out, size);
		if (z->have_shmem)
			restore_word(m, THP_KNOB_SIZE_SHMEM_ENABLED, z->kib, z->shmem, out, size);
	}
	if (force)
		restore_word(m, THP_KNOB_SHMEM_ENABLED, 0, o->shmem, out, size);
	free(m);
}

int thpd_sizes_step_up(struct thpd *d, char *from, size_t fsize, char *to, size_t tsize)
{
	struct thp_model *m;
	int r, ret = 0;

	if (!d->n_stepped)
		return 0;
	m = model_read("step the sizes up");
	if (!m)
		return -EIO;
	for (unsigned int i = 0; i < d->n_stepped; i++) {
		struct thp_choice *c = model_choice(m, THP_KNOB_SIZE_ENABLED, d->stepped[i].kib);
		const char *cur = c ? thp_choice_value(c) : NULL;
		char name[16], file[64];

		thp_size_name(d->stepped[i].kib, name, sizeof(name));
		r = cur ? thp_knob_set(m, THP_KNOB_SIZE_ENABLED, d->stepped[i].kib,
				       d->stepped[i].enabled) : -ENOENT;
		if (r < 0) {
			log_err("Failed to set %s=%s back: %s",
				knob_file(THP_KNOB_SIZE_ENABLED, d->stepped[i].kib, file, sizeof(file)),
				d->stepped[i].enabled, strerror(-r));
			ret = ret ? ret : r;
			continue;
		}
		if (from && strlen(from) < fsize)
			snprintf(from + strlen(from), fsize - strlen(from), " %s=%s", name, cur);
		if (to && strlen(to) < tsize)
			snprintf(to + strlen(to), tsize - strlen(to), " %s=%s", name,
				 d->stepped[i].enabled);
	}
	d->n_stepped = 0;
	free(m);
	return ret;
}

/*
 * What a step-down is about to replace (the normal enabled and defrag and
 * each stepped size's own word), kept in the runtime directory until the
 * step-up: a thpd that crashes while stepped down is restarted by systemd
 * and puts them back (stepped_recover) instead of taking the stepped-down
 * values for the host's.
 */
void thpd_stepped_save(struct thpd *d)
{
	struct thpd_originals s;
	int r;

	if (!d->runtime_dir[0])
		return;
	memset(&s, 0, sizeof(s));
	s.have_enabled = s.have_defrag = true;
	snprintf(s.enabled, sizeof(s.enabled), "%s", d->normal_enabled);
	snprintf(s.defrag, sizeof(s.defrag), "%s", d->normal_defrag);
	for (unsigned int i = 0; i < d->n_stepped; i++) {
		s.sizes[i].kib = d->stepped[i].kib;
		s.sizes[i].have_enabled = true;
		snprintf(s.sizes[i].enabled, sizeof(s.sizes[i].enabled), "%s", d->stepped[i].enabled);
	}
	s.n_sizes = d->n_stepped;
	r = thpd_originals_store(d->runtime_dir, THPD_STEPPED_FILE, &s);
	if (r < 0)
		log_warn("Cannot write %s/" THPD_STEPPED_FILE
			 ": %s; a restart after a crash would leave the host stepped down",
			 d->runtime_dir, strerror(-r));
}

void thpd_stepped_forget(struct thpd *d)
{
	if (d->runtime_dir[0])
		thpd_originals_forget(d->runtime_dir, THPD_STEPPED_FILE);
}

/* a crashed instance was stepped down: put back what its step-down replaced */
static void stepped_recover(struct thpd *d)
{
	struct thpd_originals s;
	char why[512], sizes[512];
	int r;

	if (!d->runtime_dir[0])
		return;
	r = thpd_originals_load(d->runtime_dir, THPD_STEPPED_FILE, &s);
	if (r == -ENOENT)
		return;
	if (r < 0) {
		log_warn("Ignoring %s/" THPD_STEPPED_FILE ": %s", d->runtime_dir, strerror(-r));
		goto out;
	}
	restore_shmem_sizes(&s, sizes, sizeof(sizes));
	r = thpd_apply_settings(s.have_enabled ? s.enabled : NULL, s.have_defrag ? s.defrag : NULL,
				why, sizeof(why));
	if (r < 0)
		log_err("Failed to step up to enabled=%s defrag=%s: %s", s.enabled, s.defrag, why);
	log_event(LOG_NOTICE, "step-up",
		  "Restarted while stepped down: put back enabled=%s defrag=%s%s", s.enabled,
		  s.defrag, sizes);
out:
	thpd_stepped_forget(d);
}

void thpd_restore(struct thpd *d)
{
	const struct thpd_originals *o = &d->originals;
	char why[512], sizes[512];
	int r;

	if (!o->have_enabled && !o->have_defrag && !o->have_shmem && !o->n_sizes)
		return;	/* never got as far as saving anything */
	if (!d->cfg.restore_on_stop)
		goto out;
	restore_shmem_sizes(o, sizes, sizeof(sizes));
	r = thpd_apply_settings(o->have_enabled ? o->enabled : NULL,
				o->have_defrag ? o->defrag : NULL, why, sizeof(why));
	if (r < 0)
		log_err("Failed to restore enabled=%s defrag=%s: %s", o->enabled, o->defrag, why);
	for (int k = 0; k < THPD_KH_N; k++) {
		if (!o->have_kh[k] || !d->target.kh_set[k])
			continue;
		r = thp_khugepaged_write(thpd_kh_file(k), o->kh[k]);
		if (r < 0)
			log_err("Failed to restore khugepaged/%s=%" PRIu64 ": %s", thpd_kh_file(k),
				o->kh[k], strerror(-r));
	}
	log_event(LOG_INFO, "restored", "Restored THP settings to enabled=%s defrag=%s%s",
		  o->enabled, o->defrag, sizes);
out:
	thpd_originals_forget(d->runtime_dir, THPD_ORIGINALS_FILE);
	thpd_stepped_forget(d);
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

	/*
	 * shmem_enabled and the sizes first: their own values do not depend on
	 * the top level, and every read of this change comes before its writes
	 */
	ret = apply_sizes(d);
	r = thpd_apply_settings(t->mode, t->defrag, why, sizeof(why));
	if (r < 0) {
		log_err("Failed to apply Mode=%s (from the %s), Defrag=%s (from the %s): %s",
			t->mode[0] ? t->mode : "-", t->mode_src ? t->mode_src : "-",
			t->defrag[0] ? t->defrag : "-", t->defrag_src ? t->defrag_src : "-", why);
		ret = ret ? ret : r;
	}
	for (int k = 0; k < THPD_KH_N; k++) {
		if (!t->kh_set[k])
			continue;
		r = thp_khugepaged_write(thpd_kh_file(k), t->kh_val[k]);
		if (r < 0) {
			log_err("Failed to set khugepaged/%s=%" PRIu64 " (from the %s): %s",
				thpd_kh_file(k), t->kh_val[k], t->kh_src[k], strerror(-r));
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
	int r = thpd_originals_load(d->runtime_dir, THPD_ORIGINALS_FILE, &d->originals);

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
static void drop_unknown_boot_params(struct thpd_cmdline *cl)
{
	char *val[N_BOOT_PARAMS] = { cl->anon, cl->shmem, cl->shmem_sizes };
	bool known[N_BOOT_PARAMS];

	if (!cl->anon[0] && !cl->shmem[0] && !cl->shmem_sizes[0])
		return;
	if (boot_params_known(known) < 0)
		return;
	for (size_t i = 0; i < N_BOOT_PARAMS; i++) {
		if (!val[i][0] || known[i])
			continue;
		log_warn("Ignoring %s= on the kernel command line: this kernel does not take it (no %s in /proc/kallsyms)",
			 boot_params[i].param, boot_params[i].handler);
		val[i][0] = '\0';
	}
}

static void boot_inputs_init(struct thpd *d)
{
	char cmdline[4096];
	int r = thpd_persist_load(d->state_dir, &d->persist);

	if (r == -EBADMSG)
		log_warn("Ignoring %s/" THPD_STATE_FILE ": not a valid thpd state file", d->state_dir);
	else if (r < 0 && r != -ENOENT)
		log_warn("Cannot read %s/" THPD_STATE_FILE ": %s", d->state_dir, strerror(-r));
	if (thp_read_file("/proc/cmdline", cmdline, sizeof(cmdline)) < 0)
		cmdline[0] = '\0';
	thpd_cmdline_parse(cmdline, &d->cmdline);
	drop_unknown_boot_params(&d->cmdline);
	/* the kernel ignores a malformed one whole: so does thpd (a size it lacks included) */
	if (d->cmdline.anon_bad)
		log_warn("Ignoring a thp_anon= on the kernel command line that does not parse");
	if (d->cmdline.shmem_sizes_bad)
		log_warn("Ignoring a thp_shmem= on the kernel command line that does not parse");
}

/* where the command line wins over the persisted state or the configuration, say so */
static void log_cmdline_precedence(const struct thpd *d)
{
	const struct thpd_target *t = &d->target;
	char name[16];

	if (t->shmem_src && strcmp(t->shmem_src, "kernel command line") == 0 &&
	    (d->persist.shmem[0] || d->cfg.shmem[0]))
		log_info("transparent_hugepage_shmem=%s on the kernel command line takes precedence over Shmem=%s",
			 t->shmem, d->persist.shmem[0] ? d->persist.shmem : d->cfg.shmem);
	for (unsigned int i = 0; i < t->n_sizes; i++) {
		const struct thpd_size_target *z = &t->sizes[i];
		const struct thpd_size_config *c = z->cfg;
		struct thpd_persist_size *p =
			thpd_persist_size((struct thpd_persist *)&d->persist, z->kib, false);

		thp_size_name(z->kib, name, sizeof(name));
		if (z->enabled_src && strcmp(z->enabled_src, "kernel command line") == 0 &&
		    ((p && p->enabled[0]) || (c && c->enabled[0])))
			log_info("thp_anon= on the kernel command line sets %s to %s, over Enabled=%s of [Size %s]",
				 name, z->enabled, p && p->enabled[0] ? p->enabled : c->enabled, name);
		if (z->shmem_src && strcmp(z->shmem_src, "kernel command line") == 0 &&
		    ((p && p->shmem[0]) || (c && c->shmem[0])))
			log_info("thp_shmem= on the kernel command line sets %s to %s, over Shmem=%s of [Size %s]",
				 name, z->shmem, p && p->shmem[0] ? p->shmem : c->shmem, name);
	}
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
		stepped_recover(d);
		boot_inputs_init(d);
	}

	thpd_target_compute(&d->cfg, &d->persist, d->cmdline.thp, &d->target);
	thpd_target_compute_sizes(&d->cfg, &d->persist, &d->cmdline, &d->target);
	if (d->cmdline.thp[0] && d->cfg.honor_kernel_cmdline &&
	    (d->cfg.mode[0] || d->persist.enabled[0]))
		log_info("transparent_hugepage=%s on the kernel command line takes precedence over Mode=%s",
			 d->cmdline.thp, d->persist.enabled[0] ? d->persist.enabled : d->cfg.mode);
	log_cmdline_precedence(d);
	/* a reload while stepped down: the sizes go back before the target is applied */
	thpd_sizes_step_up(d, NULL, 0, NULL, 0);
	r = apply_target(d);
	if (r < 0 && starting) {
		log_err("Start-up self-check failed: the configured settings cannot be applied");
		return r == -EINVAL ? -EIO : r;	/* -EINVAL means "bad configuration" */
	}

	thpd_adaptive_init(&d->adaptive);
	thpd_stepped_forget(d);
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
	if (d->adaptive.state == THPD_ASTATE_STEPPED_DOWN) {
		log_event(LOG_NOTICE, "override",
			  "Administrator changed THP settings while stepped down; back to normal");
		thpd_sizes_step_up(d, NULL, 0, NULL, 0);
		thpd_stepped_forget(d);
	}
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

int thpd_set_knob(struct thpd *d, enum thp_knob_id knob, const char *value,
		  const unsigned long *kibs, int n, char *why, size_t size)
{
	static const unsigned long top = 0;
	struct thpd_persist next = d->persist;
	char old[THP_SIZES_MAX][16], file[64], state[PATH_MAX + 16], from[512] = "", to[512] = "";
	char err[512];
	struct thp_model *m;
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
	d->persist = next;
	/* the administrator's value wins over a step-down's */
	for (int i = 0; i < n && knob == THP_KNOB_SIZE_ENABLED; i++)
		for (unsigned int j = 0; j < d->n_stepped; j++)
			if (d->stepped[j].kib == kibs[i])
				d->stepped[j--] = d->stepped[--d->n_stepped];
	if (d->adaptive.state == THPD_ASTATE_STEPPED_DOWN)
		thpd_stepped_save(d);
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
	uint64_t old[THPD_KH_N], min, max;
	char state[PATH_MAX + 16], from[512] = "", to[512] = "";
	unsigned long pages = pmd_pages();
	int k, r = 0, n = 0;

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
	for (k = 0; k < THPD_KH_N; k++)
		if (set[k] && (r = thp_khugepaged_write(thpd_kh_file(k), val[k])) < 0)
			break;
	if (r < 0) {
		/* one change: what was written goes back, and so does the disk */
		int rb = 0, r2;

		for (int j = 0; j < k; j++)
			if (set[j] && thp_khugepaged_write(thpd_kh_file(j), old[j]) < 0)
				rb = -EIO;
		r2 = thpd_persist_save(d->state_dir, &d->persist);
		snprintf(why, size, "writing khugepaged/%s failed: %s; %s%s%s%s", thpd_kh_file(k),
			 strerror(-r), rb ? "rolling back failed too: the host may be left half-changed" :
			 "nothing was changed", r2 < 0 ? "; restoring " : "", r2 < 0 ? state : "",
			 r2 < 0 ? " failed too" : "");
		goto out;
	}
	d->persist = next;
	for (k = 0; k < THPD_KH_N; k++)
		if (set[k]) {
			d->target.kh_set[k] = true;
			d->target.kh_val[k] = val[k];
			d->target.kh_src[k] = "persisted state";
		}
	thpd_logf(LOG_NOTICE, &(const struct thpd_log_fields){
			.event = "set-khugepaged", .from = from, .to = to, .reason = "socket request" },
		  "khugepaged %s set through the socket (was %s)", to, from);
out:
	if (r < 0)
		log_err("Refused khugepaged %s: %s", to, why);
	return r;
}
