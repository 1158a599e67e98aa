// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Event sources of the adaptive machine (a PSI trigger on
 * /proc/pressure/memory, a buddyinfo check timer, the calm-period timer)
 * and of per-application rules (the proc connector's exec events).
 */
#include "thpd.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>

#include "log.h"
#include "rules.h"

/* ---- adaptive ---- */

static void describe(char *buf, size_t size, const char *enabled, const char *defrag)
{
	int e = thp_enabled_from_name(enabled);

	snprintf(buf, size, "mode=%s enabled=%s defrag=%s",
		 e < 0 ? "?" : thp_rfc_mode((enum thp_enabled)e, defrag), enabled, defrag);
}

static void act(struct thpd *d, enum thpd_action a)
{
	const struct thpd_adaptive_config *cfg = &d->cfg.adaptive;
	char from[96], to[96], to_enabled[16], to_defrag[16];
	struct thp_mode_req req;
	struct thp_state st;
	const char *failed = NULL;
	int r = 0, e;

	if (a == THPD_ACT_NONE)
		return;
	if (thp_state_read(&st) < 0)
		return;
	describe(from, sizeof(from), thp_enabled_name(st.enabled), st.defrag);
	if (a == THPD_ACT_STEP_DOWN) {
		e = thp_enabled_from_name(d->normal_enabled);
		if (e < 0 || (int)cfg->step_down_enabled < e)
			e = (int)cfg->step_down_enabled;
		snprintf(to_enabled, sizeof(to_enabled), "%s", thp_enabled_name((enum thp_enabled)e));
		snprintf(to_defrag, sizeof(to_defrag), "%s",
			 cfg->step_down_defrag[0] ? cfg->step_down_defrag : d->normal_defrag);
	} else {
		snprintf(to_enabled, sizeof(to_enabled), "%s", d->normal_enabled);
		snprintf(to_defrag, sizeof(to_defrag), "%s", d->normal_defrag);
	}
	describe(to, sizeof(to), to_enabled, to_defrag);
	if (thp_mode_parse(to_enabled, &req) == 0)
		r = thp_state_apply(&req, &failed);
	if (r == 0)
		r = thp_defrag_apply(to_defrag, &failed);
	if (r < 0)
		log_err("Failed to %s: writing %s: %s",
			a == THPD_ACT_STEP_DOWN ? "step down" : "step up", failed ? failed : "?",
			strerror(-r));
	thpd_logf(a == THPD_ACT_STEP_DOWN ? LOG_WARNING : LOG_NOTICE,
		  &(const struct thpd_log_fields){
			  .event = a == THPD_ACT_STEP_DOWN ? "step-down" : "step-up",
			  .from = from, .to = to, .reason = d->adaptive.reason },
		  "%s: %s -> %s (%s; switch #%lu)",
		  a == THPD_ACT_STEP_DOWN ? "Stepping down" : "Stepping up", from, to,
		  d->adaptive.reason, d->adaptive.switches);
}

static void arm_calm(struct thpd *d)
{
	uint64_t t = thpd_adaptive_deadline(&d->adaptive, &d->cfg.adaptive);

	if (!d->calm_src)
		return;
	if (!t) {
		sd_event_source_set_enabled(d->calm_src, SD_EVENT_OFF);
		return;
	}
	sd_event_source_set_time(d->calm_src, t);
	sd_event_source_set_enabled(d->calm_src, SD_EVENT_ONESHOT);
}

static int on_psi(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct thpd *d = userdata;

	(void)fd;
	if (revents & EPOLLERR) {
		log_err("The pressure trigger went away; adaptive pressure monitoring stops");
		sd_event_source_set_enabled(s, SD_EVENT_OFF);
		return 0;
	}
	act(d, thpd_adaptive_pressure(&d->adaptive, &d->cfg.adaptive, thpd_now()));
	arm_calm(d);
	return 0;
}

static int on_check(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct thpd *d = userdata;
	long blocks;

	(void)usec;
	if (d->cfg.adaptive.min_free_blocks > 0) {
		blocks = thp_buddyinfo_free_blocks(9);
		if (blocks < 0) {
			log_err("Cannot read /proc/buddyinfo: %s; fragmentation checks stop",
				strerror((int)-blocks));
			return sd_event_source_set_enabled(s, SD_EVENT_OFF);
		}
		act(d, thpd_adaptive_blocks(&d->adaptive, &d->cfg.adaptive, blocks, thpd_now()));
	} else {
		act(d, thpd_adaptive_tick(&d->adaptive, &d->cfg.adaptive, thpd_now()));
	}
	arm_calm(d);
	sd_event_source_set_time_relative(s, d->cfg.adaptive.check_interval_usec);
	return sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
}

static int on_calm(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct thpd *d = userdata;

	(void)s;
	(void)usec;
	act(d, thpd_adaptive_tick(&d->adaptive, &d->cfg.adaptive, thpd_now()));
	arm_calm(d);
	return 0;
}

static int psi_open(const struct thpd_adaptive_config *cfg)
{
	char path[PATH_MAX], trig[64];
	int fd, r, len;

	r = thp_path(path, sizeof(path), "/proc/pressure/memory");
	if (r < 0)
		return r;
	fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	len = snprintf(trig, sizeof(trig), "%s %" PRIu32 " %" PRIu32,
		       cfg->pressure_full ? "full" : "some", cfg->pressure_threshold_us,
		       cfg->pressure_window_us);
	/* the kernel overwrites the last byte written with NUL: send the NUL */
	if (write(fd, trig, (size_t)len + 1) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

int thpd_adaptive_sources(struct thpd *d)
{
	const struct thpd_adaptive_config *cfg = &d->cfg.adaptive;
	int r;

	if (!cfg->enabled)
		return 0;
	r = psi_open(cfg);
	if (r >= 0) {
		d->psi_fd = r;
		r = sd_event_add_io(d->event, &d->psi_src, d->psi_fd, EPOLLPRI, on_psi, d);
		if (r < 0)
			return r;
	} else {
		log_warn("Cannot register a memory pressure trigger on /proc/pressure/memory: %s; "
			 "only fragmentation checks will step down", strerror(-r));
	}
	r = sd_event_add_time_relative(d->event, &d->check_src, CLOCK_MONOTONIC,
				       cfg->check_interval_usec, 100000, on_check, d);
	if (r < 0)
		return r;
	sd_event_source_set_enabled(d->check_src, SD_EVENT_ONESHOT);
	r = sd_event_add_time(d->event, &d->calm_src, CLOCK_MONOTONIC, 0, 10000, on_calm, d);
	if (r < 0)
		return r;
	sd_event_source_set_enabled(d->calm_src, SD_EVENT_OFF);
	log_info("Adaptive switching on: %s %" PRIu32 " us per %" PRIu32
		 " us pressure, at least %ld free order-9 blocks (%ld to step up), calm period %" PRIu64 " s",
		 cfg->pressure_full ? "full" : "some", cfg->pressure_threshold_us,
		 cfg->pressure_window_us, cfg->min_free_blocks, cfg->recover_free_blocks,
		 cfg->calm_usec / 1000000);
	return 0;
}

void thpd_adaptive_sources_close(struct thpd *d)
{
	d->psi_src = sd_event_source_disable_unref(d->psi_src);
	d->check_src = sd_event_source_disable_unref(d->check_src);
	d->calm_src = sd_event_source_disable_unref(d->calm_src);
	if (d->psi_fd >= 0)
		close(d->psi_fd);
	d->psi_fd = -1;
}

/* ---- rules: proc connector ---- */

static int read_proc_line(pid_t pid, const char *what, char *buf, size_t size)
{
	char path[64];
	int r;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, what);
	r = thp_read_file(path, buf, size);
	if (r < 0)
		return r;
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

static void on_exec(struct thpd *d, pid_t pid)
{
	char exe[PATH_MAX], comm[32], cgtext[4096], cgroup[4096], status[4096], proc[64];
	struct thpd_proc_info p = { .pid = pid };
	const struct thpd_rule *rule;
	const char *uidline;
	ssize_t n;
	int r;

	snprintf(proc, sizeof(proc), "/proc/%d/exe", (int)pid);
	n = readlink(proc, exe, sizeof(exe) - 1);
	if (n >= 0) {
		exe[n] = '\0';
		p.exe = exe;
	}
	if (read_proc_line(pid, "comm", comm, sizeof(comm)) == 0)
		p.comm = comm;
	snprintf(proc, sizeof(proc), "/proc/%d/cgroup", (int)pid);
	if (thp_read_file(proc, cgtext, sizeof(cgtext)) >= 0 &&
	    thpd_cgroup_parse(cgtext, cgroup, sizeof(cgroup)) == 0)
		p.cgroup = cgroup;
	snprintf(proc, sizeof(proc), "/proc/%d/status", (int)pid);
	if (thp_read_file(proc, status, sizeof(status)) < 0)
		return;	/* gone already */
	uidline = strstr(status, "\nUid:");
	if (!uidline || sscanf(uidline + 5, "%u", &p.uid) != 1)
		return;

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
		for (struct nlmsghdr *nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, (size_t)n);
		     nh = NLMSG_NEXT(nh, n)) {
			struct cn_msg *cn;
			struct proc_event *ev;

			if (nh->nlmsg_type == NLMSG_NOOP || nh->nlmsg_type == NLMSG_ERROR)
				continue;
			if (nh->nlmsg_len < NLMSG_LENGTH(sizeof(*cn) + sizeof(*ev)))
				continue;
			cn = NLMSG_DATA(nh);
			if (cn->id.idx != CN_IDX_PROC || cn->id.val != CN_VAL_PROC)
				continue;
			ev = (struct proc_event *)cn->data;
			if (ev->what == PROC_EVENT_EXEC)
				on_exec(d, ev->event_data.exec.process_tgid);
		}
	}
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

int thpd_rules_source(struct thpd *d)
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

void thpd_rules_source_close(struct thpd *d)
{
	d->cn_src = sd_event_source_disable_unref(d->cn_src);
	if (d->cn_fd >= 0)
		close(d->cn_fd);
	d->cn_fd = -1;
}
