// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The THP parameters of the kernel command line, read exactly as the kernel
 * reads them (see thp.h): what thpd counts as a boot-time override and
 * what thpctl reset calls the boot defaults. Each function below names the
 * kernel code it follows (linux-source-6.12; 6.1 is the same where it has
 * the parameter); the table of cases is tests/host/fixtures/cmdline.txt.
 */
#include "thp.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* lib/ctype.c: _S is set for 9-13, 32 and 160 (NBSP, Latin-1) */
static bool k_isspace(char c)
{
	unsigned char u = (unsigned char)c;

	return (u >= 9 && u <= 13) || u == ' ' || u == 0xa0;
}

static char *k_skip_spaces(char *s)
{
	while (k_isspace(*s))
		s++;
	return s;
}

/* lib/cmdline.c next_arg(): quotes, the first '=', trailing spaces */
static char *k_next_arg(char *args, char **param, char **val)
{
	unsigned int i, equals = 0;
	bool in_quote = false, quoted = false;

	if (*args == '"') {
		args++;
		in_quote = quoted = true;
	}
	for (i = 0; args[i]; i++) {
		if (k_isspace(args[i]) && !in_quote)
			break;
		if (equals == 0 && args[i] == '=')
			equals = i;
		if (args[i] == '"')
			in_quote = !in_quote;
	}
	*param = args;
	if (!equals) {
		*val = NULL;
	} else {
		args[equals] = '\0';
		*val = args + equals + 1;
		/* don't include quotes in value */
		if (**val == '"') {
			(*val)++;
			if (args[i - 1] == '"')
				args[i - 1] = '\0';
		}
	}
	if (quoted && i > 0 && args[i - 1] == '"')
		args[i - 1] = '\0';
	if (args[i]) {
		args[i] = '\0';
		args += i + 1;
	} else {
		args += i;
	}
	return k_skip_spaces(args);
}

/*
 * init/main.c obsolete_checksetup() on the line repair_env_string() made:
 * does "param=val" start with "name=" (kernel/params.c parameqn(): '-'
 * and '_' are the same)? Without '=' it is no __setup("name=") of ours.
 */
static bool k_setup_matches(const char *param, const char *val, const char *name)
{
	size_t n = strlen(name);

	if (!val || strlen(param) != n)
		return false;
	for (size_t i = 0; i < n; i++) {
		char a = param[i] == '-' ? '_' : param[i], b = name[i] == '-' ? '_' : name[i];

		if (a != b)
			return false;
	}
	return true;
}

/* lib/kstrtox.c _parse_integer_fixup_radix(), _parse_integer_limit(); lib/cmdline.c memparse() */
static unsigned long long k_memparse(const char *s)
{
	unsigned long long res = 0;
	unsigned int base;

	if (s[0] != '0')
		base = 10;
	else if ((s[1] | 0x20) == 'x' && ((s[2] >= '0' && s[2] <= '9') ||
					  ((s[2] | 0x20) >= 'a' && (s[2] | 0x20) <= 'f')))
		base = 16;
	else
		base = 8;
	if (base == 16 && s[0] == '0' && (s[1] | 0x20) == 'x')
		s += 2;
	for (;; s++) {
		unsigned int c = (unsigned char)*s, lc = c | 0x20, v;

		if (c >= '0' && c <= '9')
			v = c - '0';
		else if (lc >= 'a' && lc <= 'f')
			v = lc - 'a' + 10;
		else
			break;
		if (v >= base)
			break;
		res = res * base + v;	/* wraps as the kernel's does */
	}
	/* the suffix; anything after it is not looked at */
	switch (*s) {
	case 'E': case 'e':
		res <<= 10;
		/* fallthrough */
	case 'P': case 'p':
		res <<= 10;
		/* fallthrough */
	case 'T': case 't':
		res <<= 10;
		/* fallthrough */
	case 'G': case 'g':
		res <<= 10;
		/* fallthrough */
	case 'M': case 'm':
		res <<= 10;
		/* fallthrough */
	case 'K': case 'k':
		res <<= 10;
		break;
	default:
		break;
	}
	return res;
}

/*
 * mm/huge_memory.c get_order_from_str() (mm/shmem.c for thp_shmem=): the
 * order of a size the knob takes at boot, or -EINVAL
 */
static int k_order_from_str(const char *s, unsigned long long allowed)
{
	unsigned long long size = k_memparse(s);
	int order = 0;

	if (!size || (size & (size - 1)))
		return -EINVAL;
	/* include/asm-generic/getorder.h get_order(), 4 KiB pages */
	for (size = (size - 1) >> 12; size; size >>= 1)
		order++;
	return (1ULL << order) & ~allowed ? -EINVAL : order;
}

