// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * threadfault: many threads of one process faulting anonymous memory, the
 * faults where the series' per-mm counters (atomics in mm_struct shared by
 * all threads) cost most: every fault of every thread increments one word.
 *
 *   threadfault zero THREADS SECONDS MIB
 *   threadfault write THREADS SECONDS MIB KB
 *
 * Each thread maps MIB of memory, 2 MiB-aligned, faults it, unmaps it, and
 * again, until SECONDS have passed.
 *   zero: MADV_HUGEPAGE memory, one read per 2 MiB (a huge zero page PMD
 *         fault each; every byte read must be 0); the counter is
 *         thp_zero_page_fault. Needs enabled=always or madvise and
 *         use_zero_page=1.
 *   write: one write per KB (a KB-sized mTHP fault each where that size is
 *         on, e.g. 64K always with the PMD size never); the counter is
 *         hugepages-<KB>kB/anon_fault_alloc (the 6.12 series).
 * Prints "threads=N faults=F seconds=S faults_per_s=X COUNTER=C", COUNTER
 * zero_page_faults (zero) or per_process (write): C is the process's
 * counter from /proc/self/thp_stat (it must equal F there), else -1.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "test-util.h"

static atomic_bool stop;
static bool zero;
static size_t len, block;

struct worker {
	pthread_t t;
	long faults;
	int err;	/* 1: mmap failed, 2: read a non-zero byte */
};

static void *work(void *arg)
{
	struct worker *w = arg;

	while (!w->err && !atomic_load_explicit(&stop, memory_order_relaxed)) {
		char *raw = mmap(NULL, len + TEST_HPAGE, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		volatile char *p;
		long n = 0;

		if (raw == MAP_FAILED) {
			w->err = 1;
			break;
		}
		p = (volatile char *)(((uintptr_t)raw + TEST_HPAGE - 1) & ~(TEST_HPAGE - 1));
		if (zero)
			madvise((void *)p, len, MADV_HUGEPAGE);
		for (size_t off = 0; off < len; off += block) {
			if (!zero)
				p[off] = 1;
			else if (p[off] != 0)
				w->err = 2;
			n++;
		}
		munmap(raw, len + TEST_HPAGE);
		w->faults += n;
	}
	return NULL;
}

static int usage(void)
{
	fprintf(stderr, "usage: threadfault zero THREADS SECONDS MIB\n"
			"       threadfault write THREADS SECONDS MIB KB\n"
			"THREADS >= 1, SECONDS >= 1, MIB >= 2, KB >= 4 dividing MIB\n");
	return 2;
}

int main(int argc, char **argv)
{
	long threads, seconds, total = 0;
	long long c0, c1;
	char counter[64];
	struct worker *w;
	uint64_t t0, t1;

	if (argc < 2 || !((zero = !strcmp(argv[1], "zero")) ? argc == 5 :
			  !strcmp(argv[1], "write") && argc == 6))
		return usage();
	threads = strtol(argv[2], NULL, 0);
	seconds = strtol(argv[3], NULL, 0);
	len = strtoul(argv[4], NULL, 0) << 20;
	block = zero ? TEST_HPAGE : strtoul(argv[5], NULL, 0) << 10;
	if (threads < 1 || seconds < 1 || len < TEST_HPAGE || block < TEST_PAGE || len % block)
		return usage();
	w = calloc((size_t)threads, sizeof(*w));
	if (!w)
		return 3;
	if (zero)
		snprintf(counter, sizeof(counter), "thp_zero_page_fault");
	else
		snprintf(counter, sizeof(counter), "hugepages-%lukB/anon_fault_alloc",
			 (unsigned long)(block >> 10));
	c0 = stat_value("/proc/self/thp_stat", counter);
	t0 = now_us();
	for (long i = 0; i < threads; i++)
		if (pthread_create(&w[i].t, NULL, work, &w[i])) {
			fprintf(stderr, "threadfault: pthread_create failed\n");
			return 3;
		}
	sleep_ms((uint64_t)seconds * 1000);
	atomic_store(&stop, true);
	for (long i = 0; i < threads; i++) {
		pthread_join(w[i].t, NULL);
		if (w[i].err) {
			fprintf(stderr, "threadfault: thread %ld failed (%s)\n", i,
				w[i].err == 1 ? "mmap" : "read a non-zero byte");
			return 3;
		}
		total += w[i].faults;
	}
	t1 = now_us();
	c1 = stat_value("/proc/self/thp_stat", counter);
	printf("threads=%ld faults=%ld seconds=%.3f faults_per_s=%.0f %s=%lld\n",
	       threads, total, (double)(t1 - t0) / 1e6, (double)total * 1e6 / (double)(t1 - t0),
	       zero ? "zero_page_faults" : "per_process", c0 >= 0 && c1 >= 0 ? c1 - c0 : -1);
	return 0;
}
