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

#include "test-util.h"
#include "thp.h"

int main(int argc, char **argv)
{
	unsigned long mib = 256;
	int advise = 0, r;
	char *p;
	void *map;
	size_t len;
	uint64_t t0, t1, t2, t3;
	long long a0, f0;
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
	r = thp_mmap_aligned(len, TEST_HPAGE, MAP_NORESERVE, &map);
	if (r < 0) {
		fprintf(stderr, "largepages: mmap: %s\n", strerror(-r));
		return 3;
	}
	p = map;
	if (advise && madvise(p, len, MADV_HUGEPAGE)) {
		perror("largepages: madvise");
		return 3;
	}

	a0 = stat_value("/proc/self/thp_stat", "thp_fault_alloc");
	f0 = stat_value("/proc/self/thp_stat", "thp_fault_fallback");
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
	       " minflt=%ld anon_huge_kib=%ld thp_fault_alloc=%lld thp_fault_fallback=%lld\n",
	       t1 - t0, t2 - t1, t3 - t2, fl1 - fl0, anon_huge_kib(p),
	       stat_value("/proc/self/thp_stat", "thp_fault_alloc") - a0,
	       stat_value("/proc/self/thp_stat", "thp_fault_fallback") - f0);
	return 0;
}
