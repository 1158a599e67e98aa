// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * thpd's adaptive state machine (hysteresis, calm period, what a size steps
 * down to), the persisted state file (format with shmem_enabled and sizes,
 * atomic save), the originals file's format and socket authorization, on
 * fixtures.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../daemon/adaptive.h"
#include "../../daemon/originals.h"
#include "../../daemon/persist.h"
#include "../../daemon/server.h"
#include "tap.h"

#define S 1000000ULL

static void test_adaptive(void)
{
	struct thpd_config cfg;
	struct thpd_adaptive_config *c = &cfg.adaptive;
	struct thpd_adaptive a;

	thpd_config_defaults(&cfg);
	c->min_free_blocks = 10;
	c->recover_free_blocks = 20;
	c->calm_usec = 5 * S;
	thpd_adaptive_init(&a);

	ok(thpd_adaptive_pressure(&a, c, 1 * S) == THPD_ACT_NONE && a.switches == 0,
	   "disabled: pressure does nothing");
	c->enabled = true;
	ok(thpd_adaptive_blocks(&a, c, 50, 1 * S) == THPD_ACT_NONE, "plenty of free blocks: nothing");
	ok(thpd_adaptive_deadline(&a, c) == 0, "no deadline while normal");
	ok(thpd_adaptive_pressure(&a, c, 2 * S) == THPD_ACT_STEP_DOWN &&
	   a.state == THPD_ASTATE_STEPPED_DOWN && a.switches == 1 && strstr(a.reason, "pressure"),
	   "pressure event: step down, reason '%s'", a.reason);
	ok(thpd_adaptive_pressure(&a, c, 3 * S) == THPD_ACT_NONE && a.switches == 1,
	   "more pressure while stepped down: no second switch");
	ok(thpd_adaptive_deadline(&a, c) == 8 * S, "calm deadline restarts at the last event");
	ok(thpd_adaptive_tick(&a, c, 7 * S) == THPD_ACT_NONE, "not calm long enough yet");
	ok(thpd_adaptive_tick(&a, c, 8 * S) == THPD_ACT_STEP_UP && a.state == THPD_ASTATE_NORMAL &&
	   a.switches == 2, "calm period over: step up (%s)", a.reason);

	ok(thpd_adaptive_blocks(&a, c, 9, 10 * S) == THPD_ACT_STEP_DOWN && strstr(a.reason, "9 free"),
	   "fragmentation below MinFreeBlocks: step down (%s)", a.reason);
	ok(thpd_adaptive_blocks(&a, c, 15, 16 * S) == THPD_ACT_NONE,
	   "hysteresis: above MinFreeBlocks but below RecoverFreeBlocks after the calm period: stay");
	ok(thpd_adaptive_tick(&a, c, 17 * S) == THPD_ACT_NONE, "... the timer agrees");
	ok(thpd_adaptive_blocks(&a, c, 25, 18 * S) == THPD_ACT_STEP_UP && a.switches == 4,
	   "recovered and calm: step up");
	ok(thpd_adaptive_blocks(&a, c, 15, 19 * S) == THPD_ACT_NONE,
	   "between the thresholds while normal: no switch (no flapping)");

	c->min_free_blocks = 0;
	thpd_adaptive_init(&a);
	ok(thpd_adaptive_blocks(&a, c, 0, 1 * S) == THPD_ACT_NONE, "MinFreeBlocks=0 disables the check");
	ok(thpd_adaptive_pressure(&a, c, 2 * S) == THPD_ACT_STEP_DOWN, "pressure still steps down");
	ok(thpd_adaptive_tick(&a, c, 7 * S) == THPD_ACT_STEP_UP, "and calm alone steps up");

	/* a size's own enabled steps as the top level does: to the lower of it and StepDownMode= */
	ok(strcmp(thpd_adaptive_size_step("always", THP_MADVISE), "madvise") == 0 &&
	   strcmp(thpd_adaptive_size_step("always", THP_NEVER), "never") == 0 &&
	   strcmp(thpd_adaptive_size_step("madvise", THP_NEVER), "never") == 0,
	   "a size at always (or madvise under StepDownMode=never) steps down");
	ok(!thpd_adaptive_size_step("madvise", THP_MADVISE) && !thpd_adaptive_size_step("never", THP_MADVISE) &&
	   !thpd_adaptive_size_step("always", THP_ALWAYS),
	   "a size at or below StepDownMode= stays");
	ok(!thpd_adaptive_size_step("inherit", THP_NEVER) && !thpd_adaptive_size_step(NULL, THP_NEVER) &&
	   !thpd_adaptive_size_step("bogus", THP_NEVER),
	   "inherit follows the top level (which steps itself); no value or an unknown word: left");
}

