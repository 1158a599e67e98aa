# The guest: packages, the cached kernels and image, the per-run payload, and
# every target that boots it (vm, vm-exec, demo, check-guest, check,
# check-debug, bench) or checks a kernel series (checkpatch, check-series).
# docs/testing.md says what each boot runs and what it costs.

# VM=... extra arguments for tests/vm/run-guest.sh (e.g. VM="--kvm")
VM ?=
# BASE=6.1 (the default) or 6.12: which series (kernel/BASE/thp.patch on
# linux-source-BASE) every guest target builds and boots, and what kernel,
# check-series and bench build: make check-guest BASE=6.12 SUITES="20-modes.bats"
BASE ?= 6.1
BASES := 6.1 6.12
ifeq ($(filter $(BASE),$(BASES)),)
$(error BASE=$(BASE): the bases are $(BASES))
endif
# STOCK=6.1 or 6.12: boot Debian's own stock cloud kernel of that series (the
# newest apt offers, with its initrd, on the stock image) instead of ours, in
# any guest target: make check-guest STOCK=6.12 SUITES="40-thpctl.bats"
STOCK ?=
KERNEL_ENV = THP_CACHE=$(THP_CACHE) THP_BASE=$(BASE)
RUN_GUEST = $(KERNEL_ENV) tests/vm/run-guest.sh --payload $(BUILD)/payload $(if $(STOCK),--stock $(STOCK)) $(VM)
# what a boot needs built: our kernel and image, or the stock image
GUEST_OS = $(if $(STOCK),stock-image,kernel image)
# check-stock boots each of these with every suite
STOCK_SERIES := 6.1 6.12
# make check's stock boot: these suites on stock 6.12 (after-reboot suites,
# reboot/..., run after a reboot). A suite for 6.12 features adds itself here.
STOCK_CHECK_SUITES := 40-thpctl.bats 41-thpctl-mthp.bats 50-thpd-service.bats 51-thpd-config.bats \
	52-thpd-socket.bats 53-thpd-adaptive.bats 54-thpd-rules.bats 72-thpd-faults.bats \
	81-metrics.bats 99-thpd-reboot-prep.bats reboot/50-thpd-persist.bats
# make check's boot of the patched 6.12 kernel: the kernel suites, the
# 6.12 series' own (27: the mTHP matrix, 28: upstream's selftests/mm), the
# stress suite (COW, splits, collapse, swap, mode and policy flips on the
# series), and the policy suites whose paths differ where the series is
# there (41: the CLI's per-size view, 42: a unit's policy through the
# kernel rather than glibc's tunable, 54: thpd's rules applying thp_policy,
# 55: every case of the collapse, which needs per-size controls and
# fail_page_alloc). thpd's other suites run on stock 6.12 above and on
# patched 6.1 (every suite), and read and write the same sysfs files here.
# A suite for the 6.12 series adds itself here.
BASE612_CHECK_SUITES := 10-modes.bats 11-invalid-writes.bats 12-back-to-back.bats 20-modes.bats \
	21-thp-stat.bats 22-rfc-behaviours.bats 23-thp-policy.bats 24-review.bats 25-kselftests.bats \
	26-review-v3.bats 27-mthp-matrix.bats 28-mm-selftests.bats 40-thpctl.bats 41-thpctl-mthp.bats \
	42-thpctl-unit.bats 54-thpd-rules.bats 55-thpd-collapse.bats 70-stress.bats
# make check boots each patched kernel twice, at once where it can
# (tests/vm/check.sh): patched 6.1 with BASE61_FIRST_SUITES (the kernel, CLI
# and stress suites), then with every other suite (thpd's, the package's, the
# after-reboot ones); patched 6.12 with BASE612_FIRST_SUITES (the kernel
# suites and the stress suite), then with the rest of BASE612_CHECK_SUITES.
# The first halves are the boots with two vCPUs (the races and the stress),
# the second ones have one (tests/vm/check.sh says why).
BASE61_FIRST_SUITES := 10-modes.bats 11-invalid-writes.bats 12-back-to-back.bats 20-modes.bats \
	21-thp-stat.bats 22-rfc-behaviours.bats 23-thp-policy.bats 24-review.bats 25-kselftests.bats \
	26-review-v3.bats 27-mthp-matrix.bats 28-mm-selftests.bats 40-thpctl.bats 41-thpctl-mthp.bats \
	42-thpctl-unit.bats 70-stress.bats
BASE612_FIRST_SUITES := 10-modes.bats 11-invalid-writes.bats 12-back-to-back.bats 20-modes.bats \
	21-thp-stat.bats 22-rfc-behaviours.bats 23-thp-policy.bats 24-review.bats 25-kselftests.bats \
	26-review-v3.bats 27-mthp-matrix.bats 28-mm-selftests.bats 70-stress.bats
# the second boot's test: mode 2 from the kernel command line
MODE2_REGEX := command line
MODE2_FILTER := --filter '$(MODE2_REGEX)'

deps:
	tests/vm/deps.sh

# quiet when everything is installed, so it costs nothing on a warm machine
deps-quiet:
	@tests/vm/deps.sh --quiet

# THP_KERNEL=path/to/bzImage: boot that kernel instead (kernel development)
kernel:
ifeq ($(THP_KERNEL),)
	$(KERNEL_ENV) tests/vm/build-kernel.sh
else
	@echo "kernel: using THP_KERNEL=$(THP_KERNEL)"
endif

image:
	THP_CACHE=$(THP_CACHE) tests/vm/build-image.sh

# the image plus Debian's stock 6.1 and 6.12 cloud kernels and their initrds
stock-image:
	THP_CACHE=$(THP_CACHE) tests/vm/build-image.sh --stock

