// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * thpctl cgroups: the THP figures of every cgroup v2 memory cgroup, from its
 * memory.stat: anon_thp, shmem_thp, file_thp (bytes) and every thp_* event
 * the running kernel counts there (6.1: thp_fault_alloc, thp_collapse_alloc;
 * later kernels add more). Paths are as systemd names them, relative to the
 * cgroup2 mount (/system.slice/foo.service).
 *
 * A host may have thousands of cgroups, so the walk is bounded: --depth
 * levels below the root, and the --top largest by the sort key. The same
 * collection, under the same limits, feeds `thpctl metrics` (the
 * cardinality rule in thpctl(1)). Anyone may name, nest and chmod their
 * own delegated cgroups: one that cannot be read is skipped and counted,
 * never the end of the walk, and the walk keeps its place on the heap.
 */
#include "thpctl.h"
#include "thp.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define CGROUP_ROOT "/sys/fs/cgroup"
/*
 * memory.stat is about 1.5 KiB on 6.1 and 4 KiB on 6.18, and grows with
 * every kernel: far more than it will ever be, yet a bound
 */
#define MEMORY_STAT_MAX (1024 * 1024)

/* the byte figures, in memory.stat's order and names */
static const char *const thp_bytes[] = { "anon_thp", "file_thp", "shmem_thp" };

const struct option cgroups_options[] = {
	{ "sort", required_argument, NULL, 's' },
	{ "depth", required_argument, NULL, 'd' },
	{ "top", required_argument, NULL, 'n' },
	{ "all", no_argument, NULL, 'a' },
	{}
};

static int parse_limit(const char *verb, const char *opt, const char *arg, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < 0 || v > INT_MAX)
		return usage_error("%s: --%s needs a number >= 0, not '%s'", verb, opt, arg);
	*out = (int)v;
	return 0;
}

static int list_sort_keys(void);

int cgroups_option(struct verb_args *a, int opt, const char *arg)
{
	switch (opt) {
	case 's':
		if (is_help(arg))
			return list_sort_keys();
		a->sort = arg;
		return 0;
	case 'd':
		a->cg_depth_set = true;
		return parse_limit(a->argv[0], "depth", arg, &a->cg_depth);
	case 'n':
		a->cg_top_set = true;
		return parse_limit(a->argv[0], "top", arg, &a->cg_top);
	case 'a':
		a->cg_all = true;
		return 0;
	}
	return EXIT_USAGE;
}

void cgroups_limits(const struct verb_args *a, int *depth, int *top)
{
	*depth = a->cg_depth_set ? a->cg_depth : CGROUPS_DEFAULT_DEPTH;
	*top = a->cg_top_set ? a->cg_top : CGROUPS_DEFAULT_TOP;
}

static uint64_t field(struct json_object *row, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(row, key, &v))
		return 0;
	return json_object_get_uint64(v);
}

/* THP memory of a row: what the default order ranks by */
static uint64_t thp_total(struct json_object *row)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < sizeof(thp_bytes) / sizeof(thp_bytes[0]); i++)
		sum += field(row, thp_bytes[i]);
	return sum;
}

/* does the row hold THP memory or count any THP event? */
static bool row_has_thp(struct json_object *row)
{
	json_object_object_foreach(row, k, v) {
		if (json_object_is_type(v, json_type_string))
			continue;
		if ((strncmp(k, "thp_", 4) == 0 || strstr(k, "_thp")) && json_object_get_uint64(v))
			return true;
	}
	return false;
}

/* one memory.stat line: a byte figure or a thp_* event into row */
static void row_line(struct json_object *row, char *line)
{
	char *sp = strchr(line, ' '), *end;
	uint64_t v;
	bool bytes = false;

	if (!sp)
		return;
	*sp = '\0';
	for (size_t i = 0; i < sizeof(thp_bytes) / sizeof(thp_bytes[0]); i++)
		bytes |= strcmp(line, thp_bytes[i]) == 0;
	if (!bytes && strncmp(line, "thp_", 4) != 0)
		return;
	errno = 0;
	v = strtoull(sp + 1, &end, 10);
	if (errno || end == sp + 1)
		return;
	jadd_u64(row, line, v);
}

/*
 * One cgroup's row: "cgroup" (its path, "/" for the root), "thp" (the sum
 * of the byte figures), the byte figures and the thp_* events of its
 * memory.stat, read a line at a time. -ENOENT when it has no memory.stat
 * (memory controller not enabled there), -EFBIG when memory.stat is larger
 * than MEMORY_STAT_MAX, -ENAMETOOLONG when its path is longer than PATH_MAX,
 * or what opening or reading it failed with.
 */