static void test_persist(void)
{
	struct thpd_persist p, q;
	char dir[] = "/tmp/thpd-state-XXXXXX", path[128], *text;
	struct stat st;

	ok(thpd_persist_parse("{\"version\":1,\"enabled\":\"madvise\",\"defrag\":null}", &p) == 0 &&
	   strcmp(p.enabled, "madvise") == 0 && p.defrag[0] == '\0', "state parses");
	ok(thpd_persist_parse("{\"version\":1,\"enabled\":\"sometimes\"}", &p) == -EBADMSG &&
	   thpd_persist_empty(&p), "invalid value rejected, nothing kept");
	ok(thpd_persist_parse("{\"version\":2,\"enabled\":\"never\"}", &p) == -EBADMSG, "unknown version rejected");
	ok(thpd_persist_parse("garbage", &p) == -EBADMSG, "garbage rejected");
	ok(thpd_persist_parse("{\"version\":1,\"defrag\":5}", &p) == -EBADMSG, "wrong type rejected");

	strcpy(p.enabled, "never");
	strcpy(p.defrag, "defer+madvise");
	text = thpd_persist_format(&p);
	ok(text && thpd_persist_parse(text, &q) == 0 && strcmp(q.enabled, "never") == 0 &&
	   strcmp(q.defrag, "defer+madvise") == 0, "format and parse round-trip: %s", text);
	free(text);

	if (!mkdtemp(dir)) {
		ok(0, "mkdtemp: %m");
		return;
	}
	ok(thpd_persist_load(dir, &q) == -ENOENT, "nothing persisted yet: -ENOENT");
	ok(thpd_persist_save(dir, &p) == 0, "save");
	ok(thpd_persist_load(dir, &q) == 0 && strcmp(q.enabled, "never") == 0, "load what was saved");
	snprintf(path, sizeof(path), "%s/.state.tmp", dir);
	ok(stat(path, &st) < 0 && errno == ENOENT, "no temporary file left behind");
	strcpy(p.enabled, "always");
	ok(thpd_persist_save(dir, &p) == 0 && thpd_persist_load(dir, &q) == 0 &&
	   strcmp(q.enabled, "always") == 0, "a second save replaces the first");
	snprintf(path, sizeof(path), "%s/state", dir);
	unlink(path);
	rmdir(dir);
	ok(thpd_persist_save(dir, &p) == -ENOENT, "save into a missing directory fails with -ENOENT");
}

