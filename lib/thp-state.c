// SPDX-License-Identifier: GPL-2.0-or-later
/* System THP state: enabled/defrag/mode and khugepaged knobs (docs/abi.md). */
#include "thp.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ENABLED_PATH THP_SYSFS_DIR "/enabled"
#define DEFRAG_PATH THP_SYSFS_DIR "/defrag"
#define MODE_PATH THP_SYSFS_DIR "/mode"

static int read_bracketed(const char *path, char *out, size_t size)
{
	char buf[256];
	int r = thp_read_file(path, buf, sizeof(buf));

	if (r < 0)
		return r;
	return thp_parse_bracketed(buf, out, size);
}

int thp_state_read(struct thp_state *st)
{
	char word[16], buf[32];
	int r;

	memset(st, 0, sizeof(*st));
	st->rfc = -1;
	r = read_bracketed(ENABLED_PATH, word, sizeof(word));
	if (r < 0)
		return r;
	r = thp_enabled_from_name(word);
	if (r < 0)
		return -EBADMSG;
	st->enabled = (enum thp_enabled)r;
	r = read_bracketed(DEFRAG_PATH, st->defrag, sizeof(st->defrag));
	if (r < 0)
		return r;
	if (thp_defrag_valid(st->defrag) < 0)
		return -EBADMSG;

	st->has_mode_file = thp_exists(MODE_PATH);
	st->has_thp_policy = thp_exists("/proc/self/thp_policy");
	st->has_thp_stat = thp_exists("/proc/self/thp_stat");

	if (st->has_mode_file) {
		r = thp_read_file(MODE_PATH, buf, sizeof(buf));
		if (r < 0)
			return r;
		buf[strcspn(buf, "\n")] = '\0';
		/* "per-size": the 6.12 series, the PMD size not at inherit */
		if (strcmp(buf, "0") && strcmp(buf, "1") && strcmp(buf, "2") &&
		    strcmp(buf, "never") && strcmp(buf, "custom") && strcmp(buf, "per-size"))
			return -EBADMSG;
		strcpy(st->mode, buf);	/* one of the six words above */
		st->rfc = buf[1] == '\0' && buf[0] >= '0' && buf[0] <= '2' ? buf[0] - '0' : -1;
	} else {
		snprintf(st->mode, sizeof(st->mode), "%s",
			 thp_rfc_mode(st->enabled, st->defrag));
	}
	return 0;
}

static int write_or_fail(const char *path, const char *value, const char **failed_path)
{
	int r = thp_write_file(path, value);

	if (r < 0 && failed_path)
		*failed_path = path;
	return r;
}

int thp_state_apply(const struct thp_mode_req *req, const char **failed_path)
{
	char num[4];
	int r;

	if (failed_path)
		*failed_path = NULL;
	if (req->rfc >= 0 && req->rfc <= 2 && thp_exists(MODE_PATH)) {
		/* patched kernel: the number sets enabled and defrag at once */
		snprintf(num, sizeof(num), "%d", req->rfc);
		return write_or_fail(ENABLED_PATH, num, failed_path);
	}
	r = write_or_fail(ENABLED_PATH, thp_enabled_name(req->enabled), failed_path);
	if (r < 0 || !req->defrag)
		return r;
	return write_or_fail(DEFRAG_PATH, req->defrag, failed_path);
}

int thp_defrag_apply(const char *defrag, const char **failed_path)
{
	if (failed_path)
		*failed_path = NULL;
	if (thp_defrag_valid(defrag) < 0)
		return -EINVAL;
	return write_or_fail(DEFRAG_PATH, defrag, failed_path);
}

static int khugepaged_path(const char *name, char *buf, size_t size)
{
	int n;

	if (!*name || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return -EINVAL;
	n = snprintf(buf, size, THP_SYSFS_DIR "/khugepaged/%s", name);
	return n >= 0 && (size_t)n < size ? 0 : -ENAMETOOLONG;
}

int thp_khugepaged_read(const char *name, uint64_t *val)
{
	char path[256], buf[64], *end;
	unsigned long long v;
	int r;

	r = khugepaged_path(name, path, sizeof(path));
	if (r < 0)
		return r;
	r = thp_read_file(path, buf, sizeof(buf));
	if (r < 0)
		return r;
	if (buf[0] < '0' || buf[0] > '9')
		return -EBADMSG;
	errno = 0;
	v = strtoull(buf, &end, 10);
	if (errno)
		return -errno;
	if (*end && *end != '\n')
		return -EBADMSG;
	*val = v;
	return 0;
}

int thp_khugepaged_write(const char *name, uint64_t val)
{
	char path[256], buf[32];
	int r;

	r = khugepaged_path(name, path, sizeof(path));
	if (r < 0)
		return r;
	snprintf(buf, sizeof(buf), "%" PRIu64, val);
	return thp_write_file(path, buf);
}

const char *const thp_khugepaged_settings[] = {
	"defrag", "pages_to_scan", "scan_sleep_millisecs", "alloc_sleep_millisecs",
	"max_ptes_none", "max_ptes_swap", "max_ptes_shared", NULL,
};

int thp_khugepaged_limits(const char *name, unsigned long pmd_pages, uint64_t *min,
			  uint64_t *max)
{
	/* mm/khugepaged.c: kstrtouint for the scan and sleeps, kstrtoul for the rest */
	*min = 0;
	*max = UINT32_MAX;
	if (strcmp(name, "defrag") == 0)
		*max = 1;
	else if (strcmp(name, "pages_to_scan") == 0)
		*min = 1;
	else if (strncmp(name, "max_ptes_", 9) == 0 && (strcmp(name + 9, "none") == 0 ||
		 strcmp(name + 9, "swap") == 0 || strcmp(name + 9, "shared") == 0))
		*max = pmd_pages ? pmd_pages - 1 : 0;
	else if (strcmp(name, "scan_sleep_millisecs") && strcmp(name, "alloc_sleep_millisecs"))
		return -EINVAL;
	return 0;
}
