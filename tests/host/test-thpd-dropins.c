// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * thpd's configuration search path (thpd.conf(5), FILES): thpd.conf, then
 * the drop-ins of /etc/thpd/thpd.conf.d, /run/thpd/thpd.conf.d and
 * /usr/lib/thpd/thpd.conf.d merged by file name (the first directory
 * wins, an empty file masks), read in lexical order of name. The three
 * directories are made in a temporary tree and given to
 * thpd_config_load_dirs(), the loader thpd_config_load() calls with them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../daemon/config.h"
#include "tap.h"

static int warnings, fatal;
static char last_file[512];

static void collect(void *userdata, enum thpd_diag_level level, const char *file,
		    unsigned int line, const char *msg)
{
	(void)userdata;
	(void)line;
	(void)msg;
	if (level == THPD_DIAG_FATAL)
		fatal++;
	else
		warnings++;
	snprintf(last_file, sizeof(last_file), "%s", file ? file : "");
}

static const struct thpd_diag diag = { .report = collect };
static char top[] = "/tmp/thpd-dropins-XXXXXX";
static char etc[256], run[256], usr[256], conf[256];

/* write text to dir/name (name "": dir is the file) */
static void put(const char *dir, const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s%s%s", dir, *name ? "/" : "", name);
	f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
		perror(path);
		exit(2);
	}
}

static int load(struct thpd_config *cfg)
{
	const char *const dirs[] = { etc, run, usr, NULL };

	warnings = fatal = 0;
	return thpd_config_load_dirs(cfg, conf, false, dirs, &diag);
}

int main(void)
{
	static struct thpd_config cfg;
	char cmd[1024];
	int r;

	if (!mkdtemp(top)) {
		perror("mkdtemp");
		return 2;
	}
	snprintf(etc, sizeof(etc), "%s/etc/thpd/thpd.conf.d", top);
	snprintf(run, sizeof(run), "%s/run/thpd/thpd.conf.d", top);
	snprintf(usr, sizeof(usr), "%s/usr/lib/thpd/thpd.conf.d", top);
	snprintf(conf, sizeof(conf), "%s/etc/thpd/thpd.conf", top);

	ok(load(&cfg) == 0 && warnings + fatal == 0 && cfg.mode[0] == '\0',
	   "no file and no directory: the defaults, nothing reported");

	snprintf(cmd, sizeof(cmd), "mkdir -p %s %s %s", etc, run, usr);
	if (system(cmd) != 0)
		return 2;
	put(conf, "", "[Global]\nMode=never\nDefrag=never\n");
	/* the vendor's defaults */
	put(usr, "10-vendor.conf", "[Global]\nDefrag=defer\nKhugepagedPagesToScan=100\n");
	put(usr, "50-site.conf", "[Global]\nMode=always\n");
	put(usr, "90-late.conf", "[Global]\nMode=never\n");
	/* runtime: overrides the vendor's file of the same name, adds its own */
	put(run, "50-site.conf", "[Global]\nMode=madvise\n");
	put(run, "20-runtime.conf", "[Global]\nKhugepagedPagesToScan=200\n");
	/* the administrator: masks 90-late.conf with an empty file */
	put(etc, "90-late.conf", "");
	put(etc, "not-a-dropin.txt", "[Global]\nMode=never\n");

	r = load(&cfg);
	ok(r == 0 && warnings + fatal == 0, "three directories load cleanly (%d, %d warnings)", r,
	   warnings);
	ok(strcmp(cfg.mode, "madvise") == 0,
	   "same name in /run and /usr/lib: /run's wins; an empty /etc file masks /usr/lib's (Mode=%s)",
	   cfg.mode);
	ok(strcmp(cfg.defrag, "defer") == 0,
	   "a vendor drop-in nobody overrides applies over thpd.conf (Defrag=%s)", cfg.defrag);
	ok(cfg.kh_set[THPD_KH_PAGES_TO_SCAN] && cfg.kh_val[THPD_KH_PAGES_TO_SCAN] == 200,
	   "read in lexical order of name across directories: 20-runtime after 10-vendor (%llu)",
	   (unsigned long long)cfg.kh_val[THPD_KH_PAGES_TO_SCAN]);

	/* /etc wins over both */
	put(etc, "50-site.conf", "[Global]\nMode=always\n");
	r = load(&cfg);
	ok(r == 0 && strcmp(cfg.mode, "always") == 0, "same name in all three: /etc's wins (Mode=%s)",
	   cfg.mode);

	/* a link to /dev/null masks as well */
	put(usr, "95-vendor-late.conf", "[Global]\nMode=never\n");
	snprintf(cmd, sizeof(cmd), "%s/95-vendor-late.conf", etc);
	if (symlink("/dev/null", cmd) < 0)
		return 2;
	r = load(&cfg);
	ok(r == 0 && fatal == 0 && strcmp(cfg.mode, "always") == 0,
	   "a link to /dev/null in /etc masks the vendor's file of that name (Mode=%s)", cfg.mode);

	/* a bad value names the file it came from, wherever that is */
	put(run, "30-bad.conf", "[Global]\nKhugepagedPagesToScan=lots\n");
	r = load(&cfg);
	ok(r == 0 && warnings == 1 && strstr(last_file, "/run/thpd/thpd.conf.d/30-bad.conf"),
	   "a warning names the drop-in's own path (%s)", last_file);

	/* a file given with --config keeps its own FILE.d only */
	snprintf(cmd, sizeof(cmd), "%s/other.conf", top);
	put(cmd, "", "[Global]\nMode=never\n");
	r = thpd_config_load(&cfg, cmd, true, &diag);
	ok(r == 0 && strcmp(cfg.mode, "never") == 0,
	   "thpd --config FILE: FILE and FILE.d, not the system directories (Mode=%s)", cfg.mode);

	snprintf(cmd, sizeof(cmd), "rm -rf %s", top);
	if (system(cmd) != 0)
		return 2;
	return tap_done();
}
