/* SPDX-License-Identifier: MIT */
/*
 * Frame header codec (frame.h). Layout, big-endian:
 *   0 version (1)   1 type (1)   2 flags (2)   4 reserved, zero (4)   8 cq_data (8)
 * check() holds every limit and serves both directions.
 */
#include <string.h>

#include "frame.h"

static RSEC_MUST_CHECK int check(const struct rsfi_frame *f)
{
	int cm = f->type == RSFI_FRAME_CONNREQ || f->type == RSFI_FRAME_ACCEPT || f->type == RSFI_FRAME_REJECT;
	int bye = f->type == RSFI_FRAME_BYE || f->type == RSFI_FRAME_BYE_ACK;

	RSEC_ENSURE(cm || bye || f->type == RSFI_FRAME_DATA, RSEC_E_RANGE);
	RSEC_ENSURE(!bye || (f->flags == 0 && f->cq_data == 0 && f->body_len == 0), RSEC_E_RANGE);
	RSEC_ENSURE((f->flags & ~(unsigned)RSFI_FRAME_HAS_DATA) == 0, RSEC_E_RANGE);
	/* Only data carries CQ data; a CM frame's body is private data, bounded as rdma_cm's. */
	RSEC_ENSURE(!cm || (f->flags == 0 && f->cq_data == 0 && f->body_len <= RSFI_CM_DATA_MAX), RSEC_E_RANGE);
	RSEC_ENSURE((f->flags & RSFI_FRAME_HAS_DATA) || f->cq_data == 0, RSEC_E_RANGE);
	return 0;
}

static void put_be(uint8_t *p, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
}

static uint64_t get_be(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

int rsfi_frame_write(const struct rsfi_frame *f, uint8_t out[static RSFI_FRAME_HDR])
{
	RSEC_GUARD(check(f));
	memset(out, 0, RSFI_FRAME_HDR);
	out[0] = RSFI_FRAME_VERSION;
	out[1] = (uint8_t)f->type;
	put_be(out + 2, f->flags, 2);
	put_be(out + 8, f->cq_data, 8);
	return 0;
}

int rsfi_frame_read(const uint8_t *msg, size_t len, struct rsfi_frame *f)
{
	RSEC_ENSURE(msg && f && len >= RSFI_FRAME_HDR, RSEC_E_PROTO);
	RSEC_ENSURE(msg[0] == RSFI_FRAME_VERSION, RSEC_E_PROTO);
	RSEC_ENSURE(get_be(msg + 4, 4) == 0, RSEC_E_PROTO);
	f->type = (enum rsfi_frame_type)msg[1];
	f->flags = (unsigned)get_be(msg + 2, 2);
	f->cq_data = get_be(msg + 8, 8);
	f->body_len = len - RSFI_FRAME_HDR;
	RSEC_ENSURE(check(f) == 0, RSEC_E_PROTO);
	return 0;
}
