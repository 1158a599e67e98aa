// SPDX-License-Identifier: GPL-2.0-or-later
/* page-check: regions whose every page's content is known (page-check.h) */
#include "page-check.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "test-util.h"
#include "thp.h"

#define PPH (TEST_HPAGE / TEST_PAGE)

static uint64_t page_seed(const struct region *r, size_t p, uint32_t gen)
{
	return mix64(r->id * 0x100000001B3ULL ^ (uint64_t)p << 24 ^ gen);
}

void region_fill_page(struct region *r, size_t p, uint32_t gen)
{
	pattern_fill(r->base + p * TEST_PAGE, TEST_PAGE, page_seed(r, p, gen));
	r->st[p] = gen;
	r->bad[p] = 0;
}

void region_set_state(struct region *r, size_t p, uint32_t st)
{
	r->st[p] = st;
	r->bad[p] = 0;
}

uint32_t region_new_gen(struct region *r)
{
	if (++r->next_gen < PAGE_GEN_FIRST)
		r->next_gen = PAGE_GEN_FIRST;
	return r->next_gen;
}

static unsigned int differing_bytes(uint64_t a, uint64_t b)
{
	unsigned int n = 0;
	uint64_t x = a ^ b;

	for (; x; x >>= 8)
		n += (x & 0xff) != 0;
	return n;
}

uint64_t region_check(struct region *r, size_t first, size_t n, uint64_t *verified,
		      void (*report)(const struct region *r, const struct page_damage *d))
{
	uint64_t bad = 0, checked = 0;

	for (size_t p = first; p < first + n && p < r->npages; p++) {
		const uint64_t *w = (const uint64_t *)(r->base + p * TEST_PAGE);
		uint32_t s = r->st[p];
		uint64_t seed = s == PAGE_ZERO ? 0 : page_seed(r, p, s);
		struct page_damage d = { .page = p, .state = s, .word = TEST_PAGE / 8 };

		if (s == PAGE_UNMAPPED) {
			r->bad[p] = 0;
			continue;
		}
		for (size_t i = 0; i < TEST_PAGE / 8; i++) {
			uint64_t want = s == PAGE_ZERO ? 0 : pattern_word(seed, i);

			if (w[i] == want)
				continue;
			d.bytes += differing_bytes(w[i], want);
			if (d.word == TEST_PAGE / 8) {
				d.word = i;
				d.want = want;
				d.got = w[i];
			}
		}
		checked += TEST_PAGE;
		if (d.bytes && !r->bad[p]) {
			r->bad[p] = 1;
			bad += d.bytes;
			if (report)
				report(r, &d);
		}
	}
	if (verified)
		*verified += checked;
	return bad;
}

int region_init(struct region *r, size_t mib, uint64_t id)
{
	size_t size = mib << 20;
	void *map;
	uint32_t g;
	int e;

	if (size < TEST_HPAGE)
		size = TEST_HPAGE;
	size = (size + TEST_HPAGE - 1) & ~(TEST_HPAGE - 1);
	e = thp_mmap_aligned(size, TEST_HPAGE, MAP_NORESERVE, &map);
	if (e < 0)
		return e;
	if (madvise(map, size, MADV_HUGEPAGE) < 0) {
		e = -errno;
		munmap(map, size);
		return e;
	}
	r->base = map;
	r->size = size;
	r->npages = size / TEST_PAGE;
	r->id = id;
	r->next_gen = PAGE_GEN_FIRST - 1;
	r->st = calloc(r->npages, sizeof(*r->st));
	r->bad = calloc(r->npages, sizeof(*r->bad));
	if (!r->st || !r->bad) {
		free(r->st);
		free(r->bad);
		munmap(map, size);
		return -ENOMEM;
	}
	g = region_new_gen(r);
	for (size_t p = 0; p < r->npages; p++)
		region_fill_page(r, p, g);
	return 0;
}
