# benchmark programs: bench/*.c -> $(BUILD)/helpers/NAME (shipped with the
# test helpers in the guest payload, linked with their common module)
BENCH_SRCS := $(wildcard bench/*.c)
HELPERS += $(BENCH_SRCS:bench/%.c=$(BUILD)/helpers/%)

$(BUILD)/bench/%.o: THP_CFLAGS += $(TEST_UTIL_CFLAGS)

$(BUILD)/helpers/%: $(BUILD)/bench/%.o $(LIBTHP_TEST) $(LIBTHP)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(THP_LIBS)
