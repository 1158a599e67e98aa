// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer target: libthp's word and text parsers, as thpctl and thpd use
 * them on arguments, configuration values and procfs/sysfs text:
 * thp_mode_parse, thp_enabled_from_name, thp_defrag_valid,
 * thp_policy_from_name, thp_rfc_mode, thp_parse_bracketed, thp_kv_get, and the
 * model's thp_choice_parse (a kernel's bracketed word list) and thp_size_parse.
 *
 * Each is checked against its contract (docs/abi.md, lib/thp.h), not only
 * for memory errors: exactly the documented words are accepted, and what a
 * parser returns is consistent with its input.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "thp.h"

static bool one_of(const char *s, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(s, list[i]) == 0)
			return true;
	return false;
}

/* the words of a knob, from libthp's one table of the THP controls */
static bool in_table(enum thp_knob_id id, const char *s)
{
	for (const struct thp_word_info *w = thp_knob(id)->words; w->word; w++)
		if (strcmp(s, w->word) == 0)
			return true;
	return false;
}

static void check_words(const char *s)
{
	static const char *const rfc[] = { "0", "1", "2" };
	static const char *const policies[] = { "default", "advise", "never" };
	struct thp_mode_req req;
	int r, e;

	memset(&req, 0xa5, sizeof(req));
	r = thp_mode_parse(s, &req);
	if ((r == 0) != (in_table(THP_KNOB_ENABLED, s) || one_of(s, rfc, 3)) ||
	    (r != 0 && r != -EINVAL))
		abort();
	if (r == 0) {
		if (req.rfc >= 0) {
			/* the RFC table: 0 madvise/madvise, 1 always/madvise, 2 always/always */
			if (req.rfc > 2 || s[0] - '0' != req.rfc || !req.defrag ||
			    req.enabled != (req.rfc ? THP_ALWAYS : THP_MADVISE) ||
			    strcmp(req.defrag, req.rfc == 2 ? "always" : "madvise") ||
			    strcmp(thp_rfc_mode(req.enabled, req.defrag), s))
				abort();
		} else if (req.rfc != -1 || req.defrag ||
			   strcmp(thp_enabled_name(req.enabled), s)) {
			abort();
		}
	}
	e = thp_enabled_from_name(s);
	if ((e >= 0) != in_table(THP_KNOB_ENABLED, s) ||
	    (e >= 0 && strcmp(thp_enabled_name((enum thp_enabled)e), s)) ||
	    (e < 0 && e != -EINVAL))
		abort();
	r = thp_defrag_valid(s);
	if ((r == 0) != in_table(THP_KNOB_DEFRAG, s) || (r != 0 && r != -EINVAL))
		abort();
	r = thp_policy_from_name(s);
	if ((r >= 0) != one_of(s, policies, 3) || (r >= 0 && strcmp(thp_policy_name(r), s)) ||
	    (r < 0 && r != -EINVAL))
		abort();
}

static void check_bracketed(const char *s, size_t outsize)
{
	char out[64];
	const char *open, *close;
	int r;

	memset(out, 'Z', sizeof(out));
	r = thp_parse_bracketed(s, out, outsize);
	if (r == 0) {
		size_t l = strlen(out);

		/* the text between the first '[' and the next ']' */
		open = strchr(s, '[');
		close = open ? strchr(open, ']') : NULL;
		if (!open || !close || l == 0 || l >= outsize ||
		    (size_t)(close - open - 1) != l || memcmp(open + 1, out, l))
			abort();
	} else if (r != -EBADMSG && r != -ENAMETOOLONG) {
		abort();
	}
	if (out[outsize] != 'Z')	/* wrote past the size it was given */
		abort();
}

static void check_choice(const char *s)
{
	struct thp_choice c;
	unsigned long kib, back;
	char name[32];
	int r = thp_choice_parse(s, &c), brackets = 0;

	if (r == 0) {
		const char *v = thp_choice_value(&c);

		/* one word in brackets, and it is one of the words offered */
		for (const char *p = s; *p; p++)
			brackets += *p == '[';
		if (brackets != 1 || c.n < 1 || c.n > THP_WORDS_MAX || !v || !thp_choice_offers(&c, v) ||
		    !strstr(s, v))
			abort();
	} else if (r != -EBADMSG || thp_choice_value(&c) || c.n != 0) {
		abort();
	}
	r = thp_size_parse(s, &kib);
	if (r == 0) {
		/* a size reads back as itself */
		if (kib == 0 || thp_size_parse(thp_size_name(kib, name, sizeof(name)), &back) != 0 ||
		    back != kib)
			abort();
	} else if (r != -EINVAL) {
		abort();
	}
}

static void check_kv(const char *text, const char *key)
{
	uint64_t v = 0;
	int r = thp_kv_get(text, key, &v);

	if (r != 0 && r != -ENOENT && r != -EBADMSG && r != -EINVAL && r != -ERANGE)
		abort();
	if (r == -EINVAL && key[0])
		abort();	/* -EINVAL only for an empty key */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s, key[48];
	size_t outsize, k;

	if (size == 0)
		return 0;
	/* first byte: output buffer size for thp_parse_bracketed (1..63) */
	outsize = 1 + data[0] % 63;
	data++;
	size--;
	s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';

	check_words(s);
	check_bracketed(s, outsize);
	check_choice(s);
	/* keys: a fixed counter name, and the first word of the input */
	check_kv(s, "thp_fault_alloc");
	for (k = 0; k < sizeof(key) - 1 && s[k] && s[k] != ' ' && s[k] != '\n' && s[k] != ':'; k++)
		key[k] = s[k];
	key[k] = '\0';
	check_kv(s, key);
	free(s);
	return 0;
}
