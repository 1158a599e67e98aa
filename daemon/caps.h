/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Least privilege in process (caps.c). */
#ifndef THPD_CAPS_H
#define THPD_CAPS_H

#include <stdbool.h>
#include <stddef.h>

/*
 * drop every capability thpd does not need (rules_possible: the kernel has
 * the per-process policy; collapse: [Collapse] is on); kept: their names,
 * for the log
 */
int thpd_drop_caps(bool rules_possible, bool collapse, char *kept, size_t size);

#endif
