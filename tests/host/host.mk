# Host tests: no VM. Everything is built again under ASan+UBSan (SAN=1,
# build/san) and the tests run against those binaries. Components add their
# C unit-test programs to HOST_TESTS; tests/host/*.bats run with BUILD_DIR set.
HOST_BATS := $(wildcard tests/host/*.bats)

check-host:
	@mkdir -p build/results
	$(MAKE) --no-print-directory SAN=1 host-tests

host-tests: programs $(HOST_TESTS)
	@set -o pipefail; rc=0; : >build/results/host.tap; \
	for t in $(HOST_TESTS); do \
		echo "# $$t"; ASAN_OPTIONS=detect_leaks=1 $$t | tee -a build/results/host.tap || rc=1; \
	done; \
	if [ -n "$(HOST_BATS)" ]; then \
		BUILD_DIR=$(abspath $(BUILD)) bats --tap $(HOST_BATS) | tee -a build/results/host.tap || rc=1; \
	fi; \
	exit $$rc
.PHONY: host-tests
