// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * faultloop: the page-fault path, timed (will-it-scale page_fault1 style).
 *   faultloop 4k  ITER MIB   map MIB with MADV_NOHUGEPAGE, touch every 4 KiB, unmap
 *   faultloop thp ITER MIB   map MIB 2 MiB-aligned with MADV_HUGEPAGE, touch, unmap
 *   faultloop mthp ITER MIB  the same; the caller has set the sizes (e.g. 64K
 *                            at always, 2M at never), so each fault maps an mTHP
 * Prints "faults=N ns_per_fault=X" (faults counted with getrusage).
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "test-util.h"

#define HPAGE (2UL << 20)

int main(int argc, char **argv)
{
	struct timespec a, b;
	int huge;
	long iters, f0, faults;
	size_t len;
	uint64_t ns;

	if (argc != 4 || (strcmp(argv[1], "4k") && strcmp(argv[1], "thp") &&
			  strcmp(argv[1], "mthp"))) {
		fprintf(stderr, "usage: faultloop 4k|thp|mthp ITER MIB\n");
		return 2;
	}
	huge = strcmp(argv[1], "4k") != 0;
	iters = strtol(argv[2], NULL, 0);
	len = strtoul(argv[3], NULL, 0) << 20;
	f0 = minflt();
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < iters; i++) {
		char *raw = mmap(NULL, len + HPAGE, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		char *p;

		if (raw == MAP_FAILED) {
			perror("faultloop: mmap");
			return 3;
		}
		p = (char *)(((uintptr_t)raw + HPAGE - 1) & ~(HPAGE - 1));
		madvise(p, len, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
		for (size_t off = 0; off < len; off += 4096)
			p[off] = 1;
		munmap(raw, len + HPAGE);
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	faults = minflt() - f0;
	ns = (uint64_t)(b.tv_sec - a.tv_sec) * 1000000000u + (uint64_t)(b.tv_nsec - a.tv_nsec);
	printf("faults=%ld ns_per_fault=%.0f\n", faults, faults ? (double)ns / (double)faults : 0.0);
	return 0;
}
