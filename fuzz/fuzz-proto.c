// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer target: the thpd socket protocol parser (lib/thp-proto.c).
 *
 * Properties checked on every input:
 *  - thp_proto_parse() returns 0 with a JSON object, or -EBADMSG with *out
 *    NULL; never anything else
 *  - what parsed re-serialises to text that parses again to the same text
 *    (when it still fits in THP_MSG_MAX)
 *  - an error reply built from client-controlled text (thpd echoes unknown
 *    commands) is always a parseable message
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "thp.h"
#include "thp-proto.h"

static void roundtrip(struct json_object *obj)
{
	const char *text = json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN);
	size_t len = strlen(text);
	struct json_object *again = NULL;

	if (len > THP_MSG_MAX)
		return;
	if (thp_proto_parse(text, len, &again) != 0 || !again)
		abort();	/* our own serialisation must be a valid message */
	if (strcmp(json_object_to_json_string_ext(again, JSON_C_TO_STRING_PLAIN),
		   json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN)) != 0)
		abort();
	json_object_put(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct json_object *obj = (struct json_object *)1, *cmd, *err;
	char msg[512];
	int r;

	r = thp_proto_parse((const char *)data, size, &obj);
	if (r == 0) {
		if (!obj || !json_object_is_type(obj, json_type_object))
			abort();
		/* what the server does with a request */
		if (json_object_object_get_ex(obj, "cmd", &cmd))
			(void)json_object_get_string(cmd);
		roundtrip(obj);
		json_object_put(obj);
	} else if (r != -EBADMSG || obj) {
		abort();
	}

	/* an error reply echoing client text must stay a valid message */
	size = size < sizeof(msg) - 1 ? size : sizeof(msg) - 1;
	memcpy(msg, data, size);
	msg[size] = '\0';
	err = thp_proto_error(EOPNOTSUPP, msg);
	if (!err)
		abort();
	roundtrip(err);
	json_object_put(err);
	return 0;
}
