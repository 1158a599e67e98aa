// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The socket server (docs/abi.md, "thpd socket protocol"): AF_UNIX
 * SOCK_SEQPACKET, one JSON object per message of at most THP_MSG_MAX bytes.
 * Callers are identified with SO_PEERCRED: anyone may ping and status,
 * enable/defrag/shmem/khugepaged/reset need uid 0 or AdminGroup= membership,
 * reload needs uid 0.
 * A request larger than THP_MSG_MAX gets an error reply and the connection
 * is closed; anything else wrong gets an error reply and the connection
 * stays usable. A connection that sends nothing for THPD_IDLE_USEC is
 * closed.
 */
#include "server.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "collapse.h"
#include "log.h"
#include "thp-proto.h"

/*
 * Connection limits: anyone may connect (the socket is 0666), so no group
 * of users may lock out the others, least of all those who administer
 * THP. A connection that sends nothing for THPD_IDLE_USEC is closed (a
 * client sends its request as soon as it connects; thpctl waits 5 s for a
 * reply), so idle connections cannot hold slots; and a user who keeps
 * connections busy is held to THPD_MAX_CONNS_USER, users who may not change
 * anything together to THPD_MAX_CONNS_UNPRIV: the rest is kept for root and
 * AdminGroup= members.
 */
#define THPD_IDLE_USEC (10 * 1000000ULL)
#define THPD_MAX_CONNS 256		/* everyone together, root included */
#define THPD_MAX_CONNS_USER 16		/* each non-root uid */
#define THPD_MAX_CONNS_NONROOT 224	/* all non-root uids: 32 kept for root */
#define THPD_MAX_CONNS_UNPRIV 192	/* neither root nor AdminGroup=: 32 more for admins */

struct conn {
	struct conn *next, **pprev;	/* in d->conns */
	struct thpd *d;
	int fd;
	sd_event_source *src;
	sd_event_source *idle;		/* closes the connection after THPD_IDLE_USEC */
	struct thpd_peer peer;
	bool admin;			/* may change settings (root or AdminGroup=) */
};

bool thpd_peer_may_change(const struct thpd_config *cfg, const struct thpd_peer *peer)
{
	if (peer->uid == 0)
		return true;
	if (!cfg->has_admin_gid)
		return false;
	if (peer->gid == cfg->admin_gid)
		return true;
	for (int i = 0; i < peer->n_groups; i++)
		if (peer->groups[i] == cfg->admin_gid)
			return true;
	return false;
}

static struct json_object *ok_reply(void)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "ok", json_object_new_boolean(1));
	return o;
}

static struct json_object *error_reply(int err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static struct json_object *error_reply(int err, const char *fmt, ...)
{
	char msg[1536];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return thp_proto_error(err, msg);
}

static void add_str(struct json_object *o, const char *key, const char *v)
{
	json_object_object_add(o, key, v && *v ? json_object_new_string(v) : NULL);
}

/*
 * Request text for a reply or the log: printable ASCII as it is, every
 * other byte as \xHH, cut after 64 bytes of s: a reply stays valid UTF-8
 * and short whatever was sent.
 */
static const char *printable(const char *s, char *buf, size_t size)
{
	size_t o = 0, i;

	for (i = 0; s[i] && i < 64 && o + 5 < size; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (ch >= 0x20 && ch < 0x7f && ch != '\\')
			buf[o++] = (char)ch;
		else
			o += (size_t)snprintf(buf + o, size - o, "\\x%02x", ch);
	}
	if (s[i] && o + 4 < size) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o] = '\0';
	return buf;
}

static struct json_object *state_reply(struct thpd *d)
{
	struct json_object *o;
	struct thp_state st;
	int r = thp_state_read(&st);

	if (r < 0)
		return error_reply(r, "cannot read the THP state: %s", strerror(-r));
	d->kernel = st;
	o = ok_reply();
	add_str(o, "enabled", thp_enabled_name(st.enabled));
	add_str(o, "defrag", st.defrag);
	/* the RFC number only where the kernel has it: elsewhere a 0 reads as off */
	if (st.rfc >= 0)
		json_object_object_add(o, "mode", json_object_new_int(st.rfc));
	return o;
}

