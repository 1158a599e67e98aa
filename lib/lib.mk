# libthp: static library shared by thpctl and thpd
LIBTHP_SRCS := $(wildcard lib/*.c)
LIBTHP := $(BUILD)/libthp.a

$(LIBTHP): $(LIBTHP_SRCS:%.c=$(BUILD)/%.o)
	@mkdir -p $(@D)
	$(AR) rcs $@ $^

# the model of the THP controls against the fixtures of each kernel generation
HOST_TESTS += $(BUILD)/tests/host/test-thp-model
$(BUILD)/tests/host/test-thp-model: $(BUILD)/tests/host/test-thp-model.o $(LIBTHP)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(THP_LIBS)
