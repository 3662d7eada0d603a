/* SPDX-License-Identifier: MIT */
/*
 * Further queue pairs of a session ("lanes", rsec_conn_add_qp): more QPs
 * under one authenticated TLS session, brought up without a handshake.
 *
 * A lane is a struct rsec_conn of its own for everything on the data path
 * (QP from the pool, PSNs, message keys, regions, grants, operations), so
 * data.c, grant.c and onesided.c need not know about lanes. What it shares
 * is its root's TLS channel: its frames carry its index in the frame header
 * (wire.h), chan.c sends them through the root, and the root's reader hands
 * them here. The set-up is the second half of the connection's own:
 *
 *   client                                 server
 *   QP_INFO on lane n (n: the next index) ->  max_qps allows it: a lane, its
 *                                             QP from the pool, RTR/RTS
 *                                         <-  QP_INFO on lane n
 *   RTR/RTS, READY on lane n              ->  established; rsec_conn_add_qp
 *                                             hands it to the application
 *
 * or, past the server's max_qps, ERROR (RSEC_E_LIMIT) on lane n. Keys come
 * from the session's TLS exporter with the lane in the context (seal.c), so
 * no lane reuses another's nonces; grant ids carry the lane (grant_table.h).
 * A lane's failure closes that lane only; the root's closes all of them.
 */
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>

#include <openssl/crypto.h>

#include "base/errtext.h"
#include "conn.h"
#include "ctrl.h"

/*
 * Lanes the root still links, closed ones included: with the root, what
 * max_qps bounds. A closed lane keeps its QP and rings until it is freed
 * (by the application, or below for one nobody took), so it counts until then.
 */
static unsigned live_lanes(const struct rsec_conn *root)
{
	unsigned n = 0;
	for (unsigned i = 1; i <= root->lanes_opened; i++)
		n += root->lanes[i] != NULL;
	return n;
}

/* Server: a lane nobody took that a frame just closed goes now, not at the end of the read. */
static void lane_settle(struct rsec_conn *c)
{
	if (c->path.phase == PHASE_CLOSED && !c->lane_taken && c->is_server)
		rsec_conn_destroy(c); /* unlinks it */
}

/* A lane of root at index idx, keyed, waiting for the peer's QP_INFO. */
static RSEC_MUST_CHECK int lane_new(struct rsec_conn *root, uint16_t idx, struct rsec_conn **out)
{
	struct rsec_conn *c = rsec_conn_alloc(root->ctx, root->path.chan->sock);
	RSEC_ENSURE(c, RSEC_E_NOMEM);
	c->root = root;
	c->lane = idx;
	c->id = root->id;
	memcpy(c->peer, root->peer, sizeof(c->peer));
	memcpy(c->peer_addr, root->peer_addr, sizeof(c->peer_addr));
	c->tls_resumed = root->tls_resumed;
	c->aead = root->aead;
	c->path.chan = root->path.chan; /* the session's, also when a resume gives it a new connection */
	c->dev = rsec_dev_ref(root->dev);
	c->path.phase = PHASE_QP_INFO;
	rsec_gt_init(&c->path.gt, c->is_server, idx);
	root->lanes[idx] = c;
	struct epoll_event ev = { .events = root->sock_events, .data.u32 = 0 };
	int rc = epoll_ctl(c->epfd, EPOLL_CTL_MOD, root->path.chan->sock, &ev) == 0 ? 0 : RSEC_E_IO;
	if (rc == 0)
		rc = rsec_seal_from_tls(&c->path.seal, root->path.chan->ssl, c->is_server, c->aead, idx, 0);
	if (rc == 0)
		rc = rsec_rekey_begin(c);
	if (rc < 0) {
		c->path.phase = PHASE_CLOSED; /* nothing to tell the peer: it never heard of it */
		c->path.close_code = rc;
		rsec_conn_destroy(c); /* unlinks it */
		return rc;
	}
	c->path.have_seal = true;
	*out = c;
	return 0;
}

