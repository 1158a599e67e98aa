// SPDX-License-Identifier: GPL-2.0-or-later
/* thpctl status, enable and defrag: the system-wide THP state. */
#include "thpctl.h"
#include "thp.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const khugepaged_knobs[] = {
	"defrag", "pages_to_scan", "scan_sleep_millisecs", "alloc_sleep_millisecs",
	"max_ptes_none", "max_ptes_swap", "max_ptes_shared",
	"pages_collapsed", "full_scans",
};

static void add_file_kv(struct json_object *o, const char *path, const char *prefix)
{
	static char buf[65536];
	char *line, *save = NULL;

	if (thp_read_file(path, buf, sizeof(buf)) < 0)
		return;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[64];
		unsigned long long v;

		if (sscanf(line, "%63s %llu", name, &v) == 2 &&
		    strncmp(name, prefix, strlen(prefix)) == 0)
			jadd_u64(o, name, v);
	}
}

int verb_status(struct verb_args *a)
{
	struct json_object *o = json_object_new_object(), *k, *f, *counters, *thpd;
	struct thp_state st;
	char buf[16384];
	const char *why;
	uint64_t v;
	long blocks;
	int r;

	r = thp_state_read(&st);
	if (r < 0) {
		json_object_put(o);
		log_error("cannot read the THP state under %s: %s", full_path(THP_SYSFS_DIR),
			  strerror(-r));
		return EXIT_FAIL;
	}
	jadd_str(o, "enabled", thp_enabled_name(st.enabled));
	jadd_str(o, "mode", st.mode);
	jadd_str(o, "defrag", st.defrag);

	k = json_object_new_object();
	for (size_t i = 0; i < sizeof(khugepaged_knobs) / sizeof(khugepaged_knobs[0]); i++)
		if (thp_khugepaged_read(khugepaged_knobs[i], &v) == 0)
			jadd_u64(k, khugepaged_knobs[i], v);
	if (o)
		json_object_object_add(o, "khugepaged", k);

	blocks = thp_buddyinfo_free_blocks(9);
	if (blocks >= 0)
		jadd_int(o, "free_hugepage_blocks", blocks);
	else
		jadd_str(o, "free_hugepage_blocks", NULL);
	if (thp_read_file("/proc/meminfo", buf, sizeof(buf)) >= 0 &&
	    thp_kv_get(buf, "AnonHugePages", &v) == 0)
		jadd_u64(o, "anon_huge_kib", v);
	else
		jadd_str(o, "anon_huge_kib", NULL);

	counters = json_object_new_object();
	add_file_kv(counters, "/proc/vmstat", "thp_");
	if (o)
		json_object_object_add(o, "counters", counters);

	f = json_object_new_object();
	jadd_bool(f, "mode_file", st.has_mode_file);
	jadd_bool(f, "thp_policy", st.has_thp_policy);
	jadd_bool(f, "thp_stat", st.has_thp_stat);
	if (o)
		json_object_object_add(o, "kernel_features", f);

	r = thpctl_call("status", NULL, &thpd, &why);
	if (o)
		json_object_object_add(o, "thpd", r > 0 ? thpd : NULL);
	else
		json_object_put(thpd);

	if (output(o, a->json) < 0)
		return EXIT_FAIL;
	/* an unanswered or refused status was reported; the rest is still valid */
	return r < 0 ? EXIT_FAIL : EXIT_OK;
}

static void print_result(const char *how)
{
	struct thp_state st;

	if (thp_state_read(&st) == 0)
		printf("enabled=%s defrag=%s mode=%s (%s)\n", thp_enabled_name(st.enabled),
		       st.defrag, st.mode, how);
	else
		printf("done (%s)\n", how);
}

static int via_thpd_or_sysfs(const char *cmd, const char *value,
			     int (*apply)(const char *value, const char **failed))
{
	struct json_object *reply;
	const char *why, *failed = NULL;
	char how[256];
	int r;

	r = thpctl_call(cmd, value, &reply, &why);
	if (r < 0)
		return EXIT_FAIL;
	if (r > 0) {
		struct json_object *e, *d, *m;

		if (json_object_object_get_ex(reply, "enabled", &e) &&
		    json_object_object_get_ex(reply, "defrag", &d) &&
		    json_object_object_get_ex(reply, "mode", &m))
			printf("enabled=%s defrag=%s mode=%s (set by thpd, which keeps it)\n",
			       json_object_get_string(e), json_object_get_string(d),
			       json_object_get_string(m));
		else
			printf("done (set by thpd, which keeps it)\n");
		json_object_put(reply);
		return EXIT_OK;
	}
	r = apply(value, &failed);
	if (r < 0) {
		log_error("failed to write '%s' to %s: %s", value,
			  failed ? full_path(failed) : full_path(THP_SYSFS_DIR), strerror(-r));
		return EXIT_FAIL;
	}
	snprintf(how, sizeof(how), "written to sysfs: thpd is not running, so this lasts until reboot");
	/* not the plain "nobody listens" case: say what went wrong */
	if (strcmp(why, strerror(ENOENT)) && strcmp(why, strerror(ECONNREFUSED)))
		log_error("could not reach thpd at %s: %s", thpctl_socket_path(), why);
	print_result(how);
	return EXIT_OK;
}

static int apply_mode(const char *value, const char **failed)
{
	struct thp_mode_req req;
	int r = thp_mode_parse(value, &req);

	return r < 0 ? r : thp_state_apply(&req, failed);
}

int verb_enable(struct verb_args *a)
{
	const char *value = a->argv[1];
	struct thp_mode_req req;

	if (thp_mode_parse(value, &req) < 0)
		return usage_error("enable: invalid mode '%s' (expected always, madvise, never, 0, 1 or 2)",
				   value);
	if (req.rfc >= 0 && !thp_exists(THP_SYSFS_DIR "/mode"))
		log_error("this kernel has no numeric THP modes: %d means enabled=%s defrag=%s",
			  req.rfc, thp_enabled_name(req.enabled), req.defrag);
	return via_thpd_or_sysfs("enable", value, apply_mode);
}

int verb_defrag(struct verb_args *a)
{
	const char *value = a->argv[1];

	if (thp_defrag_valid(value) < 0)
		return usage_error("defrag: invalid value '%s' (expected always, defer, defer+madvise, madvise or never)",
				   value);
	return via_thpd_or_sysfs("defrag", value, thp_defrag_apply);
}
