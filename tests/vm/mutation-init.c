// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * mutation-init: PID 1 of the mutation runner's guest (tests/vm/mutations.sh).
 *
 * The guest has no disk image and no initrd: its root is a read-only 9p
 * share holding this program (static), the static kselftest thp_controls
 * and the static guest helper thp-policy. It mounts what the tests use
 * (proc, sysfs, tracefs, a tmpfs /tmp that allows setuid), runs what the
 * kernel command line's mutrun= asks for, each between two marker lines
 * on the console, and powers the guest off.
 *
 *   mutrun=ITEM[,ITEM...]   (the kernel hands it to init as $mutrun)
 *     kselftest             /thp_controls (TAP on the console)
 *     vfork-race:N          /thp-policy vfork-race N
 *     exec-thread-race:N:W  /thp-policy exec-thread-race N W
 *     fork-race:N           /thp-policy fork-race N
 *
 * Markers: "mutinit: begin ITEM" and "mutinit: end ITEM exit=N" (or
 * "signal=N"); "mutinit: done" after the last one. The host decides what
 * passed; this program only runs things.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void __attribute__((format(printf, 1, 2))) say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("mutinit: ");
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	va_end(ap);
}

static void mount_one(const char *type, const char *dir, const char *opts)
{
	mkdir(dir, 0755);
	if (mount(type, dir, type, 0, opts) && errno != EBUSY)
		say("mount %s on %s failed", type, dir);
}

/* run argv[] to its end, reaping any orphan meanwhile; print its status */
static void run(const char *item, char *const argv[])
{
	char st[32];
	pid_t pid, w;
	int status;

	say("begin %s", item);
	pid = fork();
	if (pid < 0) {
		say("end %s fork failed", item);
		return;
	}
	if (!pid) {
		execv(argv[0], argv);
		perror(argv[0]);
		_exit(127);
	}
	for (;;) {
		w = wait(&status);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 || w == pid)
			break;
	}
	if (w < 0)
		snprintf(st, sizeof(st), "wait=%d", errno);
	else if (WIFEXITED(status))
		snprintf(st, sizeof(st), "exit=%d", WEXITSTATUS(status));
	else
		snprintf(st, sizeof(st), "signal=%d", WTERMSIG(status));
	say("end %s %s", item, st);
}

static void run_item(char *item)
{
	char copy[128], *what, *n, *arg;

	snprintf(copy, sizeof(copy), "%s", item);
	what = strtok(copy, ":");
	n = strtok(NULL, ":");
	arg = strtok(NULL, ":");
	if (what && !strcmp(what, "kselftest")) {
		char *const argv[] = { "/thp_controls", NULL };

		run(item, argv);
	} else if (what && n && !arg &&
		   (!strcmp(what, "vfork-race") || !strcmp(what, "fork-race"))) {
		char *const argv[] = { "/thp-policy", what, n, NULL };

		run(item, argv);
	} else if (what && n && arg && !strcmp(what, "exec-thread-race")) {
		char *const argv[] = { "/thp-policy", what, n, arg, NULL };

		run(item, argv);
	} else {
		say("unknown item '%s'", item);
	}
}

int main(void)
{
	char *list = getenv("mutrun"), *item, *save = NULL;
	int fd;

	/* the kernel opened the console on fds 0-2; make sure of it */
	if (fcntl(1, F_GETFD) < 0) {
		mount_one("devtmpfs", "/dev", NULL);
		fd = open("/dev/console", O_RDWR);
		if (fd >= 0) {
			dup2(fd, 0);
			dup2(fd, 1);
			dup2(fd, 2);
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	mount_one("proc", "/proc", NULL);
	mount_one("sysfs", "/sys", NULL);
	mount_one("tracefs", "/sys/kernel/tracing", NULL);
	/* policy_secure_exec runs a setuid copy from /tmp: no nosuid */
	mount_one("tmpfs", "/tmp", "mode=1777");
	if (!list)
		say("no mutrun= on the kernel command line");
	for (item = list ? strtok_r(list, ",", &save) : NULL; item;
	     item = strtok_r(NULL, ",", &save))
		run_item(item);
	say("done");
	sync();
	reboot(RB_POWER_OFF);
	return 1;
}
