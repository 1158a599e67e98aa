/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * thpd configuration: /etc/thpd/thpd.conf and /etc/thpd/thpd.conf.d/ *.conf,
 * documented in thpd.conf(5).
 *
 * Parsing is pure: it reads a buffer through libinih and reports every
 * problem through a diagnostics callback with file:line, so host tests feed
 * it strings. Only thpd_config_load() touches the file system.
 */
#ifndef THPD_CONFIG_H
#define THPD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <ini.h>

#include "thp.h"

#define THPD_MAX_RULES 64
#define THPD_CONFIG_FILES_SIZE 8192	/* room for the names of the files rules come from */
/*
 * Limits of the reader (libinih): a line of at most THPD_CONFIG_LINE_MAX
 * characters before its newline, a section name of at most
 * THPD_CONFIG_SECTION_MAX. Longer is a fatal error at its file:line, never
 * split or truncated. A file is at most THPD_CONFIG_FILE_MAX bytes.
 */
#define THPD_CONFIG_LINE_MAX (INI_MAX_LINE - 2)
#define THPD_CONFIG_SECTION_MAX 49
#define THPD_CONFIG_FILE_MAX (1 << 20)
#define THPD_CONF_PATH "/etc/thpd/thpd.conf"
/*
 * Where the drop-ins of THPD_CONF_PATH live, highest precedence first (as
 * systemd's daemons: the administrator's, runtime, the vendor's); a file
 * name found in an earlier directory hides it in the later ones.
 */
#define THPD_DROPIN_DIRS "/etc/thpd/thpd.conf.d", "/run/thpd/thpd.conf.d", \
	"/usr/lib/thpd/thpd.conf.d"

enum thpd_diag_level { THPD_DIAG_WARNING, THPD_DIAG_FATAL };

struct thpd_diag {
	/* file may be NULL (no line), line 0 when not tied to a line */
	void (*report)(void *userdata, enum thpd_diag_level level, const char *file,
		       unsigned int line, const char *msg);
	void *userdata;
};

/* khugepaged knobs thpd can set, by index */
enum thpd_kh_knob {
	THPD_KH_DEFRAG,
	THPD_KH_PAGES_TO_SCAN,
	THPD_KH_SCAN_SLEEP,
	THPD_KH_ALLOC_SLEEP,
	THPD_KH_MAX_PTES_NONE,
	THPD_KH_MAX_PTES_SWAP,
	THPD_KH_MAX_PTES_SHARED,
	THPD_KH_N,
};
/* the file name under khugepaged/ */
const char *thpd_kh_file(enum thpd_kh_knob k);
/* the knob of a file name under khugepaged/, or -1 */
int thpd_kh_from_file(const char *name);

struct thpd_rule {
	char name[64];
	char exe[256];		/* fnmatch() glob on /proc/PID/exe, "" = any */
	char comm[32];		/* fnmatch() glob on comm */
	char cgroup[256];	/* cgroup v2 path glob; matches the cgroup and below */
	char user[64];		/* name or number as written */
	bool has_uid;
	uid_t uid;
	int policy;		/* PR_THP_MM_POLICY_*, -1 when unset */
	/* where the rule's first key was: thpd_config_file(cfg, origin_file), origin_line */
	unsigned int origin_file;
	unsigned int origin_line;
};

/*
 * [Size N] of thpd.conf: one hugepage size's own values (hugepages-<N>kB/),
 * "" = leave alone. Checked against libthp's table of words when parsed;
 * whether the running kernel has the size is found when it is applied.
 */
struct thpd_size_config {
	unsigned long kib;
	char enabled[16];	/* always, inherit, madvise, never */
	char shmem[16];		/* always, inherit, within_size, advise, never */
	/* where its first key was: thpd_config_file(cfg, origin_file), origin_line */
	unsigned int origin_file;
	unsigned int origin_line;
};

struct thpd_adaptive_config {
	bool enabled;
	bool pressure_full;		/* "full" rather than "some" stall */
	uint32_t pressure_threshold_us;
	uint32_t pressure_window_us;
	long min_free_blocks;		/* order-9 blocks; 0 disables the check */
	long recover_free_blocks;	/* needed to step up again; -1: 2 x min */
	enum thp_enabled step_down_enabled;
	char step_down_defrag[16];	/* "" = leave defrag alone */
	uint64_t calm_usec;
	uint64_t check_interval_usec;
};

