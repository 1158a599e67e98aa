// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Collapse on fixtures: the engine's smaps parser, what may be collapsed
 * (per VMA, per PMD range from pagemap counts), the ranking (libthp,
 * lib/thp-collapse.c), and thpd's debt machine, budget arithmetic, PSI
 * parsing and [Collapse] configuration (daemon/collapse-budget.c,
 * config.c). A process read through a fake /proc (THP_ROOT) checks the
 * plan end to end.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../daemon/collapse-budget.h"
#include "../../daemon/config.h"
#include "tap.h"
#include "thp-collapse.h"
#include "thp.h"

#define S 1000000ULL
#define MIB (1ULL << 20)
#define PMD (2UL << 20)

/* smaps of a 6.1 process: the fields in the kernel's order (fs/proc/task_mmu.c) */
static const char smaps_61[] =
	"55d0c0a00000-55d0c0a21000 r--p 00000000 fe:01 1311 /usr/bin/thp-touch\n"
	"Size:                132 kB\n"
	"KernelPageSize:        4 kB\n"
	"MMUPageSize:           4 kB\n"
	"Rss:                 132 kB\n"
	"Pss:                 132 kB\n"
	"Shared_Clean:          0 kB\n"
	"Shared_Dirty:          0 kB\n"
	"Private_Clean:       132 kB\n"
	"Private_Dirty:         0 kB\n"
	"Referenced:          132 kB\n"
	"Anonymous:             0 kB\n"
	"LazyFree:              0 kB\n"
	"AnonHugePages:         0 kB\n"
	"ShmemPmdMapped:        0 kB\n"
	"FilePmdMapped:         0 kB\n"
	"Shared_Hugetlb:        0 kB\n"
	"Private_Hugetlb:       0 kB\n"
	"Swap:                  0 kB\n"
	"SwapPss:               0 kB\n"
	"Locked:                0 kB\n"
	"THPeligible:    0\n"
	"VmFlags: rd mr mw me dw sd \n"
	/* the heap: eligible, 3 MiB of small pages, one 2 MiB range inside */
	"55d0c1000000-55d0c1400000 rw-p 00000000 00:00 0                          [heap]\n"
	"Size:               4096 kB\n"
	"Anonymous:          3072 kB\n"
	"AnonHugePages:         0 kB\n"
	"Swap:                  0 kB\n"
	"THPeligible:    1\n"
	"VmFlags: rd wr mr mw me ac sd \n"
	/* 256 MiB faulted as 4 KiB pages, 16 MiB collapsed already */
	"7f2a40000000-7f2a50000000 rw-p 00000000 00:00 0 \n"
	"Size:             262144 kB\n"
	"Anonymous:        262144 kB\n"
	"AnonHugePages:     16384 kB\n"
	"Swap:                  0 kB\n"
	"THPeligible:    1\n"
	"VmFlags: rd wr mr mw me ac sd \n"
	/* MADV_NOHUGEPAGE: the kernel says 0 as well */
	"7f2a60000000-7f2a62000000 rw-p 00000000 00:00 0 \n"
	"Anonymous:         32768 kB\n"
	"AnonHugePages:         0 kB\n"
	"THPeligible:    0\n"
	"VmFlags: rd wr mr mw me ac sd nh \n"
	/* plain memory under enabled=madvise: not eligible, MADV_COLLAPSE would take it */
	"7f2a64000000-7f2a66000000 rw-p 00000000 00:00 0                          [anon:cache]\n"
	"Anonymous:         32768 kB\n"
	"AnonHugePages:         0 kB\n"
	"THPeligible:    0\n"
	"VmFlags: rd wr mr mw me ac sd \n"
	/* a private file mapping written to: anonymous pages, not an anonymous VMA */
	"7f2a70000000-7f2a70400000 rw-p 00000000 fe:01 4242 /var/lib/data file (deleted)\n"
	"Anonymous:          4096 kB\n"
	"THPeligible:    1\n"
	"VmFlags: rd wr mr mw me ac sd \n"
	/* too small to hold a PMD range */
	"7f2a80001000-7f2a80200000 rw-p 00000000 00:00 0 \n"
	"Anonymous:          2044 kB\n"
	"AnonHugePages:         0 kB\n"
	"THPeligible:    1\n"
	"VmFlags: rd wr mr mw me ac sd hg \n"
	"7ffc1e2e0000-7ffc1e301000 rw-p 00000000 00:00 0                          [stack]\n"
	"Anonymous:            16 kB\n"
	"THPeligible:    0\n"
	"VmFlags: rd wr mr mw me gd ac \n"
	"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n"
	"Anonymous:             0 kB\n"
	"THPeligible:    0\n"
	"VmFlags: ex \n";

