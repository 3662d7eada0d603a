/* SPDX-License-Identifier: MIT */
/*
 * A session outliving its control channel (docs/protocol.md, "Resuming a
 * session").
 *
 * A peer crash, a network cut or one forged TCP reset ends the TLS
 * connection; with it went every connection. When both sides allow it
 * (rsec_ctx_attr.resume_grace_ms), the session waits instead ("parked"):
 * its data path is stopped as for a rebuild (grants revoked, operations in
 * flight ended, a new QP ready, our REBUILD kept back) and nothing else is
 * lost: messages the peer did not open are still in the send ring, the one
 * being reassembled is kept.
 *
 * The server named the session at set-up with a random token (SESSION,
 * inside TLS). A parked client reconnects, with exponential backoff and
 * jitter, resuming its TLS session (tls_resume.c), and offers the token
 * (RESUME) instead of a HELLO. The server finds the session by token and
 * authenticated identity, moves the new TCP and TLS connection into it,
 * confirms (SESSION) and both sides rebuild the data path over the new
 * channel, keys from the new TLS session: every message the peer did not
 * open is sent again, none twice. A server keeps a parked session
 * resume_grace_ms, then closes it; a client tries that long, and stops at
 * once when the server no longer has the session (it restarted). Further
 * queue pairs of the session do not survive the loss (they close).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "base/errtext.h"
#include "conn.h"

/* Reconnection: the first try at once, then waits doubling up to the last, each +-50 % at random. */
#define FIRST_BACKOFF_MS 50u
#define MAX_BACKOFF_MS 2000u
/* One try: TCP, TLS and the answer to RESUME, at most this long. */
#define TRY_MS 3000u

/*
 * Parked sessions resume with a rebuild. In the middle of one, a side that
 * connected its rebuilt QP (REBUILD_CONNECTED) may be an epoch ahead of the
 * other: RESUME and SESSION then say both epochs (rsec_rebuild_unpark). A
 * peer that cannot say them gets the old rule: such a side closes instead.
 */
static bool may_park(const struct rsec_conn *c)
{
	return !c->lane && c->path.phase == PHASE_ESTABLISHED && c->rs.peer && c->rs.have_token &&
	       c->ctx->resume_grace_ms &&
	       (c->path.rb.state == REBUILD_NONE || c->path.rb.state == REBUILD_SENT || c->rs.epochs);
}

/* Close the lost channel: unwatched, wiped, freed. */
static void drop_channel(struct rsec_conn *c)
{
	if (c->path.chan->sock >= 0)
		(void)epoll_ctl(c->epfd, EPOLL_CTL_DEL, c->path.chan->sock, NULL);
	rsec_chan_drop(c->path.chan);
}

int rsec_resume_lost(struct rsec_conn *c, int code, const char *fmt, ...)
{
	char why[160];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (!may_park(c))
		return rsec_conn_fail(c, code, "%s", why);
	/* Further queue pairs share the lost channel: they close and leave, the session waits. */
	rsec_lanes_lost(c, code, why);
	drop_channel(c);
	memcpy(c->rs.lost, why, sizeof(c->rs.lost));
	c->rs.peer_epoch_known = false; /* the next channel's RESUME or SESSION says it */
	RSEC_GUARD(rsec_rebuild_park(c, code, why));
	uint64_t now = rsec_now_ms();
	c->rs.parked = true;
	c->rs.until_ms = now + c->ctx->resume_grace_ms;
	c->rs.next_try_ms = now;
	c->rs.backoff_ms = FIRST_BACKOFF_MS;
	c->rs.tries = 0;
	rsec_conn_audit(c, RSEC_AUDIT_RESUME, "lost", why, NULL);
	return 0;
}

void rsec_resume_established(struct rsec_conn *c)
{
	if (!c->is_server || c->lane || !c->rs.peer || RAND_bytes(c->rs.token, sizeof(c->rs.token)) != 1)
		return; /* without a token the session cannot be resumed: it closes as before */
	struct rsec_msg m = { .type = RSEC_MSG_SESSION };
	memcpy(m.u.session.token, c->rs.token, sizeof(m.u.session.token));
	int rc = rsec_chan_send(c->path.chan, c->lane, &m);
	OPENSSL_cleanse(&m, sizeof(m));
	if (rc < 0)
		return;
	c->rs.have_token = true;
	pthread_mutex_lock(&c->ctx->sessions_lock);
	c->rs.next = c->ctx->sessions;
	c->ctx->sessions = c;
	c->rs.registered = true;
	pthread_mutex_unlock(&c->ctx->sessions_lock);
}

