# libthp: static library shared by thpctl and thpd
LIBTHP_SRCS := $(wildcard lib/*.c)
LIBTHP := $(BUILD)/libthp.a

$(LIBTHP): $(LIBTHP_SRCS:%.c=$(BUILD)/%.o)
	@mkdir -p $(@D)
	$(AR) rcs $@ $^
