// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * thpctl policy --collapse: ask the kernel to collapse a process's anonymous
 * memory into hugepages now, with process_madvise(MADV_COLLAPSE) (Linux 6.1)
 * on every populated PMD range of its private writable anonymous mappings
 * that MADV_COLLAPSE may touch: the collapse engine's "asked" scope
 * (lib/thp-collapse.h), where the administrator's request stands in for the
 * THP mode. Works on a stock kernel too; needs CAP_SYS_NICE and ptrace read
 * access.
 */
#include "thpctl.h"
#include "thp.h"
#include "thp-collapse.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the VMAs and ranges left alone, by reason: {"nohugepage": 1, ...} */
static struct json_object *skipped(const struct thp_collapse_plan *plan,
				   const struct thp_collapse_cursor *cur)
{
	struct json_object *o = json_object_new_object();

	for (int s = THP_SKIP_NONE + 1; s < THP_SKIP_N; s++) {
		unsigned int n = plan->vmas_skipped[s] + (cur ? cur->ranges_skipped[s] : 0);

		/* private file mappings and the like are not news */
		if (n && s != THP_SKIP_NOT_ANON && s != THP_SKIP_NO_SMALL)
			jadd_u64(o, thp_skip_name((enum thp_skip)s), n);
	}
	return o;
}

int collapse_process(pid_t pid, struct json_object *out)
{
	static const struct thp_collapse_limits none = THP_COLLAPSE_NO_LIMITS;
	struct thp_collapse_plan plan;
	struct thp_collapse_cursor cur;
	struct thp_collapse_step step;
	unsigned long ranges = 0, failed = 0;
	uint64_t after = 0, spans_after;
	char path[64];
	int r, last_err = 0;

	r = thp_collapse_probe();
	if (r == -EOPNOTSUPP) {
		log_error("process_madvise(MADV_COLLAPSE) is not supported by this kernel");
		return r;
	}
	if (r < 0) {
		log_error("process_madvise(MADV_COLLAPSE): %s", strerror(-r));
		return r;
	}
	r = thp_collapse_plan_read(pid, THP_SCOPE_ASKED, thp_collapse_pmd_size(), &plan);
	if (r < 0) {
		snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
		log_error("cannot read %s: %s", full_path(path), strerror(-r));
		return r;
	}
	r = thp_collapse_cursor_open(&cur, &plan, &none);
	if (r < 0) {
		log_error("pidfd_open(%d): %s", (int)pid, strerror(-r));
		thp_collapse_plan_free(&plan);
		return r;
	}
	/* best effort: a range without a free hugepage, or pinned, fails alone */
	/* one range a call: what failed is said range by range */
	while ((r = thp_collapse_next(&cur, 1, &step)) >= 0) {
		if (r == 0)
			continue;
		ranges++;
		if (step.err < 0) {
			failed++;
			last_err = -step.err;
		}
	}
	if (r != -ENODATA) {
		log_error("process_madvise(%d, MADV_COLLAPSE): %s", (int)pid, strerror(-r));
		goto out;
	}
	r = thp_collapse_plan_huge_now(&plan, &after, &spans_after);
	if (r < 0) {
		snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
		log_error("cannot read %s: %s", full_path(path), strerror(-r));
		goto out;
	}
	jadd_u64(out, "ranges", ranges);
	jadd_u64(out, "ranges_failed", failed);
	jadd_str(out, "last_error", last_err ? strerror(last_err) : NULL);
	jadd_u64(out, "anon_huge_kib_before", plan.anon_huge_kib);
	jadd_u64(out, "anon_huge_kib_after", after);
	if (out)
		json_object_object_add(out, "skipped", skipped(&plan, &cur));
	r = 0;
out:
	thp_collapse_cursor_close(&cur);
	thp_collapse_plan_free(&plan);
	return r;
}
