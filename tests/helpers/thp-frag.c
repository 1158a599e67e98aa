// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * thp-frag: fragment the guest's free memory, for the "mode 2 compacts where
 * mode 1 does not" test.
 *
 * Faults in 4 KiB anonymous pages (MADV_NOHUGEPAGE) in 16 MiB steps until
 * MemFree drops below --leave MIB, then frees every other 4 KiB page, so that
 * the free memory is scattered single pages that compaction can turn into
 * hugepages but a plain allocation cannot. Prints held_mib=, freed_mib=,
 * memfree_mib= and "ready", then waits for stdin to close (or SIGTERM).
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

static void on_term(int sig)
{
	(void)sig;
	_exit(0);
}

int main(int argc, char **argv)
{
	static char *chunks[MAX_STEPS];
	long leave = 48, free_now;
	size_t n = 0, freed = 0;
	char *end, c;

	if (argc == 3 && strcmp(argv[1], "--leave") == 0) {
		leave = strtol(argv[2], &end, 10);
		if (*end || leave < 16) {
			fprintf(stderr, "usage: thp-frag [--leave MIB]\n");
			return 2;
		}
	} else if (argc != 1) {
		fprintf(stderr, "usage: thp-frag [--leave MIB]\n");
		return 2;
	}
	signal(SIGTERM, on_term);

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
	printf("held_mib=%zu\nfreed_mib=%zu\nmemfree_mib=%ld\nready\n",
	       (n * STEP - freed) >> 20, freed >> 20, memfree_mib());
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	return 0;
}
