// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * thp-malloc: malloc() a region, fill it, and report how much of this
 * process's anonymous memory became huge. Used to check `thpctl run --advise`
 * on a stock kernel, where it works through glibc's glibc.malloc.hugetlb=1
 * tunable (which covers malloc'd memory only, unlike thp-touch's mmap):
 *
 *   size_kib=N
 *   anon_huge_kib=N     AnonHugePages of /proc/self/smaps_rollup after the fill
 *   glibc_tunables=...  GLIBC_TUNABLES as this process saw it
 *   pattern=ok|bad
 *
 * Usage: thp-malloc [--size MIB]. Exit: 0 good, 1 pattern bad, 2 usage,
 * 3 system error.
 *
 * The host tests build it without the sanitizers (make, not make SAN=1):
 * their allocator would bypass glibc's malloc and its tunables.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test-util.h"

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	unsigned long size_mib = 16;
	char *end;
	const char *tun = getenv("GLIBC_TUNABLES");
	long huge;
	size_t n;
	uint64_t *p;
	bool ok;
	int c;

	while ((c = getopt_long(argc, argv, "s:h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			errno = 0;
			size_mib = strtoul(optarg, &end, 10);
			if (errno || *end || size_mib == 0 || size_mib > 4096) {
				fprintf(stderr, "thp-malloc: bad --size '%s'\n", optarg);
				return 2;
			}
			break;
		case 'h':
			printf("usage: thp-malloc [--size MIB]\n");
			return 0;
		default:
			fprintf(stderr, "usage: thp-malloc [--size MIB]\n");
			return 2;
		}
	}
	n = (size_t)size_mib << 20;
	p = malloc(n);
	if (!p) {
		perror("thp-malloc: malloc");
		return 3;
	}
	pattern_fill(p, n, 0);
	ok = pattern_check(p, 0, n, 0, "thp-malloc");
	huge = anon_huge_kib_total();
	if (huge < 0) {
		fprintf(stderr, "thp-malloc: /proc/self/smaps_rollup: %s\n", strerror((int)-huge));
		free(p);
		return 3;
	}
	printf("size_kib=%lu\nanon_huge_kib=%ld\nglibc_tunables=%s\npattern=%s\n",
	       size_mib << 10, huge, tun ? tun : "", ok ? "ok" : "bad");
	free(p);
	return ok ? 0 : 1;
}
