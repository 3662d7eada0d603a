/* SPDX-License-Identifier: MIT */
/*
 * Frame header codec (frame.h). Layout, big-endian:
 *   0 version (1)   1 type (1)   2 flags (2)   4 reserved, zero (4)   8 cq_data (8)
 * and the RMA bodies: tag (8), then key (8) addr (8) len (8) kind (1) or code (4).
 * check() holds every limit and serves both directions.
 */
#include <string.h>

#include "frame.h"

static RSEC_MUST_CHECK int check(const struct rsfi_frame *f)
{
	int cm = f->type == RSFI_FRAME_CONNREQ || f->type == RSFI_FRAME_ACCEPT || f->type == RSFI_FRAME_REJECT;
	int bye = f->type == RSFI_FRAME_BYE || f->type == RSFI_FRAME_BYE_ACK;
	size_t rma = f->type == RSFI_FRAME_RMA_REQ ? RSFI_RMA_REQ_LEN
		     : f->type == RSFI_FRAME_RMA_NAK ? RSFI_RMA_NAK_LEN
		     : f->type == RSFI_FRAME_RMA_DONE ? RSFI_RMA_DONE_LEN : 0;

	RSEC_ENSURE(cm || bye || rma || f->type == RSFI_FRAME_DATA, RSEC_E_RANGE);
	RSEC_ENSURE(!bye || (f->flags == 0 && f->cq_data == 0 && f->body_len == 0), RSEC_E_RANGE);
	RSEC_ENSURE(!rma || (f->flags == 0 && f->cq_data == 0 && f->body_len == rma), RSEC_E_RANGE);
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

static RSEC_MUST_CHECK int check_rma(enum rsfi_frame_type type, const struct rsfi_rma_msg *m)
{
	if (type == RSFI_FRAME_RMA_REQ) {
		RSEC_ENSURE(m->kind == RSFI_RMA_READ || m->kind == RSFI_RMA_WRITE, RSEC_E_RANGE);
		RSEC_ENSURE(m->len > 0 && m->addr + m->len > m->addr, RSEC_E_RANGE);
	}
	if (type == RSFI_FRAME_RMA_NAK)
		RSEC_ENSURE(m->code >= 1 && m->code <= 65535, RSEC_E_RANGE);
	return type == RSFI_FRAME_RMA_REQ || type == RSFI_FRAME_RMA_NAK || type == RSFI_FRAME_RMA_DONE ? 0
													 : RSEC_E_RANGE;
}

int rsfi_rma_write(enum rsfi_frame_type type, const struct rsfi_rma_msg *m, uint8_t out[static RSFI_RMA_REQ_LEN])
{
	RSEC_GUARD(check_rma(type, m));
	put_be(out, m->tag, 8);
	if (type == RSFI_FRAME_RMA_DONE)
		return RSFI_RMA_DONE_LEN;
	if (type == RSFI_FRAME_RMA_NAK) {
		put_be(out + 8, m->code, 4);
		return RSFI_RMA_NAK_LEN;
	}
	put_be(out + 8, m->key, 8);
	put_be(out + 16, m->addr, 8);
	put_be(out + 24, m->len, 8);
	out[32] = (uint8_t)m->kind;
	return RSFI_RMA_REQ_LEN;
}

int rsfi_rma_read(enum rsfi_frame_type type, const uint8_t *body, size_t len, struct rsfi_rma_msg *m)
{
	size_t want = type == RSFI_FRAME_RMA_REQ ? RSFI_RMA_REQ_LEN
		      : type == RSFI_FRAME_RMA_NAK ? RSFI_RMA_NAK_LEN : RSFI_RMA_DONE_LEN;

	RSEC_ENSURE(body && m && len == want, RSEC_E_PROTO);
	memset(m, 0, sizeof(*m));
	m->tag = get_be(body, 8);
	if (type == RSFI_FRAME_RMA_NAK)
		m->code = (uint32_t)get_be(body + 8, 4);
	if (type == RSFI_FRAME_RMA_REQ) {
		m->key = get_be(body + 8, 8);
		m->addr = get_be(body + 16, 8);
		m->len = get_be(body + 24, 8);
		m->kind = (enum rsfi_rma_kind)body[32];
	}
	RSEC_ENSURE(check_rma(type, m) == 0, RSEC_E_PROTO);
	return 0;
}
