// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * thpd's exec-event path (daemon/exec-events.c) on a fake event stream:
 * proc connector datagrams laid out byte for byte as the kernel sends them
 * (nlmsghdr, cn_msg, proc_event: the event starts 36 bytes in, not 8-byte
 * aligned), for processes in a fake /proc (THP_ROOT), with rules. Run
 * under ASan/UBSan by check-host, so a misaligned access fails it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>

#include "../../daemon/exec-events.h"
#include "tap.h"

static char root[64];

static void put(const char *rel, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0)
		abort();
}

static void fake_proc(int pid, const char *comm, unsigned int uid, const char *exe)
{
	char rel[128], text[256];

	snprintf(rel, sizeof(rel), "%s/proc/%d", root, pid);
	mkdir(rel, 0755);
	snprintf(rel, sizeof(rel), "proc/%d/comm", pid);
	snprintf(text, sizeof(text), "%s\n", comm);
	put(rel, text);
	snprintf(rel, sizeof(rel), "proc/%d/status", pid);
	snprintf(text, sizeof(text), "Name:\t%s\nUid:\t%u\t%u\t%u\t%u\n", comm, uid, uid, uid, uid);
	put(rel, text);
	snprintf(rel, sizeof(rel), "proc/%d/cgroup", pid);
	put(rel, "0::/system.slice/app.service\n");
	snprintf(rel, sizeof(rel), "proc/%d/thp_policy", pid);
	put(rel, "default\n");
	snprintf(rel, sizeof(rel), "%s/proc/%d/exe", root, pid);
	if (symlink(exe, rel) < 0)
		abort();
}

static char *policy_of(int pid)
{
	static char buf[64];
	char rel[64];

	snprintf(rel, sizeof(rel), "/proc/%d/thp_policy", pid);
	if (thp_read_file(rel, buf, sizeof(buf)) < 0)
		return "?";
	buf[strcspn(buf, "\n")] = '\0';
	return buf;
}

/* one netlink message as the kernel builds it; returns its aligned length */
static size_t event(unsigned char *at, uint32_t what, int tgid, uint32_t idx)
{
	struct nlmsghdr nh = { 0 };
	struct cn_msg cn = { 0 };
	struct proc_event ev;
	size_t len = NLMSG_LENGTH(sizeof(cn) + sizeof(ev));

	memset(&ev, 0, sizeof(ev));
	nh.nlmsg_len = (uint32_t)len;
	nh.nlmsg_type = NLMSG_DONE;
	cn.id.idx = idx;
	cn.id.val = CN_VAL_PROC;
	cn.len = sizeof(ev);
	ev.what = what;
	ev.timestamp_ns = 123456789;
	ev.event_data.exec.process_pid = tgid;
	ev.event_data.exec.process_tgid = tgid;
	memcpy(at, &nh, sizeof(nh));
	memcpy(at + NLMSG_HDRLEN, &cn, sizeof(cn));
	memcpy(at + NLMSG_HDRLEN + sizeof(cn), &ev, sizeof(ev));
	return NLMSG_ALIGN(len);
}

int main(void)
{
	static struct thpd d = { .listen_fd = -1, .psi_fd = -1, .cn_fd = -1 };
	static const char conf[] = "[Rule java]\nComm=java\nPolicy=advise\n"
				   "[Rule batch]\nExe=/opt/batch/*\nUser=1000\nPolicy=never\n"
				   "[Rule slice]\nCgroup=/system.slice/batch.slice\nPolicy=never\n";
	unsigned char buf[1024] __attribute__((aligned(8)));
	char cmd[128];
	size_t len;

	snprintf(root, sizeof(root), "/tmp/thpd-exec.%d", (int)getpid());
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/proc", root);
	if (system(cmd) != 0)
		abort();
	thp_set_root(root);
	fake_proc(4242, "java", 0, "/usr/lib/jvm/bin/java");
	fake_proc(4343, "worker", 1000, "/opt/batch/worker");
	fake_proc(4444, "worker", 1001, "/opt/batch/worker");

	thpd_config_defaults(&d.cfg);
	ok(thpd_config_parse_string(&d.cfg, "t.conf", conf, NULL) == 0 &&
	   thpd_config_finish(&d.cfg, NULL, NULL) == 0 && d.cfg.n_rules == 3, "three rules");
	d.kernel.has_thp_policy = true;

	len = event(buf, PROC_EVENT_EXEC, 4242, CN_IDX_PROC);
	thpd_exec_events_feed(&d, buf, len);
	ok(d.rules_applied == 1 && strcmp(policy_of(4242), "advise") == 0,
	   "an exec event as the kernel lays it out: [Rule java] applied (%s)", policy_of(4242));

	len = event(buf, PROC_EVENT_FORK, 4343, CN_IDX_PROC);
	len += event(buf + len, PROC_EVENT_EXEC, 4343, CN_IDX_PROC);
	len += event(buf + len, PROC_EVENT_EXEC, 4444, CN_IDX_PROC);
	len += event(buf + len, PROC_EVENT_EXEC, 4242, CN_IDX_PROC + 1);
	thpd_exec_events_feed(&d, buf, len);
	ok(d.rules_applied == 2 && strcmp(policy_of(4343), "never") == 0 &&
	   strcmp(policy_of(4444), "default") == 0,
	   "several messages in one datagram: fork and other connectors ignored, User= checked");

	for (size_t cut = 1; cut < event(buf, PROC_EVENT_EXEC, 4343, CN_IDX_PROC); cut++)
		thpd_exec_events_feed(&d, buf, cut);
	ok(d.rules_applied == 2, "every truncation of a message is ignored");

	/* the datagram at an odd address: the parser does not assume alignment */
	len = event(buf + 1, PROC_EVENT_EXEC, 4343, CN_IDX_PROC);
	thpd_exec_events_feed(&d, buf + 1, len);
	ok(d.rules_applied == 3, "a datagram at an odd address is read all the same");

	fake_proc(4545, "unlinked", 0, "/usr/bin/x (deleted)");
	len = event(buf, PROC_EVENT_EXEC, 4545, CN_IDX_PROC);
	len += event(buf + len, PROC_EVENT_EXEC, 99999, CN_IDX_PROC);
	thpd_exec_events_feed(&d, buf, len);
	ok(d.rules_applied == 3, "a process matching no rule, and one gone already: nothing applied");

	/*
	 * /proc/PID/cgroup longer than thpd's buffer: cut at 4095 bytes, the
	 * v2 line would read "0::/system.slice/batch.slice", a prefix of the
	 * real "/system.slice/batch.slice2/job": the cgroup is unknown instead
	 */
	{
		static char text[8192];
		const char *tail = "0::/system.slice/batch.slice2/job\n";
		size_t fill = 4095 - strlen("0::/system.slice/batch.slice");

		fake_proc(4646, "job", 0, "/usr/bin/job");
		memset(text, 'x', fill);
		text[0] = '1';
		text[1] = ':';
		text[2] = ':';
		text[fill - 1] = '\n';
		strcpy(text + fill, tail);
		put("proc/4646/cgroup", text);
		len = event(buf, PROC_EVENT_EXEC, 4646, CN_IDX_PROC);
		thpd_exec_events_feed(&d, buf, len);
		ok(d.rules_applied == 3 && strcmp(policy_of(4646), "default") == 0,
		   "a /proc/PID/cgroup longer than the buffer is not matched by its cut prefix (%s)",
		   policy_of(4646));
	}

	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	if (system(cmd) != 0)
		ok(false, "cleanup of %s", root);
	return tap_done();
}
