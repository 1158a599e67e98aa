// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * thpctl: the administrator's command for transparent hugepages.
 * main() parses the global options and dispatches through the verb table;
 * each verb parses its own options (see thpctl(1)).
 */
#include "thpctl.h"
#include "thp.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef THP_VERSION
#define THP_VERSION "unknown"
#endif

enum {
	VERB_JSON = 1 << 0,	/* a read verb: accepts --json */
	VERB_COMMAND = 1 << 1,	/* options end at the first operand (run's command) */
};

/*
 * The verbs. Every verb's options and operand counts are checked here, the
 * same way for each; a verb's handler sees only well-formed arguments.
 */
struct verb {
	const char *name;
	const char *usage;	/* after "thpctl [options] " */
	const char *summary;
	int min_args, max_args;	/* operands after the verb; -1: unlimited */
	unsigned int flags;	/* VERB_* */
	const char *missing;	/* what fewer than min_args operands lacks */
	const struct option *opts;	/* the verb's own options, or NULL */
	const char *shortopts;	/* the short forms among them (getopt), or NULL */
	int (*option)(struct verb_args *a, int opt, const char *arg);
	const char *help;	/* the verb's own options, for --help */
	int (*run)(struct verb_args *a);
	/* prints the values the operands take (into two scratch buffers), or NULL */
	void (*values)(char *a, char *b, size_t size);
};

/*
 * The values a verb takes (its --help), from libthp's table of every
 * kernel's words, the one list; 'help' in their place lists the running
 * kernel's.
 */
static void values_enable(char *a, char *b, size_t size)
{
	printf("MODE: %s.\nVALUE with --size: %s.\n", thp_mode_words_text(a, size),
	       thp_knob_words_text(THP_KNOB_SIZE_ENABLED, b, size));
}

static void values_shmem(char *a, char *b, size_t size)
{
	printf("VALUE: %s.\nVALUE with --size: %s.\n",
	       thp_knob_words_text(THP_KNOB_SHMEM_ENABLED, a, size),
	       thp_knob_words_text(THP_KNOB_SIZE_SHMEM_ENABLED, b, size));
}

static void values_defrag(char *a, char *b, size_t size)
{
	(void)b;
	printf("VALUE: %s.\n", thp_knob_words_text(THP_KNOB_DEFRAG, a, size));
}

static void values_policy(char *a, char *b, size_t size)
{
	(void)a, (void)b, (void)size;
	printf("POLICY: %s, %s or %s.\n", thp_policy_name(0), thp_policy_name(1),
	       thp_policy_name(2));
}

static void values_khugepaged(char *a, char *b, size_t size)
{
	size_t used = 0;

	(void)b;
	a[0] = '\0';
	for (int i = 0; thp_khugepaged_settings[i] && used < size; i++)
		used += (size_t)snprintf(a + used, size - used, "%s%s", i ? ", " : "",
					 thp_khugepaged_settings[i]);
	printf("KEY: %s.\n", a);
}

static void values_unit(char *a, char *b, size_t size)
{
	(void)a, (void)b, (void)size;
	printf("POLICY: advise, advised-only, never or default.\n");
}

