// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * thpctl: the administrator's command for transparent hugepages.
 * main() parses the global options and dispatches through the verb table;
 * each verb parses its own options (see thpctl(1)).
 */
#include "thpctl.h"
#include "thp.h"

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

struct verb {
	const char *name;
	int min_args, max_args;	/* operands after the verb; -1: unlimited */
	bool json;		/* accepts --json */
	int (*run)(struct verb_args *a);
	const char *summary;
};

static const struct verb verbs[] = {
	{ "status", 0, 0, true, verb_status, "show the THP mode, khugepaged, counters and thpd" },
	{ "enable", 1, 1, false, verb_enable, "set the mode: always|madvise|never|0|1|2" },
	{ "defrag", 1, 1, false, verb_defrag, "set defrag: always|defer|defer+madvise|madvise|never" },
	{ "run", 1, -1, false, verb_run, "run a command with a THP policy" },
	{ "ps", 0, -1, true, verb_ps, "hugepage use per process" },
	{ "policy", 1, 2, true, verb_policy, "show or set a process's THP policy" },
};

void log_error(const char *fmt, ...)
{
	va_list ap;

	fputs("thpctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("thpctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'thpctl --help' for more information.\n", stderr);
	return EXIT_USAGE;
}

const char *full_path(const char *path)
{
	static char buf[4][4096];
	static int slot;
	char *b = buf[slot++ % 4];

	if (thp_path(b, sizeof(buf[0]), path) < 0)
		snprintf(b, sizeof(buf[0]), "%s", path);
	return b;
}

static void help(void)
{
	printf("Usage:\n"
	       " thpctl [options] [status]\n"
	       " thpctl [options] enable always|madvise|never|0|1|2\n"
	       " thpctl [options] defrag always|defer|defer+madvise|madvise|never\n"
	       " thpctl [options] run [--advise|--never|--default] [--] COMMAND [ARG...]\n"
	       " thpctl [options] ps [--sort=FIELD] [PID...]\n"
	       " thpctl [options] policy [--collapse] PID [default|advise|never]\n"
	       "\nControl transparent hugepages (THP).\n\nCommands:\n");
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		printf("  %-8s %s\n", verbs[i].name, verbs[i].summary);
	printf("\nOptions:\n"
	       "  -j, --json      print status, ps and policy as JSON\n"
	       "  -h, --help      display this help\n"
	       "  -V, --version   display version\n"
	       "\nModes: 0 = madvise (defrag madvise), 1 = always (defrag madvise),\n"
	       "       2 = always (defrag always), never.\n"
	       "\nFor more details see thpctl(1).\n");
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

	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++) {
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

/*
 * Options valid after the verb too: --json (read verbs) and --help. `run`
 * stops at its command, so it parses its own arguments.
 */
static int parse_verb_options(const struct verb *v, struct verb_args *a)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ "collapse", no_argument, NULL, 'c' },
		{}
	};
	int c;

	/* run and ps parse their own options */
	if (strcmp(v->name, "run") == 0 || strcmp(v->name, "ps") == 0)
		return 0;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(a->argc, a->argv, "jh", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			if (!v->json)
				return usage_error("%s: --json is not supported (not a read command)",
						   v->name);
			a->json = true;
			break;
		case 'h':
			help();
			return -1;
		case 'c':
			if (strcmp(v->name, "policy") != 0)
				return usage_error("%s: unrecognized option '--collapse'", v->name);
			a->collapse = true;
			break;
		default:
			return usage_error("%s: unrecognized option '%s'", v->name,
					   a->argv[optind - 1]);
		}
	}
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
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{}
	};
	static char *default_argv[] = { "status", NULL };
	struct verb_args a = {};
	const struct verb *v = NULL;
	int c, r;

	thp_root_init();
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+jhV", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			a.json = true;
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
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (strcmp(a.argv[0], verbs[i].name) == 0)
			v = &verbs[i];
	if (!v)
		return unknown_verb(a.argv[0]);
	if (a.json && !v->json)
		return usage_error("%s: --json is not supported (not a read command)", v->name);
	r = parse_verb_options(v, &a);
	if (r < 0)
		return close_stdout(EXIT_OK);
	if (r > 0)
		return r;
	if (strcmp(v->name, "run") != 0 && strcmp(v->name, "ps") != 0) {
		if (a.argc - 1 < v->min_args)
			return usage_error("%s: missing argument", v->name);
		if (v->max_args >= 0 && a.argc - 1 > v->max_args)
			return usage_error("%s: too many arguments", v->name);
	}
	return close_stdout(v->run(&a));
}
