// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * thpd's configuration parsing, rule matching, the precedence of the
 * kernel command line / persisted state / configuration / the host's
 * originals (the top-level pair, shmem_enabled, each size, khugepaged), on
 * fixtures.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../daemon/config.h"
#include "../../daemon/rules.h"
#include "../../daemon/precedence.h"
#include "tap.h"

struct diags {
	int n, fatal;
	char last[512];
	char file[256];
	unsigned int line;
};

static void collect(void *userdata, enum thpd_diag_level level, const char *file,
		    unsigned int line, const char *msg)
{
	struct diags *d = userdata;

	d->n++;
	if (level == THPD_DIAG_FATAL)
		d->fatal++;
	snprintf(d->last, sizeof(d->last), "%s", msg);
	snprintf(d->file, sizeof(d->file), "%s", file ? file : "");
	d->line = line;
}

static struct thpd_config cfg;
static struct diags dg;
static const struct thpd_diag diag = { .report = collect, .userdata = &dg };

static int parse(const char *text)
{
	memset(&dg, 0, sizeof(dg));
	thpd_config_defaults(&cfg);
	return thpd_config_parse_string(&cfg, "t.conf", text, &diag);
}

static int fake_user(const char *name, uid_t *uid)
{
	if (strcmp(name, "alice") == 0) {
		*uid = 1000;
		return 0;
	}
	return -ENOENT;
}

static int fake_group(const char *name, gid_t *gid)
{
	if (strcmp(name, "thpadm") == 0) {
		*gid = 4242;
		return 0;
	}
	return -ENOENT;
}

static const struct thpd_name_lookup lookup = { .user = fake_user, .group = fake_group };

static void test_defaults(void)
{
	int r = parse("");

	ok(r == 0 && dg.n == 0, "empty file: no diagnostics");
	ok(cfg.mode[0] == '\0' && cfg.defrag[0] == '\0', "defaults leave mode and defrag alone");
	ok(cfg.restore_on_stop && cfg.honor_kernel_cmdline, "RestoreOnStop and HonorKernelCmdline default to yes");
	ok(!cfg.adaptive.enabled && cfg.adaptive.pressure_threshold_us == 150000 &&
	   cfg.adaptive.pressure_window_us == 1000000, "adaptive off, some 150000 1000000 by default");
	thpd_config_finish(&cfg, &lookup, &diag);
	ok(cfg.adaptive.recover_free_blocks == 2 * cfg.adaptive.min_free_blocks,
	   "RecoverFreeBlocks defaults to twice MinFreeBlocks (%ld)", cfg.adaptive.recover_free_blocks);
}

static void test_global(void)
{
	int r = parse("# comment\n[Global]\nMode=always\nDefrag=defer+madvise\n"
		      "KhugepagedPagesToScan=4096\nKhugepagedDefrag=0\nRestoreOnStop=no\n"
		      "HonorKernelCmdline=false\nAdminGroup=thpadm\n");

	ok(r == 0 && dg.n == 0, "valid [Global]: no diagnostics (%s)", dg.last);
	ok(strcmp(cfg.mode, "always") == 0 && strcmp(cfg.defrag, "defer+madvise") == 0,
	   "Mode= and Defrag= taken");
	ok(cfg.kh_set[THPD_KH_PAGES_TO_SCAN] && cfg.kh_val[THPD_KH_PAGES_TO_SCAN] == 4096 &&
	   cfg.kh_set[THPD_KH_DEFRAG] && cfg.kh_val[THPD_KH_DEFRAG] == 0 &&
	   !cfg.kh_set[THPD_KH_SCAN_SLEEP], "khugepaged knobs taken, unset ones stay unset");
	ok(!cfg.restore_on_stop && !cfg.honor_kernel_cmdline, "booleans parsed");
	thpd_config_finish(&cfg, &lookup, &diag);
	ok(cfg.has_admin_gid && cfg.admin_gid == 4242, "AdminGroup resolved through the lookup");

	for (const char *m = "0\0001\0002\0never\0madvise\0"; *m; m += strlen(m) + 1) {
		char text[64];

		snprintf(text, sizeof(text), "[Global]\nMode=%s\n", m);
		ok(parse(text) == 0 && strcmp(cfg.mode, m) == 0, "Mode=%s accepted", m);
	}
}

static void test_fatal(void)
{
	ok(parse("[Global]\n\nMode=alwayz\n") == -EINVAL && dg.fatal == 1,
	   "invalid Mode= is fatal");
	ok(dg.line == 3 && strcmp(dg.file, "t.conf") == 0 && strstr(dg.last, "alwayz"),
	   "... reported at t.conf:3 with the value (got %s:%u: %s)", dg.file, dg.line, dg.last);
	ok(parse("[Global]\nMode=3\n") == -EINVAL, "Mode=3 is fatal");
	ok(parse("[Global]\nDefrag=sometimes\n") == -EINVAL && dg.line == 2, "invalid Defrag= is fatal at line 2");
	ok(parse("[Global]\nMode=always\nthis is not ini\n") == -EINVAL && dg.line == 3,
	   "syntax error is fatal, at its line (got %u)", dg.line);
	ok(parse("[Global\nMode=always\n") == -EINVAL && dg.line == 1,
	   "unterminated section is fatal at line 1 (got %u)", dg.line);
	ok(parse("[Global]\n  Mode=never\n") == 0 && strcmp(cfg.mode, "never") == 0,
	   "leading white space is not a continuation line");
}

