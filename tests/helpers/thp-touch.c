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
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "thp.h"

#define HPAGE (2UL << 20)
#define MAX_STATS 32

struct stat_set {
	int n;
	char name[MAX_STATS][48];
	uint64_t val[MAX_STATS];
};

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
		"                 [--seed N] [--hold]\n");
}

/* read "name value" lines of a /proc file into set (names starting with prefix) */
static int read_stats(const char *path, const char *prefix, struct stat_set *set)
{
	char buf[16384], *line, *save = NULL;
	int r = thp_read_file(path, buf, sizeof(buf));

	set->n = 0;
	if (r < 0)
		return r;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[48];
		uint64_t v;

		if (set->n == MAX_STATS)
			break;
		if (sscanf(line, "%47s %" SCNu64, name, &v) != 2)
			continue;
		if (strncmp(name, prefix, strlen(prefix)) != 0)
			continue;
		strcpy(set->name[set->n], name);
		set->val[set->n++] = v;
	}
	return 0;
}

static uint64_t stat_get(const struct stat_set *set, const char *name)
{
	for (int i = 0; i < set->n; i++)
		if (strcmp(set->name[i], name) == 0)
			return set->val[i];
	return 0;
}

static long minflt(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

static inline uint64_t pattern_word(uint64_t seed, size_t i)
{
	return (i * 0x9e3779b97f4a7c15ULL) ^ seed;
}

static void fill(uint64_t *p, size_t words, uint64_t seed)
{
	for (size_t i = 0; i < words; i++)
		p[i] = pattern_word(seed, i);
}

static bool check(const uint64_t *p, size_t words, uint64_t seed)
{
	for (size_t i = 0; i < words; i++)
		if (p[i] != pattern_word(seed, i)) {
			fprintf(stderr, "thp-touch: word %zu is %#" PRIx64 ", expected %#" PRIx64 "\n",
				i, p[i], pattern_word(seed, i));
			return false;
		}
	return true;
}

/* AnonHugePages of the VMA starting at addr, in KiB; -errno */
static long anon_huge_kib(void *addr)
{
	long kib;
	int r = thp_smaps_vma_kib(0, (unsigned long)addr, "AnonHugePages", &kib);

	return r < 0 ? r : kib;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "madvise", no_argument, NULL, 'm' },
		{ "nohugepage", no_argument, NULL, 'n' },
		{ "delay-ms", required_argument, NULL, 'd' },
		{ "seed", required_argument, NULL, 'S' },
		{ "hold", no_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	unsigned long size_mib = 4, delay_ms = 0;
	uint64_t seed = 0x5448505f54455354ULL;	/* "THP_TEST" */
	int advice = -1, c, r;
	bool hold = false, ok;
	struct stat_set vm0, vm1, ts0, ts1;
	bool have_ts;
	char *p, *end;
	void *map;
	size_t len;
	long f0, f1, kib;

	while ((c = getopt_long(argc, argv, "s:mnd:S:Hh", opts, NULL)) != -1) {
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
	r = thp_mmap_aligned(len, HPAGE, MAP_NORESERVE, &map);
	if (r < 0) {
		fprintf(stderr, "thp-touch: mmap: %s\n", strerror(-r));
		return 3;
	}
	p = map;
	if (advice >= 0 && madvise(p, len, advice)) {
		perror("thp-touch: madvise");
		return 3;
	}
	if (delay_ms) {
		struct timespec ts = { delay_ms / 1000, (long)(delay_ms % 1000) * 1000000L };

		nanosleep(&ts, NULL);
	}

	if (read_stats("/proc/vmstat", "thp_", &vm0) < 0) {
		perror("thp-touch: /proc/vmstat");
		return 3;
	}
	have_ts = read_stats("/proc/self/thp_stat", "", &ts0) == 0;
	f0 = minflt();
	fill((uint64_t *)p, len / 8, seed);
	f1 = minflt();
	read_stats("/proc/vmstat", "thp_", &vm1);
	if (have_ts)
		read_stats("/proc/self/thp_stat", "", &ts1);
	ok = check((uint64_t *)p, len / 8, seed);
	kib = anon_huge_kib(p);

	printf("addr=%p\n", (void *)p);
	printf("size_kib=%zu\n", len >> 10);
	printf("anon_huge_kib=%ld\n", kib);
	printf("thp_fault_alloc=%" PRIu64 "\n",
	       stat_get(&vm1, "thp_fault_alloc") - stat_get(&vm0, "thp_fault_alloc"));
	printf("thp_fault_fallback=%" PRIu64 "\n",
	       stat_get(&vm1, "thp_fault_fallback") - stat_get(&vm0, "thp_fault_fallback"));
	printf("minflt=%ld\n", f1 - f0);
	for (int i = 0; have_ts && i < ts1.n; i++)
		printf("thp_stat.%s=%" PRId64 "\n", ts1.name[i],
		       (int64_t)(ts1.val[i] - stat_get(&ts0, ts1.name[i])));
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
		ok = check((uint64_t *)p, len / 8, seed) && ok;
		printf("anon_huge_kib_final=%ld\n", anon_huge_kib(p));
		printf("pattern_final=%s\n", ok ? "ok" : "bad");
	}
	return ok ? 0 : 1;
bad:
	usage(stderr);
	return 2;
}
