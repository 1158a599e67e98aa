# Guest test helpers: every tests/helpers/*.c is one program, linked with
# libthp, built to $(BUILD)/helpers/NAME and shipped in the guest payload.
HELPER_SRCS := $(wildcard tests/helpers/*.c)
HELPERS += $(HELPER_SRCS:tests/helpers/%.c=$(BUILD)/helpers/%)

$(BUILD)/helpers/%: $(BUILD)/tests/helpers/%.o $(LIBTHP)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(THP_LIBS)
