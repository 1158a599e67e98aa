// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * thpctl status, enable, shmem and defrag: the system-wide THP state, read
 * and set through libthp's model of the kernel's controls, and checked
 * after each write against what was asked (no false success, thpctl(1)).
 */
#include "thpctl.h"
#include "thp.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const khugepaged_knobs[] = {
	"defrag", "pages_to_scan", "scan_sleep_millisecs", "alloc_sleep_millisecs",
	"max_ptes_none", "max_ptes_swap", "max_ptes_shared",
	"pages_collapsed", "full_scans",
};

/* counters of a "name value" file; a file there but unreadable is reported */
static int add_file_kv(struct json_object *o, const char *path, const char *prefix)
{
	static char buf[65536];
	int r = thp_read_file(path, buf, sizeof(buf));

	if (r == -ENOENT)
		return 0;
	if (r < 0) {
		log_error("cannot read %s: %s", full_path(path), strerror(-r));
		return r;
	}
	return jadd_counters(o, buf, prefix);
}

/* a 0/1 file as the kernel prints it; null where the kernel has none */
static void add_flag(struct json_object *o, const char *key, int v)
{
	if (v < 0)
		jadd_str(o, key, NULL);
	else
		jadd_int(o, key, v);
}

/* a member of thpd's status reply, NULL when absent (or thpd is not running) */
static struct json_object *thpd_get(struct json_object *thpd, const char *a, const char *b)
{
	struct json_object *v = NULL;

	if (!json_object_object_get_ex(thpd, a, &v))
		return NULL;
	if (b && !json_object_object_get_ex(v, b, &v))
		return NULL;
	return v;
}

/*
 * Why a size's anonymous memory is in its effective state, in a few words:
 * its own value, or the top-level enabled it follows; and where thpd's
 * step-down put either there, that too (thpd: its status reply, or NULL).
 */
static const char *size_why(const struct thp_model *m, const struct thp_size *s,
			    struct json_object *thpd, char *buf, size_t size)
{
	const char *own = thp_choice_value(&s->enabled), *top = thp_choice_value(&m->enabled);
	struct json_object *state = thpd_get(thpd, "adaptive", "state"), *back;
	bool stepped = state && strcmp(json_object_get_string(state), "stepped-down") == 0;
	char name[16];

	if (s->has_dir && !own) {
		snprintf(buf, size, "no anonymous control at this size");
	} else if (own && strcmp(own, "inherit") != 0) {
		back = thpd_get(thpd_get(thpd, "adaptive", "stepped_sizes"),
				thp_size_name(s->kib, name, sizeof(name)), NULL);
		if (back)
			snprintf(buf, size, "own value %s, thpd's step-down (back to %s when calm)",
				 own, json_object_get_string(back));
		else
			snprintf(buf, size, "own value %s", own);
	} else {
		snprintf(buf, size, "%s enabled (%s%s)", own ? "inherits" : "follows", top,
			 stepped ? ", thpd's step-down" : "");
	}
	return buf;
}

/*
 * One row per size: its own values (null where the kernel has no such
 * control at that size), what they leave it in and why, and its stats/
 * counters.
 */
static void add_sizes(struct json_object *o, const struct thp_model *m, struct json_object *thpd)
{
	struct json_object *rows = json_object_new_array();

	for (int i = 0; i < m->nsizes && rows; i++) {
		const struct thp_size *s = &m->size[i];
		struct json_object *row = json_object_new_object(), *stats;
		char name[16], why[160];

		jadd_str(row, "size", thp_size_name(s->kib, name, sizeof(name)));
		jadd_u64(row, "kib", s->kib);
		jadd_str(row, "enabled", thp_choice_value(&s->enabled));
		jadd_str(row, "effective", thp_eff_name(thp_size_anon_eff(m, s), false));
		jadd_str(row, "shmem_enabled", thp_choice_value(&s->shmem_enabled));
		jadd_str(row, "shmem_effective", thp_eff_name(thp_size_shmem_eff(m, s), true));
		jadd_str(row, "why", size_why(m, s, thpd, why, sizeof(why)));
		stats = json_object_new_object();
		for (int j = 0; j < s->nstats; j++)
			jadd_u64(stats, s->stats[j].name, s->stats[j].value);
		if (row)
			json_object_object_add(row, "stats", stats);
		else
			json_object_put(stats);
		if (!row || json_object_array_add(rows, row) < 0)
			json_object_put(row);
	}
	if (o)
		json_object_object_add(o, "sizes", rows);
	else
		json_object_put(rows);
}

/* the RFC number where the kernel's mode file holds one, else null */
static void add_mode(struct json_object *o, const struct thp_state *st)
{
	if (st->rfc >= 0)
		jadd_int(o, "mode", st->rfc);
	else
		jadd_str(o, "mode", NULL);
}

static const char *row_str(struct json_object *row, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(row, key, &v) && v ? json_object_get_string(v) : "";
}

/*
 * The sizes of the short view, from status's rows: what each does now for
 * anonymous memory and shmem, and why; neighbours alike share a row
 * ("16K-1M"), but the PMD size (pmd_kib), the one asked about most, always
 * has its own.
 */
