// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * thp-touch: map a 2 MiB-aligned anonymous region, fill it with a data
 * pattern, check it, and report what the kernel gave us:
 *
 *   addr=0x7f...           start of the region
 *   size_kib=N             its size
 *   anon_huge_kib=N        AnonHugePages of exactly that VMA (/proc/self/smaps)
 *   thp_fault_alloc=N      /proc/vmstat deltas over the touch
 *   thp_fault_fallback=N
 *   minflt=N               minor faults over the touch (getrusage)
 *   thp_stat.NAME=N        /proc/self/thp_stat deltas, when the kernel has it
 *   pattern=ok|bad
 *
 * --wait-policy WORD waits (up to 60 s) until /proc/self/thp_policy reads
 * WORD before touching: a policy thpd sets at exec is there when the test
 * looks, however slow the guest (exit 3 if it never comes).
 *
 * With --hold it then prints "ready" and waits until stdin reaches EOF or
 * SIGTERM/SIGINT arrives, checks the pattern again (pattern_final=ok|bad) and
 * exits, so a test can look at /proc/PID, or act on it, meanwhile.
 *
 * Exit: 0 all good, 1 pattern damaged, 2 usage, 3 system error.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "test-util.h"
#include "thp.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: thp-touch [--size MIB] [--madvise|--nohugepage] [--delay-ms N]\n"
		"                 [--wait-policy WORD] [--seed N] [--hold]\n");
}

/* wait until /proc/self/thp_policy reads WORD, polling every 10 ms for
 * up to 60 s; 0, or -1 with the last value read in GOT */
static int wait_policy(const char *word, char *got, size_t n)
{
	for (int i = 0; i < 6000; i++) {
		FILE *f = fopen("/proc/self/thp_policy", "re");

		got[0] = '\0';
		if (f) {
			if (fgets(got, (int)n, f))
				got[strcspn(got, "\n")] = '\0';
			fclose(f);
		}
		if (!strcmp(got, word))
			return 0;
		sleep_ms(10);
	}
	return -1;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "madvise", no_argument, NULL, 'm' },
		{ "nohugepage", no_argument, NULL, 'n' },
		{ "delay-ms", required_argument, NULL, 'd' },
		{ "wait-policy", required_argument, NULL, 'w' },
		{ "seed", required_argument, NULL, 'S' },
		{ "hold", no_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	unsigned long size_mib = 4, delay_ms = 0;
	const char *want_policy = NULL;
	char policy[64];
	uint64_t seed = 0x5448505f54455354ULL;	/* "THP_TEST" */
	int advice = -1, c, r;
	bool hold = false, ok;
	struct stat_set vm0, vm1, ts0, ts1;
	bool have_ts;
	char *p, *end;
	void *map;
	size_t len;
	long f0, f1, kib;

	while ((c = getopt_long(argc, argv, "s:mnd:w:S:Hh", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			size_mib = strtoul(optarg, &end, 0);
			if (*end || size_mib == 0 || size_mib > (1UL << 20))
				goto bad;
			break;
		case 'm':
			advice = MADV_HUGEPAGE;
			break;
		case 'n':
			advice = MADV_NOHUGEPAGE;
			break;
		case 'd':
			delay_ms = strtoul(optarg, &end, 0);
			if (*end)
				goto bad;
			break;
		case 'w':
			want_policy = optarg;
			break;
		case 'S':
			seed = strtoull(optarg, &end, 0);
			if (*end)
				goto bad;
			break;
		case 'H':
			hold = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			goto bad;
		}
	}
	if (optind != argc)
		goto bad;

	len = size_mib << 20;
	/* a 2 MiB-aligned region that is a VMA of its own */
	r = thp_mmap_aligned(len, TEST_HPAGE, MAP_NORESERVE, &map);
	if (r < 0) {
		fprintf(stderr, "thp-touch: mmap: %s\n", strerror(-r));
		return 3;
	}
	p = map;
	if (advice >= 0 && madvise(p, len, advice)) {
		perror("thp-touch: madvise");
		return 3;
	}
	if (want_policy && wait_policy(want_policy, policy, sizeof(policy))) {
		fprintf(stderr, "thp-touch: thp_policy is \"%s\", not %s, after 60 s\n",
			policy, want_policy);
		return 3;
	}
	if (delay_ms)
		sleep_ms(delay_ms);

	if (stats_read("/proc/vmstat", "thp_", &vm0) < 0) {
		perror("thp-touch: /proc/vmstat");
		return 3;
	}
	have_ts = stats_read("/proc/self/thp_stat", "", &ts0) == 0;
	f0 = minflt();
	pattern_fill(p, len, seed);
	f1 = minflt();
	stats_read("/proc/vmstat", "thp_", &vm1);
	if (have_ts)
		stats_read("/proc/self/thp_stat", "", &ts1);
	ok = pattern_check(p, 0, len, seed, "thp-touch");
	kib = anon_huge_kib(p);

	printf("addr=%p\n", (void *)p);
	printf("size_kib=%zu\n", len >> 10);
	printf("anon_huge_kib=%ld\n", kib);
	printf("thp_fault_alloc=%" PRId64 "\n", stats_delta(&vm0, &vm1, "thp_fault_alloc"));
	printf("thp_fault_fallback=%" PRId64 "\n", stats_delta(&vm0, &vm1, "thp_fault_fallback"));
	printf("minflt=%ld\n", f1 - f0);
	for (int i = 0; have_ts && i < ts1.n; i++)
		printf("thp_stat.%s=%" PRId64 "\n", ts1.name[i],
		       stats_delta(&ts0, &ts1, ts1.name[i]));
	printf("pattern=%s\n", ok ? "ok" : "bad");
	fflush(stdout);

	if (hold) {
		struct sigaction sa = { .sa_handler = on_signal };
		char b[64];

		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGINT, &sa, NULL);
		printf("ready\n");
		fflush(stdout);
		while (!stop) {
			ssize_t n = read(STDIN_FILENO, b, sizeof(b));

			if (n == 0 || (n < 0 && errno != EINTR))
				break;
		}
		ok = pattern_check(p, 0, len, seed, "thp-touch") && ok;
		printf("anon_huge_kib_final=%ld\n", anon_huge_kib(p));
		printf("pattern_final=%s\n", ok ? "ok" : "bad");
	}
	return ok ? 0 : 1;
bad:
	usage(stderr);
	return 2;
}
