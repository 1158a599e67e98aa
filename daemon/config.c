// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * thpd.conf parsing. See config.h and thpd.conf(5).
 *
 * Every key is a row of one table (section, key, typed parser, where the
 * value goes, bounds); the parsers are typed: bool, bounded integer,
 * percentage, systemd time span, word from the knob's valid values, string.
 *
 * What is fatal (the config is unusable, start fails, reload keeps the last
 * good config): an existing file that cannot be read or is not a regular
 * file, a line that is not INI syntax, a line, section name or value longer
 * than what is stored, a NUL byte, and a bad [Global] Mode= or Defrag= —
 * thpd cannot know what to apply to the host; the same for Shmem= and a
 * [Size N] section: a name that is not a hugepage size, a bad Enabled= or
 * Shmem=. A size the running kernel does not have is not a configuration
 * error (one file serves hosts with different kernels): it is a warning
 * when applied, and skipped. Everything else that is wrong
 * (unknown section or key, bad value of any other key, incomplete rule) is
 * a warning with file:line and is ignored.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static const char *const kh_files[THPD_KH_N] = {
	[THPD_KH_DEFRAG] = "defrag",
	[THPD_KH_PAGES_TO_SCAN] = "pages_to_scan",
	[THPD_KH_SCAN_SLEEP] = "scan_sleep_millisecs",
	[THPD_KH_ALLOC_SLEEP] = "alloc_sleep_millisecs",
	[THPD_KH_MAX_PTES_NONE] = "max_ptes_none",
	[THPD_KH_MAX_PTES_SWAP] = "max_ptes_swap",
	[THPD_KH_MAX_PTES_SHARED] = "max_ptes_shared",
};

const char *thpd_kh_file(enum thpd_kh_knob k)
{
	return (unsigned int)k < THPD_KH_N ? kh_files[k] : "?";
}

int thpd_kh_from_file(const char *name)
{
	for (int k = 0; k < THPD_KH_N; k++)
		if (strcmp(kh_files[k], name) == 0)
			return k;
	return -1;
}

void thpd_config_defaults(struct thpd_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->restore_on_stop = true;
	cfg->honor_kernel_cmdline = true;
	cfg->adaptive = (struct thpd_adaptive_config){
		.enabled = false,
		.pressure_full = false,
		.pressure_threshold_us = 150000,
		.pressure_window_us = 1000000,
		.min_free_blocks = 16,
		.recover_free_blocks = -1,
		.step_down_enabled = THP_MADVISE,
		.step_down_defrag = "defer",
		.calm_usec = 60ULL * 1000000,
		.check_interval_usec = 5ULL * 1000000,
	};
	cfg->collapse = (struct thpd_collapse_config){
		.enabled = false,
		.all = false,
		.max_rate_mib = 256,
		.cpu_percent = 25,
		.watch_usec = 250000,
		.watch_timeout_usec = 600ULL * 1000000,
		.reserve_blocks = -1,
	};
}


const char *thpd_config_file(const struct thpd_config *cfg, unsigned int index)
{
	return index < cfg->files_used ? cfg->files + index : "";
}

const struct thpd_size_config *thpd_config_size(const struct thpd_config *cfg, unsigned long kib)
{
	for (unsigned int i = 0; i < cfg->n_sizes; i++)
		if (cfg->sizes[i].kib == kib)
			return &cfg->sizes[i];
	return NULL;
}

/* ---- typed value parsers, pure ---- */

