// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * thpctl run: set a THP policy on ourselves, then exec the command (no fork:
 * its exit status and signals are its own). Patched kernel: the per-process
 * policy (prctl PR_SET_THP_MM_POLICY, inherited across exec). Stock kernel:
 * glibc's malloc tunable for --advise, PR_SET_THP_DISABLE for --never.
 * --advised-only is Linux 6.18's PR_SET_THP_DISABLE with
 * PR_THP_DISABLE_EXCEPT_ADVISED on any kernel that has it: no hugepages
 * except in memory the program advises (MADV_HUGEPAGE, MADV_COLLAPSE).
 * Before --advise or --advised-only it checks what they can reach now, per
 * size, and refuses (exit 3) where that is nothing, unless -q.
 */
#include "thpctl.h"
#include "thp.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#define HUGETLB_TUNABLE "glibc.malloc.hugetlb"

/* Linux 6.18, include/uapi/linux/prctl.h: PR_SET_THP_DISABLE's arg3 */
#ifndef PR_THP_DISABLE_EXCEPT_ADVISED
#define PR_THP_DISABLE_EXCEPT_ADVISED (1 << 1)
#endif

/*
 * GLIBC_TUNABLES is "name=value:name=value"; return a new string with
 * glibc.malloc.hugetlb=1 replacing any earlier setting of it, others kept in
 * order. Caller frees.
 */
static char *merge_tunables(const char *old)
{
	size_t size = (old ? strlen(old) : 0) + sizeof(HUGETLB_TUNABLE "=1") + 1;
	char *out = malloc(size), *copy, *item, *save = NULL;

	if (!out)
		return NULL;
	out[0] = '\0';
	copy = strdup(old ? old : "");
	if (!copy) {
		free(out);
		return NULL;
	}
	for (item = strtok_r(copy, ":", &save); item; item = strtok_r(NULL, ":", &save)) {
		size_t n = strlen(HUGETLB_TUNABLE);

		if (strncmp(item, HUGETLB_TUNABLE, n) == 0 && (item[n] == '=' || item[n] == '\0'))
			continue;
		strcat(out, item);
		strcat(out, ":");
	}
	strcat(out, HUGETLB_TUNABLE "=1");
	free(copy);
	return out;
}

const struct option run_options[] = {
	{ "advise", no_argument, NULL, 'a' },
	{ "advised-only", no_argument, NULL, 'A' },
	{ "never", no_argument, NULL, 'n' },
	{ "default", no_argument, NULL, 'd' },
	{ "quiet", no_argument, NULL, 'q' },
	{}
};

int run_option(struct verb_args *a, int opt, const char *arg)
{
	int p;

	if (opt == 'q') {
		a->quiet = true;
		return 0;
	}
	p = opt == 'n' ? PR_THP_MM_POLICY_NEVER :
		opt == 'd' ? PR_THP_MM_POLICY_DEFAULT :
		opt == 'A' ? RUN_ADVISED_ONLY : PR_THP_MM_POLICY_ADVISE;

	(void)arg;
	if (a->policy_set && a->policy != p)
		return usage_error("run: --advise, --advised-only, --never and --default are mutually exclusive");
	a->policy = p;
	a->policy_set = true;
	return 0;
}

/* " 64K 2M": the sizes of m used at fault in MADV_HUGEPAGE regions */
static const char *advised_sizes(const struct thp_model *m, char *buf, size_t size)
{
	size_t used = 0;
	char name[16];

	buf[0] = '\0';
	for (int i = 0; i < m->nsizes && used < size; i++)
		if (thp_size_anon_eff(m, &m->size[i]) != THP_EFF_NEVER)
			used += (size_t)snprintf(buf + used, size - used, " %s",
						 thp_size_name(m->size[i].kib, name, sizeof(name)));
	return buf;
}

