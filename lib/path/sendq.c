/* SPDX-License-Identifier: MIT */
/* Sealed frames in flight; see sendq.h for the ring and its invariants. */
#include <stdio.h>
#include <string.h>

#include "sendq.h"

int rsec_sendq_init(struct rsec_sendq *q, uint32_t slots)
{
	RSEC_ENSURE(q != NULL && slots > 0 && slots <= RSEC_SENDQ_MAX, RSEC_E_INVAL);
	/* A quarter of the ring per completion: slots come back in batches
	 * while three quarters of the ring stay usable. */
	*q = (struct rsec_sendq){ .slots = slots, .signal_every = slots / 4 ? slots / 4 : 1 };
	return 0;
}

uint32_t rsec_sendq_peek(const struct rsec_sendq *q, bool *signaled)
{
	*signaled = q->unsignaled_run + 1 >= q->signal_every || rsec_sendq_inflight(q) + 1 >= q->slots;
	return (uint32_t)(q->next % q->slots);
}

void rsec_sendq_posted(struct rsec_sendq *q, bool signaled, bool kept)
{
	q->signaled[q->next % q->slots] = signaled;
	q->kept[q->next % q->slots] = kept;
	q->unsignaled_run = signaled ? 0 : q->unsignaled_run + 1;
	q->next++;
}

int rsec_sendq_complete(struct rsec_sendq *q, uint32_t idx, bool success, char *why, size_t whylen)
{
	uint32_t inflight = rsec_sendq_inflight(q);
	uint32_t oldest = (uint32_t)(q->done % q->slots);
	/* How far idx is past the oldest frame in flight: frame done + ahead. */
	uint32_t ahead = idx < q->slots ? (idx + q->slots - oldest) % q->slots : UINT32_MAX;
	if (ahead >= inflight) {
		snprintf(why, whylen, "send completion for slot %u, which holds no frame in flight", idx);
		return RSEC_E_VERBS;
	}
	/* A successful completion is one we asked for, and none we asked for earlier was skipped. */
	if (success && !q->signaled[idx]) {
		snprintf(why, whylen, "send completion for slot %u, which was posted without one", idx);
		return RSEC_E_VERBS;
	}
	for (uint32_t k = 0; success && k < ahead; k++) {
		if (q->signaled[(oldest + k) % q->slots]) {
			snprintf(why, whylen, "send completion for slot %u before the one asked for slot %u", idx,
				 (oldest + k) % q->slots);
			return RSEC_E_VERBS;
		}
	}
	q->done += (uint64_t)ahead + 1;
	return (int)(ahead + 1);
}

/* May frame number f's slot take a new frame, as far as the peer is concerned (f < 0: never used)? */
static bool released(const struct rsec_sendq *q, uint64_t next, uint64_t back)
{
	if (next < back)
		return true;
	uint64_t f = next - back;
	return f < q->acked || !q->kept[f % q->slots];
}

bool rsec_sendq_room(const struct rsec_sendq *q, bool kept)
{
	/* Completions free [done, next); the peer's credits free what is kept. */
	if (rsec_sendq_inflight(q) >= q->slots || !released(q, q->next, q->slots))
		return false;
	/* A data frame leaves the slot after it to a credit-only frame. */
	return !kept || (q->slots > 1 && released(q, q->next + 1, q->slots));
}

int rsec_sendq_ack(struct rsec_sendq *q, uint32_t n)
{
	RSEC_ENSURE(n <= q->next - q->acked, RSEC_E_PROTO);
	q->acked += n;
	return 0;
}

bool rsec_sendq_kept(const struct rsec_sendq *q, uint64_t f)
{
	return f >= q->acked && f < q->next && f + q->slots >= q->next && q->kept[f % q->slots];
}
