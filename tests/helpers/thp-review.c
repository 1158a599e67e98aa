// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * thp-review: the scenarios of the v2 review of the kernel series (issue 21)
 * for tests/bats/24-review.bats. Each subcommand prints key=value lines.
 *
 *   write0 PATH          write(2) of zero bytes to PATH: rc=N [errno=NAME]
 *   read-loop PATH N     open PATH, print "ready", wait for a line on
 *                        stdin, then N reads from offset 0 with no other
 *                        system call and no page fault in between (the
 *                        buffer is touched first), print "done" with a bare
 *                        write(2), wait for stdin to close, and only then
 *                        print reads=N bytes=B and exit: a tracer watching
 *                        this pid between the line and "done" sees the
 *                        reads alone
 *   mmap-lat SEC R PATH  one thread maps, touches and unmaps 64 KiB in a
 *                        loop for SEC seconds while R threads read PATH
 *                        (e.g. /proc/self/thp_stat) in a loop; the process
 *                        first maps 64 MiB in 1024 VMAs of 4 KiB pages, so
 *                        that a page-table walk has work to do:
 *                        ops=N worst_us=N mean_us=N reads=N
 *   zero-fault N [--hold]
 *                        read-fault N hugepage-aligned 2 MiB ranges of a
 *                        MADV_HUGEPAGE mapping (the huge zero page), then
 *                        print every /proc/self/thp_stat line as self.NAME=V,
 *                        vmstat.thp_zero_page_alloc=DELTA and
 *                        anon_huge_kib=N; with --hold print "ready" and
 *                        keep the mapping until stdin closes
 *   exec-reread          a child opens nothing; we open its
 *                        /proc/PID/thp_policy and read it (before=), the
 *                        child execs a program that sets "advise" with the
 *                        prctl, and we read the same descriptor again from
 *                        offset 0 (held=) and a fresh one (fresh=)
 *   main-exit            the main thread exits, a second thread waits until
 *                        the kernel shows the leader as a zombie, prints
 *                        "ready", waits for stdin to close and prints its
 *                        policy (policy=WORD)
 *
 * Exit: 0 ok, 1 the scenario saw something wrong, 2 usage, 3 system error.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test-util.h"
#include "thp.h"

static const char *const policy_names[] = { "default", "advise", "never" };

static void die(const char *what)
{
	fprintf(stderr, "thp-review: %s: %s\n", what, strerror(errno));
	exit(3);
}

/* "EINVAL" for EINVAL: what the tests match */
static const char *errname(int e)
{
	const char *n = strerrorname_np(e);

	return n ? n : strerror(e);
}

/* block until stdin reaches EOF */
static void wait_stdin_eof(void)
{
	char buf[64];

	while (read(STDIN_FILENO, buf, sizeof(buf)) > 0)
		;
}

static int write0(const char *path)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t r;

	if (fd < 0)
		die(path);
	r = write(fd, "", 0);
	if (r < 0)
		printf("rc=-1\nerrno=%s\n", errname(errno));
	else
		printf("rc=%zd\n", r);
	close(fd);
	return 0;
}

static int read_loop(const char *path, long n)
{
	static char buf[4096];
	char go[16];
	long total = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		die(path);
	/* fault the buffer in now, so the loop itself takes no page fault */
	memset(buf, 1, sizeof(buf));
	if (pread(fd, buf, sizeof(buf), 0) < 0)
		die(path);
	printf("ready\n");
	fflush(stdout);
	if (read(STDIN_FILENO, go, sizeof(go)) <= 0)
		return 3;
	for (long i = 0; i < n; i++) {
		ssize_t r = pread(fd, buf, sizeof(buf), 0);

		if (r < 0)
			die(path);
		total += r;
	}
	if (write(STDOUT_FILENO, "done\n", 5) != 5)
		return 3;
	wait_stdin_eof();
	printf("reads=%ld\nbytes=%ld\n", n, total);
	return 0;
}

static atomic_bool lat_stop;
static atomic_long lat_reads;

