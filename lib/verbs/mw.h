/* SPDX-License-Identifier: MIT */
/*
 * Type-2 memory windows (ReDMArk mitigation M4): the only way a remote peer
 * gets access to local memory. The MR underneath carries no remote access,
 * so its rkey is useless to anyone; each window is bound to one QP, with a
 * fresh random key byte per binding.
 */
#ifndef RSEC_MW_H
#define RSEC_MW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#include "qp.h"
#include "result.h"

/*
 * Register [addr, addr+len) in q's PD for windows: MW_BIND, plus LOCAL_WRITE
 * when remote_write (binding a REMOTE_WRITE window needs it on the MR, IBTA
 * C10-74). No REMOTE_* access: rxe then reports rkey 0 for the MR.
 * Returns 0, RSEC_E_INVAL, RSEC_E_VERBS.
 */
RSEC_MUST_CHECK int rsec_mr_reg(struct rsec_qp *q, void *addr, size_t len, bool remote_write, struct ibv_mr **out);

struct rsec_mw {
	struct ibv_mw *mw;
	uint32_t rkey;      /* current key; after a bind, valid once its completion succeeded */
	uint64_t addr;
	uint64_t len;
	int access;
	bool bound;
};

/* Allocate a type-2 window in q's PD. Returns 0, RSEC_E_NODEV (no type-2 support), RSEC_E_VERBS. */
RSEC_MUST_CHECK int rsec_mw_alloc(struct rsec_qp *q, struct rsec_mw *w);

/* The next rkey: same index (upper 24 bits), new random low byte != old's. Returns 0 or RSEC_E_CRYPTO. */
RSEC_MUST_CHECK int rsec_mw_next_rkey(uint32_t old, uint32_t *next);

/*
 * Post a signaled BIND_MW WR binding w (which must be unbound) to
 * [addr, addr+len) of mr, for this QP only, with a fresh key byte and access
 * IBV_ACCESS_REMOTE_READ and/or IBV_ACCESS_REMOTE_WRITE. The caller reaps the
 * completion (wr_id). If that completion fails the window's key is unknown:
 * free it. Returns 0, RSEC_E_INVAL, RSEC_E_RANGE, RSEC_E_CRYPTO, RSEC_E_VERBS.
 */
RSEC_MUST_CHECK int rsec_mw_bind_post(struct rsec_qp *q, struct rsec_mw *w, struct ibv_mr *mr, uint64_t addr,
				      uint64_t len, int access, uint64_t wr_id);

/*
 * Post a signaled LOCAL_INV of w's current rkey; the window can be bound
 * again afterwards. To revoke for good, prefer rsec_mw_free: a FREE window
 * keeps the key the peer saw, and on rxe (kernel 6.1) a remote SEND_WITH_INV
 * of a FREE type-2 window panics the host (docs/verbs.md).
 */
RSEC_MUST_CHECK int rsec_mw_invalidate_post(struct rsec_qp *q, struct rsec_mw *w, uint64_t wr_id);

/*
 * Deallocate (invalidates any binding); w is zeroed. NULL-safe. Returns
 * RSEC_E_VERBS if the device refused: the window (and its key) may live on.
 */
int rsec_mw_free(struct rsec_mw *w);

#endif /* RSEC_MW_H */