/*
 * [Collapse]: thpd collapses small-page memory into hugepages once free
 * hugepage blocks are back (daemon/collapse.c, thpd.conf(5)).
 */
struct thpd_collapse_config {
	bool enabled;
	bool all;			/* Processes=all, else those a [Rule] names */
	uint64_t max_rate_mib;		/* MiB per second, 0: no limit */
	uint32_t cpu_percent;		/* CPUQuota=: share of one CPU, 1-100 */
	uint64_t watch_usec;		/* buddyinfo interval while owed */
	uint64_t watch_timeout_usec;	/* owed this long without a pass: forgiven */
	long reserve_blocks;		/* free order-9 blocks left alone; -1: MinFreeBlocks */
};

struct thpd_config {
	/* [Global] */
	char mode[8];			/* "" = leave alone, else thp_mode_parse() input */
	char defrag[16];		/* "" = leave alone */
	char shmem[16];			/* Shmem=: shmem_enabled, "" = leave alone */
	bool kh_set[THPD_KH_N];
	uint64_t kh_val[THPD_KH_N];
	bool restore_on_stop;
	bool honor_kernel_cmdline;
	char admin_group[64];		/* "" = root only */
	bool has_admin_gid;
	gid_t admin_gid;
	/* [Adaptive] */
	struct thpd_adaptive_config adaptive;
	/* [Collapse] */
	struct thpd_collapse_config collapse;
	/* [Size N], ascending by size */
	unsigned int n_sizes;
	struct thpd_size_config sizes[THP_SIZES_MAX];
	/* [Rule NAME] in order of first appearance */
	unsigned int n_rules;
	struct thpd_rule rules[THPD_MAX_RULES];
	/* names of the files rules came from, NUL-separated (rule origins index it) */
	unsigned int files_used;
	char files[THPD_CONFIG_FILES_SIZE];
};

/* the [Size N] of kib, NULL when the configuration has none */
const struct thpd_size_config *thpd_config_size(const struct thpd_config *cfg, unsigned long kib);

/* the name of a file rules (and [Size N] sections) came from; "" for an index that names none */
const char *thpd_config_file(const struct thpd_config *cfg, unsigned int index);

void thpd_config_defaults(struct thpd_config *cfg);

/*
 * Parse one file's text (len bytes; a NUL byte in it is a fatal error) on
 * top of cfg. name is used in messages ("name:line: ..."). Returns 0, or
 * -EINVAL when a fatal problem was reported (everything is still parsed so
 * that every problem is reported).
 */
int thpd_config_parse(struct thpd_config *cfg, const char *name, const char *text, size_t len,
		      const struct thpd_diag *diag);
/* the same for a NUL-terminated string (tests) */
int thpd_config_parse_string(struct thpd_config *cfg, const char *name, const char *text,
			     const struct thpd_diag *diag);

/*
 * A systemd time span ("150ms", "2s", "1min 30s", "1.5s"; units us, ms, s,
 * min, h, d, w and their long forms) in microseconds; a bare number is in
 * units of default_unit microseconds. -EINVAL for anything else, -ERANGE
 * on overflow.
 */
int thpd_parse_timespan(const char *s, uint64_t default_unit, uint64_t *usec);

/*
 * After every file: drop incomplete rules (with a warning), fill derived
 * defaults, resolve user and group names through the lookups (NULL: only
 * numbers are accepted). Returns 0 or -EINVAL (fatal problem reported).
 */
struct thpd_name_lookup {
	int (*user)(const char *name, uid_t *uid);	/* 0 or -ENOENT */
	int (*group)(const char *name, gid_t *gid);
};
int thpd_config_finish(struct thpd_config *cfg, const struct thpd_name_lookup *lookup,
		       const struct thpd_diag *diag);

/*
 * Defaults, then path, then the drop-ins (*.conf) of its directories merged
 * by name, in lexical order of name, then thpd_config_finish() with the
 * system's passwd/group databases. A missing path is fine unless
 * must_exist (an explicit --config); anything that is not a regular file,
 * or cannot be read, is fatal. 0 or -errno. The directories:
 * THPD_DROPIN_DIRS for THPD_CONF_PATH, path.d for any other file.
 */
int thpd_config_load(struct thpd_config *cfg, const char *path, bool must_exist,
		     const struct thpd_diag *diag);
/* the same with the drop-in directories given (NULL-ended, highest first) */
int thpd_config_load_dirs(struct thpd_config *cfg, const char *path, bool must_exist,
			  const char *const *dirs, const struct thpd_diag *diag);

#endif
