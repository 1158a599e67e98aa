// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * thpctl metrics: THP state and counters in the Prometheus text exposition
 * format (version 0.0.4), for node_exporter's textfile collector or any
 * scraper: HELP and TYPE before each family, base units (bytes, seconds),
 * counters ending in _total, settings as one gauge per possible value (1 for
 * the active one), states as info gauges of 1 whose labels say the state,
 * as node_exporter does for systemd unit states.
 *
 * Families, in this order: the settings (enabled, defrag, shmem_enabled,
 * the mode as labels and the RFC's number, khugepaged), /proc/vmstat's
 * thp_* events, the hugepage figures of /proc/meminfo, free order-9+ blocks,
 * each size's settings and stats/ (6.8+), thpd's state, and the per-cgroup
 * figures of `thpctl cgroups` under the same --depth/--top limits (the
 * cardinality rule in thpctl(1)). What the running kernel lacks is left out,
 * never invented.
 *
 * Nothing the host holds may make the exposition unparsable (a parse error
 * loses every family, exactly when they matter): every sample's value is a
 * number, every label value valid UTF-8 (a byte that is not is written as
 * the text \xHH), a family name taken from a kernel file is used only when
 * it is a valid metric name and not taken yet, and two cgroups whose labels
 * would be equal are one exported and one counted as skipped.
 *
 * The samples are collected into one JSON object (families, each with its
 * samples) and printed from it: as the exposition text, or as that object
 * with --json, so the two cannot drift.
 *
 * --output=FILE writes a temporary file beside FILE and renames it over
 * FILE, so a reader (node_exporter) never sees a partial file.
 */
#include "thpctl.h"
#include "thp.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const struct option metrics_options[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "depth", required_argument, NULL, 'd' },
	{ "top", required_argument, NULL, 'n' },
	{}
};

int metrics_option(struct verb_args *a, int opt, const char *arg)
{
	if (opt == 'o') {
		a->output = arg;
		return 0;
	}
	/* the cgroup limits are cgroups' own options */
	return cgroups_option(a, opt, arg);
}

/*
 * The exposition being collected: an array of families, each
 * {"name", "type", "help", "samples": [{"labels": {...}, "value": N}]}.
 */
struct expo {
	struct json_object *families;
	struct json_object *samples;	/* of the current family; NULL: it was refused */
};

/*
 * [a-zA-Z_][a-zA-Z0-9_]*, in ASCII whatever the locale: the format's
 * metric names without ':', which is for recording rules (promtool's lint)
 */
static bool metric_name_valid(const char *s)
{
	for (const char *p = s; *p; p++) {
		bool alpha = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_';

		if (!alpha && !(p > s && *p >= '0' && *p <= '9'))
			return false;
	}
	return *s != '\0';
}

