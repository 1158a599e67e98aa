// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * thpctl unit NAME POLICY: a THP policy for one systemd service, in one
 * step. It writes the drop-in /etc/systemd/system/NAME.d/thp.conf and runs
 * systemctl daemon-reload; 'default' removes it. Where systemd has
 * MemoryTHP= (systemd 260 and later, found by asking systemd, never from
 * its version) never is MemoryTHP=disable and advised-only
 * MemoryTHP=madvise; elsewhere, and for advise, which MemoryTHP= has no
 * mode for, the drop-in puts 'thpctl run --POLICY -q --' in front of the
 * service's ExecStart= lines. Then it asks systemd what it now holds for
 * the service: no success is claimed that systemd does not show.
 */
#include "thpctl.h"
#include "thp.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define UNIT_DIR "/etc/systemd/system"
#define DROPIN "thp.conf"
#define OUT_MAX (4 << 20)	/* what is read of systemctl's output: refused beyond */
#define EXEC_MAX 16		/* ExecStart= lines of one service */

#ifndef PR_THP_DISABLE_EXCEPT_ADVISED
#define PR_THP_DISABLE_EXCEPT_ADVISED (1 << 1)
#endif

static const struct {
	const char *word;
	int policy;		/* PR_THP_MM_POLICY_*, RUN_ADVISED_ONLY, -1 for default */
	const char *run_opt;	/* thpctl run's option */
	const char *memory_thp;	/* MemoryTHP= value, NULL: systemd has none */
} policies[] = {
	{ "advise", PR_THP_MM_POLICY_ADVISE, "--advise", NULL },
	{ "advised-only", RUN_ADVISED_ONLY, "--advised-only", "madvise" },
	{ "never", PR_THP_MM_POLICY_NEVER, "--never", "disable" },
	{ "default", -1, NULL, NULL },
};
#define N_POLICIES (sizeof(policies) / sizeof(policies[0]))

/*
 * Run systemctl with args (NULL-ended, after "systemctl"); its standard
 * output into *out (malloc'ed, NUL-terminated) when out is not NULL, its
 * standard error passed on. Its exit status, or -errno (logged).
 */
