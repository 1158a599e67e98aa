// SPDX-License-Identifier: GPL-2.0-or-later
#include "persist.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "safe-file.h"
#include "thp.h"

static int take_string(struct json_object *o, const char *key, char *out, size_t size,
		       int (*valid)(const char *))
{
	struct json_object *v;
	const char *s;

	out[0] = '\0';
	if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null))
		return 0;
	if (!json_object_is_type(v, json_type_string))
		return -EBADMSG;
	s = json_object_get_string(v);
	if (strlen(s) >= size || valid(s) < 0)
		return -EBADMSG;
	strcpy(out, s);
	return 0;
}

static int enabled_valid(const char *s)
{
	return thp_enabled_from_name(s) < 0 ? -EINVAL : 0;
}

static int shmem_valid(const char *s)
{
	return thp_knob_word_known(THP_KNOB_SHMEM_ENABLED, s) ? 0 : -EINVAL;
}

static int size_enabled_valid(const char *s)
{
	return thp_knob_word_known(THP_KNOB_SIZE_ENABLED, s) ? 0 : -EINVAL;
}

static int size_shmem_valid(const char *s)
{
	return thp_knob_word_known(THP_KNOB_SIZE_SHMEM_ENABLED, s) ? 0 : -EINVAL;
}

struct thpd_persist_size *thpd_persist_size(struct thpd_persist *p, unsigned long kib, bool create)
{
	unsigned int i;

	for (i = 0; i < p->n_sizes; i++)
		if (p->sizes[i].kib == kib)
			return &p->sizes[i];
	if (!create || p->n_sizes == THP_SIZES_MAX)
		return NULL;
	for (i = p->n_sizes; i > 0 && p->sizes[i - 1].kib > kib; i--)
		p->sizes[i] = p->sizes[i - 1];
	p->n_sizes++;
	memset(&p->sizes[i], 0, sizeof(p->sizes[i]));
	p->sizes[i].kib = kib;
	return &p->sizes[i];
}

void thpd_persist_compact(struct thpd_persist *p)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < p->n_sizes; i++)
		if (p->sizes[i].enabled[0] || p->sizes[i].shmem[0])
			p->sizes[n++] = p->sizes[i];
	p->n_sizes = n;
}

/* "sizes": {"64K": {"enabled": …, "shmem_enabled": …}, …}; absent or null: none */
static int take_sizes(struct json_object *o, struct thpd_persist *p)
{
	struct json_object *sizes;
	int r = 0;

	if (!json_object_object_get_ex(o, "sizes", &sizes) ||
	    json_object_is_type(sizes, json_type_null))
		return 0;
	if (!json_object_is_type(sizes, json_type_object))
		return -EBADMSG;
	json_object_object_foreach(sizes, name, v) {
		struct thpd_persist_size *z;
		unsigned long kib;
		char canon[16];

		if (r < 0)
			break;
		/* exactly as thpd writes it: one spelling per size */
		if (thp_size_parse(name, &kib) < 0 || kib < 8 || kib > 1024UL * 1024 || (kib & (kib - 1)) ||
		    strcmp(thp_size_name(kib, canon, sizeof(canon)), name) != 0 ||
		    thpd_persist_size(p, kib, false) || !json_object_is_type(v, json_type_object))
			return -EBADMSG;
		z = thpd_persist_size(p, kib, true);
		if (!z)
			return -EBADMSG;
		r = take_string(v, "enabled", z->enabled, sizeof(z->enabled), size_enabled_valid);
		if (r == 0)
			r = take_string(v, "shmem_enabled", z->shmem, sizeof(z->shmem),
					size_shmem_valid);
	}
	if (r == 0)
		thpd_persist_compact(p);
	return r;
}

/* "khugepaged": {"pages_to_scan": 4096, ...}; absent or null: none */
static int take_khugepaged(struct json_object *o, struct thpd_persist *p)
{
	struct json_object *kh;

	if (!json_object_object_get_ex(o, "khugepaged", &kh) ||
	    json_object_is_type(kh, json_type_null))
		return 0;
	if (!json_object_is_type(kh, json_type_object))
		return -EBADMSG;
	json_object_object_foreach(kh, name, v) {
		int k = thpd_kh_from_file(name);
		int64_t n;

		if (!json_object_is_type(v, json_type_int))
			return -EBADMSG;
		n = json_object_get_int64(v);
		if (n < 0 || n > UINT32_MAX)
			return -EBADMSG;
		if (k < 0)
			continue;	/* a later thpd's: kept by it, not by us */
		p->kh_set[k] = true;
		p->kh[k] = (uint64_t)n;
	}
	return 0;
}