static struct json_object *summary_sizes(struct json_object *sizes, unsigned long pmd_kib)
{
	struct json_object *rows = json_object_new_array(), *last = NULL, *kib;
	size_t n = json_object_array_length(sizes);
	const char *first = NULL;

	for (size_t i = 0; i < n && rows; i++) {
		struct json_object *s = json_object_array_get_idx(sizes, i), *row;
		const char *name = row_str(s, "size");
		bool pmd = json_object_object_get_ex(s, "kib", &kib) &&
			   json_object_get_uint64(kib) == pmd_kib;

		if (last && !pmd && strcmp(row_str(last, "anon"), row_str(s, "effective")) == 0 &&
		    strcmp(row_str(last, "shmem"), row_str(s, "shmem_effective")) == 0 &&
		    strcmp(row_str(last, "why"), row_str(s, "why")) == 0) {
			char range[40];

			snprintf(range, sizeof(range), "%s-%s", first, name);
			jadd_str(last, "size", range);
			continue;
		}
		row = json_object_new_object();
		jadd_str(row, "size", name);
		jadd_str(row, "anon", row_str(s, "effective"));
		jadd_str(row, "shmem", row_str(s, "shmem_effective"));
		jadd_str(row, "why", row_str(s, "why"));
		if (!row || json_object_array_add(rows, row) < 0) {
			json_object_put(row);
			break;
		}
		last = pmd ? NULL : row;
		first = name;
	}
	return rows;
}

/*
 * " name=value" for each value thpd keeps (its status's "persisted"):
 * nested ones by their path ("64K.enabled=always",
 * "khugepaged.pages_to_scan=4096"); returns what was used of buf
 */
static size_t kept_text(struct json_object *o, const char *prefix, char *buf, size_t size,
			size_t used)
{
	/* "persisted": null when thpd keeps nothing */
	if (!json_object_is_type(o, json_type_object))
		return used;
	json_object_object_foreach(o, key, val) {
		char path[96];

		if (!val || used >= size)
			continue;
		snprintf(path, sizeof(path), "%s%s%s", prefix, *prefix ? "." : "", key);
		if (json_object_is_type(val, json_type_object))
			used = kept_text(val, strcmp(key, "sizes") ? path : "", buf, size, used);
		else
			used += (size_t)snprintf(buf + used, size - used, " %s=%s", path,
						 json_object_get_string(val));
	}
	return used;
}

/* thpd's state in one line, from its status reply (NULL: not running) */
static void add_thpd_line(struct json_object *o, struct json_object *thpd, bool failed)
{
	struct json_object *v = thpd_get(thpd, "version", NULL);
	struct json_object *state = thpd_get(thpd, "adaptive", "state");
	struct json_object *reason = thpd_get(thpd, "adaptive", "reason");
	const char *why = reason ? json_object_get_string(reason) : "";
	char line[1024], kept[768] = "";

	if (!thpd) {
		/* as --all shows a null thpd */
		jadd_str(o, "thpd", failed ? "not answering (see above)" : "not running");
		return;
	}
	kept_text(thpd_get(thpd, "persisted", NULL), "", kept, sizeof(kept), 0);
	snprintf(line, sizeof(line), "running (%s), %s%s%s%s; keeps%s",
		 v ? json_object_get_string(v) : "?", state ? json_object_get_string(state) : "?",
		 *why ? " (" : "", why, *why ? ")" : "", kept[0] ? kept : " nothing set through it yet");
	jadd_str(o, "thpd", line);
}

/*
 * thpd's collapses in one line (thpd.conf(5) [Collapse]), from its status
 * reply; nothing when thpd is not running or too old to say
 */
static void add_collapse_line(struct json_object *o, struct json_object *thpd)
{
	struct json_object *c = thpd_get(thpd, "collapse", NULL);
	const char *last = json_object_get_string(thpd_get(c, "last_pass", NULL));
	const char *who = json_object_get_string(thpd_get(c, "processes", NULL));
	const char *state = json_object_get_string(thpd_get(c, "state", NULL));
	char line[512];

	if (!c)
		return;
	if (!json_object_get_boolean(thpd_get(c, "enabled", NULL))) {
		jadd_str(o, "thpd_collapse", "off ([Collapse] Enabled=no in thpd.conf)");
		return;
	}
	snprintf(line, sizeof(line),
		 "on (%s), %s: %" PRId64 " passes, %" PRId64 " MiB in %" PRId64
		 " hugepages, %" PRId64 " failures, CPU %" PRId64 " ms%s%s",
		 who ? who : "?", state ? state : "?",
		 json_object_get_int64(thpd_get(c, "passes", NULL)),
		 json_object_get_int64(thpd_get(c, "bytes", NULL)) >> 20,
		 json_object_get_int64(thpd_get(c, "hugepages", NULL)),
		 json_object_get_int64(thpd_get(c, "failures", NULL)),
		 json_object_get_int64(thpd_get(c, "cpu_usec", NULL)) / 1000,
		 last ? "; last: " : "", last ? last : "");
	jadd_str(o, "thpd_collapse", line);
}

/*
 * The short view of status (what an administrator asks first): what each
 * size does now and why, the RFC mode where the kernel has one, defrag and
 * thpd's state; taken from the full object, so the two cannot disagree.
 */
