# thp-stack — see README.md.
#
#   make            userspace: libthp, thpctl, thpd, test helpers
#   make deps       install the Debian packages everything needs (idempotent)
#   make kernel     patched guest kernel (cached by a hash of every input)
#   make image      Debian guest root filesystem (cached by its package list)
#   make vm         boot the guest with a root shell on this terminal
#   make vm-exec SCRIPT=path [ARGS=...]   run a script as root in the guest
#   make demo       build what is missing, boot, show THP working
#   make check      everything missing, then host tests, a fuzz smoke run,
#                   checkpatch on both series, the guest suites on both
#                   patched kernels and on stock 6.12
#   make check-host   the host tests (ASan+UBSan), no VM
#   make check-guest SUITES="10-modes.bats ..."   only those guest suites
#   make check-stock  every guest suite on Debian's stock 6.1 and 6.12 kernels
#   make check-debug  the guest suites on a DEBUG_VM/lockdep/KASAN kernel
#   make bench      benchmarks in the guest (figures and ratios, never pass/fail)
#   make checkpatch scripts/checkpatch.pl --strict on every patch of both series
#   make check-series  build bzImage after each patch in turn (slow)
#   make install    DESTDIR=, PREFIX=
#   make deb        Debian packages thpctl and thpd in build/deb (debian/deb.mk)
#
# BASE=6.12 makes every guest target (kernel, vm, vm-exec, demo, check-guest,
# check-debug, bench, check-series) use the 6.12 series instead of 6.1's;
# STOCK=6.1|6.12 boots Debian's stock kernel instead (tests/vm/vm.mk).
#
# This file holds the variables and the top targets; each directory's
# fragment (DIR/*.mk, included below) holds the rules that build it. The
# guest targets are in tests/vm/vm.mk.

SHELL := /bin/bash

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
SBINDIR ?= $(PREFIX)/sbin
MANDIR ?= $(PREFIX)/share/man
DATADIR ?= $(PREFIX)/share
SYSCONFDIR ?= /etc
UNITDIR ?= $(PREFIX)/lib/systemd/system
DESTDIR ?=

VERSION := 0.1.0
BUILD ?= build
THP_CACHE ?= /var/cache/thp-stack

PKGS := libsystemd libcap inih json-c
CC ?= gcc
CFLAGS ?= -O2 -g
ifeq ($(SAN),1)
BUILD := build/san
CFLAGS += -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
LDFLAGS += -fsanitize=address,undefined
endif
# pkg-config is asked when a recipe runs, not when this file is read: on a
# fresh machine deps-quiet installs the libraries after parsing.
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
THP_CFLAGS = -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -DTHP_VERSION='"$(VERSION)"' \
	-Ilib $(PKG_CFLAGS) -MMD -MP
THP_LIBS = $(shell pkg-config --libs $(PKGS) 2>/dev/null)

# Each component's fragment adds to these.
PROGRAMS :=
HELPERS :=
HOST_TESTS :=
INSTALL_TARGETS :=

all: programs

# keep objects: they are inputs of the next incremental build
.SECONDARY:

$(BUILD)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(THP_CFLAGS) $(CFLAGS) -c $< -o $@

include lib/lib.mk
include cli/cli.mk
include daemon/daemon.mk
include tests/helpers/helpers.mk
include bench/bench.mk
include tests/host/host.mk
include man/man.mk
include fuzz/fuzz.mk
include tests/vm/vm.mk
include debian/deb.mk

programs: $(PROGRAMS) $(HELPERS)

install: $(INSTALL_TARGETS)

clean:
	rm -rf build

.PHONY: all programs install clean

# compilers' dependency files: absent until the first build
-include $(shell find $(BUILD) -name '*.d' -type f 2>/dev/null)
