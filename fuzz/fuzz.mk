# libFuzzer targets (clang, -fsanitize=fuzzer,address,undefined) for every
# parser that reads untrusted or administrator text:
#   proto   the thpd socket protocol (lib/thp-proto.c)
#   mode    libthp's word and sysfs/procfs text parsers (lib/thp-mode.c, thp-sysfs.c, thp-proc.c)
#   config  thpd.conf and drop-ins, and rule matching (daemon/config.c, rules.c)
#   state   thpd's state file, /proc/PID/cgroup (daemon/persist.c, originals.c, rules.c)
#   cmdline /proc/cmdline as the kernel reads it (lib/thp-cmdline.c); seeded from the table
#           of cases tests/host/fixtures/cmdline.txt as well, one case a file
#   request thpd's request handler behind the parser, as root and as a user, on a fake sysfs tree
#   cn      the proc connector datagrams of thpd's exec events (daemon/exec-events.c)
#   smaps   /proc/PID/smaps and pagemap as the collapse engine reads them (lib/thp-collapse.c)
# Each runs from its committed corpus fuzz/corpus/NAME (new inputs go to
# build/fuzz/work/NAME, never into the repository).
#
#   make fuzz               FUZZ_SECONDS (default 30) per target
#   make fuzz-smoke         the corpus, then FUZZ_SMOKE_SECONDS (default 5) per target
#   make fuzz-NAME          one target
# A crash (or a leak, a sanitizer report, a 10 s timeout) fails the run; the
# input is kept in build/fuzz/artifacts/ and the command to replay it printed.

FUZZ_CC ?= clang
FUZZ_SECONDS ?= 30
FUZZ_SMOKE_SECONDS ?= 5
FUZZ_TARGETS := proto mode config state request cn cmdline smaps
FUZZ_OUT := build/fuzz
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_CFLAGS = -std=gnu11 -g -O1 -fno-omit-frame-pointer -Wall -Wextra -Werror -D_GNU_SOURCE \
	-DTHP_VERSION='"$(VERSION)"' -Ilib -Idaemon $(PKG_CFLAGS)
# daemon/exec-events.c embeds struct cn_msg (netlink connector), fine for gcc
FUZZ_CFLAGS += -Wno-gnu-variable-sized-type-not-at-end -MMD -MP

# code under test: coverage instrumentation without libFuzzer's main
$(FUZZ_OUT)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_SAN) -fsanitize=fuzzer-no-link -c $< -o $@

