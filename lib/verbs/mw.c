/* SPDX-License-Identifier: MIT */
#include <string.h>
#include <openssl/rand.h>

#include "mw.h"

int rsec_mr_reg(struct rsec_qp *q, void *addr, size_t len, bool remote_write, struct ibv_mr **out)
{
	int access = IBV_ACCESS_MW_BIND | (remote_write ? IBV_ACCESS_LOCAL_WRITE : 0);

	RSEC_ENSURE(q != NULL && q->pd != NULL && addr != NULL && len > 0 && out != NULL, RSEC_E_INVAL);
	*out = ibv_reg_mr(q->pd, addr, len, access);
	RSEC_ENSURE(*out != NULL, RSEC_E_VERBS);
	return 0;
}

int rsec_mw_alloc(struct rsec_qp *q, struct rsec_mw *w)
{
	RSEC_ENSURE(q != NULL && q->pd != NULL && q->dev != NULL && w != NULL, RSEC_E_INVAL);
	memset(w, 0, sizeof(*w));
	RSEC_ENSURE(q->dev->mw_type2, RSEC_E_NODEV);
	w->mw = ibv_alloc_mw(q->pd, IBV_MW_TYPE_2);
	RSEC_ENSURE(w->mw != NULL, RSEC_E_VERBS);
	w->rkey = w->mw->rkey;
	return 0;
}

int rsec_mw_next_rkey(uint32_t old, uint32_t *next)
{
	uint8_t b;

	RSEC_ENSURE_REF(next);
	do
		RSEC_ENSURE(RAND_bytes(&b, 1) == 1, RSEC_E_CRYPTO);
	while (b == (old & 0xff));
	*next = (old & ~0xffu) | b;
	return 0;
}

int rsec_mw_bind_post(struct rsec_qp *q, struct rsec_mw *w, struct ibv_mr *mr, uint64_t addr, uint64_t len,
		      int access, uint64_t wr_id)
{
	struct ibv_send_wr wr, *bad = NULL;
	uint64_t mr_start, mr_end;
	uint32_t next;

	RSEC_ENSURE(q != NULL && q->qp != NULL && w != NULL && w->mw != NULL && mr != NULL, RSEC_E_INVAL);
	RSEC_ENSURE(!w->bound, RSEC_E_INVAL);
	RSEC_ENSURE(access != 0 && (access & ~(IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE)) == 0,
		    RSEC_E_INVAL);
	mr_start = (uint64_t)(uintptr_t)mr->addr;
	mr_end = mr_start + mr->length;
	RSEC_ENSURE(len > 0 && addr >= mr_start && addr <= mr_end && len <= mr_end - addr, RSEC_E_RANGE);
	RSEC_GUARD(rsec_mw_next_rkey(w->mw->rkey, &next));

	/*
	 * Legacy post_send carries type-2 binds on rxe: ibv_bind_mw() accepts
	 * type 1 only. rxe names the window by bind_mw.mw->rkey, which must be
	 * its current key, and takes the new key byte from bind_mw.rkey.
	 */
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = w->mw;
	wr.bind_mw.rkey = next;
	wr.bind_mw.bind_info.mr = mr;
	wr.bind_mw.bind_info.addr = addr;
	wr.bind_mw.bind_info.length = len;
	wr.bind_mw.bind_info.mw_access_flags = (unsigned)access;
	/* After what the QP holds (doorbell.c), in the order it was posted. */
	RSEC_ENSURE(rsec_qp_flush(q) == 0 && ibv_post_send(q->qp, &wr, &bad) == 0, RSEC_E_VERBS);
	/* The provider does not track type-2 keys; the next bind must name this one. */
	w->mw->rkey = next;
	w->rkey = next;
	w->addr = addr;
	w->len = len;
	w->access = access;
	w->bound = true;
	return 0;
}

int rsec_mw_invalidate_post(struct rsec_qp *q, struct rsec_mw *w, uint64_t wr_id)
{
	struct ibv_send_wr wr, *bad = NULL;

	RSEC_ENSURE(q != NULL && q->qp != NULL && w != NULL && w->mw != NULL, RSEC_E_INVAL);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = IBV_WR_LOCAL_INV;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.invalidate_rkey = w->rkey;
	/* After what the QP holds (doorbell.c), in the order it was posted. */
	RSEC_ENSURE(rsec_qp_flush(q) == 0 && ibv_post_send(q->qp, &wr, &bad) == 0, RSEC_E_VERBS);
	w->bound = false;
	return 0;
}

int rsec_mw_free(struct rsec_mw *w)
{
	if (w == NULL)
		return 0;
	int rc = 0;
	if (w->mw != NULL && ibv_dealloc_mw(w->mw) != 0)
		rc = RSEC_E_VERBS;
	memset(w, 0, sizeof(*w));
	return rc;
}