static void test_warnings(void)
{
	ok(parse("[Global]\nMode=madvise\nFrobnicate=1\n") == 0 && dg.n == 1 && dg.line == 3 &&
	   strstr(dg.last, "Frobnicate"), "unknown key: warning at its line, not fatal");
	ok(strcmp(cfg.mode, "madvise") == 0, "... the rest still applies");
	ok(parse("[Nonsense]\nA=b\n") == 0 && dg.n == 1 && strstr(dg.last, "Nonsense"),
	   "unknown section: warning");
	ok(parse("Mode=always\n") == 0 && dg.n == 1 && cfg.mode[0] == '\0',
	   "key outside any section: warning, ignored");
	ok(parse("[Global]\nKhugepagedPagesToScan=-5\n") == 0 && dg.n == 1 &&
	   !cfg.kh_set[THPD_KH_PAGES_TO_SCAN], "negative number: warning, ignored");
	ok(parse("[Global]\nKhugepagedDefrag=2\n") == 0 && dg.n == 1, "KhugepagedDefrag=2: warning");
	ok(parse("[Global]\nRestoreOnStop=maybe\n") == 0 && dg.n == 1 && cfg.restore_on_stop,
	   "bad boolean: warning, default kept");
	ok(parse("[Adaptive]\nEnabled=yes\nPressureWindowUSec=100\nCalmSec=0\nStepDownMode=sometimes\n") == 0 &&
	   dg.n == 3 && cfg.adaptive.enabled && cfg.adaptive.pressure_window_us == 1000000 &&
	   cfg.adaptive.calm_usec == 60000000ULL, "bad [Adaptive] values: one warning each, defaults kept");
	ok(parse("[Adaptive]\nEnabled=yes\nPressureType=full\nPressureThresholdUSec=50000\n"
		 "PressureWindowUSec=500000\nMinFreeBlocks=4\nRecoverFreeBlocks=10\nStepDownMode=never\n"
		 "StepDownDefrag=never\nCalmSec=3\nCheckIntervalSec=1\n") == 0 && dg.n == 0,
	   "valid [Adaptive]");
	ok(cfg.adaptive.pressure_full && cfg.adaptive.pressure_threshold_us == 50000 &&
	   cfg.adaptive.pressure_window_us == 500000 && cfg.adaptive.min_free_blocks == 4 &&
	   cfg.adaptive.recover_free_blocks == 10 && cfg.adaptive.step_down_enabled == THP_NEVER &&
	   strcmp(cfg.adaptive.step_down_defrag, "never") == 0 && cfg.adaptive.calm_usec == 3000000 &&
	   cfg.adaptive.check_interval_usec == 1000000, "... every value taken");
	parse("[Adaptive]\nMinFreeBlocks=10\nRecoverFreeBlocks=5\n");
	thpd_config_finish(&cfg, &lookup, &diag);
	ok(dg.n == 1 && cfg.adaptive.recover_free_blocks == 10,
	   "RecoverFreeBlocks below MinFreeBlocks: warning, raised to it");
}

