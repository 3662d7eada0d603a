/* SPDX-License-Identifier: MIT */
/*
 * Posted one-sided operations: rsec_post and its one-operation forms over
 * path/onesided.c's rsec_onesided_post, a fault it found settled before the
 * call returns; rsec_poll, their completions, waiting for the first up to
 * timeout_ms; rsec_conn_cork and rsec_conn_uncork, one doorbell for a
 * turn's posts.
 */
#include <stdbool.h>

#include "session/conn.h"

int rsec_post(struct rsec_conn *c, const struct rsec_wr *wr, unsigned n, unsigned *posted)
{
	if (posted)
		*posted = 0;
	if (!c || (!wr && n))
		return RSEC_E_INVAL;
	return rsec_conn_settle(c, rsec_onesided_post(&c->path, wr, n, posted));
}

static int post_one(struct rsec_conn *c, enum rsec_op op, const struct rsec_remote_grant *g, uint64_t remote_off,
		    struct rsec_region *local, size_t local_off, uint32_t len, uint64_t user_id)
{
	struct rsec_wr w = {
		.user_id = user_id, .op = op, .grant = g, .remote_off = remote_off, .local = local,
		.local_off = local_off, .len = len,
	};
	return rsec_post(c, &w, 1, NULL);
}

int rsec_post_write(struct rsec_conn *c, const struct rsec_remote_grant *g, uint64_t remote_off,
		    struct rsec_region *local, size_t local_off, uint32_t len, uint64_t user_id)
{
	return post_one(c, RSEC_OP_WRITE, g, remote_off, local, local_off, len, user_id);
}

int rsec_post_read(struct rsec_conn *c, const struct rsec_remote_grant *g, uint64_t remote_off,
		   struct rsec_region *local, size_t local_off, uint32_t len, uint64_t user_id)
{
	return post_one(c, RSEC_OP_READ, g, remote_off, local, local_off, len, user_id);
}

static bool have_completions(struct rsec_conn *c, void *arg)
{
	(void)arg;
	return c->path.ops.done_n > 0;
}

int rsec_poll(struct rsec_conn *c, struct rsec_wc *wc, unsigned max, int timeout_ms)
{
	if (!c || (!wc && max))
		return RSEC_E_INVAL;
	int rc = 0;
	if (!have_completions(c, NULL) && c->path.phase != PHASE_CLOSED)
		rc = rsec_conn_wait_for(c, have_completions, NULL, timeout_ms);
	/* A closed connection's operations end with the flushed completions, or with its QP. */
	if (c->path.phase == PHASE_CLOSED && c->path.ops.busy && !rsec_onesided_drain(&c->path))
		rsec_conn_teardown_rdma(c);
	unsigned n = rsec_onesided_reap(&c->path, wc, max);
	if (n)
		return (int)n;
	if (c->path.phase == PHASE_CLOSED)
		return c->path.close_code;
	return rc == RSEC_E_TIMEOUT || rc == RSEC_E_AGAIN ? 0 : rc;
}

unsigned rsec_inflight(const struct rsec_conn *c)
{
	return c ? rsec_onesided_inflight(&c->path) : 0;
}

void rsec_conn_cork(struct rsec_conn *c)
{
	if (c)
		rsec_data_cork(&c->path, true);
}

int rsec_conn_uncork(struct rsec_conn *c)
{
	if (!c)
		return RSEC_E_INVAL;
	rsec_data_cork(&c->path, false);
	if (c->path.phase == PHASE_CLOSED)
		return c->path.close_code;
	return rsec_conn_settle(c, rsec_data_flush(&c->path));
}

_Static_assert(RSEC_CORK_MAX == RSEC_QP_HELD_MAX, "rdmasec.h's RSEC_CORK_MAX is what the queue pair holds");
