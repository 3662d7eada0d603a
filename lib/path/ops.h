/* SPDX-License-Identifier: MIT */
/*
 * One-sided operations in flight on a connection (rsec_post), apart from
 * verbs so the bookkeeping can be tested on its own. Operations sit in a
 * ring in the order they were posted; an RC send queue completes them in
 * that order, so the completion of the operation in slot i also completes
 * every unsignaled one posted before it. Completions the application asked
 * for wait in a second ring until rsec_poll takes them; both rings together
 * never hold more than depth operations, so a caller that never polls is
 * refused new work instead of growing memory.
 *
 * Invariants: 0 <= busy <= depth, 0 <= done_n <= depth, busy + done_n <=
 * depth; slots [tail, tail + busy) (mod depth) are in flight.
 */
#ifndef RSEC_OPS_H
#define RSEC_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdmasec.h"
#include "result.h"

/* Who waits for an operation's completion. */
enum rsec_op_reporting {
	RSEC_OP_REPORT,  /* the application, through rsec_poll */
	RSEC_OP_SILENT,  /* nobody: posted unsignaled (RSEC_WR_UNSIGNALED) */
	RSEC_OP_WAITER,  /* a blocking call of the library (rsec_write, rsec_read) */
	RSEC_OP_PIECE,   /* a piece of the waiter's operation before its last, which reports for all */
};

struct rsec_op_slot {
	uint64_t user_id;
	enum rsec_op op;
	uint32_t len;
	enum rsec_op_reporting reporting;
	bool signaled;  /* posted with a completion of its own */
	void *owner;    /* what the operation holds (a region, a registration), released when it is done */
	void *then;     /* what to do once it succeeded (a sealed write to claim), for the release function */
};

struct rsec_ops {
	uint32_t depth;
	struct rsec_op_slot *ring;
	uint32_t tail, busy;      /* oldest slot in flight, how many are */
	uint32_t unsignaled_run;  /* posted without a completion since the last signaled one */
	struct rsec_wc *done;     /* completions for rsec_poll, oldest at done_head */
	uint32_t done_head, done_n;
	bool waiter_done;         /* the RSEC_OP_WAITER operation finished ... */
	int waiter_status;        /* ... with this status */
};

/* Called for each operation as it leaves the ring with its status, to release slot->owner. */
typedef void (*rsec_ops_release_fn)(void *arg, struct rsec_op_slot *slot, int status);

/* Allocate for depth (1..RSEC_MAX_INFLIGHT) operations. Returns 0, RSEC_E_INVAL, RSEC_E_NOMEM. */
RSEC_MUST_CHECK int rsec_ops_init(struct rsec_ops *o, uint32_t depth);
/* Free both rings; the caller flushed what was in flight. Safe on a zeroed struct. */
void rsec_ops_free(struct rsec_ops *o);

/* Operations that may still be posted now (depth - busy - done_n). */
uint32_t rsec_ops_room(const struct rsec_ops *o);
/* Posted and not yet taken by rsec_ops_take (nor finished for a waiter). */
uint32_t rsec_ops_pending(const struct rsec_ops *o);

/*
 * Claim the next slot for an operation (the caller checked rsec_ops_room)
 * and decide whether it must be signaled: when reporting asks for it, or
 * to bound the run of unsignaled operations (half the depth) and never fill
 * the ring with operations nothing will complete. Returns the slot index.
 */
uint32_t rsec_ops_push(struct rsec_ops *o, const struct rsec_op_slot *op);
/* Undo the last rsec_ops_push (its work request was never posted). */
void rsec_ops_unpush(struct rsec_ops *o);

/*
 * The send queue reported slot idx: status 0 (success) or the RSEC_E_*
 * code to report. Every operation posted before it leaves the ring with it
 * (RC completes in order): they succeeded unless this is an error of the
 * first of them. Returns 0, or RSEC_E_VERBS with why when the device names
 * a slot not in flight, or a success of an unsignaled slot, or skips a
 * signaled one: the caller fails the connection.
 */
RSEC_MUST_CHECK int rsec_ops_complete(struct rsec_ops *o, uint32_t idx, int status, rsec_ops_release_fn release,
				      void *arg, char *why, size_t whylen);

/*
 * The connection failed and the device flushed slot idx: it and every
 * operation before it leave with status (whether an unsignaled one before
 * it happened is unknown). Returns false if idx is not in flight.
 */
bool rsec_ops_flush_through(struct rsec_ops *o, uint32_t idx, int status, rsec_ops_release_fn release, void *arg);

/* Every operation still in flight leaves with status (the connection closed: none can touch memory now). */
void rsec_ops_flush(struct rsec_ops *o, int status, rsec_ops_release_fn release, void *arg);

/* Move up to max completions for the application into wc; returns how many. */
unsigned rsec_ops_take(struct rsec_ops *o, struct rsec_wc *wc, unsigned max);

#endif /* RSEC_OPS_H */