/* shmem_enabled and the sizes in the state file: round trip, refusals, old files */
static void test_persist_sizes(void)
{
	struct thpd_persist p, q;
	char dir[] = "/tmp/thpd-state-XXXXXX", path[128], *text;

	memset(&p, 0, sizeof(p));
	strcpy(p.enabled, "madvise");
	strcpy(p.shmem, "within_size");
	strcpy(thpd_persist_size(&p, 2048, true)->enabled, "inherit");
	strcpy(thpd_persist_size(&p, 64, true)->enabled, "always");
	strcpy(thpd_persist_size(&p, 64, true)->shmem, "advise");
	strcpy(thpd_persist_size(&p, 16, true)->shmem, "never");
	ok(p.n_sizes == 3 && p.sizes[0].kib == 16 && p.sizes[1].kib == 64 && p.sizes[2].kib == 2048,
	   "sizes are kept ascending, one entry each");
	text = thpd_persist_format(&p);
	ok(text && strcmp(text, "{\"version\":1,\"enabled\":\"madvise\",\"defrag\":null,"
			  "\"shmem_enabled\":\"within_size\",\"sizes\":{"
			  "\"16K\":{\"enabled\":null,\"shmem_enabled\":\"never\"},"
			  "\"64K\":{\"enabled\":\"always\",\"shmem_enabled\":\"advise\"},"
			  "\"2M\":{\"enabled\":\"inherit\",\"shmem_enabled\":null}}}") == 0,
	   "the documented format: %s", text ? text : "(null)");
	ok(text && thpd_persist_parse(text, &q) == 0 && memcmp(&p, &q, sizeof(p)) == 0,
	   "format and parse round-trip, sizes and shmem_enabled included");
	free(text);
	ok(thpd_persist_parse("{\"version\":1,\"enabled\":\"never\",\"defrag\":null}", &q) == 0 &&
	   strcmp(q.enabled, "never") == 0 && !q.shmem[0] && q.n_sizes == 0,
	   "a state file of an earlier thpd (no shmem_enabled, no sizes) still loads");
	ok(thpd_persist_parse("{\"version\":1,\"sizes\":{\"64K\":{\"enabled\":\"within_size\"}}}", &q) ==
	   -EBADMSG && thpd_persist_empty(&q), "a shmem word as a size's enabled: refused, nothing kept");
	ok(thpd_persist_parse("{\"version\":1,\"sizes\":{\"64K\":{\"shmem_enabled\":\"deny\"}}}", &q) ==
	   -EBADMSG, "deny (top-level only) as a size's shmem_enabled: refused");
	ok(thpd_persist_parse("{\"version\":1,\"shmem_enabled\":\"inherit\"}", &q) == -EBADMSG,
	   "inherit as the top-level shmem_enabled: refused");
	ok(thpd_persist_parse("{\"version\":1,\"sizes\":{\"63K\":{\"enabled\":\"always\"}}}", &q) == -EBADMSG &&
	   thpd_persist_parse("{\"version\":1,\"sizes\":{\"2048K\":{\"enabled\":\"always\"}}}", &q) == -EBADMSG &&
	   thpd_persist_parse("{\"version\":1,\"sizes\":{\"2G\":{\"enabled\":\"always\"}}}", &q) == -EBADMSG,
	   "a size that is not one, or not spelt as thpd writes it: refused");
	ok(thpd_persist_parse("{\"version\":1,\"sizes\":[]}", &q) == -EBADMSG &&
	   thpd_persist_parse("{\"version\":1,\"sizes\":{\"64K\":\"always\"}}", &q) == -EBADMSG,
	   "sizes of the wrong type: refused");
	ok(thpd_persist_parse("{\"version\":1,\"sizes\":{\"64K\":{\"enabled\":null}}}", &q) == 0 &&
	   q.n_sizes == 0 && thpd_persist_empty(&q), "a size with nothing set is dropped");

	if (!mkdtemp(dir)) {
		ok(0, "mkdtemp: %m");
		return;
	}
	for (unsigned long kib = 8; kib <= 1024 * 1024 && p.n_sizes < THP_SIZES_MAX; kib <<= 1) {
		strcpy(thpd_persist_size(&p, kib, true)->enabled, "madvise");
		strcpy(thpd_persist_size(&p, kib, true)->shmem, "within_size");
	}
	ok(p.n_sizes == THP_SIZES_MAX && !thpd_persist_size(&p, 1, true), "at most THP_SIZES_MAX sizes");
	ok(thpd_persist_save(dir, &p) == 0 && thpd_persist_load(dir, &q) == 0 &&
	   memcmp(&p, &q, sizeof(p)) == 0, "a state with every size set saves and loads whole");
	snprintf(path, sizeof(path), "%s/state", dir);
	unlink(path);
	rmdir(dir);
}

