// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * zerofault: many threads of one process read-faulting the huge zero page,
 * the fault where the series' per-mm counter (thp_zero_page_fault, an
 * atomic in mm_struct shared by all threads) costs most: every fault of
 * every thread increments the same word.
 *
 *   zerofault THREADS SECONDS MIB
 *
 * Each thread maps MIB of MADV_HUGEPAGE memory, 2 MiB-aligned, reads one
 * byte of each 2 MiB (one huge zero page PMD fault each), unmaps it, and
 * again, until SECONDS have passed. Prints "threads=N faults=F seconds=S
 * faults_per_s=X zero_page_faults=Z": F is what the threads did, Z the
 * process's thp_zero_page_fault where the kernel has /proc/self/thp_stat
 * (it must equal F there), else -1. Needs enabled=always or madvise and
 * use_zero_page=1.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "test-util.h"

static atomic_bool stop;
static size_t len;

struct worker {
	pthread_t t;
	long faults;
	int err;
};

static void *work(void *arg)
{
	struct worker *w = arg;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		char *raw = mmap(NULL, len + TEST_HPAGE, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		volatile char *p;
		long n = 0;

		if (raw == MAP_FAILED) {
			w->err = 1;
			break;
		}
		p = (volatile char *)(((uintptr_t)raw + TEST_HPAGE - 1) & ~(TEST_HPAGE - 1));
		madvise((void *)p, len, MADV_HUGEPAGE);
		for (size_t off = 0; off < len; off += TEST_HPAGE) {
			if (p[off] != 0) {
				w->err = 2;
				break;
			}
			n++;
		}
		munmap(raw, len + TEST_HPAGE);
		w->faults += n;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long threads, seconds, total = 0;
	long long z0, z1;
	struct worker *w;
	uint64_t t0, t1;

	if (argc != 4) {
		fprintf(stderr, "usage: zerofault THREADS SECONDS MIB\n");
		return 2;
	}
	threads = strtol(argv[1], NULL, 0);
	seconds = strtol(argv[2], NULL, 0);
	len = strtoul(argv[3], NULL, 0) << 20;
	if (threads < 1 || seconds < 1 || len < TEST_HPAGE) {
		fprintf(stderr, "zerofault: THREADS >= 1, SECONDS >= 1, MIB >= 2\n");
		return 2;
	}
	w = calloc((size_t)threads, sizeof(*w));
	if (!w)
		return 3;
	z0 = stat_value("/proc/self/thp_stat", "thp_zero_page_fault");
	t0 = now_us();
	for (long i = 0; i < threads; i++)
		if (pthread_create(&w[i].t, NULL, work, &w[i])) {
			fprintf(stderr, "zerofault: pthread_create failed\n");
			return 3;
		}
	sleep_ms((uint64_t)seconds * 1000);
	atomic_store(&stop, true);
	for (long i = 0; i < threads; i++) {
		pthread_join(w[i].t, NULL);
		if (w[i].err) {
			fprintf(stderr, "zerofault: thread %ld failed (%s)\n", i,
				w[i].err == 1 ? "mmap" : "read a non-zero byte");
			return 3;
		}
		total += w[i].faults;
	}
	t1 = now_us();
	z1 = stat_value("/proc/self/thp_stat", "thp_zero_page_fault");
	printf("threads=%ld faults=%ld seconds=%.3f faults_per_s=%.0f zero_page_faults=%lld\n",
	       threads, total, (double)(t1 - t0) / 1e6, (double)total * 1e6 / (double)(t1 - t0),
	       z0 >= 0 && z1 >= 0 ? z1 - z0 : -1);
	return 0;
}
