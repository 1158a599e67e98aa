// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * touchloop: a process that keeps using its memory while it is collapsed,
 * for the collapse benchmark (bench/run.sh): how long can a collapse hold
 * it up?
 *
 *   touchloop MIB
 *
 * Maps MIB (2 MiB-aligned, a VMA of its own), fills it with a data pattern,
 * prints addr=, anon_huge_kib= (of the region) and "ready", then reads one
 * word of every 4 KiB page, round and round, timing each read against the
 * one before. A collapse takes the process's mmap lock and clears the
 * range's page table entry while it copies: a read of that range waits,
 * and shows as a gap. SIGUSR1 prints "gap_max_us=N rounds=N" for the
 * time since the last SIGUSR1 (or the start) and starts a new span. At
 * EOF on stdin (or SIGTERM) it checks the pattern and prints
 * pattern_final=ok|bad and anon_huge_kib_final=.
 *
 * Exit: 0 ok, 1 pattern damaged, 2 usage, 3 system error.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test-util.h"
#include "thp.h"

static volatile sig_atomic_t report, stop;

static void on_usr1(int sig)
{
	(void)sig;
	report = 1;
}

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

/* stdin closed? (checked once a round: a poll() with no wait) */
static bool stdin_done(void)
{
	struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
	char b[64];

	if (poll(&p, 1, 0) <= 0)
		return false;
	return read(STDIN_FILENO, b, sizeof(b)) <= 0;
}

int main(int argc, char **argv)
{
	const uint64_t seed = 0x544f5543484c4f4fULL;	/* "TOUCHLOO" */
	struct sigaction usr1 = { .sa_handler = on_usr1 }, term = { .sa_handler = on_term };
	uint64_t last, gap_max = 0, rounds = 0, sink = 0;
	volatile uint64_t *w;
	size_t len;
	char *end;
	void *map;
	bool ok;
	int r;

	if (argc != 2 || (len = strtoul(argv[1], &end, 0) << 20) == 0 || *end) {
		fprintf(stderr, "usage: touchloop MIB\n");
		return 2;
	}
	r = thp_mmap_aligned(len, TEST_HPAGE, 0, &map);
	if (r < 0) {
		fprintf(stderr, "touchloop: mmap: %s\n", strerror(-r));
		return 3;
	}
	pattern_fill(map, len, seed);
	sigaction(SIGUSR1, &usr1, NULL);
	sigaction(SIGTERM, &term, NULL);
	sigaction(SIGINT, &term, NULL);
	printf("addr=%p\nanon_huge_kib=%ld\nready\n", map, anon_huge_kib(map));
	fflush(stdout);
	w = map;
	last = now_us();
	while (!stop) {
		for (size_t off = 0; off < len / sizeof(*w); off += TEST_PAGE / sizeof(*w)) {
			uint64_t t;

			sink += w[off];
			t = now_us();
			if (t - last > gap_max)
				gap_max = t - last;
			last = t;
		}
		rounds++;
		if (report) {
			report = 0;
			printf("gap_max_us=%" PRIu64 " rounds=%" PRIu64 "\n", gap_max, rounds);
			fflush(stdout);
			gap_max = rounds = 0;
			last = now_us();
		}
		if (stdin_done())
			break;
	}
	ok = pattern_check(map, 0, len, seed, "touchloop");
	printf("anon_huge_kib_final=%ld\npattern_final=%s\nsink=%" PRIu64 "\n", anon_huge_kib(map),
	       ok ? "ok" : "bad", sink & 1);
	return ok ? 0 : 1;
}
