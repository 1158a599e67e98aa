// SPDX-License-Identifier: GPL-2.0-or-later
#include "persist.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

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
	char path[PATH_MAX], buf[1024];
	ssize_t n;
	int fd, r;

	memset(p, 0, sizeof(*p));
	if ((size_t)snprintf(path, sizeof(path), "%s/" THPD_STATE_FILE, dir) >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	r = n < 0 ? -errno : 0;
	close(fd);
	if (r < 0)
		return r;
	if ((size_t)n == sizeof(buf) - 1)
		return -EFBIG;
	buf[n] = '\0';
	return thpd_persist_parse(buf, p);
}

static int write_all(int fd, const char *s, size_t len)
{
	while (len) {
		ssize_t n = write(fd, s, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		s += n;
		len -= (size_t)n;
	}
	return 0;
}

int thpd_persist_save(const char *dir, const struct thpd_persist *p)
{
	char tmp[PATH_MAX], path[PATH_MAX];
	char *text = thpd_persist_format(p);
	int fd = -1, dfd = -1, r;

	if (!text)
		return -ENOMEM;
	if ((size_t)snprintf(path, sizeof(path), "%s/" THPD_STATE_FILE, dir) >= sizeof(path) ||
	    (size_t)snprintf(tmp, sizeof(tmp), "%s/." THPD_STATE_FILE ".tmp", dir) >= sizeof(tmp)) {
		r = -ENAMETOOLONG;
		goto out;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	r = write_all(fd, text, strlen(text));
	if (r == 0)
		r = write_all(fd, "\n", 1);
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	fd = -1;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0) {
		unlink(tmp);
		goto out;
	}
	/* make the rename itself durable */
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fsync(dfd) < 0)
		r = -errno;
	if (dfd >= 0)
		close(dfd);
out:
	free(text);
	return r;
}
