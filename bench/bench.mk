# benchmark programs: bench/*.c -> $(BUILD)/helpers/NAME (shipped with the
# test helpers in the guest payload)
BENCH_SRCS := $(wildcard bench/*.c)
HELPERS += $(BENCH_SRCS:bench/%.c=$(BUILD)/helpers/%)

$(BUILD)/helpers/%: $(BUILD)/bench/%.o $(LIBTHP)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(THP_LIBS)
