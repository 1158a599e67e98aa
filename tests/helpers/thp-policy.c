// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * thp-policy: the per-process THP policy prctl, for the guest suites.
 *
 *   thp-policy get                     print this process's policy word
 *                                      (PR_GET_THP_POLICY) and
 *                                      thp_disable=0|1 (PR_GET_THP_DISABLE)
 *   thp-policy set WORD|N [-- CMD...]  PR_SET_THP_POLICY, then exec CMD;
 *                                      without CMD print "ok" or the error
 *   thp-policy disable 0|1 [-- CMD...] PR_SET_THP_DISABLE, then exec CMD
 *
 * Exit: 0 ok, 1 the prctl failed (message on stdout: "error=EINVAL"),
 * 2 usage, 3 exec failed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "thp.h"

static const char *const names[] = { "default", "advise", "never" };

static const char *errname(int e)
{
	switch (e) {
	case EINVAL:
		return "EINVAL";
	case EPERM:
		return "EPERM";
	case EINTR:
		return "EINTR";
	default:
		return strerror(e);
	}
}

static int run_or_report(int rc, int err, char **cmd)
{
	if (rc < 0) {
		printf("error=%s\n", errname(err));
		return 1;
	}
	if (!cmd || !cmd[0]) {
		printf("ok\n");
		return 0;
	}
	fflush(stdout);
	execvp(cmd[0], cmd);
	fprintf(stderr, "thp-policy: exec %s: %s\n", cmd[0], strerror(errno));
	return 3;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: thp-policy get\n"
		   "       thp-policy set default|advise|never|N [-- CMD...]\n"
		   "       thp-policy disable 0|1 [-- CMD...]\n");
}

int main(int argc, char **argv)
{
	char **cmd = NULL, *end;
	long v;
	int rc;

	if (argc < 2)
		goto bad;
	if (argc > 3) {
		if (strcmp(argv[3], "--") != 0)
			goto bad;
		cmd = argv + 4;
	}
	if (strcmp(argv[1], "get") == 0 && argc == 2) {
		rc = prctl(PR_GET_THP_POLICY, 0, 0, 0, 0);
		if (rc < 0) {
			printf("error=%s\n", errname(errno));
			return 1;
		}
		printf("%s\n", rc < 3 ? names[rc] : "unknown");
		printf("thp_disable=%d\n", prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0));
		return 0;
	}
	if (argc < 3)
		goto bad;
	if (strcmp(argv[1], "set") == 0) {
		for (v = 0; v < 3; v++)
			if (strcmp(argv[2], names[v]) == 0)
				break;
		if (v == 3) {
			v = strtol(argv[2], &end, 0);
			if (*end)
				goto bad;
		}
		rc = prctl(PR_SET_THP_POLICY, (unsigned long)v, 0, 0, 0);
		return run_or_report(rc, errno, cmd);
	}
	if (strcmp(argv[1], "disable") == 0) {
		v = strtol(argv[2], &end, 0);
		if (*end)
			goto bad;
		rc = prctl(PR_SET_THP_DISABLE, (unsigned long)v, 0, 0, 0);
		return run_or_report(rc, errno, cmd);
	}
bad:
	usage(stderr);
	return 2;
}
