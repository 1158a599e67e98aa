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

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_SIZES 16

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
 * A "[bracketed] choice" file as one sample per choice: 1 for the bracketed
 * one, 0 for the others. extra: a label pair put before "setting" (size).
 */
static void choice_samples(FILE *f, const char *name, const char *text, const char *extra_name,
			   const char *extra_value)
{
	char buf[256], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", text);
	for (char *w = strtok_r(buf, " \n", &save); w; w = strtok_r(NULL, " \n", &save)) {
		bool on = w[0] == '[';
		size_t len = strlen(w);
		const char *labels[5] = {};
		size_t n = 0;

		if (on && len >= 2 && w[len - 1] == ']') {
			w[len - 1] = '\0';
			w++;
		}
		if (extra_name) {
			labels[n++] = extra_name;
			labels[n++] = extra_value;
		}
		labels[n++] = "setting";
		labels[n] = w;
		sample(f, name, labels, on ? "1" : "0");
	}
}

static void choice_family(FILE *f, const char *name, const char *path, const char *help)
{
	char text[256];

	if (!read_text(path, text, sizeof(text)))
		return;
	family(f, name, "gauge", help);
	choice_samples(f, name, text, NULL, NULL);
}

static void settings(FILE *f)
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

	choice_family(f, "thp_enabled", THP_SYSFS_DIR "/enabled",
		      "Transparent hugepage mode (transparent_hugepage/enabled): 1 for the active setting.");
	choice_family(f, "thp_defrag", THP_SYSFS_DIR "/defrag",
		      "THP fault defrag (transparent_hugepage/defrag): 1 for the active setting.");
	choice_family(f, "thp_shmem_enabled", THP_SYSFS_DIR "/shmem_enabled",
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

/* the hugepages-<N>kB directories (6.8+), smallest first */
struct sizes {
	char name[MAX_SIZES][24];	/* "64kB" */
	size_t n;
};

static int size_cmp(const void *a, const void *b)
{
	long x = atol(a), y = atol(b);

	return (x > y) - (x < y);
}

static void find_sizes(struct sizes *s)
{
	char dir[PATH_MAX];
	struct dirent *de;
	DIR *d;

	s->n = 0;
	if (thp_path(dir, sizeof(dir), THP_SYSFS_DIR) < 0 || !(d = opendir(dir)))
		return;
	while ((de = readdir(d)) && s->n < MAX_SIZES) {
		const char *p = de->d_name + strlen("hugepages-");
		size_t len = strlen(de->d_name);

		if (strncmp(de->d_name, "hugepages-", 10) != 0 || len < 13 ||
		    strcmp(de->d_name + len - 2, "kB") != 0 || !isdigit((unsigned char)*p) ||
		    strlen(p) >= sizeof(s->name[0]))
			continue;
		snprintf(s->name[s->n++], sizeof(s->name[0]), "%s", p);
	}
	closedir(d);
	qsort(s->name, s->n, sizeof(s->name[0]), size_cmp);
}

static void size_choice_family(FILE *f, const struct sizes *s, const char *file,
			       const char *name, const char *help)
{
	bool head = false;

	for (size_t i = 0; i < s->n; i++) {
		char path[PATH_MAX], text[256];

		snprintf(path, sizeof(path), THP_SYSFS_DIR "/hugepages-%s/%s", s->name[i], file);
		if (!read_text(path, text, sizeof(text)))
			continue;
		if (!head)
			family(f, name, "gauge", help);
		head = true;
		choice_samples(f, name, text, "size", s->name[i]);
	}
}

/* stats/ of every size: one family per file name, one sample per size */
static void size_stats(FILE *f, const struct sizes *s)
{
	char dir[PATH_MAX], path[PATH_MAX];
	struct dirent **names = NULL;
	int n;

	if (s->n == 0)
		return;
	/* the file names of the largest size (every size has the same) */
	snprintf(path, sizeof(path), THP_SYSFS_DIR "/hugepages-%s/stats", s->name[s->n - 1]);
	if (thp_path(dir, sizeof(dir), path) < 0)
		return;
	n = scandir(dir, &names, NULL, alphasort);
	for (int i = 0; i < n; i++) {
		const char *stat = names[i]->d_name;
		bool gauge = strncmp(stat, "nr_", 3) == 0;	/* nr_anon: a count now */
		char name[96], help[192];
		bool head = false;

		if (stat[0] == '.' ||
		    (size_t)snprintf(name, sizeof(name), "thp_size_%s%s", stat,
				     gauge ? "" : "_total") >= sizeof(name))
			goto next;
		snprintf(help, sizeof(help), gauge ?
			 "Per-size THP count %s (hugepages-<size>/stats/%s)." :
			 "Per-size THP event counter %s (hugepages-<size>/stats/%s).", stat, stat);
		for (size_t j = 0; j < s->n; j++) {
			const char *labels[] = { "size", s->name[j], NULL };
			uint64_t v;

			snprintf(path, sizeof(path), THP_SYSFS_DIR "/hugepages-%s/stats/%s",
				 s->name[j], stat);
			if (!read_u64(path, &v))
				continue;
			if (!head)
				family(f, name, gauge ? "gauge" : "counter", help);
			head = true;
			sample_u64(f, name, labels, v);
		}
next:
		free(names[i]);
	}
	free(names);
}

static void per_size(FILE *f)
{
	struct sizes s;

	find_sizes(&s);
	size_choice_family(f, &s, "enabled", "thp_size_enabled",
			   "Per-size anonymous THP setting (hugepages-<size>/enabled): 1 for the active setting.");
	size_choice_family(f, &s, "shmem_enabled", "thp_size_shmem_enabled",
			   "Per-size shmem THP setting (hugepages-<size>/shmem_enabled): 1 for the active setting.");
	size_stats(f, &s);
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

static void write_metrics(FILE *f, const struct verb_args *a)
{
	settings(f);
	vmstat(f);
	meminfo(f);
	per_size(f);
	thpd(f);
	cgroups(f, a);
}

/* FILE.XXXXXX beside FILE, then rename: readers see the old or the new file */
static int write_file(const char *path, const struct verb_args *a)
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
	write_metrics(f, a);
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
	if (!thp_exists(THP_SYSFS_DIR "/enabled")) {
		log_error("no transparent hugepage support: %s is missing",
			  full_path(THP_SYSFS_DIR "/enabled"));
		return EXIT_FAIL;
	}
	if (a->output)
		return write_file(a->output, a);
	write_metrics(stdout, a);
	return EXIT_OK;
}