/* feed text to the parser a line at a time, as getline() would */
static int parse_all(const char *text, struct thp_smaps_vma *v, int max)
{
	struct thp_smaps_parser p;
	const char *line = text;
	int n = 0;

	thp_smaps_init(&p);
	while (*line) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line + 1) : strlen(line);

		if (thp_smaps_line(&p, line, len, &v[n]) && n < max - 1)
			n++;
		line += len;
	}
	if (thp_smaps_end(&p, &v[n]))
		n++;
	return n;
}

static void test_smaps(void)
{
	struct thp_smaps_vma v[16];
	struct thp_smaps_parser p;
	int n = parse_all(smaps_61, v, 16);

	ok(n == 9, "9 VMAs parsed (%d)", n);
	ok(v[0].start == 0x55d0c0a00000UL && v[0].end == 0x55d0c0a21000UL &&
	   strcmp(v[0].perms, "r--p") == 0 && v[0].inode == 1311 &&
	   strcmp(v[0].name, "/usr/bin/thp-touch") == 0 && v[0].thp_eligible == 0,
	   "header: addresses, perms, inode, name");
	ok(strcmp(v[1].name, "[heap]") == 0 && v[1].anon_kib == 3072 && v[1].thp_eligible == 1 &&
	   !v[1].hugepage && !v[1].nohugepage, "the heap's fields");
	ok(v[2].name[0] == '\0' && v[2].anon_kib == 262144 && v[2].anon_huge_kib == 16384,
	   "an anonymous VMA: no name (trailing blank), Anonymous and AnonHugePages");
	ok(v[3].nohugepage && !v[3].hugepage, "VmFlags nh");
	ok(v[6].hugepage && !v[6].nohugepage, "VmFlags hg");
	ok(strcmp(v[5].name, "/var/lib/data file (deleted)") == 0, "a file name with blanks");
	ok(v[8].start == 0xffffffffff600000UL && v[8].thp_eligible == 0, "vsyscall at the top");

	/* a kernel without THPeligible (before 4.19): -1, never taken as eligible */
	thp_smaps_init(&p);
	thp_smaps_line(&p, "7f0000000000-7f0000400000 rw-p 00000000 00:00 0\n", 48, &v[0]);
	thp_smaps_line(&p, "Anonymous: 4096 kB\n", 19, &v[0]);
	ok(thp_smaps_end(&p, &v[0]) == 1 && v[0].thp_eligible == -1 && v[0].anon_kib == 4096,
	   "no THPeligible line: -1");
	ok(thp_smaps_end(&p, &v[0]) == 0, "the end once");

	/* lines that are not smaps: ignored, no VMA made up */
	thp_smaps_init(&p);
	ok(thp_smaps_line(&p, "Anonymous: 5 kB\n", 16, &v[0]) == 0 && thp_smaps_end(&p, &v[0]) == 0,
	   "a field before any header is ignored");
	thp_smaps_init(&p);
	ok(thp_smaps_line(&p, "ffff-1 rw-p 0 0:0 0\n", 20, &v[0]) == 0 &&
	   thp_smaps_end(&p, &v[0]) == 0, "end below start: not a header");
	ok(thp_smaps_line(&p, "12345678901234567890-1 rw-p 0 0:0 0\n", 36, &v[0]) == 0 &&
	   thp_smaps_end(&p, &v[0]) == 0, "an address over 64 bits: not a header");
	ok(thp_smaps_line(&p, "1000-2000 rw-p 0 0:0\n", 21, &v[0]) == 0 &&
	   thp_smaps_end(&p, &v[0]) == 0, "no inode: not a header");
	ok(thp_smaps_line(&p, "1000-2000 rwzp 0 0:0 0\n", 23, &v[0]) == 0 &&
	   thp_smaps_end(&p, &v[0]) == 0, "perms the kernel never prints: not a header");
	ok(thp_smaps_line(&p, "1000-2000 rw-p 0 0:0 0 [he\0ap]\n", 31, &v[0]) == 0 &&
	   thp_smaps_end(&p, &v[0]) == 0, "a NUL byte: not smaps at all");
	/* a name longer than the field: cut, and said */
	{
		char line[200];
		int len = snprintf(line, sizeof(line), "1000-2000 rw-p 0 00:00 0 [anon:%0100d]\n", 7);

		thp_smaps_init(&p);
		thp_smaps_line(&p, line, (size_t)len, &v[0]);
		ok(thp_smaps_end(&p, &v[0]) == 1 && v[0].name_cut &&
		   strlen(v[0].name) == sizeof(v[0].name) - 1, "a long name is cut and marked");
	}
	/* a line without its newline (the last of a file) and not NUL-terminated */
	{
		char buf[64];

		memcpy(buf, "2000-3000 rw-p 0 00:00 0XXXX", 28);
		thp_smaps_init(&p);
		thp_smaps_line(&p, buf, 24, &v[0]);
		ok(thp_smaps_end(&p, &v[0]) == 1 && v[0].end == 0x3000 && v[0].name[0] == '\0',
		   "len bounds the line, not a NUL");
	}
}

