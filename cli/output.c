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
#include <langinfo.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

/* mode 0/1/2 with what it means: a bare 0 reads as "off" to anyone used to 0/1 files */
static const char *rfc_text(struct json_object *v)
{
	static char buf[160];
	const char *m;

	if (!json_object_is_type(v, json_type_int))
		return json_object_get_string(v);
	m = thp_rfc_meaning(json_object_get_int(v));
	snprintf(buf, sizeof(buf), "%d (%s)", json_object_get_int(v), m ? m : "?");
	return buf;
}

/* text labels where the JSON key is not the best thing to show */
static const struct label {
	const char *key;
	const char *text;	/* label in "label: value" lines */
	const char *header;	/* column header in tables */
	const char *null_text;	/* how a JSON null reads */
	const char *(*format)(struct json_object *v);	/* how a value reads, if not as it is */
} labels[] = {
	{ "mode", "rfc mode", NULL, "none", rfc_text },
	{ "free_hugepage_blocks", "free order-9+ blocks", NULL, NULL, NULL },
	{ "anon_huge_kib", "AnonHugePages (KiB)", "ANONHUGE_KIB", NULL, NULL },
	{ "thpd", "thpd", NULL, "not running", NULL },
	{ "stats", NULL, "COUNTER", NULL, NULL },
	{ "persisted", "persisted", NULL, "nothing", NULL },
	{ "thp_fault_alloc", NULL, "FAULT_ALLOC", NULL, NULL },
	{ "thp_fault_fallback", NULL, "FALLBACK", NULL, NULL },
	{ "thp_fault_fallback_charge", NULL, "FB_CHARGE", NULL, NULL },
	{ "thp_collapse_alloc", NULL, "COLLAPSE", NULL, NULL },
	{ "thp_collapse_alloc_failed", NULL, "COLL_FAIL", NULL, NULL },
	{ "thp_split_pmd", NULL, "SPLIT_PMD", NULL, NULL },
	{ "thp_zero_page_fault", NULL, "ZERO_PAGE", NULL, NULL },
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

/*
 * Text for people: names come from processes and files anybody can set, so
 * nothing reaches the terminal as a control. As ps(1) of procps does: in a
 * UTF-8 locale a valid character is shown, C0 and C1 controls, DEL and every
 * byte of an invalid sequence show as '?'; in any other locale every byte
 * that is not printable ASCII shows as '?'.
 */
static bool utf8_locale;

void output_init(void)
{
	const char *cs;

	setlocale(LC_CTYPE, "");
	cs = nl_langinfo(CODESET);
	utf8_locale = cs && strcmp(cs, "UTF-8") == 0;
}

/*
 * Length of the well-formed UTF-8 sequence at s (RFC 3629: shortest form,
 * no surrogates, at most U+10FFFF; table 3-7 of the Unicode standard), or 0.
 */
size_t utf8_len(const unsigned char *s)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4;
	else
		return 0;
	if (s[0] == 0xe0)
		lo = 0xa0;
	else if (s[0] == 0xed)
		hi = 0x9f;
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

/* a C1 control (U+0080..U+009F) as UTF-8 */
static bool is_c1(const unsigned char *s, size_t len)
{
	return len == 2 && s[0] == 0xc2 && s[1] <= 0x9f;
}

size_t put_text(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t cells = 0;

	while (*s) {
		size_t len = utf8_len(s);
		bool bad = len == 0 || *s < 0x20 || *s == 0x7f || is_c1(s, len) ||
			   (len > 1 && !utf8_locale);
		int w = 1;

		if (bad) {
			/* one '?' per byte of an invalid sequence or in a non-UTF-8 locale */
			if (len == 0 || !utf8_locale)
				len = 1;
			if (f)
				fputc('?', f);
		} else {
			if (len > 1) {
				wchar_t wc;
				mbstate_t ps = {};

				if (mbrtowc(&wc, (const char *)s, len, &ps) == len)
					w = wcwidth(wc);
				if (w < 0)
					w = 1;
			}
			if (f)
				fwrite(s, 1, len, f);
		}
		cells += (size_t)w;
		s += len;
	}
	return cells;
}

/* s escaped, padded with blanks to width cells (right-aligned if right) */
static void put_cell(FILE *f, const char *s, size_t width, bool right)
{
	size_t w = put_text(NULL, s);
	int pad = w < width ? (int)(width - w) : 0;

	if (right)
		fprintf(f, "%*s", pad, "");
	put_text(f, s);
	if (!right)
		fprintf(f, "%*s", pad, "");
}

/* a column's header: its label, else the key in capitals */
static void put_header(FILE *f, const char *key, size_t width, bool right)
{
	const struct label *l = find_label(key);
	char *up;

	if (l && l->header) {
		put_cell(f, l->header, width, right);
		return;
	}
	up = strdup(key);
	if (!up) {
		put_cell(f, key, width, right);
		return;
	}
	for (char *p = up; *p; p++)
		*p = (char)toupper((unsigned char)*p);
	put_cell(f, up, width, right);
	free(up);
}

static size_t header_width(const char *key)
{
	const struct label *l = find_label(key);

	return put_text(NULL, l && l->header ? l->header : key);
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
		l = find_label(key);
		return l && l->format ? l->format(v) : json_object_get_string(v);
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

static int print_nested(FILE *f, struct json_object *arr, const char *first, const char *key,
			int indent);

static int print_table(FILE *f, struct json_object *arr, int indent)
{
	size_t rows = json_object_array_length(arr), ncol = 0;
	struct json_object *first;
	const char **cols;
	size_t *width;
	bool *numcol;
	int r = 0;

	if (rows == 0)
		return 0;
	first = json_object_array_get_idx(arr, 0);
	if (!json_object_is_type(first, json_type_object))
		return 0;
	/* every column of the first row, however many */
	cols = calloc((size_t)json_object_object_length(first) + 1, sizeof(*cols));
	width = calloc((size_t)json_object_object_length(first) + 1, sizeof(*width));
	numcol = calloc((size_t)json_object_object_length(first) + 1, sizeof(*numcol));
	if (!cols || !width || !numcol) {
		free(cols);
		free(width);
		free(numcol);
		return -ENOMEM;
	}
	/* scalar columns here; object columns after the table, one table each */
	json_object_object_foreach(first, k, v0) {
		if (!json_object_is_type(v0, json_type_object))
			cols[ncol++] = k;
	}
	for (size_t c = 0; c < ncol; c++) {
		width[c] = header_width(cols[c]);
		for (size_t r = 0; r < rows; r++) {
			struct json_object *v;
			size_t w = 1;

			if (json_object_object_get_ex(json_object_array_get_idx(arr, r), cols[c], &v)) {
				w = put_text(NULL, scalar_text(cols[c], v));
				numcol[c] = numcol[c] || is_number(v);
			}
			if (w > width[c])
				width[c] = w;
		}
	}
	/* header; numeric columns (a number in some row) are right-aligned */
	fprintf(f, "%*s", indent, "");
	for (size_t c = 0; c < ncol; c++) {
		if (c)
			fputc(' ', f);
		put_header(f, cols[c], c + 1 == ncol && !numcol[c] ? 0 : width[c], numcol[c]);
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
				num = is_number(v) || (numcol[c] && !v);
			}
			if (c)
				fputc(' ', f);
			/* no trailing blanks after the last column */
			put_cell(f, s, c + 1 == ncol && !num ? 0 : width[c], num);
		}
		fputc('\n', f);
	}
	json_object_object_foreach(first, k2, v2) {
		if (r == 0 && ncol && json_object_is_type(v2, json_type_object))
			r = print_nested(f, arr, cols[0], k2, indent);
	}
	free(cols);
	free(width);
	free(numcol);
	return r;
}

