// SPDX-License-Identifier: GPL-2.0-or-later
#include "rules.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdbool.h>
#include <string.h>

int thpd_cgroup_match(const char *pattern, const char *path)
{
	char buf[4096];
	size_t len = strlen(path);
	char *slash;

	if (len >= sizeof(buf))
		return 0;
	memcpy(buf, path, len + 1);
	/* the path itself, then each ancestor down to "/" */
	for (;;) {
		if (fnmatch(pattern, buf, FNM_PATHNAME) == 0)
			return 1;
		slash = strrchr(buf, '/');
		if (!slash || slash == buf)
			break;
		*slash = '\0';
	}
	return strcmp(pattern, "/") == 0;
}

int thpd_cgroup_parse(const char *text, char *out, size_t size)
{
	const char *line = text;

	while (line && *line) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);

		if (len >= 3 && strncmp(line, "0::", 3) == 0) {
			if (len - 3 >= size)
				return -ENAMETOOLONG;
			memcpy(out, line + 3, len - 3);
			out[len - 3] = '\0';
			return 0;
		}
		line = end ? end + 1 : NULL;
	}
	return -ENOENT;
}

static bool rule_matches(const struct thpd_rule *r, const struct thpd_proc_info *p)
{
	if (r->exe[0] && (!p->exe || fnmatch(r->exe, p->exe, 0) != 0))
		return false;
	if (r->comm[0] && (!p->comm || fnmatch(r->comm, p->comm, 0) != 0))
		return false;
	if (r->cgroup[0] && (!p->cgroup || !thpd_cgroup_match(r->cgroup, p->cgroup)))
		return false;
	if (r->has_uid && p->uid != r->uid)
		return false;
	return true;
}

const struct thpd_rule *thpd_rules_match(const struct thpd_config *cfg,
					 const struct thpd_proc_info *p)
{
	for (unsigned int i = 0; i < cfg->n_rules; i++)
		if (rule_matches(&cfg->rules[i], p))
			return &cfg->rules[i];
	return NULL;
}