static void test_vma_check(void)
{
	struct thp_smaps_vma v[16];
	struct thp_collapse_span sp;
	int n = parse_all(smaps_61, v, 16);
	enum thp_skip k[16], a[16];

	(void)n;
	for (int i = 0; i < 9; i++) {
		k[i] = thp_collapse_vma_check(&v[i], THP_SCOPE_KERNEL, false, PMD, &sp);
		a[i] = thp_collapse_vma_check(&v[i], THP_SCOPE_ASKED, false, PMD, &sp);
	}
	ok(k[0] == THP_SKIP_NOT_ANON && a[0] == THP_SKIP_NOT_ANON, "a read-only file mapping: no");
	ok(thp_collapse_vma_check(&v[1], THP_SCOPE_KERNEL, false, PMD, &sp) == THP_SKIP_NONE &&
	   sp.start == 0x55d0c1000000UL && sp.end == 0x55d0c1400000UL && sp.small_bytes == 3 * MIB,
	   "the heap: two whole PMD ranges, 3 MiB small");
	ok(thp_collapse_vma_check(&v[2], THP_SCOPE_KERNEL, false, PMD, &sp) == THP_SKIP_NONE &&
	   sp.small_bytes == 240 * MIB && sp.huge_kib == 16384,
	   "256 MiB with 16 MiB huge: 240 MiB to gain");
	ok(k[3] == THP_SKIP_NOHUGEPAGE && a[3] == THP_SKIP_NOHUGEPAGE,
	   "MADV_NOHUGEPAGE: never, whoever asks");
	ok(k[4] == THP_SKIP_NOT_ELIGIBLE && a[4] == THP_SKIP_NONE,
	   "not THPeligible: not for thpd; an administrator's request stands in for the mode");
	ok(k[5] == THP_SKIP_NOT_ANON, "a private file mapping with anonymous pages: no");
	ok(k[6] == THP_SKIP_TOO_SMALL && a[6] == THP_SKIP_TOO_SMALL, "no whole PMD range: no");
	ok(k[7] == THP_SKIP_NOT_ELIGIBLE && a[7] == THP_SKIP_TOO_SMALL, "the stack");
	ok(k[8] == THP_SKIP_NOT_ANON, "vsyscall");
	ok(thp_collapse_vma_check(&v[1], THP_SCOPE_KERNEL, true, PMD, &sp) == THP_SKIP_PROCESS &&
	   thp_collapse_vma_check(&v[4], THP_SCOPE_ASKED, true, PMD, &sp) == THP_SKIP_PROCESS,
	   "a process that disabled THP: never, whoever asks");
	v[1].anon_huge_kib = 4096;
	v[1].anon_kib = 4096;
	ok(thp_collapse_vma_check(&v[1], THP_SCOPE_KERNEL, false, PMD, &sp) == THP_SKIP_NO_SMALL,
	   "all huge already: nothing to gain");
	v[1].anon_huge_kib = 8192;
	ok(thp_collapse_vma_check(&v[1], THP_SCOPE_KERNEL, false, PMD, &sp) == THP_SKIP_NO_SMALL,
	   "AnonHugePages above Anonymous (a racy read): nothing, not a wrap-around");
	ok(thp_collapse_vma_check(&v[2], THP_SCOPE_KERNEL, false, 3 << 20, &sp) == THP_SKIP_TOO_SMALL,
	   "a PMD size that is not a power of two: nothing");
	ok(strcmp(thp_skip_name(THP_SKIP_NOHUGEPAGE), "nohugepage") == 0 &&
	   strcmp(thp_skip_name(THP_SKIP_N), "?") == 0, "reason names");
}

