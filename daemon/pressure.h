/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Adaptive switching's event sources (pressure.c): PSI trigger, buddyinfo and calm timers. */
#ifndef THPD_PRESSURE_H
#define THPD_PRESSURE_H

#include "thpd.h"

/* open the sources [Adaptive] asks for (none when disabled); 0 or -errno, logged */
int thpd_pressure_open(struct thpd *d);
void thpd_pressure_close(struct thpd *d);

#endif
