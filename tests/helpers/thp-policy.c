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
 *   thp-policy vfork-race N            N rounds: PR_SET_THP_DISABLE is
 *                                      V (alternating 0/1), we vfork(),
 *                                      the child execs this program, and
 *                                      the moment vfork() returns we set
 *                                      PR_SET_THP_DISABLE to !V; the new
 *                                      program reports what it started
 *                                      with. Prints "rounds=N pre=P
 *                                      flipped=F"; exit 1 if F > 0 (the
 *                                      child's program must start with the
 *                                      value from before the vfork(), as
 *                                      stock kernels give it).
 *   thp-policy exec-thread-race N [disable|advise]
 *                                      N rounds: a child's main thread
 *                                      execs this program with 512 KiB of
 *                                      arguments while a second thread,
 *                                      at a random moment, sets
 *                                      PR_SET_THP_DISABLE 1 (disable) or
 *                                      the advise policy and then says so
 *                                      on a pipe (de_thread() may kill it
 *                                      first). Prints "rounds=N set=S
 *                                      lost=L": L of the S settings whose
 *                                      prctl() returned before the exec
 *                                      killed the thread did not reach the
 *                                      new program; exit 1 if L > 0.
 *   thp-policy fork-race N             a thread cycles the policy through
 *                                      default, advise, never and, after
 *                                      each change k, maps marker page k;
 *                                      meanwhile we fork N times and each
 *                                      child finds its last marker k and
 *                                      its policy, which must be change k
 *                                      or k+1, never k-1 (a write ordered
 *                                      before a mapping the child has must
 *                                      be in the child). Prints "forks=N
 *                                      at_k=A at_k1=B stale=S"; exit 1 if
 *                                      S > 0.
 *
 * Exit: 0 ok, 1 the prctl failed (message on stdout: "error=EINVAL"),
 * 2 usage, 3 exec failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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
		   "       thp-policy exec-race N\n"
		   "       thp-policy vfork-race N\n"
		   "       thp-policy exec-thread-race N [disable|advise]\n"
		   "       thp-policy fork-race N\n");
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

/* the exec'd side of the vfork and thread races: exit with what we have */
static int report_child(const char *what)
{
	int rc = strcmp(what, "disable") == 0 ?
			 prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) :
			 prctl(PR_GET_THP_MM_POLICY, 0, 0, 0, 0);

	return rc < 0 ? 101 : rc;
}

/*
 * vfork() returns in the parent once the child's exec has released the old
 * mm (exec_mm_release()). Whatever the parent does to the shared mm from
 * then on must not reach the program the child is starting.
 */
static __attribute__((noinline)) pid_t vfork_flip(char **args, int v)
{
	pid_t pid = vfork();

	if (pid == 0) {
		execv("/proc/self/exe", args);
		_exit(102);
	}
	/* at once: the child's exec may not have installed its new mm yet */
	prctl(PR_SET_THP_DISABLE, !v, 0, 0, 0);
	return pid;
}

static int vfork_race(long rounds)
{
	char *args[] = { "thp-policy", "report-child", "disable", NULL };
	long i, pre = 0, flipped = 0;
	int st, v;
	pid_t pid;

	for (i = 0; i < rounds; i++) {
		v = i & 1;
		if (prctl(PR_SET_THP_DISABLE, v, 0, 0, 0) < 0) {
			printf("error=%s\n", errname(errno));
			return 3;
		}
		pid = vfork_flip(args, v);
		if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) ||
		    WEXITSTATUS(st) > 1) {
			fprintf(stderr, "thp-policy: vfork-race child failed (status %#x)\n", st);
			return 3;
		}
		if (WEXITSTATUS(st) == v)
			pre++;
		else
			flipped++;
	}
	prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0);
	printf("rounds=%ld pre=%ld flipped=%ld\n", rounds, pre, flipped);
	return flipped ? 1 : 0;
}

struct setter {
	int fd;			/* the pipe to say "set" on */
	uint64_t delay_us;
	bool disable;
};