static void test_ranges(void)
{
	static const struct thp_collapse_limits defaults = { 511, 64, 256 };
	static const struct thp_collapse_limits none = THP_COLLAPSE_NO_LIMITS;
	uint64_t e[512];
	struct thp_range_count c;

	memset(e, 0, sizeof(e));
	thp_pagemap_count(e, 512, &c);
	ok(c.present == 0 && thp_collapse_range_check(&c, 512, &none) == THP_SKIP_EMPTY,
	   "nothing mapped: skipped even when unlimited (MADV_COLLAPSE would only fail)");
	e[0] = 1ULL << 63 | 1ULL << 56;
	thp_pagemap_count(e, 512, &c);
	ok(c.present == 1 && c.shared == 0 &&
	   thp_collapse_range_check(&c, 512, &defaults) == THP_SKIP_NONE,
	   "one page under max_ptes_none 511: collapsed, as khugepaged would");
	ok(thp_collapse_range_check(&c, 512, &(struct thp_collapse_limits){ 0, 64, 256 }) ==
		   THP_SKIP_NONE_PTES, "max_ptes_none 0: only full ranges");
	for (int i = 0; i < 512; i++)
		e[i] = 1ULL << 63 | 1ULL << 56;
	thp_pagemap_count(e, 512, &c);
	ok(thp_collapse_range_check(&c, 512, &(struct thp_collapse_limits){ 0, 0, 0 }) == THP_SKIP_NONE,
	   "a full, exclusive range passes the strictest limits");
	for (int i = 0; i < 65; i++)
		e[i] = 1ULL << 62 | 0x1234;
	thp_pagemap_count(e, 512, &c);
	ok(c.swapped == 65 && c.present == 447 &&
	   thp_collapse_range_check(&c, 512, &defaults) == THP_SKIP_SWAP_PTES,
	   "65 swapped out, max_ptes_swap 64: skipped");
	for (int i = 0; i < 512; i++)
		e[i] = 1ULL << 63 | (i < 257 ? 0 : 1ULL << 56);
	thp_pagemap_count(e, 512, &c);
	ok(c.shared == 257 && thp_collapse_range_check(&c, 512, &defaults) == THP_SKIP_SHARED_PTES &&
	   thp_collapse_range_check(&c, 512, &none) == THP_SKIP_NONE,
	   "257 shared, max_ptes_shared 256: skipped; unlimited: tried");
}

static void test_rank(void)
{
	struct thp_collapse_rank r[] = {
		{ .index = 0, .pid = 10, .small_bytes = 8 * MIB, .start_time = 500 },
		{ .index = 1, .pid = 11, .small_bytes = 256 * MIB, .start_time = 900 },
		{ .index = 2, .pid = 12, .small_bytes = 8 * MIB, .start_time = 100 },
		{ .index = 3, .pid = 9, .small_bytes = 8 * MIB, .start_time = 100 },
	};
	struct thp_collapse_span s[] = {
		{ .start = 0x4000000, .small_bytes = 2 * MIB },
		{ .start = 0x1000000, .small_bytes = 2 * MIB },
		{ .start = 0x8000000, .small_bytes = 64 * MIB },
	};

	thp_collapse_rank_sort(r, 4);
	ok(r[0].pid == 11 && r[1].pid == 9 && r[2].pid == 12 && r[3].pid == 10 && r[0].index == 1,
	   "biggest gain first, then the longest-lived, then the lower PID: %d %d %d %d",
	   (int)r[0].pid, (int)r[1].pid, (int)r[2].pid, (int)r[3].pid);
	thp_collapse_span_sort(s, 3);
	ok(s[0].start == 0x8000000 && s[1].start == 0x1000000 && s[2].start == 0x4000000,
	   "spans: most small bytes first, then by address");
}

