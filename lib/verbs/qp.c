/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <openssl/rand.h>

#include "qp.h"
#include "base/clock.h"
#include "base/random.h"

/* Scatter/gather entries per WR we ask for (clamped by the device). */
#define RSEC_QP_MAX_SGE 4u

/*
 * Bring-up parameters (see docs/verbs.md):
 * - hop_limit 64: RoCEv2 routes over IP; 1 (rc_pingpong's choice) breaks
 *   across a router and protects nothing, since TTL is not checked by rxe.
 * - timeout 14: local ACK timeout 4.096 us * 2^14 = 67 ms per try.
 * - retry_cnt 6: ~0.5 s (7 tries) before a peer that stopped answering
 *   surfaces as RETRY_EXC. Not 7: the IBTA makes 7 a finite count, but rxe
 *   never counts 7 down (rxe_comp.c) and retries forever, so a lost READ
 *   response or a dead peer hung the QP for good (docs/verbs.md).
 * - rnr_retry 6: bounded on purpose. 7 would retry RNR forever, so a peer
 *   that stops posting receives could pin our send queue. Our credit-based
 *   flow control means RNR never happens with an honest peer.
 * - min_rnr_timer 12 (0.64 ms): what we ask a sender to wait when we are short of receives.
 */
#define RSEC_GRH_HOP_LIMIT 64
#define RSEC_ACK_TIMEOUT 14
#define RSEC_RETRY_CNT 6
#define RSEC_RNR_RETRY 6
#define RSEC_MIN_RNR_TIMER 12

int rsec_psn_random(uint32_t *psn)
{
	uint8_t b[3];

	RSEC_ENSURE_REF(psn);
	RSEC_ENSURE(RAND_bytes(b, sizeof(b)) == 1, RSEC_E_CRYPTO);
	*psn = (uint32_t)b[0] << 16 | (uint32_t)b[1] << 8 | b[2];
	return 0;
}

enum ibv_mtu rsec_qp_path_mtu(enum ibv_mtu local, enum ibv_mtu remote)
{
	if (rsec_mtu_bytes(local) == 0 || rsec_mtu_bytes(remote) == 0)
		return 0;
	return local < remote ? local : remote;
}

int rsec_qp_peer_check(const struct rsec_qp_peer *peer)
{
	RSEC_ENSURE_REF(peer);
	/* QPN 0 and 1 are the special SMI/GSI QPs; an RC peer is never one. */
	RSEC_ENSURE(peer->qpn > 1 && peer->qpn <= RSEC_PSN_MASK, RSEC_E_PROTO);
	RSEC_ENSURE(peer->psn <= RSEC_PSN_MASK, RSEC_E_PROTO);
	RSEC_ENSURE(rsec_mtu_bytes(peer->mtu) != 0, RSEC_E_PROTO);
	return 0;
}

void rsec_qp_describe_local(const struct rsec_qp *q, struct rsec_qp_peer *out)
{
	memset(out, 0, sizeof(*out));
	out->qpn = q->qp->qp_num;
	out->psn = q->local_psn;
	out->lid = q->dev->lid;
	out->gid = q->dev->gid;
	out->mtu = q->dev->active_mtu;
}

void rsec_qp_destroy(struct rsec_qp *q)
{
	if (q == NULL)
		return;
	rsec_qp_drop_held(q);
	/* Errors here cannot be acted on; the kernel reclaims on close anyway. */
	if (q->qp != NULL)
		(void)ibv_destroy_qp(q->qp);
	if (q->recv_cq != NULL)
		(void)ibv_destroy_cq(q->recv_cq);
	if (q->send_cq != NULL)
		(void)ibv_destroy_cq(q->send_cq);
	if (q->chan != NULL)
		(void)ibv_destroy_comp_channel(q->chan);
	if (q->pd != NULL)
		(void)ibv_dealloc_pd(q->pd);
	rsec_dev_put(q->dev);
	memset(q, 0, sizeof(*q));
}

RSEC_MUST_CHECK static int qp_to_init(struct rsec_qp *q)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = q->dev->port;
	a.qp_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
	RSEC_ENSURE(ibv_modify_qp(q->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) ==
			    0,
		    RSEC_E_VERBS);
	return 0;
}