static int parse_bool(const char *v, bool *out)
{
	static const char *const yes[] = { "1", "yes", "true", "on" };
	static const char *const no[] = { "0", "no", "false", "off" };

	for (size_t i = 0; i < 4; i++) {
		if (strcasecmp(v, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(v, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

static int parse_u64(const char *v, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long x;
	char *end;

	if (*v < '0' || *v > '9')
		return -EINVAL;
	errno = 0;
	x = strtoull(v, &end, 10);
	if (*end)
		return -EINVAL;
	if (errno || x < min || x > max)
		return -ERANGE;
	*out = x;
	return 0;
}

/* systemd's units (time-util.c), the ones that fit a THP daemon's spans */
static const struct {
	const char *suffix;
	uint64_t usec;
} span_units[] = {
	{ "usec", 1 }, { "us", 1 }, { "\xc2\xb5s", 1 },
	{ "msec", 1000 }, { "ms", 1000 },
	{ "seconds", 1000000 }, { "second", 1000000 }, { "sec", 1000000 }, { "s", 1000000 },
	{ "minutes", 60000000 }, { "minute", 60000000 }, { "min", 60000000 },
	{ "hours", 3600000000ULL }, { "hour", 3600000000ULL }, { "hr", 3600000000ULL },
	{ "h", 3600000000ULL },
	{ "days", 86400000000ULL }, { "day", 86400000000ULL }, { "d", 86400000000ULL },
	{ "weeks", 604800000000ULL }, { "week", 604800000000ULL }, { "w", 604800000000ULL },
	{ "m", 60000000 },
};

static int span_unit(const char **p, uint64_t default_unit, uint64_t *unit)
{
	size_t best = 0;

	*unit = default_unit;
	for (size_t i = 0; i < sizeof(span_units) / sizeof(span_units[0]); i++) {
		size_t len = strlen(span_units[i].suffix);
		char next;

		if (strncmp(*p, span_units[i].suffix, len) != 0)
			continue;
		next = (*p)[len];
		/* a unit ends at white space, a digit or the end */
		if (next && next != ' ' && next != '\t' && (next < '0' || next > '9'))
			continue;
		if (len > best) {
			best = len;
			*unit = span_units[i].usec;
		}
	}
	*p += best;
	return 0;
}

int thpd_parse_timespan(const char *s, uint64_t default_unit, uint64_t *usec)
{
	const char *p = s;
	uint64_t total = 0;
	bool any = false;

	for (;;) {
		uint64_t whole = 0, frac = 0, frac_div = 1, unit, part;

		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			break;
		if (*p < '0' || *p > '9')
			return -EINVAL;
		for (; *p >= '0' && *p <= '9'; p++) {
			if (whole > (UINT64_MAX - 9) / 10)
				return -ERANGE;
			whole = whole * 10 + (uint64_t)(*p - '0');
		}
		if (*p == '.') {
			p++;
			if (*p < '0' || *p > '9')
				return -EINVAL;
			for (; *p >= '0' && *p <= '9'; p++)
				if (frac_div < 1000000000000ULL) {	/* finer than any unit needs */
					frac = frac * 10 + (uint64_t)(*p - '0');
					frac_div *= 10;
				}
		}
		while (*p == ' ' || *p == '\t')
			p++;
		span_unit(&p, default_unit, &unit);
		if (unit && whole > UINT64_MAX / unit)
			return -ERANGE;
		part = whole * unit;
		/* frac < frac_div <= 1e12 and unit <= 1 week: no overflow in 128 bits */
		part += (uint64_t)((unsigned __int128)frac * unit / frac_div);
		if (part > UINT64_MAX - total)
			return -ERANGE;
		total += part;
		any = true;
	}
	if (!any)
		return -EINVAL;
	*usec = total;
	return 0;
}

/* ---- the table ---- */

struct parse_ctx;
struct item;
typedef int (*item_parser)(struct parse_ctx *c, const struct item *it, const char *v, char *base);

struct item {
	const char *section;		/* "Global", "Adaptive", "Collapse", "Rule" (any [Rule NAME]), "Size" */
	const char *key;
	item_parser parse;
	size_t offset, size;		/* the field, in thpd_config or thpd_rule */
	uint64_t min, max;		/* integers; time spans in usec */
	uint64_t unit;			/* time spans: usec of a bare number */
	bool has_set;			/* an empty value unsets: set_offset is a bool */
	size_t set_offset;
	const char *const *words;	/* words, stored as their index */
	int (*word_value)(const char *v);	/* words, stored as what this returns */
	int (*valid)(const char *v);	/* strings: 0 when acceptable */
	const char *expected;		/* for messages, else: */
	bool mode_words;		/* thp_mode_words_text() */
	bool has_knob;			/* thp_knob_words_text(knob) */
	enum thp_knob_id knob;
	bool fatal;			/* a bad value makes the configuration unusable */
	bool allow_empty;		/* strings and words: "" = leave alone */
};

struct parse_ctx {
	struct thpd_config *cfg;
	const char *name;
	int name_index;			/* in cfg->files, -1 until a rule needs it */
	const struct thpd_diag *diag;
	const char *p, *end;		/* the text still to read */
	unsigned int line;		/* line of the text the parser is looking at */
	bool skip_section;		/* under a section header that was refused */
	bool have_bad_size;
	char bad_size[THPD_CONFIG_SECTION_MAX + 1];	/* the [Size N] last refused, said once */
	bool fatal;
};

static void diag(struct parse_ctx *c, enum thpd_diag_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void diag(struct parse_ctx *c, enum thpd_diag_level level, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (level == THPD_DIAG_FATAL)
		c->fatal = true;
	if (c->diag && c->diag->report)
		c->diag->report(c->diag->userdata, level, c->name, c->line, msg);
}

static void store_uint(char *dst, size_t size, uint64_t v)
{
	if (size == sizeof(uint32_t)) {
		uint32_t x = (uint32_t)v;

		memcpy(dst, &x, sizeof(x));
	} else if (size == sizeof(uint64_t)) {
		memcpy(dst, &v, sizeof(v));
	} else if (size == sizeof(bool)) {
		bool b = v != 0;

		memcpy(dst, &b, sizeof(b));
	}
}

/* the value of key= in [section] is bad: one message, fatal or a warning */
static int bad_value(struct parse_ctx *c, const struct item *it, const char *section,
		     const char *v, const char *expected)
{
	bool global = strcmp(section, "Global") == 0;

	diag(c, it->fatal ? THPD_DIAG_FATAL : THPD_DIAG_WARNING, "invalid %s=%s%s%s%s (expected %s)%s",
	     it->key, v, global ? "" : " in [", global ? "" : section, global ? "" : "]",
	     expected, it->fatal ? "" : ", ignored");
	return 0;
}

static int p_bool(struct parse_ctx *c, const struct item *it, const char *v, char *base)
{
	bool b;

	(void)c;
	if (parse_bool(v, &b) < 0)
		return -EINVAL;
	memcpy(base + it->offset, &b, sizeof(b));
	return 0;
}

static int p_uint(struct parse_ctx *c, const struct item *it, const char *v, char *base)
{
	uint64_t u;

	(void)c;
	if (parse_u64(v, it->min, it->max, &u) < 0)
		return -EINVAL;
	store_uint(base + it->offset, it->size, u);
	return 0;
}

static int p_span(struct parse_ctx *c, const struct item *it, const char *v, char *base)
{
	uint64_t u;

	(void)c;
	if (thpd_parse_timespan(v, it->unit, &u) < 0 || u < it->min || u > it->max)
		return -EINVAL;
	store_uint(base + it->offset, it->size, u);
	return 0;
}

static int p_word(struct parse_ctx *c, const struct item *it, const char *v, char *base)
{
	int val = -EINVAL;

	(void)c;
	if (it->words) {
		for (int i = 0; it->words[i]; i++)
			if (strcmp(v, it->words[i]) == 0)
				val = i;
	} else {
		val = it->word_value(v);
	}
	if (val < 0)
		return -EINVAL;
	if (it->size == sizeof(int))
		memcpy(base + it->offset, &val, sizeof(val));
	else
		store_uint(base + it->offset, it->size, (uint64_t)val);
	return 0;
}

/* -ENAMETOOLONG (fatal: never truncated) or -EINVAL (the validator refused) */
static int p_string(struct parse_ctx *c, const struct item *it, const char *v, char *base)
{
	size_t len = strlen(v);

	(void)c;
	if (*v && it->valid && it->valid(v) < 0)
		return -EINVAL;
	if (len >= it->size)
		return -ENAMETOOLONG;
	memcpy(base + it->offset, v, len + 1);
	return 0;
}

/* "25%" or "25": a share of one CPU, as systemd's CPUQuota= */
static int p_percent(struct parse_ctx *c, const struct item *it, const char *v, char *base)
{
	char num[8];
	size_t len = strlen(v);
	uint64_t u;

	(void)c;
	if (len && v[len - 1] == '%')
		len--;
	if (!len || len >= sizeof(num))
		return -EINVAL;
	memcpy(num, v, len);
	num[len] = '\0';
	if (parse_u64(num, it->min, it->max, &u) < 0)
		return -EINVAL;
	store_uint(base + it->offset, it->size, u);
	return 0;
}

static int mode_valid(const char *v)
{
	struct thp_mode_req req;

	return thp_mode_parse(v, &req);
}

static int knob_valid(enum thp_knob_id knob, const char *v)
{
	return thp_knob_word_known(knob, v) ? 0 : -EINVAL;
}

static int shmem_valid(const char *v)
{
	return knob_valid(THP_KNOB_SHMEM_ENABLED, v);
}

static int size_enabled_valid(const char *v)
{
	return knob_valid(THP_KNOB_SIZE_ENABLED, v);
}

static int size_shmem_valid(const char *v)
{
	return knob_valid(THP_KNOB_SIZE_SHMEM_ENABLED, v);
}

static int cgroup_valid(const char *v)
{
	return *v == '/' ? 0 : -EINVAL;
}

static const char *const pressure_types[] = { "some", "full", NULL };
static const char *const collapse_processes[] = { "rules", "all", NULL };

#define G(field) offsetof(struct thpd_config, field), sizeof(((struct thpd_config *)0)->field)
#define A(field) G(adaptive.field)
#define C(field) G(collapse.field)
#define R(field) offsetof(struct thpd_rule, field), sizeof(((struct thpd_rule *)0)->field)
#define Z(field) offsetof(struct thpd_size_config, field), \
	sizeof(((struct thpd_size_config *)0)->field)
#define KH(k, name)                                                                         \
	{ "Global", name, p_uint, G(kh_val[k]), .max = (k) == THPD_KH_DEFRAG ? 1 : UINT32_MAX, \
	  .has_set = true, .set_offset = offsetof(struct thpd_config, kh_set[k]) }
#define USEC 1
#define SEC ((uint64_t)1000000)

static const struct item items[] = {
	{ "Global", "Mode", p_string, G(mode), .valid = mode_valid, .fatal = true,
	  .allow_empty = true, .mode_words = true },
	{ "Global", "Defrag", p_string, G(defrag), .valid = thp_defrag_valid, .fatal = true,
	  .allow_empty = true, .has_knob = true, .knob = THP_KNOB_DEFRAG },
	{ "Global", "Shmem", p_string, G(shmem), .valid = shmem_valid, .fatal = true,
	  .allow_empty = true, .has_knob = true, .knob = THP_KNOB_SHMEM_ENABLED },
	KH(THPD_KH_DEFRAG, "KhugepagedDefrag"),
	KH(THPD_KH_PAGES_TO_SCAN, "KhugepagedPagesToScan"),
	KH(THPD_KH_SCAN_SLEEP, "KhugepagedScanSleepMSec"),
	KH(THPD_KH_ALLOC_SLEEP, "KhugepagedAllocSleepMSec"),
	KH(THPD_KH_MAX_PTES_NONE, "KhugepagedMaxPtesNone"),
	KH(THPD_KH_MAX_PTES_SWAP, "KhugepagedMaxPtesSwap"),
	KH(THPD_KH_MAX_PTES_SHARED, "KhugepagedMaxPtesShared"),
	{ "Global", "RestoreOnStop", p_bool, G(restore_on_stop), .fatal = false },
	{ "Global", "HonorKernelCmdline", p_bool, G(honor_kernel_cmdline), .fatal = false },
	{ "Global", "AdminGroup", p_string, G(admin_group), .allow_empty = true,
	  .expected = "a group name or number" },

	{ "Adaptive", "Enabled", p_bool, A(enabled), .fatal = false },
	{ "Adaptive", "PressureType", p_word, A(pressure_full), .words = pressure_types,
	  .expected = "some or full" },
	/* the kernel's limits (psi.rst): 0 < threshold <= window, window 500 ms to 10 s */
	{ "Adaptive", "PressureThresholdUSec", p_span, A(pressure_threshold_us), .min = 1,
	  .max = 10 * SEC, .unit = USEC },
	{ "Adaptive", "PressureWindowUSec", p_span, A(pressure_window_us), .min = 500000,
	  .max = 10 * SEC, .unit = USEC },
	{ "Adaptive", "MinFreeBlocks", p_uint, A(min_free_blocks), .max = LONG_MAX },
	{ "Adaptive", "RecoverFreeBlocks", p_uint, A(recover_free_blocks), .max = LONG_MAX },
	{ "Adaptive", "StepDownMode", p_word, A(step_down_enabled),
	  .word_value = thp_enabled_from_name, .has_knob = true, .knob = THP_KNOB_ENABLED },
	{ "Adaptive", "StepDownDefrag", p_string, A(step_down_defrag), .valid = thp_defrag_valid,
	  .allow_empty = true, .has_knob = true, .knob = THP_KNOB_DEFRAG },
	{ "Adaptive", "CalmSec", p_span, A(calm_usec), .min = SEC, .max = 86400 * SEC, .unit = SEC },
	{ "Adaptive", "CheckIntervalSec", p_span, A(check_interval_usec), .min = SEC / 10,
	  .max = 3600 * SEC, .unit = SEC },

	{ "Collapse", "Enabled", p_bool, C(enabled), .fatal = false },
	{ "Collapse", "Processes", p_word, C(all), .words = collapse_processes,
	  .expected = "rules or all" },
	{ "Collapse", "MaxRateMiB", p_uint, C(max_rate_mib), .max = 1 << 20 },
	{ "Collapse", "CPUQuota", p_percent, C(cpu_percent), .min = 1, .max = 100,
	  .expected = "a percentage from 1% to 100%" },
	{ "Collapse", "WatchIntervalSec", p_span, C(watch_usec), .min = SEC / 100, .max = 60 * SEC,
	  .unit = SEC },
	{ "Collapse", "WatchTimeoutSec", p_span, C(watch_timeout_usec), .min = SEC,
	  .max = 86400 * SEC, .unit = SEC },
	{ "Collapse", "ReserveFreeBlocks", p_uint, C(reserve_blocks), .max = LONG_MAX },

	{ "Size", "Enabled", p_string, Z(enabled), .valid = size_enabled_valid, .fatal = true,
	  .allow_empty = true, .has_knob = true, .knob = THP_KNOB_SIZE_ENABLED },
	{ "Size", "Shmem", p_string, Z(shmem), .valid = size_shmem_valid, .fatal = true,
	  .allow_empty = true, .has_knob = true, .knob = THP_KNOB_SIZE_SHMEM_ENABLED },

	{ "Rule", "Exe", p_string, R(exe), .allow_empty = true },
	{ "Rule", "Comm", p_string, R(comm), .allow_empty = true },
	{ "Rule", "Cgroup", p_string, R(cgroup), .valid = cgroup_valid, .allow_empty = true,
	  .expected = "an absolute cgroup path" },
	{ "Rule", "User", p_string, R(user), .allow_empty = true },
	{ "Rule", "Policy", p_word, R(policy), .word_value = thp_policy_from_name,
	  .expected = "advise, never or default" },
};

static const char *span_text(char *buf, size_t size, uint64_t usec)
{
	if (usec % SEC == 0)
		snprintf(buf, size, "%" PRIu64 "s", usec / SEC);
	else if (usec % 1000 == 0)
		snprintf(buf, size, "%" PRIu64 "ms", usec / 1000);
	else
		snprintf(buf, size, "%" PRIu64 "us", usec);
	return buf;
}

/* what a bad value of this row should have been, for the message */
static void expected_text(const struct item *it, char *buf, size_t size)
{
	char min[32], max[32];

	if (it->expected)
		snprintf(buf, size, "%s", it->expected);
	else if (it->mode_words)
		thp_mode_words_text(buf, size);
	else if (it->has_knob)
		thp_knob_words_text(it->knob, buf, size);
	else if (it->parse == p_bool)
		snprintf(buf, size, "yes or no");
	else if (it->parse == p_uint)
		snprintf(buf, size, "an integer from %" PRIu64 " to %" PRIu64, it->min, it->max);
	else
		snprintf(buf, size, "a time span from %s to %s, e.g. %s",
			 span_text(min, sizeof(min), it->min), span_text(max, sizeof(max), it->max),
			 it->unit == SEC ? "30 (seconds) or 2min" : "150ms");
}

/* ---- sections ---- */

static int file_index(struct parse_ctx *c)
{
	struct thpd_config *cfg = c->cfg;
	size_t len = strlen(c->name);

	if (c->name_index >= 0)
		return c->name_index;
	if (len + 1 > sizeof(cfg->files) - cfg->files_used) {
		diag(c, THPD_DIAG_FATAL, "too many configuration files with rules (names over %zu bytes)",
		     sizeof(cfg->files));
		return -ENOSPC;
	}
	memcpy(cfg->files + cfg->files_used, c->name, len + 1);
	c->name_index = (int)cfg->files_used;
	cfg->files_used += (unsigned int)(len + 1);
	return c->name_index;
}

static struct thpd_rule *rule_get(struct parse_ctx *c, const char *name)
{
	struct thpd_config *cfg = c->cfg;
	struct thpd_rule *r;
	int file;

	if (!*name) {
		diag(c, THPD_DIAG_WARNING, "[Rule] needs a name, ignored");
		return NULL;
	}
	if (strlen(name) >= sizeof(r->name)) {
		diag(c, THPD_DIAG_FATAL, "[Rule %s]: the name is longer than %zu characters", name,
		     sizeof(r->name) - 1);
		return NULL;
	}
	for (unsigned int i = 0; i < cfg->n_rules; i++)
		if (strcmp(cfg->rules[i].name, name) == 0)
			return &cfg->rules[i];
	if (cfg->n_rules == THPD_MAX_RULES) {
		diag(c, THPD_DIAG_WARNING, "more than %d rules, [Rule %s] ignored",
		     THPD_MAX_RULES, name);
		return NULL;
	}
	file = file_index(c);
	if (file < 0)
		return NULL;
	r = &cfg->rules[cfg->n_rules++];
	memset(r, 0, sizeof(*r));
	r->policy = -1;
	strcpy(r->name, name);
	r->origin_file = (unsigned int)file;
	r->origin_line = c->line;
	return r;
}

/*
 * [Size N]: N as thp_size_parse() takes it (64K, 2M, 64kB), a power of two
 * from 8K (order 1, the smallest mTHP) to 1G; written back as
 * thp_size_name() does, so [Size 2048K] and [Size 2M] are one section.
 */
static struct thpd_size_config *size_get(struct parse_ctx *c, const char *name)
{
	struct thpd_config *cfg = c->cfg;
	struct thpd_size_config *z;
	unsigned long kib;
	unsigned int i;
	int file;

	if (thp_size_parse(name, &kib) < 0 || kib < 8 || kib > 1024UL * 1024 || (kib & (kib - 1))) {
		if (c->have_bad_size && strcmp(c->bad_size, name) == 0)
			return NULL;
		c->have_bad_size = true;
		snprintf(c->bad_size, sizeof(c->bad_size), "%s", name);
		diag(c, THPD_DIAG_FATAL,
		     "[Size %s]: not a hugepage size (expected a power of two from 8K to 1G, e.g. 64K or 2M)",
		     name);
		return NULL;
	}
	for (i = 0; i < cfg->n_sizes; i++)
		if (cfg->sizes[i].kib == kib)
			return &cfg->sizes[i];
	if (cfg->n_sizes == THP_SIZES_MAX) {
		diag(c, THPD_DIAG_FATAL, "more than %d [Size] sections", THP_SIZES_MAX);
		return NULL;
	}
	file = file_index(c);
	if (file < 0)
		return NULL;
	/* ascending, as the kernel's sizes are listed */
	for (i = cfg->n_sizes; i > 0 && cfg->sizes[i - 1].kib > kib; i--)
		cfg->sizes[i] = cfg->sizes[i - 1];
	cfg->n_sizes++;
	z = &cfg->sizes[i];
	memset(z, 0, sizeof(*z));
	z->kib = kib;
	z->origin_file = (unsigned int)file;
	z->origin_line = c->line;
	return z;
}

static int handler(void *user, const char *section, const char *key, const char *value)
{
	struct parse_ctx *c = user;
	const char *kind = section, *rule_name = NULL, *size_name = NULL;
	char sect[THPD_CONFIG_SECTION_MAX + 8], expected[160];
	char *base = (char *)c->cfg;
	const struct item *it = NULL;
	int r;

	if (c->skip_section)
		return 1;	/* its keys belong to no section we know */
	if (strncmp(section, "Rule", 4) == 0 && (section[4] == ' ' || section[4] == '\0')) {
		kind = "Rule";
		rule_name = section + 4;
		while (*rule_name == ' ')
			rule_name++;
	} else if (strncmp(section, "Size", 4) == 0 && (section[4] == ' ' || section[4] == '\0')) {
		kind = "Size";
		size_name = section + 4;
		while (*size_name == ' ')
			size_name++;
	}
	for (size_t i = 0; i < sizeof(items) / sizeof(items[0]); i++)
		if (strcmp(items[i].section, kind) == 0 && strcmp(items[i].key, key) == 0)
			it = &items[i];
	if (!it) {
		if (!*section)
			diag(c, THPD_DIAG_WARNING, "%s= outside of any section, ignored", key);
		else if (rule_name || size_name || strcmp(kind, "Global") == 0 ||
			 strcmp(kind, "Adaptive") == 0 || strcmp(kind, "Collapse") == 0)
			diag(c, THPD_DIAG_WARNING, "unknown key %s= in [%s], ignored", key, section);
		else
			diag(c, THPD_DIAG_WARNING, "unknown section [%s], %s= ignored", section, key);
		return 1;
	}
	if (rule_name) {
		struct thpd_rule *rule = rule_get(c, rule_name);

		if (!rule)
			return 1;
		base = (char *)rule;
	} else if (size_name) {
		struct thpd_size_config *z = size_get(c, size_name);

		if (!z)
			return 1;
		base = (char *)z;
	}
	snprintf(sect, sizeof(sect), "%s", section);
	if (!*value && it->has_set) {
		bool unset = false;

		memcpy(base + it->set_offset, &unset, sizeof(unset));
		return 1;
	}
	if (!*value && it->allow_empty) {
		memset(base + it->offset, 0, it->size);
		return 1;
	}
	r = it->parse(c, it, value, base);
	if (r == -ENAMETOOLONG) {
		diag(c, THPD_DIAG_FATAL, "%s= in [%s] is longer than %zu characters", key, sect,
		     it->size - 1);
	} else if (r < 0) {
		expected_text(it, expected, sizeof(expected));
		bad_value(c, it, sect, value, expected);
	} else if (it->has_set) {
		bool set = true;

		memcpy(base + it->set_offset, &set, sizeof(set));
	}
	return 1;
}

/* ---- the reader ---- */

/*
 * Hands libinih one whole line at a time, or an empty line in place of one
 * that must not be parsed: longer than libinih's buffer (it would split it
 * and parse the tail as a line of its own), a section name longer than
 * libinih keeps (it would truncate it), a NUL byte (it would end the line
 * there). Each of these is a fatal error at its line.
 */
static char *line_reader(char *str, int num, void *stream)
{
	struct parse_ctx *c = stream;
	const char *nl, *start = c->p, *s;
	size_t len, keep;

	if (c->p >= c->end)
		return NULL;
	nl = memchr(c->p, '\n', (size_t)(c->end - c->p));
	len = nl ? (size_t)(nl - c->p) : (size_t)(c->end - c->p);
	c->p += len + (nl ? 1 : 0);
	c->line++;
	keep = len;
	if (memchr(start, '\0', len)) {
		diag(c, THPD_DIAG_FATAL, "a NUL byte in the line");
		keep = 0;
	} else if (len > (size_t)num - 2 || len > THPD_CONFIG_LINE_MAX) {
		diag(c, THPD_DIAG_FATAL, "line longer than %d characters", THPD_CONFIG_LINE_MAX);
		keep = 0;
	} else {
		for (s = start; s < start + len && (*s == ' ' || *s == '\t'); s++)
			;
		if (s < start + len && *s == '[') {
			const char *close = memchr(s, ']', (size_t)(start + len - s));

			c->skip_section = false;
			if (close && close - s - 1 > THPD_CONFIG_SECTION_MAX) {
				diag(c, THPD_DIAG_FATAL, "section name longer than %d characters",
				     THPD_CONFIG_SECTION_MAX);
				c->skip_section = true;
				keep = 0;
			}
		}
	}
	memcpy(str, start, keep);
	str[keep] = '\n';
	str[keep + 1] = '\0';
	return str;
}

int thpd_config_parse(struct thpd_config *cfg, const char *name, const char *text, size_t len,
		      const struct thpd_diag *d)
{
	struct parse_ctx c = {
		.cfg = cfg, .name = name, .name_index = -1, .diag = d, .p = text, .end = text + len,
	};
	int r;

	/* no continuation lines: an indented line is an error, not a value */
	ini_allow_multiline = false;
	ini_stop_on_first_error = false;
	r = ini_parse_stream(line_reader, &c, handler, &c);
	if (r > 0) {
		/* handler never fails, so this is a syntax error: name it */
		c.line = (unsigned int)r;
		diag(&c, THPD_DIAG_FATAL, "syntax error (expected [Section] or Key=Value)");
	} else if (r < 0) {
		c.line = 0;
		diag(&c, THPD_DIAG_FATAL, "cannot parse: out of memory");
	}
	return c.fatal ? -EINVAL : 0;
}

int thpd_config_parse_string(struct thpd_config *cfg, const char *name, const char *text,
			     const struct thpd_diag *d)
{
	return thpd_config_parse(cfg, name, text, strlen(text), d);
}

static void finish_diag(const struct thpd_diag *d, enum thpd_diag_level level, const char *file,
			unsigned int line, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static void finish_diag(const struct thpd_diag *d, enum thpd_diag_level level, const char *file,
			unsigned int line, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (d && d->report)
		d->report(d->userdata, level, file, line, msg);
}

static int parse_id(const char *s, unsigned int *id)
{
	uint64_t u;

	if (parse_u64(s, 0, UINT32_MAX - 1, &u) < 0)
		return -EINVAL;
	*id = (unsigned int)u;
	return 0;
}

int thpd_config_finish(struct thpd_config *cfg, const struct thpd_name_lookup *lookup,
		       const struct thpd_diag *d)
{
	struct thpd_adaptive_config *a = &cfg->adaptive;
	unsigned int i, n = 0, id;

	if (a->pressure_threshold_us > a->pressure_window_us) {
		finish_diag(d, THPD_DIAG_WARNING, NULL, 0,
			    "[Adaptive] PressureThresholdUSec=%" PRIu32
			    " exceeds PressureWindowUSec=%" PRIu32 ", using the window",
			    a->pressure_threshold_us, a->pressure_window_us);
		a->pressure_threshold_us = a->pressure_window_us;
	}
	if (a->recover_free_blocks < 0)
		a->recover_free_blocks = 2 * a->min_free_blocks;
	if (cfg->collapse.reserve_blocks < 0)
		cfg->collapse.reserve_blocks = a->min_free_blocks;
	if (a->recover_free_blocks < a->min_free_blocks) {
		finish_diag(d, THPD_DIAG_WARNING, NULL, 0,
			    "[Adaptive] RecoverFreeBlocks=%ld below MinFreeBlocks=%ld, using %ld",
			    a->recover_free_blocks, a->min_free_blocks, a->min_free_blocks);
		a->recover_free_blocks = a->min_free_blocks;
	}

	cfg->has_admin_gid = false;
	if (cfg->admin_group[0]) {
		gid_t gid;

		if (parse_id(cfg->admin_group, &id) == 0) {
			cfg->has_admin_gid = true;
			cfg->admin_gid = id;
		} else if (lookup && lookup->group && lookup->group(cfg->admin_group, &gid) == 0) {
			cfg->has_admin_gid = true;
			cfg->admin_gid = gid;
		} else {
			finish_diag(d, THPD_DIAG_WARNING, NULL, 0,
				    "AdminGroup=%s: no such group; only root may change settings",
				    cfg->admin_group);
		}
	}

	for (i = 0; i < cfg->n_rules; i++) {
		struct thpd_rule *r = &cfg->rules[i];
		const char *file = thpd_config_file(cfg, r->origin_file);
		bool keep = true;

		r->has_uid = false;
		if (r->user[0]) {
			uid_t uid;

			if (parse_id(r->user, &id) == 0) {
				r->has_uid = true;
				r->uid = id;
			} else if (lookup && lookup->user && lookup->user(r->user, &uid) == 0) {
				r->has_uid = true;
				r->uid = uid;
			} else {
				finish_diag(d, THPD_DIAG_WARNING, file, r->origin_line,
					    "[Rule %s] User=%s: no such user, rule ignored",
					    r->name, r->user);
				keep = false;
			}
		}
		if (keep && !r->exe[0] && !r->comm[0] && !r->cgroup[0] && !r->user[0]) {
			finish_diag(d, THPD_DIAG_WARNING, file, r->origin_line,
				    "[Rule %s] has none of Exe=, Comm=, Cgroup=, User=; rule ignored",
				    r->name);
			keep = false;
		}
		if (keep && r->policy < 0) {
			finish_diag(d, THPD_DIAG_WARNING, file, r->origin_line,
				    "[Rule %s] has no valid Policy=; rule ignored", r->name);
			keep = false;
		}
		if (keep)
			cfg->rules[n++] = *r;
	}
	cfg->n_rules = n;
	return 0;
}

static int lookup_user(const char *name, uid_t *uid)
{
	struct passwd *pw = getpwnam(name);

	if (!pw)
		return -ENOENT;
	*uid = pw->pw_uid;
	return 0;
}

static int lookup_group(const char *name, gid_t *gid)
{
	struct group *gr = getgrnam(name);

	if (!gr)
		return -ENOENT;
	*gid = gr->gr_gid;
	return 0;
}

/*
 * Read a whole configuration file: only a regular file (following symlinks,
 * as drop-ins often are), opened without blocking so a FIFO cannot hang
 * thpd, at most THPD_CONFIG_FILE_MAX bytes. -ENOENT when missing; other
 * errors are reported here.
 */
static int load_file(struct thpd_config *cfg, const char *path, const struct thpd_diag *d)
{
	struct stat st;
	char *text = NULL;
	size_t len = 0;
	int fd, r;

	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		r = -errno;
		if (r != -ENOENT)
			finish_diag(d, THPD_DIAG_FATAL, path, 0, "cannot open: %s", strerror(-r));
		return r;
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		finish_diag(d, THPD_DIAG_FATAL, path, 0, "cannot read: %s", strerror(-r));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		r = -EINVAL;
		finish_diag(d, THPD_DIAG_FATAL, path, 0, "not a regular file");
		goto out;
	}
	if (st.st_size > THPD_CONFIG_FILE_MAX) {
		r = -EFBIG;
		finish_diag(d, THPD_DIAG_FATAL, path, 0, "larger than %d bytes", THPD_CONFIG_FILE_MAX);
		goto out;
	}
	text = malloc(THPD_CONFIG_FILE_MAX + 1);
	if (!text) {
		r = -ENOMEM;
		finish_diag(d, THPD_DIAG_FATAL, path, 0, "cannot read: %s", strerror(ENOMEM));
		goto out;
	}
	for (;;) {
		ssize_t n = read(fd, text + len, THPD_CONFIG_FILE_MAX + 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			finish_diag(d, THPD_DIAG_FATAL, path, 0, "read error: %s", strerror(-r));
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > THPD_CONFIG_FILE_MAX) {
			r = -EFBIG;
			finish_diag(d, THPD_DIAG_FATAL, path, 0, "larger than %d bytes",
				    THPD_CONFIG_FILE_MAX);
			goto out;
		}
	}
	r = thpd_config_parse(cfg, path, text, len, d);
out:
	free(text);
	close(fd);
	return r;
}

static int conf_filter(const struct dirent *de)
{
	size_t len = strlen(de->d_name);

	return de->d_name[0] != '.' && len > 5 && strcmp(de->d_name + len - 5, ".conf") == 0;
}

/* one drop-in: its file name and the directory it is read from (NULL: masked) */
struct dropin {
	char name[NAME_MAX + 1];
	const char *dir;
};

/* dir/name is a link to /dev/null: it masks the name, as in systemd */
static bool masked(const char *dir, const char *name)
{
	char path[PATH_MAX];
	struct stat st;

	return (size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) < sizeof(path) &&
	       stat(path, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3);
}

static int dropin_cmp(const void *a, const void *b)
{
	return strcmp(((const struct dropin *)a)->name, ((const struct dropin *)b)->name);
}

/*
 * The *.conf files of dirs (highest precedence first), merged by name as
 * systemd merges its drop-in directories: a name in an earlier directory
 * hides the same name in later ones (an empty file or a link to /dev/null
 * masks it). Sorted by name into *out (*n of them); 0, or -errno of the
 * first directory that exists but cannot be listed (reported).
 */
static int collect_dropins(const char *const *dirs, struct dropin **out, int *count,
			   const struct thpd_diag *d)
{
	struct dropin *v = NULL;
	size_t n = 0, cap = 0;
	int ret = 0;

	for (size_t k = 0; dirs[k]; k++) {
		struct dirent **list = NULL;
		int m = scandir(dirs[k], &list, conf_filter, alphasort);

		if (m < 0 && errno != ENOENT && errno != ENOTDIR) {
			int r = -errno;

			finish_diag(d, THPD_DIAG_FATAL, dirs[k], 0, "cannot list: %s", strerror(-r));
			if (!ret)
				ret = r;
		}
		for (int i = 0; i < m; i++) {
			bool hidden = strlen(list[i]->d_name) >= sizeof(v->name);

			for (size_t j = 0; j < n && !hidden; j++)
				hidden = strcmp(v[j].name, list[i]->d_name) == 0;
			if (!hidden && n == cap) {
				struct dropin *nv = realloc(v, (cap ? 2 * cap : 16) * sizeof(*v));

				if (!nv) {
					finish_diag(d, THPD_DIAG_FATAL, dirs[k], 0, "out of memory");
					ret = ret ? ret : -ENOMEM;
					hidden = true;
				} else {
					v = nv;
					cap = cap ? 2 * cap : 16;
				}
			}
			if (!hidden) {
				strcpy(v[n].name, list[i]->d_name);
				v[n++].dir = masked(dirs[k], list[i]->d_name) ? NULL : dirs[k];
			}
			free(list[i]);
		}
		free(list);
	}
	if (n)
		qsort(v, n, sizeof(*v), dropin_cmp);
	*out = v;
	*count = (int)n;
	return ret;
}

int thpd_config_load(struct thpd_config *cfg, const char *path, bool must_exist,
		     const struct thpd_diag *d)
{
	/* the default configuration's drop-ins come from systemd's three places */
	static const char *const system_dirs[] = { THPD_DROPIN_DIRS, NULL };
	char dir[PATH_MAX];
	const char *const own_dir[] = { dir, NULL };

	if (path[0] && (size_t)snprintf(dir, sizeof(dir), "%s.d", path) >= sizeof(dir)) {
		thpd_config_defaults(cfg);
		finish_diag(d, THPD_DIAG_FATAL, NULL, 0, "the configuration file name is too long");
		return -ENAMETOOLONG;
	}
	return thpd_config_load_dirs(cfg, path, must_exist,
				     strcmp(path, THPD_CONF_PATH) ? own_dir : system_dirs, d);
}

int thpd_config_load_dirs(struct thpd_config *cfg, const char *path, bool must_exist,
			  const char *const *dirs, const struct thpd_diag *d)
{
	static const struct thpd_name_lookup sys_lookup = {
		.user = lookup_user, .group = lookup_group,
	};
	struct dropin *list = NULL;
	char file[PATH_MAX];
	int r, n, ret = 0;

	thpd_config_defaults(cfg);
	if (!path[0]) {
		finish_diag(d, THPD_DIAG_FATAL, NULL, 0, "the configuration file name is empty");
		return -EINVAL;
	}
	r = load_file(cfg, path, d);
	if (r == -ENOENT && must_exist)
		finish_diag(d, THPD_DIAG_FATAL, path, 0, "no such file");
	if (r < 0 && (r != -ENOENT || must_exist))
		ret = r;

	r = collect_dropins(dirs, &list, &n, d);
	if (r < 0 && !ret)
		ret = r;
	for (int i = 0; i < n; i++) {
		if (!list[i].dir)
			continue;
		if ((size_t)snprintf(file, sizeof(file), "%s/%s", list[i].dir, list[i].name) >=
		    sizeof(file)) {
			finish_diag(d, THPD_DIAG_FATAL, list[i].dir, 0, "%s: name too long",
				    list[i].name);
			r = -ENAMETOOLONG;
		} else {
			r = load_file(cfg, file, d);
			if (r == -ENOENT)	/* removed since it was listed */
				r = 0;
		}
		if (r < 0 && !ret)
			ret = r;
	}
	free(list);

	r = thpd_config_finish(cfg, &sys_lookup, d);
	return ret ? ret : r;
}