/* Server: the client asks for lane m->lane (the next index). */
static RSEC_MUST_CHECK int lane_accept(struct rsec_conn *root, const struct rsec_msg *m, struct rsec_ctrl_fault *f)
{
	root->lanes_opened = m->lane;
	int rc = live_lanes(root) + 1 < root->ctx->max_qps ? 0 : RSEC_E_LIMIT;
	struct rsec_conn *c = NULL;
	if (rc == 0)
		rc = lane_new(root, m->lane, &c);
	if (rc < 0) {
		struct rsec_msg e = { .type = RSEC_MSG_ERROR, .lane = m->lane };
		char text[96];
		snprintf(text, sizeof(text), "queue pair %u refused: %s (max_qps %u)", (unsigned)m->lane + 1,
			 rsec_error_text(rc), root->ctx->max_qps);
		e.u.error.code = (uint32_t)-rc;
		rsec_wire_text_set(&e.u.error.text, text);
		rc = rsec_chan_send(root->path.chan, 0, &e); /* lane 0's sender: the index goes as given */
		return rc < 0 ? rsec_ctrl_refuse(f, rc, "cannot refuse a queue pair") : 0;
	}
	(void)!rsec_ctrl_handle(c, m); /* its failure closes it alone */
	lane_settle(c);
	return 0;
}

int rsec_lane_route(struct rsec_conn *root, const struct rsec_msg *m, struct rsec_ctrl_fault *f)
{
	struct rsec_conn *c = root->lanes[m->lane];
	if (!c) {
		if (m->lane <= root->lanes_opened)
			return 0; /* freed here; the peer had not heard yet */
		if (root->is_server && m->type == RSEC_MSG_QP_INFO)
			return lane_accept(root, m, f); /* indices only grow: one that failed early is skipped */
		if (m->type == RSEC_MSG_ERROR || m->type == RSEC_MSG_DISCONNECT)
			return 0; /* the peer gave up on a lane before it asked for it */
		return rsec_ctrl_violation(f, "%s for queue pair %u, which was never asked for",
					   rsec_wire_type_name(m->type), (unsigned)m->lane + 1);
	}
	if (c->path.phase != PHASE_CLOSED) {
		(void)!rsec_ctrl_handle(c, m); /* a lane's failure closes that lane only */
		lane_settle(c);
	}
	return 0;
}

int rsec_lane_process(struct rsec_conn *c)
{
	if (c->path.phase == PHASE_CLOSED)
		return c->path.close_code;
	if (!c->root)
		return rsec_conn_fail(c, RSEC_E_CLOSED, "the session's connection was freed");
	int rc = rsec_conn_progress(c->root);
	if (c->path.phase == PHASE_CLOSED)
		return c->path.close_code; /* the root's failure failed us too */
	if (rc < 0 && rc != RSEC_E_AGAIN)
		return rsec_conn_fail(c, rc, "the session's connection failed");
	if (c->path.phase != PHASE_ESTABLISHED && rsec_now_ms() > c->deadline_ms)
		return rsec_conn_fail(c, RSEC_E_TIMEOUT, "queue pair set-up did not finish in %d ms",
				      c->ctx->handshake_timeout_ms);
	if (c->path.phase == PHASE_QP_INFO)
		RSEC_GUARD(rsec_conn_settle(c, rsec_data_quiet(&c->path)));
	if (c->path.phase == PHASE_ESTABLISHED) {
		RSEC_GUARD(rsec_conn_poll_data(c));
		RSEC_GUARD(rsec_rebuild_check_step(c));
		RSEC_GUARD(rsec_rebuild_expire(c));
		RSEC_GUARD(rsec_conn_settle(c, rsec_grant_expire(&c->path)));
		RSEC_GUARD(rsec_rekey_step(c));
	}
	if (c->path.phase == PHASE_CLOSED)
		return c->path.close_code;
	return c->path.phase == PHASE_ESTABLISHED ? 0 : RSEC_E_AGAIN;
}

void rsec_lanes_expire(struct rsec_conn *root)
{
	uint64_t now = rsec_now_ms();
	for (unsigned i = 1; i <= root->lanes_opened; i++) {
		struct rsec_conn *c = root->lanes[i];
		if (!c)
			continue;
		if (c->path.phase != PHASE_ESTABLISHED && c->path.phase != PHASE_CLOSED && now > c->deadline_ms)
			(void)rsec_conn_fail(c, RSEC_E_TIMEOUT, "queue pair set-up did not finish in %d ms",
					     c->ctx->handshake_timeout_ms);
		lane_settle(c); /* nobody holds it: its resources go now */
	}
}

void rsec_lanes_fail(struct rsec_conn *root, int code)
{
	for (unsigned i = 1; i <= root->lanes_opened; i++)
		if (root->lanes[i])
			(void)rsec_conn_fail(root->lanes[i], code, "the session closed: %s", root->error);
}