static const char *jget_str(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/*
 * Start a family; its samples follow. A name that is not a metric name, or
 * one already used (a kernel file listing a name twice), is refused with
 * its samples: false.
 */
static bool family(struct expo *e, const char *name, const char *type, const char *help)
{
	struct json_object *fam;
	size_t n = json_object_array_length(e->families);

	e->samples = NULL;
	if (!metric_name_valid(name))
		return false;
	for (size_t i = 0; i < n; i++)
		if (strcmp(jget_str(json_object_array_get_idx(e->families, i), "name"), name) == 0)
			return false;
	fam = json_object_new_object();
	if (!fam)
		return false;
	jadd_str(fam, "name", name);
	jadd_str(fam, "type", type);
	jadd_str(fam, "help", help);
	e->samples = json_object_new_array();
	json_object_object_add(fam, "samples", e->samples);
	json_object_array_add(e->families, fam);
	return e->samples != NULL;
}

/*
 * s as a label value: valid UTF-8 as it is, each byte of an invalid
 * sequence as the four characters \xHH. Idempotent. Caller frees.
 */
static char *label_text(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	char *out = malloc(strlen(s) * 4 + 1), *o = out;

	if (!out)
		return NULL;
	while (*p) {
		size_t len = utf8_len(p);

		if (len == 0) {
			o += sprintf(o, "\\x%02x", *p++);
		} else {
			memcpy(o, p, len);
			o += len;
			p += len;
		}
	}
	*o = '\0';
	return out;
}

/* a sample of the current family; labels: NULL-terminated name/value pairs; takes value */
static void sample(struct expo *e, const char *const *labels, struct json_object *value)
{
	struct json_object *s, *l;

	if (!e->samples || !value) {
		json_object_put(value);
		return;
	}
	s = json_object_new_object();
	l = json_object_new_object();
	for (size_t i = 0; labels && labels[i] && l; i += 2) {
		char *t = label_text(labels[i + 1]);

		json_object_object_add(l, labels[i], t ? json_object_new_string(t) : NULL);
		free(t);
	}
	json_object_object_add(s, "labels", l);
	json_object_object_add(s, "value", value);
	json_object_array_add(e->samples, s);
}

static void sample_u64(struct expo *e, const char *const *labels, uint64_t v)
{
	sample(e, labels, json_object_new_uint64(v));
}

static void sample_int(struct expo *e, const char *const *labels, int64_t v)
{
	sample(e, labels, json_object_new_int64(v));
}

/* a family of one unlabelled sample */
static void single(struct expo *e, const char *name, const char *type, const char *help,
		   struct json_object *value)
{
	family(e, name, type, help);
	sample(e, NULL, value);
}

/* read a small sysfs/procfs file (root-prefixed); false when absent */
static bool read_text(const char *path, char *buf, size_t size)
{
	return thp_read_file(path, buf, size) >= 0;
}

static bool read_u64(const char *path, uint64_t *v)
{
	char buf[64], *end;

	if (!read_text(path, buf, sizeof(buf)))
		return false;
	errno = 0;
	*v = strtoull(buf, &end, 10);
	return !errno && end != buf;
}

/*
 * A knob as one sample per word the kernel lists: 1 for the active one, 0
 * for the others. size: the "size" label before "setting", or NULL.
 */
static void choice_samples(struct expo *e, const struct thp_choice *c, const char *size)
{
	for (int i = 0; i < c->n; i++) {
		const char *labels[] = { "size", size, "setting", c->word[i], NULL };

		sample_int(e, size ? labels : labels + 2, i == c->cur);
	}
}

static void choice_family(struct expo *e, const char *name, const struct thp_choice *c,
			  const char *help)
{
	if (c->n == 0)
		return;
	family(e, name, "gauge", help);
	choice_samples(e, c, NULL);
}

/*
 * The mode: an info gauge whose labels are enabled, defrag and the RFC's
 * mode of the pair (the kernel's mode file, else libthp's reading: 0, 1, 2,
 * never, or custom for a pair the RFC has no number for, such as
 * madvise/defer), and the RFC's number as a gauge where there is one.
 */
static void mode(struct expo *e)
{
	static const char *const numbers[] = { "0", "1", "2" };
	struct thp_state st;
	const char *labels[] = { "enabled", NULL, "defrag", st.defrag, "rfc_mode", st.mode, NULL };
	int64_t rfc = -2;

	if (thp_state_read(&st) < 0)
		return;
	labels[1] = thp_enabled_name(st.enabled);
	family(e, "thp_mode_info", "gauge",
	       "The THP mode as labels: enabled, defrag and the RFC's mode of the pair "
	       "(0, 1, 2, never, or custom where the pair has no RFC number); always 1.");
	sample_int(e, labels, 1);
	for (int i = 0; i < 3; i++)
		if (strcmp(st.mode, numbers[i]) == 0)
			rfc = i;
	if (strcmp(st.mode, "never") == 0)
		rfc = -1;
	if (rfc == -2)
		return;
	single(e, "thp_rfc_mode", "gauge",
	       "The RFC's mode of enabled+defrag: 0 madvise, 1 always, 2 always with defrag; -1 never. "
	       "Absent where the pair has no RFC number (thp_mode_info's rfc_mode is custom).",
	       json_object_new_int64(rfc));
}

static void settings(struct expo *e, const struct thp_model *m)
{
	static const struct {
		const char *file, *name, *type, *help;
		unsigned int ms;	/* a millisecond knob, exported in seconds */
	} khugepaged[] = {
		{ "full_scans", "thp_khugepaged_full_scans_total", "counter",
		  "Complete scans of all memory by khugepaged.", 0 },
		{ "pages_collapsed", "thp_khugepaged_pages_collapsed_total", "counter",
		  "Hugepages khugepaged collapsed.", 0 },
		{ "pages_to_scan", "thp_khugepaged_pages_to_scan", "gauge",
		  "Pages khugepaged scans per pass (khugepaged/pages_to_scan).", 0 },
		{ "scan_sleep_millisecs", "thp_khugepaged_scan_sleep_seconds", "gauge",
		  "Sleep between khugepaged passes (khugepaged/scan_sleep_millisecs).", 1 },
		{ "alloc_sleep_millisecs", "thp_khugepaged_alloc_sleep_seconds", "gauge",
		  "Sleep after a failed khugepaged allocation (khugepaged/alloc_sleep_millisecs).", 1 },
		{ "max_ptes_none", "thp_khugepaged_max_ptes_none", "gauge",
		  "Unmapped PTEs a collapse may fill (khugepaged/max_ptes_none).", 0 },
	};
	char path[PATH_MAX];

	choice_family(e, "thp_enabled", &m->enabled,
		      "Transparent hugepage mode (transparent_hugepage/enabled): 1 for the active setting.");
	choice_family(e, "thp_defrag", &m->defrag,
		      "THP fault defrag (transparent_hugepage/defrag): 1 for the active setting.");
	choice_family(e, "thp_shmem_enabled", &m->shmem_enabled,
		      "THP for shmem/tmpfs (transparent_hugepage/shmem_enabled): 1 for the active setting.");
	mode(e);
	for (size_t i = 0; i < sizeof(khugepaged) / sizeof(khugepaged[0]); i++) {
		uint64_t v;
		char buf[32];

		snprintf(path, sizeof(path), THP_SYSFS_DIR "/khugepaged/%s", khugepaged[i].file);
		if (!read_u64(path, &v))
			continue;
		if (khugepaged[i].ms) {
			/* the number as written, "10.000", in the text and the JSON */
			snprintf(buf, sizeof(buf), "%" PRIu64 ".%03" PRIu64, v / 1000, v % 1000);
			single(e, khugepaged[i].name, khugepaged[i].type, khugepaged[i].help,
			       json_object_new_double_s((double)v / 1000, buf));
		} else {
			single(e, khugepaged[i].name, khugepaged[i].type, khugepaged[i].help,
			       json_object_new_uint64(v));
		}
	}
}

/* /proc/vmstat's thp_* lines, each a counter family of its own */
static void vmstat(struct expo *e)
{
	char *buf = malloc(65536), *save = NULL;

	if (!buf)
		return;
	if (!read_text("/proc/vmstat", buf, 65536)) {
		free(buf);
		return;
	}
	for (char *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char name[96], help[160], *sp = strchr(l, ' '), *end;
		uint64_t v;

		if (strncmp(l, "thp_", 4) != 0 || !sp)
			continue;
		*sp = '\0';
		errno = 0;
		v = strtoull(sp + 1, &end, 10);
		if (errno || end == sp + 1 ||
		    (size_t)snprintf(name, sizeof(name), "%s_total", l) >= sizeof(name))
			continue;
		snprintf(help, sizeof(help), "THP event counter %s of /proc/vmstat.", l);
		single(e, name, "counter", help, json_object_new_uint64(v));
	}
	free(buf);
}

static void meminfo(struct expo *e)
{
	static const struct {
		const char *field, *name, *help;
	} fields[] = {
		{ "AnonHugePages", "thp_anon_huge_bytes",
		  "Anonymous memory mapped by PMD-sized hugepages (AnonHugePages of /proc/meminfo)." },
		{ "ShmemHugePages", "thp_shmem_huge_bytes",
		  "Shmem and tmpfs memory in hugepages (ShmemHugePages of /proc/meminfo)." },
		{ "ShmemPmdMapped", "thp_shmem_pmd_mapped_bytes",
		  "Shmem memory mapped by PMDs (ShmemPmdMapped of /proc/meminfo)." },
		{ "FileHugePages", "thp_file_huge_bytes",
		  "Page cache in hugepages (FileHugePages of /proc/meminfo)." },
		{ "FilePmdMapped", "thp_file_pmd_mapped_bytes",
		  "Page cache mapped by PMDs (FilePmdMapped of /proc/meminfo)." },
	};
	char buf[8192];
	long blocks;

	if (read_text("/proc/meminfo", buf, sizeof(buf))) {
		for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
			uint64_t kib;

			if (thp_kv_get(buf, fields[i].field, &kib) < 0)
				continue;
			single(e, fields[i].name, "gauge", fields[i].help,
			       json_object_new_uint64(kib * 1024));
		}
	}
	blocks = thp_buddyinfo_free_blocks(9);
	if (blocks >= 0)
		single(e, "thp_free_hugepage_blocks", "gauge",
		       "Free blocks of order 9 or more, counted in order-9 (PMD-sized) blocks (/proc/buddyinfo).",
		       json_object_new_int64(blocks));
}

