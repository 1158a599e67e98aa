/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * page-check: a hugepage-aligned region in which every 4 KiB page carries a
 * pattern derived from (region id, page, generation), and the expected state
 * of each page (unmapped, zero, a generation) is tracked outside the region,
 * so a test can split, collapse, swap and fork it and then prove that no byte
 * was lost. thp-stress's workers are its users.
 */
#ifndef THP_PAGE_CHECK_H
#define THP_PAGE_CHECK_H

#include <stddef.h>
#include <stdint.h>

/* expected state of a 4 KiB page; >= PAGE_GEN_FIRST: pattern of that generation */
#define PAGE_UNMAPPED 0u
#define PAGE_ZERO 1u
#define PAGE_GEN_FIRST 2u

struct region {
	uint8_t *base;
	size_t size;		/* multiple of TEST_HPAGE */
	size_t npages;
	uint64_t id;
	uint32_t *st;		/* per 4 KiB page: PAGE_* or generation */
	uint8_t *bad;		/* per page: corruption already reported */
	uint32_t next_gen;
};

/* what region_check found wrong in one page */
struct page_damage {
	size_t page;
	uint32_t state;		/* what the page should hold */
	uint64_t bytes;		/* bytes that differ */
	size_t word;		/* the first differing 8-byte word */
	uint64_t want, got;	/* that word */
};

/*
 * Map mib MiB (at least a hugepage, rounded up to hugepages) 2 MiB-aligned
 * as a VMA of its own, MADV_HUGEPAGE, and fill every page with the first
 * generation. 0 or -errno.
 */
int region_init(struct region *r, size_t mib, uint64_t id);
uint32_t region_new_gen(struct region *r);
/* write generation gen's pattern into page p and expect it there */
void region_fill_page(struct region *r, size_t p, uint32_t gen);
/* the caller changed page p behind the pattern (DONTNEED, munmap): expect st */
void region_set_state(struct region *r, size_t p, uint32_t st);
/*
 * Check pages [first, first + n): returns the damaged bytes found in pages
 * not already reported; each such page is passed to report (if not NULL)
 * once, until it is written again. *verified (if not NULL) grows by the
 * bytes checked.
 */
uint64_t region_check(struct region *r, size_t first, size_t n, uint64_t *verified,
		      void (*report)(const struct region *r, const struct page_damage *d));

#endif
