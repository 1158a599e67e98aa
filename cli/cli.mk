# thpctl: the administrator's command
THPCTL_SRCS := $(wildcard cli/*.c)
ifneq ($(THPCTL_SRCS),)
PROGRAMS += $(BUILD)/thpctl
INSTALL_TARGETS += install-thpctl
endif

$(BUILD)/thpctl: $(THPCTL_SRCS:%.c=$(BUILD)/%.o) $(LIBTHP)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(THP_LIBS)

install-thpctl: $(BUILD)/thpctl
	install -Dm755 $(BUILD)/thpctl $(DESTDIR)$(BINDIR)/thpctl
	install -Dm644 cli/thpctl.bash-completion \
		$(DESTDIR)$(DATADIR)/bash-completion/completions/thpctl
.PHONY: install-thpctl