static int systemctl(const char *const *args, char **out)
{
	const char *argv[16] = { "systemctl" };
	size_t n = 1, len = 0, cap = 0;
	int fds[2] = { -1, -1 }, status;
	char *buf = NULL;
	pid_t pid;

	for (; *args && n + 1 < sizeof(argv) / sizeof(argv[0]); args++)
		argv[n++] = *args;
	if (out && pipe2(fds, O_CLOEXEC) < 0) {
		log_error("pipe: %s", strerror(errno));
		return -errno;
	}
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		log_error("fork: %s", strerror(errno));
		return -errno;
	}
	if (pid == 0) {
		if (out && dup2(fds[1], STDOUT_FILENO) < 0)
			_exit(127);
		execvp("systemctl", (char *const *)argv);
		fprintf(stderr, "thpctl: cannot run systemctl: %s\n", strerror(errno));
		_exit(127);
	}
	if (out) {
		ssize_t r;

		close(fds[1]);
		for (;;) {
			if (len + 4096 + 1 > cap) {
				char *nb = cap + 8192 > OUT_MAX ? NULL : realloc(buf, cap + 8192);

				if (!nb)
					break;
				buf = nb;
				cap += 8192;
			}
			r = read(fds[0], buf + len, cap - len - 1);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				break;
			len += (size_t)r;
		}
		close(fds[0]);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (out) {
		if (!buf || len + 4096 + 1 > cap) {
			free(buf);
			log_error("systemctl %s: output too large or out of memory", args[-1]);
			return -EFBIG;
		}
		buf[len] = '\0';
		*out = buf;
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/*
 * systemctl show -p PROP --value NAME into *out (a line per value, the last
 * newline cut; NULL unless it succeeded); its status
 */
static int show(const char *name, const char *prop, char **out)
{
	const char *args[] = { "show", "-p", prop, "--value", name, NULL };
	int r;

	*out = NULL;
	r = systemctl(args, out);
	if (r == 0) {
		size_t len = strlen(*out);

		if (len && (*out)[len - 1] == '\n')
			(*out)[len - 1] = '\0';
	} else if (r > 0) {
		free(*out);
		*out = NULL;
	}
	return r;
}

/* does the running systemd have MemoryTHP=? (it lists the property) */
static bool has_memory_thp(const char *name)
{
	const char *args[] = { "show", "-p", "MemoryTHP", name, NULL };
	char *out = NULL;
	bool yes;

	if (systemctl(args, &out) != 0) {
		free(out);
		return false;
	}
	/* an older systemd prints nothing for a property it does not know */
	yes = strncmp(out, "MemoryTHP=", 10) == 0;
	free(out);
	return yes;
}

/* NAME or NAME.service, checked; NAME.service into name */
static int unit_name(const char *arg, char *name, size_t size)
{
	const char *dot = strrchr(arg, '.');

	if (!*arg || strlen(arg) > 240 || strspn(arg, "abcdefghijklmnopqrstuvwxyz"
						 "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:-_.\\@") != strlen(arg))
		return usage_error("unit: invalid unit name '%s'", arg);
	if (dot && strcmp(dot, ".service") != 0)
		return usage_error("unit: '%s' is not a service (only a service's processes get a "
				   "THP policy here)", arg);
	snprintf(name, size, "%s%s", arg, dot ? "" : ".service");
	return EXIT_OK;
}

/*
 * The ExecStart= lines systemd uses for the service, from `systemctl cat`
 * (the unit file, then its drop-ins in order; an empty ExecStart= resets
 * the list), leaving out our own drop-in (skip: its path's tail). Each
 * value as written (malloc'ed). Their count, or -errno (said).
 */
static int exec_lines(const char *name, const char *skip, char **lines)
{
	const char *args[] = { "cat", name, NULL };
	char *out = NULL, *p, *next;
	bool ours = false, service = false;
	int n = 0, r = systemctl(args, &out);

	if (r != 0) {
		free(out);
		if (r > 0)
			log_error("unit: systemctl cat %s failed (exit status %d): no such unit?", name, r);
		return r > 0 ? -ENOENT : r;
	}
	for (p = out; p && *p; p = next) {
		char *eq, *key, *val, *end;

		next = strchr(p, '\n');
		/* a line continued with a backslash is one line, as systemd joins it */
		while (next && next > p && next[-1] == '\\') {
			next[-1] = ' ';
			memmove(next, next + 1, strlen(next + 1) + 1);
			next = strchr(next, '\n');
		}
		if (next)
			*next++ = '\0';
		if (strncmp(p, "# /", 3) == 0) {
			size_t l = strlen(p), s = strlen(skip);

			ours = l >= s && strcmp(p + l - s, skip) == 0;
			service = false;
			continue;
		}
		p += strspn(p, " \t");
		if (*p == '[') {
			service = strncmp(p, "[Service]", 9) == 0;
			continue;
		}
		eq = strchr(p, '=');
		if (ours || !service || *p == '#' || *p == ';' || !eq)
			continue;
		key = p;
		for (end = eq; end > key && (end[-1] == ' ' || end[-1] == '\t'); end--)
			;
		*end = '\0';
		if (strcmp(key, "ExecStart") != 0)
			continue;
		val = eq + 1 + strspn(eq + 1, " \t");
		for (end = val + strlen(val); end > val && (end[-1] == ' ' || end[-1] == '\t'); end--)
			;
		*end = '\0';
		if (!*val) {
			while (n)
				free(lines[--n]);
			continue;
		}
		if (n == EXEC_MAX) {
			log_error("unit: %s has more than %d ExecStart= lines", name, EXEC_MAX);
			r = -E2BIG;
			break;
		}
		lines[n] = strdup(val);
		if (!lines[n]) {
			r = -ENOMEM;
			break;
		}
		n++;
	}
	free(out);
	if (r < 0) {
		while (n)
			free(lines[--n]);
		return r;
	}
	return n;
}

/* this program's own path, to name in ExecStart=; NULL (said) when it cannot be named there */
static const char *self_path(void)
{
	static char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);

	if (n <= 0 || (size_t)n >= sizeof(path) - 1) {
		log_error("unit: cannot tell where thpctl is (/proc/self/exe): %s",
			  n < 0 ? strerror(errno) : "too long");
		return NULL;
	}
	path[n] = '\0';
	if (path[0] != '/' || strpbrk(path, " \t\"'\\%$;")) {
		log_error("unit: thpctl's path %s cannot be written in ExecStart= as it is", path);
		return NULL;
	}
	return path;
}

/*
 * The drop-in's text (malloc'ed): MemoryTHP= (memory_thp) or every
 * ExecStart= line behind the wrapper. NULL after saying why.
 */
static char *dropin_text(const char *name, const char *word, const char *memory_thp,
			 const char *run_opt)
{
	char *lines[EXEC_MAX], *text = NULL, *head = NULL, skip[300];
	const char *self;
	size_t len;
	int n;

	if (asprintf(&head, "# Written by 'thpctl unit %s %s': this service's THP policy "
		     "(thpctl(1)).\n# 'thpctl unit %s default' removes it.\n[Service]\n",
		     name, word, name) < 0)
		return NULL;
	if (memory_thp) {
		if (asprintf(&text, "%sMemoryTHP=%s\n", head, memory_thp) < 0)
			text = NULL;
		free(head);
		return text;
	}
	self = self_path();
	snprintf(skip, sizeof(skip), "/%s.d/" DROPIN, name);
	n = self ? exec_lines(name, skip, lines) : -EINVAL;
	if (n == 0)
		log_error("unit: %s has no ExecStart= to run under thpctl run %s", name, run_opt);
	if (n <= 0) {
		free(head);
		return NULL;
	}
	text = head;
	len = strlen(text);
	text = realloc(text, len + sizeof("ExecStart=\n"));
	if (text)
		strcpy(text + len, "ExecStart=\n");
	for (int i = 0; i < n && text; i++) {
		size_t pre = strspn(lines[i], "-@:+!");
		char *t;

		if (memchr(lines[i], '@', pre)) {
			log_error("unit: %s's ExecStart=%s names its argv[0] with '@', which a wrapper "
				  "cannot keep", name, lines[i]);
			free(text);
			text = NULL;
			break;
		}
		if (asprintf(&t, "%sExecStart=%.*s%s run %s -q -- %s\n", text, (int)pre, lines[i],
			     self, run_opt, lines[i] + pre) < 0)
			t = NULL;
		free(text);
		text = t;
	}
	while (n)
		free(lines[--n]);
	return text;
}

/* write path atomically (a temporary file beside it, renamed over it), mode 0644 */
static int write_atomic(const char *dir, const char *path, const char *text)
{
	char tmp[PATH_MAX];
	size_t len = strlen(text);
	int fd, r = 0;

	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	if (snprintf(tmp, sizeof(tmp), "%s/." DROPIN ".XXXXXX", dir) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = mkstemp(tmp);
	if (fd < 0)
		return -errno;
	if (fchmod(fd, 0644) < 0 || write(fd, text, len) != (ssize_t)len || fsync(fd) < 0)
		r = errno ? -errno : -EIO;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	return r;
}

/*
 * What systemd holds for the service now: the wrapper on every ExecStart=
 * (run_opt), MemoryTHP= at memory_thp, or, for default (both NULL), neither
 * (and MemoryTHP=inherit where it has it). EXIT_OK, or EXIT_NOT_IN_EFFECT
 * after saying what stands in the way.
 */
static int verify(const char *name, const char *self, const char *run_opt,
		  const char *memory_thp, bool have_mthp)
{
	char *exec = NULL, *mthp = NULL, *dropins = NULL, want[PATH_MAX + 64];
	int rc = EXIT_OK, all = 0, wrapped = 0;

	if (show(name, "ExecStart", &exec) != 0 ||
	    (have_mthp && show(name, "MemoryTHP", &mthp) != 0)) {
		log_error("unit: cannot ask systemd what %s holds now", name);
		free(exec);
		return EXIT_FAIL;
	}
	snprintf(want, sizeof(want), "argv[]=%s run %s -q -- ", self ? self : "", run_opt ? run_opt : "");
	for (const char *p = strstr(exec, "argv[]="); p; p = strstr(p + 1, "argv[]=")) {
		all++;
		wrapped += self && strncmp(p, want, strlen(want)) == 0;
	}
	if (run_opt && (!all || wrapped != all)) {
		log_error("unit: systemd does not run %s's ExecStart= under thpctl run %s (%d of %d "
			  "lines are): a drop-in read after " DROPIN " sets ExecStart= again", name,
			  run_opt, wrapped, all);
		rc = EXIT_NOT_IN_EFFECT;
	}
	if (memory_thp && (!mthp || strcmp(mthp, memory_thp) != 0)) {
		log_error("unit: systemd holds MemoryTHP=%s for %s, not %s: a drop-in read after "
			  DROPIN " sets it", mthp ? mthp : "?", name, memory_thp);
		rc = EXIT_NOT_IN_EFFECT;
	}
	if (!run_opt && !memory_thp && have_mthp && strcmp(mthp, "inherit") != 0) {
		log_error("unit: systemd still holds MemoryTHP=%s for %s: another drop-in sets it",
			  mthp, name);
		rc = EXIT_NOT_IN_EFFECT;
	}
	if (!run_opt && !memory_thp && self && strstr(exec, " run --") &&
	    strstr(exec, self)) {
		log_error("unit: %s's ExecStart= still runs under thpctl run: another drop-in "
			  "puts it there", name);
		rc = EXIT_NOT_IN_EFFECT;
	}
	if (rc && show(name, "DropInPaths", &dropins) == 0) {
		log_error("unit: %s's drop-ins: %s", name, *dropins ? dropins : "none");
		free(dropins);
	}
	free(exec);
	free(mthp);
	return rc;
}

/* can this kernel do PR_THP_DISABLE_EXCEPT_ADVISED (Linux 6.18)? tried on ourselves, undone */
static bool has_except_advised(void)
{
	if (prctl(PR_SET_THP_DISABLE, 1, PR_THP_DISABLE_EXCEPT_ADVISED, 0, 0) < 0)
		return false;
	prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0);
	return true;
}

int verb_unit(struct verb_args *a)
{
	const char *word = a->argv[2], *memory_thp = NULL, *run_opt = NULL, *self = NULL;
	char name[256], dir[PATH_MAX], path[PATH_MAX + 16], *text = NULL;
	const char *reload[] = { "daemon-reload", NULL };
	int policy = -2, r, rc;
	bool have_mthp;

	if (is_help(word) || is_help(a->argv[1])) {
		for (size_t i = 0; i < N_POLICIES; i++)
			puts(policies[i].word);
		return EXIT_OK;
	}
	r = unit_name(a->argv[1], name, sizeof(name));
	if (r != EXIT_OK)
		return r;
	for (size_t i = 0; i < N_POLICIES; i++)
		if (strcmp(word, policies[i].word) == 0) {
			policy = policies[i].policy;
			run_opt = policies[i].run_opt;
			memory_thp = policies[i].memory_thp;
		}
	if (policy == -2)
		return usage_error("unit: invalid policy '%s' (expected advise, advised-only, never "
				   "or default)", word);
	if (policy == RUN_ADVISED_ONLY && !has_except_advised()) {
		log_error("unit: advised-only needs PR_THP_DISABLE_EXCEPT_ADVISED (Linux 6.18 or "
			  "later), which this kernel does not have; nothing written");
		return EXIT_FAIL;
	}
	snprintf(dir, sizeof(dir), "%s/%s.d", full_path(UNIT_DIR), name);
	snprintf(path, sizeof(path), "%s/" DROPIN, dir);
	have_mthp = has_memory_thp(name);
	if (!have_mthp)
		memory_thp = NULL;
	if (memory_thp)
		run_opt = NULL;
	if (policy == -1) {
		if (unlink(path) < 0 && errno != ENOENT) {
			log_error("unit: cannot remove %s: %s", path, strerror(errno));
			return EXIT_FAIL;
		}
		rmdir(dir);	/* only when nothing else is in it */
	} else {
		text = dropin_text(name, word, memory_thp, run_opt);
		if (!text)
			return EXIT_FAIL;
		r = write_atomic(dir, path, text);
		free(text);
		if (r < 0) {
			log_error("unit: cannot write %s: %s", path, strerror(-r));
			return EXIT_FAIL;
		}
	}
	r = systemctl(reload, NULL);
	if (r != 0) {
		log_error("unit: systemctl daemon-reload failed (%s %d): %s is %s, but systemd has "
			  "not read it", r < 0 ? "error" : "exit status", r < 0 ? -r : r, path,
			  policy == -1 ? "removed" : "written");
		return EXIT_FAIL;
	}
	if (run_opt || policy == -1)
		self = self_path();
	rc = verify(name, self, run_opt, memory_thp, have_mthp);
	if (rc == EXIT_FAIL)
		return rc;
	/* what the policy reaches on this kernel (stock --advise: malloc only), said */
	if (rc == EXIT_OK && (policy == PR_THP_MM_POLICY_ADVISE || policy == RUN_ADVISED_ONLY))
		rc = run_check_reach(policy, false, name, "");
	if (policy == -1)
		fprintf(rc ? stderr : stdout, "%s%s: THP follows the system's settings again "
			"(%s removed)%s\n", rc ? "thpctl: " : "", name, path, rc ? "; not in effect" : "");
	else
		fprintf(rc ? stderr : stdout, "%s%s: THP policy %s through %s%s%s in %s; it applies "
			"from the service's next start ('systemctl restart %s')%s\n", rc ? "thpctl: " : "",
			name, word, memory_thp ? "MemoryTHP=" : "thpctl run ",
			memory_thp ? memory_thp : run_opt, memory_thp ? "" : " -q in ExecStart=",
			path, name, rc ? "; not in effect" : "");
	return rc;
}