/* rows of a table whose first column is a string, by that string */
static int cmp_first(const void *a, const void *b)
{
	struct json_object *x = *(struct json_object *const *)a, *y = *(struct json_object *const *)b;
	const char *sx = NULL, *sy = NULL;

	json_object_object_foreach(x, kx, vx) {
		(void)kx;
		sx = json_object_get_string(vx);
		break;
	}
	json_object_object_foreach(y, ky, vy) {
		(void)ky;
		sy = json_object_get_string(vy);
		break;
	}
	return strcmp(sx ? sx : "", sy ? sy : "");
}

/*
 * An object every row holds under key (a size's stats): after the table,
 * "key:" and a table of a row per inner key and a column per outer row,
 * headed by the outer row's first column.
 */
static int print_nested(FILE *f, struct json_object *arr, const char *first, const char *key,
			int indent)
{
	size_t rows = json_object_array_length(arr);
	struct json_object *t = json_object_new_array(), *names = json_object_new_object();
	int r = 0;

	if (!t || !names) {
		json_object_put(t);
		json_object_put(names);
		return -ENOMEM;
	}
	for (size_t i = 0; i < rows; i++) {
		struct json_object *inner;

		if (!json_object_object_get_ex(json_object_array_get_idx(arr, i), key, &inner) ||
		    !json_object_is_type(inner, json_type_object))
			continue;
		json_object_object_foreach(inner, k, v) {
			(void)v;
			json_object_object_add(names, k, NULL);
		}
	}
	json_object_object_foreach(names, name, unused) {
		struct json_object *row = json_object_new_object();

		(void)unused;
		if (!row || json_object_array_add(t, row) < 0) {
			json_object_put(row);
			r = -ENOMEM;
			break;
		}
		json_object_object_add(row, key, json_object_new_string(name));
		for (size_t i = 0; i < rows; i++) {
			struct json_object *outer = json_object_array_get_idx(arr, i), *head, *inner, *v;

			if (!json_object_object_get_ex(outer, first, &head))
				continue;
			if (json_object_object_get_ex(outer, key, &inner) &&
			    json_object_object_get_ex(inner, name, &v))
				json_object_object_add(row, json_object_get_string(head), json_object_get(v));
			else
				json_object_object_add(row, json_object_get_string(head), NULL);
		}
	}
	json_object_array_sort(t, cmp_first);
	if (r == 0 && json_object_array_length(t) > 0) {
		fprintf(f, "%*s", indent, "");
		put_text(f, text_label(key));
		fputs(":\n", f);
		r = print_table(f, t, indent + 4);
	}
	json_object_put(t);
	json_object_put(names);
	return r;
}