# What goes into the guest for one run: the Debian packages built from the
# tree (make deb; the guest installs them with apt), the suites, the
# helpers. Assembled afresh each run; never baked into the cached image. The
# same for every kernel: run-guest.sh adds the kselftests built with the
# kernel it boots (in its cache directory) to its own copy; with THP_KERNEL,
# THP_KSELFTESTS=DIR names them (25-kselftests skips without).
payload: programs deb-packages
	rm -rf $(BUILD)/payload
	mkdir -p $(BUILD)/payload/helpers $(BUILD)/payload/debs
	cp $(DEBS) $(BUILD)/payload/debs/
	$(if $(HELPERS),cp $(HELPERS) $(BUILD)/payload/helpers/)
	cp -r tests/bats $(BUILD)/payload/bats
	cp -r tests/vm/guest/run $(BUILD)/payload/guest-run
	cp -r bench $(BUILD)/payload/bench

vm: deps-quiet $(GUEST_OS) payload
	$(RUN_GUEST) --mode shell

vm-exec: deps-quiet $(GUEST_OS) payload
	@test -n "$(SCRIPT)" || { echo "usage: make vm-exec SCRIPT=path [ARGS='...']" >&2; exit 2; }
	$(RUN_GUEST) --mode exec --script $(SCRIPT) -- $(ARGS)

demo: deps-quiet $(GUEST_OS) payload
	$(RUN_GUEST) --mode exec --script tests/vm/demo.sh

check-guest: $(GUEST_OS) payload
	$(RUN_GUEST) --mode check $(if $(SUITES),--suites "$(SUITES)")

# host tests, then the guest suites: every suite on patched 6.1 (and the
# mode-2 boot), BASE612_CHECK_SUITES on patched 6.12, STOCK_CHECK_SUITES on
# stock 6.12; one closing "N passed, N failed" line. tests/vm/check.sh runs
# them as a queue of jobs taken by two workers side by side, the kernels
# building from the start; each job's time goes to build/results/phases,
# each worker's output to build/results/lane-NAME.log.
check: deps-quiet
	MAKE="$(MAKE)" VM="$(VM)" THP_CACHE=$(THP_CACHE) BUILD=$(BUILD) \
		STOCK_CHECK_SUITES="$(STOCK_CHECK_SUITES)" BASE61_FIRST_SUITES="$(BASE61_FIRST_SUITES)" \
		BASE612_CHECK_SUITES="$(BASE612_CHECK_SUITES)" BASE612_FIRST_SUITES="$(BASE612_FIRST_SUITES)" \
		MODE2_REGEX="$(MODE2_REGEX)" tests/vm/check.sh

# every guest suite (and the after-reboot ones) on each stock kernel in turn
check-stock: deps-quiet programs stock-image payload
	@rm -f build/results/guest.tap; rc=0; \
	for s in $(STOCK_SERIES); do \
		$(MAKE) --no-print-directory check-guest STOCK=$$s $(if $(SUITES),SUITES="$(SUITES)") || rc=1; \
	done; \
	tests/vm/tap-summary.sh check-stock build/results/guest.tap; \
	exit $$rc

# The same suites (and the stress suite) on a kernel with DEBUG_VM, lockdep,
# KASAN, DEBUG_LIST and PAGE_OWNER; any splat fails the run. Not part of
# `make check` (hours under TCG: docs/testing.md); SUITES= narrows it. Without
# SUITES= it also makes check's second boot (mode 2 from the command line).
# no5lvl: docs/testing.md ("a false KASAN wild-memory-access").
DEBUG_CMDLINE = page_owner=on no5lvl
DEBUG_GUEST = $(KERNEL_ENV) THP_KCONFIG_FLAVOR=debug THP_KCONFIG_EXTRA=$(abspath kernel/debug.config) \
	THP_VM_TIMEOUT=$${THP_VM_TIMEOUT:-14400} tests/vm/run-guest.sh --payload $(BUILD)/payload $(VM) --mode check
check-debug: deps-quiet programs image payload
	@rm -f build/results/guest.tap; rc=0; \
	$(DEBUG_GUEST) --cmdline "$(DEBUG_CMDLINE)" $(if $(SUITES),--suites "$(SUITES)") || rc=1; \
	$(if $(SUITES),,$(DEBUG_GUEST) --cmdline "$(DEBUG_CMDLINE) transparent_hugepage=2" \
		--suites 20-modes.bats $(MODE2_FILTER) || rc=1;) \
	tests/vm/tap-summary.sh check-debug build/results/guest.tap; \
	exit $$rc

bench: deps-quiet kernel image payload
	$(KERNEL_ENV) tests/vm/bench.sh $(VM)

# build bzImage after each patch of BASE's series in turn (slow; not in check)
check-series: deps-quiet
	$(KERNEL_ENV) tests/vm/build-each-patch.sh

# each one-line mutation of BASE's series (kernel/BASE/mutations.txt): build,
# boot on a 9p root, the kselftest and the named race; the table of what
# failed (slow: one incremental build and boot each; not in check).
# MUTATIONS="a b" runs only those.
mutations: deps-quiet
	$(KERNEL_ENV) tests/vm/mutations.sh --base $(BASE) $(MUTATIONS)

# every series: each base's in its own pristine tree
checkpatch:
	@rc=0; for b in $(BASES); do THP_CACHE=$(THP_CACHE) tests/vm/checkpatch.sh $$b || rc=1; done; exit $$rc

.PHONY: deps deps-quiet kernel image stock-image payload vm vm-exec demo check-guest check check-stock \
	check-debug bench check-series checkpatch mutations
