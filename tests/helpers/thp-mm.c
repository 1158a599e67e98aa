// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * thp-mm: address-space scenarios around transparent hugepages for the guest
 * suites (21-thp-stat, 22-rfc-behaviours). Each subcommand maps a 2 MiB-aligned
 * anonymous region (MADV_HUGEPAGE unless --plain), fills it with a data pattern
 * and prints key=value lines; thp_stat values come from /proc/self/thp_stat
 * (absolute, "-1" when the kernel lacks the file), vmstat.* are deltas.
 *
 *   stat                 print this process's thp_stat as self.NAME=V
 *   fork                 fault, fork; the child reports its own thp_stat
 *                        before touching anything (child.NAME=V)
 *   exec                 fault, then execve itself into "stat"
 *   threads              a second thread faults; both views are printed
 *   cow                  parent and child write different patterns into the
 *                        same THP region while both are alive; each checks
 *                        its own (parent.pattern, child.pattern)
 *   split OP             OP = munmap | mprotect | dontneed on one 4 KiB page
 *                        in the first hugepage; the rest must be intact
 *   collapse HOW         populate with 4 KiB pages (MADV_NOHUGEPAGE), then
 *                        HOW = madv-collapse | khugepaged (MADV_HUGEPAGE
 *                        and wait up to --timeout seconds)
 *   fill                 fault and fill, read it all back (for swap tests:
 *                        run inside a memory-limited cgroup)
 *
 * Options: --size MIB (default 4), --plain (no MADV_HUGEPAGE), --timeout SEC.
 * Exit: 0 ok, 1 data pattern damaged, 2 usage, 3 system error.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test-util.h"
#include "thp.h"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

#define HPAGE TEST_HPAGE
#define SMALL TEST_PAGE

static size_t size = 4 * HPAGE;
static bool plain;
static int timeout_s = 60;

static const char *const thp_stat_names[] = {
	"thp_fault_alloc", "thp_fault_fallback", "thp_fault_fallback_charge",
	"thp_collapse_alloc", "thp_collapse_alloc_failed", "thp_split_pmd",
	"thp_zero_page_fault",
};
#define NSTAT (sizeof(thp_stat_names) / sizeof(thp_stat_names[0]))

static const char *const vm_names[] = {
	"thp_fault_alloc", "thp_fault_fallback", "thp_split_pmd", "thp_split_page",
	"thp_collapse_alloc", "thp_swpout", "thp_swpout_fallback", "pswpout", "pswpin",
	"compact_stall",
};
#define NVM (sizeof(vm_names) / sizeof(vm_names[0]))

static void die(const char *what)
{
	fprintf(stderr, "thp-mm: %s: %s\n", what, strerror(errno));
	exit(3);
}

static void print_thp_stat(const char *prefix, const char *path)
{
	for (size_t i = 0; i < NSTAT; i++)
		printf("%s.%s=%lld\n", prefix, thp_stat_names[i], stat_value(path, thp_stat_names[i]));
	/* the gauge is AnonHugePages (smaps_rollup), of the process reading */
	printf("%s.anon_huge_kib=%ld\n", prefix, anon_huge_kib_total());
}

static void vm_snap(long long *v)
{
	for (size_t i = 0; i < NVM; i++)
		v[i] = stat_value("/proc/vmstat", vm_names[i]);
}

static void vm_print_delta(const long long *v0)
{
	long long v1[NVM];

	vm_snap(v1);
	for (size_t i = 0; i < NVM; i++)
		printf("vmstat.%s=%lld\n", vm_names[i], v1[i] - v0[i]);
}

/* check [from, to) of a region filled with pattern_fill(p, ..., seed) */
static bool check_range(const char *p, size_t from, size_t to, uint64_t seed)
{
	return pattern_check(p, from, to, seed, "thp-mm");
}

static char *map_region(int advice)
{
	void *p;
	int r = thp_mmap_aligned(size, HPAGE, 0, &p);

	if (r < 0) {
		errno = -r;
		die("mmap");
	}
	if (advice >= 0 && madvise(p, size, advice))
		die("madvise");
	return p;
}

static char *map_default(void)
{
	return map_region(plain ? -1 : MADV_HUGEPAGE);
}

static int cmd_stat(void)
{
	print_thp_stat("self", "/proc/self/thp_stat");
	return 0;
}

static int cmd_fork(void)
{
	char *p = map_default();
	pid_t pid;
	int st;

	pattern_fill(p, size, 1);
	print_thp_stat("parent", "/proc/self/thp_stat");
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		print_thp_stat("child", "/proc/self/thp_stat");
		printf("child.pattern=%s\n", check_range(p, 0, size, 1) ? "ok" : "bad");
		fflush(stdout);
		_exit(0);
	}
	if (waitpid(pid, &st, 0) < 0)
		die("waitpid");
	printf("child.exit=%d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	return check_range(p, 0, size, 1) ? 0 : 1;
}

