// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * thpd.conf parsing. See config.h and thpd.conf(5).
 *
 * What is fatal (the config is unusable, start fails, reload keeps the last
 * good config): an existing file that cannot be read, a line that is not
 * INI syntax, and a bad [Global] Mode= or Defrag= — thpd cannot know what to
 * apply to the host. Everything else that is wrong (unknown section or key,
 * bad value of any other key, incomplete rule) is a warning with file:line
 * and is ignored.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const kh_files[THPD_KH_N] = {
	[THPD_KH_DEFRAG] = "defrag",
	[THPD_KH_PAGES_TO_SCAN] = "pages_to_scan",
	[THPD_KH_SCAN_SLEEP] = "scan_sleep_millisecs",
	[THPD_KH_ALLOC_SLEEP] = "alloc_sleep_millisecs",
	[THPD_KH_MAX_PTES_NONE] = "max_ptes_none",
};

static const char *const kh_keys[THPD_KH_N] = {
	[THPD_KH_DEFRAG] = "KhugepagedDefrag",
	[THPD_KH_PAGES_TO_SCAN] = "KhugepagedPagesToScan",
	[THPD_KH_SCAN_SLEEP] = "KhugepagedScanSleepMSec",
	[THPD_KH_ALLOC_SLEEP] = "KhugepagedAllocSleepMSec",
	[THPD_KH_MAX_PTES_NONE] = "KhugepagedMaxPtesNone",
};

const char *thpd_kh_file(enum thpd_kh_knob k)
{
	return (unsigned int)k < THPD_KH_N ? kh_files[k] : "?";
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
}

