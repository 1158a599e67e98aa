/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Minimal TAP for thpd's host tests: ok(cond, name...), then done(). */
#ifndef THPD_TAP_H
#define THPD_TAP_H

#include <stdarg.h>
#include <stdio.h>

static int tap_n, tap_failed;

static void __attribute__((format(printf, 2, 3))) ok(int cond, const char *fmt, ...)
{
	va_list ap;

	printf("%s %d - ", cond ? "ok" : "not ok", ++tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!cond)
		tap_failed++;
}

static int done(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

#endif