static int cmd_exec(char *self)
{
	char *p = map_default();
	char *argv[] = { self, "stat", NULL };

	pattern_fill(p, size, 1);
	print_thp_stat("before", "/proc/self/thp_stat");
	fflush(stdout);
	execv("/proc/self/exe", argv);
	die("execv");
	return 3;
}

struct thread_arg {
	char *p;
	pid_t tid;
	int go[2], done[2];
};

static void *thread_fn(void *v)
{
	struct thread_arg *a = v;
	char c = 0;

	a->tid = (pid_t)syscall(SYS_gettid);
	pattern_fill(a->p, size, 2);
	if (write(a->done[1], &c, 1) != 1)
		return NULL;
	/* stay alive until main has read our task's file */
	if (read(a->go[0], &c, 1) < 0)
		return NULL;
	return NULL;
}

static int cmd_threads(void)
{
	struct thread_arg a = { .p = map_default() };
	pthread_t t;
	char c = 0, path[64];
	long long before = stat_value("/proc/self/thp_stat", "thp_fault_alloc");

	if (pipe(a.go) || pipe(a.done))
		die("pipe");
	if (pthread_create(&t, NULL, thread_fn, &a))
		die("pthread_create");
	if (read(a.done[0], &c, 1) != 1)
		die("read");
	printf("before.thp_fault_alloc=%lld\n", before);
	print_thp_stat("process", "/proc/self/thp_stat");
	snprintf(path, sizeof(path), "/proc/self/task/%d/thp_stat", (int)a.tid);
	print_thp_stat("thread", path);
	snprintf(path, sizeof(path), "/proc/self/task/%d/thp_stat", (int)syscall(SYS_gettid));
	print_thp_stat("main", path);
	if (write(a.go[1], &c, 1) != 1)
		die("write");
	pthread_join(t, NULL);
	return check_range(a.p, 0, size, 2) ? 0 : 1;
}

static int cmd_cow(void)
{
	char *p = map_default();
	int to_child[2], to_parent[2], st;
	long long vm0[NVM];
	char c = 0;
	bool ok;
	pid_t pid;

	pattern_fill(p, size, 1);
	printf("anon_huge_kib=%ld\n", anon_huge_kib(p));
	print_thp_stat("parent_before", "/proc/self/thp_stat");
	if (pipe(to_child) || pipe(to_parent))
		die("pipe");
	vm_snap(vm0);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		bool cok;

		/* the child writes first, then waits for the parent to write */
		pattern_fill(p, size, 3);
		if (write(to_parent[1], &c, 1) != 1 || read(to_child[0], &c, 1) != 1)
			_exit(3);
		cok = check_range(p, 0, size, 3);
		printf("child.pattern=%s\n", cok ? "ok" : "bad");
		print_thp_stat("child", "/proc/self/thp_stat");
		fflush(stdout);
		_exit(cok ? 0 : 1);
	}
	if (read(to_parent[0], &c, 1) != 1)
		die("read");
	/* child has written and is still alive: our pages are still shared */
	ok = check_range(p, 0, size, 1);
	printf("parent.pattern_after_child_write=%s\n", ok ? "ok" : "bad");
	pattern_fill(p, size, 4);
	fflush(stdout);
	if (write(to_child[1], &c, 1) != 1)
		die("write");
	if (waitpid(pid, &st, 0) < 0)
		die("waitpid");
	ok = check_range(p, 0, size, 4) && ok;
	printf("parent.pattern=%s\n", ok ? "ok" : "bad");
	printf("child.exit=%d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	print_thp_stat("parent", "/proc/self/thp_stat");
	vm_print_delta(vm0);
	return ok && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}

static int cmd_split(const char *op)
{
	char *p = map_default();
	char *hole = p + HPAGE / 2;	/* one 4 KiB page inside the first hugepage */
	long long split0 = stat_value("/proc/self/thp_stat", "thp_split_pmd");
	long long vm0[NVM];
	bool ok;

	pattern_fill(p, size, 5);
	printf("anon_huge_kib_before=%ld\n", anon_huge_kib(p));
	vm_snap(vm0);
	if (strcmp(op, "munmap") == 0) {
		if (munmap(hole, SMALL))
			die("munmap");
	} else if (strcmp(op, "mprotect") == 0) {
		if (mprotect(hole, SMALL, PROT_READ))
			die("mprotect");
	} else if (strcmp(op, "dontneed") == 0) {
		if (madvise(hole, SMALL, MADV_DONTNEED))
			die("madvise(MADV_DONTNEED)");
	} else {
		fprintf(stderr, "thp-mm: split: unknown op '%s'\n", op);
		return 2;
	}
	ok = check_range(p, 0, hole - p, 5) && check_range(p, hole + SMALL - p, size, 5);
	if (strcmp(op, "mprotect") == 0)
		ok = ok && check_range(p, hole - p, hole + SMALL - p, 5);
	if (strcmp(op, "dontneed") == 0) {
		/* the dropped page reads back as zeroes */
		for (size_t i = 0; i < SMALL; i++)
			if (hole[i]) {
				ok = false;
				break;
			}
	}
	/* the untouched second half of the region is its own VMA after munmap */
	printf("anon_huge_kib_first=%ld\n", anon_huge_kib(p));
	printf("anon_huge_kib_rest=%ld\n", anon_huge_kib(p + size - SMALL));
	printf("thp_stat.thp_split_pmd=%lld\n",
	       stat_value("/proc/self/thp_stat", "thp_split_pmd") - split0);
	vm_print_delta(vm0);
	printf("pattern=%s\n", ok ? "ok" : "bad");
	return ok ? 0 : 1;
}