/* The RC QP itself, on q's PD and CQs, in INIT. */
RSEC_MUST_CHECK static int qp_make(struct rsec_qp *q)
{
	struct ibv_qp_init_attr ia;
	uint32_t sge = q->dev->max_sge < RSEC_QP_MAX_SGE ? q->dev->max_sge : RSEC_QP_MAX_SGE;

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = q->send_cq;
	ia.recv_cq = q->recv_cq;
	ia.qp_type = IBV_QPT_RC;
	ia.sq_sig_all = 0; /* we choose which WRs complete */
	ia.cap.max_send_wr = q->send_wr;
	ia.cap.max_recv_wr = q->recv_wr;
	ia.cap.max_send_sge = sge;
	ia.cap.max_recv_sge = sge;
	ia.cap.max_inline_data = RSEC_QP_INLINE;
	q->qp = ibv_create_qp(q->pd, &ia);
	if (q->qp == NULL) {
		/* A device without inline sends: every frame is read from the send ring. */
		ia.cap.max_inline_data = 0;
		q->qp = ibv_create_qp(q->pd, &ia);
	}
	RSEC_ENSURE(q->qp != NULL, RSEC_E_VERBS);
	q->max_inline = ia.cap.max_inline_data;
	return qp_to_init(q);
}

RSEC_MUST_CHECK static int qp_alloc(struct rsec_qp *q, uint32_t send_wr, uint32_t recv_wr)
{
	struct ibv_context *ctx = q->dev->ctx;
	int fl;

	q->pd = ibv_alloc_pd(ctx);
	RSEC_ENSURE(q->pd != NULL, RSEC_E_VERBS);
	q->chan = ibv_create_comp_channel(ctx);
	RSEC_ENSURE(q->chan != NULL, RSEC_E_VERBS);
	/* Non-blocking, so an event loop polling the channel fd never stalls in ibv_get_cq_event. */
	fl = fcntl(q->chan->fd, F_GETFL);
	RSEC_ENSURE(fl >= 0 && fcntl(q->chan->fd, F_SETFL, fl | O_NONBLOCK) == 0, RSEC_E_VERBS);
	q->send_cq = ibv_create_cq(ctx, (int)send_wr, NULL, q->chan, 0);
	RSEC_ENSURE(q->send_cq != NULL, RSEC_E_VERBS);
	q->recv_cq = ibv_create_cq(ctx, (int)recv_wr, NULL, q->chan, 0);
	RSEC_ENSURE(q->recv_cq != NULL, RSEC_E_VERBS);
	RSEC_ENSURE(ibv_req_notify_cq(q->send_cq, 0) == 0 && ibv_req_notify_cq(q->recv_cq, 0) == 0, RSEC_E_VERBS);
	q->send_wr = send_wr;
	q->recv_wr = recv_wr;
	return qp_make(q);
}

int rsec_qp_create(struct rsec_dev *d, uint32_t send_wr, uint32_t recv_wr, struct rsec_qp *q)
{
	int rc;

	RSEC_ENSURE_REF(d);
	RSEC_ENSURE_REF(q);
	memset(q, 0, sizeof(*q));
	RSEC_ENSURE(send_wr > 0 && recv_wr > 0, RSEC_E_INVAL);
	RSEC_ENSURE(send_wr <= d->max_qp_wr && recv_wr <= d->max_qp_wr, RSEC_E_RANGE);
	RSEC_ENSURE(d->max_sge > 0, RSEC_E_NODEV);
	q->dev = rsec_dev_ref(d);
	rc = rsec_psn_random(&q->local_psn);
	if (rc == 0)
		rc = qp_alloc(q, send_wr, recv_wr);
	if (rc != 0)
		rsec_qp_destroy(q);
	return rc;
}

uint32_t rsec_qpn_burn(struct ibv_pd *pd, struct ibv_cq *send_cq, struct ibv_cq *recv_cq, uint32_t n,
		       const _Atomic bool *stop)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = send_cq,
		.recv_cq = recv_cq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	uint32_t done = 0;
	for (; done < n && !(stop && *stop); done++) {
		struct ibv_qp *t = ibv_create_qp(pd, &ia);
		if (!t || ibv_destroy_qp(t) != 0)
			break;
	}
	return done;
}

/* Advance the device's QP numbers by a random 0..burn_max with throwaway QPs on q's PD. */
static void burn_qpns(struct rsec_qp *q, uint32_t burn_max)
{
	uint32_t n;
	if (burn_max == 0 || rsec_random_index(burn_max + 1, &n) < 0)
		return;
	/* Best effort: the QP's PSN is random anyway. */
	(void)rsec_qpn_burn(q->pd, q->send_cq, q->recv_cq, n, NULL);
}

/* Take and drop every completion left in cq (its QP is gone). */
static void cq_discard(struct ibv_cq *cq)
{
	struct ibv_wc wc[16];
	while (ibv_poll_cq(cq, 16, wc) > 0)
		;
}

