/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Per-application rules: which [Rule] a process matches. Pure. */
#ifndef THPD_RULES_H
#define THPD_RULES_H

#include <sys/types.h>

#include "config.h"

struct thpd_proc_info {
	pid_t pid;
	const char *exe;	/* /proc/PID/exe target, NULL if unreadable */
	const char *comm;	/* /proc/PID/comm without the newline */
	const char *cgroup;	/* cgroup v2 path from /proc/PID/cgroup ("0::PATH") */
	uid_t uid;		/* real uid */
};

/* the first rule (in configuration order) whose every given key matches */
const struct thpd_rule *thpd_rules_match(const struct thpd_config *cfg,
					 const struct thpd_proc_info *p);
/* does a cgroup path match Cgroup=pattern: the cgroup itself or a descendant */
int thpd_cgroup_match(const char *pattern, const char *path);
/* the cgroup v2 path out of /proc/PID/cgroup text, into out */
int thpd_cgroup_parse(const char *text, char *out, size_t size);

#endif