/* "64kB", as the directory hugepages-64kB names the size */
static const char *size_label(unsigned long kib, char *buf, size_t size)
{
	snprintf(buf, size, "%lukB", kib);
	return buf;
}

/* a per-size knob (6.8+), one sample per size and word */
static void size_choice_family(struct expo *e, const struct thp_model *m, bool shmem,
			       const char *name, const char *help)
{
	bool head = false;

	for (int i = 0; i < m->nsizes; i++) {
		const struct thp_size *s = &m->size[i];
		const struct thp_choice *c = shmem ? &s->shmem_enabled : &s->enabled;
		char size[24];

		if (!s->has_dir || c->n == 0)
			continue;
		if (!head)
			family(e, name, "gauge", help);
		head = true;
		choice_samples(e, c, size_label(s->kib, size, sizeof(size)));
	}
}

/*
 * What a size is left in for anonymous memory, after inherit and the
 * top-level mode (lib's effective state), one sample per state.
 */
static void size_effective(struct expo *e, const struct thp_model *m)
{
	static const enum thp_eff states[] = { THP_EFF_NEVER, THP_EFF_ADVISE, THP_EFF_ALWAYS };

	if (!m->per_size)
		return;
	family(e, "thp_size_anon_effective", "gauge",
	       "Per-size anonymous THP as the kernel applies it (the size's setting, inherit "
	       "resolved against enabled): 1 for the state in force.");
	for (int i = 0; i < m->nsizes; i++) {
		const struct thp_size *s = &m->size[i];
		enum thp_eff eff;
		char size[24];

		if (!s->has_dir || s->enabled.n == 0)
			continue;
		eff = thp_size_anon_eff(m, s);
		size_label(s->kib, size, sizeof(size));
		for (size_t j = 0; j < sizeof(states) / sizeof(states[0]); j++) {
			const char *labels[] = { "size", size, "setting",
						 thp_eff_name(states[j], false), NULL };

			sample_int(e, labels, eff == states[j]);
		}
	}
}

