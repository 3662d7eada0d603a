/* SPDX-License-Identifier: MIT */
/*
 * Doorbell batching (qp.h, rsec_qp_post): on a software device every
 * ibv_post_send is a system call in which the kernel also sends the packets,
 * so work requests a caller posts in one turn are held, copied, while the
 * queue pair is corked and go to the device in one chain.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "qp.h"

struct rsec_qp_held {
	unsigned n;
	struct ibv_send_wr wr[RSEC_QP_HELD_MAX];
	struct ibv_sge sge[RSEC_QP_HELD_MAX];
};

/* The device takes held[0..n) as one chain; *taken: how many it took. Returns 0 or ibv_post_send's errno. */
static int ring(struct rsec_qp *q, unsigned *taken)
{
	struct rsec_qp_held *h = q->held;
	*taken = 0;
	if (!h || h->n == 0)
		return 0;
	for (unsigned i = 0; i < h->n; i++)
		h->wr[i].next = i + 1 < h->n ? &h->wr[i + 1] : NULL;
	struct ibv_send_wr *bad = NULL;
	int err = ibv_post_send(q->qp, h->wr, &bad);
	*taken = !err ? h->n : bad >= h->wr && bad < h->wr + h->n ? (unsigned)(bad - h->wr) : 0;
	memset(h->wr, 0, sizeof(h->wr[0]) * h->n); /* inline frames' addresses, window keys */
	h->n = 0;
	return err;
}

int rsec_qp_flush(struct rsec_qp *q)
{
	unsigned taken;
	return ring(q, &taken);
}

void rsec_qp_cork(struct rsec_qp *q, bool on)
{
	q->corked = on;
}

void rsec_qp_drop_held(struct rsec_qp *q)
{
	if (q->held) {
		memset(q->held, 0, sizeof(*q->held));
		free(q->held);
	}
	q->held = NULL;
}

static unsigned chain_len(const struct ibv_send_wr *wr)
{
	unsigned n = 0;
	for (; wr; wr = wr->next)
		n++;
	return n;
}

/* Copy the chain behind what is held; every request carries at most one SGE (the caller checked). */
static void hold(struct rsec_qp_held *h, const struct ibv_send_wr *wr)
{
	for (; wr; wr = wr->next, h->n++) {
		struct ibv_send_wr *w = &h->wr[h->n];
		*w = *wr;
		w->next = NULL;
		if (wr->num_sge == 1) {
			h->sge[h->n] = wr->sg_list[0];
			w->sg_list = &h->sge[h->n];
		}
	}
}

static bool holdable(const struct ibv_send_wr *wr)
{
	for (; wr; wr = wr->next)
		if (wr->num_sge > 1)
			return false;
	return true;
}

int rsec_qp_post(struct rsec_qp *q, struct ibv_send_wr *wr, unsigned *taken)
{
	unsigned n = chain_len(wr);
	*taken = 0;
	bool held_before = q->held && q->held->n;
	if (!q->corked && !held_before) {
		struct ibv_send_wr *bad = NULL;
		int err = ibv_post_send(q->qp, wr, &bad);
		*taken = n;
		if (err) {
			*taken = 0;
			for (const struct ibv_send_wr *w = wr; w && w != bad; w = w->next)
				++*taken;
		}
		return err;
	}
	if (!q->held && !(q->held = calloc(1, sizeof(*q->held))))
		return ENOMEM;
	if (n > RSEC_QP_HELD_MAX || !holdable(wr)) {
		/* Too long or too wide to copy: what is held goes first, then the chain as it is. */
		int err = rsec_qp_flush(q);
		if (err)
			return err;
		bool corked = q->corked;
		q->corked = false;
		err = rsec_qp_post(q, wr, taken);
		q->corked = corked;
		return err;
	}
	if (q->held->n + n > RSEC_QP_HELD_MAX) {
		int err = rsec_qp_flush(q);
		if (err)
			return err;
	}
	unsigned before = q->held->n;
	hold(q->held, wr);
	if (q->corked) {
		*taken = n;
		return 0;
	}
	unsigned took;
	int err = ring(q, &took);
	*taken = took > before ? took - before : 0;
	return err;
}
