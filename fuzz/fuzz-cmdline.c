// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer target: the kernel command line as the kernel reads it
 * (lib/thp-cmdline.c). Byte 0: flags (bit 0: THP_CMDLINE_NUMBERS); the
 * rest: /proc/cmdline text. Seeded from tests/host/fixtures/cmdline.txt,
 * the table of cases the host test reads too (fuzz/fuzz.mk).
 *
 * Properties: every value taken is a word the kernel's handler takes (a
 * number only with THP_CMDLINE_NUMBERS), thp_anon= only at 16K-2M and
 * thp_shmem= only at 8K-2M (x86-64's orders); the format fits its buffer;
 * and what was taken, written back as a command line in the kernel's own
 * syntax, parses to the same values (nothing refused, nothing for init).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "thp.h"

static void check_words(const struct thp_cmdline *cl, unsigned int flags)
{
	static const char *const numbers[] = { "0", "1", "2" };
	bool number = false;

	for (int i = 0; i < 3; i++)
		number |= strcmp(cl->thp, numbers[i]) == 0;
	if (cl->thp[0] && !(thp_enabled_from_name(cl->thp) >= 0 || (number && (flags & THP_CMDLINE_NUMBERS))))
		abort();
	if (cl->shmem[0] && !thp_knob_word_known(THP_KNOB_SHMEM_ENABLED, cl->shmem))
		abort();
	for (int o = 0; o < THP_CMDLINE_ORDERS; o++) {
		if (cl->anon[o][0] && (o < 2 || o > 9 || !cl->anon_set ||
				       !thp_knob_word_known(THP_KNOB_SIZE_ENABLED, cl->anon[o])))
			abort();
		if (cl->shmem_sizes[o][0] &&
		    (o < 1 || o > 9 || !cl->shmem_sizes_set ||
		     !thp_knob_word_known(THP_KNOB_SIZE_SHMEM_ENABLED, cl->shmem_sizes[o])))
			abort();
	}
}

/* what the format says was taken, as a command line of its own, is taken the same */
static void check_round_trip(const struct thp_cmdline *cl, unsigned int flags, char *fmt)
{
	struct thp_cmdline again;
	char *cut;

	/* the format: the taken values in the kernel's syntax, then what was not */
	cut = strstr(fmt, "refused=");
	if (!cut)
		cut = strstr(fmt, "for_init=");
	if (cut)
		*cut = '\0';
	if (strcmp(fmt, "-") == 0)
		fmt[0] = '\0';
	if (thp_cmdline_parse(fmt, flags, &again) != 0)
		abort();
	for (int i = 0; i < THP_CMDLINE_N; i++)
		if (again.refused[i])
			abort();
	if (again.for_init || strcmp(again.thp, cl->thp) || strcmp(again.shmem, cl->shmem) ||
	    again.anon_set != cl->anon_set || again.shmem_sizes_set != cl->shmem_sizes_set ||
	    memcmp(again.anon, cl->anon, sizeof(again.anon)) ||
	    memcmp(again.shmem_sizes, cl->shmem_sizes, sizeof(again.shmem_sizes)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct thp_cmdline cl;
	unsigned int flags;
	char *text, out[64], whole[4096];

	if (size < 1)
		return 0;
	flags = data[0] & 1 ? THP_CMDLINE_NUMBERS : 0;
	text = malloc(size);
	if (!text)
		return 0;
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	if (thp_cmdline_parse(text, flags, &cl) == 0) {
		check_words(&cl, flags);
		memset(out, 'Z', sizeof(out));
		thp_cmdline_format(&cl, out, sizeof(out));
		if (!memchr(out, '\0', sizeof(out)))
			abort();
		/* every value taken fits: 4 params, at most 19 sizes of 16 bytes each */
		thp_cmdline_format(&cl, whole, sizeof(whole));
		check_round_trip(&cl, flags, whole);
	}
	free(text);
	return 0;
}
