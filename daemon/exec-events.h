/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Per-application rules at exec (exec-events.c): the proc connector's exec events. */
#ifndef THPD_EXEC_EVENTS_H
#define THPD_EXEC_EVENTS_H

#include "thpd.h"

/* subscribe when there are rules and the kernel can apply them; 0 or -errno, logged */
int thpd_exec_events_open(struct thpd *d);
void thpd_exec_events_close(struct thpd *d);
/*
 * One datagram from the proc connector (len bytes at buf, any alignment):
 * on_exec(userdata, tgid) for each exec event in it. Pure; returns how
 * many there were. Malformed or truncated messages are skipped.
 */
int thpd_cn_parse(const void *buf, size_t len, void (*on_exec)(void *userdata, pid_t tgid),
		  void *userdata);
/* one datagram from the proc connector, as recv() returned it: apply rules to exec events */
void thpd_exec_events_feed(struct thpd *d, const void *buf, size_t len);

#endif
