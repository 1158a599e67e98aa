// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * thpctl metrics: THP state and counters in the Prometheus text exposition
 * format (version 0.0.4), for node_exporter's textfile collector or any
 * scraper: HELP and TYPE before each family, base units (bytes, seconds),
 * counters ending in _total, settings as one gauge per possible value (1 for
 * the active one), as node_exporter does for systemd unit states.
 *
 * Families, in this order: the settings (enabled, defrag, shmem_enabled,
 * the RFC mode, khugepaged), /proc/vmstat's thp_* events, the hugepage
 * figures of /proc/meminfo, free order-9+ blocks, each size's settings and
 * stats/ (6.8+), thpd's state, and the per-cgroup figures of `thpctl
 * cgroups` under the same --depth/--top limits (the cardinality rule in
 * thpctl(1)). What the running kernel lacks is left out, never invented.
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

static void family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* a label value with \, " and newline escaped as the format requires */
static void label_value(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

/* name{l1="v1",l2="v2"} value; labels NULL-terminated name/value pairs */
static void sample(FILE *f, const char *name, const char *const *labels, const char *value)
{
	fputs(name, f);
	for (size_t i = 0; labels && labels[i]; i += 2) {
		fprintf(f, "%s%s=", i ? "," : "{", labels[i]);
		label_value(f, labels[i + 1]);
	}
	fprintf(f, "%s %s\n", labels && labels[0] ? "}" : "", value);
}

static void sample_u64(FILE *f, const char *name, const char *const *labels, uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	sample(f, name, labels, buf);
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
static void choice_samples(FILE *f, const char *name, const struct thp_choice *c,
			   const char *size)
{
	for (int i = 0; i < c->n; i++) {
		const char *labels[] = { "size", size, "setting", c->word[i], NULL };

		sample(f, name, size ? labels : labels + 2, i == c->cur ? "1" : "0");
	}
}

static void choice_family(FILE *f, const char *name, const struct thp_choice *c,
			  const char *help)
{
	if (c->n == 0)
		return;
	family(f, name, "gauge", help);
	choice_samples(f, name, c, NULL);
}

static void settings(FILE *f, const struct thp_model *m)
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
	struct thp_state st;

	choice_family(f, "thp_enabled", &m->enabled,
		      "Transparent hugepage mode (transparent_hugepage/enabled): 1 for the active setting.");
	choice_family(f, "thp_defrag", &m->defrag,
		      "THP fault defrag (transparent_hugepage/defrag): 1 for the active setting.");
	choice_family(f, "thp_shmem_enabled", &m->shmem_enabled,
		      "THP for shmem/tmpfs (transparent_hugepage/shmem_enabled): 1 for the active setting.");
	if (thp_state_read(&st) == 0) {
		family(f, "thp_rfc_mode", "gauge",
		       "The RFC's mode of enabled+defrag: 0 madvise, 1 always, 2 always with defrag; -1 never.");
		sample(f, "thp_rfc_mode", NULL, strcmp(st.mode, "never") ? st.mode : "-1");
	}
	for (size_t i = 0; i < sizeof(khugepaged) / sizeof(khugepaged[0]); i++) {
		uint64_t v;
		char buf[32];

		snprintf(path, sizeof(path), THP_SYSFS_DIR "/khugepaged/%s", khugepaged[i].file);
		if (!read_u64(path, &v))
			continue;
		family(f, khugepaged[i].name, khugepaged[i].type, khugepaged[i].help);
		if (khugepaged[i].ms) {
			snprintf(buf, sizeof(buf), "%" PRIu64 ".%03" PRIu64, v / 1000, v % 1000);
			sample(f, khugepaged[i].name, NULL, buf);
		} else {
			sample_u64(f, khugepaged[i].name, NULL, v);
		}
	}
}

/* /proc/vmstat's thp_* lines, each a counter family of its own */
static void vmstat(FILE *f)
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
		family(f, name, "counter", help);
		sample_u64(f, name, NULL, v);
	}
	free(buf);
}

static void meminfo(FILE *f)
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
			family(f, fields[i].name, "gauge", fields[i].help);
			sample_u64(f, fields[i].name, NULL, kib * 1024);
		}
	}
	blocks = thp_buddyinfo_free_blocks(9);
	if (blocks >= 0) {
		family(f, "thp_free_hugepage_blocks", "gauge",
		       "Free blocks of order 9 or more, counted in order-9 (PMD-sized) blocks (/proc/buddyinfo).");
		sample_u64(f, "thp_free_hugepage_blocks", NULL, (uint64_t)blocks);
	}
}

/* "64kB", as the directory hugepages-64kB names the size */
static const char *size_label(unsigned long kib, char *buf, size_t size)
{
	snprintf(buf, size, "%lukB", kib);
	return buf;
}

/* a per-size knob (6.8+), one sample per size and word */
static void size_choice_family(FILE *f, const struct thp_model *m, bool shmem,
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
			family(f, name, "gauge", help);
		head = true;
		choice_samples(f, name, c, size_label(s->kib, size, sizeof(size)));
	}
}

/*
 * What a size is left in for anonymous memory, after inherit and the
 * top-level mode (lib's effective state), one sample per state.
 */
static void size_effective(FILE *f, const struct thp_model *m)
{
	static const enum thp_eff states[] = { THP_EFF_NEVER, THP_EFF_ADVISE, THP_EFF_ALWAYS };

	if (!m->per_size)
		return;
	family(f, "thp_size_anon_effective", "gauge",
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

			sample(f, "thp_size_anon_effective", labels, eff == states[j] ? "1" : "0");
		}
	}
}

/* stats/ of every size: one family per file name, one sample per size */
static void size_stats(FILE *f, const struct thp_model *m)
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
					family(f, name, gauge ? "gauge" : "counter", help);
				head = true;
				size_label(s->kib, size, sizeof(size));
				sample_u64(f, name, labels, s->stats[k].value);
			}
		}
	}
}

static void per_size(FILE *f, const struct thp_model *m)
{
	size_choice_family(f, m, false, "thp_size_enabled",
			   "Per-size anonymous THP setting (hugepages-<size>/enabled): 1 for the active setting.");
	size_choice_family(f, m, true, "thp_size_shmem_enabled",
			   "Per-size shmem THP setting (hugepages-<size>/shmem_enabled): 1 for the active setting.");
	size_effective(f, m);
	size_stats(f, m);
}

static uint64_t jget_u64(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_uint64(v) : 0;
}

static const char *jget_str(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* thpd's [Collapse] (status "collapse"), when its thpd has it */
static void thpd_collapse(FILE *f, struct json_object *st)
{
	struct json_object *c, *by;
	const char *state;
	char cpu[32];

	if (!json_object_object_get_ex(st, "collapse", &c) || !c)
		return;
	state = jget_str(c, "state");
	family(f, "thpd_collapse_enabled", "gauge", "1 when thpd's [Collapse] is on.");
	sample(f, "thpd_collapse_enabled", NULL,
	       json_object_get_boolean(json_object_object_get(c, "enabled")) ? "1" : "0");
	family(f, "thpd_collapse_owed", "gauge",
	       "1 while thpd owes a collapse pass: it watches for free hugepage blocks, or collapses.");
	sample(f, "thpd_collapse_owed", NULL,
	       state && (strncmp(state, "owed", 4) == 0 || strcmp(state, "collapsing") == 0) ? "1" : "0");
	family(f, "thpd_collapse_passes_total", "counter", "Collapse passes thpd ran since it started.");
	sample_u64(f, "thpd_collapse_passes_total", NULL, jget_u64(c, "passes"));
	family(f, "thpd_collapse_hugepages_total", "counter",
	       "Hugepages thpd's collapse made (the growth of AnonHugePages it caused, in PMD sizes).");
	sample_u64(f, "thpd_collapse_hugepages_total", NULL, jget_u64(c, "hugepages"));
	family(f, "thpd_collapse_bytes_total", "counter", "Bytes thpd's collapse turned huge.");
	sample_u64(f, "thpd_collapse_bytes_total", NULL, jget_u64(c, "bytes"));
	family(f, "thpd_collapse_failures_total", "counter",
	       "MADV_COLLAPSE calls that failed (each covers up to 8 contiguous 2 MiB ranges), by reason: nomem (no hugepage), again (pages busy), busy (memory cgroup full), invalid (cannot be collapsed), other.");
	if (json_object_object_get_ex(c, "failures_by", &by) && json_object_is_type(by, json_type_object)) {
		json_object_object_foreach(by, reason, v) {
			const char *labels[] = { "reason", reason, NULL };

			sample_u64(f, "thpd_collapse_failures_total", labels, json_object_get_uint64(v));
		}
	}
	family(f, "thpd_collapse_cpu_seconds_total", "counter",
	       "CPU time thpd spent on collapse: scanning and the collapses themselves, which run in thpd.");
	snprintf(cpu, sizeof(cpu), "%.6f", (double)jget_u64(c, "cpu_usec") / 1e6);
	sample(f, "thpd_collapse_cpu_seconds_total", NULL, cpu);
}

static void thpd(FILE *f)
{
	struct json_object *st = NULL, *adaptive = NULL, *persisted = NULL;
	const char *why, *state;
	int r = thpctl_call("status", NULL, &st, &why);

	family(f, "thpd_up", "gauge", "1 when thpd answered on its socket, else 0.");
	sample(f, "thpd_up", NULL, r > 0 ? "1" : "0");
	if (r <= 0)
		return;
	json_object_object_get_ex(st, "adaptive", &adaptive);
	state = jget_str(adaptive, "state");
	if (jget_str(st, "version")) {
		const char *labels[] = { "version", jget_str(st, "version"), NULL };

		family(f, "thpd_info", "gauge", "thpd's version, as a label.");
		sample(f, "thpd_info", labels, "1");
	}
	family(f, "thpd_adaptive_enabled", "gauge", "1 when thpd's adaptive switching is on.");
	sample(f, "thpd_adaptive_enabled", NULL,
	       json_object_get_boolean(json_object_object_get(adaptive, "enabled")) ? "1" : "0");
	if (state) {
		family(f, "thpd_adaptive_stepped_down", "gauge",
		       "1 while thpd has stepped THP down under pressure or fragmentation.");
		sample(f, "thpd_adaptive_stepped_down", NULL,
		       strcmp(state, "stepped-down") == 0 ? "1" : "0");
	}
	family(f, "thpd_adaptive_switches_total", "counter",
	       "Adaptive switches (step-downs and step-ups) since thpd started.");
	sample_u64(f, "thpd_adaptive_switches_total", NULL, jget_u64(adaptive, "switches"));
	family(f, "thpd_rules", "gauge", "Per-application rules in thpd's configuration.");
	sample_u64(f, "thpd_rules", NULL, jget_u64(st, "rules"));
	family(f, "thpd_rules_applied_total", "counter",
	       "Per-process policies thpd's rules applied since it started.");
	sample_u64(f, "thpd_rules_applied_total", NULL, jget_u64(st, "rules_applied"));
	json_object_object_get_ex(st, "persisted", &persisted);
	family(f, "thpd_persisted", "gauge",
	       "1 when thpd keeps an administrator's setting (thpctl enable/defrag) across restarts.");
	sample(f, "thpd_persisted", NULL, persisted ? "1" : "0");
	if (persisted) {
		const char *e = jget_str(persisted, "enabled"), *d = jget_str(persisted, "defrag");
		const char *labels[] = { "enabled", e ? e : "", "defrag", d ? d : "", NULL };

		family(f, "thpd_persisted_info", "gauge",
		       "The setting thpd keeps, as labels (empty: not set).");
		sample(f, "thpd_persisted_info", labels, "1");
	}
	thpd_collapse(f, st);
	json_object_put(st);
}

static void cgroups(FILE *f, const struct verb_args *a)
{
	static const struct {
		const char *key, *name, *help;
	} bytes[] = {
		{ "anon_thp", "thp_cgroup_anon_bytes", "Anonymous THP memory of the cgroup (memory.stat anon_thp)." },
		{ "file_thp", "thp_cgroup_file_bytes", "Page cache THP memory of the cgroup (memory.stat file_thp)." },
		{ "shmem_thp", "thp_cgroup_shmem_bytes", "Shmem THP memory of the cgroup (memory.stat shmem_thp)." },
	};
	struct json_object *rows, *first;
	size_t seen, n;

	if (!thp_exists("/sys/fs/cgroup/cgroup.controllers") || cgroups_collect(a, &rows, &seen) < 0)
		return;
	n = json_object_array_length(rows);
	family(f, "thp_cgroups_memory", "gauge",
	       "Memory cgroups within the depth limit (those exported are thp_cgroups_exported).");
	sample_u64(f, "thp_cgroups_memory", NULL, seen);
	family(f, "thp_cgroups_exported", "gauge",
	       "Cgroups exported below: those with THP memory or events, largest first, at most --top.");
	sample_u64(f, "thp_cgroups_exported", NULL, n);
	if (n == 0)
		goto out;
	for (size_t i = 0; i < sizeof(bytes) / sizeof(bytes[0]); i++) {
		if (!json_object_object_get_ex(json_object_array_get_idx(rows, 0), bytes[i].key, NULL))
			continue;
		family(f, bytes[i].name, "gauge", bytes[i].help);
		for (size_t r = 0; r < n; r++) {
			struct json_object *row = json_object_array_get_idx(rows, r);
			const char *labels[] = { "cgroup", jget_str(row, "cgroup"), NULL };

			sample_u64(f, bytes[i].name, labels, jget_u64(row, bytes[i].key));
		}
	}
	/* the thp_* events: every row has the keys the kernel has */
	first = json_object_array_get_idx(rows, 0);
	json_object_object_foreach(first, key, v) {
		char name[96], help[160];

		(void)v;
		if (strncmp(key, "thp_", 4) != 0 ||
		    (size_t)snprintf(name, sizeof(name), "thp_cgroup_%s_total", key + 4) >= sizeof(name))
			continue;
		snprintf(help, sizeof(help), "THP event counter %s of the cgroup's memory.stat.", key);
		family(f, name, "counter", help);
		for (size_t r = 0; r < n; r++) {
			struct json_object *row = json_object_array_get_idx(rows, r);
			const char *labels[] = { "cgroup", jget_str(row, "cgroup"), NULL };

			sample_u64(f, name, labels, jget_u64(row, key));
		}
	}
out:
	json_object_put(rows);
}

static void write_metrics(FILE *f, const struct thp_model *m, const struct verb_args *a)
{
	settings(f, m);
	vmstat(f);
	meminfo(f);
	per_size(f, m);
	thpd(f);
	cgroups(f, a);
}

/* FILE.XXXXXX beside FILE, then rename: readers see the old or the new file */
static int write_file(const char *path, const struct thp_model *m, const struct verb_args *a)
{
	char tmp[PATH_MAX];
	FILE *f;
	int fd;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= sizeof(tmp)) {
		log_error("%s: path too long", path);
		return EXIT_FAIL;
	}
	fd = mkstemp(tmp);
	if (fd < 0) {
		log_error("cannot create a file beside %s: %s", path, strerror(errno));
		return EXIT_FAIL;
	}
	f = fdopen(fd, "w");
	if (!f) {
		log_error("%s: %s", tmp, strerror(errno));
		close(fd);
		unlink(tmp);
		return EXIT_FAIL;
	}
	write_metrics(f, m, a);
	if (fchmod(fd, 0644) < 0 || fflush(f) != 0 || ferror(f) || fsync(fd) < 0) {
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
	int r, rc = EXIT_OK;

	if (!m) {
		log_error("out of memory");
		return EXIT_FAIL;
	}
	r = thp_model_read(m);
	if (r < 0) {
		log_error("cannot read the THP controls under %s: %s", full_path(THP_SYSFS_DIR),
			  strerror(-r));
		rc = EXIT_FAIL;
	} else if (a->output) {
		rc = write_file(a->output, m, a);
	} else {
		write_metrics(stdout, m, a);
	}
	free(m);
	return rc;
}