static void test_rules(void)
{
	const struct thpd_rule *r;
	struct thpd_proc_info p = { .exe = "/usr/bin/java", .comm = "java",
				    .cgroup = "/system.slice/app.service", .uid = 1000 };

	ok(parse("[Rule java]\nExe=/usr/bin/java\nPolicy=advise\n"
		 "[Rule alice]\nUser=alice\nComm=py*\nPolicy=never\n"
		 "[Rule batch]\nCgroup=/system.slice/batch.slice\nPolicy=never\n"
		 "[Rule bad]\nExe=/x\nPolicy=sometimes\n"
		 "[Rule empty]\nPolicy=advise\n"
		 "[Rule ghost]\nUser=nosuchuser\nPolicy=advise\n") == 0 && dg.n == 1,
	   "rules parse; a bad Policy= is one warning");
	ok(cfg.n_rules == 6, "six rule sections seen");
	memset(&dg, 0, sizeof(dg));
	thpd_config_finish(&cfg, &lookup, &diag);
	ok(cfg.n_rules == 3 && dg.n == 3, "incomplete rules dropped with a warning each (%u left, %d warnings)",
	   cfg.n_rules, dg.n);
	ok(cfg.rules[1].has_uid && cfg.rules[1].uid == 1000, "User=alice resolved to 1000");
	ok(strcmp(dg.file, "t.conf") == 0 && dg.line == 17,
	   "a dropped rule is reported at its section's first key (t.conf:%u)", dg.line);

	r = thpd_rules_match(&cfg, &p);
	ok(r && strcmp(r->name, "java") == 0 && r->policy == PR_THP_MM_POLICY_ADVISE, "Exe= matches");
	p.exe = "/usr/bin/python3";
	p.comm = "python3";
	r = thpd_rules_match(&cfg, &p);
	ok(r && strcmp(r->name, "alice") == 0, "User= and Comm= glob match together");
	p.uid = 1001;
	ok(!thpd_rules_match(&cfg, &p), "... not for another user");
	p.cgroup = "/system.slice/batch.slice/job-1.scope";
	r = thpd_rules_match(&cfg, &p);
	ok(r && strcmp(r->name, "batch") == 0, "Cgroup= matches a descendant cgroup");
	p.cgroup = "/system.slice/batch.slice2";
	ok(!thpd_rules_match(&cfg, &p), "... but not a sibling with the same prefix");
	p.exe = NULL;
	p.comm = "java";
	p.cgroup = NULL;
	ok(!thpd_rules_match(&cfg, &p), "unreadable exe never matches an Exe= rule");

	/* drop-in semantics: the same [Rule] in a later file is extended */
	parse("[Rule a]\nExe=/bin/a\nPolicy=advise\n");
	thpd_config_parse_string(&cfg, "d.conf", "[Rule a]\nPolicy=never\n[Global]\nMode=never\n", &diag);
	thpd_config_finish(&cfg, &lookup, &diag);
	ok(cfg.n_rules == 1 && strcmp(cfg.rules[0].exe, "/bin/a") == 0 &&
	   cfg.rules[0].policy == PR_THP_MM_POLICY_NEVER && strcmp(cfg.mode, "never") == 0,
	   "a later file overrides key by key");

	ok(thpd_cgroup_match("/", "/anything"), "Cgroup=/ matches everything");
	ok(thpd_cgroup_match("/system.slice/*.service", "/system.slice/x.service/sub"),
	   "globs match ancestors too");
	{
		char out[64];

		ok(thpd_cgroup_parse("1:name=systemd:/x\n0::/user.slice/u.scope\n", out, sizeof(out)) == 0 &&
		   strcmp(out, "/user.slice/u.scope") == 0, "cgroup v2 path out of /proc/PID/cgroup");
	}
}

/* the target from fixtures: configuration, persisted state, command line text, originals text */
static void target(const struct thpd_persist *p, const char *cmdline, unsigned int flags,
		   const char *originals, struct thpd_target *t)
{
	static struct thp_cmdline cl;
	static struct thpd_originals o;
	struct thpd_inputs in = { .cfg = &cfg, .persist = p, .cmdline = &cl, .originals = &o };

	thp_cmdline_parse(cmdline, flags, &cl);
	thpd_originals_parse(originals, &o);
	thpd_target_compute(&in, t);
}