static struct json_object *status_summary(struct json_object *full, unsigned long pmd_kib,
					  struct json_object *thpd, bool thpd_failed)
{
	struct json_object *o = json_object_new_object(), *v;

	if (json_object_object_get_ex(full, "sizes", &v) && o)
		json_object_object_add(o, "sizes", summary_sizes(v, pmd_kib));
	if (json_object_object_get_ex(full, "mode", &v) && v)
		json_object_object_add(o, "mode", json_object_get(v));
	jadd_str(o, "defrag", row_str(full, "defrag"));
	add_thpd_line(o, thpd, thpd_failed);
	add_collapse_line(o, thpd);
	return o;
}

const struct option status_options[] = {
	{ "all", no_argument, NULL, 'a' },
	{}
};

int status_option(struct verb_args *a, int opt, const char *arg)
{
	(void)arg;
	if (opt == 'a')
		a->all = true;
	return 0;
}

int verb_status(struct verb_args *a)
{
	struct json_object *o = json_object_new_object(), *k, *f, *counters, *thpd;
	struct thp_model m;
	struct thp_state st;
	char buf[16384];
	const char *why;
	int r, rt, rc = EXIT_OK;
	uint64_t v;
	long blocks;

	r = thp_state_read(&st);
	if (r == 0)
		r = thp_model_read(&m);
	if (r < 0) {
		json_object_put(o);
		log_error("cannot read the THP state under %s: %s", full_path(THP_SYSFS_DIR),
			  strerror(-r));
		return EXIT_FAIL;
	}
	/* first: a size's reason names thpd's step-down */
	rt = thpctl_call("status", NULL, &thpd, &why);
	jadd_str(o, "enabled", thp_enabled_name(st.enabled));
	add_mode(o, &st);
	jadd_str(o, "defrag", st.defrag);
	jadd_str(o, "shmem_enabled", thp_choice_value(&m.shmem_enabled));
	add_flag(o, "use_zero_page", m.use_zero_page);
	add_flag(o, "shrink_underused", m.shrink_underused);
	add_sizes(o, &m, thpd);
	if (m.nextra) {
		struct json_object *x = json_object_new_object();

		for (int i = 0; i < m.nextra; i++)
			jadd_str(x, m.extra[i].name, m.extra[i].value);
		if (o)
			json_object_object_add(o, "other_files", x);
		else
			json_object_put(x);
	}

	k = json_object_new_object();
	for (size_t i = 0; i < sizeof(khugepaged_knobs) / sizeof(khugepaged_knobs[0]); i++) {
		r = thp_khugepaged_read(khugepaged_knobs[i], &v);
		if (r == 0) {
			jadd_u64(k, khugepaged_knobs[i], v);
		} else if (r != -ENOENT) {
			/* there but unusable (too long, not a number): said, not guessed */
			log_error("cannot read %s/khugepaged/%s: %s", full_path(THP_SYSFS_DIR),
				  khugepaged_knobs[i], strerror(-r));
			rc = EXIT_FAIL;
		}
	}
	if (o)
		json_object_object_add(o, "khugepaged", k);

	blocks = thp_buddyinfo_free_blocks(9);
	if (blocks >= 0)
		jadd_int(o, "free_hugepage_blocks", blocks);
	else
		jadd_str(o, "free_hugepage_blocks", NULL);
	r = thp_read_file("/proc/meminfo", buf, sizeof(buf));
	if (r >= 0 && thp_kv_get(buf, "AnonHugePages", &v) == 0) {
		jadd_u64(o, "anon_huge_kib", v);
	} else {
		jadd_str(o, "anon_huge_kib", NULL);
		if (r < 0 && r != -ENOENT) {
			log_error("cannot read %s: %s", full_path("/proc/meminfo"), strerror(-r));
			rc = EXIT_FAIL;
		}
	}

	counters = json_object_new_object();
	if (add_file_kv(counters, "/proc/vmstat", "thp_") < 0)
		rc = EXIT_FAIL;
	if (o)
		json_object_object_add(o, "counters", counters);

	f = json_object_new_object();
	jadd_bool(f, "mode_file", st.has_mode_file);
	jadd_bool(f, "thp_policy", st.has_thp_policy);
	jadd_bool(f, "thp_stat", st.has_thp_stat);
	jadd_bool(f, "per_size", m.per_size);
	jadd_bool(f, "shmem", m.shmem_enabled.n > 0);
	if (o)
		json_object_object_add(o, "kernel_features", f);

	if (!a->json && !a->all) {
		r = output(status_summary(o, m.pmd_kib, rt > 0 ? thpd : NULL, rt < 0), false);
		json_object_put(o);
		json_object_put(thpd);
	} else {
		if (o)
			json_object_object_add(o, "thpd", rt > 0 ? thpd : NULL);
		else
			json_object_put(thpd);
		r = output(o, a->json);
	}
	if (r < 0)
		return EXIT_FAIL;
	/* an unanswered or refused status was reported; the rest is still valid */
	return rt < 0 ? EXIT_FAIL : rc;
}

