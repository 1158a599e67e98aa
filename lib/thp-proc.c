// SPDX-License-Identifier: GPL-2.0-or-later
/* procfs parsing: counters, buddyinfo, per-process policy (docs/abi.md). */
#include "thp.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int thp_kv_get(const char *text, const char *key, uint64_t *val)
{
	size_t klen = strlen(key);
	const char *line = text;

	if (klen == 0)
		return -EINVAL;
	while (line && *line) {
		const char *p = line + klen;

		if (strncmp(line, key, klen) == 0 &&
		    (*p == ':' || *p == ' ' || *p == '\t')) {
			unsigned long long v;
			char *end;

			if (*p == ':')
				p++;
			while (*p == ' ' || *p == '\t')
				p++;
			if (!isdigit((unsigned char)*p))
				return -EBADMSG;
			errno = 0;
			v = strtoull(p, &end, 10);
			if (errno)
				return -errno;
			if (*end && !isspace((unsigned char)*end))
				return -EBADMSG;
			*val = v;
			return 0;
		}
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	return -ENOENT;
}

/* sum over "Node N, zone NAME c0 c1 ..." lines */
static long buddyinfo_sum(char *buf, int min_order)
{
	char *line, *save = NULL;
	long total = 0;

	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		/* "Node 0, zone   Normal      1      2 ..." */
		char *p = strstr(line, "zone");
		int order = 0;

		if (!p)
			return -EBADMSG;
		p += 4;
		while (*p == ' ' || *p == '\t')
			p++;
		while (*p && *p != ' ' && *p != '\t')
			p++;	/* zone name */
		for (;;) {
			unsigned long long n;
			char *end;

			while (*p == ' ' || *p == '\t')
				p++;
			if (!*p)
				break;
			if (!isdigit((unsigned char)*p))
				return -EBADMSG;
			errno = 0;
			n = strtoull(p, &end, 10);
			if (errno || (*end && *end != ' ' && *end != '\t'))
				return -EBADMSG;
			p = end;
			if (order >= min_order && order - min_order < 40) {
				unsigned long long add = n << (order - min_order);

				if ((add >> (order - min_order)) != n ||
				    add > (unsigned long long)(__LONG_MAX__ - total))
					return -EOVERFLOW;
				total += (long)add;
			}
			order++;
		}
	}
	return total;
}

long thp_buddyinfo_free_blocks(int min_order)
{
	/* plenty for every node and zone of any real machine */
	const size_t size = 65536;
	char *buf;
	long total;
	int r;

	if (min_order < 0 || min_order > 30)
		return -EINVAL;
	buf = malloc(size);
	if (!buf)
		return -ENOMEM;
	r = thp_read_file("/proc/buddyinfo", buf, size);
	total = r < 0 ? r : buddyinfo_sum(buf, min_order);
	free(buf);
	return total;
}

static const char *const policy_names[] = {
	[PR_THP_MM_POLICY_DEFAULT] = "default",
	[PR_THP_MM_POLICY_ADVISE] = "advise",
	[PR_THP_MM_POLICY_NEVER] = "never",
};

int thp_policy_from_name(const char *s)
{
	for (int i = 0; i < 3; i++)
		if (strcmp(s, policy_names[i]) == 0)
			return i;
	return -EINVAL;
}

const char *thp_policy_name(int policy)
{
	return policy >= 0 && policy < 3 ? policy_names[policy] : "unknown";
}

static void policy_path(pid_t pid, char *buf, size_t size)
{
	if (pid <= 0)
		snprintf(buf, size, "/proc/self/thp_policy");
	else
		snprintf(buf, size, "/proc/%d/thp_policy", (int)pid);
}

int thp_policy_get(pid_t pid, int *policy)
{
	char path[64], buf[32];
	int r;

	policy_path(pid, path, sizeof(path));
	r = thp_read_file(path, buf, sizeof(buf));
	if (r < 0)
		return r;
	buf[strcspn(buf, "\n")] = '\0';
	r = thp_policy_from_name(buf);
	if (r < 0)
		return -EBADMSG;
	*policy = r;
	return 0;
}

int thp_policy_set(pid_t pid, int policy)
{
	char path[64];

	if (policy < 0 || policy > 2)
		return -EINVAL;
	policy_path(pid, path, sizeof(path));
	return thp_write_file(path, policy_names[policy]);
}

int thp_smaps_vma_kib(pid_t pid, unsigned long addr, const char *field, long *kib)
{
	char rel[64], path[4096], *line = NULL;
	size_t flen = strlen(field), cap = 0;
	unsigned long start, end;
	bool in = false;
	int r = -ENOENT;
	FILE *f;

	if (pid > 0)
		snprintf(rel, sizeof(rel), "/proc/%d/smaps", (int)pid);
	else
		snprintf(rel, sizeof(rel), "/proc/self/smaps");
	r = thp_path(path, sizeof(path), rel);
	if (r < 0)
		return r;
	f = fopen(path, "re");
	if (!f)
		return -errno;
	r = -ENOENT;
	/* whole lines, however long: a mapped file's name is up to PATH_MAX */
	while (getline(&line, &cap, f) > 0) {
		char *dash = strchr(line, '-'), *space = strchr(line, ' ');

		/* a VMA header: "start-end perms ..." */
		if (dash && space && dash < space &&
		    sscanf(line, "%lx-%lx ", &start, &end) == 2) {
			in = start <= addr && addr < end;
			continue;
		}
		if (in && strncmp(line, field, flen) == 0 && line[flen] == ':') {
			r = sscanf(line + flen + 1, "%ld", kib) == 1 ? 0 : -EBADMSG;
			break;
		}
	}
	free(line);
	fclose(f);
	return r;
}