static void test_precedence(void)
{
	static const char orig[] = "enabled madvise\ndefrag madvise\nshmem_enabled never\npages_to_scan 4096\n";
	struct thpd_persist p;
	struct thpd_target t;

	memset(&p, 0, sizeof(p));
	parse("[Global]\nMode=always\nDefrag=defer\n");
	target(&p, "", 0, orig, &t);
	ok(strcmp(t.enabled, "always") == 0 && strcmp(t.enabled_src, "configuration") == 0 &&
	   strcmp(t.defrag, "defer") == 0 && t.rfc == -1, "configuration alone");
	parse("");
	target(&p, "", 0, orig, &t);
	ok(strcmp(t.enabled, "madvise") == 0 && strcmp(t.enabled_src, "host's original value") == 0 &&
	   strcmp(t.defrag, "madvise") == 0 && strcmp(t.shmem, "never") == 0 &&
	   t.kh_set[THPD_KH_PAGES_TO_SCAN] && t.kh[THPD_KH_PAGES_TO_SCAN] == 4096 &&
	   !t.kh_set[THPD_KH_DEFRAG], "nothing set: the host's originals (a knob it lacked: none)");
	target(&p, "", 0, "", &t);
	ok(!t.enabled[0] && !t.enabled_src && !t.defrag[0] && !t.n_sizes,
	   "no originals either: nothing to hold");
	parse("[Global]\nMode=always\nDefrag=defer\nKhugepagedPagesToScan=1234\n");
	strcpy(p.enabled, "madvise");
	target(&p, "", 0, orig, &t);
	ok(strcmp(t.enabled, "madvise") == 0 && strcmp(t.enabled_src, "persisted state") == 0 &&
	   strcmp(t.defrag, "defer") == 0 && t.kh[THPD_KH_PAGES_TO_SCAN] == 1234 &&
	   strcmp(t.kh_src[THPD_KH_PAGES_TO_SCAN], "configuration") == 0,
	   "persisted state beats Mode=, Defrag= still applies, the configuration's knob");
	p.kh_set[THPD_KH_PAGES_TO_SCAN] = true;
	p.kh[THPD_KH_PAGES_TO_SCAN] = 777;
	target(&p, "", 0, orig, &t);
	ok(t.kh[THPD_KH_PAGES_TO_SCAN] == 777 &&
	   strcmp(t.kh_src[THPD_KH_PAGES_TO_SCAN], "persisted state") == 0 &&
	   !t.kh_set[THPD_KH_DEFRAG],
	   "a khugepaged value set through the socket beats KhugepagedPagesToScan=");
	p.kh_set[THPD_KH_PAGES_TO_SCAN] = false;
	strcpy(p.defrag, "never");
	target(&p, "transparent_hugepage=never", 0, orig, &t);
	ok(strcmp(t.enabled, "never") == 0 && strcmp(t.enabled_src, "kernel command line") == 0 &&
	   strcmp(t.defrag, "never") == 0 && strcmp(t.defrag_src, "persisted state") == 0,
	   "the kernel command line beats both");
	target(&p, "transparent_hugepage=2", THP_CMDLINE_NUMBERS, orig, &t);
	ok(strcmp(t.enabled, "always") == 0 && strcmp(t.defrag, "always") == 0 &&
	   strcmp(t.defrag_src, "kernel command line") == 0 && t.rfc == 2,
	   "a number on our kernel's command line is enabled and defrag, written as the number");
	target(&p, "transparent_hugepage=2", 0, orig, &t);
	ok(strcmp(t.enabled, "madvise") == 0 && strcmp(t.defrag, "never") == 0 && t.rfc == -1,
	   "a stock kernel refuses a number at boot: so does thpd");
	target(&p, "transparent_hugepage=bogus", 0, orig, &t);
	ok(strcmp(t.enabled, "madvise") == 0, "an invalid command line value is not honoured");
	target(&p, "transparent_hugepage=never transparent_hugepage=bogus", 0, orig, &t);
	ok(strcmp(t.enabled, "never") == 0,
	   "an invalid later one leaves the earlier one the kernel took");
	target(&p, "-- transparent_hugepage=never", 0, orig, &t);
	ok(strcmp(t.enabled, "madvise") == 0, "after \"--\" it is init's, not the kernel's");
	cfg.honor_kernel_cmdline = false;
	target(&p, "transparent_hugepage=never", 0, orig, &t);
	ok(strcmp(t.enabled, "madvise") == 0, "HonorKernelCmdline=no ignores it");

	memset(&p, 0, sizeof(p));
	parse("[Global]\nMode=2\n");
	target(&p, "", 0, orig, &t);
	ok(strcmp(t.enabled, "always") == 0 && strcmp(t.defrag, "always") == 0 && t.rfc == 2,
	   "Mode=2: enabled and defrag, as the number");
	parse("[Global]\nMode=2\nDefrag=never\n");
	target(&p, "", 0, orig, &t);
	ok(strcmp(t.enabled, "always") == 0 && strcmp(t.defrag, "never") == 0 && t.rfc == -1,
	   "Defrag= after a numeric Mode= wins: two words");
	parse("[Global]\nMode=1\n");
	strcpy(p.defrag, "defer");
	target(&p, "", 0, orig, &t);
	ok(strcmp(t.defrag, "defer") == 0 && t.rfc == -1, "a persisted defrag beats Mode='s");
}