/* file: {"value": word or number, "source": where it came from} */
static void add_value(struct json_object *o, const char *file, struct json_object *value,
		      const char *src)
{
	struct json_object *v = json_object_new_object();

	json_object_object_add(v, "value", value);
	add_str(v, "source", src);
	json_object_object_add(o, file, v);
}

/*
 * The values of t by sysfs file (relative to the THP directory), as
 * docs/abi.md says; with base, only those that differ from base's
 */
static struct json_object *values_json(const struct thpd_target *t, const struct thpd_target *base)
{
	struct json_object *o = json_object_new_object();
	char file[64];

#define DIFFERS(field) (!base || strcmp(t->field, base->field) != 0)
	if (t->enabled[0] && DIFFERS(enabled))
		add_value(o, "enabled", json_object_new_string(t->enabled), t->enabled_src);
	if (t->defrag[0] && DIFFERS(defrag))
		add_value(o, "defrag", json_object_new_string(t->defrag), t->defrag_src);
	if (t->shmem[0] && DIFFERS(shmem))
		add_value(o, "shmem_enabled", json_object_new_string(t->shmem), t->shmem_src);
#undef DIFFERS
	for (unsigned int i = 0; i < t->n_sizes; i++) {
		const struct thpd_size_target *z = &t->sizes[i];
		const struct thpd_size_target *b = base ? thpd_target_size(base, z->kib) : NULL;

		snprintf(file, sizeof(file), "hugepages-%lukB/enabled", z->kib);
		if (z->enabled[0] && (!base || !b || strcmp(z->enabled, b->enabled) != 0))
			add_value(o, file, json_object_new_string(z->enabled), z->enabled_src);
		snprintf(file, sizeof(file), "hugepages-%lukB/shmem_enabled", z->kib);
		if (z->shmem[0] && (!base || !b || strcmp(z->shmem, b->shmem) != 0))
			add_value(o, file, json_object_new_string(z->shmem), z->shmem_src);
	}
	for (int k = 0; k < THPD_KH_N; k++) {
		if (!t->kh_set[k] || (base && base->kh_set[k] && base->kh[k] == t->kh[k]))
			continue;
		snprintf(file, sizeof(file), "khugepaged/%s", thpd_kh_file(k));
		add_value(o, file, json_object_new_uint64(t->kh[k]), t->kh_src[k]);
	}
	return o;
}

static struct json_object *cmd_status(struct thpd *d)
{
	struct json_object *o = state_reply(d), *a, *p, *k, *okv;
	const struct thpd_target *t = &d->machine.target;
	struct thpd_target held;

	if (!json_object_object_get_ex(o, "ok", &okv) || !json_object_get_boolean(okv))
		return o;
	add_str(o, "version", THP_VERSION);
	thpd_held(d, &held);
	a = json_object_new_object();
	json_object_object_add(a, "enabled", json_object_new_boolean(d->cfg.adaptive.enabled));
	add_str(a, "state", thpd_astate_name(d->machine.adaptive.state));
	json_object_object_add(a, "switches",
			       json_object_new_int64((int64_t)d->machine.adaptive.switches));
	json_object_object_add(a, "reason", json_object_new_string(d->machine.adaptive.reason));
	/* each size the step-down changed and the word it goes back to */
	p = json_object_new_object();
	for (unsigned int i = 0; i < held.n_sizes && p; i++) {
		const struct thpd_size_target *z = &held.sizes[i], *b = thpd_target_size(t, z->kib);
		char name[16];

		if (b && strcmp(z->enabled, b->enabled) != 0)
			add_str(p, thp_size_name(z->kib, name, sizeof(name)), b->enabled);
	}
	json_object_object_add(a, "stepped_sizes", p);
	/* what thpd wants the host to hold, and the step-down on top of it (null: none) */
	json_object_object_add(o, "target", values_json(t, NULL));
	json_object_object_add(o, "overlay",
			       d->machine.adaptive.state == THPD_ASTATE_STEPPED_DOWN ?
			       values_json(&held, t) : NULL);
	json_object_object_add(o, "adaptive", a);
	json_object_object_add(o, "rules", json_object_new_int((int)d->cfg.n_rules));
	json_object_object_add(o, "rules_applied", json_object_new_int64((int64_t)d->rules_applied));
	thpd_collapse_status(d, o);
	if (thpd_persist_empty(&d->persist)) {
		json_object_object_add(o, "persisted", NULL);
	} else {
		struct json_object *sizes = json_object_new_object();

		p = json_object_new_object();
		add_str(p, "enabled", d->persist.enabled);
		add_str(p, "defrag", d->persist.defrag);
		add_str(p, "shmem_enabled", d->persist.shmem);
		for (int k = 0; k < THPD_KH_N; k++) {
			struct json_object *kh;

			if (!d->persist.kh_set[k])
				continue;
			if (!json_object_object_get_ex(p, "khugepaged", &kh)) {
				kh = json_object_new_object();
				json_object_object_add(p, "khugepaged", kh);
			}
			json_object_object_add(kh, thpd_kh_file(k),
					       json_object_new_int64((int64_t)d->persist.kh[k]));
		}
		for (unsigned int i = 0; i < d->persist.n_sizes && sizes; i++) {
			const struct thpd_persist_size *z = &d->persist.sizes[i];
			struct json_object *v = json_object_new_object();
			char name[16];

			add_str(v, "enabled", z->enabled);
			add_str(v, "shmem_enabled", z->shmem);
			json_object_object_add(sizes, thp_size_name(z->kib, name, sizeof(name)), v);
		}
		json_object_object_add(p, "sizes", sizes);
		json_object_object_add(o, "persisted", p);
	}
	k = json_object_new_object();
	json_object_object_add(k, "mode_file", json_object_new_boolean(d->kernel.has_mode_file));
	json_object_object_add(k, "thp_policy", json_object_new_boolean(d->kernel.has_thp_policy));
	json_object_object_add(o, "kernel_features", k);
	return o;
}

