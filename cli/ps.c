// SPDX-License-Identifier: GPL-2.0-or-later
/* thpctl ps: hugepage use per process. */
#include "thpctl.h"
#include "thp.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * One row of ps. Returns 0, -ENODATA for a process without memory (a kernel
 * thread, a zombie, one exiting), or -errno (gone, not ours to read) with
 * *what naming the file. thp_policy and thp_stat look the process's memory
 * up at each read: ESRCH there is a process that lost it since smaps_rollup
 * was read.
 */
static int ps_row(pid_t pid, const struct thp_state *st, struct json_object **out,
		  const char **what)
{
	static char buf[16384];
	char path[64], comm[COMM_SIZE];
	struct json_object *row;
	uint64_t anon;
	int r, policy;

	*out = NULL;
	*what = "comm";
	r = read_comm(pid, comm, sizeof(comm));
	if (r < 0)
		return r;
	*what = "smaps_rollup";
	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
	r = thp_read_file(path, buf, sizeof(buf));
	/* no mm: a kernel thread or a zombie (ESRCH since 5.x, empty before) */
	if (r == 0 || r == -ESRCH)
		return -ENODATA;
	if (r < 0)
		return r;
	r = thp_kv_get(buf, "AnonHugePages", &anon);
	if (r < 0)
		return r;

	row = json_object_new_object();
	if (!row)
		return -ENOMEM;
	jadd_int(row, "pid", pid);
	jadd_str(row, "comm", comm);
	if (st->has_thp_policy) {
		*what = "thp_policy";
		r = thp_policy_get(pid, &policy);
		if (r < 0)
			goto fail;
		jadd_str(row, "policy", thp_policy_name(policy));
	}
	jadd_u64(row, "anon_huge_kib", anon);
	if (st->has_thp_stat) {
		*what = "thp_stat";
		snprintf(path, sizeof(path), "/proc/%d/thp_stat", (int)pid);
		r = thp_read_file(path, buf, sizeof(buf));
		if (r < 0)
			goto fail;
		jadd_counters(row, buf, "");
	}
	*out = row;
	return 0;
fail:
	json_object_put(row);
	return r == -ESRCH ? -ENODATA : r;
}

static const char *sort_key;

static int row_cmp(const void *pa, const void *pb)
{
	struct json_object *a = *(struct json_object *const *)pa;
	struct json_object *b = *(struct json_object *const *)pb;
	struct json_object *va = NULL, *vb = NULL, *pida, *pidb;
	int c = 0;

	json_object_object_get_ex(a, sort_key, &va);
	json_object_object_get_ex(b, sort_key, &vb);
	if (json_object_is_type(va, json_type_string) || json_object_is_type(vb, json_type_string)) {
		c = strcmp(va ? json_object_get_string(va) : "", vb ? json_object_get_string(vb) : "");
	} else if (strcmp(sort_key, "pid") != 0) {
		/* counters: biggest first */
		uint64_t x = va ? json_object_get_uint64(va) : 0, y = vb ? json_object_get_uint64(vb) : 0;

		c = x < y ? 1 : x > y ? -1 : 0;
	}
	if (c == 0) {
		json_object_object_get_ex(a, "pid", &pida);
		json_object_object_get_ex(b, "pid", &pidb);
		c = json_object_get_int(pida) - json_object_get_int(pidb);
	}
	return c;
}

static const char *const stat_fields[] = {
	"thp_fault_alloc", "thp_fault_fallback", "thp_fault_fallback_charge",
	"thp_collapse_alloc", "thp_collapse_alloc_failed", "thp_split_pmd",
	"thp_zero_page_fault",
};

static const char *sort_field(const char *s, const struct thp_state *st)
{
	if (strcmp(s, "pid") == 0 || strcmp(s, "comm") == 0 || strcmp(s, "anon_huge_kib") == 0)
		return s;
	if (strcmp(s, "policy") == 0)
		return st->has_thp_policy ? s : NULL;
	if (!st->has_thp_stat)
		return NULL;
	/* a counter, with or without its "thp_" */
	for (size_t i = 0; i < sizeof(stat_fields) / sizeof(stat_fields[0]); i++)
		if (strcmp(s, stat_fields[i]) == 0 || strcmp(s, stat_fields[i] + 4) == 0)
			return stat_fields[i];
	return NULL;
}

/* The rows of ps, grown as they come and sorted before output. */
struct row_vec {
	struct json_object **v;
	size_t n, cap;
};