static void *setter_thread(void *arg)
{
	struct setter *s = arg;
	uint64_t t0 = now_us();
	int rc;

	while (now_us() - t0 < s->delay_us)
		;
	rc = s->disable ? prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) :
			  prctl(PR_SET_THP_MM_POLICY, PR_THP_MM_POLICY_ADVISE, 0, 0, 0);
	if (rc == 0 && write(s->fd, "s", 1) != 1)
		_exit(103);
	return NULL;
}

/* one round; 1 set and kept, 0 not set, -1 set and lost; *took: its time */
static int thread_round(char **args, bool disable, uint64_t delay_us, uint64_t *took_us)
{
	struct setter s = { .delay_us = delay_us, .disable = disable };
	uint64_t t0 = now_us();
	int said[2], st, want = disable ? 1 : PR_THP_MM_POLICY_ADVISE;
	pthread_t t;
	char c;
	pid_t pid;

	if (pipe(said) < 0) {
		perror("thp-policy: pipe");
		exit(3);
	}
	pid = fork();
	if (pid < 0) {
		perror("thp-policy: fork");
		exit(3);
	}
	if (pid == 0) {
		close(said[0]);
		s.fd = said[1];
		if (pthread_create(&t, NULL, setter_thread, &s))
			_exit(104);
		execv("/proc/self/exe", args);
		_exit(102);
	}
	close(said[1]);
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) > 2) {
		fprintf(stderr, "thp-policy: exec-thread-race child failed (status %#x)\n", st);
		exit(3);
	}
	*took_us = now_us() - t0;
	/* the new program holds the write end until it exits: EOF by now */
	if (read(said[0], &c, 1) != 1) {
		close(said[0]);
		return 0;
	}
	close(said[0]);
	return WEXITSTATUS(st) == want ? 1 : -1;
}

/*
 * The prctl() of another thread of a process that execs: if it returned
 * before de_thread() killed the thread, the new program has it.
 */
static int exec_thread_race(long rounds, const char *what)
{
	static char pad[RACE_ARG_LEN];
	char *args[RACE_ARGS + 4];
	uint64_t took = 0, span = 1000;
	long i, set = 0, lost = 0;
	bool disable = strcmp(what, "disable") == 0;
	int r;

	if (!disable && prctl(PR_GET_THP_MM_POLICY, 0, 0, 0, 0) < 0) {
		printf("error=%s\n", errname(errno));
		return 1;
	}
	memset(pad, 'x', sizeof(pad) - 1);
	args[0] = "thp-policy";
	args[1] = "report-child";
	args[2] = (char *)what;
	for (i = 0; i < RACE_ARGS; i++)
		args[3 + i] = pad;
	args[3 + RACE_ARGS] = NULL;
	srand((unsigned int)now_us());
	for (i = 0; i < rounds; i++) {
		/*
		 * Anywhere before the thread dies: the span shrinks when the
		 * thread was killed first and grows when it got its prctl()
		 * in, so about half of the rounds set something.
		 */
		r = thread_round(args, disable, (uint64_t)rand() % span, &took);
		span = r == 0 ? span * 3 / 4 + 1 : span * 5 / 4 + 1;
		if (span > took)
			span = took + 1;
		set += r != 0;
		lost += r < 0;
	}
	printf("rounds=%ld set=%ld lost=%ld\n", rounds, set, lost);
	return lost ? 1 : 0;
}

#define FORK_SLOTS 65536L

struct marker_writer {
	char *base;		/* FORK_SLOTS pages, PROT_NONE until marked */
	atomic_long last;	/* the last marker made */
	atomic_bool stop;
};

/* the policy that change k sets */
static int policy_k(long k)
{
	return (int)(k % 3);
}

/* change k, then marker k: slot k turns PROT_READ (both under mmap_lock) */
static void *marker_thread(void *arg)
{
	struct marker_writer *w = arg;
	long k;

	for (k = 1; k < FORK_SLOTS && !atomic_load(&w->stop); k++) {
		if (prctl(PR_SET_THP_MM_POLICY, policy_k(k), 0, 0, 0) < 0)
			_exit(105);
		if (mprotect(w->base + k * TEST_PAGE, TEST_PAGE, PROT_READ))
			_exit(106);
		atomic_store(&w->last, k);
	}
	return NULL;
}

