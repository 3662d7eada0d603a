/* SPDX-License-Identifier: MIT */
/* Target: the rdmasec-blk message decoders (tools/blk/proto/blk_wire.c), which
 * read what the peer sends. A decoded message must re-encode to the same
 * bytes; a command's in-capsule data must lie inside the input. */
#include <stdlib.h>
#include <string.h>

#include "blk_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void same(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
	if (an != bn || memcmp(a, b, an) != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t out[BLK_OPEN_MAX + BLK_OPEN_REPLY_LEN + BLK_CMD_HDR + BLK_CPL_LEN];
	const char *why;
	struct blk_open o;
	struct blk_open_reply r;
	struct blk_cmd c;
	struct blk_cpl p;
	if (blk_open_decode(data, size, &o, &why))
		same(out, blk_open_encode(&o, out, sizeof(out)), data, size);
	if (blk_open_reply_decode(data, size, &r, &why))
		same(out, blk_open_reply_encode(&r, out, sizeof(out)), data, size);
	if (blk_cpl_decode(data, size, &p, &why))
		same(out, blk_cpl_encode(&p, out, sizeof(out)), data, size);
	if (blk_cmd_decode(data, size, &c, &why)) {
		size_t n = blk_cmd_encode_hdr(&c, out, sizeof(out));
		size_t inl = c.flags & BLK_CMD_INLINE ? c.length : 0;
		same(out, n, data, size - inl);
		if (inl && (c.data != data + BLK_CMD_HDR || BLK_CMD_HDR + inl != size))
			abort();
	}
	return 0;
}
