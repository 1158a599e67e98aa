// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * thpd's state machine (adaptive.h): its table of every event in every
 * state, what the host holds after each; hysteresis, calm period, what a
 * size steps down to. The persisted state file (format with shmem_enabled
 * and sizes, atomic save), the originals file's format and socket
 * authorization. All on fixtures: nothing here reads a kernel.
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

/*
 * The state table. One host: enabled=always defrag=madvise shmem_enabled=never,
 * 64K=never, 2M=inherit, pages_to_scan=4096 before thpd; a configuration
 * with neither Mode= nor Defrag= (thpd keeps the host's), [Size 64K]
 * Enabled=always, KhugepagedPagesToScan=1234, adaptive switching on. A row
 * puts the machine in a state (N normal, S stepped down, U normal after a
 * step-up), runs its events in order and checks what the host is to hold
 * ("enabled defrag shmem_enabled 64K 2M pages_to_scan") and the state.
 */
#define T_TARGET "always madvise never always inherit 1234 normal"
#define T_STEPPED "madvise defer never madvise inherit 1234 stepped-down"
#define T_ORIGINALS "always madvise never never inherit 4096"

static struct {
	struct thpd_config cfg;
	struct thpd_persist persist;
	struct thp_cmdline cmdline;
	struct thpd_originals originals;
	struct thpd_machine m;
	uint64_t now;
	struct thpd_target out;	/* what a stop writes */
	bool stop_writes;
	bool stopped;
} w;

static void world_config(const char *extra)
{
	char text[512];
	struct thpd_diag quiet = { 0 };

	snprintf(text, sizeof(text),
		 "[Global]\nKhugepagedPagesToScan=1234\n%s\n[Size 64K]\nEnabled=always\n"
		 "[Adaptive]\nEnabled=yes\nMinFreeBlocks=10\nRecoverFreeBlocks=20\nCalmSec=5\n", extra);
	thpd_config_defaults(&w.cfg);
	thpd_config_parse_string(&w.cfg, "table.conf", text, &quiet);
	thpd_config_finish(&w.cfg, NULL, &quiet);
}

static struct thpd_inputs world_inputs(void)
{
	return (struct thpd_inputs){ .cfg = &w.cfg, .persist = &w.persist, .cmdline = &w.cmdline,
				     .originals = &w.originals };
}

/* start a machine and bring it into state N, S or U */
static void world_start(char state)
{
	struct thpd_inputs in;

	memset(&w, 0, sizeof(w));
	world_config("");
	thpd_originals_parse("enabled always\ndefrag madvise\nshmem_enabled never\n"
			     "hugepages-64kB/enabled never\nhugepages-2048kB/enabled inherit\n"
			     "pages_to_scan 4096\n", &w.originals);
	thp_cmdline_parse("BOOT_IMAGE=/vmlinuz root=/dev/vda ro\n", 0, &w.cmdline);
	in = world_inputs();
	thpd_machine_start(&w.m, &in);
	w.now = 100 * S;
	if (state == 'S' || state == 'U')
		thpd_adaptive_pressure(&w.m.adaptive, &w.cfg.adaptive, w.now);
	if (state == 'U') {
		w.now += 5 * S;
		thpd_adaptive_tick(&w.m.adaptive, &w.cfg.adaptive, w.now);
	}
}

/* an administrator's change: the persisted state, then the machine */
static void world_set(enum thp_knob_id knob, unsigned long kib, const char *value)
{
	struct thpd_inputs in;

	if (knob == THP_KNOB_ENABLED)
		snprintf(w.persist.enabled, sizeof(w.persist.enabled), "%s", value);
	else if (knob == THP_KNOB_DEFRAG)
		snprintf(w.persist.defrag, sizeof(w.persist.defrag), "%s", value);
	else if (knob == THP_KNOB_SHMEM_ENABLED)
		snprintf(w.persist.shmem, sizeof(w.persist.shmem), "%s", value);
	else
		snprintf(thpd_persist_size(&w.persist, kib, true)->enabled, 16, "%s", value);
	in = world_inputs();
	thpd_machine_set(&w.m, &in, thpd_knob_stepped(knob));
}