/* stats/ of every size: one family per file name, one sample per size */
static void size_stats(struct expo *e, const struct thp_model *m)
{
	const struct thp_size *big = m->nsizes ? &m->size[m->nsizes - 1] : NULL;

	/* the largest size has every stat (the smallest shmem-only size fewer) */
	for (int i = 0; big && i < big->nstats; i++) {
		const char *stat = big->stats[i].name;
		bool gauge = strncmp(stat, "nr_", 3) == 0;	/* nr_anon: a count now */
		char name[96], help[192], size[24];
		bool head = false;

		if ((size_t)snprintf(name, sizeof(name), "thp_size_%s%s", stat,
				     gauge ? "" : "_total") >= sizeof(name))
			continue;
		snprintf(help, sizeof(help), gauge ?
			 "Per-size THP count %s (hugepages-<size>/stats/%s)." :
			 "Per-size THP event counter %s (hugepages-<size>/stats/%s).", stat, stat);
		for (int j = 0; j < m->nsizes; j++) {
			const struct thp_size *s = &m->size[j];

			for (int k = 0; k < s->nstats; k++) {
				const char *labels[] = { "size", size, NULL };

				if (strcmp(s->stats[k].name, stat) != 0)
					continue;
				if (!head)
					family(e, name, gauge ? "gauge" : "counter", help);
				head = true;
				size_label(s->kib, size, sizeof(size));
				sample_u64(e, labels, s->stats[k].value);
			}
		}
	}
}

