// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * largepages: the 2009 RFC's largepages3 benchmark, for one configuration.
 *
 * Maps a 2 MiB-aligned anonymous region of --size MiB and times three passes:
 *   first  memset of the whole region (faults it in),
 *   repeat memset of the whole region (no faults: TLB and cache behaviour),
 *   stride one byte written every 4 KiB over the region.
 * Prints one line of key=value: the times in microseconds, minor faults of
 * the first pass, AnonHugePages of the region, and /proc/self/thp_stat deltas
 * when the kernel has them. The caller sets the THP mode or policy.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

#include "thp.h"

#define HPAGE (2UL << 20)

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static long minflt(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

static long anon_huge_kib(void *addr)
{
	long kib;
	int r = thp_smaps_vma_kib(0, (unsigned long)addr, "AnonHugePages", &kib);

	return r < 0 ? r : kib;
}

static uint64_t thp_stat(const char *name)
{
	char line[128], key[64];
	uint64_t v, r = 0;
	FILE *f = fopen("/proc/self/thp_stat", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %" SCNu64, key, &v) == 2 && strcmp(key, name) == 0)
			r = v;
	fclose(f);
	return r;
}

int main(int argc, char **argv)
{
	unsigned long mib = 256;
	int advise = 0, r;
	char *p;
	void *map;
	size_t len;
	uint64_t t0, t1, t2, t3, a0, f0;
	long fl0, fl1;
	volatile char sink = 0;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--size") == 0 && i + 1 < argc)
			mib = strtoul(argv[++i], NULL, 0);
		else if (strcmp(argv[i], "--madvise") == 0)
			advise = 1;
		else {
			fprintf(stderr, "usage: largepages [--size MIB] [--madvise]\n");
			return 2;
		}
	}
	len = mib << 20;
	r = thp_mmap_aligned(len, HPAGE, MAP_NORESERVE, &map);
	if (r < 0) {
		fprintf(stderr, "largepages: mmap: %s\n", strerror(-r));
		return 3;
	}
	p = map;
	if (advise && madvise(p, len, MADV_HUGEPAGE)) {
		perror("largepages: madvise");
		return 3;
	}

	a0 = thp_stat("thp_fault_alloc");
	f0 = thp_stat("thp_fault_fallback");
	fl0 = minflt();
	t0 = now_us();
	memset(p, 1, len);
	t1 = now_us();
	fl1 = minflt();
	memset(p, 2, len);
	t2 = now_us();
	for (size_t off = 0; off < len; off += 4096)
		p[off] = 3;
	t3 = now_us();
	sink = p[len - 1];
	(void)sink;

	printf("first_us=%" PRIu64 " repeat_us=%" PRIu64 " stride_us=%" PRIu64
	       " minflt=%ld anon_huge_kib=%ld thp_fault_alloc=%" PRIu64 " thp_fault_fallback=%" PRIu64 "\n",
	       t1 - t0, t2 - t1, t3 - t2, fl1 - fl0, anon_huge_kib(p),
	       thp_stat("thp_fault_alloc") - a0, thp_stat("thp_fault_fallback") - f0);
	return 0;
}