static void world_event(const char *ev)
{
	struct thpd_inputs in = world_inputs();

	if (strcmp(ev, "reload") == 0) {
		thpd_machine_start(&w.m, &in);
	} else if (strcmp(ev, "reload-Mode=never") == 0) {
		world_config("Mode=never");
		thpd_machine_start(&w.m, &in);
	} else if (strcmp(ev, "enable-never") == 0) {
		world_set(THP_KNOB_ENABLED, 0, "never");
	} else if (strcmp(ev, "defrag-never") == 0) {
		world_set(THP_KNOB_DEFRAG, 0, "never");
	} else if (strcmp(ev, "64K-never") == 0) {
		world_set(THP_KNOB_SIZE_ENABLED, 64, "never");
	} else if (strcmp(ev, "2M-madvise") == 0) {
		world_set(THP_KNOB_SIZE_ENABLED, 2048, "madvise");
	} else if (strcmp(ev, "shmem-advise") == 0) {
		world_set(THP_KNOB_SHMEM_ENABLED, 0, "advise");
	} else if (strcmp(ev, "kh-777") == 0) {
		/* thpd_set_khugepaged(): persisted, no value of the step-down's */
		w.persist.kh_set[THPD_KH_PAGES_TO_SCAN] = true;
		w.persist.kh[THPD_KH_PAGES_TO_SCAN] = 777;
		in = world_inputs();
		thpd_machine_set(&w.m, &in, false);
	} else if (strcmp(ev, "reset") == 0) {
		memset(&w.persist, 0, sizeof(w.persist));
		thpd_machine_set(&w.m, &in, true);
	} else if (strcmp(ev, "crash") == 0) {
		/* a new process: nothing of the old machine, the same files */
		memset(&w.m, 0xa5, sizeof(w.m));
		thpd_machine_start(&w.m, &in);
	} else if (strncmp(ev, "stop-", 5) == 0) {
		enum thpd_stop how = strcmp(ev, "stop-restore") == 0 ? THPD_STOP_RESTORE :
				     strcmp(ev, "stop-keep") == 0 ? THPD_STOP_KEEP : THPD_STOP_HANDOVER;

		w.stop_writes = thpd_machine_stop(&w.m, how, &w.originals, &w.out);
		w.stopped = true;
	} else if (strcmp(ev, "pressure") == 0) {
		w.now += S;
		thpd_adaptive_pressure(&w.m.adaptive, &w.cfg.adaptive, w.now);
	} else if (strcmp(ev, "low-blocks") == 0) {
		w.now += S;
		thpd_adaptive_blocks(&w.m.adaptive, &w.cfg.adaptive, 3, w.now);
	} else if (strcmp(ev, "calm") == 0) {
		/* CalmSec=5 after the last trouble, blocks back above RecoverFreeBlocks= */
		w.now += 5 * S;
		thpd_adaptive_blocks(&w.m.adaptive, &w.cfg.adaptive, 25, w.now);
	} else if (strcmp(ev, "too-soon") == 0) {
		w.now += 1 * S;
		thpd_adaptive_tick(&w.m.adaptive, &w.cfg.adaptive, w.now);
	} else {
		ok(0, "unknown event %s in the table", ev);
	}
}

static const char *world_format(const struct thpd_target *v, bool state, char *buf, size_t size)
{
	const struct thpd_size_target *k64 = thpd_target_size(v, 64), *m2 = thpd_target_size(v, 2048);

	snprintf(buf, size, "%s %s %s %s %s %llu%s%s", v->enabled, v->defrag, v->shmem,
		 k64 ? k64->enabled : "-", m2 ? m2->enabled : "-",
		 (unsigned long long)v->kh[THPD_KH_PAGES_TO_SCAN], state ? " " : "",
		 state ? thpd_astate_name(w.m.adaptive.state) : "");
	return buf;
}