static int read_row(const char *rel, struct json_object **out)
{
	char rpath[PATH_MAX], path[PATH_MAX], line[256];
	struct json_object *row;
	size_t total = 0;
	bool whole = true;	/* line starts a line of the file */
	FILE *f;
	int r = 0;

	if ((size_t)snprintf(rpath, sizeof(rpath), CGROUP_ROOT "%s/memory.stat", rel) >= sizeof(rpath))
		return -ENAMETOOLONG;
	r = thp_path(path, sizeof(path), rpath);
	if (r < 0)
		return r;
	f = fopen(path, "re");
	if (!f)
		return -errno;
	row = json_object_new_object();
	if (!row) {
		fclose(f);
		return -ENOMEM;
	}
	jadd_str(row, "cgroup", *rel ? rel : "/");
	jadd_u64(row, "thp", 0);
	while (fgets(line, sizeof(line), f)) {
		size_t len = strlen(line);
		bool ends = len && line[len - 1] == '\n';

		total += len;
		if (total > MEMORY_STAT_MAX) {
			r = -EFBIG;
			break;
		}
		/* a line longer than any of memory.stat's: none of ours, skipped whole */
		if (whole && ends) {
			line[len - 1] = '\0';
			row_line(row, line);
		}
		whole = ends;
	}
	if (!r && ferror(f))
		r = errno ? -errno : -EIO;
	fclose(f);
	if (r < 0) {
		json_object_put(row);
		return r;
	}
	jadd_u64(row, "thp", thp_total(row));
	*out = row;
	return 0;
}

/*
 * The walk is iterative, over a stack of the cgroups still to visit (their
 * paths on the heap): no depth of tree, however large --depth is, can
 * exhaust the C stack. A path longer than PATH_MAX is not opened.
 */
struct pending {
	char *rel;		/* "" for the root, else "/a/b" */
	int depth;
};

struct walk {
	struct json_object *rows;
	int max_depth;
	struct cgroups_count count;
	struct pending *stack;
	size_t n, cap;
};

static int push(struct walk *w, const char *parent, const char *name, int depth)
{
	char *rel;

	if (w->n == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 64;
		struct pending *s = reallocarray(w->stack, cap, sizeof(*s));

		if (!s)
			return -ENOMEM;
		w->stack = s;
		w->cap = cap;
	}
	if (asprintf(&rel, "%s%s%s", parent, name ? "/" : "", name ? name : "") < 0)
		return -ENOMEM;
	w->stack[w->n++] = (struct pending){ rel, depth };
	return 0;
}

/*
 * A child directory (the cgroups below this one): a directory whose name
 * does not start with '.', never a symlink
 */
