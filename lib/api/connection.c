/* SPDX-License-Identifier: MIT */
/*
 * A connection's exported calls (rdmasec.h, "Connections"): accept, the set-up
 * and event steps, close and free over session/'s steps, and what an
 * application may read of a connection.
 */
#include "session/conn.h"

void rsec_conn_turn(struct rsec_conn *c)
{
	if (!c)
		return;
	c->turns = true;
	c->turn_probed = false;
}

int rsec_conn_fd(const struct rsec_conn *c)
{
	return c ? c->epfd : -1;
}

enum rsec_conn_state rsec_conn_state(const struct rsec_conn *c)
{
	if (!c || c->path.phase == PHASE_CLOSED)
		return RSEC_CONN_CLOSED;
	return c->path.phase == PHASE_ESTABLISHED ? RSEC_CONN_ESTABLISHED : RSEC_CONN_HANDSHAKE;
}

const char *rsec_conn_peer(const struct rsec_conn *c)
{
	return c ? c->peer : "";
}

int rsec_conn_resumed(const struct rsec_conn *c)
{
	return c && c->tls_resumed ? 1 : 0;
}

const char *rsec_conn_peer_addr(const struct rsec_conn *c)
{
	return c ? c->peer_addr : "";
}

const char *rsec_conn_error(const struct rsec_conn *c)
{
	return c ? c->error : "";
}

const char *rsec_conn_rebuild_reason(const struct rsec_conn *c)
{
	return c && c->path.stats.rebuilds ? c->path.rb.done_reason : NULL;
}

int rsec_conn_handshake(struct rsec_conn *c)
{
	return rsec_conn_setup_step(c);
}

int rsec_conn_process(struct rsec_conn *c)
{
	return rsec_conn_progress(c);
}

int rsec_accept(struct rsec_listener *l, struct rsec_conn **out)
{
	return rsec_conn_accept(l, out);
}

int rsec_conn_close(struct rsec_conn *c, const char *reason)
{
	return rsec_conn_close_local(c, reason);
}

void rsec_conn_free(struct rsec_conn *c)
{
	rsec_conn_destroy(c);
}

int rsec_conn_stats(const struct rsec_conn *c, struct rsec_conn_stats *out)
{
	return rsec_conn_stats_fill(c, out);
}
