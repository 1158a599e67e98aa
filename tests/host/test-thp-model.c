// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libthp's model of the THP controls: the word-list parser, the effective
 * state of a size (pure functions, every combination the kernels define),
 * and the probe against the captured layouts of each kernel generation in
 * tests/host/fixtures (THP_ROOT-style prefix). Prints TAP.
 *
 * The expected effective states are those of the 6.12 sources
 * (__thp_vma_allowable_orders in include/linux/huge_mm.h and mm/huge_memory.c,
 * shmem_allowable_huge_orders in mm/shmem.c); see docs/abi.md.
 */
#include "thp.h"
#include "tap.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void test_choice(void)
{
	struct thp_choice c;
	static const char *const bad[] = {
		"", "\n", "always madvise never", "[always] [madvise]", "[] never",
		"always [mad]vise never", "[a b]", "a b c d e f g h [i]",
		"[averyveryverylongword]",
	};

	ok(thp_choice_parse("always [madvise] never\n", &c) == 0 && c.n == 3 && c.cur == 1 &&
	   strcmp(thp_choice_value(&c), "madvise") == 0 && thp_choice_offers(&c, "never") &&
	   !thp_choice_offers(&c, "inherit"), "choice: always [madvise] never");
	ok(thp_choice_parse("always within_size advise [never] deny force\n", &c) == 0 &&
	   c.n == 6 && strcmp(thp_choice_value(&c), "never") == 0 && thp_choice_offers(&c, "force"),
	   "choice: shmem_enabled's six words");
	ok(thp_choice_parse("[always] inherit madvise never", &c) == 0 && c.cur == 0,
	   "choice: first word bracketed");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ok(thp_choice_parse(bad[i], &c) == -EBADMSG && thp_choice_value(&c) == NULL,
		   "choice rejects '%s'", bad[i]);
}

static void test_knowledge(void)
{
	char buf[128];

	ok(thp_knob_word_known(THP_KNOB_DEFRAG, "defer+madvise") &&
	   !thp_knob_word_known(THP_KNOB_DEFRAG, "inherit"), "defrag words");
	ok(thp_knob_word_known(THP_KNOB_SIZE_ENABLED, "inherit") &&
	   !thp_knob_word_known(THP_KNOB_ENABLED, "inherit"), "inherit is a per-size word only");
	ok(thp_knob_word_known(THP_KNOB_SHMEM_ENABLED, "force") &&
	   !thp_knob_word_known(THP_KNOB_SIZE_SHMEM_ENABLED, "force"),
	   "force/deny are top-level shmem words only");
	ok(strcmp(thp_knob_words_text(THP_KNOB_ENABLED, buf, sizeof(buf)),
		  "always, madvise or never") == 0, "words text: %s", buf);
	for (int k = 0; k < THP_KNOB_COUNT; k++)
		ok(thp_knob(k)->words[0].meaning != NULL, "knob %s has meanings", thp_knob(k)->file);
	ok(thp_knob(THP_KNOB_COUNT) == NULL, "no knob past the table");
	/* the old entry points read the same table */
	ok(thp_defrag_valid("defer") == 0 && thp_defrag_valid("inherit") == -EINVAL,
	   "thp_defrag_valid reads the table");
	ok(thp_enabled_from_name("madvise") == THP_MADVISE &&
	   thp_enabled_from_name("inherit") == -EINVAL &&
	   strcmp(thp_enabled_name(THP_ALWAYS), "always") == 0, "enabled names from the table");
}

