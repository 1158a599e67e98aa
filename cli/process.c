// SPDX-License-Identifier: GPL-2.0-or-later
/* The processes ps and policy name: PID operands and process names. */
#include "thpctl.h"
#include "thp.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool parse_pid(const char *s, pid_t *pid)
{
	char *end;
	long v;

	if (!isdigit((unsigned char)*s))
		return false;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v <= 0 || v > INT_MAX)
		return false;
	*pid = (pid_t)v;
	return true;
}

int read_comm(pid_t pid, char *comm, size_t size)
{
	char path[64];
	int r;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	r = thp_read_file(path, comm, size);
	if (r < 0)
		return r;
	/*
	 * The kernel adds one newline; any other byte is the name's own, a
	 * newline too (output escapes it), so only that one goes.
	 */
	if (r > 0 && comm[r - 1] == '\n')
		comm[r - 1] = '\0';
	return 0;
}
