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

static struct thpd_original_size *size_entry(struct thpd_originals *o, unsigned long kib)
{
	unsigned int i;

	for (i = 0; i < o->n_sizes; i++)
		if (o->sizes[i].kib == kib)
			return &o->sizes[i];
	if (o->n_sizes == THP_SIZES_MAX)
		return NULL;
	for (i = o->n_sizes; i > 0 && o->sizes[i - 1].kib > kib; i--)
		o->sizes[i] = o->sizes[i - 1];
	o->n_sizes++;
	memset(&o->sizes[i], 0, sizeof(o->sizes[i]));
	o->sizes[i].kib = kib;
	return &o->sizes[i];
}

/* "hugepages-<kib>kB/enabled" or ".../shmem_enabled" with a valid word */
static void parse_size_line(const char *name, const char *val, struct thpd_originals *o)
{
	const char *slash = strchr(name, '/');
	struct thpd_original_size *z;
	unsigned long kib;
	char dir[32], *end;
	bool shmem;

	if (strncmp(name, "hugepages-", 10) != 0 || !slash)
		return;
	errno = 0;
	kib = strtoul(name + 10, &end, 10);
	if (errno || name[10] < '1' || name[10] > '9' || strncmp(end, "kB/", 3) != 0 ||
	    end + 2 != slash)
		return;
	snprintf(dir, sizeof(dir), "hugepages-%lukB", kib);
	if ((size_t)(slash - name) != strlen(dir))
		return;	/* leading zeros or the like: not a name thpd writes */
	if (strcmp(slash + 1, "enabled") == 0)
		shmem = false;
	else if (strcmp(slash + 1, "shmem_enabled") == 0)
		shmem = true;
	else
		return;
	if (!thp_knob_word_known(shmem ? THP_KNOB_SIZE_SHMEM_ENABLED : THP_KNOB_SIZE_ENABLED, val) ||
	    strlen(val) >= sizeof(z->enabled))
		return;
	z = size_entry(o, kib);
	if (!z)
		return;
	if (shmem) {
		z->have_shmem = true;
		strcpy(z->shmem, val);
	} else {
		z->have_enabled = true;
		strcpy(z->enabled, val);
	}
}

/* one "name value" line; anything that does not fit exactly is skipped, never cut */
static void parse_line(const char *line, size_t len, struct thpd_originals *o)
{
	const char *sp = memchr(line, ' ', len);
	size_t nlen, vlen;
	char name[48], val[32], *end;
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
	if (strcmp(name, "shmem_enabled") == 0 && vlen < sizeof(o->shmem) &&
	    thp_knob_word_known(THP_KNOB_SHMEM_ENABLED, val)) {
		o->have_shmem = true;
		strcpy(o->shmem, val);
		return;
	}
	if (strncmp(name, "hugepages-", 10) == 0) {
		parse_size_line(name, val, o);
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
	if (o->have_shmem)
		fprintf(f, "shmem_enabled %s\n", o->shmem);
	for (unsigned int i = 0; i < o->n_sizes; i++) {
		if (o->sizes[i].have_enabled)
			fprintf(f, "hugepages-%lukB/enabled %s\n", o->sizes[i].kib,
				o->sizes[i].enabled);
		if (o->sizes[i].have_shmem)
			fprintf(f, "hugepages-%lukB/shmem_enabled %s\n", o->sizes[i].kib,
				o->sizes[i].shmem);
	}
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
	struct thp_model *m;

	memset(o, 0, sizeof(*o));
	if (thp_state_read(&st) == 0) {
		o->have_enabled = true;
		snprintf(o->enabled, sizeof(o->enabled), "%s", thp_enabled_name(st.enabled));
		o->have_defrag = true;
		snprintf(o->defrag, sizeof(o->defrag), "%s", st.defrag);
	}
	/* large (every size's stats): off the stack */
	m = malloc(sizeof(*m));
	if (m && thp_model_read(m) == 0) {
		const char *v = thp_choice_value(&m->shmem_enabled);

		if (v) {
			o->have_shmem = true;
			snprintf(o->shmem, sizeof(o->shmem), "%s", v);
		}
		for (int i = 0; i < m->nsizes; i++) {
			const struct thp_size *s = &m->size[i];
			const char *e = thp_choice_value(&s->enabled);
			const char *sh = thp_choice_value(&s->shmem_enabled);
			struct thpd_original_size *z;

			if (!s->has_dir || (!e && !sh) || !(z = size_entry(o, s->kib)))
				continue;
			if (e) {
				z->have_enabled = true;
				snprintf(z->enabled, sizeof(z->enabled), "%s", e);
			}
			if (sh) {
				z->have_shmem = true;
				snprintf(z->shmem, sizeof(z->shmem), "%s", sh);
			}
		}
	}
	free(m);
	for (int k = 0; k < THPD_KH_N; k++)
		o->have_kh[k] = thp_khugepaged_read(thpd_kh_file(k), &o->kh[k]) == 0;
}

int thpd_originals_load(const char *dir, const char *name, struct thpd_originals *o)
{
	char text[4096];
	int r = thpd_safe_read(dir, name, text, sizeof(text));

	if (r < 0)
		return r;
	return thpd_originals_parse(text, o);
}

int thpd_originals_store(const char *dir, const char *name, const struct thpd_originals *o)
{
	char *text = thpd_originals_format(o);
	int r;

	if (!text)
		return -ENOMEM;
	r = thpd_safe_replace(dir, name, text);
	free(text);
	return r;
}

void thpd_originals_forget(const char *dir, const char *name)
{
	thpd_safe_remove(dir, name);
}
