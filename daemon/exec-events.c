// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Per-application rules at exec: the proc connector's exec events
 * (netlink), the process's exe/comm/cgroup/uid from /proc, the first
 * matching [Rule] (rules.c), its policy written to /proc/PID/thp_policy.
 */
#include "exec-events.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>

#include "log.h"
#include "procinfo.h"
#include "rules.h"

static void on_exec(struct thpd *d, pid_t pid)
{
	struct thpd_proc_buf buf;
	struct thpd_proc_info p;
	const struct thpd_rule *rule;
	int r;

	if (thpd_proc_info_read(pid, &buf, &p) < 0)
		return;	/* gone already */
	rule = thpd_rules_match(&d->cfg, &p);
	if (!rule)
		return;
	r = thp_policy_set(pid, rule->policy);
	if (r == -ENOENT || r == -ESRCH) {
		if (!d->kernel.has_thp_policy && !d->rules_unsupported_logged) {
			d->rules_unsupported_logged = true;
			log_event(LOG_WARNING, "rules-unsupported",
				  "This kernel has no per-process THP policy (/proc/PID/thp_policy); rules cannot be applied");
		}
		return;
	}
	if (r < 0) {
		log_warn("[Rule %s]: cannot set policy %s on %d (%s): %s", rule->name,
			 thp_policy_name(rule->policy), (int)pid, p.exe ? p.exe : "?", strerror(-r));
		return;
	}
	d->rules_applied++;
	thpd_logf(LOG_INFO, &(const struct thpd_log_fields){
			.event = "rule-applied", .to = thp_policy_name(rule->policy),
			.reason = rule->name },
		  "[Rule %s]: policy %s for %d (%s, comm %s, uid %u)", rule->name,
		  thp_policy_name(rule->policy), (int)pid, p.exe ? p.exe : "?",
		  p.comm ? p.comm : "?", p.uid);
}

static int on_netlink(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct thpd *d = userdata;
	char buf[8192] __attribute__((aligned(NLMSG_ALIGNTO)));
	struct sockaddr_nl from;
	socklen_t fromlen;
	ssize_t n;

	(void)s;
	(void)revents;
	for (;;) {
		fromlen = sizeof(from);
		n = recvfrom(fd, buf, sizeof(buf), MSG_DONTWAIT, (struct sockaddr *)&from, &fromlen);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ENOBUFS) {
				log_warn("Exec events were lost (receive buffer overrun); some new processes may have missed their rule");
				continue;
			}
			return 0;	/* EAGAIN */
		}
		if (from.nl_pid != 0)
			continue;	/* not from the kernel */
		thpd_exec_events_feed(d, buf, (size_t)n);
	}
}

/*
 * The datagram is read with memcpy, never through casts: after the 16-byte
 * nlmsghdr and the 20-byte cn_msg, struct proc_event (8-byte aligned for its
 * timestamp) starts 36 bytes in.
 */
int thpd_cn_parse(const void *buf, size_t len, void (*on_exec)(void *userdata, pid_t tgid),
		  void *userdata)
{
	const unsigned char *p = buf;
	int n = 0;

	while (len >= NLMSG_HDRLEN) {
		struct nlmsghdr nh;
		struct cn_msg cn;
		struct proc_event ev;
		size_t msg_len, data_len;

		memcpy(&nh, p, sizeof(nh));
		if (nh.nlmsg_len < NLMSG_HDRLEN || nh.nlmsg_len > len)
			break;	/* not a message: stop, as NLMSG_OK would */
		msg_len = nh.nlmsg_len;
		data_len = msg_len - NLMSG_HDRLEN;
		if (nh.nlmsg_type != NLMSG_NOOP && nh.nlmsg_type != NLMSG_ERROR &&
		    data_len >= sizeof(cn) + offsetof(struct proc_event, event_data) +
				sizeof(ev.event_data.exec)) {
			memcpy(&cn, p + NLMSG_HDRLEN, sizeof(cn));
			memset(&ev, 0, sizeof(ev));
			memcpy(&ev, p + NLMSG_HDRLEN + sizeof(cn),
			       data_len - sizeof(cn) < sizeof(ev) ? data_len - sizeof(cn) : sizeof(ev));
			if (cn.id.idx == CN_IDX_PROC && cn.id.val == CN_VAL_PROC &&
			    ev.what == PROC_EVENT_EXEC && ev.event_data.exec.process_tgid > 0) {
				on_exec(userdata, ev.event_data.exec.process_tgid);
				n++;
			}
		}
		if (NLMSG_ALIGN(msg_len) >= len)
			break;
		p += NLMSG_ALIGN(msg_len);
		len -= NLMSG_ALIGN(msg_len);
	}
	return n;
}

