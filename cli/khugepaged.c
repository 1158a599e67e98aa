// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * thpctl khugepaged: show khugepaged's settings and progress, or set
 * settings. A change goes through thpd when it runs (which keeps it, as
 * enable and defrag do), else straight to sysfs; every value is checked
 * against what the kernel's stores take before anything is written.
 */
#include "thpctl.h"
#include "thp.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* what khugepaged/ holds, settings first, then its counters */
static const char *const counters[] = { "pages_collapsed", "full_scans", NULL };

#define N_SETTINGS 7

/* khugepaged/NAME of every setting and counter the kernel has, as JSON */
static int show(bool json)
{
	struct json_object *o = json_object_new_object();
	const char *const *lists[] = { thp_khugepaged_settings, counters };
	int rc = EXIT_OK;

	for (size_t l = 0; l < 2; l++)
		for (const char *const *k = lists[l]; *k; k++) {
			uint64_t v;
			int r = thp_khugepaged_read(*k, &v);

			if (r == 0) {
				jadd_u64(o, *k, v);
			} else if (r != -ENOENT) {
				log_error("cannot read %s/khugepaged/%s: %s", full_path(THP_SYSFS_DIR),
					  *k, strerror(-r));
				rc = EXIT_FAIL;
			}
		}
	if (output(o, json) < 0)
		return EXIT_FAIL;
	return rc;
}

static int setting_index(const char *name, size_t len)
{
	for (int i = 0; thp_khugepaged_settings[i]; i++)
		if (strlen(thp_khugepaged_settings[i]) == len &&
		    strncmp(thp_khugepaged_settings[i], name, len) == 0)
			return i;
	return -1;
}

static unsigned long pmd_pages(void)
{
	struct thp_model m;
	long page = sysconf(_SC_PAGESIZE);

	if (thp_model_read_controls(&m) < 0)
		m.pmd_kib = 2048;
	return page > 0 ? m.pmd_kib * 1024 / (unsigned long)page : 512;
}

/*
 * KEY=VALUE operands into val[] (set[] marks which): EXIT_OK, or
 * usage_error()'s code for an unknown key, a counter, a value that is not
 * a number or out of what the kernel takes, a key given twice
 */
static int parse_settings(char **argv, int argc, uint64_t *val, bool *set)
{
	unsigned long pages = pmd_pages();

	for (int i = 0; i < argc; i++) {
		const char *eq = strchr(argv[i], '='), *num;
		char *end, names[160];
		uint64_t min, max;
		unsigned long long v;
		int k;

		k = eq ? setting_index(argv[i], (size_t)(eq - argv[i])) : -1;
		if (k < 0) {
			size_t used = 0;

			for (int j = 0; thp_khugepaged_settings[j] && used < sizeof(names); j++)
				used += (size_t)snprintf(names + used, sizeof(names) - used, "%s%s",
							 j ? ", " : "", thp_khugepaged_settings[j]);
			for (const char *const *c = counters; *c && eq; c++)
				if (strlen(*c) == (size_t)(eq - argv[i]) && !strncmp(*c, argv[i], strlen(*c)))
					return usage_error("khugepaged: %s is a counter, not a setting "
							   "(settings: %s)", *c, names);
			return usage_error("khugepaged: %s '%s' (expected KEY=VALUE, KEY one of %s)",
					   eq ? "unknown setting in" : "not a setting:", argv[i], names);
		}
		if (set[k])
			return usage_error("khugepaged: %s given twice", thp_khugepaged_settings[k]);
		thp_khugepaged_limits(thp_khugepaged_settings[k], pages, &min, &max);
		num = eq + 1;
		errno = 0;
		v = strtoull(num, &end, 10);
		if (*num < '0' || *num > '9' || *end || errno || v < min || v > max)
			return usage_error("khugepaged: %s takes a whole number from %" PRIu64
					   " to %" PRIu64 ", not '%s'", thp_khugepaged_settings[k],
					   min, max, num);
		val[k] = v;
		set[k] = true;
	}
	return EXIT_OK;
}

/* "name=value name=value" of what set[] marks */
static const char *settings_text(const uint64_t *val, const bool *set, char *buf, size_t size)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int k = 0; k < N_SETTINGS && used < size; k++)
		if (set[k])
			used += (size_t)snprintf(buf + used, size - used, "%s%s=%" PRIu64,
						 used ? " " : "", thp_khugepaged_settings[k], val[k]);
	return buf;
}

/* 1 when thpd set them, 0 when it is not running, -1 when it refused (said) */
static int via_thpd(const uint64_t *val, const bool *set)
{
	struct json_object *req = json_object_new_object(), *reply;
	const char *why;
	int r;

	for (int k = 0; k < N_SETTINGS; k++)
		if (set[k])
			jadd_u64(req, thp_khugepaged_settings[k], val[k]);
	r = thpctl_call_object("khugepaged", "set", req, &reply, &why);
	if (r <= 0) {
		if (r == 0 && strcmp(why, strerror(ENOENT)) && strcmp(why, strerror(ECONNREFUSED)))
			log_error("could not reach thpd at %s: %s", thpctl_socket_path(), why);
		return r < 0 ? -1 : 0;
	}
	json_object_put(reply);
	return 1;
}

