// SPDX-License-Identifier: GPL-2.0-or-later
/* What [Rule]s match on, read from /proc/PID. See procinfo.h. */
#include "procinfo.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "thp.h"

static int read_proc_line(pid_t pid, const char *what, char *buf, size_t size)
{
	char path[64];
	int r;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, what);
	r = thp_read_file(path, buf, size);
	if (r < 0)
		return r;
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

int thpd_proc_info_read(pid_t pid, struct thpd_proc_buf *b, struct thpd_proc_info *p)
{
	char link[PATH_MAX], cgtext[4096], status[4096], proc[64];
	const char *uidline;
	ssize_t n;
	int r;

	memset(p, 0, sizeof(*p));
	p->pid = pid;
	snprintf(proc, sizeof(proc), "/proc/%d/exe", (int)pid);
	/* a path that may not fit is unknown, never matched cut short */
	if (thp_path(link, sizeof(link), proc) == 0) {
		n = readlink(link, b->exe, sizeof(b->exe));
		if (n >= 0 && (size_t)n < sizeof(b->exe)) {
			b->exe[n] = '\0';
			p->exe = b->exe;
		}
	}
	if (read_proc_line(pid, "comm", b->comm, sizeof(b->comm)) == 0)
		p->comm = b->comm;
	snprintf(proc, sizeof(proc), "/proc/%d/cgroup", (int)pid);
	/* longer than cgtext: -EFBIG, never a cut path whose prefix matches another rule */
	if (thp_read_file(proc, cgtext, sizeof(cgtext)) >= 0 &&
	    thpd_cgroup_parse(cgtext, b->cgroup, sizeof(b->cgroup)) == 0)
		p->cgroup = b->cgroup;
	snprintf(proc, sizeof(proc), "/proc/%d/status", (int)pid);
	r = thp_read_file(proc, status, sizeof(status));
	if (r < 0)
		return r;	/* gone already */
	uidline = strstr(status, "\nUid:");
	if (!uidline || sscanf(uidline + 5, "%u", &p->uid) != 1)
		return -EBADMSG;
	return 0;
}