void rsec_resume_forget(struct rsec_conn *c)
{
	if (c->rs.registered) {
		pthread_mutex_lock(&c->ctx->sessions_lock);
		for (struct rsec_conn **p = &c->ctx->sessions; *p; p = &(*p)->rs.next) {
			if (*p == c) {
				*p = c->rs.next;
				break;
			}
		}
		pthread_mutex_unlock(&c->ctx->sessions_lock);
		c->rs.registered = false;
	}
	OPENSSL_cleanse(c->rs.token, sizeof(c->rs.token));
	c->rs.have_token = false;
}

/* Move src's control channel (socket, TLS, what it read ahead, what waits to go) into dst, whose own is gone. */
static RSEC_MUST_CHECK int move_channel(struct rsec_conn *dst, struct rsec_conn *src)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = 0 };
	(void)epoll_ctl(src->epfd, EPOLL_CTL_DEL, src->path.chan->sock, NULL);
	if (epoll_ctl(dst->epfd, EPOLL_CTL_ADD, src->path.chan->sock, &ev) < 0)
		return RSEC_E_IO;
	dst->own_chan = src->own_chan;
	dst->own_chan.owner = dst;
	dst->own_chan.last_rx_ms = dst->own_chan.last_tx_ms = rsec_now_ms();
	dst->sock_events = EPOLLIN;
	dst->tls_resumed = src->tls_resumed;
	memcpy(dst->peer_addr, src->peer_addr, sizeof(dst->peer_addr));
	OPENSSL_cleanse(&src->own_chan, sizeof(src->own_chan));
	rsec_chan_init(&src->own_chan, -1, NULL, NULL);
	dst->rs.parked = false;
	return 0;
}

/* The session goes on over its new channel: the data path is rebuilt on it. */
static RSEC_MUST_CHECK int resumed(struct rsec_conn *c)
{
	c->path.stats.resumes++;
	char note[200];
	snprintf(note, sizeof(note), "after %.150s", c->rs.lost);
	rsec_conn_audit(c, RSEC_AUDIT_RESUME, "ok", note, NULL);
	RSEC_GUARD(rsec_conn_watch(c));
	return rsec_rebuild_unpark(c);
}

/* A connection closed without a goodbye: its channel went to connection id. */
static int handed_over(struct rsec_conn *c, unsigned long long id)
{
	snprintf(c->error, sizeof(c->error), "handed over: the session of connection %llu resumed on it", id);
	c->path.close_code = RSEC_E_CLOSED;
	c->path.phase = PHASE_CLOSED;
	return RSEC_E_CLOSED;
}

/* The established session with this token and this peer, or NULL. */
static struct rsec_conn *find_session(struct rsec_ctx *ctx, const uint8_t *token, const char *peer)
{
	struct rsec_conn *found = NULL;
	pthread_mutex_lock(&ctx->sessions_lock);
	for (struct rsec_conn *s = ctx->sessions; s; s = s->rs.next)
		if (s->path.phase == PHASE_ESTABLISHED && CRYPTO_memcmp(s->rs.token, token, RSEC_WIRE_TOKEN_LEN) == 0)
			found = s;
	pthread_mutex_unlock(&ctx->sessions_lock);
	/* The same identity as the session's (tokens are secret anyway: one that leaked is no use elsewhere). */
	return found && strcmp(found->peer, peer) == 0 ? found : NULL;
}

int rsec_resume_accept(struct rsec_conn *c, const struct rsec_msg *m)
{
	struct rsec_conn *s = find_session(c->ctx, m->u.session.token, c->peer);
	if (s && !s->rs.parked) {
		/* It has not noticed yet that its channel is gone: the client says so. */
		int rc = rsec_resume_lost(s, RSEC_E_IO, "the client came back on a new control channel");
		if (rc < 0)
			s = NULL;
	}
	if (!s) {
		struct rsec_msg e = { .type = RSEC_MSG_ERROR };
		e.u.error.code = (uint32_t)-RSEC_E_CLOSED;
		rsec_wire_text_set(&e.u.error.text, "no such session (it ended, or this server restarted)");
		(void)!rsec_chan_send(c->path.chan, c->lane, &e);
		return rsec_conn_fail(c, RSEC_E_CLOSED, "RESUME of a session this server does not have");
	}
	/* Both epochs are known to both sides before either sends its REBUILD. */
	s->rs.peer_epoch_known = s->rs.epochs && m->u.session.has_epoch;
	s->rs.peer_epoch = m->u.session.epoch;
	struct rsec_msg ok = { .type = RSEC_MSG_SESSION };
	memcpy(ok.u.session.token, s->rs.token, sizeof(ok.u.session.token));
	ok.u.session.has_epoch = s->rs.peer_epoch_known;
	ok.u.session.epoch = s->path.rb.epoch;
	int rc = move_channel(s, c);
	if (rc == 0)
		rc = rsec_chan_send(s->path.chan, s->lane, &ok);
	OPENSSL_cleanse(&ok, sizeof(ok));
	if (rc == 0)
		rc = resumed(s);
	if (rc < 0)
		(void)rsec_conn_fail(s, rc, "cannot resume the session: %s", rsec_error_text(rc));
	return handed_over(c, (unsigned long long)s->id);
}