/*
 * "size": "64K" or "64K,2M" (thp_size_parse() names, each once) into kibs;
 * 0, or -EINVAL with the reply's text in why
 */
static int parse_size_list(const char *list, unsigned long *kibs, int *n, char *why, size_t size)
{
	char buf[256], shown[300], *tok, *save;

	*n = 0;
	if (strlen(list) >= sizeof(buf) || !*list) {
		snprintf(why, size, "invalid \"size\" '%s' (expected e.g. 64K or 64K,2M)",
			 printable(list, shown, sizeof(shown)));
		return -EINVAL;
	}
	strcpy(buf, list);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		unsigned long kib;
		bool dup = false;

		if (thp_size_parse(tok, &kib) < 0 || kib < 8 || kib > 1024UL * 1024 || (kib & (kib - 1))) {
			snprintf(why, size, "invalid size '%s' (expected a power of two from 8K to 1G, e.g. 64K, 2M)",
				 printable(tok, shown, sizeof(shown)));
			return -EINVAL;
		}
		for (int i = 0; i < *n; i++)
			dup |= kibs[i] == kib;
		if (dup)
			continue;
		if (*n == THP_SIZES_MAX) {
			snprintf(why, size, "more than %d sizes", THP_SIZES_MAX);
			return -EINVAL;
		}
		kibs[(*n)++] = kib;
	}
	if (!*n || list[0] == ',' || list[strlen(list) - 1] == ',' || strstr(list, ",,")) {
		snprintf(why, size, "invalid \"size\" '%s' (expected e.g. 64K or 64K,2M)",
			 printable(list, shown, sizeof(shown)));
		return -EINVAL;
	}
	return 0;
}

/* thpd_peer_may_change(), or the refusal to send */
static struct json_object *refuse_change(struct thpd *d, const struct thpd_peer *peer,
					 const char *cmd)
{
	if (thpd_peer_may_change(&d->cfg, peer))
		return NULL;
	log_event(LOG_NOTICE, "denied", "Refused '%s' from uid %u (pid %d): not root%s%s",
		  cmd, peer->uid, (int)peer->pid, d->cfg.has_admin_gid ? " nor in group " : "",
		  d->cfg.has_admin_gid ? d->cfg.admin_group : "");
	if (d->cfg.has_admin_gid)
		return error_reply(EPERM, "permission denied: '%s' needs root or membership of group '%s'",
				   cmd, d->cfg.admin_group);
	return error_reply(EPERM, "permission denied: '%s' needs root", cmd);
}