#define NOT_KEPT "written to sysfs: thpd is not running, so this lasts until reboot"
#define KEPT "set by thpd, which keeps it"

/*
 * A line of a setting's result: on stdout when the kernel does what was
 * asked (rc EXIT_OK); otherwise on stderr, as thpctl's message, so that
 * nothing on stdout reads as a success (thpctl(1), exit status 3).
 */
static void result(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void result(int rc, const char *fmt, ...)
{
	FILE *f = rc == EXIT_OK ? stdout : stderr;
	va_list ap;
	char *line;

	va_start(ap, fmt);
	if (vasprintf(&line, fmt, ap) < 0)
		line = NULL;
	va_end(ap);
	if (f == stderr)
		fputs("thpctl: ", f);
	/* words from sysfs, escaped like every text shown */
	put_text(f, line ? line : "out of memory");
	fputc('\n', f);
	free(line);
}

/*
 * What enabled and defrag are now, the RFC mode where the kernel has one
 * (its mode file is derived from the pair, no hidden state), and how; from
 * m, which holds what was written (a sysfs store takes a word whole or
 * fails), or "done" when the controls could not be read (m NULL).
 */
static void print_state(int rc, const char *how, const struct thp_model *m)
{
	const char *enabled = m ? thp_choice_value(&m->enabled) : NULL;
	const char *defrag = m ? thp_choice_value(&m->defrag) : NULL;
	char rfc[160] = "";
	int e = enabled ? thp_enabled_from_name(enabled) : -EINVAL;

	if (e < 0 || !defrag) {
		result(rc, "done (%s)%s", how, rc ? "; not in effect:" : "");
		return;
	}
	if (m->mode[0]) {
		const char *n = thp_rfc_mode((enum thp_enabled)e, defrag);

		if (n[0] >= '0' && n[0] <= '2')
			snprintf(rfc, sizeof(rfc), ", rfc mode %c: %s", n[0], thp_rfc_meaning(n[0] - '0'));
	}
	result(rc, "enabled=%s defrag=%s%s (%s)%s", enabled, defrag, rfc, how,
	       rc ? "; not in effect:" : "");
}

/*
 * Set a top-level value through thpd when it runs, else on sysfs with
 * apply. EXIT_OK with *how saying which, or EXIT_FAIL (said).
 */
static int set_top(const char *cmd, const char *value,
		   int (*apply)(const char *value, const char **failed), const char **how)
{
	struct json_object *reply;
	const char *why, *failed = NULL;
	int r;

	r = thpctl_call(cmd, value, &reply, &why);
	if (r < 0)
		return EXIT_FAIL;
	if (r > 0) {
		/* what the kernel holds now is read back, not taken from the reply */
		json_object_put(reply);
		*how = KEPT;
		return EXIT_OK;
	}
	r = apply(value, &failed);
	if (r < 0) {
		log_error("failed to write '%s' to %s: %s", value,
			  failed ? full_path(failed) : full_path(THP_SYSFS_DIR), strerror(-r));
		return EXIT_FAIL;
	}
	/* not the plain "nobody listens" case: say what went wrong */
	if (strcmp(why, strerror(ENOENT)) && strcmp(why, strerror(ECONNREFUSED)))
		log_error("could not reach thpd at %s: %s", thpctl_socket_path(), why);
	*how = NOT_KEPT;
	return EXIT_OK;
}

static int apply_mode(const char *value, const char **failed)
{
	struct thp_mode_req req;
	int r = thp_mode_parse(value, &req);

	return r < 0 ? r : thp_state_apply(&req, failed);
}

/* ---- per-size and shmem values, and what the kernel is left in ---- */

const struct option enable_options[] = {
	{ "size", required_argument, NULL, 's' },
	{}
};

static int model_or_fail(struct thp_model *m)
{
	int r = thp_model_read(m);

	if (r < 0)
		log_error("cannot read the THP controls under %s: %s", full_path(THP_SYSFS_DIR),
			  strerror(-r));
	return r;
}

/* --size=help: all, then each size with the verb's control, ascending */
static int list_sizes(bool shmem)
{
	struct thp_model m;
	char name[16];

	if (model_or_fail(&m) < 0)
		return EXIT_FAIL;
	if (!m.per_size)
		return -1;
	puts("all");
	for (int i = 0; i < m.nsizes; i++) {
		const struct thp_size *s = &m.size[i];

		if (s->has_dir && (shmem ? s->shmem_enabled.n : s->enabled.n))
			puts(thp_size_name(s->kib, name, sizeof(name)));
	}
	return -1;
}

int enable_option(struct verb_args *a, int opt, const char *arg)
{
	if (opt == 's' && is_help(arg))
		return list_sizes(strcmp(a->argv[0], "shmem") == 0);
	if (opt == 's')
		a->sizes = arg;
	return 0;
}

/* what the words a request uses leave a size in, in plain words */
static const char *eff_phrase(enum thp_eff e)
{
	switch (e) {
	case THP_EFF_ALWAYS:
		return "used at fault everywhere";
	case THP_EFF_ADVISE:
		return "used only in MADV_HUGEPAGE regions";
	case THP_EFF_WITHIN_SIZE:
		return "used within i_size";
	default:
		return "never used";
	}
}

/*
 * The sizes of --size (a comma-separated list, or "all": every size with
 * the control) into kibs. EXIT_OK, or EXIT_USAGE / EXIT_FAIL after saying why.
 */
static int parse_sizes(const char *verb, const char *list, const struct thp_model *m,
		       enum thp_knob_id knob, unsigned long *kibs, int *n)
{
	char buf[256], *tok, *save = NULL, name[16];

	*n = 0;
	if (strcmp(list, "all") == 0) {
		for (int i = 0; i < m->nsizes; i++) {
			const struct thp_size *s = &m->size[i];

			if ((knob == THP_KNOB_SIZE_ENABLED ? s->enabled.n : s->shmem_enabled.n) > 0)
				kibs[(*n)++] = s->kib;
		}
		return EXIT_OK;
	}
	if (snprintf(buf, sizeof(buf), "%s", list) >= (int)sizeof(buf))
		return usage_error("%s: --size list too long", verb);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		unsigned long kib;
		const struct thp_size *s;

		if (thp_size_parse(tok, &kib) < 0)
			return usage_error("%s: invalid size '%s' (expected e.g. 64K, 2M or all)",
					   verb, tok);
		s = thp_model_size(m, kib);
		if (!s || !s->has_dir) {
			char have[256] = "";
			size_t len = 0;

			for (int i = 0; i < m->nsizes && m->size[i].has_dir; i++)
				len += (size_t)snprintf(have + len, len < sizeof(have) ? sizeof(have) - len : 0,
							" %s", thp_size_name(m->size[i].kib, name, sizeof(name)));
			log_error("%s: this kernel has no %s hugepages (no hugepages-%lukB in %s; sizes:%s)",
				  verb, thp_size_name(kib, name, sizeof(name)), kib,
				  full_path(THP_SYSFS_DIR), *have ? have : " none");
			return EXIT_FAIL;
		}
		if ((knob == THP_KNOB_SIZE_ENABLED ? s->enabled.n : s->shmem_enabled.n) == 0) {
			log_error("%s: %s hugepages have no %s control on this kernel (%s)", verb,
				  thp_size_name(kib, name, sizeof(name)),
				  knob == THP_KNOB_SIZE_ENABLED ? "anonymous" : "shmem",
				  knob == THP_KNOB_SIZE_ENABLED ? "shmem only" : "anonymous only");
			return EXIT_FAIL;
		}
		for (int i = 0; i < *n; i++)
			if (kibs[i] == kib)
				goto dup;
		if (*n == THP_SIZES_MAX)
			return usage_error("%s: too many sizes", verb);
		kibs[(*n)++] = kib;
dup:;
	}
	if (*n == 0)
		return usage_error("%s: --size needs at least one size", verb);
	return EXIT_OK;
}

