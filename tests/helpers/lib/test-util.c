// SPDX-License-Identifier: GPL-2.0-or-later
/* test-util: the test helpers' shared readers and patterns (test-util.h) */
#include "test-util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "thp.h"

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000 + (uint64_t)t.tv_nsec;
}

uint64_t now_ms(void)
{
	return now_ns() / 1000000;
}

uint64_t now_us(void)
{
	return now_ns() / 1000;
}

void sleep_ms(uint64_t ms)
{
	struct timespec ts = { .tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

long minflt(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

static uint64_t rng_state = 1;

void rnd_seed(uint64_t seed)
{
	rng_state = seed ? seed : 1;
}

uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1DULL;
}

uint64_t rnd_below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

void pattern_fill(void *p, size_t len, uint64_t seed)
{
	uint64_t *w = p;

	for (size_t i = 0; i < len / 8; i++)
		w[i] = pattern_word(seed, i);
}

bool pattern_check(const void *p, size_t from, size_t to, uint64_t seed, const char *who)
{
	const uint64_t *w = p;

	for (size_t i = from / 8; i < to / 8; i++)
		if (w[i] != pattern_word(seed, i)) {
			fprintf(stderr, "%s: offset %zu is %#" PRIx64 ", expected %#" PRIx64 "\n",
				who, i * 8, w[i], pattern_word(seed, i));
			return false;
		}
	return true;
}

long anon_huge_kib(const void *addr)
{
	long kib;
	int r = thp_smaps_vma_kib(0, (unsigned long)addr, "AnonHugePages", &kib);

	return r < 0 ? r : kib;
}

long anon_huge_kib_total(void)
{
	char buf[4096];
	uint64_t kib;
	int r = thp_read_file("/proc/self/smaps_rollup", buf, sizeof(buf));

	if (r >= 0)
		r = thp_kv_get(buf, "AnonHugePages", &kib);
	return r < 0 ? r : (long)kib;
}

int stats_read(const char *path, const char *prefix, struct stat_set *set)
{
	char buf[32768], *line, *save = NULL;
	size_t plen = strlen(prefix);
	int r = thp_read_file(path, buf, sizeof(buf));

	set->n = 0;
	if (r < 0)
		return r;
	for (line = strtok_r(buf, "\n", &save); line && set->n < STATS_MAX;
	     line = strtok_r(NULL, "\n", &save)) {
		char name[48], val[32], *end;
		unsigned long long v;
		int i = set->n;

		if (sscanf(line, "%47s %31s", name, val) != 2 || strncmp(name, prefix, plen) != 0)
			continue;
		errno = 0;
		v = strtoull(val, &end, 10);
		set->bad[i] = val[0] == '-' || *end || errno || v > (1ULL << 62);
		set->val[i] = set->bad[i] ? 0 : v;
		memcpy(set->name[i], name, sizeof(name));
		set->n++;
	}
	return 0;
}

bool stats_get(const struct stat_set *set, const char *name, uint64_t *val)
{
	for (int i = 0; i < set->n; i++)
		if (strcmp(set->name[i], name) == 0) {
			*val = set->val[i];
			return true;
		}
	return false;
}

int64_t stats_delta(const struct stat_set *before, const struct stat_set *after,
		    const char *name)
{
	uint64_t a, b;

	if (!stats_get(before, name, &b) || !stats_get(after, name, &a))
		return 0;
	return (int64_t)(a - b);
}

long long stat_value(const char *path, const char *name)
{
	char buf[32768];
	uint64_t v;
	int r = thp_read_file(path, buf, sizeof(buf));

	if (r < 0 || thp_kv_get(buf, name, &v) < 0)
		return -1;
	return (long long)v;
}
