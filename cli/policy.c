// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * thpctl policy: show or set a process's THP policy (/proc/PID/thp_policy on
 * the patched kernel), and --collapse its memory now (collapse.c).
 */
#include "thpctl.h"
#include "thp.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
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

int verb_policy(struct verb_args *a)
{
	struct json_object *o, *c = NULL;
	struct thp_state st;
	char comm[COMM_SIZE], path[64];
	int policy, r;
	pid_t pid;

	if (!parse_pid(a->argv[1], &pid))
		return usage_error("policy: invalid PID '%s'", a->argv[1]);
	if (a->argc > 2 && thp_policy_from_name(a->argv[2]) < 0)
		return usage_error("policy: invalid policy '%s' (expected default, advise or never)",
				   a->argv[2]);
	if (thp_state_read(&st) < 0)
		st.has_thp_policy = false;
	/* --collapse alone works on a stock kernel too */
	if (!st.has_thp_policy && !(a->collapse && a->argc == 2)) {
		log_error("per-process THP policy is not supported by this kernel");
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
	snprintf(path, sizeof(path), "/proc/%d/thp_policy", (int)pid);
	if (a->argc > 2) {
		r = thp_policy_set(pid, thp_policy_from_name(a->argv[2]));
		if (r < 0) {
			log_error("failed to write '%s' to %s: %s", a->argv[2], full_path(path),
				  strerror(-r));
			return EXIT_FAIL;
		}
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
	}
	if (a->collapse) {
		c = json_object_new_object();
		r = thp_collapse(pid, c);
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
	return output(o, a->json) < 0 ? EXIT_FAIL : EXIT_OK;
}