/* a check's reason, when it is to say them (else it only counts) */
#define SAY(...)                                 \
	do {                                     \
		if (say)                         \
			log_error(__VA_ARGS__);  \
	} while (0)

static enum thp_eff size_eff(const struct thp_model *m, const struct thp_size *s, bool shmem)
{
	return shmem ? thp_size_shmem_eff(m, s) : thp_size_anon_eff(m, s);
}

/*
 * No false success, after a per-size write: each size must be left in what
 * was asked (inherit: what the top level gives, and not never). Returns
 * EXIT_OK or EXIT_NOT_IN_EFFECT after saying plainly what the kernel does.
 */
static int check_sizes(const struct thp_model *m, bool shmem, const char *word,
		       const unsigned long *kibs, int n, bool say)
{
	const char *top = shmem ? thp_choice_value(&m->shmem_enabled) : thp_choice_value(&m->enabled);
	const char *topname = shmem ? "shmem_enabled" : "enabled";
	int rc = EXIT_OK;

	for (int i = 0; i < n; i++) {
		const struct thp_size *s = thp_model_size(m, kibs[i]);
		enum thp_eff got = size_eff(m, s, shmem);
		char name[16];
		int want;

		thp_size_name(s->kib, name, sizeof(name));
		if (strcmp(word, "inherit") == 0) {
			if (got != THP_EFF_NEVER)
				continue;
			SAY("%s%s now follows %s, which is %s: %s hugepages are never used%s. "
				  "Set the top level too, e.g. 'thpctl %s %s'", name,
				  shmem ? " shmem" : "", topname, top ? top : "absent", name,
				  shmem ? " for shmem" : " at fault", shmem ? "shmem" : "enable",
				  shmem ? "advise" : "madvise");
			rc = EXIT_NOT_IN_EFFECT;
			continue;
		}
		want = shmem ? thp_shmem_effective(word, "never", false) :
			       thp_anon_effective(word, NULL);
		if (want >= 0 && (enum thp_eff)want == got)
			continue;
		SAY("hugepages-%lukB/%s is %s, but %s hugepages are %s%s: %s is %s",
			  s->kib, shmem ? "shmem_enabled" : "enabled", word, name, eff_phrase(got),
			  shmem ? " for shmem" : "", topname, top ? top : "absent");
		rc = EXIT_NOT_IN_EFFECT;
	}
	return rc;
}

