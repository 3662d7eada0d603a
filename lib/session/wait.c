/* SPDX-License-Identifier: MIT */
/*
 * The one wait loop of the blocking calls (rsec_conn_wait_for) and what it
 * waits with: a sleep on the connection's epoll set until a fd or the next
 * library timer wakes it, or busy polling the completion queues.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <string.h>
#include <sys/epoll.h>

#include "conn.h"

/*
 * Busy polling: spin on the completion queues until one yields a
 * completion, and look at the control socket (a system call) only every
 * BUSY_SPINS polls. The completion channel is read only when it has an
 * event: the CQs are armed once, when created.
 */
#define BUSY_SPINS 64u

int rsec_conn_fd_events(struct rsec_conn *c)
{
	struct epoll_event ev[2];
	int n = epoll_wait(c->epfd, ev, 2, 0);
	for (int i = 0; i < n; i++) {
		if (ev[i].data.u32 == 1)
			c->path.chan_event = true;
		else
			c->sock_event = true;
	}
	return n;
}

static RSEC_MUST_CHECK int busy_wait(struct rsec_conn *c, int timeout_ms)
{
	/* Ending early is harmless: the caller holds the true deadline. */
	uint64_t deadline = rsec_now_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
	uint64_t seen = c->path.completions;
	for (unsigned spin = 1;; spin++) {
		RSEC_GUARD(rsec_conn_poll_data(c));
		if (c->path.completions != seen || c->path.phase == PHASE_CLOSED)
			break;
		if (spin % BUSY_SPINS)
			continue;
		uint64_t now = rsec_now_ms();
		if (rsec_conn_fd_events(c) > 0 || now >= deadline || now >= c->next_full_ms)
			break;
		/* A software device (rxe, siw) does its work in kernel threads on these same CPUs. */
		(void)sched_yield();
	}
	int rc = rsec_conn_step(c);
	return rc == RSEC_E_AGAIN ? 0 : rc;
}

int rsec_conn_wait(struct rsec_conn *c, int timeout_ms)
{
	/* Nothing held back while we sleep: what waits may wait for it (rsec_conn_cork). */
	RSEC_GUARD(rsec_conn_settle(c, rsec_data_flush(&c->path)));
	if (c->ctx->poll_mode == RSEC_POLL_BUSY && c->path.phase == PHASE_ESTABLISHED)
		return busy_wait(c, timeout_ms);
	struct pollfd p = { .fd = c->epfd, .events = POLLIN };
	int n = poll(&p, 1, timeout_ms);
	if (n < 0 && errno != EINTR)
		return rsec_conn_fail(c, RSEC_E_IO, "poll: %s", strerror(errno));
	c->turn_probed = false; /* slept: what the turn's look said is old */
	int rc = rsec_conn_progress(c);
	return rc == RSEC_E_AGAIN ? 0 : rc;
}

/* The deadline, or sooner when a grant expires, a keepalive or a rekey is due: a wait wakes for the library's timers. */
uint64_t rsec_conn_next_timer(const struct rsec_conn *c, uint64_t deadline)
{
	uint64_t t = deadline;
	uint64_t expiry = rsec_gt_next_expiry(&c->path.gt);
	if (expiry && expiry < t)
		t = expiry;
	if (rsec_rebuilding(&c->path) && c->path.rb.state != REBUILD_PARKED && c->path.rb.deadline_ms + 1 < t)
		t = c->path.rb.deadline_ms + 1; /* a rebuild the peer never finishes fails then */
	if (rsec_resume_next_ms(c) < t)
		t = rsec_resume_next_ms(c); /* a parked session's next try, or the end of its grace period */
	const struct rsec_conn *root = c->lane ? c->root : c; /* whose keepalive */
	if (root && root->path.phase == PHASE_ESTABLISHED && !root->rs.parked &&
	    root->path.chan->last_tx_ms + RSEC_KEEPALIVE_MS < t)
		t = root->path.chan->last_tx_ms + RSEC_KEEPALIVE_MS;
	if (rsec_rekey_next_ms(c) < t)
		t = rsec_rekey_next_ms(c); /* an idle connection renews its keys on time too */
	if (c->path.phase == PHASE_ESTABLISHED && rsec_data_check_next_ms(&c->path) < t)
		t = rsec_data_check_next_ms(&c->path); /* frames completed since our last PATH_CHECK */
	uint64_t now = rsec_now_ms();
	return t > now ? t : now + 1;
}

int rsec_conn_wait_for(struct rsec_conn *c, rsec_ready_fn ready, void *arg, int timeout_ms)
{
	uint64_t deadline = rsec_deadline_ms(timeout_ms);
	for (;;) {
		if (ready(c, arg))
			return 0;
		int rc = rsec_conn_step(c);
		/* What became ready counts even if the connection closed meanwhile (a message that arrived whole). */
		if (ready(c, arg))
			return 0;
		if (rc < 0 && rc != RSEC_E_AGAIN)
			return rc;
		uint64_t now = rsec_now_ms();
		if (now >= deadline)
			return timeout_ms > 0 ? RSEC_E_TIMEOUT : RSEC_E_AGAIN;
		rc = rsec_conn_wait(c, (int)(rsec_conn_next_timer(c, deadline) - now));
		if (rc < 0 && !ready(c, arg))
			return rc;
	}
}