static void exec_cb(void *userdata, pid_t tgid)
{
	on_exec(userdata, tgid);
}

void thpd_exec_events_feed(struct thpd *d, const void *buf, size_t len)
{
	thpd_cn_parse(buf, len, exec_cb, d);
}

static int cn_open(void)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = CN_IDX_PROC };
	struct __attribute__((aligned(NLMSG_ALIGNTO))) {
		struct nlmsghdr nl;
		struct __attribute__((packed)) {
			struct cn_msg cn;
			enum proc_cn_mcast_op op;
		};
	} msg;
	int fd, size = 1 << 20, r;

	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_CONNECTOR);
	if (fd < 0)
		return -errno;
	/* a burst of execs must not overrun us: FORCE needs CAP_NET_ADMIN, which we have */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		goto fail;
	memset(&msg, 0, sizeof(msg));
	msg.nl.nlmsg_len = sizeof(msg);
	msg.nl.nlmsg_type = NLMSG_DONE;
	msg.nl.nlmsg_pid = 0;
	msg.cn.id.idx = CN_IDX_PROC;
	msg.cn.id.val = CN_VAL_PROC;
	msg.cn.len = sizeof(enum proc_cn_mcast_op);
	msg.op = PROC_CN_MCAST_LISTEN;
	if (send(fd, &msg, sizeof(msg), 0) < 0)
		goto fail;
	return fd;
fail:
	r = -errno;
	close(fd);
	return r;
}

int thpd_exec_events_open(struct thpd *d)
{
	int r;

	if (!d->cfg.n_rules)
		return 0;
	if (!d->kernel.has_thp_policy) {
		if (!d->rules_unsupported_logged)
			log_event(LOG_WARNING, "rules-unsupported",
				  "%u rule%s configured, but this kernel has no per-process THP policy (/proc/PID/thp_policy); rules cannot be applied",
				  d->cfg.n_rules, d->cfg.n_rules == 1 ? "" : "s");
		d->rules_unsupported_logged = true;
		return 0;
	}
	r = cn_open();
	if (r < 0) {
		log_err("Cannot subscribe to exec events (proc connector): %s; rules cannot be applied",
			strerror(-r));
		return r;
	}
	d->cn_fd = r;
	r = sd_event_add_io(d->event, &d->cn_src, d->cn_fd, EPOLLIN, on_netlink, d);
	if (r < 0) {
		log_err("Cannot watch exec events: %s; rules cannot be applied", strerror(-r));
		close(d->cn_fd);
		d->cn_fd = -1;
		return r;
	}
	/* exec events first: a matching process must get its policy within 100 ms */
	sd_event_source_set_priority(d->cn_src, SD_EVENT_PRIORITY_IMPORTANT);
	log_info("Watching exec events for %u rule%s", d->cfg.n_rules,
		 d->cfg.n_rules == 1 ? "" : "s");
	return 0;
}

void thpd_exec_events_close(struct thpd *d)
{
	d->cn_src = sd_event_source_disable_unref(d->cn_src);
	if (d->cn_fd >= 0)
		close(d->cn_fd);
	d->cn_fd = -1;
}
