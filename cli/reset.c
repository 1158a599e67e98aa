// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * thpctl reset: back to the boot defaults (thpctl(1), BOOT DEFAULTS). With
 * thpd running, thpd forgets every value set through it and holds its
 * target again: the kernel command line, its configuration, the host's own
 * values. Without thpd, the values the kernel booted with, as far as they
 * can be known (libthp's thp_boot_values()), are written to sysfs; what
 * cannot be known is left and said.
 */
#include "thpctl.h"
#include "thp.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KCONFIG_MAX (1 << 20)

/* the running kernel's /boot/config-<release>, malloc'ed; NULL when there is none */
static char *read_kconfig(void)
{
	char rel[128], path[256], *text;
	int r = thp_read_file("/proc/sys/kernel/osrelease", rel, sizeof(rel));

	if (r <= 0)
		return NULL;
	rel[strcspn(rel, "\n")] = '\0';
	snprintf(path, sizeof(path), "/boot/config-%s", rel);
	text = malloc(KCONFIG_MAX);
	if (text && thp_read_file(path, text, KCONFIG_MAX) >= 0)
		return text;
	free(text);
	return NULL;
}

static unsigned long read_memtotal(void)
{
	static char text[16384];
	uint64_t kib;

	if (thp_read_file("/proc/meminfo", text, sizeof(text)) < 0 ||
	    thp_kv_get(text, "MemTotal", &kib) < 0)
		return 0;
	return (unsigned long)kib;
}

/* write one value where the kernel has the control and holds another; 0 or -errno (said) */
static int put(struct thp_model *m, enum thp_knob_id knob, unsigned long kib, const char *word,
	       const char *why, int *written)
{
	const struct thp_size *s = kib ? thp_model_size(m, kib) : NULL;
	const struct thp_choice *c = !kib ? (knob == THP_KNOB_ENABLED ? &m->enabled :
					     knob == THP_KNOB_DEFRAG ? &m->defrag : &m->shmem_enabled) :
				     !s || !s->has_dir ? NULL :
				     knob == THP_KNOB_SIZE_ENABLED ? &s->enabled : &s->shmem_enabled;
	const char *cur = c ? thp_choice_value(c) : NULL;
	char file[64];
	int r;

	if (!cur || strcmp(cur, word) == 0)
		return 0;
	if (kib)
		snprintf(file, sizeof(file), "hugepages-%lukB/%s", kib, thp_knob(knob)->file);
	else
		snprintf(file, sizeof(file), "%s", thp_knob(knob)->file);
	r = thp_knob_set(m, knob, kib, word);
	if (r < 0) {
		log_error("failed to write '%s' to %s/%s: %s", word, full_path(THP_SYSFS_DIR), file,
			  strerror(-r));
		return r;
	}
	printf("%s=%s (was %s: %s)\n", file, word, cur, why);
	(*written)++;
	return 0;
}

/* the boot defaults that can be known, written; EXIT_OK, EXIT_FAIL, or EXIT_NOT_IN_EFFECT */
static int write_boot_values(void)
{
	struct thp_model *m = malloc(sizeof(*m));
	struct thp_cmdline cl;
	struct thp_boot b;
	char cmdline[8192], *kconfig;
	int r, written = 0, failed = 0;
	bool force;

	r = m ? thp_model_read(m) : -ENOMEM;
	if (r < 0) {
		log_error("cannot read %s: %s", full_path(THP_SYSFS_DIR), strerror(-r));
		free(m);
		return EXIT_FAIL;
	}
	if (thp_read_file("/proc/cmdline", cmdline, sizeof(cmdline)) < 0)
		cmdline[0] = '\0';
	thp_cmdline_parse(cmdline, m->mode[0] ? THP_CMDLINE_NUMBERS : 0, &cl);
	kconfig = read_kconfig();
	thp_boot_values(&cl, kconfig, read_memtotal(), &b);
	free(kconfig);
	force = strcmp(b.shmem, "force") == 0;
	/* force is refused while a size but the PMD size inherits: sizes first then */
	if (b.shmem[0] && !force)
		failed += put(m, THP_KNOB_SHMEM_ENABLED, 0, b.shmem, b.shmem_why, &written) < 0;
	for (int i = 0; i < m->nsizes; i++) {
		unsigned long kib = m->size[i].kib;
		int o = 0;

		while ((4UL << o) < kib && o < THP_CMDLINE_ORDERS - 1)
			o++;
		failed += put(m, THP_KNOB_SIZE_ENABLED, kib, b.anon[o], b.anon_why, &written) < 0;
		failed += put(m, THP_KNOB_SIZE_SHMEM_ENABLED, kib, b.shmem_sizes[o], b.shmem_sizes_why,
			      &written) < 0;
	}
	if (force)
		failed += put(m, THP_KNOB_SHMEM_ENABLED, 0, b.shmem, b.shmem_why, &written) < 0;
	if (b.enabled[0])
		failed += put(m, THP_KNOB_ENABLED, 0, b.enabled, b.enabled_why, &written) < 0;
	failed += put(m, THP_KNOB_DEFRAG, 0, b.defrag, b.defrag_why, &written) < 0;
	free(m);
	if (!b.enabled[0])
		printf("enabled: left as it is: neither the kernel command line nor /boot/config-$(uname -r) says its boot value\n");
	if (!b.shmem[0])
		printf("shmem_enabled: left as it is: no /boot/config-$(uname -r) to say its boot value\n");
	printf("%s (written to sysfs: thpd is not running; khugepaged's knobs are left as they are)\n",
	       written ? "boot defaults" : "already at the boot defaults");
	if (failed)
		return EXIT_FAIL;
	return b.enabled[0] && b.shmem[0] ? EXIT_OK : EXIT_NOT_IN_EFFECT;
}

int verb_reset(struct verb_args *a)
{
	struct json_object *reply;
	const char *why;
	int r = thpctl_call("reset", NULL, &reply, &why);

	(void)a;
	if (r < 0)
		return EXIT_FAIL;
	if (r > 0) {
		/* what the host holds now, as thpd answered (enabled, defrag, mode) */
		puts("thpd forgot what was set through it: the kernel command line, its configuration and the host's own values again");
		return output(reply, false) < 0 ? EXIT_FAIL : EXIT_OK;
	}
	/* not the plain "nobody listens" case: say what went wrong */
	if (strcmp(why, strerror(ENOENT)) && strcmp(why, strerror(ECONNREFUSED)))
		log_error("could not reach thpd at %s: %s", thpctl_socket_path(), why);
	return write_boot_values();
}
