/* SPDX-License-Identifier: MIT */
/* Target: the libfabric provider's frame and RMA body decoders (fi/frame.c),
 * which read what the peer's endpoint sends inside rdmasec's messages. A
 * decoded header or body must re-encode to the same bytes, and a frame's
 * body is what follows its header. */
#include <stdlib.h>
#include <string.h>

#include "frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void same(const uint8_t *a, const uint8_t *b, size_t n)
{
	if (memcmp(a, b, n) != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rsfi_frame f;
	if (rsfi_frame_read(data, size, &f) != 0)
		return 0;
	uint8_t hdr[RSFI_FRAME_HDR];
	if (f.body_len != size - RSFI_FRAME_HDR || rsfi_frame_write(&f, hdr) != 0)
		abort();
	same(hdr, data, RSFI_FRAME_HDR);
	if (f.type < RSFI_FRAME_RMA_REQ)
		return 0;
	struct rsfi_rma_msg m;
	const uint8_t *body = data + RSFI_FRAME_HDR;
	if (rsfi_rma_read(f.type, body, f.body_len, &m) != 0)
		return 0;
	uint8_t out[RSFI_RMA_REQ_LEN];
	int n = rsfi_rma_write(f.type, &m, out);
	if (n < 0 || (size_t)n != f.body_len)
		abort();
	same(out, body, (size_t)n);
	return 0;
}
