// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer target: the proc connector message parser of thpd's exec
 * events (daemon/exec-events.c, thpd_cn_parse), fed one datagram as
 * recv() returns it.
 *
 * Properties: no read outside the datagram, at any alignment (the input is
 * also parsed from an odd address); every exec event reported has a
 * positive tgid that occurs in the input; there are never more events than
 * messages fit in the datagram; the same bytes at another address give the
 * same events.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>

#include "exec-events.h"

struct seen {
	const uint8_t *data;
	size_t size;
	int n;
	pid_t tgids[256];
};

static void on_exec(void *userdata, pid_t tgid)
{
	struct seen *s = userdata;

	if (tgid <= 0 || !memmem(s->data, s->size, &tgid, sizeof(tgid)))
		abort();
	if (s->n < 256)
		s->tgids[s->n] = tgid;
	s->n++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const size_t min_msg = NLMSG_ALIGN(NLMSG_LENGTH(sizeof(struct cn_msg) + 24));
	struct seen a = { data, size, 0, { 0 } }, b = { data, size, 0, { 0 } };
	uint8_t *copy;
	int n;

	/* exact size, so ASan sees any read past the end */
	n = thpd_cn_parse(data, size, on_exec, &a);
	if (n != a.n || (size_t)n > size / min_msg)
		abort();
	copy = malloc(size + 1);
	if (!copy)
		return 0;
	memcpy(copy + 1, data, size);
	n = thpd_cn_parse(copy + 1, size, on_exec, &b);
	if (n != a.n || memcmp(a.tgids, b.tgids, sizeof(a.tgids)) != 0)
		abort();
	free(copy);
	return 0;
}