static void *lat_reader(void *arg)
{
	char buf[4096];
	int fd = open(arg, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		die(arg);
	while (!atomic_load(&lat_stop)) {
		if (pread(fd, buf, sizeof(buf), 0) < 0)
			die(arg);
		atomic_fetch_add(&lat_reads, 1);
	}
	close(fd);
	return NULL;
}

static int mmap_lat(long seconds, long readers, const char *path)
{
	const size_t vma = 16 * TEST_PAGE, nvma = 1024;
	uint64_t worst = 0, sum = 0, end;
	pthread_t tid[16];
	long ops = 0;
	char *fill;

	if (readers < 0 || readers > 16)
		return 2;
	/* 64 MiB of 4 KiB pages in 1024 VMAs (alternate protections) */
	fill = mmap(NULL, vma * nvma, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (fill == MAP_FAILED)
		die("mmap");
	madvise(fill, vma * nvma, MADV_NOHUGEPAGE);
	memset(fill, 1, vma * nvma);
	for (size_t i = 0; i < nvma; i += 2)
		if (mprotect(fill + i * vma, vma, PROT_READ) < 0)
			die("mprotect");
	for (long i = 0; i < readers; i++)
		if (pthread_create(&tid[i], NULL, lat_reader, (void *)path))
			die("pthread_create");
	end = now_ms() + (uint64_t)seconds * 1000;
	while (now_ms() < end) {
		uint64_t t0 = now_us(), dt;
		char *p = mmap(NULL, vma, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			die("mmap");
		p[0] = 1;
		if (munmap(p, vma) < 0)
			die("munmap");
		dt = now_us() - t0;
		sum += dt;
		if (dt > worst)
			worst = dt;
		ops++;
	}
	atomic_store(&lat_stop, true);
	for (long i = 0; i < readers; i++)
		pthread_join(tid[i], NULL);
	printf("ops=%ld\nworst_us=%" PRIu64 "\nmean_us=%" PRIu64 "\nreads=%ld\n", ops, worst,
	       ops ? sum / (uint64_t)ops : 0, atomic_load(&lat_reads));
	return 0;
}

static int zero_fault(long n, int hold)
{
	long long z0 = stat_value("/proc/vmstat", "thp_zero_page_alloc");
	size_t len = (size_t)n * TEST_HPAGE;
	struct stat_set s;
	volatile char sink;
	char *raw, *p;

	raw = mmap(NULL, len + TEST_HPAGE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED)
		die("mmap");
	p = (char *)(((uintptr_t)raw + TEST_HPAGE - 1) & ~(TEST_HPAGE - 1));
	if (madvise(p, len, MADV_HUGEPAGE) < 0)
		die("madvise");
	for (long i = 0; i < n; i++)
		sink = p[(size_t)i * TEST_HPAGE];
	(void)sink;
	if (stats_read("/proc/self/thp_stat", "", &s) < 0)
		s.n = 0;
	for (int i = 0; i < s.n; i++)
		printf("self.%s=%" PRIu64 "\n", s.name[i], s.val[i]);
	printf("vmstat.thp_zero_page_alloc=%lld\n",
	       stat_value("/proc/vmstat", "thp_zero_page_alloc") - z0);
	printf("anon_huge_kib=%ld\n", anon_huge_kib(p));
	if (hold) {
		printf("ready\n");
		fflush(stdout);
		wait_stdin_eof();
	}
	return 0;
}

/* the exec'd side of exec-reread: set advise, tell the parent, wait */
static int exec_reread_child(const char *fd_arg)
{
	int fd = atoi(fd_arg);

	if (prctl(PR_SET_THP_MM_POLICY, PR_THP_MM_POLICY_ADVISE, 0, 0, 0) < 0)
		return 10;
	if (write(fd, "x", 1) != 1)
		return 11;
	pause();
	return 0;
}

static void read_word(int fd, char *word, size_t size)
{
	ssize_t r = pread(fd, word, size - 1, 0);

	if (r < 0) {
		snprintf(word, size, "error-%s", errname(errno));
		return;
	}
	word[r] = '\0';
	word[strcspn(word, "\n")] = '\0';
	if (!word[0])
		snprintf(word, size, "(empty)");
}

static int exec_reread(void)
{
	char path[64], fd_arg[16], before[32], held[32], fresh[32], c;
	int go[2], back[2], fd, fd2, st;
	pid_t pid;

	if (prctl(PR_SET_THP_MM_POLICY, PR_THP_MM_POLICY_DEFAULT, 0, 0, 0) < 0)
		die("prctl(PR_SET_THP_MM_POLICY)");
	if (pipe(go) < 0 || pipe(back) < 0)
		die("pipe");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		close(go[1]);
		close(back[0]);
		if (read(go[0], &c, 1) != 1)
			_exit(12);
		snprintf(fd_arg, sizeof(fd_arg), "%d", back[1]);
		execl("/proc/self/exe", "thp-review", "exec-reread-child", fd_arg, (char *)NULL);
		_exit(13);
	}
	close(go[0]);
	close(back[1]);
	snprintf(path, sizeof(path), "/proc/%d/thp_policy", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die(path);
	read_word(fd, before, sizeof(before));
	if (write(go[1], "g", 1) != 1)
		die("write");
	if (read(back[0], &c, 1) != 1) {
		fprintf(stderr, "thp-review: the exec'd child did not report\n");
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		return 3;
	}
	read_word(fd, held, sizeof(held));
	fd2 = open(path, O_RDONLY | O_CLOEXEC);
	if (fd2 < 0)
		die(path);
	read_word(fd2, fresh, sizeof(fresh));
	printf("before=%s\nheld=%s\nfresh=%s\n", before, held, fresh);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return strcmp(held, fresh) == 0 ? 0 : 1;
}

/* the leader's state letter in /proc/self/task/TGID/stat, or '?' */
static char leader_state(void)
{
	char path[64], buf[512], *p;
	int fd, r;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)getpid());
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return '?';
	r = (int)read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (r <= 0)
		return '?';
	buf[r] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] && p[2] ? p[2] : '?';
}

