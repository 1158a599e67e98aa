# man pages: man/NAME.SECTION.scd -> $(BUILD)/man/NAME.SECTION (scdoc)
MAN_SRCS := $(wildcard man/*.scd)
MANPAGES := $(MAN_SRCS:man/%.scd=$(BUILD)/man/%)
PROGRAMS += $(MANPAGES)

$(BUILD)/man/%: man/%.scd
	@mkdir -p $(@D)
	scdoc <$< >$@

install-man: $(MANPAGES)
	@for m in $(MANPAGES); do \
		s=$${m##*.}; install -Dm644 $$m $(DESTDIR)$(MANDIR)/man$$s/$$(basename $$m); \
	done
INSTALL_TARGETS += install-man
.PHONY: install-man
