/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The socket server (server.c): docs/abi.md, "thpd socket protocol". */
#ifndef THPD_SERVER_H
#define THPD_SERVER_H

#include <stdbool.h>
#include <sys/types.h>

#include <json-c/json.h>

#include "thpd.h"

struct thpd_peer {
	pid_t pid;
	uid_t uid;
	gid_t gid;
	int n_groups;		/* -1: not known */
	gid_t groups[64];
};

bool thpd_peer_may_change(const struct thpd_config *cfg, const struct thpd_peer *peer);
/* one parsed request -> its reply (a new reference, never NULL unless out of memory) */
struct json_object *thpd_handle_request(struct thpd *d, const struct thpd_peer *peer,
					struct json_object *req);
/* listen (thpd.socket's fd or --socket); 0 or -errno, logged */
int thpd_server_open(struct thpd *d);
void thpd_server_close(struct thpd *d);

#endif
