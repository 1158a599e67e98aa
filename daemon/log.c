// SPDX-License-Identifier: GPL-2.0-or-later
#include "log.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include <systemd/sd-journal.h>

static bool stderr_is_journal;
static bool started;

void thpd_log_init(void)
{
	const char *e = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	stderr_is_journal = e && sscanf(e, "%llu:%llu", &dev, &ino) == 2 &&
			    fstat(2, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
}

void thpd_log_started(void)
{
	started = true;
}

void thpd_logf(int prio, const struct thpd_log_fields *f, const char *fmt, ...)
{
	static const char *const level[] = {
		"emergency", "alert", "critical", "error", "warning", "notice", "info", "debug",
	};
	char msg[1024], buf[18][1100];
	struct iovec iov[18];
	int n = 0;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	prio &= LOG_PRIMASK;

	if (!stderr_is_journal) {
		if (prio != LOG_DEBUG || getenv("THPD_DEBUG"))
			fprintf(stderr, "thpd: %s: %s\n", level[prio], msg);
		return;
	}
	/* an error before READY=1 usually means exit: see log.h */
	if (!started && prio <= LOG_ERR) {
		fprintf(stderr, "<%d>%s\n", prio, msg);
		return;
	}

#define ADD(...)                                                                     \
	do {                                                                         \
		int len_ = snprintf(buf[n], sizeof(buf[n]), __VA_ARGS__);            \
		iov[n].iov_base = buf[n];                                            \
		iov[n].iov_len = len_ < (int)sizeof(buf[n]) ? (size_t)len_ : sizeof(buf[n]) - 1; \
		n++;                                                                 \
	} while (0)
	ADD("MESSAGE=%s", msg);
	ADD("PRIORITY=%d", prio);
	ADD("SYSLOG_IDENTIFIER=thpd");
	if (f && f->event)
		ADD("THPD_EVENT=%s", f->event);
	if (f && f->from)
		ADD("FROM=%s", f->from);
	if (f && f->to)
		ADD("TO=%s", f->to);
	if (f && f->reason)
		ADD("REASON=%s", f->reason);
	if (f && f->file) {
		ADD("CONFIG_FILE=%s", f->file);
		if (f->line)
			ADD("CONFIG_LINE=%u", f->line);
	}
	for (int i = 0; f && f->extra && f->extra[i] && i < 8; i++)
		ADD("%s", f->extra[i]);
#undef ADD
	sd_journal_sendv(iov, n);
}