FUZZ_LIB_OBJS := $(patsubst %.c,$(FUZZ_OUT)/obj/%.o,$(wildcard lib/*.c))
FUZZ_DAEMON_OBJS := $(patsubst %.c,$(FUZZ_OUT)/obj/%.o,$(THPD_SRCS))

FUZZ_OBJS_proto := $(FUZZ_LIB_OBJS)
FUZZ_OBJS_mode := $(FUZZ_LIB_OBJS)
FUZZ_OBJS_config := $(FUZZ_DAEMON_OBJS) $(FUZZ_LIB_OBJS)
FUZZ_OBJS_state := $(FUZZ_DAEMON_OBJS) $(FUZZ_LIB_OBJS)
FUZZ_OBJS_request := $(FUZZ_DAEMON_OBJS) $(FUZZ_LIB_OBJS)
FUZZ_OBJS_cn := $(FUZZ_DAEMON_OBJS) $(FUZZ_LIB_OBJS)
FUZZ_OBJS_cmdline := $(FUZZ_LIB_OBJS)

# the table of cases the host test reads, one case a file (byte 0: '1' for
# "numbers", else '0'; then the command line, its escapes undone): extra seeds
CMDLINE_CASES := tests/host/fixtures/cmdline.txt
FUZZ_SEEDS_cmdline := $(FUZZ_OUT)/seeds/cmdline
$(FUZZ_OUT)/seeds/cmdline: $(CMDLINE_CASES)
	@rm -rf $@ && mkdir -p $@
	@n=0; grep -v '^#' $< | grep . | while IFS= read -r l; do \
		n=$$((n + 1)); rest=$${l#*$$'\t'}; \
		{ [ "$${l%%$$'\t'*}" = numbers ] && printf 1 || printf 0; printf '%b' "$${rest%%$$'\t'*}"; } \
			>$@/case-$$n; \
	done
	@echo "fuzz: cmdline: $$(ls $@ | wc -l) seeds from $<"
FUZZ_OBJS_smaps := $(FUZZ_LIB_OBJS)

.SECONDEXPANSION:
$(FUZZ_OUT)/fuzz-%: $(FUZZ_OUT)/obj/fuzz/fuzz-%.o $$(FUZZ_OBJS_$$*) | $$(FUZZ_SEEDS_$$*)
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^ $(THP_LIBS)

FUZZ_BINS := $(FUZZ_TARGETS:%=$(FUZZ_OUT)/fuzz-%)

fuzz-build: $(FUZZ_BINS)

# run-fuzz NAME SECONDS: fuzz from the committed corpus, print the executions
define run-fuzz
	@mkdir -p $(FUZZ_OUT)/work/$(1) $(FUZZ_OUT)/artifacts $(FUZZ_OUT)/logs
	@log=$(FUZZ_OUT)/logs/$(1).log; \
	dict=; [ -f fuzz/$(1).dict ] && dict=-dict=fuzz/$(1).dict; \
	if $(FUZZ_OUT)/fuzz-$(1) -max_total_time=$(2) -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix=$(FUZZ_OUT)/artifacts/$(1)- $$dict \
		$(FUZZ_OUT)/work/$(1) fuzz/corpus/$(1) $(FUZZ_SEEDS_$(1)) >$$log 2>&1; then \
		execs=$$(sed -n 's/^stat::number_of_executed_units: *//p' $$log); \
		cov=$$(grep -o 'cov: [0-9]*' $$log | tail -1); \
		kept=$$(ls fuzz/corpus/$(1) | wc -l); found=$$(ls $(FUZZ_OUT)/work/$(1) | wc -l); \
		echo "fuzz: $(1): $$execs executions in $(2) s, $$cov, corpus $$kept committed + $$found found, 0 crashes"; \
	else \
		echo "fuzz: $(1): FAILED (log: $$log)"; \
		grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error|artifact_prefix|Test unit written)' $$log | head -8; \
		echo "replay: $(FUZZ_OUT)/fuzz-$(1) $(FUZZ_OUT)/artifacts/$(1)-*"; \
		exit 1; \
	fi
endef

# every committed corpus input once: a regression test, about a second
define run-corpus
	@$(FUZZ_OUT)/fuzz-$(1) -runs=0 fuzz/corpus/$(1) $(FUZZ_SEEDS_$(1)) >$(FUZZ_OUT)/logs/$(1)-corpus.log 2>&1 || \
		{ echo "fuzz: $(1): a corpus input fails (log: $(FUZZ_OUT)/logs/$(1)-corpus.log)"; \
		  grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error)' $(FUZZ_OUT)/logs/$(1)-corpus.log | head -8; exit 1; }
	@echo "fuzz: $(1): $$(find fuzz/corpus/$(1) $(FUZZ_SEEDS_$(1)) -type f | wc -l) corpus inputs replayed, 0 crashes"
endef

# one target each, in order (a crash stops the run)
$(FUZZ_TARGETS:%=fuzz-%): fuzz-%: $(FUZZ_OUT)/fuzz-%
	$(call run-fuzz,$*,$(FUZZ_SECONDS))

$(FUZZ_TARGETS:%=fuzz-smoke-%): fuzz-smoke-%: $(FUZZ_OUT)/fuzz-%
	@mkdir -p $(FUZZ_OUT)/logs
	$(call run-corpus,$*)
	$(call run-fuzz,$*,$(FUZZ_SMOKE_SECONDS))

fuzz: $(FUZZ_TARGETS:%=fuzz-%)

fuzz-smoke: $(FUZZ_TARGETS:%=fuzz-smoke-%)

.PHONY: fuzz fuzz-smoke fuzz-build $(FUZZ_TARGETS:%=fuzz-%) $(FUZZ_TARGETS:%=fuzz-smoke-%)