static void test_debt(void)
{
	struct thpd_config cfg;
	struct thpd_collapse_config *c = &cfg.collapse;
	struct thpd_debt d;

	thpd_config_defaults(&cfg);
	c->watch_timeout_usec = 60 * S;
	thpd_debt_init(&d);
	ok(!thpd_debt_counters(&d, 1000, 1 * S) && d.state == THPD_DEBT_NONE,
	   "the first sample is the baseline, no debt");
	ok(!thpd_debt_counters(&d, 1000, 20 * S) && d.state == THPD_DEBT_NONE,
	   "unchanged counters: no debt, nothing to watch");
	ok(thpd_debt_counters(&d, 1128, 40 * S) && d.state == THPD_DEBT_OWED && d.times == 1 &&
	   strstr(d.reason, "128 "), "128 fallbacks: owed (%s)", d.reason);
	ok(thpd_debt_watch(&d, c, 0, 16, false, 41 * S) == THPD_WATCH_WAIT,
	   "no free blocks: wait");
	ok(thpd_debt_watch(&d, c, 16, 16, false, 42 * S) == THPD_WATCH_WAIT,
	   "free blocks only up to the reserve: wait");
	ok(thpd_debt_watch(&d, c, 800, 16, true, 43 * S) == THPD_WATCH_WAIT,
	   "free blocks, but stepped down: wait");
	ok(thpd_debt_watch(&d, c, 800, 16, false, 44 * S) == THPD_WATCH_PASS,
	   "free blocks above the reserve: a pass");
	thpd_debt_pass_begin(&d, 1130, 44 * S);
	ok(d.state == THPD_DEBT_PASS && !thpd_debt_counters(&d, 1140, 50 * S),
	   "during a pass the counters do not start another debt");
	thpd_debt_pass_end(&d, false, 51 * S);
	ok(d.state == THPD_DEBT_OWED, "a pass stopped early: still owed");
	thpd_debt_pass_begin(&d, 1140, 52 * S);
	thpd_debt_pass_end(&d, true, 53 * S);
	ok(d.state == THPD_DEBT_NONE && !thpd_debt_counters(&d, 1140, 60 * S),
	   "paid; counters as at the pass: no new debt");
	ok(thpd_debt_counters(&d, 1141, 70 * S) && d.times == 2, "one more fallback: owed again");
	ok(thpd_debt_watch(&d, c, 0, 16, false, 129 * S) == THPD_WATCH_WAIT &&
	   thpd_debt_watch(&d, c, 0, 16, false, 130 * S) == THPD_WATCH_FORGIVE &&
	   d.state == THPD_DEBT_NONE, "no free blocks for WatchTimeoutSec: forgiven");
	thpd_debt_raise(&d, "stepped up", 200 * S);
	ok(d.state == THPD_DEBT_OWED && strcmp(d.reason, "stepped up") == 0 && d.times == 3,
	   "a step-up owes a pass");
	thpd_debt_pass_begin(&d, 1141, 201 * S);
	thpd_debt_raise(&d, "stepped up", 202 * S);
	ok(d.state == THPD_DEBT_PASS, "raised during a pass: the pass goes on");
	ok(strcmp(thpd_debt_state_name(THPD_DEBT_OWED), "owed") == 0 &&
	   strcmp(thpd_debt_state_name(THPD_DEBT_PASS), "collapsing") == 0 &&
	   strcmp(thpd_debt_state_name(THPD_DEBT_NONE), "idle") == 0, "state names");
}