struct parse_ctx {
	struct thpd_config *cfg;
	const char *name;
	const struct thpd_diag *diag;
	ini_reader reader;
	void *stream;
	unsigned int line;	/* line of the text the parser is looking at */
	bool at_line_start;
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

/* counts lines for file:line messages; a long line may come in pieces */
static char *counting_reader(char *str, int num, void *stream)
{
	struct parse_ctx *c = stream;
	char *r = c->reader(str, num, c->stream);

	if (!r)
		return NULL;
	if (c->at_line_start)
		c->line++;
	c->at_line_start = strchr(r, '\n') != NULL;
	return r;
}

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

static int parse_u64(const char *v, uint64_t max, uint64_t *out)
{
	unsigned long long x;
	char *end;

	if (!*v || *v == '-' || *v == '+')
		return -EINVAL;
	errno = 0;
	x = strtoull(v, &end, 10);
	if (errno || *end || x > max)
		return -ERANGE;
	*out = x;
	return 0;
}

static int copy_value(char *dst, size_t size, const char *v)
{
	size_t len = strlen(v);

	if (len >= size)
		return -ENAMETOOLONG;
	memcpy(dst, v, len + 1);
	return 0;
}

static int global_key(struct parse_ctx *c, const char *key, const char *v)
{
	struct thpd_config *cfg = c->cfg;
	struct thp_mode_req req;
	char words[128];
	uint64_t u;
	bool b;

	if (strcmp(key, "Mode") == 0) {
		if (*v && thp_mode_parse(v, &req) < 0) {
			diag(c, THPD_DIAG_FATAL, "invalid Mode=%s (expected %s)", v,
			     thp_mode_words_text(words, sizeof(words)));
			return 0;
		}
		copy_value(cfg->mode, sizeof(cfg->mode), v);
		return 0;
	}
	if (strcmp(key, "Defrag") == 0) {
		if (*v && thp_defrag_valid(v) < 0) {
			diag(c, THPD_DIAG_FATAL, "invalid Defrag=%s (expected %s)", v,
			     thp_knob_words_text(THP_KNOB_DEFRAG, words, sizeof(words)));
			return 0;
		}
		copy_value(cfg->defrag, sizeof(cfg->defrag), v);
		return 0;
	}
	for (int k = 0; k < THPD_KH_N; k++) {
		if (strcmp(key, kh_keys[k]) != 0)
			continue;
		if (!*v) {
			cfg->kh_set[k] = false;
			return 0;
		}
		if (parse_u64(v, k == THPD_KH_DEFRAG ? 1 : UINT32_MAX, &u) < 0) {
			diag(c, THPD_DIAG_WARNING, "invalid %s=%s, ignored", key, v);
			return 0;
		}
		cfg->kh_set[k] = true;
		cfg->kh_val[k] = u;
		return 0;
	}
	if (strcmp(key, "RestoreOnStop") == 0 || strcmp(key, "HonorKernelCmdline") == 0) {
		if (parse_bool(v, &b) < 0) {
			diag(c, THPD_DIAG_WARNING, "invalid %s=%s (expected yes or no), ignored", key, v);
			return 0;
		}
		if (key[0] == 'R')
			cfg->restore_on_stop = b;
		else
			cfg->honor_kernel_cmdline = b;
		return 0;
	}
	if (strcmp(key, "AdminGroup") == 0) {
		if (copy_value(cfg->admin_group, sizeof(cfg->admin_group), v) < 0)
			diag(c, THPD_DIAG_WARNING, "AdminGroup= too long, ignored");
		return 0;
	}
	diag(c, THPD_DIAG_WARNING, "unknown key %s= in [Global], ignored", key);
	return 0;
}

static int adaptive_key(struct parse_ctx *c, const char *key, const char *v)
{
	struct thpd_adaptive_config *a = &c->cfg->adaptive;
	uint64_t u;
	bool b;
	int e;

	if (strcmp(key, "Enabled") == 0) {
		if (parse_bool(v, &b) < 0)
			goto bad;
		a->enabled = b;
	} else if (strcmp(key, "PressureType") == 0) {
		if (strcmp(v, "some") == 0)
			a->pressure_full = false;
		else if (strcmp(v, "full") == 0)
			a->pressure_full = true;
		else
			goto bad;
	} else if (strcmp(key, "PressureThresholdUSec") == 0) {
		/* the kernel's limits: 0 < threshold <= window (checked in finish) */
		if (parse_u64(v, 10000000, &u) < 0 || u == 0)
			goto bad;
		a->pressure_threshold_us = (uint32_t)u;
	} else if (strcmp(key, "PressureWindowUSec") == 0) {
		/* psi.rst: the window is 500 ms to 10 s */
		if (parse_u64(v, 10000000, &u) < 0 || u < 500000)
			goto bad;
		a->pressure_window_us = (uint32_t)u;
	} else if (strcmp(key, "MinFreeBlocks") == 0) {
		if (parse_u64(v, LONG_MAX, &u) < 0)
			goto bad;
		a->min_free_blocks = (long)u;
	} else if (strcmp(key, "RecoverFreeBlocks") == 0) {
		if (parse_u64(v, LONG_MAX, &u) < 0)
			goto bad;
		a->recover_free_blocks = (long)u;
	} else if (strcmp(key, "StepDownMode") == 0) {
		e = thp_enabled_from_name(v);
		if (e < 0)
			goto bad;
		a->step_down_enabled = (enum thp_enabled)e;
	} else if (strcmp(key, "StepDownDefrag") == 0) {
		if (*v && thp_defrag_valid(v) < 0)
			goto bad;
		copy_value(a->step_down_defrag, sizeof(a->step_down_defrag), v);
	} else if (strcmp(key, "CalmSec") == 0) {
		if (parse_u64(v, 86400, &u) < 0 || u == 0)
			goto bad;
		a->calm_usec = u * 1000000;
	} else if (strcmp(key, "CheckIntervalSec") == 0) {
		if (parse_u64(v, 3600, &u) < 0 || u == 0)
			goto bad;
		a->check_interval_usec = u * 1000000;
	} else {
		diag(c, THPD_DIAG_WARNING, "unknown key %s= in [Adaptive], ignored", key);
	}
	return 0;
bad:
	diag(c, THPD_DIAG_WARNING, "invalid %s=%s in [Adaptive], ignored", key, v);
	return 0;
}

static struct thpd_rule *rule_get(struct parse_ctx *c, const char *name)
{
	struct thpd_config *cfg = c->cfg;
	struct thpd_rule *r;