static void test_originals(void)
{
	struct thpd_originals o, q;
	char *text;

	ok(thpd_originals_parse("enabled always\ndefrag defer\npages_to_scan 512\nbogus 1\n"
				"enabled sometimes\n", &o) == 0 &&
	   o.have_enabled && strcmp(o.enabled, "always") == 0 && o.have_defrag &&
	   strcmp(o.defrag, "defer") == 0 && o.have_kh[THPD_KH_PAGES_TO_SCAN] &&
	   o.kh[THPD_KH_PAGES_TO_SCAN] == 512 && !o.have_kh[THPD_KH_DEFRAG],
	   "originals parse; unknown names and invalid words are skipped");
	text = thpd_originals_format(&o);
	ok(text && thpd_originals_parse(text, &q) == 0 && memcmp(&o, &q, sizeof(o)) == 0,
	   "originals format and parse round-trip");
	free(text);
	ok(thpd_originals_parse("enabled never\nshmem_enabled advise\nhugepages-2048kB/enabled inherit\n"
				"hugepages-64kB/enabled always\nhugepages-64kB/shmem_enabled within_size\n"
				"hugepages-16kB/shmem_enabled never\n", &o) == 0 &&
	   o.have_shmem && strcmp(o.shmem, "advise") == 0 && o.n_sizes == 3 && o.sizes[0].kib == 16 &&
	   !o.sizes[0].have_enabled && o.sizes[0].have_shmem && o.sizes[1].kib == 64 &&
	   strcmp(o.sizes[1].enabled, "always") == 0 && strcmp(o.sizes[1].shmem, "within_size") == 0 &&
	   o.sizes[2].kib == 2048 && strcmp(o.sizes[2].enabled, "inherit") == 0,
	   "shmem_enabled and every size's values parse, sizes ascending");
	text = thpd_originals_format(&o);
	ok(text && strstr(text, "hugepages-64kB/shmem_enabled within_size\n") &&
	   thpd_originals_parse(text, &q) == 0 && memcmp(&o, &q, sizeof(o)) == 0,
	   "with sizes: format and parse round-trip");
	free(text);
	ok(thpd_originals_parse("hugepages-64kB/enabled within_size\nhugepages-64kB/shmem_enabled deny\n"
				"hugepages-064kB/enabled always\nhugepages-64KB/enabled always\n"
				"hugepages-64kB/defrag always\nhugepages-kB/enabled always\n"
				"shmem_enabled inherit\n", &o) == 0 && o.n_sizes == 0 && !o.have_shmem,
	   "a word the knob never takes, a name thpd never writes: skipped");
	ok(thpd_originals_parse("enabled madvise-and-more-than-sixteen\n", &o) == 0 && !o.have_enabled,
	   "an over-long word is not taken");
	ok(thpd_originals_parse("pages_to_scan 4096000000000000000000000000000000000000000\n"
				"scan_sleep_millisecs 10x\nmax_ptes_none  511\n", &o) == 0 &&
	   !o.have_kh[THPD_KH_PAGES_TO_SCAN] && !o.have_kh[THPD_KH_SCAN_SLEEP] &&
	   !o.have_kh[THPD_KH_MAX_PTES_NONE],
	   "numbers that are too long or not exactly a number are skipped, never cut");
}

static void test_auth(void)
{
	struct thpd_config cfg;
	struct thpd_peer root = { .uid = 0, .gid = 0, .n_groups = -1 };
	struct thpd_peer user = { .uid = 1000, .gid = 1000, .n_groups = 2, .groups = { 1000, 27 } };

	thpd_config_defaults(&cfg);
	ok(thpd_peer_may_change(&cfg, &root), "root may change");
	ok(!thpd_peer_may_change(&cfg, &user), "a user may not without AdminGroup=");
	cfg.has_admin_gid = true;
	cfg.admin_gid = 27;
	ok(thpd_peer_may_change(&cfg, &user), "a member of AdminGroup= (supplementary) may");
	cfg.admin_gid = 1000;
	user.n_groups = 0;
	ok(thpd_peer_may_change(&cfg, &user), "primary group counts");
	cfg.admin_gid = 5;
	ok(!thpd_peer_may_change(&cfg, &user), "another group does not");
}

int main(void)
{
	test_adaptive();
	test_persist();
	test_persist_sizes();
	test_originals();
	test_auth();
	return tap_done();
}
