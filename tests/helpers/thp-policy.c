// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * thp-policy: the per-process THP policy prctl, for the guest suites.
 *
 *   thp-policy get                     print this process's policy word
 *                                      (PR_GET_THP_MM_POLICY) and
 *                                      thp_disable=0|1 (PR_GET_THP_DISABLE)
 *   thp-policy set WORD|N [-- CMD...]  PR_SET_THP_MM_POLICY, then exec CMD;
 *                                      without CMD print "ok" or the error
 *   thp-policy disable 0|1 [-- CMD...] PR_SET_THP_DISABLE, then exec CMD
 *   thp-policy exec-race N             N rounds: a child execs this program
 *                                      with 512 KiB of arguments (a long
 *                                      execve) while we write "advise" to
 *                                      its /proc/<pid>/thp_policy at a
 *                                      random moment; the new program then
 *                                      reports its policy. Prints
 *                                      "rounds=N written=W lost=L"; exit 1
 *                                      if a successful write was lost.
 *
 * Exit: 0 ok, 1 the prctl failed (message on stdout: "error=EINVAL"),
 * 2 usage, 3 exec failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test-util.h"
#include "thp.h"

static const char *const names[] = { "default", "advise", "never" };

/* "EINVAL" for EINVAL: what the tests match */
static const char *errname(int e)
{
	const char *n = strerrorname_np(e);

	return n ? n : strerror(e);
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
		   "       thp-policy disable 0|1 [-- CMD...]\n"
		   "       thp-policy exec-race N\n");
}

#define RACE_ARGS 256
#define RACE_ARG_LEN 2048

/* the exec'd side: wait until the writer is done, exit with our policy */
static int race_child(const char *fd_arg)
{
	int fd = atoi(fd_arg), rc;
	char c;

	if (read(fd, &c, 1) != 1)
		return 100;
	rc = prctl(PR_GET_THP_MM_POLICY, 0, 0, 0, 0);
	return rc < 0 ? 101 : rc;
}

/* one round; returns 1 written and kept, 0 not written, -1 written and lost */
static int race_round(char **args, uint64_t delay_us, uint64_t *took_us)
{
	uint64_t t0 = now_us();
	char path[64], fd_arg[16];
	int go[2], st, written;
	pid_t pid;

	if (pipe(go) < 0) {
		perror("thp-policy: pipe");
		exit(3);
	}
	snprintf(fd_arg, sizeof(fd_arg), "%d", go[0]);
	args[2] = fd_arg;
	pid = fork();
	if (pid < 0) {
		perror("thp-policy: fork");
		exit(3);
	}
	if (pid == 0) {
		close(go[1]);
		execv("/proc/self/exe", args);
		_exit(102);
	}
	close(go[0]);
	while (now_us() - t0 < delay_us)
		;
	snprintf(path, sizeof(path), "/proc/%d/thp_policy", (int)pid);
	written = thp_write_file(path, "advise\n") == 0;
	if (write(go[1], "g", 1) != 1)
		perror("thp-policy: write to the child");
	close(go[1]);
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) > 2) {
		fprintf(stderr, "thp-policy: exec-race child failed (status %#x)\n", st);
		exit(3);
	}
	*took_us = now_us() - t0;
	if (!written)
		return 0;
	return WEXITSTATUS(st) == PR_THP_MM_POLICY_ADVISE ? 1 : -1;
}

static int exec_race(long rounds)
{
	static char pad[RACE_ARG_LEN];
	char *args[RACE_ARGS + 4];
	uint64_t took = 0, span = 1000;
	long i, written = 0, lost = 0;
	int r;

	if (prctl(PR_SET_THP_MM_POLICY, PR_THP_MM_POLICY_DEFAULT, 0, 0, 0) < 0) {
		printf("error=%s\n", errname(errno));
		return 1;
	}
	memset(pad, 'x', sizeof(pad) - 1);
	args[0] = "thp-policy";
	args[1] = "exec-race-child";
	for (i = 0; i < RACE_ARGS; i++)
		args[3 + i] = pad;
	args[3 + RACE_ARGS] = NULL;
	srand((unsigned int)now_us());
	for (i = 0; i < rounds; i++) {
		/* spread the write over a whole launch, as long as the last took */
		r = race_round(args, (uint64_t)rand() % span, &took);
		span = took > 0 ? took : 1;
		written += r != 0;
		lost += r < 0;
	}
	printf("rounds=%ld written=%ld lost=%ld\n", rounds, written, lost);
	return lost ? 1 : 0;
}

int main(int argc, char **argv)
{
	char **cmd = NULL, *end;
	long v;
	int rc;

	if (argc < 2)
		goto bad;
	if (strcmp(argv[1], "exec-race-child") == 0 && argc >= 3)
		return race_child(argv[2]);
	if (strcmp(argv[1], "exec-race") == 0 && argc == 3) {
		v = strtol(argv[2], &end, 0);
		if (*end || v < 1)
			goto bad;
		return exec_race(v);
	}
	if (argc > 3) {
		if (strcmp(argv[3], "--") != 0)
			goto bad;
		cmd = argv + 4;
	}
	if (strcmp(argv[1], "get") == 0 && argc == 2) {
		rc = prctl(PR_GET_THP_MM_POLICY, 0, 0, 0, 0);
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
		rc = prctl(PR_SET_THP_MM_POLICY, (unsigned long)v, 0, 0, 0);
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