/* Shmem= and [Size N]: words from libthp's table, sizes by name, file:line */
static void test_sizes(void)
{
	const struct thpd_size_config *z;

	parse("[Global]\nShmem=within_size\n[Size 64K]\nEnabled=always\nShmem=inherit\n"
	      "[Size 2M]\nEnabled=inherit\n[Size 16K]\nShmem=advise\n");
	ok(dg.n == 0 && strcmp(cfg.shmem, "within_size") == 0 && cfg.n_sizes == 3,
	   "three sizes, no diagnostics (%d: %s)", dg.n, dg.last);
	ok(cfg.sizes[0].kib == 16 && cfg.sizes[1].kib == 64 && cfg.sizes[2].kib == 2048,
	   "kept in ascending order of size (%lu %lu %lu)", cfg.sizes[0].kib, cfg.sizes[1].kib,
	   cfg.sizes[2].kib);
	z = thpd_config_size(&cfg, 64);
	ok(z && strcmp(z->enabled, "always") == 0 && strcmp(z->shmem, "inherit") == 0 &&
	   z->origin_line == 4 && strcmp(thpd_config_file(&cfg, z->origin_file), "t.conf") == 0,
	   "[Size 64K]: Enabled=, Shmem= and where it came from (t.conf:%u)", z ? z->origin_line : 0);
	z = thpd_config_size(&cfg, 2048);
	ok(z && strcmp(z->enabled, "inherit") == 0 && !z->shmem[0], "[Size 2M]: Shmem= unset");
	ok(!thpd_config_size(&cfg, 128), "no [Size 128K]: NULL");

	ok(parse("[Size 2048K]\nEnabled=never\n[Size 2M]\nShmem=advise\n[Size 2MB]\nEnabled=madvise\n") == 0 &&
	   cfg.n_sizes == 1 && strcmp(cfg.sizes[0].enabled, "madvise") == 0 &&
	   strcmp(cfg.sizes[0].shmem, "advise") == 0,
	   "[Size 2048K], [Size 2M] and [Size 2MB] are one section, a later key overrides");
	ok(parse("[Size 64K]\nEnabled=always\nEnabled=\n") == 0 && cfg.sizes[0].enabled[0] == '\0',
	   "an empty value leaves the size's value alone");

	ok(parse("[Global]\nMode=never\n\nShmem=sometimes\n") == -EINVAL && dg.fatal == 1 &&
	   dg.line == 4 && strstr(dg.last, "invalid Shmem=sometimes (expected always, within_size, advise, never, deny or force)"),
	   "a bad Shmem= is fatal at t.conf:%u: %s", dg.line, dg.last);
	ok(parse("[Global]\n[Size 64K]\nEnabled=within_size\n") == -EINVAL && dg.line == 3 &&
	   strstr(dg.last, "invalid Enabled=within_size in [Size 64K] (expected always, inherit, madvise or never)"),
	   "a word of shmem in Enabled= is fatal at t.conf:%u: %s", dg.line, dg.last);
	ok(parse("[Size 64K]\n\nShmem=deny\n") == -EINVAL && dg.line == 3 &&
	   strstr(dg.last, "invalid Shmem=deny in [Size 64K] (expected always, inherit, within_size, advise or never)"),
	   "deny is a top-level word only: fatal at t.conf:%u: %s", dg.line, dg.last);
	ok(parse("[Global]\nMode=never\n[Size 63K]\nEnabled=always\nShmem=advise\n") == -EINVAL &&
	   dg.n == 1 && dg.line == 4 && strstr(dg.last, "[Size 63K]: not a hugepage size") &&
	   cfg.n_sizes == 0, "a size that is not a power of two: fatal once, at its first key (t.conf:%u: %s)",
	   dg.line, dg.last);
	ok(parse("[Size 4K]\nEnabled=always\n") == -EINVAL && strstr(dg.last, "[Size 4K]"),
	   "4K is the base page, not a hugepage size: fatal");
	ok(parse("[Size]\nEnabled=always\n") == -EINVAL, "[Size] without a size: fatal (%s)", dg.last);
	ok(parse("[Size lots]\nEnabled=always\n") == -EINVAL, "[Size lots]: fatal");
	ok(parse("[Size 2G]\nEnabled=always\n") == -EINVAL, "[Size 2G], over 1G: fatal");
	ok(parse("[Size 1G]\nEnabled=always\n") == 0 && cfg.sizes[0].kib == 1024 * 1024,
	   "1G parses (whether this kernel has it is found when it is applied)");
	ok(parse("[Size 64K]\nPolicy=never\n") == 0 && dg.n == 1 && dg.line == 2 &&
	   strstr(dg.last, "unknown key Policy= in [Size 64K], ignored"), "unknown key in [Size N]: warning (%s)",
	   dg.last);
	thpd_config_defaults(&cfg);
	thpd_config_parse_string(&cfg, "a.conf", "[Size 64K]\nEnabled=always\n", &diag);
	thpd_config_parse_string(&cfg, "b.conf", "[Size 64K]\nEnabled=never\n[Size 32K]\nShmem=advise\n", &diag);
	ok(cfg.n_sizes == 2 && strcmp(thpd_config_size(&cfg, 64)->enabled, "never") == 0 &&
	   strcmp(thpd_config_file(&cfg, thpd_config_size(&cfg, 64)->origin_file), "a.conf") == 0 &&
	   strcmp(thpd_config_file(&cfg, thpd_config_size(&cfg, 32)->origin_file), "b.conf") == 0,
	   "a drop-in overrides a size key by key; each section keeps where it first appeared");
}

