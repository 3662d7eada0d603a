/* SPDX-License-Identifier: MIT */
/*
 * Work completions, checked against what we posted before anything they
 * report is used. A completion's wr_id, opcode, flags and byte_len come
 * from the device, and on a receive partly from the peer: a WRITE WITH
 * IMMEDIATE through a grant consumes one of our receives and reports the
 * write's length, not a slot's (docs/verbs.md).
 */
#ifndef RSEC_COMPLETION_H
#define RSEC_COMPLETION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "result.h"

/* wr_id layout: kind in the top byte, index below. */
enum rsec_wr_kind { WR_SEND = 1, WR_RECV = 2, WR_BIND = 3, WR_RDMA = 4 };
#define RSEC_WR_ID(kind, idx) (((uint64_t)(kind) << 56) | (uint64_t)(idx))
#define RSEC_WR_KIND(id) ((enum rsec_wr_kind)((id) >> 56))
#define RSEC_WR_INDEX(id) ((uint32_t)((id) & 0xffffffffu))
#define RSEC_WR_UNUSED_BITS UINT64_C(0x00ffffff00000000)

/* What a connection has posted, to bound its completions by. */
struct rsec_posted {
	uint32_t recv_slots;     /* receive WRs are WR_RECV 0..recv_slots-1 */
	uint32_t slot_size;      /* bytes each receive buffer holds */
	uint32_t send_slots;     /* send WRs are WR_SEND 0..send_slots-1 */
	uint32_t sends_inflight; /* of those, posted and not yet completed */
	uint32_t binds;          /* window binds are WR_BIND 0..binds-1 */
	uint32_t ops_depth;      /* one-sided operations are WR_RDMA 0..ops_depth-1 (ops.c checks which are in flight) */
};

/*
 * rsec_completion_check_recv - accept a successful receive completion only
 * if it is a plain RECV (a SEND of the peer's, without immediate data or
 * invalidation) into one of our slots that fits the slot. Returns 0 with
 * *slot, or RSEC_E_PROTO with why (NUL-terminated, no secrets): the peer
 * broke the protocol and nothing of the slot may be read.
 */
RSEC_MUST_CHECK int rsec_completion_check_recv(const struct ibv_wc *wc, const struct rsec_posted *p,
					       uint32_t *slot, char *why, size_t whylen);

/*
 * rsec_completion_check_send - a send-queue completion must name a work
 * request we have outstanding, and if successful carry the opcode we posted
 * it with. Returns 0, or RSEC_E_VERBS with why (the device misreported).
 */
RSEC_MUST_CHECK int rsec_completion_check_send(const struct ibv_wc *wc, const struct rsec_posted *p, char *why,
					       size_t whylen);

#endif /* RSEC_COMPLETION_H */