static const struct verb verbs[] = {
	{ "status", "[status] [--all]", "what each hugepage size does now and why, and thpd",
	  0, 0, VERB_JSON, NULL, status_options, "a", status_option,
	  "  -a, --all  every file, khugepaged and the counters too (what --json prints)\n",
	  verb_status, NULL },
	{ "enable", "enable MODE | enable VALUE --size LIST",
	  "set the mode, or the mode of some hugepage sizes",
	  1, 1, 0, "missing argument", enable_options, NULL, enable_option,
	  "  --size LIST  the sizes to set, e.g. 64K,2M, or all (kernels with per-size\n"
	  "               controls); without it, inherit means every size\n", verb_enable, values_enable },
	{ "shmem", "shmem VALUE [--size LIST]",
	  "set shmem_enabled, or that of some hugepage sizes",
	  1, 1, 0, "missing argument", shmem_options, NULL, enable_option,
	  "  --size LIST  the sizes to set, e.g. 64K,2M, or all; without it, inherit\n"
	  "               means every size\n", verb_shmem, values_shmem },
	{ "defrag", "defrag VALUE", "set defrag",
	  1, 1, 0, "missing argument", NULL, NULL, NULL, NULL, verb_defrag, values_defrag },
	{ "reset", "reset", "back to the boot defaults: forget what was set (thpd), or write them",
	  0, 0, 0, NULL, NULL, NULL, NULL, NULL, verb_reset, NULL },
	{ "verify", "verify", "compare what thpd should hold with what the kernel holds",
	  0, 0, VERB_JSON, NULL, NULL, NULL, NULL, NULL, verb_verify, NULL },
	{ "run", "run [--advise|--advised-only|--never|--default] [-q] [--] COMMAND [ARG...]",
	  "run a command with a THP policy",
	  1, -1, VERB_COMMAND, "no command given", run_options, "q", run_option,
	  "  --advise        hugepages for all anonymous memory, as if madvise(MADV_HUGEPAGE)\n"
	  "                  (the default; a stock kernel: glibc's malloc only)\n"
	  "  --advised-only  hugepages only where the program advises them (Linux 6.18+)\n"
	  "  --never         no hugepages\n"
	  "  --default       the system mode decides\n"
	  "  -q, --quiet     no notice of what the policy reaches, and run COMMAND even\n"
	  "                  when it reaches nothing (for services)\n", verb_run, NULL },
	{ "ps", "ps [--sort=FIELD] [PID...]", "hugepage use per process",
	  0, -1, VERB_JSON, NULL, ps_options, NULL, ps_option,
	  "  --sort=FIELD  pid (default), comm, anon_huge_kib, policy or a thp_stat counter\n",
	  verb_ps, NULL },
	{ "policy", "policy [--collapse] PID [POLICY]",
	  "show or set a process's THP policy",
	  1, 2, VERB_JSON, "missing argument", policy_options, NULL, policy_option,
	  "  --collapse  collapse the process's anonymous memory into hugepages now\n",
	  verb_policy, values_policy },
	{ "cgroups", "cgroups [--sort=FIELD] [--depth=N] [--top=N] [--all]",
	  "THP memory and events per cgroup",
	  0, 0, VERB_JSON, NULL, cgroups_options, NULL, cgroups_option,
	  "  --sort=FIELD  thp (default: THP memory), anon_thp, file_thp, shmem_thp,\n"
	  "                a thp_* event of memory.stat, or cgroup\n"
	  "  --depth=N     levels below the root cgroup (default 3)\n"
	  "  --top=N       at most N cgroups, 0 for all (default 20)\n"
	  "  --all         cgroups without THP memory or events too\n", verb_cgroups, NULL },
	{ "metrics", "metrics [--output=FILE] [--depth=N] [--top=N]",
	  "THP metrics in the Prometheus text format",
	  0, 0, VERB_JSON, NULL, metrics_options, NULL, metrics_option,
	  "  --output=FILE  write FILE atomically (node_exporter's textfile collector)\n"
	  "  --depth=N      cgroup levels below the root (default 3)\n"
	  "  --top=N        at most N cgroups, largest THP memory first (default 20)\n",
	  verb_metrics, NULL },
	{ "khugepaged", "khugepaged [show | set KEY=VALUE...]",
	  "show or set khugepaged's settings",
	  0, -1, VERB_JSON, NULL, NULL, NULL, NULL, NULL, verb_khugepaged, values_khugepaged },
	{ "unit", "unit NAME[.service] advise|advised-only|never|default",
	  "give one systemd service a THP policy, with a drop-in",
	  2, 2, 0, "expected a unit name and a policy", NULL, NULL, NULL, NULL, verb_unit,
	  values_unit },
};

#define N_VERBS (sizeof(verbs) / sizeof(verbs[0]))