/*
 * No false success, after a top-level write of word: the PMD size must be
 * left in what the word means; never (and shmem's deny) must leave every
 * size off. A per-size value other than inherit wins over the top level.
 */
static int check_top(const struct thp_model *m, bool shmem, const char *word, bool say)
{
	const char *file = shmem ? "shmem_enabled" : "enabled";
	int want = shmem ? thp_shmem_effective(NULL, word, true) : thp_anon_effective(NULL, word);
	bool off = want == THP_EFF_NEVER, any = false;
	int rc = EXIT_OK;

	for (int i = 0; i < m->nsizes; i++) {
		const struct thp_size *s = &m->size[i];
		const struct thp_choice *own = shmem ? &s->shmem_enabled : &s->enabled;
		enum thp_eff got = size_eff(m, s, shmem);
		char name[16];

		any = any || got != THP_EFF_NEVER;
		if ((off && got == THP_EFF_NEVER) ||
		    (!off && (s->kib != m->pmd_kib || (int)got == want)))
			continue;
		thp_size_name(s->kib, name, sizeof(name));
		if (own->n)
			SAY("%s is now %s, but hugepages-%lukB/%s is %s, which wins: "
				  "%s hugepages are %s%s. %s: 'thpctl %s %s --size %s'",
				  file, word, s->kib, file, thp_choice_value(own), name,
				  eff_phrase(got), shmem ? " for shmem" : "",
				  off ? "Turn them off" : "To follow the top level",
				  shmem ? "shmem" : "enable", off ? "never" : "inherit", name);
		else
			SAY("%s is now %s, but %s hugepages are %s%s", file, word, name,
				  eff_phrase(got), shmem ? " for shmem" : "");
		rc = EXIT_NOT_IN_EFFECT;
	}
	if (!off && !any) {
		SAY("no hugepage size can be used%s: every size is off",
			  shmem ? " for shmem" : " at fault");
		rc = EXIT_NOT_IN_EFFECT;
	}
	return rc;
}

static void print_sizes(int rc, const struct thp_model *m, bool shmem, const unsigned long *kibs,
			int n)
{
	for (int i = 0; i < n; i++) {
		const struct thp_size *s = thp_model_size(m, kibs[i]);
		char name[16];

		result(rc, "%s: %s=%s effective=%s", thp_size_name(s->kib, name, sizeof(name)),
		       shmem ? "shmem_enabled" : "enabled",
		       thp_choice_value(shmem ? &s->shmem_enabled : &s->enabled),
		       thp_eff_name(size_eff(m, s, shmem), shmem));
	}
}

/*
 * Per-size and shmem values go through thpd when it runs, as enable and
 * defrag do, so that it persists them: 1 when thpd set them (m then holds
 * the word: a sysfs store takes it whole or fails, whoever wrote it), 0
 * when thpd is not running (write sysfs), -1 when it refused (said).
 */
static int shmem_size_via_thpd(const char *cmd, const char *word, const unsigned long *kibs, int n,
			       struct thp_model *m)
{
	bool shmem = strcmp(cmd, "shmem") == 0;
	struct json_object *reply;
	char list[THP_SIZES_MAX * 8], name[16];
	const char *why;
	size_t used = 0;
	int r;

	list[0] = '\0';
	for (int i = 0; i < n && used < sizeof(list); i++)
		used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s", i ? "," : "",
					 thp_size_name(kibs[i], name, sizeof(name)));
	r = thpctl_call_size(cmd, word, n ? list : NULL, &reply, &why);
	if (r < 0)
		return -1;
	if (r == 0) {
		if (strcmp(why, strerror(ENOENT)) && strcmp(why, strerror(ECONNREFUSED)))
			log_error("could not reach thpd at %s: %s", thpctl_socket_path(), why);
		return 0;
	}
	json_object_put(reply);
	if (!n)
		thp_choice_set(&m->shmem_enabled, word);
	for (int i = 0; i < n; i++) {
		struct thp_size *s = (struct thp_size *)thp_model_size(m, kibs[i]);

		thp_choice_set(shmem ? &s->shmem_enabled : &s->enabled, word);
	}
	return 1;
}

/*
 * After a per-size write: what each size is left in and how it was set, on
 * stdout when every size does what was asked, else on stderr with why not
 * (EXIT_NOT_IN_EFFECT).
 */
static int sizes_done(const struct thp_model *m, bool shmem, const char *word,
		      const unsigned long *kibs, int n, const char *how)
{
	int rc = check_sizes(m, shmem, word, kibs, n, false);

	print_sizes(rc, m, shmem, kibs, n);
	result(rc, "(%s)%s", how, rc ? "; not in effect:" : "");
	return rc ? check_sizes(m, shmem, word, kibs, n, true) : rc;
}