static void per_size(struct expo *e, const struct thp_model *m)
{
	size_choice_family(e, m, false, "thp_size_enabled",
			   "Per-size anonymous THP setting (hugepages-<size>/enabled): 1 for the active setting.");
	size_choice_family(e, m, true, "thp_size_shmem_enabled",
			   "Per-size shmem THP setting (hugepages-<size>/shmem_enabled): 1 for the active setting.");
	size_effective(e, m);
	size_stats(e, m);
}

static uint64_t jget_u64(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_uint64(v) : 0;
}

/*
 * Is thpd meant to run here? systemd has a thpd.service unit file that is
 * not masked: the first of the unit directories holding one decides, as
 * systemd's own search order does (a symlink to /dev/null or an empty file
 * in /etc masks the packaged unit in /lib).
 */
static bool thpd_unit_installed(void)
{
	static const char *const dirs[] = {
		"/etc/systemd/system", "/run/systemd/system", "/usr/local/lib/systemd/system",
		"/usr/lib/systemd/system", "/lib/systemd/system",
	};

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		char rel[64], path[PATH_MAX], target[16];
		struct stat st;
		ssize_t n;

		snprintf(rel, sizeof(rel), "%s/thpd.service", dirs[i]);
		if (thp_path(path, sizeof(path), rel) < 0 || lstat(path, &st) < 0)
			continue;
		if (S_ISLNK(st.st_mode)) {
			n = readlink(path, target, sizeof(target) - 1);
			if (n == 9 && memcmp(target, "/dev/null", 9) == 0)
				return false;
			if (stat(path, &st) < 0)
				continue;	/* dangling: systemd skips it too */
		}
		return !(S_ISREG(st.st_mode) && st.st_size == 0);
	}
	return false;
}

/* thpd's [Collapse] (status "collapse"), when its thpd has it */
static void thpd_collapse(struct expo *e, struct json_object *st)
{
	struct json_object *c, *by;
	const char *state;
	uint64_t usec;
	char cpu[32];

	if (!json_object_object_get_ex(st, "collapse", &c) || !c)
		return;
	state = jget_str(c, "state");
	single(e, "thpd_collapse_enabled", "gauge", "1 when thpd's [Collapse] is on.",
	       json_object_new_int(json_object_get_boolean(json_object_object_get(c, "enabled"))));
	single(e, "thpd_collapse_owed", "gauge",
	       "1 while thpd owes a collapse pass: it watches for free hugepage blocks, or collapses.",
	       json_object_new_int(state && (strncmp(state, "owed", 4) == 0 ||
					     strcmp(state, "collapsing") == 0)));
	single(e, "thpd_collapse_passes_total", "counter", "Collapse passes thpd ran since it started.",
	       json_object_new_uint64(jget_u64(c, "passes")));
	single(e, "thpd_collapse_hugepages_total", "counter",
	       "Hugepages thpd's collapse made (the growth of AnonHugePages it caused, in PMD sizes).",
	       json_object_new_uint64(jget_u64(c, "hugepages")));
	single(e, "thpd_collapse_bytes_total", "counter", "Bytes thpd's collapse turned huge.",
	       json_object_new_uint64(jget_u64(c, "bytes")));
	family(e, "thpd_collapse_failures_total", "counter",
	       "MADV_COLLAPSE calls that failed (each covers up to 8 contiguous 2 MiB ranges), by reason: nomem (no hugepage), again (pages busy), busy (memory cgroup full), invalid (cannot be collapsed), other.");
	if (json_object_object_get_ex(c, "failures_by", &by) && json_object_is_type(by, json_type_object)) {
		json_object_object_foreach(by, reason, v) {
			const char *labels[] = { "reason", reason, NULL };

			sample_u64(e, labels, json_object_get_uint64(v));
		}
	}
	/* the number as written, "1.250000", in the text and the JSON */
	usec = jget_u64(c, "cpu_usec");
	snprintf(cpu, sizeof(cpu), "%" PRIu64 ".%06" PRIu64, usec / 1000000, usec % 1000000);
	single(e, "thpd_collapse_cpu_seconds_total", "counter",
	       "CPU time thpd spent on collapse: scanning and the collapses themselves, which run in thpd.",
	       json_object_new_double_s((double)usec / 1e6, cpu));
}