/*
 * {"cmd":"khugepaged","set":{"pages_to_scan":4096,...}}: each name a file
 * of khugepaged/ thpd sets, each value a number; the reply holds every
 * khugepaged value the kernel has now
 */
static struct json_object *cmd_khugepaged(struct thpd *d, const struct thpd_peer *peer,
					  struct json_object *req)
{
	struct json_object *set, *o, *kh, *refused = refuse_change(d, peer, "khugepaged");
	bool want[THPD_KH_N] = { false };
	uint64_t val[THPD_KH_N] = { 0 };
	char why[1024], shown[300];
	int r;

	if (refused)
		return refused;
	if (!json_object_object_get_ex(req, "set", &set) || !json_object_is_type(set, json_type_object) ||
	    !json_object_object_length(set))
		return error_reply(EINVAL, "'khugepaged' needs \"set\": an object of settings, "
				   "e.g. {\"pages_to_scan\":4096}");
	json_object_object_foreach(set, name, v) {
		int k = thpd_kh_from_file(name);

		if (k < 0)
			return error_reply(EINVAL, "unknown khugepaged setting '%s'",
					   printable(name, shown, sizeof(shown)));
		if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0)
			return error_reply(EINVAL, "khugepaged setting '%s' needs a number of 0 or more",
					   name);
		want[k] = true;
		val[k] = (uint64_t)json_object_get_int64(v);
	}
	r = thpd_set_khugepaged(d, want, val, why, sizeof(why));
	if (r < 0)
		return error_reply(-r, "%s", why);
	o = ok_reply();
	kh = json_object_new_object();
	for (int k = 0; k < THPD_KH_N; k++) {
		uint64_t now;

		if (thp_khugepaged_read(thpd_kh_file(k), &now) == 0)
			json_object_object_add(kh, thpd_kh_file(k), json_object_new_int64((int64_t)now));
	}
	json_object_object_add(o, "khugepaged", kh);
	return o;
}

static struct json_object *cmd_set(struct thpd *d, const struct thpd_peer *peer,
				   const char *cmd, struct json_object *req)
{
	bool enable = strcmp(cmd, "enable") == 0, shmem = strcmp(cmd, "shmem") == 0;
	enum thp_knob_id knob = THP_KNOB_DEFRAG;
	unsigned long kibs[THP_SIZES_MAX];
	const char *value;
	char words[128], why[1024], shown[300];
	struct json_object *v, *sz = NULL, *refused = refuse_change(d, peer, cmd);
	int r, n = 0;

	if (refused)
		return refused;
	if (!json_object_object_get_ex(req, "value", &v) || !json_object_is_type(v, json_type_string))
		return error_reply(EINVAL, "'%s' needs a string \"value\"", cmd);
	value = json_object_get_string(v);
	printable(value, shown, sizeof(shown));
	if (json_object_object_get_ex(req, "size", &sz)) {
		if (!json_object_is_type(sz, json_type_string))
			return error_reply(EINVAL, "\"size\" must be a string such as \"64K,2M\"");
		if (parse_size_list(json_object_get_string(sz), kibs, &n, why, sizeof(why)) < 0)
			return error_reply(EINVAL, "%s", why);
	}
	if (shmem)
		knob = sz ? THP_KNOB_SIZE_SHMEM_ENABLED : THP_KNOB_SHMEM_ENABLED;
	else if (enable && sz)
		knob = THP_KNOB_SIZE_ENABLED;
	if (shmem || sz)
		r = thpd_set_knob(d, knob, value, kibs, n, why, sizeof(why));
	else
		r = enable ? thpd_set_enabled(d, value, why, sizeof(why)) :
			     thpd_set_defrag(d, value, why, sizeof(why));
	if (r == -EINVAL && !why[0])
		return error_reply(EINVAL, "invalid value '%s' for %s%s (expected %s)", shown, cmd,
				   sz ? " --size" : "",
				   enable && !sz ? thp_mode_words_text(words, sizeof(words)) :
				   thp_knob_words_text(knob, words, sizeof(words)));
	if (r < 0)
		return error_reply(r, "%s", why);
	return state_reply(d);
}

/* forget what an administrator set: the target of the command line, configuration, originals */
static struct json_object *cmd_reset(struct thpd *d, const struct thpd_peer *peer)
{
	struct json_object *refused = refuse_change(d, peer, "reset");
	char why[1024];
	int r;