int thpd_persist_parse(const char *text, struct thpd_persist *p)
{
	struct json_object *o = json_tokener_parse(text), *v;
	int r = -EBADMSG;

	memset(p, 0, sizeof(*p));
	if (!o || !json_object_is_type(o, json_type_object))
		goto out;
	if (!json_object_object_get_ex(o, "version", &v) || json_object_get_int(v) != 1)
		goto out;
	r = take_string(o, "enabled", p->enabled, sizeof(p->enabled), enabled_valid);
	if (r == 0)
		r = take_string(o, "defrag", p->defrag, sizeof(p->defrag), thp_defrag_valid);
	if (r == 0)
		r = take_string(o, "shmem_enabled", p->shmem, sizeof(p->shmem), shmem_valid);
	if (r == 0)
		r = take_sizes(o, p);
	if (r == 0)
		r = take_khugepaged(o, p);
out:
	json_object_put(o);
	if (r < 0)
		memset(p, 0, sizeof(*p));
	return r;
}

char *thpd_persist_format(const struct thpd_persist *p)
{
	struct json_object *o = json_object_new_object(), *sizes;
	char *s;

	if (!o)
		return NULL;
	json_object_object_add(o, "version", json_object_new_int(1));
	json_object_object_add(o, "enabled",
			       p->enabled[0] ? json_object_new_string(p->enabled) : NULL);
	json_object_object_add(o, "defrag",
			       p->defrag[0] ? json_object_new_string(p->defrag) : NULL);
	/* only when set: a state of the pair alone reads as earlier versions wrote it */
	if (p->shmem[0])
		json_object_object_add(o, "shmem_enabled", json_object_new_string(p->shmem));
	sizes = p->n_sizes ? json_object_new_object() : NULL;
	for (unsigned int i = 0; i < p->n_sizes && sizes; i++) {
		const struct thpd_persist_size *z = &p->sizes[i];
		struct json_object *v;
		char name[16];

		if (!z->enabled[0] && !z->shmem[0])
			continue;
		v = json_object_new_object();
		json_object_object_add(v, "enabled",
				       z->enabled[0] ? json_object_new_string(z->enabled) : NULL);
		json_object_object_add(v, "shmem_enabled",
				       z->shmem[0] ? json_object_new_string(z->shmem) : NULL);
		json_object_object_add(sizes, thp_size_name(z->kib, name, sizeof(name)), v);
	}
	if (sizes)
		json_object_object_add(o, "sizes", sizes);
	for (int k = 0; k < THPD_KH_N; k++) {
		struct json_object *kh;

		if (!p->kh_set[k])
			continue;
		if (!json_object_object_get_ex(o, "khugepaged", &kh)) {
			kh = json_object_new_object();
			json_object_object_add(o, "khugepaged", kh);
		}
		json_object_object_add(kh, thpd_kh_file(k), json_object_new_int64((int64_t)p->kh[k]));
	}
	s = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	return s;
}

int thpd_persist_load(const char *dir, struct thpd_persist *p)
{
	char buf[THP_MSG_MAX];
	int r;

	memset(p, 0, sizeof(*p));
	r = thpd_safe_read(dir, THPD_STATE_FILE, buf, sizeof(buf));
	if (r < 0)
		return r;
	return thpd_persist_parse(buf, p);
}

int thpd_persist_save(const char *dir, const struct thpd_persist *p)
{
	char *text = thpd_persist_format(p), *line;
	int r;

	if (!text)
		return -ENOMEM;
	r = asprintf(&line, "%s\n", text) < 0 ? -ENOMEM : 0;
	free(text);
	if (r < 0)
		return r;
	r = thpd_safe_replace(dir, THPD_STATE_FILE, line);
	free(line);
	return r;
}