static void test_state_table(void)
{
	static const struct {
		char state;
		const char *events, *want;
	} rows[] = {
		/* reload: the target of the (new) configuration; a step-down ends */
		{ 'N', "reload", T_TARGET },
		{ 'S', "reload", T_TARGET },
		{ 'U', "reload", T_TARGET },
		{ 'N', "reload-Mode=never", "never madvise never always inherit 1234 normal" },
		{ 'S', "reload-Mode=never", "never madvise never always inherit 1234 normal" },
		/* the socket: a value the step-down holds ends it, the rest is the target */
		{ 'N', "enable-never", "never madvise never always inherit 1234 normal" },
		{ 'S', "enable-never", "never madvise never always inherit 1234 normal" },
		{ 'U', "enable-never", "never madvise never always inherit 1234 normal" },
		{ 'N', "defrag-never", "always never never always inherit 1234 normal" },
		{ 'S', "defrag-never", "always never never always inherit 1234 normal" },
		{ 'U', "defrag-never", "always never never always inherit 1234 normal" },
		{ 'N', "64K-never", "always madvise never never inherit 1234 normal" },
		{ 'S', "64K-never", "always madvise never never inherit 1234 normal" },
		{ 'S', "2M-madvise", "always madvise never always madvise 1234 normal" },
		/* shmem_enabled is no value of the step-down's: it stays */
		{ 'N', "shmem-advise", "always madvise advise always inherit 1234 normal" },
		{ 'S', "shmem-advise", "madvise defer advise madvise inherit 1234 stepped-down" },
		{ 'U', "shmem-advise", "always madvise advise always inherit 1234 normal" },
		/* khugepaged through the socket: the target's, and no step-down's value */
		{ 'N', "kh-777", "always madvise never always inherit 777 normal" },
		{ 'S', "kh-777", "madvise defer never madvise inherit 777 stepped-down" },
		{ 'U', "kh-777", "always madvise never always inherit 777 normal" },
		{ 'S', "kh-777 calm", "always madvise never always inherit 777 normal" },
		{ 'S', "kh-777 crash", "always madvise never always inherit 777 normal" },
		{ 'S', "kh-777 reset", T_TARGET },
		{ 'N', "kh-777 stop-restore", T_ORIGINALS },
		/* reset: the administrator's values forgotten */
		{ 'N', "enable-never defrag-never reset", T_TARGET },
		{ 'S', "enable-never pressure reset", T_TARGET },
		{ 'S', "reset", T_TARGET },
		{ 'U', "64K-never reset", T_TARGET },
		/* a crash and systemd's restart: the same inputs, the same target */
		{ 'N', "crash", T_TARGET },
		{ 'S', "crash", T_TARGET },
		{ 'U', "crash", T_TARGET },
		{ 'S', "reload crash", T_TARGET },
		{ 'S', "enable-never crash", "never madvise never always inherit 1234 normal" },
		/* pressure and fragmentation: down to the overlay, once */
		{ 'N', "pressure", T_STEPPED },
		{ 'S', "pressure", T_STEPPED },
		{ 'U', "pressure", T_STEPPED },
		{ 'N', "low-blocks", T_STEPPED },
		{ 'N', "enable-never pressure", "never defer never madvise inherit 1234 stepped-down" },
		{ 'N', "shmem-advise pressure", "madvise defer advise madvise inherit 1234 stepped-down" },
		/* calm: back to the target, however it changed meanwhile */
		{ 'N', "calm", T_TARGET },
		{ 'S', "calm", T_TARGET },
		{ 'S', "too-soon", T_STEPPED },
		{ 'S', "shmem-advise calm", "always madvise advise always inherit 1234 normal" },
		{ 'S', "reload pressure calm", T_TARGET },
		{ 'U', "calm", T_TARGET },
		/* stop: the originals, or the target, or nothing for an upgrade */
		{ 'N', "stop-restore", T_ORIGINALS },
		{ 'S', "stop-restore", T_ORIGINALS },
		{ 'U', "stop-restore", T_ORIGINALS },
		{ 'N', "stop-keep", T_TARGET },
		{ 'S', "stop-keep", T_TARGET },
		{ 'S', "reload pressure stop-keep", T_TARGET },
		{ 'U', "stop-keep", T_TARGET },
		{ 'N', "stop-handover", "nothing" },
		{ 'S', "stop-handover", "nothing" },
		{ 'U', "stop-handover", "nothing" },
	};
	char buf[256], events[128], *save, *ev;
	struct thpd_target held;
	unsigned long switches;

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		world_start(rows[i].state);
		switches = w.m.adaptive.switches;
		snprintf(events, sizeof(events), "%s", rows[i].events);
		for (ev = strtok_r(events, " ", &save); ev; ev = strtok_r(NULL, " ", &save))
			world_event(ev);
		if (w.stopped && !w.stop_writes)
			snprintf(buf, sizeof(buf), "nothing");
		else if (w.stopped)
			world_format(&w.out, strcmp(rows[i].events + strlen(rows[i].events) - 7,
						    "restore") != 0, buf, sizeof(buf));
		else
			world_format((thpd_machine_held(&w.m, &w.cfg.adaptive, &held), &held), true, buf,
				     sizeof(buf));
		ok(strcmp(buf, rows[i].want) == 0, "%c, %s: %s%s%s", rows[i].state, rows[i].events,
		   rows[i].want, strcmp(buf, rows[i].want) ? ", got " : "",
		   strcmp(buf, rows[i].want) ? buf : "");
		if (strcmp(rows[i].events, "pressure") == 0 && rows[i].state == 'S')
			ok(w.m.adaptive.switches == switches, "S, pressure: no second switch (%lu)",
			   w.m.adaptive.switches);
	}
}

/* the overlay alone: the lower of each value and StepDownMode=, sources said */
static void test_overlay(void)
{
	struct thpd_target t, o;
	struct thpd_adaptive_config c = { .step_down_enabled = THP_NEVER };

	memset(&t, 0, sizeof(t));
	strcpy(t.enabled, "madvise");
	strcpy(t.defrag, "madvise");
	t.rfc = 0;
	t.n_sizes = 2;
	t.sizes[0].kib = 64;
	strcpy(t.sizes[0].enabled, "inherit");
	t.sizes[1].kib = 2048;
	strcpy(t.sizes[1].enabled, "madvise");
	thpd_overlay(&t, &c, &o);
	ok(strcmp(o.enabled, "never") == 0 && strcmp(o.enabled_src, "step-down") == 0 &&
	   strcmp(o.defrag, "madvise") == 0 && !o.defrag_src && o.rfc == -1 &&
	   strcmp(o.sizes[0].enabled, "inherit") == 0 && strcmp(o.sizes[1].enabled, "never") == 0,
	   "StepDownMode=never, StepDownDefrag= empty: enabled and madvise sizes never, defrag and inherit stay");
	c.step_down_enabled = THP_ALWAYS;
	strcpy(c.step_down_defrag, "madvise");
	thpd_overlay(&t, &c, &o);
	ok(memcmp(&t, &o, sizeof(t)) == 0, "an overlay that changes nothing leaves the target whole (the number too)");
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
	test_overlay();
	test_state_table();
	test_persist();
	test_persist_sizes();
	test_originals();
	test_auth();
	return tap_done();
}
