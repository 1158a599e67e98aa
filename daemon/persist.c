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
out:
	json_object_put(o);
	if (r < 0)
		memset(p, 0, sizeof(*p));
	return r;
}

char *thpd_persist_format(const struct thpd_persist *p)
{
	struct json_object *o = json_object_new_object();
	char *s;

	if (!o)
		return NULL;
	json_object_object_add(o, "version", json_object_new_int(1));
	json_object_object_add(o, "enabled",
			       p->enabled[0] ? json_object_new_string(p->enabled) : NULL);
	json_object_object_add(o, "defrag",
			       p->defrag[0] ? json_object_new_string(p->defrag) : NULL);
	s = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	return s;
}

int thpd_persist_load(const char *dir, struct thpd_persist *p)
{
	char buf[1024];
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
