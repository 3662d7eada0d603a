/* SPDX-License-Identifier: MIT */
/* Target: app_decode (tools/common/app_proto.c), the server's request parser.
 * A decoded message must re-encode to the same bytes (echo payloads aside). */
#include <stdlib.h>
#include <string.h>

#include "app_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct app_msg m;
	const char *why;
	if (!app_decode(data, size, &m, &why))
		return 0;
	if (m.op == APP_ECHO || m.op == APP_ECHO_REPLY) {
		if (m.payload != data + 1 || m.payload_len != size - 1)
			abort();
		return 0;
	}
	uint8_t out[512];
	size_t n = app_encode(&m, out, sizeof(out));
	if (n != size || memcmp(out, data, size) != 0)
		abort();
	return 0;
}