/* run --advise / --advised-only: thpctl.h */
int run_check_reach(int policy, bool quiet, const char *who, const char *refused)
{
	bool has_policy = thp_exists("/proc/self/thp_policy");
	const char *opt = policy == RUN_ADVISED_ONLY ? "--advised-only" : "--advise";
	struct thp_model m;
	char sizes[160];
	const char *top;
	int r = thp_model_read_controls(&m);

	if (r < 0) {
		if (r != -ENOENT) {
			/* cannot tell: run it, and say why nothing was checked */
			if (!quiet)
				log_error("%s: cannot read %s (%s): what it reaches is unknown", opt,
					  full_path(THP_SYSFS_DIR), strerror(-r));
			return EXIT_OK;
		}
		if (quiet)
			return EXIT_OK;
		log_error("%s: this kernel has no transparent hugepages (no %s): %s would get "
			  "none%s", opt, full_path(THP_SYSFS_DIR "/enabled"), who, refused);
		return EXIT_NOT_IN_EFFECT;
	}
	top = thp_choice_value(&m.enabled);
	advised_sizes(&m, sizes, sizeof(sizes));
	if (!sizes[0] || (policy == PR_THP_MM_POLICY_ADVISE && !has_policy && strcmp(top, "never") == 0)) {
		if (quiet)
			return EXIT_OK;
		if (sizes[0])
			log_error("--advise: this kernel has no per-process THP policy, and glibc's "
				  "glibc.malloc.hugetlb=1 advises malloc's memory only while the top-level "
				  "enabled is madvise or always; it is never (only%s %s used): %s would get "
				  "no hugepages%s", sizes, strchr(sizes + 1, ' ') ? "are" : "is", who,
				  refused);
		else
			log_error("%s: no hugepage size is used at fault on this host now (enabled is "
				  "%s%s): %s would get no hugepages until one is ('thpctl enable madvise')%s",
				  opt, top, m.per_size ? ", and no size's own value turns one on" : "", who,
				  refused);
		return EXIT_NOT_IN_EFFECT;
	}
	if (policy == PR_THP_MM_POLICY_ADVISE && !has_policy && !quiet)
		log_error("--advise: this kernel has no per-process THP policy: "
			  HUGETLB_TUNABLE "=1 makes glibc's malloc advise the memory it takes from "
			  "the kernel (hugepages of%s), and covers only memory from malloc: memory the "
			  "program maps itself, other allocators and static programs get none", sizes);
	return EXIT_OK;
}

int verb_run(struct verb_args *a)
{
	int policy = a->policy_set ? a->policy : PR_THP_MM_POLICY_ADVISE;
	bool has_policy = thp_exists("/proc/self/thp_policy");
	char **cmd = a->argv + 1;
	int r;

	/*
	 * Only what run needs: the launch cost is the figure that matters
	 * here (make bench), so the sizes' controls only, no stats.
	 */
	if (policy == PR_THP_MM_POLICY_ADVISE || policy == RUN_ADVISED_ONLY) {
		r = run_check_reach(policy, a->quiet, cmd[0], "; not run (-q runs it anyway)");
		if (r != EXIT_OK)
			return r;
	}
	if (policy == RUN_ADVISED_ONLY) {
		/* before 6.18 any arg3 is EINVAL: say so rather than run the command otherwise */
		if (prctl(PR_SET_THP_DISABLE, 1, PR_THP_DISABLE_EXCEPT_ADVISED, 0, 0) < 0) {
			if (errno == EINVAL)
				log_error("run: --advised-only needs PR_THP_DISABLE_EXCEPT_ADVISED "
					  "(Linux 6.18 or later), which this kernel does not have; "
					  "%s not run", cmd[0]);
			else
				log_error("prctl(PR_SET_THP_DISABLE, 1, PR_THP_DISABLE_EXCEPT_ADVISED): %s",
					  strerror(errno));
			return EXIT_FAIL;
		}
	} else if (has_policy) {
		if (prctl(PR_SET_THP_MM_POLICY, policy, 0, 0, 0) < 0) {
			log_error("prctl(PR_SET_THP_MM_POLICY, %s): %s", thp_policy_name(policy),
				  strerror(errno));
			return EXIT_FAIL;
		}
	} else if (policy == PR_THP_MM_POLICY_ADVISE) {
		char *t = merge_tunables(getenv("GLIBC_TUNABLES"));

		if (!t || setenv("GLIBC_TUNABLES", t, 1) < 0) {
			log_error("setting GLIBC_TUNABLES: %s", strerror(errno));
			free(t);
			return EXIT_FAIL;
		}
		free(t);
	} else {
		/* stock --never disables THP; --default undoes an inherited --never */
		if (prctl(PR_SET_THP_DISABLE, policy == PR_THP_MM_POLICY_NEVER, 0, 0, 0) < 0) {
			log_error("prctl(PR_SET_THP_DISABLE): %s", strerror(errno));
			return EXIT_FAIL;
		}
	}

	fflush(stdout);
	execvp(cmd[0], cmd);
	/* as shells report it: 127 not found, 126 found but not runnable */
	if (errno == ENOENT && !strchr(cmd[0], '/')) {
		log_error("%s: command not found", cmd[0]);
		return 127;
	}
	log_error("%s: %s", cmd[0], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
