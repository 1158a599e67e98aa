// SPDX-License-Identifier: GPL-2.0-or-later
#include "thp.h"

#include <errno.h>
#include <string.h>

/* the words come from the one table of knobs (lib/thp-model.c) */
static const enum thp_eff enabled_eff[] = {
	[THP_NEVER] = THP_EFF_NEVER,
	[THP_MADVISE] = THP_EFF_ADVISE,
	[THP_ALWAYS] = THP_EFF_ALWAYS,
};

const char *thp_enabled_name(enum thp_enabled e)
{
	return (unsigned int)e < 3 ? thp_eff_name(enabled_eff[e], false) : "unknown";
}

int thp_enabled_from_name(const char *s)
{
	int e = thp_anon_effective(NULL, s);

	if (e < 0 || !thp_knob_word_known(THP_KNOB_ENABLED, s))
		return -EINVAL;
	for (int i = 0; i < 3; i++)
		if (enabled_eff[i] == (enum thp_eff)e)
			return i;
	return -EINVAL;
}

int thp_defrag_valid(const char *s)
{
	return thp_knob_word_known(THP_KNOB_DEFRAG, s) ? 0 : -EINVAL;
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
	/* exact, as the kernel's mode file (series v2): a number only for its pair */
	bool dm = defrag && strcmp(defrag, "madvise") == 0;

	switch (e) {
	case THP_MADVISE:
		return dm ? "0" : "custom";
	case THP_ALWAYS:
		if (defrag && strcmp(defrag, "always") == 0)
			return "2";
		return dm ? "1" : "custom";
	default:
		return "never";
	}
}

const char *thp_rfc_meaning(int rfc)
{
	switch (rfc) {
	case 0:
		return "hugepages only in MADV_HUGEPAGE regions";
	case 1:
		return "hugepages at fault when one is free, compaction only for MADV_HUGEPAGE regions";
	case 2:
		return "hugepages at fault everywhere, compacting for them";
	default:
		return NULL;
	}
}
