/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What [Rule]s match on, read from /proc/PID (procinfo.c): exec events and collapse use it. */
#ifndef THPD_PROCINFO_H
#define THPD_PROCINFO_H

#include <limits.h>
#include <sys/types.h>

#include "rules.h"

/* the text p points into */
struct thpd_proc_buf {
	char exe[PATH_MAX];
	char comm[32];
	char cgroup[4096];
};

/*
 * The process's exe, comm, cgroup and real uid into p (pointing into b);
 * what cannot be read is NULL, never a cut value that could match another
 * rule. 0, or -errno when the process is gone (no status to read).
 */
int thpd_proc_info_read(pid_t pid, struct thpd_proc_buf *b, struct thpd_proc_info *p);

#endif
