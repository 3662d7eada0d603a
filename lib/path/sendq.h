/* SPDX-License-Identifier: MIT */
/*
 * Sealed frames in flight on a connection's send queue (data.c), apart from
 * verbs so the bookkeeping can be tested on its own. Frames take the send
 * ring's slots in order, frame n in slot n % slots. Not every frame asks for
 * a completion (selective signalling, as perftest's --cq-mod): an RC send
 * queue completes in order, so a signaled frame's completion also ends every
 * unsignaled frame posted before it. That spares the device a completion
 * to write and us one to reap for most frames.
 *
 * A data frame's slot is also kept until the peer has opened it (its
 * credit came back: acked), so that a rebuilt data path can send it again
 * (rebuild.c). A data frame never takes the last slot whose frame could be
 * freed by a completion alone, so a credit-only frame always finds one and
 * two peers whose rings are full of each other's unacknowledged frames can
 * still return credits.
 *
 * Invariants: acked <= next, done <= next, next - done <= slots <=
 * RSEC_SENDQ_MAX; frames [done, next) are in flight; frames [acked, next)
 * that are data are kept; when the ring is full its newest frame is
 * signaled, so a full ring always ends in a completion that frees slots.
 */
#ifndef RSEC_SENDQ_H
#define RSEC_SENDQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "result.h"

/* Sends in flight at most: perftest's default TX depth. */
#define RSEC_SENDQ_MAX 128u

struct rsec_sendq {
	uint32_t slots;
	uint32_t signal_every;   /* frames per completion at most */
	uint32_t unsignaled_run; /* posted without a completion since the last signaled one */
	uint64_t next, done;     /* frame numbers: the next to post, the oldest in flight */
	uint64_t acked;          /* frames the peer has opened: [0, acked) */
	bool signaled[RSEC_SENDQ_MAX];
	bool kept[RSEC_SENDQ_MAX]; /* a data frame: its slot waits for acked too */
};

/* An empty queue of slots (1..RSEC_SENDQ_MAX) frames. Returns 0 or RSEC_E_INVAL. */
RSEC_MUST_CHECK int rsec_sendq_init(struct rsec_sendq *q, uint32_t slots);

/* Frames posted and not yet known to be complete. */
static inline uint32_t rsec_sendq_inflight(const struct rsec_sendq *q)
{
	return (uint32_t)(q->next - q->done);
}

/*
 * The slot of the next frame and whether its work request must be signaled
 * (the caller checked there is room). Nothing changes until rsec_sendq_posted.
 */
uint32_t rsec_sendq_peek(const struct rsec_sendq *q, bool *signaled);
/* The frame rsec_sendq_peek described was posted; kept: a data frame (see above). */
void rsec_sendq_posted(struct rsec_sendq *q, bool signaled, bool kept);

/* Is there a slot for the next frame, a data frame (kept) or a credit-only one? */
bool rsec_sendq_room(const struct rsec_sendq *q, bool kept);

/*
 * The peer opened n more of our frames (credits it returned). Returns 0, or
 * RSEC_E_PROTO when that would be more frames than were posted.
 */
RSEC_MUST_CHECK int rsec_sendq_ack(struct rsec_sendq *q, uint32_t n);

/* Frame f (acked <= f < next) is a data frame still in its slot, f % slots. */
bool rsec_sendq_kept(const struct rsec_sendq *q, uint64_t f);

/*
 * The send queue reported slot idx, successful or not. It and every frame
 * before it leave the queue. Returns how many frames left (>= 1), or
 * RSEC_E_VERBS with why when the device names a slot not in flight, reports
 * the success of an unsignaled frame, or skips a signaled one: the caller
 * fails the connection.
 */
RSEC_MUST_CHECK int rsec_sendq_complete(struct rsec_sendq *q, uint32_t idx, bool success, char *why, size_t whylen);

#endif /* RSEC_SENDQ_H */