/* enable/shmem WORD --size LIST (or inherit, every size) */
static int set_sizes(struct verb_args *a, bool shmem)
{
	enum thp_knob_id knob = shmem ? THP_KNOB_SIZE_SHMEM_ENABLED : THP_KNOB_SIZE_ENABLED;
	const char *word = a->argv[1], *verb = a->argv[0];
	unsigned long kibs[THP_SIZES_MAX];
	struct thp_model m;
	char words[128], path[256];
	int n, r;

	if (!thp_knob_word_known(knob, word))
		return usage_error("%s --size: invalid value '%s' (expected %s)", verb, word,
				   thp_knob_words_text(knob, words, sizeof(words)));
	if (model_or_fail(&m) < 0)
		return EXIT_FAIL;
	if (!m.per_size) {
		log_error("%s: this kernel has no per-size THP controls (no hugepages-<N>kB in %s): "
			  "%s follows the top-level %s", verb, full_path(THP_SYSFS_DIR),
			  thp_size_name(m.pmd_kib, words, sizeof(words)),
			  shmem ? "shmem_enabled" : "enabled");
		return EXIT_FAIL;
	}
	r = parse_sizes(verb, a->sizes ? a->sizes : "all", &m, knob, kibs, &n);
	if (r != EXIT_OK)
		return r;
	r = shmem_size_via_thpd(verb, word, kibs, n, &m);
	if (r < 0)
		return EXIT_FAIL;
	if (r > 0)
		return sizes_done(&m, shmem, word, kibs, n, KEPT);
	for (int i = 0; i < n; i++) {
		r = thp_knob_set(&m, knob, kibs[i], word);
		if (r < 0) {
			thp_size_path(kibs[i], thp_knob(knob)->file, path, sizeof(path));
			if (r == -EINVAL && !thp_choice_offers(shmem ? &thp_model_size(&m, kibs[i])->shmem_enabled :
							      &thp_model_size(&m, kibs[i])->enabled, word))
				log_error("%s: %s does not offer '%s' on this kernel", verb,
					  full_path(path), word);
			else
				log_error("failed to write '%s' to %s: %s", word, full_path(path),
					  strerror(-r));
			if (i)
				print_sizes(EXIT_FAIL, &m, shmem, kibs, i);
			return EXIT_FAIL;
		}
	}
	return sizes_done(&m, shmem, word, kibs, n, NOT_KEPT);
}

/* does a size of m offer word for its enabled (or shmem_enabled)? */
static bool some_size_offers(const struct thp_model *m, bool shmem, const char *word)
{
	for (int i = 0; i < m->nsizes; i++)
		if (thp_choice_offers(shmem ? &m->size[i].shmem_enabled : &m->size[i].enabled, word))
			return true;
	return false;
}

/*
 * enable help, shmem help (with --size LIST: the words every listed size
 * offers): the words this kernel takes there. enable adds what thpctl takes
 * beyond the kernel's list: the RFC's numbers (translated to words on a
 * kernel without them) and inherit (every size, where sizes offer it).
 */
static int list_words(struct verb_args *a, bool shmem)
{
	enum thp_knob_id knob = shmem ? THP_KNOB_SIZE_SHMEM_ENABLED : THP_KNOB_SIZE_ENABLED;
	unsigned long kibs[THP_SIZES_MAX];
	struct thp_model m;
	int n, r;

	if (model_or_fail(&m) < 0)
		return EXIT_FAIL;
	if (!a->sizes) {
		list_choice(shmem ? &m.shmem_enabled : &m.enabled);
		if (some_size_offers(&m, shmem, "inherit"))
			puts("inherit");
		/* the RFC's numbers where the kernel has them: elsewhere 0 reads as off */
		if (!shmem && m.mode[0])
			puts("0\n1\n2");
		return EXIT_OK;
	}
	if (!m.per_size)
		return EXIT_OK;
	r = parse_sizes(a->argv[0], a->sizes, &m, knob, kibs, &n);
	if (r != EXIT_OK)
		return r;
	for (int w = 0; n > 0; w++) {
		const struct thp_size *first = thp_model_size(&m, kibs[0]);
		const struct thp_choice *c = shmem ? &first->shmem_enabled : &first->enabled;
		bool all = true;

		if (w >= c->n)
			break;
		for (int i = 1; i < n && all; i++) {
			const struct thp_size *s = thp_model_size(&m, kibs[i]);

			all = thp_choice_offers(shmem ? &s->shmem_enabled : &s->enabled, c->word[w]);
		}
		if (all)
			puts(c->word[w]);
	}
	return EXIT_OK;
}

/*
 * After a top-level write of word (enabled, or shmem_enabled when shmem):
 * what the kernel holds now on stdout when it does what was asked, else
 * on stderr with why not (EXIT_NOT_IN_EFFECT).
 */
static int top_done(const struct thp_model *m, bool shmem, const char *word, const char *how)
{
	int rc = check_top(m, shmem, word, false);

	if (shmem) {
		result(rc, "shmem_enabled=%s", word);
		print_sizes(rc, m, true, &thp_model_pmd(m)->kib, 1);
		result(rc, "(%s)%s", how, rc ? "; not in effect:" : "");
	} else {
		print_state(rc, how, m);
	}
	return rc ? check_top(m, shmem, word, true) : rc;
}

