// SPDX-License-Identifier: GPL-2.0-or-later
/* Aligned anonymous mappings: the regions the test helpers and benchmarks fault in. */
#include "thp.h"

#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

int thp_mmap_aligned(size_t size, size_t align, int flags, void **addr)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), head;
	char *raw, *p;

	if (!size || align < page || (align & (align - 1)))
		return -EINVAL;
	if (size > SIZE_MAX - align - page)
		return -ENOMEM;
	raw = mmap(NULL, size + align, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
	if (raw == MAP_FAILED)
		return -errno;
	p = (char *)(((uintptr_t)raw + align - 1) & ~(uintptr_t)(align - 1));
	/*
	 * The slack on either side goes, so the region is a VMA of its own. At
	 * least a page of it is always after the region (raw is page aligned).
	 * Should a split fail (max_map_count), the slack merely stays mapped.
	 */
	head = (size_t)(p - raw);
	if (head)
		munmap(raw, head);
	munmap(p + ((size + page - 1) & ~(page - 1)), align - head);
	*addr = p;
	return 0;
}
