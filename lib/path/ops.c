/* SPDX-License-Identifier: MIT */
/* One-sided operations in flight; see ops.h for the rings and their invariants. */
#include <stdio.h>
#include <stdlib.h>

#include "ops.h"

int rsec_ops_init(struct rsec_ops *o, uint32_t depth)
{
	RSEC_ENSURE(o != NULL && depth > 0 && depth <= RSEC_MAX_INFLIGHT, RSEC_E_INVAL);
	*o = (struct rsec_ops){ .depth = depth };
	o->ring = calloc(depth, sizeof(*o->ring));
	o->done = calloc(depth, sizeof(*o->done));
	if (!o->ring || !o->done) {
		rsec_ops_free(o);
		return RSEC_E_NOMEM;
	}
	return 0;
}

void rsec_ops_free(struct rsec_ops *o)
{
	free(o->ring);
	free(o->done);
	*o = (struct rsec_ops){ 0 };
}

uint32_t rsec_ops_room(const struct rsec_ops *o)
{
	return o->depth - o->busy - o->done_n;
}

uint32_t rsec_ops_pending(const struct rsec_ops *o)
{
	return o->busy + o->done_n;
}

uint32_t rsec_ops_push(struct rsec_ops *o, const struct rsec_op_slot *op)
{
	uint32_t idx = (o->tail + o->busy) % o->depth;
	uint32_t run_max = o->depth / 2 ? o->depth / 2 : 1;
	o->busy++;
	o->ring[idx] = *op;
	bool quiet = op->reporting == RSEC_OP_SILENT || op->reporting == RSEC_OP_PIECE;
	o->ring[idx].signaled = !quiet || o->unsignaled_run + 1 >= run_max || rsec_ops_room(o) == 0;
	o->unsignaled_run = o->ring[idx].signaled ? 0 : o->unsignaled_run + 1;
	return idx;
}

void rsec_ops_unpush(struct rsec_ops *o)
{
	o->busy--;
	/* The run it extended or ended is unknown now: signal the next one. */
	o->unsignaled_run = o->depth;
}

static void finish(struct rsec_ops *o, struct rsec_op_slot *s, int status, rsec_ops_release_fn release,
		   void *arg)
{
	if (s->reporting == RSEC_OP_WAITER) {
		o->waiter_done = true;
		o->waiter_status = status;
	} else if (s->reporting == RSEC_OP_REPORT || (s->reporting == RSEC_OP_SILENT && status != 0)) {
		/* An unsignaled operation's failure is still the application's to see. */
		o->done[(o->done_head + o->done_n) % o->depth] = (struct rsec_wc){
			.user_id = s->user_id, .op = s->op, .status = status, .len = status == 0 ? s->len : 0,
		};
		o->done_n++;
	}
	if (release)
		release(arg, s, status);
	s->owner = NULL;
	s->then = NULL;
	o->tail = (o->tail + 1) % o->depth;
	o->busy--;
}

int rsec_ops_complete(struct rsec_ops *o, uint32_t idx, int status, rsec_ops_release_fn release, void *arg,
		      char *why, size_t whylen)
{
	uint32_t dist = idx < o->depth ? (idx + o->depth - o->tail) % o->depth : UINT32_MAX;
	if (dist >= o->busy) {
		snprintf(why, whylen, "completion for one-sided operation slot %u, which is not in flight", idx);
		return RSEC_E_VERBS;
	}
	if (status == 0 && !o->ring[idx].signaled) {
		snprintf(why, whylen, "completion for unsignaled one-sided operation slot %u", idx);
		return RSEC_E_VERBS;
	}
	for (uint32_t k = 0; k < dist; k++)
		if (o->ring[(o->tail + k) % o->depth].signaled) {
			snprintf(why, whylen, "one-sided operation slot %u completed before slot %u, posted earlier",
				 idx, (o->tail + k) % o->depth);
			return RSEC_E_VERBS;
		}
	for (uint32_t k = 0; k <= dist; k++)
		finish(o, &o->ring[o->tail], k == dist ? status : 0, release, arg);
	return 0;
}

bool rsec_ops_flush_through(struct rsec_ops *o, uint32_t idx, int status, rsec_ops_release_fn release, void *arg)
{
	uint32_t dist = idx < o->depth ? (idx + o->depth - o->tail) % o->depth : UINT32_MAX;
	if (dist >= o->busy)
		return false;
	for (uint32_t k = 0; k <= dist; k++)
		finish(o, &o->ring[o->tail], status, release, arg);
	return true;
}

void rsec_ops_flush(struct rsec_ops *o, int status, rsec_ops_release_fn release, void *arg)
{
	while (o->busy)
		finish(o, &o->ring[o->tail], status, release, arg);
}

unsigned rsec_ops_take(struct rsec_ops *o, struct rsec_wc *wc, unsigned max)
{
	unsigned n = 0;
	while (n < max && o->done_n) {
		wc[n++] = o->done[o->done_head];
		o->done_head = (o->done_head + 1) % o->depth;
		o->done_n--;
	}
	return n;
}
