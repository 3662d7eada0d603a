/* SPDX-License-Identifier: MIT */
/*
 * Per-connection verbs resources: each connection gets its own PD (ReDMArk
 * mitigation M5: no other connection's QP can reach its memory), its own CQs
 * on one completion channel, and one RC QP.
 */
#ifndef RSEC_QP_H
#define RSEC_QP_H

#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#include "dev.h"
#include "result.h"

struct rsec_qp {
	struct rsec_dev *dev;        /* holds one reference */
	struct ibv_pd *pd;
	struct ibv_comp_channel *chan;
	struct ibv_cq *send_cq, *recv_cq;
	struct ibv_qp *qp;
	uint32_t local_psn;
	uint32_t max_inline; /* bytes a send may carry inline (the device's answer to RSEC_QP_INLINE) */
	uint32_t send_wr, recv_wr; /* what it was created with */
	bool corked;                 /* rsec_qp_post holds work requests */
	struct rsec_qp_held *held;   /* what it holds (doorbell.c); NULL until first held */
};

/* Inline data we ask for: a small message's frame (64 B + 32 B of overhead) fits. */
#define RSEC_QP_INLINE 128u

/* What one side tells the other to connect (over the authenticated channel only). */
struct rsec_qp_peer {
	uint32_t qpn, psn;
	uint16_t lid;
	union ibv_gid gid;
	enum ibv_mtu mtu;
};

#define RSEC_PSN_MASK 0xffffffu

/* A PSN from RAND_bytes, uniform over all 2^24 values. Returns 0 or RSEC_E_CRYPTO. */
RSEC_MUST_CHECK int rsec_psn_random(uint32_t *psn);

/*
 * PD, completion channel, send and receive CQs (both on the channel, armed),
 * an RC QP moved to INIT with REMOTE_READ|REMOTE_WRITE access (remote access
 * is still gated per region by type-2 windows), and a random local PSN. q
 * must be zeroed or destroyed; on error everything is unwound and q is zero.
 * Returns 0, RSEC_E_INVAL, RSEC_E_RANGE (WR counts beyond the device), RSEC_E_VERBS, RSEC_E_CRYPTO.
 */
RSEC_MUST_CHECK int rsec_qp_create(struct rsec_dev *d, uint32_t send_wr, uint32_t recv_wr, struct rsec_qp *q);

/* Fill what we send to the peer: QPN, PSN, LID, GID, active MTU. */
void rsec_qp_describe_local(const struct rsec_qp *q, struct rsec_qp_peer *out);

/* Reject a peer description that cannot be right (QPN 0/1 or > 24 bits, PSN > 24 bits, bad MTU). */
RSEC_MUST_CHECK int rsec_qp_peer_check(const struct rsec_qp_peer *peer);

/* The path MTU two sides agree on: the smaller; a bad value gives 0. */
enum ibv_mtu rsec_qp_path_mtu(enum ibv_mtu local, enum ibv_mtu remote);

/* INIT -> RTR -> RTS against peer. Returns 0, RSEC_E_INVAL, RSEC_E_PROTO (bad peer), RSEC_E_VERBS. */
RSEC_MUST_CHECK int rsec_qp_connect(struct rsec_qp *q, const struct rsec_qp_peer *peer);

/*
 * A new QP in place of q's (a rebuilt data path, rebuild.c): the old one is
 * destroyed and what it left in the CQs dropped; the new one, on the same
 * PD and CQs (so registrations stay valid), gets a fresh random PSN and a
 * QP number past a random 0..burn_max throwaway QPs, and is in INIT.
 * Returns 0, RSEC_E_INVAL, RSEC_E_VERBS (q->qp is NULL then), RSEC_E_CRYPTO.
 */
RSEC_MUST_CHECK int rsec_qp_renew(struct rsec_qp *q, uint32_t burn_max);

/*
 * Create and destroy up to n minimal QPs on pd (never posted to), so the
 * device's next QP number moves on by that many; stops early when *stop
 * (may be NULL) becomes true or the device refuses. Returns how many.
 */
uint32_t rsec_qpn_burn(struct ibv_pd *pd, struct ibv_cq *send_cq, struct ibv_cq *recv_cq, uint32_t n,
		       const _Atomic bool *stop);

/* Move to ERR so outstanding WRs flush (orderly teardown); what rsec_qp_post holds is posted first, to flush too. */
RSEC_MUST_CHECK int rsec_qp_to_error(struct rsec_qp *q);

/* Current QP state, or -1 if it cannot be queried. */
int rsec_qp_state(const struct rsec_qp *q);

/*
 * Destroy in reverse order; safe on a zeroed or partly created q. Memory
 * windows and MRs of q->pd must be freed first.
 */
void rsec_qp_destroy(struct rsec_qp *q);

/*
 * Poll cq until the completion of wr_id arrives or timeout_ms passes.
 * Successful completions of other WRs are discarded (meant for synchronous
 * use). Returns 0 (wc filled), RSEC_E_TIMEOUT, RSEC_E_VERBS (poll failed), or
 * RSEC_E_QP on an error completion of any WR (wc holds it; ibv_wc_status_str
 * names the status).
 */
RSEC_MUST_CHECK int rsec_cq_wait(struct ibv_cq *cq, uint64_t wr_id, int timeout_ms, struct ibv_wc *wc);
/* rsec_cq_wait on the send CQ. */
RSEC_MUST_CHECK int rsec_qp_wait_wr(struct rsec_qp *q, uint64_t wr_id, int timeout_ms, struct ibv_wc *wc);

/* Work requests held at most while corked: a turn's worth; more rings the doorbell first. */
#define RSEC_QP_HELD_MAX 64u

/*
 * rsec_qp_post - post a chain of send work requests (doorbell.c). Not
 * corked: whatever is held goes first, in the same ibv_post_send. Corked:
 * the chain is copied and held for rsec_qp_flush, which rings the doorbell
 * once for all of it (a chain with more than one SGE per request, or too
 * long to hold, goes at once, after what was held). *taken: how many of the
 * chain the device took or holds. Returns 0, or ibv_post_send's errno (held
 * requests of earlier calls may have been refused with it: the caller fails
 * the data path, which ends what it posted), ENOMEM.
 */
RSEC_MUST_CHECK int rsec_qp_post(struct rsec_qp *q, struct ibv_send_wr *wr, unsigned *taken);
/* Hold (on) or stop holding; stopping posts nothing: rsec_qp_flush does. */
void rsec_qp_cork(struct rsec_qp *q, bool on);
/* Post what is held as one chain. Returns 0 or ibv_post_send's errno (what was held is dropped then). */
RSEC_MUST_CHECK int rsec_qp_flush(struct rsec_qp *q);
/* Forget what is held: the QP goes away (rsec_qp_destroy, rsec_qp_renew). */
void rsec_qp_drop_held(struct rsec_qp *q);

#endif /* RSEC_QP_H */