	if (refused)
		return refused;
	r = thpd_reset(d, why, sizeof(why));
	if (r < 0)
		return error_reply(r, "%s", why);
	return state_reply(d);
}

struct json_object *thpd_handle_request(struct thpd *d, const struct thpd_peer *peer,
					struct json_object *req)
{
	struct json_object *c, *o;
	const char *cmd;
	char shown[300];
	bool takes_value, takes_size, takes_set;

	if (!json_object_object_get_ex(req, "cmd", &c) || !json_object_is_type(c, json_type_string))
		return error_reply(EINVAL, "request without a string \"cmd\"");
	cmd = json_object_get_string(c);
	/*
	 * exactly what docs/abi.md says: "cmd", "value" for enable, defrag and
	 * shmem, "size" for enable and shmem, "set" for khugepaged
	 */
	takes_value = strcmp(cmd, "enable") == 0 || strcmp(cmd, "defrag") == 0 ||
		      strcmp(cmd, "shmem") == 0;
	takes_size = strcmp(cmd, "enable") == 0 || strcmp(cmd, "shmem") == 0;
	takes_set = strcmp(cmd, "khugepaged") == 0;
	json_object_object_foreach(req, key, val) {
		const char *text;

		if (strcmp(key, "cmd") != 0 && !(takes_value && strcmp(key, "value") == 0) &&
		    !(takes_size && strcmp(key, "size") == 0) && !(takes_set && strcmp(key, "set") == 0))
			return error_reply(EINVAL, "unexpected member \"%s\" in a '%s' request",
					   printable(key, shown, sizeof(shown)),
					   printable(cmd, shown + 150, sizeof(shown) - 150));
		if (!json_object_is_type(val, json_type_string))
			continue;	/* said below, for the member it is */
		text = json_object_get_string(val);
		for (const char *p = text; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				return error_reply(EINVAL, "a control character in \"%s\"", key);
	}
	if (strcmp(cmd, "ping") == 0) {
		o = ok_reply();
		add_str(o, "version", THP_VERSION);
		return o;
	}
	if (strcmp(cmd, "status") == 0)
		return cmd_status(d);
	if (takes_value)
		return cmd_set(d, peer, cmd, req);
	if (takes_set)
		return cmd_khugepaged(d, peer, req);
	if (strcmp(cmd, "reset") == 0)
		return cmd_reset(d, peer);
	if (strcmp(cmd, "reload") == 0) {
		if (peer->uid != 0)
			return error_reply(EPERM, "permission denied: 'reload' needs root");
		if (thpd_reload(d) == -EINVAL)
			return error_reply(EINVAL, "configuration is unusable, kept the last good one (see journalctl -u thpd)");
		return ok_reply();
	}
	return error_reply(EOPNOTSUPP, "unknown command '%s'", printable(cmd, shown, sizeof(shown)));
}

/* ---- connections ---- */

static void conn_free(struct conn *c)
{
	struct thpd *d = c->d;

	*c->pprev = c->next;
	if (c->next)
		c->next->pprev = c->pprev;
	sd_event_source_disable_unref(c->src);
	sd_event_source_disable_unref(c->idle);
	close(c->fd);
	d->n_conns--;
	free(c);
	/* a descriptor is free again: accept what waited */
	if (d->accept_paused && d->listen_src) {
		d->accept_paused = false;
		sd_event_source_set_enabled(d->listen_src, SD_EVENT_ON);
	}
}

static int send_reply(struct conn *c, struct json_object *reply)
{
	int r = reply ? thp_proto_send(c->fd, reply) : -ENOMEM;

	json_object_put(reply);
	return r;
}

/*
 * The caller's supplementary groups, for AdminGroup=. More than fit in
 * peer->groups: look for the admin group in all of them, never in a
 * truncated list.
 */
static void peer_groups(int fd, gid_t admin_gid, struct thpd_peer *peer)
{
	socklen_t len = sizeof(peer->groups);
	gid_t *all;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, peer->groups, &len) == 0) {
		peer->n_groups = (int)(len / sizeof(gid_t));
		return;
	}
	if (errno != ERANGE)
		return;
	all = malloc(len);
	if (all && getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, all, &len) == 0) {
		peer->n_groups = 0;
		for (size_t i = 0; i < len / sizeof(gid_t); i++)
			if (all[i] == admin_gid) {
				peer->groups[0] = all[i];
				peer->n_groups = 1;
			}
	}
	free(all);
}

