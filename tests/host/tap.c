// SPDX-License-Identifier: GPL-2.0-or-later
/* TAP for the C host tests (tap.h) */
#include "tap.h"

#include <stdarg.h>
#include <stdio.h>

static int tap_n, tap_failed;

void ok(bool cond, const char *fmt, ...)
{
	va_list ap;

	printf("%s %d - ", cond ? "ok" : "not ok", ++tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	if (!cond)
		tap_failed++;
}

int tap_done(void)
{
	printf("1..%d\n", tap_n);
	fflush(stdout);
	return tap_failed ? 1 : 0;
}
