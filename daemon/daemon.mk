# thpd: the THP policy daemon, its units and example configuration (its host
# tests are built by tests/host/host.mk).
THPD_SRCS := daemon/adaptive.c daemon/caps.c daemon/collapse.c daemon/collapse-budget.c \
	daemon/config.c daemon/exec-events.c daemon/lifecycle.c daemon/log.c daemon/originals.c \
	daemon/persist.c daemon/precedence.c daemon/pressure.c daemon/procinfo.c daemon/rules.c \
	daemon/safe-file.c daemon/server.c daemon/tick.c
THPD_OBJS := $(THPD_SRCS:%.c=$(BUILD)/%.o)
PROGRAMS += $(BUILD)/thpd $(BUILD)/systemd/thpd.service

$(BUILD)/thpd: $(BUILD)/daemon/thpd.o $(THPD_OBJS) $(LIBTHP)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(THP_LIBS)

# the unit names the installed binary
$(BUILD)/systemd/thpd.service: systemd/thpd.service.in
	@mkdir -p $(@D)
	sed 's|@SBINDIR@|$(SBINDIR)|g' $< >$@

install-thpd: $(BUILD)/thpd $(BUILD)/systemd/thpd.service
	install -Dm755 $(BUILD)/thpd $(DESTDIR)$(SBINDIR)/thpd
	install -Dm644 $(BUILD)/systemd/thpd.service $(DESTDIR)$(UNITDIR)/thpd.service
	install -Dm644 systemd/thpd.socket $(DESTDIR)$(UNITDIR)/thpd.socket
	install -d $(DESTDIR)$(SYSCONFDIR)/thpd/thpd.conf.d
	@# never overwrite an administrator's configuration on a live system
	if [ -n "$(DESTDIR)" ] || [ ! -e $(SYSCONFDIR)/thpd/thpd.conf ]; then \
		install -m644 systemd/thpd.conf $(DESTDIR)$(SYSCONFDIR)/thpd/thpd.conf; \
	fi
	install -Dm644 systemd/thpd.conf.d-example.conf \
		$(DESTDIR)$(DATADIR)/doc/thp-stack/examples/thpd.conf.d/50-example.conf

INSTALL_TARGETS += install-thpd
.PHONY: install-thpd

# no dependency circle among thpd's files (calls and includes); part of check-host
check-thpd-deps: $(BUILD)/daemon/thpd.o $(THPD_OBJS)
	daemon/check-deps.sh --self-test
	daemon/check-deps.sh --headers
	daemon/check-deps.sh $^
host-tests: check-thpd-deps
.PHONY: check-thpd-deps
