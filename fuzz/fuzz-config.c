// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer target: thpd's configuration parser (daemon/config.c, the text
 * of /etc/thpd/thpd.conf and its drop-ins) and the rule matcher that uses
 * its result (daemon/rules.c).
 *
 * Properties: thpd_config_parse() returns 0 or -EINVAL, and -EINVAL
 * only after reporting a fatal problem; every diagnostic has a message;
 * whatever is accepted is within the documented bounds (Mode= and Defrag=
 * valid words, at most THPD_MAX_RULES rules, NUL-terminated strings, known
 * policies); thpd_config_finish() keeps only complete rules; matching never
 * reads out of bounds.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "rules.h"
#include "thp.h"

struct diag_count {
	unsigned int fatal, warnings;
};

static void on_diag(void *userdata, enum thpd_diag_level level, const char *file,
		    unsigned int line, const char *msg)
{
	struct diag_count *dc = userdata;

	(void)line;
	if (!msg || !msg[0] || (file && !file[0]))
		abort();
	if (level == THPD_DIAG_FATAL)
		dc->fatal++;
	else
		dc->warnings++;
}

static int fake_user(const char *name, uid_t *uid)
{
	if (strcmp(name, "root") == 0) {
		*uid = 0;
		return 0;
	}
	return -ENOENT;
}

static int fake_group(const char *name, gid_t *gid)
{
	if (strcmp(name, "thpadmin") == 0) {
		*gid = 990;
		return 0;
	}
	return -ENOENT;
}

#define TERMINATED(a) (memchr((a), '\0', sizeof(a)) != NULL)

static void check_config(const struct thpd_config *cfg, bool finished)
{
	struct thp_mode_req req;
	unsigned int i;

	if (!TERMINATED(cfg->mode) || !TERMINATED(cfg->defrag) || !TERMINATED(cfg->admin_group) ||
	    !TERMINATED(cfg->adaptive.step_down_defrag))
		abort();
	if (cfg->mode[0] && thp_mode_parse(cfg->mode, &req) < 0)
		abort();
	if (cfg->defrag[0] && thp_defrag_valid(cfg->defrag) < 0)
		abort();
	if (cfg->adaptive.step_down_defrag[0] && thp_defrag_valid(cfg->adaptive.step_down_defrag) < 0)
		abort();
	if (cfg->n_rules > THPD_MAX_RULES)
		abort();
	for (i = 0; i < cfg->n_rules; i++) {
		const struct thpd_rule *r = &cfg->rules[i];

		if (!TERMINATED(r->name) || !TERMINATED(r->exe) || !TERMINATED(r->comm) ||
		    !TERMINATED(r->cgroup) || !TERMINATED(r->user) ||
		    !thpd_config_file(cfg, r->origin_file)[0])
			abort();
		if (r->policy < -1 || r->policy > PR_THP_MM_POLICY_NEVER)
			abort();
		if (finished && (r->policy < 0 ||
				 (!r->exe[0] && !r->comm[0] && !r->cgroup[0] && !r->user[0]) ||
				 (r->user[0] && !r->has_uid)))
			abort();	/* finish() must drop incomplete rules */
	}
	if (finished && cfg->adaptive.pressure_threshold_us > cfg->adaptive.pressure_window_us)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct thpd_config cfg;
	struct diag_count dc = { 0, 0 };
	const struct thpd_diag diag = { on_diag, &dc };
	const struct thpd_name_lookup lookup = { fake_user, fake_group };
	const struct thpd_proc_info procs[] = {
		{ 1234, "/usr/bin/java", "java", "/system.slice/app.service", 1000 },
		{ 1, NULL, "systemd", "/init.scope", 0 },
		{ 42, "/opt/db/bin/postgres", "postgres", "/", 0 },
	};
	int r;

	thpd_config_defaults(&cfg);
	/* the bytes as they are in a file, NULs and all */
	r = thpd_config_parse(&cfg, "fuzz.conf", (const char *)data, size, &diag);
	if (r != 0 && r != -EINVAL)
		abort();
	if ((r == -EINVAL) != (dc.fatal > 0))
		abort();
	check_config(&cfg, false);
	if (r == 0) {
		r = thpd_config_finish(&cfg, &lookup, &diag);
		if (r != 0 && r != -EINVAL)
			abort();
		check_config(&cfg, true);
		for (size_t i = 0; i < sizeof(procs) / sizeof(procs[0]); i++) {
			const struct thpd_rule *m = thpd_rules_match(&cfg, &procs[i]);

			if (m && (m < cfg.rules || m >= cfg.rules + cfg.n_rules))
				abort();
		}
	}
	return 0;
}
