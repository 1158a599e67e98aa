// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * thpctl's client of thpd: one request, one reply, over the socket protocol
 * of lib/thp-proto.c (docs/abi.md): status, enable, defrag, shmem and
 * khugepaged use it.
 */
#include "thpctl.h"
#include "thp.h"
#include "thp-proto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define THPD_TIMEOUT_MS 5000

const char *thpctl_socket_path(void)
{
	const char *p = getenv("THPD_SOCKET");

	return p && *p ? p : THP_SOCKET_PATH;
}

int thpctl_call(const char *cmd, const char *value, struct json_object **reply,
		const char **why)
{
	return thpctl_call_size(cmd, value, NULL, reply, why);
}

/* send req (taken) and read the reply; what names the request in messages */
static int call(struct json_object *req, const char *what, struct json_object **reply,
		const char **why)
{
	const char *path = thpctl_socket_path();
	struct json_object *ok, *err, *eno;
	int fd, r;

	*reply = NULL;
	fd = thp_proto_connect(path);
	if (fd < 0) {
		/* nothing listening: not running (or not reachable by us) */
		json_object_put(req);
		*why = strerror(-fd);
		return 0;
	}
	r = req ? thp_proto_call(fd, req, reply, THPD_TIMEOUT_MS) : -ENOMEM;
	json_object_put(req);
	close(fd);
	if (r == -ETIMEDOUT) {
		log_error("thpd at %s did not answer '%s' within %d s", path, what,
			  THPD_TIMEOUT_MS / 1000);
		return r;
	}
	if (r < 0) {
		log_error("talking to thpd at %s: %s", path, strerror(-r));
		return r;
	}
	if (!json_object_object_get_ex(*reply, "ok", &ok) || !json_object_get_boolean(ok)) {
		int e = EPROTO;

		if (json_object_object_get_ex(*reply, "errno", &eno) && json_object_get_int(eno) > 0)
			e = json_object_get_int(eno);
		log_error("thpd refused '%s': %s", what,
			  json_object_object_get_ex(*reply, "error", &err) ?
			  json_object_get_string(err) : strerror(e));
		json_object_put(*reply);
		*reply = NULL;
		return -e;
	}
	json_object_object_del(*reply, "ok");
	return 1;
}

int thpctl_call_size(const char *cmd, const char *value, const char *size,
		     struct json_object **reply, const char **why)
{
	struct json_object *req = json_object_new_object();
	char what[256];

	jadd_str(req, "cmd", cmd);
	if (value)
		jadd_str(req, "value", value);
	if (size)
		jadd_str(req, "size", size);
	snprintf(what, sizeof(what), "%s%s%s", cmd, value ? " " : "", value ? value : "");
	return call(req, what, reply, why);
}

int thpctl_call_object(const char *cmd, const char *member, struct json_object *obj,
		       struct json_object **reply, const char **why)
{
	struct json_object *req = json_object_new_object();

	jadd_str(req, "cmd", cmd);
	if (req && obj)
		json_object_object_add(req, member, obj);
	else
		json_object_put(obj);
	return call(req, cmd, reply, why);
}
