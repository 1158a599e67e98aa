/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Logging: structured journal entries (MESSAGE=, PRIORITY=, THPD_EVENT= and
 * optional FROM=, TO=, REASON=, CONFIG_FILE=, CONFIG_LINE= and a caller's
 * own fields) through sd_journal_sendv(). Errors while starting (until
 * thpd_log_started()), and everything when stderr is not the journal, go
 * to stderr instead: a process that exits right after logging can lose its
 * unit attribution in datagram journal entries, and a failed start must
 * show up under `journalctl -u thpd`. Under systemd stderr lines carry a "<N>" priority
 * prefix that journald understands.
 */
#ifndef THPD_LOG_H
#define THPD_LOG_H

#include <syslog.h>

struct thpd_log_fields {
	const char *event;	/* THPD_EVENT= */
	const char *from, *to, *reason;
	const char *file;	/* CONFIG_FILE= */
	unsigned int line;	/* CONFIG_LINE= when file is set */
	const char *const *extra;	/* more "NAME=value" fields, NULL-ended (at most 8) */
};

void thpd_log_init(void);
void thpd_log_started(void);
void thpd_logf(int prio, const struct thpd_log_fields *f, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define log_event(prio, ev, ...) \
	thpd_logf(prio, &(const struct thpd_log_fields){ .event = (ev) }, __VA_ARGS__)
#define log_err(...) log_event(LOG_ERR, NULL, __VA_ARGS__)
#define log_warn(...) log_event(LOG_WARNING, NULL, __VA_ARGS__)
#define log_info(...) log_event(LOG_INFO, NULL, __VA_ARGS__)
#define log_debug(...) log_event(LOG_DEBUG, NULL, __VA_ARGS__)

#endif