/* in the child: is slot k readable? A write(2) from it faults if not */
static bool marked(int probe[2], const char *base, long k)
{
	char c;

	if (write(probe[1], base + k * TEST_PAGE, 1) != 1)
		return false;
	if (read(probe[0], &c, 1) != 1)
		_exit(4);
	return true;
}

/* in the child: the last marker (markers are made in order: a prefix) */
static long last_marker(const char *base)
{
	long lo = 0, hi = FORK_SLOTS - 1, mid;
	int probe[2];

	if (pipe(probe))
		_exit(4);
	/* slot lo is marked (or lo is 0), slot hi + 1 is not */
	while (lo < hi) {
		mid = (lo + hi + 1) / 2;
		if (marked(probe, base, mid))
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

/*
 * dup_mmap() copies the parent's mappings under its mmap_lock; the policy
 * must be the one of that same moment: a policy change made before a
 * mapping change that the child has is in the child.
 */
static int fork_race(long forks)
{
	struct marker_writer w = { 0 };
	long i, at_k = 0, at_k1 = 0, stale = 0, k;
	pthread_t t;
	int st, p;
	pid_t pid;

	if (prctl(PR_GET_THP_MM_POLICY, 0, 0, 0, 0) < 0) {
		printf("error=%s\n", errname(errno));
		return 1;
	}
	w.base = mmap(NULL, FORK_SLOTS * TEST_PAGE, PROT_NONE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (w.base == MAP_FAILED) {
		perror("thp-policy: mmap");
		return 3;
	}
	if (pthread_create(&t, NULL, marker_thread, &w)) {
		fprintf(stderr, "thp-policy: pthread_create failed\n");
		return 3;
	}
	for (i = 0; i < forks && atomic_load(&w.last) < FORK_SLOTS - 1; i++) {
		pid = fork();
		if (pid < 0) {
			perror("thp-policy: fork");
			return 3;
		}
		if (pid == 0) {
			k = last_marker(w.base);
			p = prctl(PR_GET_THP_MM_POLICY, 0, 0, 0, 0);
			if (k == 0)
				_exit(3);	/* before the first change */
			if (p == policy_k(k))
				_exit(0);
			_exit(p == policy_k(k + 1) ? 1 : 2);
		}
		if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) > 3) {
			fprintf(stderr, "thp-policy: fork-race child failed (status %#x)\n", st);
			return 3;
		}
		at_k += WEXITSTATUS(st) == 0;
		at_k1 += WEXITSTATUS(st) == 1;
		stale += WEXITSTATUS(st) == 2;
	}
	atomic_store(&w.stop, true);
	pthread_join(t, NULL);
	prctl(PR_SET_THP_MM_POLICY, PR_THP_MM_POLICY_DEFAULT, 0, 0, 0);
	printf("forks=%ld at_k=%ld at_k1=%ld stale=%ld markers=%ld\n", i, at_k, at_k1,
	       stale, atomic_load(&w.last));
	return stale ? 1 : 0;
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
	if (strcmp(argv[1], "report-child") == 0 && argc >= 3)
		return report_child(argv[2]);
	if ((strcmp(argv[1], "vfork-race") == 0 || strcmp(argv[1], "fork-race") == 0 ||
	     strcmp(argv[1], "exec-thread-race") == 0) && (argc == 3 || argc == 4)) {
		v = strtol(argv[2], &end, 0);
		if (*end || v < 1)
			goto bad;
		if (argv[1][0] == 'v' && argc == 3)
			return vfork_race(v);
		if (argv[1][0] == 'f' && argc == 3)
			return fork_race(v);
		if (argv[1][0] == 'e' && (argc == 3 || strcmp(argv[3], "disable") == 0 ||
					  strcmp(argv[3], "advise") == 0))
			return exec_thread_race(v, argc == 4 ? argv[3] : "advise");
		goto bad;
	}
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
