/* SPDX-License-Identifier: MIT */
/*
 * QPN randomization (ReDMArk §7, mitigations M1/M2): the device numbers QPs
 * sequentially (rxe: device-wide, cyclic), so a peer that learns its own
 * connection's QPN can guess its neighbours'. A pool keeps N whole
 * per-connection resource sets (struct rsec_qp: own PD, channel, CQs, QP in
 * INIT with a random PSN) ready, and a connection takes one uniformly at
 * random. A worker thread refills the pool in the background, optionally
 * "burning" a random number of QPNs (throwaway QPs) before each new entry to
 * spread the pool over more numbers. docs/qpn.md has the measurements.
 *
 * This only defeats off-path guessing: QPNs still travel in the clear in
 * every packet header.
 */
#ifndef RSEC_QPOOL_H
#define RSEC_QPOOL_H

#include <stdbool.h>
#include <stdint.h>

#include "dev.h"
#include "qp.h"
#include "base/random.h"
#include "result.h"

#define RSEC_QPOOL_DEFAULT 32u   /* entries, when not configured */
#define RSEC_QPOOL_DEFAULT_CLIENT 4u /* clients usually hold one connection per context */
#define RSEC_QPOOL_MAX 1024u
#define RSEC_QPOOL_BURN_DEFAULT 16u /* +3 bits for ~3.6 ms of background work per connection on rxe (docs/qpn.md) */
#define RSEC_QPOOL_BURN_MAX 4096u

struct rsec_qpool;

struct rsec_qpool_opts {
	uint32_t size;     /* 1..RSEC_QPOOL_MAX entries; 1: off, every take creates a QP */
	uint32_t burn_max; /* before each new entry, burn 0..burn_max QPNs (uniform); 0: none */
	uint32_t send_wr, recv_wr; /* what rsec_qp_create gets */
};

struct rsec_qpool_stats {
	uint64_t taken;     /* QPs handed out */
	uint64_t empty;     /* takes that found the pool empty and created on demand */
	uint64_t created;   /* entries the worker created */
	uint64_t failures;  /* the worker's failed creations (it then waits for the next take) */
	uint64_t burned;    /* QPNs burned */
	uint64_t create_ns; /* worker time spent creating entries */
	uint64_t burn_ns;   /* worker time spent burning */
	uint32_t ready;     /* entries waiting now */
};

/* Pool size from rsec_ctx_attr.qp_pool: the role's default unless given and non-zero. */
uint32_t rsec_qpool_size(bool given, uint32_t value, bool is_server);

/*
 * A pool on d (one reference held) that starts filling at once in its own
 * thread (signals blocked there). Returns 0, RSEC_E_INVAL, RSEC_E_RANGE,
 * RSEC_E_NOMEM, RSEC_E_IO (no thread).
 */
RSEC_MUST_CHECK int rsec_qpool_new(struct rsec_dev *d, const struct rsec_qpool_opts *o, struct rsec_qpool **out);

/*
 * Move a uniformly chosen entry into q (zeroed or destroyed) and wake the
 * worker; if the pool is empty, create one now (counted in stats.empty).
 * The caller owns q and destroys it with rsec_qp_destroy. Thread-safe.
 * Returns 0 or rsec_qp_create's errors.
 */
RSEC_MUST_CHECK int rsec_qpool_take(struct rsec_qpool *p, struct rsec_qp *q);

/*
 * Wait until at least n entries are ready (benchmarks, tests). Returns 0,
 * RSEC_E_INVAL (n beyond the pool), RSEC_E_TIMEOUT, RSEC_E_VERBS (the
 * worker failed and waits for a take).
 */
RSEC_MUST_CHECK int rsec_qpool_wait_ready(struct rsec_qpool *p, uint32_t n, int timeout_ms);

void rsec_qpool_stats(struct rsec_qpool *p, struct rsec_qpool_stats *out);

/* Stop the worker (after the creation under way), destroy every entry, drop the device. NULL is a no-op. */
void rsec_qpool_free(struct rsec_qpool *p);

#endif /* RSEC_QPOOL_H */