static void test_budget(void)
{
	struct thpd_config cfg;
	struct thpd_collapse_config *c = &cfg.collapse;
	struct thpd_budget b;
	uint64_t w;

	thpd_config_defaults(&cfg);
	c->max_rate_mib = 100;
	c->cpu_percent = 50;
	thpd_budget_reset(&b, c, 10 * S);
	ok(thpd_budget_wait(&b, c, 10 * S) == 0 && b.bytes == (int64_t)(100 * MIB) &&
	   b.cpu_usec == 500000, "full: a second's worth of each (100 MiB, 0.5 s CPU)");
	thpd_budget_charge(&b, 150 * MIB, 100000);
	w = thpd_budget_wait(&b, c, 10 * S);
	ok(w > 500000 && w <= 510000, "150 MiB at 100 MiB/s: wait just over half a second (%llu us)",
	   (unsigned long long)w);
	ok(thpd_budget_wait(&b, c, 10 * S + w) == 0, "... then go");
	thpd_budget_reset(&b, c, 20 * S);
	thpd_budget_charge(&b, 2 * MIB, 900000);
	w = thpd_budget_wait(&b, c, 20 * S);
	ok(w >= 800000 && w <= 800010,
	   "0.9 s of CPU at 50%%: 0.4 s below zero, 0.8 s to pay back (%llu us)", (unsigned long long)w);
	ok(thpd_budget_wait(&b, c, 100 * S) == 0 && b.bytes == (int64_t)(100 * MIB) &&
	   b.cpu_usec == 500000, "a long idle refills a second's worth, no more");
	/* over 10 s at most rate x 10 s + a second's worth + one step */
	{
		uint64_t t = 200 * S, done = 0;

		thpd_budget_reset(&b, c, t);
		while (t < 210 * S) {
			w = thpd_budget_wait(&b, c, t);
			if (w) {
				t += w;
				continue;
			}
			thpd_budget_charge(&b, PMD, 1000);
			done += PMD;
		}
		ok(done <= 1100 * MIB + PMD && done >= 1000 * MIB,
		   "10 s of 2 MiB steps at 100 MiB/s: %llu MiB", (unsigned long long)(done / MIB));
	}
	c->max_rate_mib = 0;
	c->cpu_percent = 100;
	thpd_budget_reset(&b, c, 300 * S);
	thpd_budget_charge(&b, 1ULL << 40, 3600 * S);
	ok(thpd_budget_wait(&b, c, 300 * S) == 0, "no limits: never waits");
	c->max_rate_mib = 1;
	c->cpu_percent = 1;
	thpd_budget_reset(&b, c, 400 * S);
	thpd_budget_charge(&b, 1ULL << 62, 1ULL << 62);
	w = thpd_budget_wait(&b, c, 400 * S);
	ok(w > 0 && w <= 3600 * S + S, "a huge charge is capped: an hour to pay back (%llu s)",
	   (unsigned long long)(w / S));
}

static void test_psi(void)
{
	uint64_t t = 0;

	ok(thpd_psi_some_total("some avg10=0.00 avg60=0.00 avg300=0.00 total=123456\n"
			       "full avg10=0.00 avg60=0.00 avg300=0.00 total=99\n", &t) == 0 &&
	   t == 123456, "some total");
	ok(thpd_psi_some_total("full avg10=0.00 avg60=0.00 avg300=0.00 total=99\n", &t) == -EBADMSG,
	   "no some line first: refused");
	ok(thpd_psi_some_total("some avg10=0.00\nfull avg10=0.00 total=5\n", &t) == -EBADMSG,
	   "a total on the full line is not some's");
	ok(thpd_psi_some_total("some total=12x\n", &t) == -EBADMSG &&
	   thpd_psi_some_total("some total=\n", &t) == -EBADMSG, "not a number: refused");
}

struct diags {
	int warnings, fatal;
	char last[512];
};

static void report(void *userdata, enum thpd_diag_level level, const char *file,
		   unsigned int line, const char *msg)
{
	struct diags *d = userdata;

	(void)file;
	(void)line;
	if (level == THPD_DIAG_FATAL)
		d->fatal++;
	else
		d->warnings++;
	snprintf(d->last, sizeof(d->last), "%s", msg);
}

static void test_config(void)
{
	struct thpd_config *cfg = malloc(sizeof(*cfg));
	struct diags dg = { 0 };
	struct thpd_diag diag = { .report = report, .userdata = &dg };

	thpd_config_defaults(cfg);
	ok(!cfg->collapse.enabled && !cfg->collapse.all && cfg->collapse.max_rate_mib == 256 &&
	   cfg->collapse.cpu_percent == 25 && cfg->collapse.watch_usec == 250000 &&
	   cfg->collapse.reserve_blocks == -1, "defaults: off, rules, 256 MiB/s, 25%%, 250 ms");
	thpd_config_finish(cfg, NULL, &diag);
	ok(cfg->collapse.reserve_blocks == 16, "the reserve defaults to MinFreeBlocks (16)");

	thpd_config_defaults(cfg);
	ok(thpd_config_parse_string(cfg, "t.conf",
				    "[Collapse]\nEnabled=yes\nProcesses=all\nMaxRateMiB=64\n"
				    "CPUQuota=10%\nWatchIntervalSec=100ms\nWatchTimeoutSec=2min\n"
				    "ReserveFreeBlocks=4\n", &diag) == 0 && dg.warnings == 0,
	   "every key parses");
	ok(cfg->collapse.enabled && cfg->collapse.all && cfg->collapse.max_rate_mib == 64 &&
	   cfg->collapse.cpu_percent == 10 && cfg->collapse.watch_usec == 100000 &&
	   cfg->collapse.watch_timeout_usec == 120 * S && cfg->collapse.reserve_blocks == 4,
	   "... into their fields");
	ok(thpd_config_parse_string(cfg, "t.conf", "[Collapse]\nCPUQuota=50\nProcesses=rules\n",
				    &diag) == 0 && cfg->collapse.cpu_percent == 50 && !cfg->collapse.all,
	   "CPUQuota without %%, Processes=rules");
	dg.warnings = 0;
	ok(thpd_config_parse_string(cfg, "t.conf",
				    "[Collapse]\nCPUQuota=0%\nCPUQuota=101%\nCPUQuota=%\nProcesses=some\n"
				    "WatchIntervalSec=1ms\nMaxRateMiB=-1\nBogus=1\n", &diag) == 0 &&
	   dg.warnings == 7 && dg.fatal == 0 && cfg->collapse.cpu_percent == 50,
	   "bad values and keys: warnings, the last good value stays (%s)", dg.last);
	free(cfg);
}

