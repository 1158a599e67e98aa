// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The print path shared by --json and text: every read verb builds one JSON
 * object; text is rendered from that same object, so the two cannot drift.
 *
 * Text rendering: scalars are "label: value" lines aligned within their
 * object, nested objects are indented sections, arrays of objects are tables
 * (columns in the order of the first row's keys).
 */
#include "thpctl.h"
#include "thp.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* text labels where the JSON key is not the best thing to show */
static const struct label {
	const char *key;
	const char *text;	/* label in "label: value" lines */
	const char *header;	/* column header in tables */
	const char *null_text;	/* how a JSON null reads */
} labels[] = {
	{ "free_hugepage_blocks", "free order-9+ blocks", NULL, NULL },
	{ "anon_huge_kib", "AnonHugePages (KiB)", "ANONHUGE_KIB", NULL },
	{ "thpd", "thpd", NULL, "not running" },
	{ "persisted", "persisted", NULL, "nothing" },
	{ "thp_fault_alloc", NULL, "FAULT_ALLOC", NULL },
	{ "thp_fault_fallback", NULL, "FALLBACK", NULL },
	{ "thp_fault_fallback_charge", NULL, "FB_CHARGE", NULL },
	{ "thp_collapse_alloc", NULL, "COLLAPSE", NULL },
	{ "thp_collapse_alloc_failed", NULL, "COLL_FAIL", NULL },
	{ "thp_split_pmd", NULL, "SPLIT_PMD", NULL },
	{ "thp_zero_page_alloc", NULL, "ZERO_PAGE", NULL },
	{ "thp_pmd_mapped", NULL, "PMD_MAPPED", NULL },
};

static const struct label *find_label(const char *key)
{
	for (size_t i = 0; i < sizeof(labels) / sizeof(labels[0]); i++)
		if (strcmp(labels[i].key, key) == 0)
			return &labels[i];
	return NULL;
}

static const char *text_label(const char *key)
{
	const struct label *l = find_label(key);

	return l && l->text ? l->text : key;
}

static void header_of(const char *key, char *buf, size_t size)
{
	const struct label *l = find_label(key);
	size_t i;

	if (l && l->header) {
		snprintf(buf, size, "%s", l->header);
		return;
	}
	for (i = 0; key[i] && i + 1 < size; i++)
		buf[i] = (char)toupper((unsigned char)key[i]);
	buf[i] = '\0';
}

static const char *scalar_text(const char *key, struct json_object *v)
{
	const struct label *l;

	switch (json_object_get_type(v)) {
	case json_type_null:
		l = find_label(key);
		return l && l->null_text ? l->null_text : "-";
	case json_type_boolean:
		return json_object_get_boolean(v) ? "yes" : "no";
	default:
		return json_object_get_string(v);
	}
}

static bool is_scalar(struct json_object *v)
{
	enum json_type t = json_object_get_type(v);

	return t != json_type_object && t != json_type_array;
}

static bool is_number(struct json_object *v)
{
	enum json_type t = json_object_get_type(v);

	return t == json_type_int || t == json_type_double;
}

static void print_table(FILE *f, struct json_object *arr, int indent)
{
	size_t rows = json_object_array_length(arr), ncol = 0;
	const char *cols[32];
	int width[32];
	char hdr[64];
	struct json_object *first;

	if (rows == 0)
		return;
	first = json_object_array_get_idx(arr, 0);
	if (!json_object_is_type(first, json_type_object))
		return;
	json_object_object_foreach(first, k, v0) {
		(void)v0;
		if (ncol < 32)
			cols[ncol++] = k;
	}
	for (size_t c = 0; c < ncol; c++) {
		header_of(cols[c], hdr, sizeof(hdr));
		width[c] = (int)strlen(hdr);
		for (size_t r = 0; r < rows; r++) {
			struct json_object *v;
			int w = 1;

			if (json_object_object_get_ex(json_object_array_get_idx(arr, r), cols[c], &v))
				w = (int)strlen(scalar_text(cols[c], v));
			if (w > width[c])
				width[c] = w;
		}
	}
	/* header; numeric columns (judged by the first row) are right-aligned */
	fprintf(f, "%*s", indent, "");
	for (size_t c = 0; c < ncol; c++) {
		struct json_object *v = NULL;
		bool num;

		json_object_object_get_ex(first, cols[c], &v);
		num = is_number(v);
		header_of(cols[c], hdr, sizeof(hdr));
		fprintf(f, "%s%*s", c ? " " : "", num ? width[c] : -width[c], hdr);
	}
	fputc('\n', f);
	for (size_t r = 0; r < rows; r++) {
		struct json_object *row = json_object_array_get_idx(arr, r);

		fprintf(f, "%*s", indent, "");
		for (size_t c = 0; c < ncol; c++) {
			struct json_object *v = NULL;
			const char *s = "-";
			bool num = false;

			if (json_object_object_get_ex(row, cols[c], &v)) {
				s = scalar_text(cols[c], v);
				num = is_number(v);
			}
			/* no trailing blanks after the last column */
			if (c + 1 == ncol && !num)
				fprintf(f, " %s", s);
			else
				fprintf(f, "%s%*s", c ? " " : "", num ? width[c] : -width[c], s);
		}
		fputc('\n', f);
	}
}

static void print_object(FILE *f, struct json_object *obj, int indent)
{
	int width = 0;

	json_object_object_foreach(obj, k0, v0) {
		int w = (int)strlen(text_label(k0));

		if (is_scalar(v0) && w > width)
			width = w;
	}
	json_object_object_foreach(obj, k, v) {
		const char *label = text_label(k);

		if (is_scalar(v)) {
			fprintf(f, "%*s%s:%*s %s\n", indent, "", label,
				width - (int)strlen(label), "", scalar_text(k, v));
		} else if (json_object_is_type(v, json_type_object)) {
			fprintf(f, "%*s%s:\n", indent, "", label);
			print_object(f, v, indent + 4);
		} else if (json_object_array_length(v) > 0 &&
			   json_object_is_type(json_object_array_get_idx(v, 0),
					       json_type_object)) {
			print_table(f, v, indent);
		} else {
			fprintf(f, "%*s%s:", indent, "", label);
			for (size_t i = 0; i < json_object_array_length(v); i++)
				fprintf(f, " %s", scalar_text(k, json_object_array_get_idx(v, i)));
			fputc('\n', f);
		}
	}
}

int output(struct json_object *obj, bool json)
{
	if (!obj) {
		log_error("out of memory");
		return -ENOMEM;
	}
	if (json)
		printf("%s\n", json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PRETTY |
							      JSON_C_TO_STRING_SPACED |
							      JSON_C_TO_STRING_NOSLASHESCAPE));
	else if (json_object_is_type(obj, json_type_array))
		print_table(stdout, obj, 0);
	else
		print_object(stdout, obj, 0);
	json_object_put(obj);
	return 0;
}

void jadd_str(struct json_object *o, const char *key, const char *val)
{
	if (o)
		json_object_object_add(o, key, val ? json_object_new_string(val) : NULL);
}

void jadd_u64(struct json_object *o, const char *key, uint64_t val)
{
	if (o)
		json_object_object_add(o, key, json_object_new_uint64(val));
}

void jadd_int(struct json_object *o, const char *key, int64_t val)
{
	if (o)
		json_object_object_add(o, key, json_object_new_int64(val));
}

void jadd_bool(struct json_object *o, const char *key, bool val)
{
	if (o)
		json_object_object_add(o, key, json_object_new_boolean(val));
}