static void test_effective(void)
{
	static const struct {
		const char *own, *top;
		int want;
	} anon[] = {
		/* a per-size value other than inherit wins over enabled */
		{ "always", "never", THP_EFF_ALWAYS },
		{ "always", "madvise", THP_EFF_ALWAYS },
		{ "madvise", "always", THP_EFF_ADVISE },
		{ "madvise", "never", THP_EFF_ADVISE },
		{ "never", "always", THP_EFF_NEVER },
		{ "inherit", "always", THP_EFF_ALWAYS },
		{ "inherit", "madvise", THP_EFF_ADVISE },
		{ "inherit", "never", THP_EFF_NEVER },
		/* no per-size controls (6.1): the size follows enabled */
		{ NULL, "always", THP_EFF_ALWAYS },
		{ NULL, "madvise", THP_EFF_ADVISE },
		{ NULL, "never", THP_EFF_NEVER },
		{ "sometimes", "always", -EINVAL },
		{ "inherit", "inherit", -EINVAL },
		{ NULL, NULL, -EINVAL },
	};
	static const struct {
		const char *own, *top;
		bool pmd;
		int want;
	} shmem[] = {
		{ "always", "never", false, THP_EFF_ALWAYS },
		{ "within_size", "always", false, THP_EFF_WITHIN_SIZE },
		{ "advise", "never", true, THP_EFF_ADVISE },
		{ "never", "always", true, THP_EFF_NEVER },
		{ "inherit", "always", true, THP_EFF_ALWAYS },
		{ "inherit", "within_size", true, THP_EFF_WITHIN_SIZE },
		{ "inherit", "advise", false, THP_EFF_ADVISE },
		{ "inherit", "never", true, THP_EFF_NEVER },
		/* deny: off everywhere, whatever the size says */
		{ "always", "deny", false, THP_EFF_NEVER },
		{ "inherit", "deny", true, THP_EFF_NEVER },
		/* force: the inherit sizes, and only them */
		{ "inherit", "force", true, THP_EFF_ALWAYS },
		{ "always", "force", false, THP_EFF_NEVER },
		/* no per-size shmem controls (before 6.11): PMD follows the top level */
		{ NULL, "advise", true, THP_EFF_ADVISE },
		{ NULL, "force", true, THP_EFF_ALWAYS },
		{ NULL, "deny", true, THP_EFF_NEVER },
		{ NULL, "always", false, THP_EFF_NEVER },
		/* no shmem THP at all */
		{ NULL, NULL, true, THP_EFF_NEVER },
		{ "force", "always", false, -EINVAL },
		{ "inherit", "sometimes", true, -EINVAL },
	};

	for (size_t i = 0; i < sizeof(anon) / sizeof(anon[0]); i++)
		ok(thp_anon_effective(anon[i].own, anon[i].top) == anon[i].want,
		   "anon effective: size %s, enabled %s -> %d", anon[i].own ? anon[i].own : "(none)",
		   anon[i].top ? anon[i].top : "(none)", anon[i].want);
	for (size_t i = 0; i < sizeof(shmem) / sizeof(shmem[0]); i++)
		ok(thp_shmem_effective(shmem[i].own, shmem[i].top, shmem[i].pmd) == shmem[i].want,
		   "shmem effective: size %s, shmem_enabled %s, %s -> %d",
		   shmem[i].own ? shmem[i].own : "(none)", shmem[i].top ? shmem[i].top : "(none)",
		   shmem[i].pmd ? "PMD" : "smaller", shmem[i].want);
	ok(strcmp(thp_eff_name(THP_EFF_ADVISE, false), "madvise") == 0 &&
	   strcmp(thp_eff_name(THP_EFF_ADVISE, true), "advise") == 0, "effective names");
}

static void test_sizes(void)
{
	static const struct {
		const char *s;
		unsigned long kib;
	} good[] = {
		{ "64K", 64 }, { "64k", 64 }, { "64KB", 64 }, { "64KiB", 64 }, { "2M", 2048 },
		{ "2MiB", 2048 }, { "1G", 1048576 }, { "hugepages-2048kB", 2048 },
	};
	static const char *const bad[] = { "", "64", "0K", "-64K", "64X", "64KBB", "K", "2M ",
					   "99999999999999999999K", "2048G" };
	unsigned long kib;
	char buf[16];

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		ok(thp_size_parse(good[i].s, &kib) == 0 && kib == good[i].kib, "size %s", good[i].s);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ok(thp_size_parse(bad[i], &kib) == -EINVAL, "size rejects '%s'", bad[i]);
	ok(strcmp(thp_size_name(64, buf, sizeof(buf)), "64K") == 0 &&
	   strcmp(thp_size_name(2048, buf, sizeof(buf)), "2M") == 0 &&
	   strcmp(thp_size_name(1048576, buf, sizeof(buf)), "1G") == 0 &&
	   strcmp(thp_size_name(1536, buf, sizeof(buf)), "1536K") == 0, "size names");
}

static const char *fixtures;

static void use_fixture(const char *gen)
{
	char root[PATH_MAX];

	snprintf(root, sizeof(root), "%s/%s", fixtures, gen);
	thp_set_root(root);
}

static const char *stat_of(const struct thp_size *s, const char *name, uint64_t *v)
{
	for (int i = 0; i < s->nstats; i++)
		if (strcmp(s->stats[i].name, name) == 0) {
			*v = s->stats[i].value;
			return name;
		}
	return NULL;
}

