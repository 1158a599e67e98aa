/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-util: what the guest test helpers and the benchmarks share, in the
 * spirit of the kernel selftests' vm_util.c: time, fault counts, the data
 * pattern a test writes and checks, and the readers of /proc counters and
 * AnonHugePages. No helper parses /proc its own way; the parsing itself is
 * libthp's (thp_read_file, thp_kv_get, thp_smaps_vma_kib).
 *
 * Functions that can fail return a non-negative value or -errno and print
 * nothing, except pattern_check(), which names the first damaged word.
 */
#ifndef THP_TEST_UTIL_H
#define THP_TEST_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TEST_PAGE 4096UL
#define TEST_HPAGE (2UL << 20)

/* --- time and faults --- */
uint64_t now_ms(void);		/* CLOCK_MONOTONIC */
uint64_t now_us(void);
void sleep_ms(uint64_t ms);	/* the whole time, across signals */
long minflt(void);		/* this process's minor faults so far (getrusage) */

/* --- xorshift64*: a per-process stream, reproducible from its seed --- */
void rnd_seed(uint64_t seed);	/* 0 is taken as 1 */
uint64_t rnd(void);
uint64_t rnd_below(uint64_t n);	/* 0 when n is 0 */
/* a 64-bit finalizer (murmur3's fmix64): seeds from (id, index, ...) */
uint64_t mix64(uint64_t x);

/*
 * --- data pattern ---
 * Word i of a region filled with seed is pattern_word(seed, i), so any
 * offset can be checked on its own and two seeds never agree on a word.
 */
static inline uint64_t pattern_word(uint64_t seed, size_t i)
{
	return (i * 0x9e3779b97f4a7c15ULL) ^ seed;
}
void pattern_fill(void *p, size_t len, uint64_t seed);
/*
 * Are bytes [from, to) of a region filled by pattern_fill(p, ..., seed)
 * intact? The first damaged word goes to stderr as "WHO: offset N is X,
 * expected Y".
 */
bool pattern_check(const void *p, size_t from, size_t to, uint64_t seed, const char *who);

/* --- AnonHugePages, KiB --- */
long anon_huge_kib(const void *addr);	/* of the VMA holding addr (smaps) */
long anon_huge_kib_total(void);		/* of the whole process (smaps_rollup) */

/*
 * --- "name value" counter files (/proc/vmstat, /proc/PID/thp_stat) ---
 * stats_read keeps the lines whose name starts with prefix. A value that is
 * not a non-negative number below 2^62 (a counter gone negative or
 * underflowed) is kept with bad set and val 0, for the caller to report.
 */
#define STATS_MAX 64
struct stat_set {
	int n;
	char name[STATS_MAX][48];
	uint64_t val[STATS_MAX];
	bool bad[STATS_MAX];
};
int stats_read(const char *path, const char *prefix, struct stat_set *set);
bool stats_get(const struct stat_set *set, const char *name, uint64_t *val);
/* after's value minus before's; 0 where either lacks the name */
int64_t stats_delta(const struct stat_set *before, const struct stat_set *after,
		    const char *name);
/* one counter read now: its value, or -1 when the file or the name is absent */
long long stat_value(const char *path, const char *name);

#endif