int rsec_resume_on_session(struct rsec_conn *c, const struct rsec_msg *m)
{
	if (c->is_server || c->lane)
		return rsec_conn_violation(c, "unexpected SESSION");
	if (c->rs.offer) {
		/* A new channel's answer: the session it offered, or a violation. */
		if (CRYPTO_memcmp(m->u.session.token, c->rs.offer, RSEC_WIRE_TOKEN_LEN) != 0)
			return rsec_conn_violation(c, "SESSION names another session than the one offered");
		c->rs.peer_epoch_known = c->rs.epochs && m->u.session.has_epoch;
		c->rs.peer_epoch = m->u.session.epoch;
		c->rs.answered = true;
		return 0;
	}
	if (c->rs.have_token || c->path.phase != PHASE_ESTABLISHED || !c->rs.peer)
		return rsec_conn_violation(c, "unexpected SESSION");
	memcpy(c->rs.token, m->u.session.token, sizeof(c->rs.token));
	c->rs.have_token = true;
	return 0;
}

void rsec_resume_remember(struct rsec_conn *c, const char *host, uint16_t port, const char *server_name)
{
	snprintf(c->rs.host, sizeof(c->rs.host), "%s", host);
	snprintf(c->rs.server_name, sizeof(c->rs.server_name), "%s", server_name ? server_name : "");
	c->rs.port = port;
}

/* The next wait before a try: the backoff, +-50 % at random, then doubled for the time after. */
static uint32_t next_wait(struct rsec_conn *c)
{
	uint32_t b = c->rs.backoff_ms, r = 0;
	if (RAND_bytes((unsigned char *)&r, sizeof(r)) != 1)
		r = 0;
	c->rs.backoff_ms = b * 2 < MAX_BACKOFF_MS ? b * 2 : MAX_BACKOFF_MS;
	return b / 2 + (b ? r % (b + 1) : 0);
}

/* A client's try at a new channel: TCP, TLS (resumed where it can be), RESUME. */
static RSEC_MUST_CHECK int try_once(struct rsec_conn *c, uint64_t now)
{
	uint64_t left = c->rs.until_ms - now;
	struct rsec_conn *n = NULL;
	int rc = rsec_conn_dial(c->ctx, c->rs.host, c->rs.port, c->rs.server_name[0] ? c->rs.server_name : NULL,
				(int)(left < TRY_MS ? left : TRY_MS), c, &n);
	c->rs.tries++;
	if (rc == 0 && strcmp(n->peer, c->peer) != 0) {
		rsec_conn_destroy(n);
		return rsec_conn_fail(c, RSEC_E_AUTH, "control channel lost (%s); another server identity answered",
				      c->rs.lost);
	}
	if (rc == 0) {
		c->rs.peer_epoch_known = n->rs.peer_epoch_known;
		c->rs.peer_epoch = n->rs.peer_epoch;
		rc = move_channel(c, n);
		(void)handed_over(n, (unsigned long long)c->id);
		rsec_conn_destroy(n);
		return rc == 0 ? resumed(c) : rsec_conn_fail(c, rc, "cannot resume the session: %s", rsec_error_text(rc));
	}
	bool refused = n && n->rs.refused, denied = n && n->rs.denied;
	snprintf(c->rs.last_try, sizeof(c->rs.last_try), "%.150s", n && n->error[0] ? n->error : rsec_error_text(rc));
	rsec_conn_destroy(n);
	if (refused)
		return rsec_conn_fail(c, RSEC_E_CLOSED,
				      "control channel lost (%s); the server no longer has the session (it restarted, "
				      "or the grace period passed)", c->rs.lost);
	if (denied)
		return rsec_conn_fail(c, RSEC_E_DENIED,
				      "control channel lost (%s); the server refused to resume it: %s", c->rs.lost,
				      c->rs.last_try);
	c->rs.next_try_ms = rsec_now_ms() + next_wait(c);
	return 0;
}

int rsec_resume_step(struct rsec_conn *c)
{
	uint64_t now = rsec_now_ms();
	if (now >= c->rs.until_ms)
		return rsec_conn_fail(c, RSEC_E_TIMEOUT, "control channel lost (%s) and not resumed within %u ms%s%s",
				      c->rs.lost, c->ctx->resume_grace_ms, c->rs.tries ? "; last try: " : "",
				      c->rs.tries ? c->rs.last_try : "");
	if (c->is_server || now < c->rs.next_try_ms)
		return 0;
	return try_once(c, now);
}

uint64_t rsec_resume_next_ms(const struct rsec_conn *c)
{
	if (!c->rs.parked)
		return UINT64_MAX;
	return c->is_server || c->rs.next_try_ms > c->rs.until_ms ? c->rs.until_ms : c->rs.next_try_ms;
}