/* thp_anon=, thp_shmem=, transparent_hugepage_shmem= and their precedence, size by size */
static void test_cmdline_sizes(void)
{
	static const char orig[] = "hugepages-16kB/enabled never\nhugepages-64kB/enabled never\n"
				   "hugepages-2048kB/enabled inherit\nhugepages-2048kB/shmem_enabled inherit\n";
	struct thpd_persist p;
	struct thpd_target t;
	const struct thpd_size_target *z;

	parse("[Global]\nShmem=within_size\n[Size 64K]\nEnabled=never\nShmem=advise\n"
	      "[Size 128K]\nEnabled=madvise\n[Size 2M]\nShmem=never\n");
	memset(&p, 0, sizeof(p));
	target(&p, "", 0, "", &t);
	ok(strcmp(t.shmem, "within_size") == 0 && strcmp(t.shmem_src, "configuration") == 0 &&
	   t.n_sizes == 3 && t.sizes[0].kib == 64 && strcmp(t.sizes[0].enabled, "never") == 0 &&
	   strcmp(t.sizes[0].shmem, "advise") == 0 && t.sizes[1].kib == 128 && !t.sizes[1].shmem[0] &&
	   !t.sizes[1].shmem_src && t.sizes[2].kib == 2048 && !t.sizes[2].enabled[0] &&
	   t.sizes[0].cfg == thpd_config_size(&cfg, 64), "configuration alone: its sizes, ascending");
	target(&p, "", 0, orig, &t);
	z = thpd_target_size(&t, 2048);
	ok(t.n_sizes == 4 && thpd_target_size(&t, 16) && z && strcmp(z->enabled, "inherit") == 0 &&
	   strcmp(z->enabled_src, "host's original value") == 0 && strcmp(z->shmem, "never") == 0 &&
	   strcmp(z->shmem_src, "configuration") == 0,
	   "every size the host has joins the target with its original values, the configuration's on top");
	strcpy(p.shmem, "never");
	strcpy(thpd_persist_size(&p, 64, true)->enabled, "always");
	strcpy(thpd_persist_size(&p, 32, true)->shmem, "inherit");
	target(&p, "", 0, "", &t);
	ok(strcmp(t.shmem, "never") == 0 && strcmp(t.shmem_src, "persisted state") == 0 &&
	   t.n_sizes == 4 && t.sizes[0].kib == 32 && strcmp(t.sizes[0].shmem, "inherit") == 0 &&
	   strcmp(t.sizes[1].enabled, "always") == 0 &&
	   strcmp(t.sizes[1].enabled_src, "persisted state") == 0 &&
	   strcmp(t.sizes[1].shmem, "advise") == 0 && strcmp(t.sizes[1].shmem_src, "configuration") == 0,
	   "persisted beats configuration value by value; a persisted size joins the target");
	target(&p, "thp_anon=16K-64K:madvise transparent_hugepage_shmem=deny thp_shmem=2M:always\n", 0, "",
	       &t);
	ok(strcmp(t.shmem, "deny") == 0 && strcmp(t.shmem_src, "kernel command line") == 0 &&
	   t.n_sizes == 5 && t.sizes[0].kib == 16 && strcmp(t.sizes[0].enabled, "madvise") == 0 &&
	   strcmp(t.sizes[2].enabled, "madvise") == 0 && strcmp(t.sizes[2].enabled_src, "kernel command line") == 0 &&
	   strcmp(t.sizes[2].shmem, "advise") == 0 && strcmp(t.sizes[3].enabled, "madvise") == 0 &&
	   strcmp(t.sizes[4].shmem, "always") == 0,
	   "the command line beats both, for the sizes it names (16K-64K, 2M shmem)");
	target(&p, "thp_anon=8K-64K:madvise\n", 0, "", &t);
	z = thpd_target_size(&t, 64);
	ok(z && strcmp(z->enabled, "always") == 0 && !thpd_target_size(&t, 16),
	   "a thp_anon= the kernel refuses whole (8K is no anonymous size) names nothing");
	target(&p, "thp_anon=0x10000:never\n", 0, "", &t);
	z = thpd_target_size(&t, 64);
	ok(z && strcmp(z->enabled, "never") == 0 && strcmp(z->enabled_src, "kernel command line") == 0,
	   "a size the kernel takes in hex names 64K");
	cfg.honor_kernel_cmdline = false;
	target(&p, "thp_anon=16K-64K:madvise transparent_hugepage_shmem=deny thp_shmem=2M:always\n", 0, "",
	       &t);
	ok(strcmp(t.shmem, "never") == 0 && t.n_sizes == 4 && strcmp(t.sizes[1].enabled, "always") == 0,
	   "HonorKernelCmdline=no ignores thp_anon=, thp_shmem= and transparent_hugepage_shmem=");
}