static int print_object(FILE *f, struct json_object *obj, int indent)
{
	size_t width = 0;
	int r = 0;

	json_object_object_foreach(obj, k0, v0) {
		size_t w = put_text(NULL, text_label(k0));

		if (is_scalar(v0) && w > width)
			width = w;
	}
	json_object_object_foreach(obj, k, v) {
		const char *label = text_label(k);

		fprintf(f, "%*s", indent, "");
		if (is_scalar(v)) {
			put_text(f, label);
			fputc(':', f);
			put_cell(f, "", width - put_text(NULL, label), false);
			fputc(' ', f);
			put_text(f, scalar_text(k, v));
			fputc('\n', f);
		} else if (json_object_is_type(v, json_type_object)) {
			put_text(f, label);
			fputs(":\n", f);
			r = print_object(f, v, indent + 4);
		} else if (json_object_array_length(v) > 0 &&
			   json_object_is_type(json_object_array_get_idx(v, 0),
					       json_type_object)) {
			r = print_table(f, v, indent);
		} else {
			put_text(f, label);
			fputc(':', f);
			for (size_t i = 0; i < json_object_array_length(v); i++) {
				fputc(' ', f);
				put_text(f, scalar_text(k, json_object_array_get_idx(v, i)));
			}
			fputc('\n', f);
		}
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * JSON text as json-c wrote it, made valid UTF-8 and safe on a terminal:
 * every byte of an invalid sequence becomes U+FFFD, DEL and C1 controls
 * become \u escapes (json-c escapes C0 itself). Such bytes are only ever
 * inside strings, where both are valid JSON. Caller frees.
 */
static char *json_text_safe(const char *js)
{
	const unsigned char *s = (const unsigned char *)js;
	char *out = malloc(strlen(js) * 6 + 1), *o = out;

	if (!out)
		return NULL;
	while (*s) {
		size_t len = utf8_len(s);

		if (len == 0) {
			memcpy(o, "\xef\xbf\xbd", 3);
			o += 3;
			s++;
		} else if (*s == 0x7f || is_c1(s, len)) {
			o += sprintf(o, "\\u%04x", len == 1 ? *s : s[1]);
			s += len;
		} else {
			memcpy(o, s, len);
			o += len;
			s += len;
		}
	}
	*o = '\0';
	return out;
}

static int json_flags = JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED;

int output_json_style(const char *style)
{
	if (!style || strcmp(style, "pretty") == 0)
		json_flags = JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED;
	else if (strcmp(style, "short") == 0)
		json_flags = JSON_C_TO_STRING_PLAIN;
	else
		return -EINVAL;
	return 0;
}

int output(struct json_object *obj, bool json)
{
	return output_to(stdout, obj, json);
}

int output_to(FILE *f, struct json_object *obj, bool json)
{
	int r = 0;

	if (!obj) {
		log_error("out of memory");
		return -ENOMEM;
	}
	if (json) {
		char *js = json_text_safe(json_object_to_json_string_ext(obj,
				json_flags | JSON_C_TO_STRING_NOSLASHESCAPE));

		if (js)
			fprintf(f, "%s\n", js);
		else
			r = -ENOMEM;
		free(js);
	} else if (json_object_is_type(obj, json_type_array)) {
		r = print_table(f, obj, 0);
	} else {
		r = print_object(f, obj, 0);
	}
	json_object_put(obj);
	if (r < 0)
		log_error("out of memory");
	return r;
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

int jadd_counters(struct json_object *o, char *text, const char *prefix)
{
	size_t plen = strlen(prefix);
	char *line, *save = NULL;

	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		size_t nlen = strcspn(line, " \t");
		unsigned long long v;
		char *end;

		if (nlen == 0 || !line[nlen] || strncmp(line, prefix, plen) != 0)
			continue;
		line[nlen] = '\0';
		errno = 0;
		v = strtoull(line + nlen + 1, &end, 10);
		if (errno || end == line + nlen + 1 || (*end && *end != ' '))
			continue;
		jadd_u64(o, line, v);
	}
	return 0;
}

