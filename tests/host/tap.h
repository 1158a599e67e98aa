/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * TAP for the C host tests (tests/host/test-*.c): ok(cond, name...) per
 * check, then `return tap_done();` from main, which prints the plan and
 * gives the exit status (1 when a check failed). tests/host/host.mk links
 * tap.c into every host test program.
 */
#ifndef THP_TAP_H
#define THP_TAP_H

#include <stdbool.h>

void __attribute__((format(printf, 2, 3))) ok(bool cond, const char *fmt, ...);
int tap_done(void);

#endif