/* x86-64 (4 KiB pages, PMD order 9): include/linux/huge_mm.h */
#define K_PMD_ORDER 9
#define K_ORDERS_ALL_ANON (((1ULL << (K_PMD_ORDER + 1)) - 1) & ~(1ULL | 2ULL))
#define K_ORDERS_ALL_FILE_DEFAULT (((1ULL << (K_PMD_ORDER + 1)) - 1) & ~1ULL)

/*
 * A word into its field, the rest of the field zeroed: a shorter word over
 * a longer one ("never" over "inherit") leaves no tail behind, so equal
 * results are equal byte for byte (memcmp), as the fuzz target compares.
 */
static void put_word(char *field, size_t size, const char *w)
{
	memset(field, 0, size);
	snprintf(field, size, "%s", w);
}

/*
 * mm/huge_memory.c setup_thp_anon() (6.9+), mm/shmem.c setup_thp_shmem()
 * (6.14+): "SIZES:WORD;..." onto words (one per order, "" = not named);
 * on anything the kernel refuses, words is left as it was (the kernel
 * ignores the whole parameter). 0 or -EINVAL.
 */
static int k_setup_sizes(const char *str, unsigned long long allowed, const char *const *policies,
			 char words[][THP_CMDLINE_WORD])
{
	char (*next)[THP_CMDLINE_WORD], *dup, *p, *token;
	int r = -EINVAL;

	if (strlen(str) + 1 > 4096)
		return -EINVAL;
	dup = strdup(str);
	next = malloc(sizeof(char[THP_CMDLINE_ORDERS][THP_CMDLINE_WORD]));
	if (!dup || !next)
		goto out;
	memcpy(next, words, sizeof(char[THP_CMDLINE_ORDERS][THP_CMDLINE_WORD]));
	p = dup;
	while ((token = strsep(&p, ";")) != NULL) {
		char *range = strsep(&token, ":"), *policy = token, *sub;

		if (!policy)
			goto out;
		while ((sub = strsep(&range, ",")) != NULL) {
			int start, end, k;

			if (strchr(sub, '-')) {
				char *start_size = strsep(&sub, "-");

				start = k_order_from_str(start_size, allowed);
				end = k_order_from_str(sub, allowed);
			} else {
				start = end = k_order_from_str(sub, allowed);
			}
			if (start < 0 || end < 0 || start > end)
				goto out;
			for (k = 0; policies[k] && strcmp(policy, policies[k]) != 0; k++)
				;
			if (!policies[k])
				goto out;
			for (int o = start; o <= end; o++)
				put_word(next[o], THP_CMDLINE_WORD, policies[k]);
		}
	}
	memcpy(words, next, sizeof(char[THP_CMDLINE_ORDERS][THP_CMDLINE_WORD]));
	r = 0;
out:
	free(dup);
	free(next);
	return r;
}

/* a word of list, compared as strcmp() does, or as sysfs_streq() (a trailing "\n" allowed) */
static const char *k_word(const char *val, const char *const *list, bool streq)
{
	size_t len = strlen(val);

	if (streq && len && val[len - 1] == '\n')
		len--;
	for (int i = 0; list[i]; i++)
		if (strlen(list[i]) == len && strncmp(val, list[i], len) == 0)
			return list[i];
	return NULL;
}

static const char *const thp_words[] = { "always", "madvise", "never", NULL };
/* the thp-stack series: setup_transparent_hugepage() looks the value up with sysfs_streq() */
static const char *const thp_words_numbers[] = { "always", "madvise", "never", "0", "1", "2", NULL };
/* mm/shmem.c shmem_parse_huge() */
static const char *const shmem_words[] = {
	"never", "always", "within_size", "advise", "deny", "force", NULL
};
static const char *const anon_policies[] = { "always", "madvise", "inherit", "never", NULL };
static const char *const shmem_policies[] = {
	"always", "advise", "inherit", "within_size", "never", NULL
};

/* one parameter the kernel hands to the __setup() handlers */
static void take(struct thp_cmdline *cl, const char *param, const char *val, unsigned int flags)
{
	const char *w;

	if (k_setup_matches(param, val, "transparent_hugepage")) {
		bool numbers = flags & THP_CMDLINE_NUMBERS;

		w = k_word(val, numbers ? thp_words_numbers : thp_words, numbers);
		if (w)
			put_word(cl->thp, sizeof(cl->thp), w);
		else
			cl->refused[THP_CMDLINE_THP]++;
	} else if (k_setup_matches(param, val, "transparent_hugepage_shmem")) {
		w = k_word(val, shmem_words, false);
		if (w)
			put_word(cl->shmem, sizeof(cl->shmem), w);
		else
			cl->refused[THP_CMDLINE_SHMEM]++;
	} else if (k_setup_matches(param, val, "thp_anon")) {
		if (k_setup_sizes(val, K_ORDERS_ALL_ANON, anon_policies, cl->anon) == 0)
			cl->anon_set = true;
		else
			cl->refused[THP_CMDLINE_ANON]++;
	} else if (k_setup_matches(param, val, "thp_shmem")) {
		if (k_setup_sizes(val, K_ORDERS_ALL_FILE_DEFAULT, shmem_policies, cl->shmem_sizes) == 0)
			cl->shmem_sizes_set = true;
		else
			cl->refused[THP_CMDLINE_SHMEM_SIZES]++;
	}
}