int verb_enable(struct verb_args *a)
{
	const char *value = a->argv[1], *how;
	struct thp_mode_req req;
	struct thp_model m;
	bool have_model;
	char words[128];
	int rc;

	if (is_help(value))
		return list_words(a, false);
	if (a->sizes || strcmp(value, "inherit") == 0)
		return set_sizes(a, false);
	if (thp_mode_parse(value, &req) < 0)
		return usage_error("enable: invalid mode '%s' (expected %s, or inherit with --size)",
				   value, thp_mode_words_text(words, sizeof(words)));
	if (req.rfc >= 0 && !thp_exists(THP_SYSFS_DIR "/mode"))
		log_error("this kernel has no numeric THP modes: %d is the RFC's mode %d (%s), "
			  "not off: enabled=%s defrag=%s", req.rfc, req.rfc, thp_rfc_meaning(req.rfc),
			  thp_enabled_name(req.enabled), req.defrag);
	/* read before the write: a sysfs store takes the word whole or fails */
	have_model = thp_model_read_controls(&m) == 0;
	rc = set_top("enable", value, apply_mode, &how);
	if (rc != EXIT_OK)
		return rc;
	if (!have_model) {
		print_state(rc, how, NULL);
		return rc;
	}
	/* what the kernel is left in: enabled (and a number's defrag) hold the words, whoever wrote them */
	thp_choice_set(&m.enabled, thp_enabled_name(req.enabled));
	if (req.defrag)
		thp_choice_set(&m.defrag, req.defrag);
	return top_done(&m, false, thp_enabled_name(req.enabled), how);
}

const struct option shmem_options[] = {
	{ "size", required_argument, NULL, 's' },
	{}
};

int verb_shmem(struct verb_args *a)
{
	const char *word = a->argv[1];
	struct thp_model m;
	char words[128];
	int r;

	if (is_help(word))
		return list_words(a, true);
	if (a->sizes || strcmp(word, "inherit") == 0)
		return set_sizes(a, true);
	if (!thp_knob_word_known(THP_KNOB_SHMEM_ENABLED, word))
		return usage_error("shmem: invalid value '%s' (expected %s, or inherit with --size)",
				   word, thp_knob_words_text(THP_KNOB_SHMEM_ENABLED, words, sizeof(words)));
	if (model_or_fail(&m) < 0)
		return EXIT_FAIL;
	if (m.shmem_enabled.n) {
		r = shmem_size_via_thpd("shmem", word, NULL, 0, &m);
		if (r < 0)
			return EXIT_FAIL;
		if (r > 0)
			return top_done(&m, true, word, KEPT);
	}
	r = thp_knob_set(&m, THP_KNOB_SHMEM_ENABLED, 0, word);
	if (r == -EOPNOTSUPP) {
		log_error("shmem: this kernel has no shmem THP control (no %s)",
			  full_path(THP_SYSFS_DIR "/shmem_enabled"));
		return EXIT_FAIL;
	}
	if (r == -EINVAL && !thp_choice_offers(&m.shmem_enabled, word)) {
		log_error("shmem: %s does not offer '%s' on this kernel",
			  full_path(THP_SYSFS_DIR "/shmem_enabled"), word);
		return EXIT_FAIL;
	}
	if (r < 0) {
		log_error("failed to write '%s' to %s: %s%s", word,
			  full_path(THP_SYSFS_DIR "/shmem_enabled"), strerror(-r),
			  r == -EINVAL && strcmp(word, "force") == 0 ?
			  " (the kernel takes force only while no size but the PMD size inherits)" : "");
		return EXIT_FAIL;
	}
	return top_done(&m, true, word, NOT_KEPT);
}

/*
 * defrag rules how hard a fault tries for a hugepage (anonymous and shmem
 * alike): with no size used at fault it changes nothing, and saying it was
 * set would read as a success. EXIT_OK or EXIT_NOT_IN_EFFECT.
 */
static int check_defrag(const struct thp_model *m, const char *value, bool say)
{
	if (thp_model_anon_on(m) || thp_model_shmem_on(m))
		return EXIT_OK;
	SAY("defrag is now %s, but no hugepage size is used at fault (enabled is %s%s): defrag "
	    "changes nothing until one is, e.g. 'thpctl enable madvise'", value,
	    thp_choice_value(&m->enabled), m->per_size ? " or every size's own value is never" : "");
	return EXIT_NOT_IN_EFFECT;
}

int verb_defrag(struct verb_args *a)
{
	const char *value = a->argv[1], *how;
	struct thp_model m;
	bool have_model;
	char words[128];
	int rc;

	if (is_help(value)) {
		if (model_or_fail(&m) < 0)
			return EXIT_FAIL;
		list_choice(&m.defrag);
		return EXIT_OK;
	}
	if (thp_defrag_valid(value) < 0)
		return usage_error("defrag: invalid value '%s' (expected %s)", value,
				   thp_knob_words_text(THP_KNOB_DEFRAG, words, sizeof(words)));
	/* read before the write: a sysfs store takes the word whole or fails */
	have_model = thp_model_read_controls(&m) == 0;
	rc = set_top("defrag", value, thp_defrag_apply, &how);
	if (rc != EXIT_OK)
		return rc;
	if (have_model) {
		thp_choice_set(&m.defrag, value);
		rc = check_defrag(&m, value, false);
	}
	print_state(rc, how, have_model ? &m : NULL);
	return rc ? check_defrag(&m, value, true) : rc;
}
