// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * thpctl policy: show or set a process's THP policy (/proc/PID/thp_policy on
 * the patched kernel; on a stock kernel only shown, from THP_enabled: in
 * /proc/PID/status), and --collapse its memory now (collapse.c).
 */
#include "thpctl.h"
#include "thp.h"
#include "thp-collapse.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct option policy_options[] = {
	{ "collapse", no_argument, NULL, 'c' },
	{}
};

int policy_option(struct verb_args *a, int opt, const char *arg)
{
	(void)arg;
	if (opt == 'c')
		a->collapse = true;
	return 0;
}

/*
 * After setting advise: the process gets hugepages only where a size is
 * used at fault, so with none the setting changes nothing yet (said,
 * EXIT_NOT_IN_EFFECT); its state is shown all the same.
 */
static int check_advise(pid_t pid)
{
	struct thp_model m;

	if (thp_model_read_controls(&m) < 0 || thp_model_anon_on(&m))
		return EXIT_OK;
	log_error("process %d's policy is now advise, but no hugepage size is used at fault "
		  "(enabled is %s%s): it gets no hugepages until one is, e.g. 'thpctl enable madvise'",
		  (int)pid, thp_choice_value(&m.enabled),
		  m.per_size ? " and no size's own value turns one on" : "");
	return EXIT_NOT_IN_EFFECT;
}

int verb_policy(struct verb_args *a)
{
	struct json_object *o, *c = NULL;
	struct thp_state st;
	char comm[COMM_SIZE], path[64];
	int policy, r, thp_enabled = -1, rc = EXIT_OK;
	pid_t pid;

	if (!parse_pid(a->argv[1], &pid))
		return usage_error("policy: invalid PID '%s'", a->argv[1]);
	if (a->argc > 2 && is_help(a->argv[2])) {
		/* settable only where the series' thp_policy file is */
		for (int p = 0; thp_exists("/proc/self/thp_policy") &&
				strcmp(thp_policy_name(p), "unknown") != 0; p++)
			puts(thp_policy_name(p));
		return EXIT_OK;
	}
	if (a->argc > 2 && thp_policy_from_name(a->argv[2]) < 0)
		return usage_error("policy: invalid policy '%s' (expected default, advise or never)",
				   a->argv[2]);
	if (thp_state_read(&st) < 0)
		st.has_thp_policy = false;
	if (!st.has_thp_policy && a->argc > 2) {
		log_error("this kernel has no per-process THP policy (/proc/PID/thp_policy): another "
			  "process's THP state can be read, not set; start a program with "
			  "'thpctl run --never' (or --advised-only on Linux 6.18+) instead");
		return EXIT_USAGE;
	}
	r = read_comm(pid, comm, sizeof(comm));
	if (r == -ENOENT) {
		log_error("no process with PID %d", (int)pid);
		return EXIT_FAIL;
	}
	if (r < 0) {
		snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
		log_error("cannot read %s: %s", full_path(path), strerror(-r));
		return EXIT_FAIL;
	}
	if (!st.has_thp_policy) {
		/*
		 * A stock kernel's per-process THP state (Linux 5.0+): 0 when
		 * PR_SET_THP_DISABLE turned THP off (thpctl run --never). Linux
		 * 6.18's "only where advised" (PR_THP_DISABLE_EXCEPT_ADVISED) also
		 * reads 1: the kernel shows it to the process itself only.
		 */
		thp_enabled = thp_proc_thp_enabled(pid);
		/* --collapse alone works on any kernel with MADV_COLLAPSE */
		if ((thp_enabled == -ENODATA || thp_enabled == -ENOENT) && !a->collapse) {
			log_error("per-process THP policy is not supported by this kernel "
				  "(no /proc/PID/thp_policy, no THP_enabled: in /proc/PID/status)");
			return EXIT_USAGE;
		}
		if (thp_enabled < 0 && thp_enabled != -ENODATA && thp_enabled != -ENOENT) {
			snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
			log_error("cannot read %s: %s", full_path(path), strerror(-thp_enabled));
			return EXIT_FAIL;
		}
	}
	snprintf(path, sizeof(path), "/proc/%d/thp_policy", (int)pid);
	if (a->argc > 2) {
		r = thp_policy_set(pid, thp_policy_from_name(a->argv[2]));
		if (r < 0) {
			/* the kernel's rule (docs/abi.md), as for process_madvise() */
			log_error("failed to write '%s' to %s: %s%s", a->argv[2], full_path(path),
				  strerror(-r),
				  r == -EPERM ? " (setting a policy needs CAP_SYS_NICE)" :
				  r == -EACCES ? " (setting a policy needs the right to read the "
						 "process's memory maps: its user, or CAP_SYS_PTRACE)" :
				  r == -ESRCH ? " (the process has no memory: a kernel thread or "
						"exiting)" : "");
			return EXIT_FAIL;
		}
		if (thp_policy_from_name(a->argv[2]) == PR_THP_MM_POLICY_ADVISE)
			rc = check_advise(pid);
	}
	o = json_object_new_object();
	jadd_int(o, "pid", pid);
	jadd_str(o, "comm", comm);
	if (st.has_thp_policy) {
		r = thp_policy_get(pid, &policy);
		if (r < 0) {
			json_object_put(o);
			log_error("cannot read %s: %s", full_path(path), strerror(-r));
			return EXIT_FAIL;
		}
		jadd_str(o, "policy", thp_policy_name(policy));
	} else if (thp_enabled >= 0) {
		/* what a stock kernel shows: disabled (never) or not (default) */
		jadd_str(o, "policy", thp_policy_name(thp_enabled ? PR_THP_MM_POLICY_DEFAULT :
							     PR_THP_MM_POLICY_NEVER));
		jadd_int(o, "thp_enabled", thp_enabled);
	}
	if (a->collapse) {
		c = json_object_new_object();
		r = collapse_process(pid, c);
		if (r < 0) {
			json_object_put(c);
			json_object_put(o);
			return EXIT_FAIL;
		}
		if (o)
			json_object_object_add(o, "collapse", c);
		else
			json_object_put(c);
	}
	return output(o, a->json) < 0 ? EXIT_FAIL : rc;
}