/*
 * thpd's state from its status reply. thpd_installed always; thpd_up where
 * thpd is installed or answered, so that `thpd_up == 0` never fires on a
 * host that has no thpd.
 */
static void thpd(struct expo *e)
{
	struct json_object *st = NULL, *adaptive = NULL, *persisted = NULL;
	const char *why, *state;
	unsigned int drift;
	bool installed = thpd_unit_installed();
	int r = thpctl_call("status", NULL, &st, &why);

	single(e, "thpd_installed", "gauge",
	       "1 when systemd has a thpd.service unit that is not masked, else 0.",
	       json_object_new_int(installed));
	if (installed || r > 0)
		single(e, "thpd_up", "gauge",
		       "1 when thpd answered on its socket, else 0; only where thpd is installed or answered.",
		       json_object_new_int(r > 0));
	if (r <= 0)
		return;
	json_object_object_get_ex(st, "adaptive", &adaptive);
	state = jget_str(adaptive, "state");
	if (jget_str(st, "version")) {
		const char *labels[] = { "version", jget_str(st, "version"), NULL };

		family(e, "thpd_info", "gauge", "thpd's version, as a label.");
		sample_int(e, labels, 1);
	}
	single(e, "thpd_adaptive_enabled", "gauge", "1 when thpd's adaptive switching is on.",
	       json_object_new_int(json_object_get_boolean(json_object_object_get(adaptive, "enabled"))));
	if (state)
		single(e, "thpd_adaptive_stepped_down", "gauge",
		       "1 while thpd has stepped THP down under pressure or fragmentation.",
		       json_object_new_int(strcmp(state, "stepped-down") == 0));
	single(e, "thpd_adaptive_switches_total", "counter",
	       "Adaptive switches (step-downs and step-ups) since thpd started.",
	       json_object_new_uint64(jget_u64(adaptive, "switches")));
	single(e, "thpd_rules", "gauge", "Per-application rules in thpd's configuration.",
	       json_object_new_uint64(jget_u64(st, "rules")));
	single(e, "thpd_rules_applied_total", "counter",
	       "Per-process policies thpd's rules applied since it started.",
	       json_object_new_uint64(jget_u64(st, "rules_applied")));
	json_object_object_get_ex(st, "persisted", &persisted);
	single(e, "thpd_persisted", "gauge",
	       "1 when thpd keeps an administrator's setting (thpctl enable/defrag) across restarts.",
	       json_object_new_int(persisted != NULL));
	if (persisted) {
		const char *en = jget_str(persisted, "enabled"), *d = jget_str(persisted, "defrag");
		const char *labels[] = { "enabled", en ? en : "", "defrag", d ? d : "", NULL };

		family(e, "thpd_persisted_info", "gauge",
		       "The setting thpd keeps, as labels (empty: not set).");
		sample_int(e, labels, 1);
	}
	if (verify_drift(st, &drift) == 0)
		single(e, "thpd_drift_files", "gauge",
		       "THP files in sysfs that differ from what thpd should hold (its target, and the step-down on top of it), as thpctl verify counts them.",
		       json_object_new_uint64(drift));
	thpd_collapse(e, st);
	json_object_put(st);
}