static void test_timespan(void)
{
	static const struct {
		const char *text;
		uint64_t unit, usec;
	} good[] = {
		{ "150ms", 1, 150000 }, { "2s", 1, 2000000 }, { "1min 30s", 1, 90000000 },
		{ "1.5s", 1, 1500000 }, { "500000", 1, 500000 }, { "60", 1000000, 60000000 },
		{ "2 min", 1, 120000000 }, { "1h", 1, 3600000000ULL }, { "10us", 1, 10 },
		{ "1s500ms", 1, 1500000 }, { "0.5", 1000000, 500000 }, { " 3 seconds ", 1, 3000000 },
		{ "1d", 1, 86400000000ULL }, { "2msec", 1, 2000 }, { "1w", 1, 604800000000ULL },
	};
	static const char *const bad[] = {
		"", " ", "ms", "-1s", "+1s", "1x", "1.s", ".5s", "1s x", "1 2 z", "0x10", "1e3",
	};
	uint64_t u;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		int r = thpd_parse_timespan(good[i].text, good[i].unit, &u);

		ok(r == 0 && u == good[i].usec, "time span '%s' = %llu us (got %d, %llu)", good[i].text,
		   (unsigned long long)good[i].usec, r, (unsigned long long)u);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ok(thpd_parse_timespan(bad[i], 1, &u) == -EINVAL, "time span '%s' refused", bad[i]);
	ok(thpd_parse_timespan("99999999999999999999s", 1, &u) == -ERANGE, "overflow: -ERANGE");
	ok(thpd_parse_timespan("40000000w", 1, &u) == -ERANGE, "overflow through the unit: -ERANGE");

	ok(parse("[Adaptive]\nPressureThresholdUSec=150ms\nPressureWindowUSec=2s\nCalmSec=2min\n"
		 "CheckIntervalSec=500ms\n") == 0 && dg.n == 0 &&
	   cfg.adaptive.pressure_threshold_us == 150000 && cfg.adaptive.pressure_window_us == 2000000 &&
	   cfg.adaptive.calm_usec == 120000000ULL && cfg.adaptive.check_interval_usec == 500000,
	   "[Adaptive] durations take systemd time spans (%s)", dg.last);
	ok(parse("[Adaptive]\nCalmSec=90\nPressureThresholdUSec=70000\n") == 0 &&
	   cfg.adaptive.calm_usec == 90000000ULL && cfg.adaptive.pressure_threshold_us == 70000,
	   "a bare number keeps the key's unit (CalmSec= seconds, ...USec= microseconds)");
	ok(parse("[Adaptive]\nPressureWindowUSec=11s\n") == 0 && dg.n == 1 &&
	   strstr(dg.last, "invalid PressureWindowUSec=11s in [Adaptive] (expected a time span") &&
	   cfg.adaptive.pressure_window_us == 1000000, "a span out of bounds: warning, default kept (%s)",
	   dg.last);
}

static void test_table(void)
{
	ok(parse("[Global]\nKhugepagedMaxPtesNone=511\nKhugepagedMaxPtesNone=\n") == 0 &&
	   !cfg.kh_set[THPD_KH_MAX_PTES_NONE], "an empty value unsets an optional integer");
	ok(parse("[Global]\nKhugepagedScanSleepMSec=4294967296\n") == 0 && dg.n == 1 &&
	   strstr(dg.last, "(expected an integer from 0 to 4294967295), ignored"),
	   "integer bounds in the message: %s", dg.last);
	ok(parse("[Adaptive]\nPressureType=half\n") == 0 && dg.n == 1 &&
	   strstr(dg.last, "invalid PressureType=half in [Adaptive] (expected some or full), ignored") &&
	   !cfg.adaptive.pressure_full, "a word outside the valid values: %s", dg.last);
	ok(parse("[Global]\nDefrag=sometimes\n") == -EINVAL &&
	   strstr(dg.last, "(expected always, defer, defer+madvise, madvise or never)") &&
	   !strstr(dg.last, "ignored"), "Defrag= words from libthp's table, fatal: %s", dg.last);
	ok(parse("[Global]\nAdminGroup=0123456789012345678901234567890123456789012345678901234567890123\n") ==
	   -EINVAL && strstr(dg.last, "AdminGroup= in [Global] is longer than 63 characters"),
	   "a value longer than what is stored is fatal, never truncated: %s", dg.last);
	ok(parse("[Rule r]\nComm=0123456789012345678901234567890123\n") == -EINVAL && dg.line == 2,
	   "an over-long Comm= is fatal at its line (%u)", dg.line);
	ok(parse("[Rule 0123456789012345678901234567890123456789]\nComm=x\n") == 0,
	   "a rule name of 40 characters is fine");
	ok(parse("[Global]\n[Rule " "0123456789012345678901234567890123456789012345]\nMode=x\n") ==
	   -EINVAL && dg.n == 1 && dg.line == 2 && strstr(dg.last, "section name longer than 49") &&
	   cfg.n_rules == 0 && cfg.mode[0] == '\0',
	   "a section name libinih would truncate is fatal at its line; its keys go nowhere");
	thpd_config_defaults(&cfg);
	thpd_config_parse_string(&cfg, "a.conf", "[Rule x]\n\nExe=/a\n", &diag);
	thpd_config_parse_string(&cfg, "b.conf", "[Rule y]\nComm=y\n[Rule x]\nPolicy=never\n", &diag);
	ok(cfg.n_rules == 2 && strcmp(thpd_config_file(&cfg, cfg.rules[0].origin_file), "a.conf") == 0 &&
	   cfg.rules[0].origin_line == 3 &&
	   strcmp(thpd_config_file(&cfg, cfg.rules[1].origin_file), "b.conf") == 0 &&
	   cfg.rules[1].origin_line == 2, "a rule's origin is a file and a line, kept as fields");
}

