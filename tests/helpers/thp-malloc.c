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
 * Self-contained (no libthp): the host tests compile it without the
 * sanitizers, whose allocator would bypass glibc's malloc and its tunables.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int anon_huge_kib(uint64_t *kib)
{
	FILE *f = fopen("/proc/self/smaps_rollup", "r");
	char line[256];
	int r = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "AnonHugePages: %" SCNu64, kib) == 1) {
			r = 0;
			break;
		}
	fclose(f);
	return r;
}

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
	uint64_t huge = 0;
	size_t n, i;
	uint64_t *p;
	bool ok = true;
	int c, r;

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
	for (i = 0; i < n / sizeof(*p); i++)
		p[i] = i * 0x9e3779b97f4a7c15ULL;
	for (i = 0; i < n / sizeof(*p); i++)
		if (p[i] != i * 0x9e3779b97f4a7c15ULL)
			ok = false;

	r = anon_huge_kib(&huge);
	if (r < 0) {
		fprintf(stderr, "thp-malloc: /proc/self/smaps_rollup: %s\n", strerror(-r));
		free(p);
		return 3;
	}
	printf("size_kib=%lu\nanon_huge_kib=%" PRIu64 "\nglibc_tunables=%s\npattern=%s\n",
	       size_mib << 10, huge, tun ? tun : "", ok ? "ok" : "bad");
	free(p);
	return ok ? 0 : 1;
}