/* "thpctl: " and the message, escaped: it may quote names and replies */
static void vlog(const char *fmt, va_list ap)
{
	char *msg;

	fputs("thpctl: ", stderr);
	if (vasprintf(&msg, fmt, ap) < 0) {
		fputs("out of memory", stderr);
	} else {
		put_text(stderr, msg);
		free(msg);
	}
	fputc('\n', stderr);
}

void log_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(fmt, ap);
	va_end(ap);
}

int usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(fmt, ap);
	va_end(ap);
	fputs("Try 'thpctl --help' for more information.\n", stderr);
	return EXIT_USAGE;
}

const char *full_path(const char *path)
{
	/* whole, however long: a message must not name another path */
	static char *buf[4];
	static int slot;
	char **b = &buf[slot++ % 4];

	free(*b);
	if (asprintf(b, "%s%s", thp_root(), path) < 0) {
		*b = NULL;
		return path;	/* out of memory: the root is "" on a real system */
	}
	return *b;
}

bool is_help(const char *value)
{
	return strcmp(value, "help") == 0;
}

void list_choice(const struct thp_choice *c)
{
	for (int i = 0; i < c->n; i++)
		puts(c->word[i]);
}

static void help(void)
{
	printf("Usage:\n");
	for (size_t i = 0; i < N_VERBS; i++)
		printf(" thpctl [options] %s\n", verbs[i].usage);
	printf("\nControl transparent hugepages (THP).\n\nCommands:\n");
	for (size_t i = 0; i < N_VERBS; i++)
		printf("  %-10s %s\n", verbs[i].name, verbs[i].summary);
	printf("\nOptions:\n"
	       "  -j, -J, --json[=pretty|short]\n"
	       "                  print status, ps, policy, cgroups, khugepaged and metrics\n"
	       "                  as JSON:\n"
	       "                  indented (pretty, the default) or one line (short)\n"
	       "  -h, --help      display this help\n"
	       "  -V, --version   display version\n"
	       "\nModes: 0 = madvise (defrag madvise), 1 = always (defrag madvise),\n"
	       "       2 = always (defrag always), never: the RFC's numbers (0 is not off),\n"
	       "       as words where the kernel has no mode file.\n"
	       "\n'help' as a value lists what this kernel takes there, e.g.\n"
	       "'thpctl enable help', 'thpctl ps --sort=help'.\n"
	       "\nFor more details see thpctl(1).\n");
}


static void verb_help(const struct verb *v)
{
	printf("Usage: thpctl %s\n\n%c%s.\n", v->usage, toupper((unsigned char)v->summary[0]),
	       v->summary + 1);
	if (v->values) {
		char a[160], b[160];

		putchar('\n');
		v->values(a, b, sizeof(a));
		printf("'help' in its place lists what this kernel takes.\n");
	}
	printf("\nOptions:\n%s%s"
	       "  -h, --help  display this help\n\nFor more details see thpctl(1).\n",
	       v->help ? v->help : "",
	       v->flags & VERB_JSON ? "  -j, -J, --json[=pretty|short]  print as JSON\n" : "");
}

static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), row[64];

	if (la >= 63 || lb >= 63)
		return 64;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];

		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			diag = up;
			row[j] = best;
		}
	}
	return row[lb];
}

static int unknown_verb(const char *name)
{
	const char *best = NULL;
	size_t best_d = 3;	/* suggest only within two edits */

	for (size_t i = 0; i < N_VERBS; i++) {
		size_t d = edit_distance(name, verbs[i].name);

		if (d < best_d) {
			best_d = d;
			best = verbs[i].name;
		}
	}
	if (best)
		return usage_error("unknown command '%s'. Did you mean '%s'?", name, best);
	return usage_error("unknown command '%s'", name);
}

/* --json[=pretty|short]: 0, or usage_error()'s code */
static int json_option(struct verb_args *a, const char *style)
{
	if (output_json_style(style) < 0)
		return usage_error("--json takes 'pretty' or 'short', not '%s'", style);
	a->json = true;
	return 0;
}