static int cmd_collapse(const char *how)
{
	char *p = map_region(MADV_NOHUGEPAGE);
	long long c0 = stat_value("/proc/self/thp_stat", "thp_collapse_alloc");
	uint64_t t0, took_ms;
	long kib;
	bool ok;

	pattern_fill(p, size, 6);
	printf("anon_huge_kib_before=%ld\n", anon_huge_kib(p));
	t0 = now_ms();
	if (strcmp(how, "madv-collapse") == 0) {
		if (madvise(p, size, MADV_HUGEPAGE))
			die("madvise(MADV_HUGEPAGE)");
		if (madvise(p, size, MADV_COLLAPSE))
			die("madvise(MADV_COLLAPSE)");
		kib = anon_huge_kib(p);
	} else if (strcmp(how, "khugepaged") == 0 || strcmp(how, "wait") == 0) {
		/* "wait": the policy under test makes the region eligible */
		if (how[0] == 'k' && madvise(p, size, MADV_HUGEPAGE))
			die("madvise(MADV_HUGEPAGE)");
		if (how[0] == 'w' && madvise(p, size, MADV_NORMAL))
			die("madvise(MADV_NORMAL)");
		for (;;) {
			kib = anon_huge_kib(p);
			if ((kib >= 0 && (size_t)kib * 1024 >= size) ||
			    now_ms() - t0 >= (uint64_t)timeout_s * 1000)
				break;
			sleep_ms(100);
		}
	} else {
		fprintf(stderr, "thp-mm: collapse: unknown way '%s'\n", how);
		return 2;
	}
	took_ms = now_ms() - t0;
	ok = check_range(p, 0, size, 6);
	printf("anon_huge_kib=%ld\n", kib);
	printf("seconds=%" PRIu64 "\n", took_ms / 1000);
	printf("thp_stat.thp_collapse_alloc=%lld\n",
	       stat_value("/proc/self/thp_stat", "thp_collapse_alloc") - c0);
	printf("pattern=%s\n", ok ? "ok" : "bad");
	return ok ? 0 : 1;
}

static int cmd_fill(void)
{
	char *p = map_default();
	long long vm0[NVM];
	bool ok;

	vm_snap(vm0);
	pattern_fill(p, size, 7);
	printf("anon_huge_kib_filled=%ld\n", anon_huge_kib(p));
	ok = check_range(p, 0, size, 7);
	printf("anon_huge_kib_after=%ld\n", anon_huge_kib(p));
	print_thp_stat("self", "/proc/self/thp_stat");
	vm_print_delta(vm0);
	printf("pattern=%s\n", ok ? "ok" : "bad");
	return ok ? 0 : 1;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: thp-mm [--size MIB] [--plain] [--timeout SEC] "
		"stat|fork|exec|threads|cow|split OP|collapse HOW|fill\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "plain", no_argument, NULL, 'p' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	const char *cmd;
	char *end;
	long v;
	int c;

	while ((c = getopt_long(argc, argv, "+s:pt:h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			v = strtol(optarg, &end, 10);
			if (*end || v < 2 || v % 2 || v > 4096)
				goto bad;
			size = (size_t)v << 20;
			break;
		case 'p':
			plain = true;
			break;
		case 't':
			timeout_s = (int)strtol(optarg, &end, 10);
			if (*end || timeout_s <= 0)
				goto bad;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			goto bad;
		}
	}
	if (optind >= argc)
		goto bad;
	cmd = argv[optind];
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (strcmp(cmd, "stat") == 0)
		return cmd_stat();
	if (strcmp(cmd, "fork") == 0)
		return cmd_fork();
	if (strcmp(cmd, "exec") == 0)
		return cmd_exec(argv[0]);
	if (strcmp(cmd, "threads") == 0)
		return cmd_threads();
	if (strcmp(cmd, "cow") == 0)
		return cmd_cow();
	if (strcmp(cmd, "fill") == 0)
		return cmd_fill();
	if (strcmp(cmd, "split") == 0 && optind + 1 < argc)
		return cmd_split(argv[optind + 1]);
	if (strcmp(cmd, "collapse") == 0 && optind + 1 < argc)
		return cmd_collapse(argv[optind + 1]);
bad:
	usage(stderr);
	return 2;
}