int rsec_qp_renew(struct rsec_qp *q, uint32_t burn_max)
{
	RSEC_ENSURE(q != NULL && q->qp != NULL && q->send_wr > 0, RSEC_E_INVAL);
	rsec_qp_drop_held(q);
	(void)ibv_destroy_qp(q->qp);
	q->qp = NULL;
	/* Whatever the old QP completed or flushed is not for the new one. */
	cq_discard(q->send_cq);
	cq_discard(q->recv_cq);
	RSEC_GUARD(rsec_psn_random(&q->local_psn));
	burn_qpns(q, burn_max);
	return qp_make(q);
}

int rsec_qp_connect(struct rsec_qp *q, const struct rsec_qp_peer *peer)
{
	struct ibv_qp_attr a;
	int mask;

	RSEC_ENSURE(q != NULL && q->qp != NULL && q->dev != NULL, RSEC_E_INVAL);
	RSEC_GUARD(rsec_qp_peer_check(peer));

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = rsec_qp_path_mtu(q->dev->active_mtu, peer->mtu);
	RSEC_ENSURE(a.path_mtu != 0, RSEC_E_PROTO);
	a.dest_qp_num = peer->qpn;
	a.rq_psn = peer->psn;
	a.max_dest_rd_atomic = q->dev->max_rd_atom;
	a.min_rnr_timer = RSEC_MIN_RNR_TIMER;
	a.ah_attr.port_num = q->dev->port;
	a.ah_attr.sl = 0;
	if (q->dev->link_layer == IBV_LINK_LAYER_ETHERNET) {
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = peer->gid;
		a.ah_attr.grh.sgid_index = (uint8_t)q->dev->gid_index;
		a.ah_attr.grh.hop_limit = RSEC_GRH_HOP_LIMIT;
	} else {
		RSEC_ENSURE(peer->lid != 0, RSEC_E_PROTO);
		a.ah_attr.dlid = peer->lid;
	}
	mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
	       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	RSEC_ENSURE(ibv_modify_qp(q->qp, &a, mask) == 0, RSEC_E_VERBS);

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = RSEC_ACK_TIMEOUT;
	a.retry_cnt = RSEC_RETRY_CNT;
	a.rnr_retry = RSEC_RNR_RETRY;
	a.sq_psn = q->local_psn;
	a.max_rd_atomic = q->dev->max_rd_atom;
	mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
	       IBV_QP_MAX_QP_RD_ATOMIC;
	RSEC_ENSURE(ibv_modify_qp(q->qp, &a, mask) == 0, RSEC_E_VERBS);
	return 0;
}

int rsec_qp_to_error(struct rsec_qp *q)
{
	struct ibv_qp_attr a;

	RSEC_ENSURE(q != NULL && q->qp != NULL, RSEC_E_INVAL);
	/* What is held goes first: the device flushes it with the rest, so every post ends in a completion. */
	(void)!rsec_qp_flush(q);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_ERR;
	RSEC_ENSURE(ibv_modify_qp(q->qp, &a, IBV_QP_STATE) == 0, RSEC_E_VERBS);
	return 0;
}

int rsec_qp_state(const struct rsec_qp *q)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	if (q == NULL || q->qp == NULL || ibv_query_qp(q->qp, &a, IBV_QP_STATE, &ia) != 0)
		return -1;
	return (int)a.qp_state;
}

static int64_t now_ms(void)
{
	return (int64_t)(rsec_now_ns() / 1000000u);
}

int rsec_cq_wait(struct ibv_cq *cq, uint64_t wr_id, int timeout_ms, struct ibv_wc *wc)
{
	int64_t deadline = now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
	unsigned idle = 0;

	RSEC_ENSURE(cq != NULL && wc != NULL, RSEC_E_INVAL);
	for (;;) {
		int n = ibv_poll_cq(cq, 1, wc);

		RSEC_ENSURE(n >= 0, RSEC_E_VERBS);
		if (n == 1) {
			idle = 0;
			RSEC_ENSURE(wc->status == IBV_WC_SUCCESS, RSEC_E_QP);
			if (wc->wr_id == wr_id)
				return 0;
			continue;
		}
		if (now_ms() > deadline)
			return RSEC_E_TIMEOUT;
		/* Spin briefly for latency, then back off so a soft-RoCE peer on the same CPUs can run. */
		if (++idle > 1000) {
			struct timespec ts = { 0, 50000 };

			nanosleep(&ts, NULL);
		}
	}
}

int rsec_qp_wait_wr(struct rsec_qp *q, uint64_t wr_id, int timeout_ms, struct ibv_wc *wc)
{
	RSEC_ENSURE(q != NULL && q->send_cq != NULL, RSEC_E_INVAL);
	return rsec_cq_wait(q->send_cq, wr_id, timeout_ms, wc);
}