/* a fake /proc/PID with the files the engine reads */
static void write_file(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

static void test_plan(void)
{
	char root[] = "/tmp/thp-collapse-test.XXXXXX", dir[PATH_MAX], cmd[PATH_MAX + 16];
	struct thp_collapse_plan plan;
	int r;

	if (!mkdtemp(root)) {
		perror("mkdtemp");
		exit(1);
	}
	snprintf(dir, sizeof(dir), "%s/proc/4242", root);
	snprintf(cmd, sizeof(cmd), "%s/proc", root);
	mkdir(cmd, 0755);
	mkdir(dir, 0755);
	write_file(dir, "smaps", smaps_61);
	write_file(dir, "status", "Name:\tthp-touch\nUid:\t0\t0\t0\t0\nTHP_enabled:\t1\nThreads:\t1\n");
	write_file(dir, "stat",
		   "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 77777 "
		   "268435456 65536 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n");
	thp_set_root(root);
	r = thp_collapse_plan_read(4242, THP_SCOPE_KERNEL, PMD, &plan);
	ok(r == 0 && plan.n_spans == 2 && plan.spans[0].small_bytes == 240 * MIB &&
	   plan.spans[1].small_bytes == 3 * MIB && plan.small_bytes == 243 * MIB &&
	   plan.anon_huge_kib == 16384 && plan.start_time == 77777 && !plan.thp_disabled,
	   "the kernel's scope: heap and the big region, biggest first; start time past a comm "
	   "with parentheses (r %d, %zu spans)", r, plan.n_spans);
	ok(plan.vmas_skipped[THP_SKIP_NOHUGEPAGE] == 1 && plan.vmas_skipped[THP_SKIP_NOT_ELIGIBLE] == 2 &&
	   plan.vmas_skipped[THP_SKIP_NOT_ANON] == 3 && plan.vmas_skipped[THP_SKIP_TOO_SMALL] == 1,
	   "what it left alone, by reason");
	thp_collapse_plan_free(&plan);
	r = thp_collapse_plan_read(4242, THP_SCOPE_ASKED, PMD, &plan);
	ok(r == 0 && plan.n_spans == 3 && plan.small_bytes == 275 * MIB,
	   "the asked scope adds the plain memory the mode leaves out");
	thp_collapse_plan_free(&plan);
	write_file(dir, "status", "Name:\tthp-touch\nTHP_enabled:\t0\n");
	r = thp_collapse_plan_read(4242, THP_SCOPE_ASKED, PMD, &plan);
	ok(r == 0 && plan.thp_disabled && plan.n_spans == 0 &&
	   plan.vmas_skipped[THP_SKIP_PROCESS] == 6, "THP_enabled: 0: nothing, whoever asks");
	thp_collapse_plan_free(&plan);
	ok(thp_proc_thp_enabled(4242) == 0, "THP_enabled: read");
	write_file(dir, "status", "Name:\tthp-touch\n");
	ok(thp_proc_thp_enabled(4242) == -ENODATA, "no THP_enabled: line: -ENODATA");
	ok(thp_collapse_plan_read(4243, THP_SCOPE_KERNEL, PMD, &plan) == -ENOENT,
	   "a process that is gone: -ENOENT");
	thp_set_root("");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd) != 0)
		fprintf(stderr, "# could not remove %s\n", root);
}

int main(void)
{
	test_smaps();
	test_vma_check();
	test_ranges();
	test_rank();
	test_debt();
	test_budget();
	test_psi();
	test_config();
	test_plan();
	return tap_done();
}