/*
 * The cgroups of `thpctl cgroups`, within its limits. A cgroup that could
 * not be read, or whose label would equal another's (names that differ
 * only in bytes that are not UTF-8), is left out and counted in
 * thp_cgroups_skipped; the others are exported.
 */
static void cgroups(struct expo *e, const struct verb_args *a)
{
	static const struct {
		const char *key, *name, *help;
	} bytes[] = {
		{ "anon_thp", "thp_cgroup_anon_bytes", "Anonymous THP memory of the cgroup (memory.stat anon_thp)." },
		{ "file_thp", "thp_cgroup_file_bytes", "Page cache THP memory of the cgroup (memory.stat file_thp)." },
		{ "shmem_thp", "thp_cgroup_shmem_bytes", "Shmem THP memory of the cgroup (memory.stat shmem_thp)." },
	};
	struct json_object *all, *rows, *labels, *first;
	struct cgroups_count count;
	size_t n;

	if (!thp_exists("/sys/fs/cgroup/cgroup.controllers") || cgroups_collect(a, &all, &count) < 0)
		return;
	rows = json_object_new_array();
	labels = json_object_new_object();
	for (size_t r = 0; rows && labels && r < json_object_array_length(all); r++) {
		struct json_object *row = json_object_array_get_idx(all, r);
		char *t = label_text(jget_str(row, "cgroup"));

		if (t && !json_object_object_get_ex(labels, t, NULL)) {
			json_object_object_add(labels, t, NULL);
			json_object_array_add(rows, json_object_get(row));
		} else {
			count.skipped++;
		}
		free(t);
	}
	json_object_put(all);
	json_object_put(labels);
	n = json_object_array_length(rows);
	single(e, "thp_cgroups_memory", "gauge",
	       "Memory cgroups within the depth limit (those exported are thp_cgroups_exported).",
	       json_object_new_uint64(count.seen));
	single(e, "thp_cgroups_skipped", "gauge",
	       "Cgroups within the depth limit left out: memory.stat or the directory unreadable "
	       "(permissions, too large, path too long), or a label equal to another cgroup's.",
	       json_object_new_uint64(count.skipped));
	single(e, "thp_cgroups_exported", "gauge",
	       "Cgroups exported below: those with THP memory or events, largest first, at most --top.",
	       json_object_new_uint64(n));
	if (n == 0)
		goto out;
	first = json_object_array_get_idx(rows, 0);
	for (size_t i = 0; i < sizeof(bytes) / sizeof(bytes[0]); i++) {
		if (!json_object_object_get_ex(first, bytes[i].key, NULL))
			continue;
		family(e, bytes[i].name, "gauge", bytes[i].help);
		for (size_t r = 0; r < n; r++) {
			struct json_object *row = json_object_array_get_idx(rows, r);
			const char *l[] = { "cgroup", jget_str(row, "cgroup"), NULL };

			sample_u64(e, l, jget_u64(row, bytes[i].key));
		}
	}
	/* the thp_* events: every row has the keys the kernel has */
	json_object_object_foreach(first, key, v) {
		char name[96], help[160];

		(void)v;
		if (strncmp(key, "thp_", 4) != 0 ||
		    (size_t)snprintf(name, sizeof(name), "thp_cgroup_%s_total", key + 4) >= sizeof(name))
			continue;
		snprintf(help, sizeof(help), "THP event counter %s of the cgroup's memory.stat.", key);
		family(e, name, "counter", help);
		for (size_t r = 0; r < n; r++) {
			struct json_object *row = json_object_array_get_idx(rows, r);
			const char *l[] = { "cgroup", jget_str(row, "cgroup"), NULL };

			sample_u64(e, l, jget_u64(row, key));
		}
	}
out:
	json_object_put(rows);
}

/* every family, as {"families": [...]}; NULL when out of memory */
static struct json_object *collect(const struct thp_model *m, const struct verb_args *a)
{
	struct expo e = { .families = json_object_new_array() };
	struct json_object *o = json_object_new_object();