static void *main_exit_thread(void *arg)
{
	int rc, i;

	(void)arg;
	for (i = 0; i < 30000 && leader_state() != 'Z'; i++)
		sleep_ms(1);
	if (leader_state() != 'Z') {
		fprintf(stderr, "thp-review: the main thread did not become a zombie\n");
		exit(3);
	}
	printf("ready\n");
	fflush(stdout);
	wait_stdin_eof();
	rc = prctl(PR_GET_THP_MM_POLICY, 0, 0, 0, 0);
	printf("policy=%s\n", rc >= 0 && rc < 3 ? policy_names[rc] : "error");
	fflush(stdout);
	exit(0);
}

static int main_exit(void)
{
	pthread_t t;

	if (pthread_create(&t, NULL, main_exit_thread, NULL))
		die("pthread_create");
	pthread_exit(NULL);
}

static int usage(void)
{
	fprintf(stderr, "usage: thp-review write0 PATH | read-loop PATH N | mmap-lat SEC R PATH |\n"
			"       zero-fault N [--hold] | exec-reread | main-exit\n");
	return 2;
}

static long num(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);

	return *s && !*end && v >= 0 ? v : -1;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && strcmp(argv[1], "write0") == 0)
		return write0(argv[2]);
	if (argc == 4 && strcmp(argv[1], "read-loop") == 0 && num(argv[3]) > 0)
		return read_loop(argv[2], num(argv[3]));
	if (argc == 5 && strcmp(argv[1], "mmap-lat") == 0 && num(argv[2]) > 0 && num(argv[3]) >= 0)
		return mmap_lat(num(argv[2]), num(argv[3]), argv[4]);
	if ((argc == 3 || (argc == 4 && strcmp(argv[3], "--hold") == 0)) &&
	    strcmp(argv[1], "zero-fault") == 0 && num(argv[2]) > 0)
		return zero_fault(num(argv[2]), argc == 4);
	if (argc == 2 && strcmp(argv[1], "exec-reread") == 0)
		return exec_reread();
	if (argc == 3 && strcmp(argv[1], "exec-reread-child") == 0)
		return exec_reread_child(argv[2]);
	if (argc == 2 && strcmp(argv[1], "main-exit") == 0)
		return main_exit();
	return usage();
}
