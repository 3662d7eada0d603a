/* SPDX-License-Identifier: MIT */
/*
 * Target functions: rsec_wire_decode, rsec_wire_decode_header, rsec_wire_encode.
 *
 * Any byte string either fails to decode, or decodes to a message that
 * re-encodes to exactly the same bytes: the format has one encoding per
 * message, so a parser that accepts something the encoder would not write
 * (or reads a field differently) aborts here.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t out[RSEC_WIRE_MAX_FRAME];
	struct rsec_msg m;
	size_t len = 0;
	uint8_t type;
	uint32_t body_len;

	int hdr_rc = rsec_wire_decode_header(data, size, &type, &body_len);
	int rc = rsec_wire_decode(data, size, &m);
	if (rc != 0) {
		if (rc != RSEC_E_PROTO)
			abort();
		return 0;
	}
	/* A whole frame that decodes has a valid header that says how long it is. */
	if (hdr_rc != 0 || type != m.type || (size_t)body_len + RSEC_WIRE_HDR_LEN != size)
		abort();
	if (rsec_wire_encode(&m, out, sizeof(out), &len) != 0)
		abort();
	if (len != size || memcmp(out, data, size) != 0)
		abort();
	return 0;
}