	if (!o || !e.families) {
		json_object_put(o);
		json_object_put(e.families);
		return NULL;
	}
	settings(&e, m);
	vmstat(&e);
	meminfo(&e);
	per_size(&e, m);
	thpd(&e);
	cgroups(&e, a);
	json_object_object_add(o, "families", e.families);
	return o;
}

/* s with \ and newline escaped, and " too in a label value */
static void put_escaped(FILE *f, const char *s, bool label)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else if (label && *s == '"')
			fputs("\\\"", f);
		else
			fputc(*s, f);
	}
}

/* the exposition text of collect()'s object */
static void put_exposition(FILE *f, struct json_object *o)
{
	struct json_object *families = json_object_object_get(o, "families");

	for (size_t i = 0; i < json_object_array_length(families); i++) {
		struct json_object *fam = json_object_array_get_idx(families, i);
		struct json_object *samples = json_object_object_get(fam, "samples");
		const char *name = jget_str(fam, "name");

		fprintf(f, "# HELP %s ", name);
		put_escaped(f, jget_str(fam, "help"), false);
		fprintf(f, "\n# TYPE %s %s\n", name, jget_str(fam, "type"));
		for (size_t j = 0; j < json_object_array_length(samples); j++) {
			struct json_object *s = json_object_array_get_idx(samples, j);
			int nl = 0;

			fputs(name, f);
			json_object_object_foreach(json_object_object_get(s, "labels"), k, v) {
				fprintf(f, "%s%s=\"", nl++ ? "," : "{", k);
				put_escaped(f, json_object_get_string(v), true);
				fputc('"', f);
			}
			fprintf(f, "%s %s\n", nl ? "}" : "",
				json_object_to_json_string_ext(json_object_object_get(s, "value"),
							       JSON_C_TO_STRING_PLAIN));
		}
	}
}

/* o as text or JSON to f; takes o. 0 or -ENOMEM (said) */
static int put_metrics(FILE *f, struct json_object *o, bool json)
{
	if (json)
		return output_to(f, o, true);
	if (!o) {
		log_error("out of memory");
		return -ENOMEM;
	}
	put_exposition(f, o);
	json_object_put(o);
	return 0;
}

/* FILE.XXXXXX beside FILE, then rename: readers see the old or the new file */
static int write_file(const char *path, struct json_object *o, bool json)
{
	char tmp[PATH_MAX];
	FILE *f;
	int fd;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= sizeof(tmp)) {
		log_error("%s: path too long", path);
		json_object_put(o);
		return EXIT_FAIL;
	}
	fd = mkstemp(tmp);
	if (fd < 0) {
		log_error("cannot create a file beside %s: %s", path, strerror(errno));
		json_object_put(o);
		return EXIT_FAIL;
	}
	f = fdopen(fd, "w");
	if (!f) {
		log_error("%s: %s", tmp, strerror(errno));
		json_object_put(o);
		close(fd);
		unlink(tmp);
		return EXIT_FAIL;
	}
	if (put_metrics(f, o, json) < 0 || fchmod(fd, 0644) < 0 || fflush(f) != 0 || ferror(f) ||
	    fsync(fd) < 0) {
		log_error("cannot write %s: %s", tmp, strerror(errno));
		fclose(f);
		unlink(tmp);
		return EXIT_FAIL;
	}
	if (fclose(f) != 0 || rename(tmp, path) < 0) {
		log_error("cannot write %s: %s", path, strerror(errno));
		unlink(tmp);
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

int verb_metrics(struct verb_args *a)
{
	struct thp_model *m = malloc(sizeof(*m));
	struct json_object *o;
	int r;

	if (!m) {
		log_error("out of memory");
		return EXIT_FAIL;
	}
	r = thp_model_read(m);
	if (r < 0) {
		log_error("cannot read the THP controls under %s: %s", full_path(THP_SYSFS_DIR),
			  strerror(-r));
		free(m);
		return EXIT_FAIL;
	}
	o = collect(m, a);
	free(m);
	if (a->output)
		return write_file(a->output, o, a->json);
	return put_metrics(stdout, o, a->json) < 0 ? EXIT_FAIL : EXIT_OK;
}