/*
 * Straight to sysfs, as one change: when a write fails, what was written
 * before it is written back. EXIT_OK or EXIT_FAIL (said).
 */
static int write_sysfs(const uint64_t *val, const bool *set)
{
	uint64_t old[N_SETTINGS];
	int k, r = 0;

	for (k = 0; k < N_SETTINGS; k++) {
		if (!set[k])
			continue;
		r = thp_khugepaged_read(thp_khugepaged_settings[k], &old[k]);
		if (r < 0) {
			log_error("%s %s/khugepaged/%s: %s; nothing was changed",
				  r == -ENOENT ? "this kernel has no" : "cannot read",
				  full_path(THP_SYSFS_DIR), thp_khugepaged_settings[k],
				  r == -ENOENT ? "it has no such setting" : strerror(-r));
			return EXIT_FAIL;
		}
	}
	for (k = 0; k < N_SETTINGS; k++) {
		if (!set[k])
			continue;
		r = thp_khugepaged_write(thp_khugepaged_settings[k], val[k]);
		if (r < 0)
			break;
	}
	if (r == 0)
		return EXIT_OK;
	log_error("failed to write %" PRIu64 " to %s/khugepaged/%s: %s", val[k],
		  full_path(THP_SYSFS_DIR), thp_khugepaged_settings[k], strerror(-r));
	for (int j = 0; j < k; j++)
		if (set[j] && thp_khugepaged_write(thp_khugepaged_settings[j], old[j]) < 0)
			log_error("writing khugepaged/%s back to %" PRIu64 " failed too: the host "
				  "may be left half-changed", thp_khugepaged_settings[j], old[j]);
	return EXIT_FAIL;
}

/*
 * khugepaged runs while a size it collapses to can be used (the PMD size,
 * anonymous or shmem) or the top level is on: otherwise its settings
 * change nothing. EXIT_OK or EXIT_NOT_IN_EFFECT.
 */
static int check_running(const struct thp_model *m, bool say)
{
	const struct thp_size *pmd = thp_model_pmd(m);
	const char *top = thp_choice_value(&m->enabled);

	if ((top && strcmp(top, "never") != 0) || (pmd && (thp_size_anon_eff(m, pmd) != THP_EFF_NEVER ||
							  thp_size_shmem_eff(m, pmd) != THP_EFF_NEVER)))
		return EXIT_OK;
	if (say)
		log_error("khugepaged is not running: enabled is never and no size it collapses to "
			  "is used, so its settings change nothing until THP is on, e.g. "
			  "'thpctl enable madvise'");
	return EXIT_NOT_IN_EFFECT;
}

int verb_khugepaged(struct verb_args *a)
{
	uint64_t val[N_SETTINGS] = { 0 };
	bool set[N_SETTINGS] = { false };
	struct thp_model m;
	char text[512];
	const char *how;
	int r, rc = EXIT_OK;

	if (a->argc < 2 || strcmp(a->argv[1], "show") == 0) {
		if (a->argc > 2)
			return usage_error("khugepaged show: too many arguments");
		return show(a->json);
	}
	if (strcmp(a->argv[1], "set") != 0)
		return usage_error("khugepaged: unknown action '%s' (expected show or set)", a->argv[1]);
	if (a->argc == 3 && is_help(a->argv[2])) {
		for (int k = 0; thp_khugepaged_settings[k]; k++) {
			uint64_t v;

			if (thp_khugepaged_read(thp_khugepaged_settings[k], &v) != -ENOENT)
				puts(thp_khugepaged_settings[k]);
		}
		return EXIT_OK;
	}
	if (a->json)
		return usage_error("khugepaged set: --json is not supported (not a read command)");
	if (a->argc < 3)
		return usage_error("khugepaged set: expected KEY=VALUE...");
	r = parse_settings(a->argv + 2, a->argc - 2, val, set);
	if (r != EXIT_OK)
		return r;
	r = via_thpd(val, set);
	if (r < 0)
		return EXIT_FAIL;
	if (r > 0) {
		how = "set by thpd, which keeps it";
	} else {
		if (write_sysfs(val, set) != EXIT_OK)
			return EXIT_FAIL;
		how = "written to sysfs: thpd is not running, so this lasts until reboot";
	}
	if (thp_model_read_controls(&m) == 0)
		rc = check_running(&m, false);
	fprintf(rc ? stderr : stdout, "%s%s (%s)%s\n", rc ? "thpctl: " : "",
		settings_text(val, set, text, sizeof(text)), how, rc ? "; not in effect:" : "");
	return rc ? check_running(&m, true) : rc;
}
