/* SPDX-License-Identifier: MIT */
/*
 * Completion checks (completion.h). One function per queue; each rejects
 * the first thing that is not what we posted and says what it was.
 */
#include <stdio.h>

#include "completion.h"

/*
 * rxe reports a SEND_WITH_INV with the kernel's IB_WC_WITH_INVALIDATE, bit 2,
 * which libibverbs names IBV_WC_IP_CSUM_OK; invalidated_rkey shares a union
 * with imm_data (docs/verbs.md). Providers that follow libibverbs set
 * IBV_WC_WITH_INV.
 */
static bool remote_invalidation(const struct ibv_wc *wc)
{
	if (wc->wc_flags & IBV_WC_WITH_INV)
		return true;
	return (wc->wc_flags & IBV_WC_IP_CSUM_OK) && !(wc->wc_flags & IBV_WC_WITH_IMM) && wc->invalidated_rkey;
}

int rsec_completion_check_recv(const struct ibv_wc *wc, const struct rsec_posted *p, uint32_t *slot, char *why,
			       size_t whylen)
{
	uint32_t idx = RSEC_WR_INDEX(wc->wr_id);
	if (RSEC_WR_KIND(wc->wr_id) != WR_RECV || idx >= p->recv_slots || (wc->wr_id & RSEC_WR_UNUSED_BITS)) {
		snprintf(why, whylen, "receive completion for a work request we did not post (0x%llx)",
			 (unsigned long long)wc->wr_id);
		return RSEC_E_PROTO;
	}
	if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
		snprintf(why, whylen, "peer sent an RDMA WRITE WITH IMMEDIATE (%u bytes), which consumed a receive",
			 wc->byte_len);
		return RSEC_E_PROTO;
	}
	if (wc->opcode != IBV_WC_RECV) {
		snprintf(why, whylen, "unexpected receive completion opcode %d", (int)wc->opcode);
		return RSEC_E_PROTO;
	}
	if (wc->wc_flags & IBV_WC_WITH_IMM) {
		snprintf(why, whylen, "peer sent a SEND WITH IMMEDIATE");
		return RSEC_E_PROTO;
	}
	if (remote_invalidation(wc)) {
		/* It already revoked a window, perhaps another connection's: rxe does not check who asks. */
		snprintf(why, whylen, "peer sent SEND_WITH_INV, a remote invalidation");
		return RSEC_E_PROTO;
	}
	if (wc->byte_len > p->slot_size) {
		snprintf(why, whylen, "receive completion of %u bytes, over the %u-byte buffer", wc->byte_len,
			 p->slot_size);
		return RSEC_E_PROTO;
	}
	*slot = idx;
	return 0;
}

static bool opcode_posted(enum rsec_wr_kind kind, enum ibv_wc_opcode op)
{
	switch (kind) {
	case WR_SEND:
		return op == IBV_WC_SEND;
	case WR_BIND:
		return op == IBV_WC_BIND_MW;
	case WR_RDMA:
		return op == IBV_WC_RDMA_WRITE || op == IBV_WC_RDMA_READ;
	default:
		return false;
	}
}

int rsec_completion_check_send(const struct ibv_wc *wc, const struct rsec_posted *p, char *why, size_t whylen)
{
	enum rsec_wr_kind kind = RSEC_WR_KIND(wc->wr_id);
	uint32_t idx = RSEC_WR_INDEX(wc->wr_id);
	bool posted = (kind == WR_SEND && idx < p->send_slots && p->sends_inflight > 0) ||
		      (kind == WR_BIND && idx < p->binds) || (kind == WR_RDMA && idx < p->ops_depth);
	if (!posted || (wc->wr_id & RSEC_WR_UNUSED_BITS)) {
		snprintf(why, whylen, "send completion for a work request we do not have outstanding (0x%llx)",
			 (unsigned long long)wc->wr_id);
		return RSEC_E_VERBS;
	}
	/* A failed completion's opcode is undefined (ibv_poll_cq(3)). */
	if (wc->status == IBV_WC_SUCCESS && !opcode_posted(kind, wc->opcode)) {
		snprintf(why, whylen, "send completion with opcode %d for a work request of kind %d", (int)wc->opcode,
			 (int)kind);
		return RSEC_E_VERBS;
	}
	return 0;
}