static void test_generations(void)
{
	struct thp_model m;
	const struct thp_size *s;
	uint64_t v;

	use_fixture("6.1");
	ok(thp_model_read(&m) == 0, "6.1: model reads");
	ok(!m.per_size && m.nsizes == 1 && m.size[0].kib == 2048 && !m.size[0].has_dir,
	   "6.1: one size, the PMD size, without a directory");
	ok(m.shrink_underused == -1 && m.use_zero_page == 1 && m.mode[0] == '\0' &&
	   strcmp(thp_choice_value(&m.shmem_enabled), "never") == 0, "6.1: top-level files");
	ok(thp_size_anon_eff(&m, thp_model_pmd(&m)) == THP_EFF_ALWAYS &&
	   thp_size_shmem_eff(&m, thp_model_pmd(&m)) == THP_EFF_NEVER,
	   "6.1: 2M follows enabled and shmem_enabled");
	ok(thp_knob_set(&m, THP_KNOB_SIZE_ENABLED, 2048, "always") == -ENOENT,
	   "6.1: no per-size knob to set");

	use_fixture("6.1-patched");
	ok(thp_model_read(&m) == 0 && strcmp(m.mode, "1") == 0 && m.nextra == 0,
	   "6.1-patched: the mode file is known, not an extra");

	use_fixture("6.12");
	ok(thp_model_read(&m) == 0, "6.12: model reads");
	ok(m.per_size && m.nsizes == 9 && m.size[0].kib == 8 && m.size[8].kib == 2048 &&
	   m.shrink_underused == 1, "6.12: nine sizes 8K..2M ascending, shrink_underused");
	s = thp_model_size(&m, 8);
	ok(s && s->enabled.n == 0 && s->shmem_enabled.n == 5 &&
	   thp_size_anon_eff(&m, s) == THP_EFF_NEVER, "6.12: 8K is a shmem-only size");
	s = thp_model_size(&m, 64);
	ok(s && strcmp(thp_choice_value(&s->enabled), "never") == 0 &&
	   thp_size_anon_eff(&m, s) == THP_EFF_NEVER && stat_of(s, "anon_fault_alloc", &v) &&
	   s->nstats == 13, "6.12: 64K never, 13 stats");
	s = thp_model_pmd(&m);
	ok(s && strcmp(thp_choice_value(&s->enabled), "inherit") == 0 &&
	   thp_size_anon_eff(&m, s) == THP_EFF_ALWAYS, "6.12: 2M inherits Debian's always");
	ok(thp_knob_set(&m, THP_KNOB_SIZE_ENABLED, 64, "sometimes") == -EINVAL &&
	   thp_knob_set(&m, THP_KNOB_SIZE_ENABLED, 8, "always") == -EOPNOTSUPP &&
	   thp_knob_set(&m, THP_KNOB_SIZE_ENABLED, 4096, "always") == -ENOENT &&
	   thp_knob_set(&m, THP_KNOB_SIZE_SHMEM_ENABLED, 64, "force") == -EINVAL &&
	   thp_knob_set(&m, THP_KNOB_ENABLED, 64, "always") == -EINVAL,
	   "6.12: writes checked against the model before touching sysfs");

	use_fixture("6.18");
	ok(thp_model_read(&m) == 0 && m.per_size && m.nsizes >= 2 && thp_model_pmd(&m) &&
	   thp_model_pmd(&m)->has_dir, "6.18: model reads, PMD size has its directory");
	s = thp_model_pmd(&m);
	ok(s && stat_of(s, "anon_fault_alloc", &v) && stat_of(s, "shmem_alloc", &v) &&
	   s->nstats >= 13, "6.18: 2M stats (%d)", s ? s->nstats : 0);
	ok(m.shrink_underused >= 0 && m.use_zero_page >= 0 && m.shmem_enabled.n == 6,
	   "6.18: shrink_underused, use_zero_page, shmem_enabled");

	use_fixture("no-such-generation");
	ok(thp_model_read(&m) == -ENOENT, "no THP directory: -ENOENT");
}

/* writes go to a scratch copy of a fixture */
static void test_writes(void)
{
	char tmpl[] = "/tmp/thp-model-XXXXXX", cmd[PATH_MAX * 2 + 32], path[PATH_MAX], buf[128];
	struct thp_model m;
	FILE *f;

	if (!mkdtemp(tmpl)) {
		ok(false, "mkdtemp: %s", strerror(errno));
		return;
	}
	snprintf(cmd, sizeof(cmd), "cp -r '%s/6.12/sys' '%s/'", fixtures, tmpl);
	if (system(cmd) != 0) {
		ok(false, "copy the 6.12 fixture");
		return;
	}
	thp_set_root(tmpl);
	ok(thp_model_read(&m) == 0 && thp_knob_set(&m, THP_KNOB_SIZE_ENABLED, 64, "always") == 0,
	   "set 64K always");
	snprintf(path, sizeof(path), "%s" THP_SYSFS_DIR "/hugepages-64kB/enabled", tmpl);
	f = fopen(path, "r");
	ok(f && fgets(buf, sizeof(buf), f) && strcmp(buf, "always") == 0,
	   "the word reached hugepages-64kB/enabled");
	if (f)
		fclose(f);
	ok(thp_knob_set(&m, THP_KNOB_SHMEM_ENABLED, 0, "deny") == 0, "set shmem_enabled deny");
	/* a fake file holds the bare word: it no longer parses as a choice */
	ok(thp_model_read(&m) == -EBADMSG, "a knob without brackets is reported, not guessed");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpl);
	ok(system(cmd) == 0, "cleanup");
}

int main(void)
{
	fixtures = getenv("THP_FIXTURES");
	if (!fixtures)
		fixtures = "tests/host/fixtures";
	test_choice();
	test_knowledge();
	test_effective();
	test_sizes();
	test_generations();
	test_writes();
	return tap_done();
}
