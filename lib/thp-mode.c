// SPDX-License-Identifier: GPL-2.0-or-later
#include "thp.h"

#include <errno.h>
#include <string.h>

static const char *const enabled_names[] = {
	[THP_NEVER] = "never",
	[THP_MADVISE] = "madvise",
	[THP_ALWAYS] = "always",
};

static const char *const defrag_names[] = {
	"always", "defer", "defer+madvise", "madvise", "never",
};

const char *thp_enabled_name(enum thp_enabled e)
{
	return (unsigned int)e < 3 ? enabled_names[e] : "unknown";
}

int thp_enabled_from_name(const char *s)
{
	for (int i = 0; i < 3; i++)
		if (strcmp(s, enabled_names[i]) == 0)
			return i;
	return -EINVAL;
}

int thp_defrag_valid(const char *s)
{
	for (size_t i = 0; i < sizeof(defrag_names) / sizeof(defrag_names[0]); i++)
		if (strcmp(s, defrag_names[i]) == 0)
			return 0;
	return -EINVAL;
}

int thp_mode_parse(const char *s, struct thp_mode_req *req)
{
	int e;

	if (s[0] >= '0' && s[0] <= '2' && s[1] == '\0') {
		req->rfc = s[0] - '0';
		req->enabled = req->rfc == 0 ? THP_MADVISE : THP_ALWAYS;
		req->defrag = req->rfc == 2 ? "always" : "madvise";
		return 0;
	}
	e = thp_enabled_from_name(s);
	if (e < 0)
		return e;
	req->enabled = (enum thp_enabled)e;
	req->defrag = NULL;
	req->rfc = -1;
	return 0;
}

const char *thp_rfc_mode(enum thp_enabled e, const char *defrag)
{
	switch (e) {
	case THP_MADVISE:
		return "0";
	case THP_ALWAYS:
		return defrag && strcmp(defrag, "always") == 0 ? "2" : "1";
	default:
		return "never";
	}
}