static bool child_dir(DIR *d, const struct dirent *de)
{
	struct stat st;

	if (de->d_name[0] == '.')
		return false;
	if (de->d_type != DT_UNKNOWN)
		return de->d_type == DT_DIR;
	return fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

/*
 * One cgroup: its row, and its children pushed when within the depth. What
 * cannot be read (memory.stat or the directory: permissions, size, path
 * length) counts one skipped and the walk goes on. 0 or -ENOMEM.
 */
static int visit(struct walk *w, const struct pending *p)
{
	char rdir[PATH_MAX], dir[PATH_MAX];
	struct json_object *row = NULL;
	struct dirent *de;
	bool skipped = false;
	DIR *d;
	int r = read_row(p->rel, &row);

	if (r == 0) {
		w->count.seen++;
		json_object_array_add(w->rows, row);
	} else if (r == -ENOMEM) {
		return r;
	} else if (r != -ENOENT) {
		skipped = true;
	}
	if (p->depth < w->max_depth) {
		if ((size_t)snprintf(rdir, sizeof(rdir), CGROUP_ROOT "%s", p->rel) >= sizeof(rdir) ||
		    thp_path(dir, sizeof(dir), rdir) < 0) {
			d = NULL;
			errno = ENAMETOOLONG;
		} else {
			d = opendir(dir);
		}
		if (!d)
			skipped |= errno != ENOENT;	/* ENOENT: removed meanwhile */
		while (d && (de = readdir(d))) {
			if (!child_dir(d, de))
				continue;
			if (push(w, p->rel, de->d_name, p->depth + 1) < 0) {
				closedir(d);
				return -ENOMEM;
			}
		}
		if (d)
			closedir(d);
	}
	w->count.skipped += skipped;
	return 0;
}

static int walk(struct walk *w)
{
	int r = push(w, "", NULL, 0);

	while (r == 0 && w->n > 0) {
		struct pending p = w->stack[--w->n];

		r = visit(w, &p);
		free(p.rel);
	}
	while (w->n > 0)
		free(w->stack[--w->n].rel);
	free(w->stack);
	w->stack = NULL;
	return r;
}

static const char *sort_key;

static int row_cmp(const void *pa, const void *pb)
{
	struct json_object *a = *(struct json_object *const *)pa;
	struct json_object *b = *(struct json_object *const *)pb;
	const char *ca = json_object_get_string(json_object_object_get(a, "cgroup"));
	const char *cb = json_object_get_string(json_object_object_get(b, "cgroup"));

	if (strcmp(sort_key, "cgroup") != 0) {
		uint64_t va = field(a, sort_key), vb = field(b, sort_key);

		if (va != vb)
			return va < vb ? 1 : -1;	/* largest first */
	}
	return strcmp(ca, cb);
}

static bool sort_key_valid(const char *key)
{
	if (strcmp(key, "cgroup") == 0 || strcmp(key, "thp") == 0 || strncmp(key, "thp_", 4) == 0)
		return true;
	for (size_t i = 0; i < sizeof(thp_bytes) / sizeof(thp_bytes[0]); i++)
		if (strcmp(key, thp_bytes[i]) == 0)
			return true;
	return false;
}

int cgroups_collect(const struct verb_args *a, struct json_object **out,
		    struct cgroups_count *count)
{
	struct walk w = { .rows = json_object_new_array() };
	struct json_object *kept;
	size_t n;
	int top, r;

	cgroups_limits(a, &w.max_depth, &top);
	sort_key = a->sort ? a->sort : "thp";
	if (!sort_key_valid(sort_key)) {
		json_object_put(w.rows);
		return -EINVAL;
	}
	if (!w.rows)
		return -ENOMEM;
	r = walk(&w);
	if (r < 0) {
		json_object_put(w.rows);
		return r;
	}
	json_object_array_sort(w.rows, row_cmp);
	kept = json_object_new_array();
	n = json_object_array_length(w.rows);
	for (size_t i = 0; kept && i < n; i++) {
		struct json_object *row = json_object_array_get_idx(w.rows, i);

		if (top && json_object_array_length(kept) >= (size_t)top)
			break;
		if (!a->cg_all && !row_has_thp(row))
			continue;
		json_object_array_add(kept, json_object_get(row));
	}
	json_object_put(w.rows);
	if (!kept)
		return -ENOMEM;
	*out = kept;
	*count = w.count;
	return 0;
}

/*
 * --sort=help: thp and cgroup, then the figures of the first memory.stat
 * below the root (the byte figures and the thp_* events this kernel counts),
 * or the byte figures alone where there is none.
 */
static int list_sort_keys(void)
{
	struct verb_args one = { .cg_depth = 1, .cg_depth_set = true, .cg_top_set = true,
				 .cg_all = true };
	struct json_object *rows = NULL;
	struct cgroups_count count;

	puts("thp\ncgroup");
	if (cgroups_collect(&one, &rows, &count) == 0) {
		for (size_t i = 0; i < json_object_array_length(rows); i++) {
			struct json_object *row = json_object_array_get_idx(rows, i);

			if (strcmp(json_object_get_string(json_object_object_get(row, "cgroup")), "/") == 0)
				continue;
			json_object_object_foreach(row, k, v) {
				(void)v;
				if (strcmp(k, "cgroup") && strcmp(k, "thp"))
					puts(k);
			}
			json_object_put(rows);
			return -1;
		}
		json_object_put(rows);
	}
	for (size_t i = 0; i < sizeof(thp_bytes) / sizeof(thp_bytes[0]); i++)
		puts(thp_bytes[i]);
	return -1;
}

int verb_cgroups(struct verb_args *a)
{
	struct json_object *o, *rows;
	struct cgroups_count count;
	int depth, top, r;

	if (!thp_exists(CGROUP_ROOT "/cgroup.controllers")) {
		log_error("no cgroup v2 hierarchy at %s", full_path(CGROUP_ROOT));
		return EXIT_FAIL;
	}
	r = cgroups_collect(a, &rows, &count);
	if (r == -EINVAL)
		return usage_error("cgroups: cannot sort by '%s' (cgroup, thp, anon_thp, "
				   "file_thp, shmem_thp or a thp_* event)", a->sort);
	if (r < 0) {
		log_error("cannot read the cgroups under %s: %s", full_path(CGROUP_ROOT),
			  strerror(-r));
		return EXIT_FAIL;
	}
	cgroups_limits(a, &depth, &top);
	o = json_object_new_object();
	jadd_int(o, "depth", depth);
	jadd_int(o, "top", top);
	jadd_u64(o, "memory_cgroups", count.seen);
	jadd_u64(o, "skipped", count.skipped);
	jadd_u64(o, "shown", json_object_array_length(rows));
	json_object_object_add(o, "cgroups", rows);
	return output(o, a->json) < 0 ? EXIT_FAIL : EXIT_OK;
}