	for (unsigned int i = 0; i < cfg->n_rules; i++)
		if (strcmp(cfg->rules[i].name, name) == 0)
			return &cfg->rules[i];
	if (cfg->n_rules == THPD_MAX_RULES) {
		diag(c, THPD_DIAG_WARNING, "more than %d rules, [Rule %s] ignored",
		     THPD_MAX_RULES, name);
		return NULL;
	}
	r = &cfg->rules[cfg->n_rules++];
	memset(r, 0, sizeof(*r));
	r->policy = -1;
	copy_value(r->name, sizeof(r->name), name);
	snprintf(r->origin, sizeof(r->origin), "%s:%u", c->name, c->line);
	return r;
}

static int rule_key(struct parse_ctx *c, const char *name, const char *key, const char *v)
{
	struct thpd_rule *r;
	char *dst = NULL;
	size_t size = 0;
	int p;

	if (!*name || strlen(name) >= sizeof(r->name)) {
		diag(c, THPD_DIAG_WARNING, "[Rule] needs a name of 1 to %zu characters, ignored",
		     sizeof(r->name) - 1);
		return 0;
	}
	r = rule_get(c, name);
	if (!r)
		return 0;
	if (strcmp(key, "Exe") == 0) {
		dst = r->exe;
		size = sizeof(r->exe);
	} else if (strcmp(key, "Comm") == 0) {
		dst = r->comm;
		size = sizeof(r->comm);
	} else if (strcmp(key, "Cgroup") == 0) {
		if (*v && *v != '/') {
			diag(c, THPD_DIAG_WARNING, "Cgroup=%s is not an absolute cgroup path, ignored", v);
			return 0;
		}
		dst = r->cgroup;
		size = sizeof(r->cgroup);
	} else if (strcmp(key, "User") == 0) {
		dst = r->user;
		size = sizeof(r->user);
	} else if (strcmp(key, "Policy") == 0) {
		p = thp_policy_from_name(v);
		if (p < 0) {
			diag(c, THPD_DIAG_WARNING,
			     "invalid Policy=%s in [Rule %s] (expected advise, never or default), ignored",
			     v, name);
			return 0;
		}
		r->policy = p;
		return 0;
	} else {
		diag(c, THPD_DIAG_WARNING, "unknown key %s= in [Rule %s], ignored", key, name);
		return 0;
	}
	if (copy_value(dst, size, v) < 0)
		diag(c, THPD_DIAG_WARNING, "%s= longer than %zu characters, ignored", key, size - 1);
	return 0;
}

static int handler(void *user, const char *section, const char *key, const char *value)
{
	struct parse_ctx *c = user;

	if (strcmp(section, "Global") == 0)
		return global_key(c, key, value) == 0;
	if (strcmp(section, "Adaptive") == 0)
		return adaptive_key(c, key, value) == 0;
	if (strncmp(section, "Rule", 4) == 0 && (section[4] == ' ' || section[4] == '\0')) {
		const char *name = section + 4;

		while (*name == ' ')
			name++;
		return rule_key(c, name, key, value) == 0;
	}
	if (!*section)
		diag(c, THPD_DIAG_WARNING, "%s= outside of any section, ignored", key);
	else
		diag(c, THPD_DIAG_WARNING, "unknown section [%s], %s= ignored", section, key);
	return 1;
}

int thpd_config_parse(struct thpd_config *cfg, const char *name, ini_reader reader,
		      void *stream, const struct thpd_diag *d)
{
	struct parse_ctx c = {
		.cfg = cfg, .name = name, .diag = d, .reader = reader, .stream = stream,
		.at_line_start = true,
	};
	int r;

	/* no continuation lines: an indented line is an error, not a value */
	ini_allow_multiline = false;
	ini_stop_on_first_error = false;
	r = ini_parse_stream(counting_reader, &c, handler, &c);
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

struct string_stream {
	const char *p;
};

static char *string_reader(char *str, int num, void *stream)
{
	struct string_stream *s = stream;
	int n = 0;

	if (!*s->p || num < 2)
		return NULL;
	while (n < num - 1 && s->p[n]) {
		if (s->p[n++] == '\n')
			break;
	}
	memcpy(str, s->p, (size_t)n);
	str[n] = '\0';
	s->p += n;
	return str;
}

int thpd_config_parse_string(struct thpd_config *cfg, const char *name, const char *text,
			     const struct thpd_diag *d)
{
	struct string_stream s = { .p = text };

	return thpd_config_parse(cfg, name, string_reader, &s, d);
}

static void finish_diag(const struct thpd_diag *d, enum thpd_diag_level level,
			const char *origin, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void finish_diag(const struct thpd_diag *d, enum thpd_diag_level level,
			const char *origin, const char *fmt, ...)
{
	char msg[512], file[300];
	unsigned int line = 0;
	char *colon;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(file, sizeof(file), "%s", origin ? origin : "");
	colon = strrchr(file, ':');
	if (colon) {
		*colon = '\0';
		line = (unsigned int)strtoul(colon + 1, NULL, 10);
	}
	if (d && d->report)
		d->report(d->userdata, level, origin ? file : NULL, line, msg);
}

static int parse_id(const char *s, unsigned int *id)
{
	uint64_t u;

	if (parse_u64(s, UINT32_MAX - 1, &u) < 0)
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
		finish_diag(d, THPD_DIAG_WARNING, NULL,
			    "[Adaptive] PressureThresholdUSec=%" PRIu32
			    " exceeds PressureWindowUSec=%" PRIu32 ", using the window",
			    a->pressure_threshold_us, a->pressure_window_us);
		a->pressure_threshold_us = a->pressure_window_us;
	}
	if (a->recover_free_blocks < 0)
		a->recover_free_blocks = 2 * a->min_free_blocks;
	if (a->recover_free_blocks < a->min_free_blocks) {
		finish_diag(d, THPD_DIAG_WARNING, NULL,
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
			finish_diag(d, THPD_DIAG_WARNING, NULL,
				    "AdminGroup=%s: no such group; only root may change settings",
				    cfg->admin_group);
		}
	}

	for (i = 0; i < cfg->n_rules; i++) {
		struct thpd_rule *r = &cfg->rules[i];
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
				finish_diag(d, THPD_DIAG_WARNING, r->origin,
					    "[Rule %s] User=%s: no such user, rule ignored",
					    r->name, r->user);
				keep = false;
			}
		}
		if (keep && !r->exe[0] && !r->comm[0] && !r->cgroup[0] && !r->user[0]) {
			finish_diag(d, THPD_DIAG_WARNING, r->origin,
				    "[Rule %s] has none of Exe=, Comm=, Cgroup=, User=; rule ignored",
				    r->name);
			keep = false;
		}
		if (keep && r->policy < 0) {
			finish_diag(d, THPD_DIAG_WARNING, r->origin,
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

static char *file_reader(char *str, int num, void *stream)
{
	return fgets(str, num, stream);
}

/* -ENOENT when missing (the caller decides), other -errno fatal */
static int load_file(struct thpd_config *cfg, const char *path, const struct thpd_diag *d)
{
	FILE *f = fopen(path, "re");
	int r;

	if (!f)
		return -errno;
	r = thpd_config_parse(cfg, path, file_reader, f, d);
	if (ferror(f)) {
		r = -EIO;
		finish_diag(d, THPD_DIAG_FATAL, NULL, "%s: read error", path);
	}
	fclose(f);
	return r;
}

static int conf_filter(const struct dirent *de)
{
	size_t len = strlen(de->d_name);

	return de->d_name[0] != '.' && len > 5 && strcmp(de->d_name + len - 5, ".conf") == 0;
}

int thpd_config_load(struct thpd_config *cfg, const char *path, const struct thpd_diag *d)
{
	static const struct thpd_name_lookup sys_lookup = {
		.user = lookup_user, .group = lookup_group,
	};
	struct dirent **list = NULL;
	char dir[PATH_MAX], file[PATH_MAX];
	int r, n, ret = 0;

	thpd_config_defaults(cfg);
	r = load_file(cfg, path, d);
	if (r < 0 && r != -ENOENT) {
		if (r != -EINVAL)
			finish_diag(d, THPD_DIAG_FATAL, NULL, "%s: cannot read: %s", path, strerror(-r));
		ret = r;
	}

	if ((size_t)snprintf(dir, sizeof(dir), "%s.d", path) >= sizeof(dir))
		return -ENAMETOOLONG;
	n = scandir(dir, &list, conf_filter, alphasort);
	if (n < 0 && errno != ENOENT && errno != ENOTDIR) {
		r = -errno;
		finish_diag(d, THPD_DIAG_FATAL, NULL, "%s: cannot list: %s", dir, strerror(-r));
		if (!ret)
			ret = r;
	}
	for (int i = 0; i < n; i++) {
		if ((size_t)snprintf(file, sizeof(file), "%s/%s", dir, list[i]->d_name) < sizeof(file)) {
			r = load_file(cfg, file, d);
			if (r == -ENOENT)	/* removed since it was listed */
				r = 0;
			if (r < 0 && r != -EINVAL)
				finish_diag(d, THPD_DIAG_FATAL, NULL, "%s: cannot read: %s", file,
					    strerror(-r));
			if (r < 0 && !ret)
				ret = r;
		}
		free(list[i]);
	}
	free(list);

	r = thpd_config_finish(cfg, &sys_lookup, d);
	return ret ? ret : r;
}