/* the connection was busy: its idle time starts again */
static void idle_restart(struct conn *c)
{
	if (sd_event_source_set_time_relative(c->idle, THPD_IDLE_USEC) < 0 ||
	    sd_event_source_set_enabled(c->idle, SD_EVENT_ONESHOT) < 0)
		log_warn("Cannot restart the idle timer of a connection: %m");
}

static int on_idle(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct conn *c = userdata;

	(void)s;
	(void)usec;
	log_debug("Closing a connection of uid %u (pid %d), idle for %llu s", c->peer.uid,
		  (int)c->peer.pid, THPD_IDLE_USEC / 1000000);
	conn_free(c);
	return 0;
}

static int on_conn(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct conn *c = userdata;
	char buf[THP_MSG_MAX + 1];
	struct json_object *req, *reply;
	ssize_t n;
	int r;

	(void)s;
	if (!(revents & EPOLLIN)) {
		conn_free(c);
		return 0;
	}
	n = recv(fd, buf, sizeof(buf), MSG_TRUNC | MSG_DONTWAIT);
	if (n < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return 0;
		conn_free(c);
		return 0;
	}
	if (n == 0) {
		/* SOCK_SEQPACKET: 0 is the peer's end, or a message of no bytes */
		if (revents & (EPOLLRDHUP | EPOLLHUP)) {
			conn_free(c);
			return 0;
		}
		if (send_reply(c, error_reply(EBADMSG, "empty message: expected one JSON object")) < 0)
			conn_free(c);
		return 0;
	}
	if ((size_t)n > THP_MSG_MAX) {
		send_reply(c, error_reply(EMSGSIZE, "request of %zd bytes exceeds the limit of %d bytes",
					  n, THP_MSG_MAX));
		conn_free(c);
		return 0;
	}
	r = thp_proto_parse(buf, (size_t)n, &req);
	if (r < 0) {
		reply = error_reply(EBADMSG, "malformed request: expected one JSON object");
	} else {
		/* AdminGroup= may have come with a reload since the connection opened */
		if (c->peer.n_groups < 0 && c->peer.uid != 0 && c->d->cfg.has_admin_gid)
			peer_groups(c->fd, c->d->cfg.admin_gid, &c->peer);
		reply = thpd_handle_request(c->d, &c->peer, req);
		json_object_put(req);
	}
	if (send_reply(c, reply) < 0)
		conn_free(c);
	else
		idle_restart(c);
	return 0;
}

/* would one more connection of peer (admin: it may change settings) exceed a limit? */
static bool too_many(const struct thpd *d, const struct thpd_peer *peer, bool admin)
{
	unsigned int same = 0, nonroot = 0, unpriv = 0;

	if (d->n_conns >= THPD_MAX_CONNS)
		return true;
	if (peer->uid == 0)
		return false;
	for (const struct conn *c = d->conns; c; c = c->next) {
		same += c->peer.uid == peer->uid;
		nonroot += c->peer.uid != 0;
		unpriv += !c->admin;
	}
	return same >= THPD_MAX_CONNS_USER || nonroot >= THPD_MAX_CONNS_NONROOT ||
	       (!admin && unpriv >= THPD_MAX_CONNS_UNPRIV);
}

static int on_accept_retry(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct thpd *d = userdata;

	(void)s;
	(void)usec;
	if (d->accept_paused && d->listen_src) {
		d->accept_paused = false;
		sd_event_source_set_enabled(d->listen_src, SD_EVENT_ON);
	}
	return 0;
}

