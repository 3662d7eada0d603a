/* SPDX-License-Identifier: MIT */
/*
 * Target functions: rsec_completion_check_recv, rsec_completion_check_send.
 * Input: a work completion's fields as the device reports them (wr_id,
 * status, opcode, flags, byte_len, the imm/invalidate union) and what the
 * connection has posted. Oracle: a receive is accepted only as a plain RECV
 * without immediate or invalidation, into a slot we posted, no longer than
 * the slot; a send completion only for a kind and index we have outstanding.
 * A refusal always says why.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "completion.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Bytes in a fixed order; missing ones read as zero. */
struct reader {
	const uint8_t *p;
	size_t n;
};

static uint64_t take(struct reader *r, size_t bytes)
{
	uint64_t v = 0;
	for (size_t i = 0; i < bytes; i++) {
		v = v << 8 | (r->n ? *r->p : 0);
		if (r->n) {
			r->p++;
			r->n--;
		}
	}
	return v;
}

static void check_recv(const struct ibv_wc *wc, const struct rsec_posted *p)
{
	uint32_t slot = UINT32_MAX;
	char why[160] = "";
	int rc = rsec_completion_check_recv(wc, p, &slot, why, sizeof(why));
	if (rc == 0) {
		if (slot >= p->recv_slots || slot != RSEC_WR_INDEX(wc->wr_id) || RSEC_WR_KIND(wc->wr_id) != WR_RECV ||
		    wc->byte_len > p->slot_size || wc->opcode != IBV_WC_RECV || (wc->wc_flags & IBV_WC_WITH_IMM) ||
		    (wc->wc_flags & IBV_WC_WITH_INV))
			abort();
	} else if (rc != RSEC_E_PROTO || why[0] == '\0' || slot != UINT32_MAX) {
		abort();
	}
}

static void check_send(const struct ibv_wc *wc, const struct rsec_posted *p)
{
	char why[160] = "";
	int rc = rsec_completion_check_send(wc, p, why, sizeof(why));
	if (rc == 0) {
		enum rsec_wr_kind k = RSEC_WR_KIND(wc->wr_id);
		uint32_t i = RSEC_WR_INDEX(wc->wr_id);
		bool ours = (k == WR_SEND && i < p->send_slots && p->sends_inflight) || (k == WR_BIND && i < p->binds) ||
			    (k == WR_RDMA && i < p->ops_depth);
		if (!ours || (wc->wr_id & RSEC_WR_UNUSED_BITS))
			abort();
	} else if (rc != RSEC_E_VERBS || why[0] == '\0') {
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct reader r = { data, size };
	struct ibv_wc wc;
	memset(&wc, 0, sizeof(wc));
	wc.wr_id = take(&r, 8);
	wc.status = (enum ibv_wc_status)take(&r, 1);
	wc.opcode = (enum ibv_wc_opcode)take(&r, 1);
	wc.wc_flags = (unsigned)take(&r, 1);
	wc.byte_len = (uint32_t)take(&r, 4);
	wc.imm_data = (uint32_t)take(&r, 4);
	struct rsec_posted p = {
		.recv_slots = (uint32_t)take(&r, 2),
		.slot_size = (uint32_t)take(&r, 4),
		.send_slots = (uint32_t)take(&r, 1),
		.sends_inflight = (uint32_t)take(&r, 1),
		.binds = (uint32_t)take(&r, 1),
		.ops_depth = (uint32_t)take(&r, 2),
	};
	check_recv(&wc, &p);
	check_send(&wc, &p);
	return 0;
}