void rsec_lanes_lost(struct rsec_conn *root, int code, const char *why)
{
	for (unsigned i = 1; i <= root->lanes_opened; i++)
		if (root->lanes[i])
			(void)rsec_conn_fail(root->lanes[i], code, "the session's control channel was lost (%s)", why);
	/* Their TLS is the root's, about to go: they leave the session. */
	rsec_lanes_detach(root);
}

void rsec_lanes_detach(struct rsec_conn *root)
{
	for (unsigned i = 1; i <= root->lanes_opened; i++) {
		struct rsec_conn *c = root->lanes[i];
		if (!c)
			continue;
		if (!c->lane_taken) {
			rsec_conn_destroy(c);
			continue;
		}
		c->root = NULL;
		c->path.chan = NULL;
		root->lanes[i] = NULL;
	}
}

void rsec_lane_unlink(struct rsec_conn *c)
{
	if (c->root && c->root->lanes[c->lane] == c)
		c->root->lanes[c->lane] = NULL;
	c->root = NULL;
	c->path.chan = NULL;
}

void rsec_lanes_watch(struct rsec_conn *root, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.u32 = 0 };
	for (unsigned i = 1; i <= root->lanes_opened; i++) {
		struct rsec_conn *c = root->lanes[i];
		if (c && c->path.phase != PHASE_CLOSED &&
		    epoll_ctl(c->epfd, EPOLL_CTL_MOD, root->path.chan->sock, &ev) < 0)
			(void)rsec_conn_fail(c, RSEC_E_IO, "epoll: cannot watch the session's channel");
	}
}

int rsec_lane_request(struct rsec_conn *root, struct rsec_conn **out)
{
	*out = NULL;
	if (!root->peer_lanes) {
		snprintf(root->error, sizeof(root->error), "the peer's library takes no further queue pairs");
		return RSEC_E_PROTO;
	}
	if (live_lanes(root) + 1 >= root->ctx->max_qps) {
		snprintf(root->error, sizeof(root->error), "max_qps (%u) queue pairs are open", root->ctx->max_qps);
		return RSEC_E_LIMIT;
	}
	if (root->lanes_opened == RSEC_WIRE_LANE_MAX) { /* indices are never reused */
		snprintf(root->error, sizeof(root->error), "this session opened its %u further queue pairs already",
			 RSEC_WIRE_LANE_MAX);
		return RSEC_E_LIMIT;
	}
	struct rsec_conn *c;
	root->lanes_opened++;
	RSEC_GUARD(lane_new(root, root->lanes_opened, &c));
	c->lane_taken = true; /* ours from the start: freed by the caller or by rsec_lane_requested */
	int rc = rsec_conn_data_setup(c);
	if (rc == 0)
		rc = rsec_conn_send_qp_info(c);
	if (rc < 0)
		(void)rsec_conn_fail(c, rc, "cannot set up queue pair %u: %s", (unsigned)c->lane + 1,
				     rsec_error_text(rc));
	*out = c;
	return rc;
}

bool rsec_lane_settled(struct rsec_conn *c, void *arg)
{
	(void)arg;
	return c->path.phase == PHASE_ESTABLISHED || c->path.phase == PHASE_CLOSED;
}

int rsec_lane_requested(struct rsec_conn *root, struct rsec_conn *c, int rc, int timeout_ms)
{
	/* Up, even if the peer closed it at once (in the same read, a scheduler tick later): its
	 * calls then say so, as for any queue pair the peer closes. */
	if (rc == 0 && c->was_established)
		return 0;
	if (rc == 0 || c->path.phase == PHASE_CLOSED)
		rc = c->path.close_code;
	else
		(void)rsec_conn_fail(c, rc, "queue pair %u: no answer in %d ms", (unsigned)c->lane + 1, timeout_ms);
	memcpy(root->error, c->error, sizeof(root->error));
	rsec_conn_destroy(c);
	return rc;
}

bool rsec_lane_offered(struct rsec_conn *root, void *arg)
{
	struct rsec_conn **found = arg;
	for (unsigned i = 1; i <= root->lanes_opened; i++) {
		struct rsec_conn *c = root->lanes[i];
		if (c && !c->lane_taken && c->path.phase == PHASE_ESTABLISHED) {
			*found = c;
			return true;
		}
	}
	return false;
}