static int on_accept(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct thpd *d = userdata;
	struct thpd_peer peer = { .n_groups = -1 };
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct conn *c;
	bool admin;
	int cfd, r;

	(void)s;
	(void)revents;
	cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (cfd < 0) {
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
			/*
			 * The connection stays queued and the socket readable:
			 * stop watching it until a connection of ours closes.
			 */
			if (!d->accept_paused_logged)
				log_warn("Cannot accept connections: %m; pausing the socket until a connection closes");
			d->accept_paused_logged = true;
			d->accept_paused = true;
			sd_event_source_set_enabled(d->listen_src, SD_EVENT_OFF);
			/* none of ours to wait for: try again in a second */
			if (!d->n_conns &&
			    sd_event_add_time_relative(d->event, NULL, CLOCK_MONOTONIC, 1000000, 100000,
						       on_accept_retry, d) < 0)
				sd_event_source_set_enabled(d->listen_src, SD_EVENT_ON);
		}
		return 0;
	}
	if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		log_warn("SO_PEERCRED failed: %m; dropping the connection");
		close(cfd);
		return 0;
	}
	peer.pid = cred.pid;
	peer.uid = cred.uid;
	peer.gid = cred.gid;
	if (peer.uid != 0 && d->cfg.has_admin_gid)
		peer_groups(cfd, d->cfg.admin_gid, &peer);
	admin = thpd_peer_may_change(&d->cfg, &peer);
	if (too_many(d, &peer, admin)) {
		struct json_object *e = thp_proto_error(EBUSY, "too many connections, try again later");

		char buf[64];

		thp_proto_send(cfd, e);
		json_object_put(e);
		/* closing with unread data resets the peer before it reads the reply */
		while (recv(cfd, buf, sizeof(buf), MSG_DONTWAIT | MSG_TRUNC) > 0)
			;
		shutdown(cfd, SHUT_WR);
		close(cfd);
		return 0;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		close(cfd);
		return 0;
	}
	c->d = d;
	c->fd = cfd;
	c->peer = peer;
	c->admin = admin;
	r = sd_event_add_io(d->event, &c->src, cfd, EPOLLIN | EPOLLRDHUP, on_conn, c);
	if (r >= 0)
		r = sd_event_add_time_relative(d->event, &c->idle, CLOCK_MONOTONIC, THPD_IDLE_USEC,
					       100000, on_idle, c);
	if (r < 0) {
		sd_event_source_disable_unref(c->src);
		close(cfd);
		free(c);
		return 0;
	}
	c->next = d->conns;
	if (c->next)
		c->next->pprev = &c->next;
	c->pprev = &d->conns;
	d->conns = c;
	d->n_conns++;
	return 0;
}

static int create_socket(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int fd, r;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	/* a stale socket of a previous instance: nobody answers on it */
	if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode)) {
		r = thp_proto_connect(path);
		if (r >= 0) {
			close(r);
			return -EADDRINUSE;
		}
		unlink(path);
	}
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || chmod(path, 0666) < 0 ||
	    listen(fd, SOMAXCONN) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

int thpd_server_open(struct thpd *d)
{
	int n = sd_listen_fds(1), r;

	if (n > 1) {
		log_err("Got %d sockets from systemd, expected one (thpd.socket)", n);
		return -EINVAL;
	}
	if (n == 1) {
		if (sd_is_socket_unix(SD_LISTEN_FDS_START, SOCK_SEQPACKET, 1, NULL, 0) <= 0) {
			log_err("The socket from systemd is not a listening AF_UNIX SOCK_SEQPACKET socket");
			return -EINVAL;
		}
		d->listen_fd = SD_LISTEN_FDS_START;
		d->socket_created = false;
	} else {
		r = create_socket(d->socket_path);
		if (r < 0) {
			log_err("Cannot listen on %s: %s", d->socket_path, strerror(-r));
			return r;
		}
		d->listen_fd = r;
		d->socket_created = true;
	}
	r = sd_event_add_io(d->event, &d->listen_src, d->listen_fd, EPOLLIN, on_accept, d);
	if (r < 0) {
		log_err("Cannot watch the socket %s: %s", d->socket_path, strerror(-r));
		thpd_server_close(d);
		return r;
	}
	log_debug("Listening on %s%s", d->socket_path, d->socket_created ? "" : " (thpd.socket)");
	return 0;
}

void thpd_server_close(struct thpd *d)
{
	while (d->conns)
		conn_free(d->conns);
	d->listen_src = sd_event_source_disable_unref(d->listen_src);
	if (d->listen_fd >= 0) {
		close(d->listen_fd);
		if (d->socket_created)
			unlink(d->socket_path);
	}
	d->listen_fd = -1;
}
