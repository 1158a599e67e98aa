// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * thpctl verify: does the kernel hold what thpd should hold? thpd's status
 * names its target and, while stepped down, the overlay on top of it, file
 * by file with where each value came from (docs/abi.md); each file is read
 * back from sysfs and compared, as tuned-adm verify checks a profile. The
 * same count is thpctl metrics' drift gauge (verify_drift).
 */
#include "thpctl.h"
#include "thp.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct drift {
	unsigned int checked;	/* files compared */
	unsigned int differ;	/* of them, holding another value */
	unsigned int absent;	/* files thpd names that this kernel lacks (thpd skips them too) */
};

/*
 * A file of thpd's reply, relative to the THP directory, as docs/abi.md
 * lists them: never a path elsewhere, whoever answered on the socket
 */
static bool file_ok(const char *file)
{
	static const char *const top[] = { "enabled", "defrag", "shmem_enabled" };
	unsigned long kib;
	char *end;

	for (size_t i = 0; i < sizeof(top) / sizeof(top[0]); i++)
		if (strcmp(file, top[i]) == 0)
			return true;
	if (strncmp(file, "khugepaged/", 11) == 0)
		return file[11] && strspn(file + 11, "abcdefghijklmnopqrstuvwxyz_") == strlen(file + 11);
	if (strncmp(file, "hugepages-", 10) != 0 || file[10] < '1' || file[10] > '9')
		return false;
	kib = strtoul(file + 10, &end, 10);
	return kib && (strcmp(end, "kB/enabled") == 0 || strcmp(end, "kB/shmem_enabled") == 0);
}

/* what sysfs holds in file, as text; -ENOENT when the kernel has no such file */
static int read_actual(const char *file, char *out, size_t size)
{
	char path[256], text[512];
	uint64_t v;
	int r;

	if (strncmp(file, "khugepaged/", 11) == 0) {
		r = thp_khugepaged_read(file + 11, &v);
		if (r == 0)
			snprintf(out, size, "%" PRIu64, v);
		return r;
	}
	snprintf(path, sizeof(path), THP_SYSFS_DIR "/%s", file);
	r = thp_read_file(path, text, sizeof(text));
	return r < 0 ? r : thp_parse_bracketed(text, out, size);
}

/*
 * Compare every file of thpd's status reply (its target, the overlay's
 * value where there is one) with sysfs; a row per file into rows when not
 * NULL. 0, or -errno for a reply that is not one or a file unreadable.
 */
static int compare(struct json_object *status, struct json_object *rows, struct drift *d)
{
	struct json_object *target, *overlay = NULL;

	memset(d, 0, sizeof(*d));
	if (!json_object_object_get_ex(status, "target", &target) ||
	    !json_object_is_type(target, json_type_object)) {
		log_error("thpd's status names no target: a thpd older than this thpctl?");
		return -EPROTO;
	}
	if (json_object_object_get_ex(status, "overlay", &overlay) &&
	    !json_object_is_type(overlay, json_type_object))
		overlay = NULL;
	json_object_object_foreach(target, file, tv) {
		struct json_object *v = tv, *ov, *val, *src, *row;
		char want[64], have[64];
		int r;

		if (overlay && json_object_object_get_ex(overlay, file, &ov))
			v = ov;
		if (!file_ok(file) || !json_object_object_get_ex(v, "value", &val)) {
			log_error("thpd's status names an unexpected file in its target");
			return -EPROTO;
		}
		snprintf(want, sizeof(want), "%s", json_object_get_string(val));
		src = json_object_object_get(v, "source");
		r = read_actual(file, have, sizeof(have));
		if (r == -ENOENT) {
			d->absent++;
			snprintf(have, sizeof(have), "-");
		} else if (r < 0) {
			log_error("cannot read %s/%s: %s", full_path(THP_SYSFS_DIR), file, strerror(-r));
			return r;
		} else {
			d->checked++;
			d->differ += strcmp(want, have) != 0;
		}
		if (!rows)
			continue;
		row = json_object_new_object();
		jadd_str(row, "file", file);
		jadd_str(row, "expected", want);
		jadd_str(row, "actual", r == -ENOENT ? NULL : have);
		jadd_str(row, "source", src ? json_object_get_string(src) : NULL);
		jadd_str(row, "result", r == -ENOENT ? "absent" : strcmp(want, have) ? "DRIFT" : "ok");
		json_object_array_add(rows, row);
	}
	return 0;
}

int verb_verify(struct verb_args *a)
{
	struct json_object *status, *o, *rows, *ad, *st;
	struct drift d;
	const char *why;
	int r = thpctl_call("status", NULL, &status, &why);

	if (r < 0)
		return EXIT_FAIL;
	if (r == 0) {
		log_error("thpd is not running (%s at %s): there is no target to verify against",
			  why, thpctl_socket_path());
		return EXIT_FAIL;
	}
	o = json_object_new_object();
	rows = json_object_new_array();
	r = compare(status, rows, &d);
	if (r < 0) {
		json_object_put(rows);
		json_object_put(o);
		json_object_put(status);
		return EXIT_FAIL;
	}
	st = json_object_object_get_ex(status, "adaptive", &ad) ?
	     json_object_object_get(ad, "state") : NULL;
	jadd_str(o, "thpd_state", st ? json_object_get_string(st) : NULL);
	json_object_object_add(o, "files", rows);
	jadd_u64(o, "checked", d.checked);
	jadd_u64(o, "drift", d.differ);
	jadd_u64(o, "absent", d.absent);
	json_object_put(status);
	if (output(o, a->json) < 0)
		return EXIT_FAIL;
	return d.differ ? EXIT_NOT_IN_EFFECT : EXIT_OK;
}

int verify_drift(struct json_object *status, unsigned int *differ)
{
	struct json_object *target;
	struct drift d;
	int r;

	/* a thpd older than this thpctl names no target: nothing to count */
	if (!json_object_object_get_ex(status, "target", &target))
		return -EPROTO;
	r = compare(status, NULL, &d);
	if (r == 0)
		*differ = d.differ;
	return r;
}
