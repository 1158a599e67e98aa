# Guest test helpers: every tests/helpers/*.c is one program, linked with the
# helpers' common module (tests/helpers/lib: test-util, page-check) and
# libthp, built to $(BUILD)/helpers/NAME and shipped in the guest payload.
HELPER_SRCS := $(wildcard tests/helpers/*.c)
HELPERS += $(HELPER_SRCS:tests/helpers/%.c=$(BUILD)/helpers/%)

TEST_UTIL_SRCS := $(wildcard tests/helpers/lib/*.c)
LIBTHP_TEST := $(BUILD)/libthp-test.a
TEST_UTIL_CFLAGS := -Itests/helpers/lib

$(LIBTHP_TEST): $(TEST_UTIL_SRCS:%.c=$(BUILD)/%.o)
	@mkdir -p $(@D)
	$(AR) rcs $@ $^

$(BUILD)/tests/helpers/%.o: THP_CFLAGS += $(TEST_UTIL_CFLAGS)

$(BUILD)/helpers/%: $(BUILD)/tests/helpers/%.o $(LIBTHP_TEST) $(LIBTHP)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(THP_LIBS)
