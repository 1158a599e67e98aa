# Host tests: no VM. Everything is built again under ASan+UBSan (SAN=1,
# build/san) and the tests run against those binaries. Components add their
# C unit-test programs to HOST_TESTS; tests/host/*.bats run with BUILD_DIR set.
HOST_BATS := $(wildcard tests/host/*.bats)

# every C host test prints TAP through tap.c
HOST_TAP := $(BUILD)/tests/host/tap.o

# libthp's unit tests; test-thp-model reads tests/host/fixtures (the THP
# layouts of each kernel generation), test-thp-cmdline its cmdline.txt
HOST_TESTS += $(BUILD)/tests/host/test-lib $(BUILD)/tests/host/test-thp-model \
	$(BUILD)/tests/host/test-thp-cmdline
$(BUILD)/tests/host/test-lib $(BUILD)/tests/host/test-thp-model $(BUILD)/tests/host/test-thp-cmdline: \
		$(BUILD)/tests/host/%: \
		$(BUILD)/tests/host/%.o $(HOST_TAP) $(LIBTHP)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(THP_LIBS)

# thpd's pure logic: tests/host/test-thpd-*.c, linked with the daemon's objects
THPD_TEST_SRCS := $(wildcard tests/host/test-thpd-*.c)
HOST_TESTS += $(THPD_TEST_SRCS:tests/host/%.c=$(BUILD)/tests/host/%)
$(BUILD)/tests/host/test-thpd-%: $(BUILD)/tests/host/test-thpd-%.o $(HOST_TAP) $(THPD_OBJS) $(LIBTHP)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(THP_LIBS)

# the tests see this machine's THP sysfs read-only (tests/host/thp-readonly.sh)
check-host:
	@mkdir -p build/results
	tests/host/thp-readonly.sh $(MAKE) --no-print-directory SAN=1 host-tests

host-tests: programs $(HOST_TESTS)
	@set -o pipefail; rc=0; : >build/results/host.tap; \
	for t in $(HOST_TESTS); do \
		echo "# $$t"; ASAN_OPTIONS=detect_leaks=1 $$t | tee -a build/results/host.tap || rc=1; \
	done; \
	if [ -n "$(HOST_BATS)" ]; then \
		BUILD_DIR=$(abspath $(BUILD)) bats --tap $(HOST_BATS) | tee -a build/results/host.tap || rc=1; \
	fi; \
	exit $$rc
.PHONY: check-host host-tests
