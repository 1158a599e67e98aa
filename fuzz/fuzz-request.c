// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer target: thpd's request handler (daemon/server.c,
 * thpd_handle_request) behind the protocol parser, against a fake sysfs
 * tree (THP_ROOT) and a scratch state directory.
 *
 * Input: first byte = the caller (even: root, odd: uid 1000), the rest = one
 * message as it arrives on the socket. Properties:
 *  - every reply is an object with a boolean "ok"; a failure has a string
 *    "error" and a positive "errno"; it serialises to a valid message of at
 *    most THP_MSG_MAX bytes
 *  - a caller that is not root never changes anything, whatever it sends
 * "reload" is not fuzzed (it re-reads /etc and talks to systemd).
 */
#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "thp.h"
#include "thp-proto.h"
#include "server.h"

static struct thpd d;
static char root[64], sysdir[128], state[128];

static void write_text(const char *dir, const char *name, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0)
		abort();
}

static void reset_tree(void)
{
	write_text(sysdir, "enabled", "always [madvise] never\n");
	write_text(sysdir, "defrag", "always defer defer+madvise [madvise] never\n");
}

static char *read_text(const char *name)
{
	static char buf[2][256];
	static int which;
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", sysdir, name);
	which ^= 1;
	if (thp_read_file(path + strlen(root), buf[which], sizeof(buf[which])) < 0)
		abort();
	return buf[which];
}

static void cleanup(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	if (system(cmd) != 0)
		fprintf(stderr, "fuzz-request: could not remove %s\n", root);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char cmd[256];

	(void)argc;
	(void)argv;
	snprintf(root, sizeof(root), "/tmp/thp-fuzz-request.%d", (int)getpid());
	snprintf(sysdir, sizeof(sysdir), "%s" THP_SYSFS_DIR, root);
	snprintf(state, sizeof(state), "%s/state", root);
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/khugepaged %s %s/proc", sysdir, state, root);
	if (system(cmd) != 0)
		abort();
	atexit(cleanup);
	write_text(sysdir, "khugepaged/pages_to_scan", "4096\n");
	write_text(root, "proc/cmdline", "BOOT_IMAGE=/vmlinuz\n");
	thp_set_root(root);
	reset_tree();

	d.listen_fd = d.psi_fd = d.cn_fd = -1;
	d.config_path = "/nonexistent/thpd.conf";
	snprintf(d.state_dir, sizeof(d.state_dir), "%s", state);
	thpd_config_defaults(&d.cfg);
	if (thp_state_read(&d.kernel) < 0)
		abort();
	/* the target of this tree: its originals, nothing configured */
	thpd_originals_read_kernel(&d.originals);
	{
		struct thpd_inputs in = { .cfg = &d.cfg, .persist = &d.persist, .cmdline = &d.cmdline,
					  .originals = &d.originals };

		thpd_machine_start(&d.machine, &in);
	}
	return 0;
}

static void check_reply(struct json_object *reply)
{
	struct json_object *ok, *v, *again = NULL;
	const char *text;
	size_t len;

	if (!reply || !json_object_is_type(reply, json_type_object) ||
	    !json_object_object_get_ex(reply, "ok", &ok) || !json_object_is_type(ok, json_type_boolean))
		abort();
	if (!json_object_get_boolean(ok)) {
		if (!json_object_object_get_ex(reply, "error", &v) ||
		    !json_object_is_type(v, json_type_string) ||
		    !json_object_object_get_ex(reply, "errno", &v) ||
		    !json_object_is_type(v, json_type_int) || json_object_get_int(v) <= 0)
			abort();
	}
	text = json_object_to_json_string_ext(reply, JSON_C_TO_STRING_PLAIN);
	len = strlen(text);
	if (len > THP_MSG_MAX || thp_proto_parse(text, len, &again) != 0)
		abort();
	json_object_put(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct thpd_peer peer = { .pid = 4242, .n_groups = 0 };
	struct json_object *req, *cmd, *reply;
	char before[2][256];

	if (size < 1)
		return 0;
	peer.uid = peer.gid = (data[0] & 1) ? 1000 : 0;
	if (thp_proto_parse((const char *)data + 1, size - 1, &req) < 0)
		return 0;
	if (json_object_object_get_ex(req, "cmd", &cmd) &&
	    json_object_is_type(cmd, json_type_string) &&
	    strcmp(json_object_get_string(cmd), "reload") == 0) {
		json_object_put(req);
		return 0;
	}
	reset_tree();
	snprintf(before[0], sizeof(before[0]), "%s", read_text("enabled"));
	snprintf(before[1], sizeof(before[1]), "%s", read_text("defrag"));

	reply = thpd_handle_request(&d, &peer, req);
	check_reply(reply);
	if (peer.uid != 0 && (strcmp(before[0], read_text("enabled")) ||
			      strcmp(before[1], read_text("defrag"))))
		abort();	/* an unprivileged caller changed the system */
	json_object_put(reply);
	json_object_put(req);
	return 0;
}