/* the reader: what libinih would split, truncate or cut is fatal at its line */
static void test_reader(void)
{
	char text[1024];

	/* 197: Debian's libinih 55 would split right before "Mode=" and apply it */
	snprintf(text, sizeof(text), "[Global]\n# %0*dMode=always\nDefrag=never\n", 197, 0);
	ok(parse(text) == -EINVAL && dg.fatal == 1 && dg.line == 2 && strstr(dg.last, "longer than 198") &&
	   cfg.mode[0] == '\0', "the tail of a long comment is not applied: fatal at t.conf:%u (%s)",
	   dg.line, dg.last);
	ok(strcmp(cfg.defrag, "never") == 0, "... the lines after it are still read (every problem reported)");
	snprintf(text, sizeof(text), "[Global]\nAdminGroup=%0*d\n", 187, 0);
	ok(strlen(text) == 9 + 198 + 1 && parse(text) == -EINVAL && strstr(dg.last, "AdminGroup="),
	   "a line of exactly 198 characters reaches the key's own check (%s)", dg.last);
	snprintf(text, sizeof(text), "[Global]\nMode=never\n%0*d\n", 199, 0);
	ok(parse(text) == -EINVAL && dg.line == 3, "a line of 199 characters is fatal at line %u", dg.line);
	memset(&dg, 0, sizeof(dg));
	thpd_config_defaults(&cfg);
	ok(thpd_config_parse(&cfg, "t.conf", "[Global]\nMode=never\0junk\n", 25, &diag) == -EINVAL &&
	   dg.line == 2 && strstr(dg.last, "NUL") && cfg.mode[0] == '\0',
	   "a NUL byte in a line is fatal at its line, the line is not read (%s)", dg.last);
	ok(parse("[Global]\nMode=never") == 0 && strcmp(cfg.mode, "never") == 0,
	   "a last line without a newline is read");
}

static void test_load(void)
{
	char dir[] = "/tmp/thpd-test-XXXXXX", path[256], sub[300], f[400];
	struct diags d2 = { 0 };
	struct thpd_diag dd = { .report = collect, .userdata = &d2 };
	FILE *fp;

	if (!mkdtemp(dir)) {
		ok(0, "mkdtemp: %m");
		return;
	}
	snprintf(path, sizeof(path), "%s/thpd.conf", dir);
	ok(thpd_config_load(&cfg, path, false, &dd) == 0 && d2.n == 0, "missing main file and drop-in dir: defaults");
	fp = fopen(path, "w");
	fputs("[Global]\nMode=always\nDefrag=madvise\n", fp);
	fclose(fp);
	snprintf(sub, sizeof(sub), "%s.d", path);
	mkdir(sub, 0755);
	snprintf(f, sizeof(f), "%s/20-b.conf", sub);
	fp = fopen(f, "w");
	fputs("[Global]\nMode=never\n", fp);
	fclose(fp);
	snprintf(f, sizeof(f), "%s/10-a.conf", sub);
	fp = fopen(f, "w");
	fputs("[Global]\nMode=madvise\nDefrag=defer\n", fp);
	fclose(fp);
	snprintf(f, sizeof(f), "%s/30-c.conf.disabled", sub);
	fp = fopen(f, "w");
	fputs("[Global]\nMode=1\n", fp);
	fclose(fp);
	ok(thpd_config_load(&cfg, path, false, &dd) == 0 && strcmp(cfg.mode, "never") == 0 &&
	   strcmp(cfg.defrag, "defer") == 0, "drop-ins in lexical order override the file; other names ignored");
	snprintf(f, sizeof(f), "%s/40-bad.conf", sub);
	fp = fopen(f, "w");
	fputs("[Global]\n\n\nMode=sometimes\n", fp);
	fclose(fp);
	memset(&d2, 0, sizeof(d2));
	ok(thpd_config_load(&cfg, path, false, &dd) == -EINVAL && d2.fatal == 1 && d2.line == 4 &&
	   strcmp(d2.file, f) == 0, "a bad drop-in is fatal, reported as %s:%u", d2.file, d2.line);
	unlink(f);
	if (geteuid() != 0) {
		chmod(path, 0);
		memset(&d2, 0, sizeof(d2));
		ok(thpd_config_load(&cfg, path, false, &dd) < 0 && d2.fatal, "an unreadable main file is fatal");
	} else {
		/* root reads mode 0 files: a directory in its place is unreadable for everyone */
		unlink(path);
		mkdir(path, 0755);
		memset(&d2, 0, sizeof(d2));
		ok(thpd_config_load(&cfg, path, false, &dd) < 0 && d2.fatal, "an unreadable main file is fatal");
		rmdir(path);
	}
	snprintf(f, sizeof(f), "rm -rf '%s'", dir);
	if (system(f) != 0)
		ok(0, "cleanup of %s", dir);
}

int main(void)
{
	test_defaults();
	test_global();
	test_fatal();
	test_warnings();
	test_rules();
	test_precedence();
	test_sizes();
	test_cmdline_sizes();
	test_timespan();
	test_table();
	test_reader();
	test_load();
	return tap_done();
}
