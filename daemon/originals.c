// SPDX-License-Identifier: GPL-2.0-or-later
/* The host's values before thpd, kept across crash restarts. See originals.h. */
#include "originals.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "safe-file.h"
#include "thp.h"

/* one "name value" line; anything that does not fit exactly is skipped, never cut */
static void parse_line(const char *line, size_t len, struct thpd_originals *o)
{
	const char *sp = memchr(line, ' ', len);
	size_t nlen, vlen;
	char name[32], val[32], *end;
	unsigned long long x;

	if (!sp)
		return;
	nlen = (size_t)(sp - line);
	vlen = len - nlen - 1;
	if (nlen == 0 || nlen >= sizeof(name) || vlen == 0 || vlen >= sizeof(val))
		return;
	memcpy(name, line, nlen);
	name[nlen] = '\0';
	memcpy(val, sp + 1, vlen);
	val[vlen] = '\0';
	if (strcmp(name, "enabled") == 0 && vlen < sizeof(o->enabled) &&
	    thp_enabled_from_name(val) >= 0) {
		o->have_enabled = true;
		strcpy(o->enabled, val);
		return;
	}
	if (strcmp(name, "defrag") == 0 && vlen < sizeof(o->defrag) && thp_defrag_valid(val) == 0) {
		o->have_defrag = true;
		strcpy(o->defrag, val);
		return;
	}
	for (int k = 0; k < THPD_KH_N; k++) {
		if (strcmp(name, thpd_kh_file(k)) != 0)
			continue;
		errno = 0;
		x = strtoull(val, &end, 10);
		if (val[0] >= '0' && val[0] <= '9' && !*end && !errno) {
			o->have_kh[k] = true;
			o->kh[k] = x;
		}
	}
}

int thpd_originals_parse(const char *text, struct thpd_originals *o)
{
	const char *line = text;

	memset(o, 0, sizeof(*o));
	while (*line) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);

		parse_line(line, len, o);
		if (!end)
			break;
		line = end + 1;
	}
	return 0;
}

char *thpd_originals_format(const struct thpd_originals *o)
{
	char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);

	if (!f)
		return NULL;
	if (o->have_enabled)
		fprintf(f, "enabled %s\n", o->enabled);
	if (o->have_defrag)
		fprintf(f, "defrag %s\n", o->defrag);
	for (int k = 0; k < THPD_KH_N; k++)
		if (o->have_kh[k])
			fprintf(f, "%s %" PRIu64 "\n", thpd_kh_file(k), o->kh[k]);
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

void thpd_originals_read_kernel(struct thpd_originals *o)
{
	struct thp_state st;

	memset(o, 0, sizeof(*o));
	if (thp_state_read(&st) == 0) {
		o->have_enabled = true;
		snprintf(o->enabled, sizeof(o->enabled), "%s", thp_enabled_name(st.enabled));
		o->have_defrag = true;
		snprintf(o->defrag, sizeof(o->defrag), "%s", st.defrag);
	}
	for (int k = 0; k < THPD_KH_N; k++)
		o->have_kh[k] = thp_khugepaged_read(thpd_kh_file(k), &o->kh[k]) == 0;
}

int thpd_originals_load(const char *dir, struct thpd_originals *o)
{
	char text[1024];
	int r = thpd_safe_read(dir, THPD_ORIGINALS_FILE, text, sizeof(text));

	if (r < 0)
		return r;
	return thpd_originals_parse(text, o);
}

int thpd_originals_store(const char *dir, const struct thpd_originals *o)
{
	char *text = thpd_originals_format(o);
	int r;

	if (!text)
		return -ENOMEM;
	r = thpd_safe_replace(dir, THPD_ORIGINALS_FILE, text);
	free(text);
	return r;
}

void thpd_originals_forget(const char *dir)
{
	thpd_safe_remove(dir, THPD_ORIGINALS_FILE);
}
