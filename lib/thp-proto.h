/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * thpd socket protocol framing: AF_UNIX SOCK_SEQPACKET, one JSON object per
 * message, at most THP_MSG_MAX bytes. See docs/abi.md.
 */
#ifndef THP_PROTO_H
#define THP_PROTO_H

#include <json-c/json.h>

/* connect to thpd; returns fd or -errno (-ENOENT/-ECONNREFUSED: not running) */
int thp_proto_connect(const char *path);
/* send one JSON object; -EMSGSIZE if its text exceeds THP_MSG_MAX */
int thp_proto_send(int fd, struct json_object *msg);
/*
 * receive one message; *out is a new reference to a JSON object.
 * -EMSGSIZE: larger than THP_MSG_MAX (truncated); -EBADMSG: not a JSON
 * object; -ECONNRESET: peer closed.
 */
int thp_proto_recv(int fd, struct json_object **out);
/*
 * parse one message already read (used by thp_proto_recv and fuzzers):
 * exactly one JSON object (standard JSON, valid UTF-8, no "\u0000", only
 * white space after it), else -EBADMSG
 */
int thp_proto_parse(const char *buf, size_t len, struct json_object **out);
/* send a request and wait for the reply (timeout_ms, -ETIMEDOUT) */
int thp_proto_call(int fd, struct json_object *req, struct json_object **reply,
		   int timeout_ms);
/* {"ok":false,"error":msg,"errno":err}; bytes of msg that are not UTF-8 become "\xHH" */
struct json_object *thp_proto_error(int err, const char *msg);

#endif
