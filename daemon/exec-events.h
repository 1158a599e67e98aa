/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Per-application rules at exec (exec-events.c): the proc connector's exec events. */
#ifndef THPD_EXEC_EVENTS_H
#define THPD_EXEC_EVENTS_H

#include "thpd.h"

/* subscribe when there are rules and the kernel can apply them; 0 or -errno, logged */
int thpd_exec_events_open(struct thpd *d);
void thpd_exec_events_close(struct thpd *d);

#endif
