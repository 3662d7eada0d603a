/* SPDX-License-Identifier: MIT */
/*
 * rsec_send and rsec_recv: the arguments checked, the data path's steps
 * (path/data.c) called, and the connection run between them until the
 * message is out or in, or the time is up. Only here does a data call wait.
 */
#include <stdbool.h>
#include <stdint.h>

#include "session/conn.h"

static int remaining_ms(uint64_t deadline)
{
	uint64_t now = rsec_now_ms();
	return now >= deadline ? 0 : (int)(deadline - now);
}

static bool queue_empty(struct rsec_conn *c, void *arg)
{
	(void)arg;
	return c->path.txm == NULL;
}

/* Run the connection until no message waits in the library, or the deadline. */
static RSEC_MUST_CHECK int wait_queue_empty(struct rsec_conn *c, uint64_t deadline, int timeout_ms)
{
	if (!c->path.txm)
		return 0;
	int rc = rsec_conn_wait_for(c, queue_empty, NULL, remaining_ms(deadline));
	if (rc == RSEC_E_TIMEOUT || rc == RSEC_E_AGAIN)
		return timeout_ms > 0 ? RSEC_E_TIMEOUT : RSEC_E_AGAIN;
	RSEC_GUARD(rc);
	return rsec_path_usable(&c->path, false);
}

int rsec_send(struct rsec_conn *c, const void *buf, size_t len, int timeout_ms)
{
	if (!c || (!buf && len))
		return RSEC_E_INVAL;
	RSEC_GUARD(rsec_path_usable(&c->path, false));
	if (len > c->path.peer_max_msg)
		return RSEC_E_RANGE;
	uint64_t deadline = rsec_deadline_ms(timeout_ms);
	RSEC_GUARD(wait_queue_empty(c, deadline, timeout_ms));
	const uint8_t *p = buf;
	size_t off = 0;
	bool started = false;
	for (;;) {
		int rc = rsec_conn_settle(c, rsec_data_send_some(&c->path, p, len, &off, &started));
		if (rc < 0)
			return rsec_conn_fail(c, rc, "cannot send: %s", rsec_strerror(rc));
		if ((started && off == len) || remaining_ms(deadline) == 0)
			break;
		RSEC_GUARD(rsec_conn_step(c));
		if (!rsec_data_can_send(&c->path))
			RSEC_GUARD(rsec_conn_wait(c, remaining_ms(deadline)));
		RSEC_GUARD(rsec_path_usable(&c->path, false));
	}
	if (!started || off < len)
		RSEC_GUARD(rsec_conn_settle(c, rsec_data_queue_rest(&c->path, p, len, off, started)));
	c->path.stats.msgs_sent++;
	c->path.stats.bytes_sent += len;
	return 0;
}

static bool message_arrived(struct rsec_conn *c, void *arg)
{
	(void)arg;
	return c->path.rx_complete;
}

int rsec_recv(struct rsec_conn *c, void *buf, size_t cap, size_t *len, int timeout_ms)
{
	if (!c || !len || (!buf && cap))
		return RSEC_E_INVAL;
	rsec_data_recv_into(&c->path, buf, cap);
	/* A message that arrived whole is delivered even if the peer closed since. */
	int rc = rsec_conn_settle(c, rsec_data_recv_take(&c->path, buf, cap, len,
						       rsec_conn_wait_for(c, message_arrived, NULL, timeout_ms)));
	if (rc == 0)
		(void)!rsec_conn_step(c); /* resume reaping receives held back while this message waited */
	return rc;
}

size_t rsec_send_queued(const struct rsec_conn *c)
{
	return c ? rsec_data_queued(&c->path) : 0;
}