/* Appends row, or drops it and returns -ENOMEM. */
static int rows_push(struct row_vec *rv, struct json_object *row)
{
	if (rv->n == rv->cap) {
		size_t cap = rv->cap * 2 + 16;
		struct json_object **nv = realloc(rv->v, cap * sizeof(*nv));

		if (!nv) {
			json_object_put(row);
			return -ENOMEM;
		}
		rv->v = nv;
		rv->cap = cap;
	}
	rv->v[rv->n++] = row;
	return 0;
}

const struct option ps_options[] = {
	{ "sort", required_argument, NULL, 's' },
	{}
};

/* --sort=help: the fields this kernel gives (policy, thp_stat: the series) */
static int list_sort_fields(void)
{
	struct thp_state st;

	if (thp_state_read(&st) < 0)
		st.has_thp_policy = st.has_thp_stat = false;
	puts("pid\ncomm\nanon_huge_kib");
	if (st.has_thp_policy)
		puts("policy");
	for (size_t i = 0; st.has_thp_stat && i < sizeof(stat_fields) / sizeof(stat_fields[0]); i++)
		puts(stat_fields[i]);
	return -1;
}

int ps_option(struct verb_args *a, int opt, const char *arg)
{
	if (opt == 's' && is_help(arg))
		return list_sort_fields();
	if (opt == 's')
		a->sort = arg;
	return 0;
}

int verb_ps(struct verb_args *a)
{
	struct row_vec rv = {};
	struct json_object *rows, *out;
	const char *sort = a->sort ? a->sort : "pid";
	struct thp_state st;
	int rc = EXIT_OK;

	for (int i = 1; i < a->argc; i++) {
		pid_t pid;

		if (!parse_pid(a->argv[i], &pid))
			return usage_error("ps: invalid PID '%s'", a->argv[i]);
	}
	if (thp_state_read(&st) < 0)
		st.has_thp_policy = st.has_thp_stat = false;
	sort_key = sort_field(sort, &st);
	if (!sort_key)
		return usage_error("ps: cannot sort by '%s' (fields: pid, comm, anon_huge_kib%s%s)",
				   sort, st.has_thp_policy ? ", policy" : "",
				   st.has_thp_stat ? ", and the thp_stat counters" : "");

	if (a->argc > 1) {
		/* named processes: every failure is reported */
		for (int i = 1; i < a->argc; i++) {
			struct json_object *row;
			const char *what;
			pid_t pid;
			int r;

			parse_pid(a->argv[i], &pid);
			r = ps_row(pid, &st, &row, &what);
			if (r == -ENODATA) {
				log_error("process %d has no user memory (a kernel thread or exiting)", (int)pid);
				rc = EXIT_FAIL;
				continue;
			}
			if (r == -ENOENT && strcmp(what, "comm") == 0) {
				log_error("no process with PID %d", (int)pid);
				rc = EXIT_FAIL;
				continue;
			}
			if (r < 0) {
				char p[64];

				snprintf(p, sizeof(p), "/proc/%d/%s", (int)pid, what);
				log_error("cannot read %s: %s", full_path(p), strerror(-r));
				rc = EXIT_FAIL;
				continue;
			}
			if (rows_push(&rv, row) < 0)
				break;
		}
	} else {
		DIR *d = opendir(full_path("/proc"));
		struct dirent *de;

		if (!d) {
			log_error("cannot open %s: %s", full_path("/proc"), strerror(errno));
			return EXIT_FAIL;
		}
		while ((de = readdir(d))) {
			struct json_object *row;
			const char *what;
			pid_t pid;
			int r;

			if (!parse_pid(de->d_name, &pid))
				continue;
			/* gone, kernel threads, not ours to read: skipped silently */
			r = ps_row(pid, &st, &row, &what);
			if (r == -EFBIG) {
				/* but a file too long to read whole is said */
				char p[64];

				snprintf(p, sizeof(p), "/proc/%d/%s", (int)pid, what);
				log_error("cannot read %s: %s", full_path(p), strerror(-r));
				rc = EXIT_FAIL;
			}
			if (r < 0)
				continue;
			if (rows_push(&rv, row) < 0)
				break;
		}
		closedir(d);
	}
	if (rv.n)
		qsort(rv.v, rv.n, sizeof(*rv.v), row_cmp);
	rows = json_object_new_array();
	for (size_t i = 0; i < rv.n; i++)
		if (!rows || json_object_array_add(rows, rv.v[i]) < 0)
			json_object_put(rv.v[i]);
	free(rv.v);
	/* an object with a named array, as util-linux's -J: room for more keys */
	out = json_object_new_object();
	if (out && rows)
		json_object_object_add(out, "processes", rows);
	else
		json_object_put(rows);
	if (output(out, a->json) < 0)
		return EXIT_FAIL;
	return rc;
}
