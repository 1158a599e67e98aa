# thpctl: the administrator's command
THPCTL_SRCS := $(wildcard cli/*.c)
ifneq ($(THPCTL_SRCS),)
PROGRAMS += $(BUILD)/thpctl
INSTALL_TARGETS += install-thpctl
endif

$(BUILD)/thpctl: $(THPCTL_SRCS:%.c=$(BUILD)/%.o) $(LIBTHP)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(THP_LIBS)

# the metrics timer's service names the installed binary
PROGRAMS += $(BUILD)/systemd/thpctl-metrics.service
$(BUILD)/systemd/thpctl-metrics.service: systemd/thpctl-metrics.service.in
	@mkdir -p $(@D)
	sed 's|@BINDIR@|$(BINDIR)|g' $< >$@

install-thpctl: $(BUILD)/thpctl $(BUILD)/systemd/thpctl-metrics.service
	install -Dm755 $(BUILD)/thpctl $(DESTDIR)$(BINDIR)/thpctl
	install -Dm644 cli/thpctl.bash-completion \
		$(DESTDIR)$(DATADIR)/bash-completion/completions/thpctl
	install -Dm644 $(BUILD)/systemd/thpctl-metrics.service \
		$(DESTDIR)$(UNITDIR)/thpctl-metrics.service
	install -Dm644 systemd/thpctl-metrics.timer $(DESTDIR)$(UNITDIR)/thpctl-metrics.timer
	install -Dm644 systemd/thp-alerts.rules.yml \
		$(DESTDIR)$(DATADIR)/doc/thp-stack/examples/thp-alerts.rules.yml
.PHONY: install-thpctl
