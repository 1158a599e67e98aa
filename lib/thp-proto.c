// SPDX-License-Identifier: GPL-2.0-or-later
#include "thp-proto.h"
#include "thp.h"

#include <errno.h>
#include <stdbool.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int thp_proto_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

int thp_proto_send(int fd, struct json_object *msg)
{
	size_t len;
	const char *text = json_object_to_json_string_length(msg, JSON_C_TO_STRING_PLAIN, &len);
	ssize_t n;

	if (!text)
		return -ENOMEM;
	if (len > THP_MSG_MAX)
		return -EMSGSIZE;
	do
		n = send(fd, text, len, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

/*
 * "\u0000" anywhere: json-c would keep the NUL in a string value, where C
 * code sees only the prefix, and cut a member name there. Escapes are
 * walked pair by pair, so an escaped backslash followed by "u0000" is text.
 */
static bool has_nul_escape(const char *buf, size_t len)
{
	for (size_t i = 0; i + 1 < len; i++) {
		if (buf[i] != '\\')
			continue;
		if (buf[i + 1] == 'u' && i + 5 < len && strncmp(buf + i + 2, "0000", 4) == 0)
			return true;
		i++;	/* the escaped character */
	}
	return false;
}

int thp_proto_parse(const char *buf, size_t len, struct json_object **out)
{
	struct json_tokener *tok;
	struct json_object *obj;
	size_t used;

	*out = NULL;
	if (len == 0 || len > THP_MSG_MAX || memchr(buf, '\0', len) || has_nul_escape(buf, len))
		return -EBADMSG;
	tok = json_tokener_new();
	if (!tok)
		return -ENOMEM;
	/* standard JSON only, and only valid UTF-8: what is echoed stays valid */
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	obj = json_tokener_parse_ex(tok, buf, (int)len);
	used = json_tokener_get_parse_end(tok);
	if (!obj || json_tokener_get_error(tok) != json_tokener_success) {
		json_object_put(obj);
		json_tokener_free(tok);
		return -EBADMSG;
	}
	json_tokener_free(tok);
	/* trailing garbage other than white space is not a message */
	for (; used < len; used++)
		if (!strchr(" \t\r\n", buf[used])) {
			json_object_put(obj);
			return -EBADMSG;
		}
	if (!json_object_is_type(obj, json_type_object)) {
		json_object_put(obj);
		return -EBADMSG;
	}
	*out = obj;
	return 0;
}

int thp_proto_recv(int fd, struct json_object **out)
{
	char buf[THP_MSG_MAX + 1];
	ssize_t n;

	*out = NULL;
	do
		n = recv(fd, buf, sizeof(buf), MSG_TRUNC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -ECONNRESET;
	if ((size_t)n > THP_MSG_MAX)
		return -EMSGSIZE;
	return thp_proto_parse(buf, (size_t)n, out);
}

int thp_proto_call(int fd, struct json_object *req, struct json_object **reply,
		   int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int r;

	*reply = NULL;
	r = thp_proto_send(fd, req);
	if (r < 0)
		return r;
	do
		r = poll(&pfd, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	if (r == 0)
		return -ETIMEDOUT;
	return thp_proto_recv(fd, reply);
}

/* length of the valid UTF-8 sequence at s (RFC 3629: no overlongs, surrogates, > U+10FFFF), 0 if none */
static size_t utf8_len(const unsigned char *s)
{
	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		return (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (s[0] >= 0xe0 && s[0] <= 0xef) {
		if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 ||
		    (s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] > 0x9f))
			return 0;
		return 3;
	}
	if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 || (s[3] & 0xc0) != 0x80 ||
		    (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] > 0x8f))
			return 0;
		return 4;
	}
	return 0;
}

struct json_object *thp_proto_error(int err, const char *msg)
{
	struct json_object *o = json_object_new_object();
	const unsigned char *p = (const unsigned char *)msg;
	char *text;
	size_t n = 0;

	if (!o)
		return NULL;
	/* a reply is valid UTF-8 whatever the message quotes: other bytes as \xHH */
	text = malloc(strlen(msg) * 4 + 1);
	if (!text) {
		json_object_put(o);
		return NULL;
	}
	while (*p) {
		size_t len = utf8_len(p);

		if (len) {
			memcpy(text + n, p, len);
			n += len;
			p += len;
		} else {
			n += (size_t)sprintf(text + n, "\\x%02x", *p++);
		}
	}
	text[n] = '\0';
	json_object_object_add(o, "ok", json_object_new_boolean(0));
	json_object_object_add(o, "error", json_object_new_string(text));
	free(text);
	json_object_object_add(o, "errno", json_object_new_int(err < 0 ? -err : err));
	return o;
}