static bool is_ours(const char *param, const char *val)
{
	return k_setup_matches(param, val, "transparent_hugepage") ||
	       k_setup_matches(param, val, "transparent_hugepage_shmem") ||
	       k_setup_matches(param, val, "thp_anon") || k_setup_matches(param, val, "thp_shmem");
}

int thp_cmdline_parse(const char *text, unsigned int flags, struct thp_cmdline *cl)
{
	size_t len = strlen(text);
	char *buf, *args, *param, *val;

	memset(cl, 0, sizeof(*cl));
	/* /proc/cmdline is the command line and a "\n" (fs/proc/cmdline.c) */
	if (len && text[len - 1] == '\n')
		len--;
	buf = strndup(text, len);
	if (!buf)
		return -ENOMEM;
	/* kernel/params.c parse_args() */
	args = k_skip_spaces(buf);
	while (*args) {
		args = k_next_arg(args, &param, &val);
		/* stop at "--": the rest is init's (init/main.c set_init_arg()) */
		if (!val && strcmp(param, "--") == 0)
			break;
		take(cl, param, val, flags);
	}
	while (*args) {
		args = k_next_arg(args, &param, &val);
		cl->for_init += is_ours(param, val);
	}
	free(buf);
	return 0;
}

/* orders 0..THP_CMDLINE_ORDERS-1 of 4 KiB pages */
static int order_of(unsigned long kib)
{
	int o = 0;

	if (kib < 4 || (kib & (kib - 1)))
		return -1;
	while ((4UL << o) < kib)
		o++;
	return o < THP_CMDLINE_ORDERS ? o : -1;
}

const char *thp_cmdline_size_word(const struct thp_cmdline *cl, enum thp_knob_id knob,
				  unsigned long kib)
{
	int o = order_of(kib);
	const char *w;

	if (o < 0)
		return NULL;
	w = knob == THP_KNOB_SIZE_SHMEM_ENABLED ? cl->shmem_sizes[o] : cl->anon[o];
	return *w ? w : NULL;
}

static const char *const param_names[THP_CMDLINE_N] = {
	[THP_CMDLINE_THP] = "transparent_hugepage",
	[THP_CMDLINE_SHMEM] = "transparent_hugepage_shmem",
	[THP_CMDLINE_ANON] = "thp_anon",
	[THP_CMDLINE_SHMEM_SIZES] = "thp_shmem",
};

const char *thp_cmdline_param_name(enum thp_cmdline_param p)
{
	return (unsigned int)p < THP_CMDLINE_N ? param_names[p] : "?";
}

/* " thp_anon=16K:always;64K:never": the orders named, in the kernel's syntax */
static void put_sizes(FILE *f, enum thp_cmdline_param p, const char words[][THP_CMDLINE_WORD])
{
	char name[16];
	bool first = true;

	for (int o = 0; o < THP_CMDLINE_ORDERS; o++) {
		if (!words[o][0])
			continue;
		if (first)
			fprintf(f, " %s=", param_names[p]);
		else
			fputc(';', f);
		fprintf(f, "%s:%s", thp_size_name(4UL << o, name, sizeof(name)), words[o]);
		first = false;
	}
}

const char *thp_cmdline_format(const struct thp_cmdline *cl, char *buf, size_t size)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	bool refused = false;

	if (!f) {
		snprintf(buf, size, "?");
		return buf;
	}
	if (cl->thp[0])
		fprintf(f, " %s=%s", param_names[THP_CMDLINE_THP], cl->thp);
	if (cl->shmem[0])
		fprintf(f, " %s=%s", param_names[THP_CMDLINE_SHMEM], cl->shmem);
	if (cl->anon_set)
		put_sizes(f, THP_CMDLINE_ANON, cl->anon);
	if (cl->shmem_sizes_set)
		put_sizes(f, THP_CMDLINE_SHMEM_SIZES, cl->shmem_sizes);
	for (int i = 0; i < THP_CMDLINE_N; i++) {
		if (!cl->refused[i])
			continue;
		fprintf(f, "%s%s:%u", refused ? "," : " refused=", param_names[i], cl->refused[i]);
		refused = true;
	}
	if (cl->for_init)
		fprintf(f, " for_init=%u", cl->for_init);
	if (ftell(f) == 0)
		fputs(" -", f);
	/* each item starts with a space: drop the first */
	snprintf(buf, size, "%s", fclose(f) == 0 && text ? text + 1 : "?");
	free(text);
	return buf;
}

