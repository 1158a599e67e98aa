// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Least privilege in process. thpd runs as root (the THP sysfs files are
 * root-owned 0644: writing them takes uid 0, no capability) and keeps only:
 *
 *   CAP_SYS_RESOURCE  PSI triggers with windows that are not a multiple of
 *                     2 s (kernel/sched/psi.c: unprivileged triggers are
 *                     limited to 2 s windows and slower aggregation)
 *   CAP_SYS_NICE      writing /proc/PID/thp_policy: the kernel asks for it,
 *                     as for process_madvise() (docs/abi.md)
 *   CAP_DAC_OVERRIDE  opening that file for writing when another user owns
 *                     the process: it is 0644 and owned by the process's
 *                     user, as oom_score_adj is
 *   CAP_SYS_PTRACE    the PTRACE_MODE_READ check of that write, and reading
 *                     /proc/PID/exe, for other users' processes
 *   CAP_NET_ADMIN     subscribing to the proc connector (exec events)
 *   CAP_SYS_NICE      process_madvise(MADV_COLLAPSE) on another process
 *                     ([Collapse]), with CAP_SYS_PTRACE for the
 *                     PTRACE_MODE_READ check (and smaps, pagemap) of other
 *                     users' processes and non-dumpable ones
 *
 * CAP_SYS_NICE, CAP_DAC_OVERRIDE, CAP_SYS_PTRACE and CAP_NET_ADMIN only
 * when the kernel has the per-process policy: on a stock kernel rules can
 * never be applied, so they are dropped as well. CAP_SYS_NICE and
 * CAP_SYS_PTRACE also when the configuration at start turns [Collapse] on.
 * Everything else leaves the permitted, effective, inheritable, ambient and
 * (when CAP_SETPCAP allows) bounding sets.
 */
#include "caps.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>

#include <sys/capability.h>

#include "log.h"

int thpd_drop_caps(bool rules_possible, bool collapse, char *kept, size_t size)
{
	cap_value_t want[6] = { CAP_SYS_RESOURCE };
	size_t n_want = 1, n_keep = 0, off = 0;
	cap_value_t keep[sizeof(want) / sizeof(want[0])];
	cap_flag_value_t have;
	cap_t cur, c;
	int r = 0;

	/* CAP_SYS_NICE and CAP_SYS_PTRACE serve both rules and [Collapse] */
	if (rules_possible || collapse) {
		want[n_want++] = CAP_SYS_NICE;
		want[n_want++] = CAP_SYS_PTRACE;
	}
	if (rules_possible) {
		want[n_want++] = CAP_DAC_OVERRIDE;
		want[n_want++] = CAP_NET_ADMIN;
	}
	kept[0] = '\0';
	cur = cap_get_proc();
	if (!cur)
		return -errno;
	for (size_t i = 0; i < n_want; i++) {
		char *name = cap_to_name(want[i]);

		if (cap_get_flag(cur, want[i], CAP_PERMITTED, &have) == 0 && have == CAP_SET) {
			keep[n_keep++] = want[i];
			off += (size_t)snprintf(kept + off, off < size ? size - off : 0, "%s%s",
						off ? " " : "", name ? name : "?");
		} else {
			log_warn("%s is not available: %s", name ? name : "?",
				 want[i] == CAP_SYS_RESOURCE ?
					 "pressure windows must be multiples of 2 s" :
				 want[i] == CAP_SYS_NICE ? "nothing can be collapsed" :
				 collapse && !rules_possible ? "other users' processes cannot be collapsed" :
					 "per-application rules may fail");
		}
		cap_free(name);
	}

	/* the bounding set first, while CAP_SETPCAP may still be there */
	if (cap_get_flag(cur, CAP_SETPCAP, CAP_EFFECTIVE, &have) == 0 && have == CAP_SET) {
		for (cap_value_t v = 0; v < (cap_value_t)cap_max_bits(); v++) {
			bool k = false;

			for (size_t i = 0; i < n_keep; i++)
				k |= keep[i] == v;
			if (!k && cap_drop_bound(v) < 0 && errno != EINVAL) {
				r = -errno;
				break;
			}
		}
	}
	cap_free(cur);
	if (r < 0)
		return r;

	c = cap_init();
	if (!c)
		return -errno;
	if (n_keep && (cap_set_flag(c, CAP_PERMITTED, (int)n_keep, keep, CAP_SET) < 0 ||
		       cap_set_flag(c, CAP_EFFECTIVE, (int)n_keep, keep, CAP_SET) < 0))
		r = -errno;
	if (r == 0 && cap_set_proc(c) < 0)
		r = -errno;
	cap_free(c);
	if (r < 0)
		return r;
	if (cap_reset_ambient() < 0 && errno != EINVAL)
		return -errno;
	/* thpd never executes anything; make sure nothing could gain privileges */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	return 0;
}
