// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * mthpfault: many threads of one process write-faulting multi-size THPs,
 * the path (alloc_anon_folio()) where the 6.12 series counts each fault
 * in a per-mm, per-size counter shared by all threads of the process.
 *
 *   mthpfault THREADS SECONDS MIB KB
 *
 * Each thread maps MIB of memory, 2 MiB-aligned, writes one byte of each
 * KB-sized block (one fault each, when the caller has set that size to
 * "always" and larger sizes to "never"), unmaps it, and again, until
 * SECONDS have passed. Prints "threads=N faults=F seconds=S faults_per_s=X
 * per_process=P": F is what the threads did, P the process's
 * hugepages-<KB>kB/anon_fault_alloc where the kernel has
 * /proc/self/thp_stat with sizes (it equals F when every fault got its
 * size), else -1.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "test-util.h"

static atomic_bool stop;
static size_t len, block;

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
		char *p;
		long n = 0;

		if (raw == MAP_FAILED) {
			w->err = 1;
			break;
		}
		p = (char *)(((uintptr_t)raw + TEST_HPAGE - 1) & ~(TEST_HPAGE - 1));
		for (size_t off = 0; off < len; off += block) {
			p[off] = 1;
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
	long long a0, a1;
	char name[64];
	struct worker *w;
	uint64_t t0, t1;

	if (argc != 5) {
		fprintf(stderr, "usage: mthpfault THREADS SECONDS MIB KB\n");
		return 2;
	}
	threads = strtol(argv[1], NULL, 0);
	seconds = strtol(argv[2], NULL, 0);
	len = strtoul(argv[3], NULL, 0) << 20;
	block = strtoul(argv[4], NULL, 0) << 10;
	if (threads < 1 || seconds < 1 || len < TEST_HPAGE || block < TEST_PAGE ||
	    len % block) {
		fprintf(stderr, "mthpfault: THREADS >= 1, SECONDS >= 1, MIB >= 2, KB >= 4 dividing MIB\n");
		return 2;
	}
	w = calloc((size_t)threads, sizeof(*w));
	if (!w)
		return 3;
	snprintf(name, sizeof(name), "hugepages-%lukB/anon_fault_alloc", (unsigned long)(block >> 10));
	a0 = stat_value("/proc/self/thp_stat", name);
	t0 = now_us();
	for (long i = 0; i < threads; i++)
		if (pthread_create(&w[i].t, NULL, work, &w[i])) {
			fprintf(stderr, "mthpfault: pthread_create failed\n");
			return 3;
		}
	sleep_ms((uint64_t)seconds * 1000);
	atomic_store(&stop, true);
	for (long i = 0; i < threads; i++) {
		pthread_join(w[i].t, NULL);
		if (w[i].err) {
			fprintf(stderr, "mthpfault: thread %ld failed (mmap)\n", i);
			return 3;
		}
		total += w[i].faults;
	}
	t1 = now_us();
	a1 = stat_value("/proc/self/thp_stat", name);
	printf("threads=%ld faults=%ld seconds=%.3f faults_per_s=%.0f per_process=%lld\n",
	       threads, total, (double)(t1 - t0) / 1e6, (double)total * 1e6 / (double)(t1 - t0),
	       a0 >= 0 && a1 >= 0 ? a1 - a0 : -1);
	return 0;
}
