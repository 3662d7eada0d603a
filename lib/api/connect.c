/* SPDX-License-Identifier: MIT */
/*
 * The set-up calls that wait: rsec_connect (a client's dial: TCP, TLS, HELLO
 * through the data path's set-up) and rsec_conn_add_qp (a further queue pair
 * of a session), over session/'s steps.
 */
#include <stdbool.h>

#include "session/conn.h"

int rsec_connect(struct rsec_ctx *ctx, const char *host, uint16_t port, const char *server_name, int timeout_ms,
		 struct rsec_conn **out)
{
	if (!ctx || ctx->is_server || !host || !out || port == 0)
		return RSEC_E_INVAL;
	int rc = rsec_conn_dial(ctx, host, port, server_name, timeout_ms > 0 ? timeout_ms : ctx->handshake_timeout_ms,
				NULL, out);
	if (*out)
		rsec_resume_remember(*out, host, port, server_name);
	return rc;
}

/* Client: ask for a lane and wait for the answer. A request cannot be left half-made: it is always waited for. */
static RSEC_MUST_CHECK int lane_open(struct rsec_conn *root, int timeout_ms, struct rsec_conn **out)
{
	struct rsec_conn *c;
	int rc = rsec_lane_request(root, &c);
	if (!c)
		return rc;
	if (rc == 0)
		rc = rsec_conn_wait_for(c, rsec_lane_settled, NULL, timeout_ms);
	rc = rsec_lane_requested(root, c, rc, timeout_ms);
	if (rc == 0)
		*out = c;
	return rc;
}

int rsec_conn_add_qp(struct rsec_conn *c, int timeout_ms, struct rsec_conn **out)
{
	if (!c || !out || c->lane)
		return RSEC_E_INVAL;
	*out = NULL;
	if (c->path.phase == PHASE_CLOSED)
		return c->path.close_code;
	if (c->path.phase != PHASE_ESTABLISHED)
		return RSEC_E_INVAL;
	if (!c->is_server)
		return lane_open(c, timeout_ms > 0 ? timeout_ms : c->ctx->handshake_timeout_ms, out);
	struct rsec_conn *found = NULL;
	RSEC_GUARD(rsec_conn_wait_for(c, rsec_lane_offered, &found, timeout_ms));
	found->lane_taken = true;
	*out = found;
	return 0;
}