/*
 * The verb's options (--json and --help for every verb, then its own) and
 * its operand count. Returns 0, -1 after --help, or EXIT_USAGE.
 */
static int parse_verb_args(const struct verb *v, struct verb_args *a)
{
	struct option opts[16] = {
		{ "json", optional_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
	};
	size_t n = 2;
	char shortopts[32];
	int c, nargs;

	for (const struct option *o = v->opts; o && o->name; o++) {
		if (n + 1 >= sizeof(opts) / sizeof(opts[0]))
			abort();	/* a programming error: the table is fixed */
		opts[n++] = *o;
	}
	optind = 0;	/* 0, not 1: glibc re-reads the optstring's + (main's stays otherwise) */
	opterr = 0;
	/*
	 * '+' stops at the first operand (run's command); ':' reports a missing
	 * option argument apart; -J is util-linux's spelling of --json
	 */
	snprintf(shortopts, sizeof(shortopts), "%s:jJh%s", v->flags & VERB_COMMAND ? "+" : "",
		 v->shortopts ? v->shortopts : "");
	while ((c = getopt_long(a->argc, a->argv, shortopts, opts, NULL)) != -1) {
		int r;

		switch (c) {
		case 'j':
		case 'J':
			if (!(v->flags & VERB_JSON))
				return usage_error("%s: --json is not supported (not a read command)",
						   v->name);
			if (json_option(a, optarg))
				return EXIT_USAGE;
			break;
		case 'h':
			verb_help(v);
			return -1;
		case ':':
			return usage_error("%s: option '%s' requires an argument", v->name,
					   a->argv[optind - 1]);
		case '?':
			if (optopt)
				return usage_error("%s: invalid option -- '%c'", v->name, optopt);
			return usage_error("%s: unrecognized option '%s'", v->name,
					   a->argv[optind - 1]);
		default:
			r = v->option(a, c, optarg);
			if (r)
				return r;
		}
	}
	nargs = a->argc - optind;
	if (nargs < v->min_args)
		return usage_error("%s: %s", v->name, v->missing);
	if (v->max_args >= 0 && nargs > v->max_args)
		return usage_error("%s: too many arguments", v->name);
	a->argv += optind - 1;
	a->argc -= optind - 1;
	a->argv[0] = (char *)v->name;
	return 0;
}

static int close_stdout(int rc)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		log_error("write error on standard output: %s", strerror(errno));
		return rc == 0 ? EXIT_FAIL : rc;
	}
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", optional_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{}
	};
	static char *default_argv[] = { "status", NULL };
	struct verb_args a = {};
	const struct verb *v = NULL;
	int c, r;

	output_init();
	if (thp_root_init() < 0) {
		log_error("THP_ROOT is %zu bytes long, the limit is %d: refused rather than cut short",
			  strlen(getenv("THP_ROOT")), THP_ROOT_MAX - 1);
		return EXIT_USAGE;
	}
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+jJhV", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
		case 'J':
			if (json_option(&a, optarg))
				return EXIT_USAGE;
			break;
		case 'h':
			help();
			return close_stdout(EXIT_OK);
		case 'V':
			printf("thpctl %s\n", THP_VERSION);
			return close_stdout(EXIT_OK);
		default:
			if (optopt)
				return usage_error("invalid option -- '%c'", optopt);
			return usage_error("unrecognized option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc) {
		a.argc = argc - optind;
		a.argv = argv + optind;
	} else {
		a.argc = 1;
		a.argv = default_argv;
	}
	for (size_t i = 0; i < N_VERBS; i++)
		if (strcmp(a.argv[0], verbs[i].name) == 0)
			v = &verbs[i];
	if (!v)
		return unknown_verb(a.argv[0]);
	if (a.json && !(v->flags & VERB_JSON))
		return usage_error("%s: --json is not supported (not a read command)", v->name);
	r = parse_verb_args(v, &a);
	if (r < 0)
		return close_stdout(EXIT_OK);
	if (r > 0)
		return r;
	return close_stdout(v->run(&a));
}
