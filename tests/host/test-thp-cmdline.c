// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The kernel command line as the kernel reads it (lib/thp-cmdline.c): every
 * case of tests/host/fixtures/cmdline.txt, the one table the fuzz target
 * cmdline seeds from too, then what a table line cannot hold.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "thp.h"
#include "tap.h"

/* \t, \n, \xHH and \\ in a fixture's CMDLINE field; 0 or -EINVAL */
static int unescape(const char *in, char *out, size_t size)
{
	size_t o = 0;

	for (const char *p = in; *p; p++) {
		char c = *p;

		if (c == '\\') {
			p++;
			if (*p == 't') {
				c = '\t';
			} else if (*p == 'n') {
				c = '\n';
			} else if (*p == '\\') {
				c = '\\';
			} else if (*p == 'x' && p[1] && p[2]) {
				char hex[3] = { p[1], p[2], 0 }, *end;

				c = (char)strtoul(hex, &end, 16);
				if (*end)
					return -EINVAL;
				p += 2;
			} else {
				return -EINVAL;
			}
		}
		if (o + 1 >= size)
			return -EINVAL;
		out[o++] = c;
	}
	out[o] = '\0';
	return 0;
}

static void test_table(const char *path)
{
	char *line = NULL, text[1024], got[1024];
	size_t cap = 0;
	unsigned int n = 0, lineno = 0;
	FILE *f = fopen(path, "re");

	if (!f) {
		ok(0, "open %s: %m", path);
		return;
	}
	while (getline(&line, &cap, f) > 0) {
		char *flags, *cmdline, *expect;
		struct thp_cmdline cl;

		lineno++;
		line[strcspn(line, "\n")] = '\0';
		if (!line[0] || line[0] == '#')
			continue;
		flags = line;
		cmdline = strchr(flags, '\t');
		expect = cmdline ? strchr(cmdline + 1, '\t') : NULL;
		if (!expect || strchr(expect + 1, '\t')) {
			ok(0, "%s:%u: not three TAB-separated fields", path, lineno);
			continue;
		}
		*cmdline++ = '\0';
		*expect++ = '\0';
		if ((strcmp(flags, "-") && strcmp(flags, "numbers")) ||
		    unescape(cmdline, text, sizeof(text)) < 0) {
			ok(0, "%s:%u: bad FLAGS or CMDLINE", path, lineno);
			continue;
		}
		ok(thp_cmdline_parse(text, strcmp(flags, "numbers") == 0 ? THP_CMDLINE_NUMBERS : 0,
				     &cl) == 0 &&
		   strcmp(thp_cmdline_format(&cl, got, sizeof(got)), expect) == 0,
		   "%s:%u: %s '%s': %s%s%s", path, lineno, flags, cmdline, expect,
		   strcmp(got, expect) ? ", got " : "", strcmp(got, expect) ? got : "");
		n++;
	}
	free(line);
	fclose(f);
	ok(n >= 60, "%u cases in %s", n, path);
}

static void test_beyond_the_table(void)
{
	struct thp_cmdline cl;
	char *text, got[256];
	const char *w;

	/* setup_thp_anon() refuses a value of a page or more */
	text = malloc(5000);
	strcpy(text, "thp_anon=");
	for (size_t len = strlen(text); len < 4096 + 9; len += 11)
		strcat(text, "64K:always;");
	strcat(text, "64K:never transparent_hugepage=never");
	ok(thp_cmdline_parse(text, 0, &cl) == 0 &&
	   strcmp(thp_cmdline_format(&cl, got, sizeof(got)),
		  "transparent_hugepage=never refused=thp_anon:1") == 0,
	   "a thp_anon= of 4096 bytes or more is refused whole: %s", got);
	strcpy(text + 9 + 11 * 300, "64K:never");
	ok(thp_cmdline_parse(text, 0, &cl) == 0 &&
	   strcmp(thp_cmdline_format(&cl, got, sizeof(got)), "thp_anon=64K:never") == 0,
	   "one of %zu bytes is taken: %s", strlen(text + 9), got);
	free(text);

	thp_cmdline_parse("thp_anon=16K-64K:always;64K:never thp_shmem=8K:advise\n", 0, &cl);
	w = thp_cmdline_size_word(&cl, THP_KNOB_SIZE_ENABLED, 32);
	ok(w && strcmp(w, "always") == 0, "32K's anon word: always");
	w = thp_cmdline_size_word(&cl, THP_KNOB_SIZE_ENABLED, 64);
	ok(w && strcmp(w, "never") == 0, "64K's anon word: the later part's never");
	ok(!thp_cmdline_size_word(&cl, THP_KNOB_SIZE_ENABLED, 2048), "2M is named by none: NULL");
	w = thp_cmdline_size_word(&cl, THP_KNOB_SIZE_SHMEM_ENABLED, 8);
	ok(w && strcmp(w, "advise") == 0, "8K's shmem word: advise");
	ok(!thp_cmdline_size_word(&cl, THP_KNOB_SIZE_SHMEM_ENABLED, 48) &&
	   !thp_cmdline_size_word(&cl, THP_KNOB_SIZE_ENABLED, 2 * 1024 * 1024),
	   "not a size, or beyond 1G: NULL");
	ok(thp_cmdline_parse("transparent_hugepage=never", 0, &cl) == 0 &&
	   strcmp(thp_cmdline_format(&cl, got, 4), "tra") == 0, "format cuts at the buffer, NUL-terminated");
}

int main(void)
{
	const char *fixtures = getenv("THP_FIXTURES");
	char path[4096];

	snprintf(path, sizeof(path), "%s/cmdline.txt", fixtures ? fixtures : "tests/host/fixtures");
	test_table(path);
	test_beyond_the_table();
	return tap_done();
}
