// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * thp-frag: fragment the guest's free memory, for the "mode 2 compacts where
 * mode 1 does not" test.
 *
 * Faults in 4 KiB anonymous pages (MADV_NOHUGEPAGE) in 16 MiB steps until
 * MemFree drops below --leave MIB, then frees every other 4 KiB page, so that
 * the free memory is scattered single pages that compaction can turn into
 * hugepages but a plain allocation cannot. With --take-blocks it then
 * also takes the free order-9 blocks that are left (hugepages of its own,
 * 2 MiB at a time while /proc/buddyinfo shows any and MemFree stays above
 * --leave), so that nothing but compaction can give a fault a hugepage.
 * --leave never goes below the kernel's own floor: vm.min_free_kbytes (the
 * zones' min watermarks, about 45 MiB in a 2 GiB guest) plus 16 MiB. At 48
 * MiB a guest with its page cache dropped went below DMA32's min watermark
 * and the OOM killer took thp-frag.
 * Its memory is not madvised: run it under enabled=always with a defrag
 * that does not compact for such memory (madvise, the default), or every
 * block it takes would be compacted out of the fragmentation. Prints
 * held_mib=, freed_mib=, taken_mib=, free_blocks=, memfree_mib=, floor_mib= and
 * "ready", then waits for stdin to close (or SIGTERM).
 *
 * Exit: 0 ok, 2 usage, 3 system error.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "test-util.h"
#include "thp.h"

#define STEP (16UL << 20)
#define PAGE 4096UL
#define MAX_STEPS 4096

static long memfree_mib(void)
{
	char line[128];
	long kib = -1;
	FILE *f = fopen("/proc/meminfo", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemFree: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib < 0 ? -1 : kib >> 10;
}

/* vm.min_free_kbytes in MiB, or 0 */
static long min_free_mib(void)
{
	FILE *f = fopen("/proc/sys/vm/min_free_kbytes", "re");
	long kib = 0;

	if (!f)
		return 0;
	if (fscanf(f, "%ld", &kib) != 1)
		kib = 0;
	fclose(f);
	return kib >> 10;
}

static void on_term(int sig)
{
	(void)sig;
	_exit(0);
}

/*
 * Hugepages of our own while /proc/buddyinfo shows free order-9 blocks and
 * MemFree stays above leave; stops at the first 2 MiB that does not come
 * out huge (THP not always, or the block was gone). The bytes taken, or -1.
 */
static long take_blocks(long leave)
{
	long taken = 0;

	for (int i = 0; i < MAX_STEPS && thp_buddyinfo_free_blocks(9) > 0 && memfree_mib() > leave;
	     i++) {
		void *p;
		int r = thp_mmap_aligned(TEST_HPAGE, TEST_HPAGE, 0, &p);

		if (r < 0) {
			fprintf(stderr, "thp-frag: 2 MiB for a block: %s\n", strerror(-r));
			return -1;
		}
		memset(p, 1, TEST_HPAGE);
		if (anon_huge_kib(p) != (long)(TEST_HPAGE >> 10))
			break;
		taken += (long)TEST_HPAGE;
	}
	return taken;
}

static int usage(void)
{
	fprintf(stderr, "usage: thp-frag [--leave MIB] [--take-blocks]\n");
	return 2;
}

int main(int argc, char **argv)
{
	static char *chunks[MAX_STEPS];
	long leave = 48, free_now, taken = 0;
	size_t n = 0, freed = 0;
	bool take = false;
	char *end, c;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--leave") == 0 && i + 1 < argc) {
			leave = strtol(argv[++i], &end, 10);
			if (*end || leave < 16)
				return usage();
		} else if (strcmp(argv[i], "--take-blocks") == 0) {
			take = true;
		} else {
			return usage();
		}
	}
	signal(SIGTERM, on_term);
	if (leave < min_free_mib() + 16)
		leave = min_free_mib() + 16;

	while (n < MAX_STEPS && (free_now = memfree_mib()) > leave + 16) {
		char *p = mmap(NULL, STEP, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED) {
			fprintf(stderr, "thp-frag: mmap: %s\n", strerror(errno));
			return 3;
		}
		if (madvise(p, STEP, MADV_NOHUGEPAGE)) {
			fprintf(stderr, "thp-frag: madvise: %s\n", strerror(errno));
			return 3;
		}
		for (size_t off = 0; off < STEP; off += PAGE)
			p[off] = 1;
		chunks[n++] = p;
	}
	for (size_t i = 0; i < n; i++)
		for (size_t off = 0; off < STEP; off += 2 * PAGE) {
			if (madvise(chunks[i] + off, PAGE, MADV_DONTNEED)) {
				fprintf(stderr, "thp-frag: MADV_DONTNEED: %s\n", strerror(errno));
				return 3;
			}
			freed += PAGE;
		}
	if (take) {
		taken = take_blocks(leave);
		if (taken < 0)
			return 3;
	}
	printf("held_mib=%zu\nfreed_mib=%zu\ntaken_mib=%ld\nfree_blocks=%ld\nmemfree_mib=%ld\nfloor_mib=%ld\nready\n",
	       (n * STEP - freed) >> 20, freed >> 20, taken >> 20, thp_buddyinfo_free_blocks(9),
	       memfree_mib(), leave);
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	return 0;
}