/* "CONFIG_NAME=y" as a line of a kernel's build configuration */
static bool kconfig_y(const char *kconfig, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = kconfig; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, name, n) == 0 && strncmp(p + n, "=y", 2) == 0 &&
		    (p[n + 2] == '\n' || p[n + 2] == '\0'))
			return true;
	return false;
}

/* per order: the words a thp_anon=/thp_shmem= set, never elsewhere; without one, PMD inherits */
static void boot_sizes(bool set, const char words[][THP_CMDLINE_WORD],
		       char out[][THP_CMDLINE_WORD])
{
	for (int o = 0; o < THP_CMDLINE_ORDERS; o++) {
		const char *w = set ? (words[o][0] ? words[o] : "never") :
			       o == K_PMD_ORDER ? "inherit" : "never";

		snprintf(out[o], THP_CMDLINE_WORD, "%s", w);
	}
}

void thp_boot_values(const struct thp_cmdline *cl, const char *kconfig, unsigned long memtotal_kib,
		     struct thp_boot *b)
{
	static const struct {
		const char *option, *word;
	} enabled_opts[] = {
		{ "CONFIG_TRANSPARENT_HUGEPAGE_ALWAYS", "always" },
		{ "CONFIG_TRANSPARENT_HUGEPAGE_MADVISE", "madvise" },
		{ "CONFIG_TRANSPARENT_HUGEPAGE_NEVER", "never" },
	}, shmem_opts[] = {
		{ "CONFIG_TRANSPARENT_HUGEPAGE_SHMEM_HUGE_NEVER", "never" },
		{ "CONFIG_TRANSPARENT_HUGEPAGE_SHMEM_HUGE_ALWAYS", "always" },
		{ "CONFIG_TRANSPARENT_HUGEPAGE_SHMEM_HUGE_WITHIN_SIZE", "within_size" },
		{ "CONFIG_TRANSPARENT_HUGEPAGE_SHMEM_HUGE_ADVISE", "advise" },
	};
	struct thp_mode_req req;

	memset(b, 0, sizeof(*b));
	/* the kernel's default; a number sets it too (below) */
	snprintf(b->defrag, sizeof(b->defrag), "madvise");
	b->defrag_why = "the kernel's default";
	if (cl->thp[0] && thp_mode_parse(cl->thp, &req) == 0) {
		snprintf(b->enabled, sizeof(b->enabled), "%s", thp_enabled_name(req.enabled));
		b->enabled_why = "transparent_hugepage= on the kernel command line";
		if (req.defrag) {
			snprintf(b->defrag, sizeof(b->defrag), "%s", req.defrag);
			b->defrag_why = b->enabled_why;
		}
	} else {
		for (size_t i = 0; i < sizeof(enabled_opts) / sizeof(enabled_opts[0]); i++)
			if (kconfig_y(kconfig, enabled_opts[i].option)) {
				snprintf(b->enabled, sizeof(b->enabled), "%s", enabled_opts[i].word);
				b->enabled_why = enabled_opts[i].option;
			}
	}
	/* mm/huge_memory.c hugepage_init(): after the command line, every flag off */
	if (memtotal_kib && memtotal_kib < 512UL * 1024) {
		snprintf(b->enabled, sizeof(b->enabled), "never");
		snprintf(b->defrag, sizeof(b->defrag), "never");
		b->enabled_why = b->defrag_why = "less than 512 MiB of memory";
	}
	if (cl->shmem[0]) {
		snprintf(b->shmem, sizeof(b->shmem), "%s", cl->shmem);
		b->shmem_why = "transparent_hugepage_shmem= on the kernel command line";
	} else if (kconfig) {
		/* before 6.14 there is no such option: never */
		snprintf(b->shmem, sizeof(b->shmem), "never");
		b->shmem_why = "the kernel's default";
		for (size_t i = 0; i < sizeof(shmem_opts) / sizeof(shmem_opts[0]); i++)
			if (kconfig_y(kconfig, shmem_opts[i].option)) {
				snprintf(b->shmem, sizeof(b->shmem), "%s", shmem_opts[i].word);
				b->shmem_why = shmem_opts[i].option;
			}
	}
	boot_sizes(cl->anon_set, cl->anon, b->anon);
	b->anon_why = cl->anon_set ? "thp_anon= on the kernel command line" :
		      "the kernel's default (the PMD size inherits)";
	boot_sizes(cl->shmem_sizes_set, cl->shmem_sizes, b->shmem_sizes);
	b->shmem_sizes_why = cl->shmem_sizes_set ? "thp_shmem= on the kernel command line" :
			     "the kernel's default (the PMD size inherits)";
}
