/* SPDX-License-Identifier: MIT */
/*
 * Connection set-up and teardown.
 *
 * Every connection parameter travels inside TLS 1.3, after the peer has
 * authenticated. The sequence (docs/protocol.md):
 *
 *   client                                server
 *   TCP connect, TLS 1.3 handshake  <->   (no RDMA resource yet; the peer's
 *                                         identity is read, nothing else)
 *   HELLO {versions, aead}          ->    admit(peer identity) or refuse
 *                                   <-    HELLO {version, aead}
 *   both derive per-direction message keys from the TLS exporter
 *   create PD, CQs, QP; post receives
 *   QP_INFO {qpn, psn, gid, ...}    ->    create PD, CQs, QP; post receives
 *                                         INIT->RTR->RTS towards the client
 *                                   <-    QP_INFO {qpn, psn, gid, ...}
 *   INIT->RTR->RTS towards server
 *   READY                           ->    established
 *
 * A RESUME instead of the HELLO (resume.c) is no new connection: it is not
 * admitted, it joins the parked session its token and identity name.
 *
 * Only a DISCONNECT over TLS (or the TLS channel's loss) closes a connection:
 * nothing that arrives over RDMA can. Which message is taken in which phase:
 * ctrl.c's table; set-up's handlers: setup.c.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "base/audit.h"
#include "base/errtext.h"
#include "conn.h"
#include "ctrl.h"
#include "base/tls_resume.h"

/* Failures of our own (not the peer's, not the channel's) are worth telling the peer. */
static bool tell_peer(int code)
{
	return code != RSEC_E_CLOSED && code != RSEC_E_IO && code != RSEC_E_TLS && code != RSEC_E_AUTH;
}

static void audit_failure(struct rsec_conn *c, int code);

int rsec_conn_fail(struct rsec_conn *c, int code, const char *fmt, ...)
{
	if (c->path.phase == PHASE_CLOSED)
		return c->path.close_code;
	int n = 0;
	if (c->path.chan && c->path.chan->tx.overflow) {
		/* rsec_chan_send found no room: say whose fault it is, whatever the caller says. */
		n = snprintf(c->error, sizeof(c->error),
			     "control channel: the peer is not reading (%zu bytes unsent): ", c->path.chan->tx.len);
		if (n < 0 || (size_t)n >= sizeof(c->error))
			n = 0;
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->error + n, sizeof(c->error) - (size_t)n, fmt, ap);
	va_end(ap);
	if (c->path.phase != PHASE_TLS && !c->admit_refused && tell_peer(code) && code < 0 &&
	    (unsigned)-code <= RSEC_WIRE_ERROR_CODE_MAX) {
		struct rsec_msg m = { .type = RSEC_MSG_ERROR };
		m.u.error.code = (uint32_t)-code;
		rsec_wire_text_set(&m.u.error.text, c->error);
		(void)!rsec_chan_send(c->path.chan, c->lane, &m); /* best effort: we are closing anyway */
	}
	if (!c->lane) {
		/* Nothing more will be flushed: wipe what is left, and stop watching for writability. */
		rsec_chan_discard(c->path.chan);
		(void)!rsec_conn_watch(c);
	}
	/* Not at rsec_conn_free: nothing the peer was granted may outlive the connection, */
	rsec_grant_close(&c->path);
	/* nor the keys of the peer's sealed grants we kept (a posted WRITE in flight claims nothing). */
	rsec_sealed_peer_clear(&c->path);
	audit_failure(c, code);
	c->path.close_code = code;
	c->path.phase = PHASE_CLOSED;
	/* What closing found (a grant the device would not free) changes nothing. */
	(void)rsec_fault_take(&c->path.fault);
	if (!c->lane) {
		c->own_chan.closed = true; /* nothing more goes to the peer, from the lanes either */
		rsec_lanes_fail(c, code); /* after: their goodbyes would go nowhere */
	}
	return code;
}

/* "ip:port" (IPv6 as "[ip]:port") of the socket's peer, or "" if unknown. */
static void describe_peer(int sock, char *out, size_t cap)
{
	struct sockaddr_storage ss = { 0 }; /* AF_UNSPEC unless the call fills it */
	socklen_t len = sizeof(ss);
	char ip[INET6_ADDRSTRLEN];
	out[0] = '\0';
	if (getpeername(sock, (struct sockaddr *)&ss, &len) < 0)
		return;
	if (ss.ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)&ss;
		if (inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip)))
			snprintf(out, cap, "%s:%u", ip, ntohs(a->sin_port));
	} else if (ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&ss;
		if (inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof(ip)))
			snprintf(out, cap, "[%s]:%u", ip, ntohs(a->sin6_port));
	}
}

/* The audit records a failure with this code produces, before the closing one. */
static void audit_failure(struct rsec_conn *c, int code)
{
	const char *why = rsec_error_text(code);
	switch (code) {
	case RSEC_E_MAC:
		rsec_conn_audit(c, RSEC_AUDIT_MAC_FAILURE, why, c->error, NULL);
		break;
	case RSEC_E_SEQ:
		rsec_conn_audit(c, RSEC_AUDIT_SEQ_VIOLATION, why, c->error, NULL);
		break;
	case RSEC_E_QP:
		rsec_conn_audit(c, RSEC_AUDIT_QP_ERROR, why, c->error, NULL);
		break;
	default:
		break;
	}
	/*
	 * Every connection that ends in the handshake gets one record too: the
	 * admission hook said no to its HELLO, or the peer never authenticated
	 * (bad certificate or PSK, timeout), unless we closed it ourselves
	 * (RSEC_E_CLOSED comes only from rsec_conn_close here).
	 */
	enum rsec_audit_event ev = RSEC_AUDIT_CLOSE;
	if (c->admit_refused)
		ev = RSEC_AUDIT_REFUSE;
	else if (c->path.phase == PHASE_TLS && code != RSEC_E_CLOSED)
		ev = RSEC_AUDIT_AUTH_FAILURE;
	rsec_conn_audit(c, ev, why, c->error, NULL);
}

void rsec_conn_audit(struct rsec_conn *c, enum rsec_audit_event ev, const char *result, const char *reason,
		     const struct rsec_audit_region *region)
{
	if (!c || !c->ctx->audit)
		return;
	struct rsec_audit_record r = {
		.event = ev,
		.is_server = c->is_server,
		.conn_id = c->id,
		.peer = c->peer[0] ? c->peer : NULL,
		.peer_addr = c->peer_addr[0] ? c->peer_addr : NULL,
		.result = result,
		.reason = reason,
		.region = region,
		.local_qpn = c->path.stats.local_qpn,
		.remote_qpn = c->path.stats.remote_qpn,
	};
	if (rsec_audit_write(c->ctx->audit, &r) < 0)
		__atomic_add_fetch(&c->ctx->audit_errors, 1, __ATOMIC_RELAXED);
}

static void path_audit(void *owner, enum rsec_audit_event ev, const char *result, const char *reason,
		       const struct rsec_audit_region *region)
{
	rsec_conn_audit(owner, ev, result, reason, region);
}

static void path_explain(void *owner, const char *why)
{
	struct rsec_conn *c = owner;
	snprintf(c->error, sizeof(c->error), "%s", why);
}

static const struct rsec_path_hooks path_hooks = { .audit = path_audit, .explain = path_explain };

/* The channel's owner keeps its socket's epoll interest. */
static int watch_channel(void *owner)
{
	return rsec_conn_watch(owner);
}

struct rsec_conn *rsec_conn_alloc(struct rsec_ctx *ctx, int fd)
{
	struct rsec_conn *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->ctx = ctx;
	c->is_server = ctx->is_server;
	rsec_chan_init(&c->own_chan, -1, watch_channel, c);
	c->path.chan = &c->own_chan;
	c->path.hooks = &path_hooks;
	c->path.owner = c;
	c->deadline_ms = rsec_now_ms() + (uint64_t)ctx->handshake_timeout_ms;
	rsec_gt_init(&c->path.gt, ctx->is_server, 0);
	c->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (c->epfd < 0) {
		free(c);
		return NULL;
	}
	c->sock_events = EPOLLIN;
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = 0 };
	if (epoll_ctl(c->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		close(c->epfd);
		free(c);
		return NULL;
	}
	return c;
}

static struct rsec_conn *conn_new(struct rsec_ctx *ctx, int sock)
{
	/* Control frames are whole messages, often two in a row (REVOKE then GRANT): Nagle would
	 * hold the second until the peer's delayed ACK, 40 ms. Best effort: the channel works
	 * without it, only slower. */
	int one = 1;
	(void)!setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	struct rsec_conn *c = rsec_conn_alloc(ctx, sock);
	if (!c)
		return NULL;
	c->id = __atomic_add_fetch(&ctx->next_conn_id, 1, __ATOMIC_RELAXED);
	describe_peer(sock, c->peer_addr, sizeof(c->peer_addr));
	c->path.chan->sock = sock;
	c->path.phase = PHASE_TLS;
	return c;
}

/* The RDMA device is the one that owns the address the control connection
 * uses locally, unless the context names one. */
static RSEC_MUST_CHECK int pick_device(struct rsec_conn *c)
{
	if (c->dev)
		return 0;
	struct sockaddr_storage ss = { 0 }; /* AF_UNSPEC unless the call fills it */
	socklen_t len = sizeof(ss);
	char ip[INET6_ADDRSTRLEN];
	if (getsockname(c->path.chan->sock, (struct sockaddr *)&ss, &len) < 0)
		return RSEC_E_IO;
	if (ss.ss_family != AF_INET && ss.ss_family != AF_INET6) {
		snprintf(c->error, sizeof(c->error), "the control connection is not over IP (family %d)", ss.ss_family);
		return RSEC_E_IO;
	}
	const void *a = ss.ss_family == AF_INET ? (const void *)&((struct sockaddr_in *)&ss)->sin_addr
						 : (const void *)&((struct sockaddr_in6 *)&ss)->sin6_addr;
	if (!inet_ntop(ss.ss_family, a, ip, sizeof(ip)))
		return RSEC_E_IO;
	int rc = rsec_ctx_dev_for(c->ctx, ip, &c->dev);
	if (rc < 0)
		snprintf(c->error, sizeof(c->error), "no RDMA device owns the local address %s", ip);
	return rc;
}

void rsec_conn_configure_path(struct rsec_conn *c)
{
	const struct rsec_ctx *ctx = c->ctx;
	c->path.cfg = (struct rsec_path_cfg){
		.is_server = c->is_server,
		.lane = c->lane,
		.aead = c->aead,
		.recv_slots = ctx->recv_slots,
		.slot_size = ctx->slot_size,
		.max_msg = ctx->max_msg,
		.max_inflight = ctx->max_inflight,
		.grant_mode = ctx->grant_mode,
		.poll_mode = ctx->poll_mode,
		.dev = c->dev,
		.epfd = c->epfd,
		.rebuilds = rsec_rebuild_possible(c),
		.rebinds = rsec_rebind_possible(c),
		.grant_keys_chained = rsec_grant_keys_chained(c),
		.path_checks = rsec_path_check_possible(c),
	};
}

int rsec_conn_data_setup(struct rsec_conn *c)
{
	RSEC_GUARD(pick_device(c));
	rsec_conn_configure_path(c);
	/* From the context's pool: a QPN drawn at random, not the device's next one (docs/qpn.md). */
	RSEC_GUARD(rsec_ctx_take_qp(c->ctx, c->dev, &c->path.qp));
	c->path.have_qp = true;
	return rsec_data_setup(&c->path);
}

/* A client files its TLS tickets under "host:port/name": a ticket is only
 * offered where the certificate it stands for was checked, under that name. */
static RSEC_MUST_CHECK int conn_start_tls(struct rsec_conn *c, const char *host, uint16_t port, const char *peer_name)
{
	struct rsec_tls_opts opts = c->ctx->tls_opts;
	char dest[RSEC_TLS_RESUME_DEST_MAX];
	opts.peer_name = peer_name;
	if (host) {
		int n = snprintf(dest, sizeof(dest), "%s:%u/%s", host, (unsigned)port, peer_name ? peer_name : "");
		opts.resume_dest = n > 0 && (size_t)n < sizeof(dest) ? dest : NULL;
	}
	return rsec_ctx_tls_new(c->ctx, c->path.chan->sock, &opts, &c->path.chan->ssl);
}

int rsec_conn_watch(struct rsec_conn *c)
{
	if (c->lane)
		return c->root ? rsec_conn_watch(c->root) : 0;
	uint32_t events = EPOLLIN | (rsec_chan_wants_write(c->path.chan) ? EPOLLOUT : 0);
	if (events == c->sock_events)
		return 0;
	struct epoll_event ev = { .events = events, .data.u32 = 0 };
	if (epoll_ctl(c->epfd, EPOLL_CTL_MOD, c->path.chan->sock, &ev) < 0)
		return RSEC_E_IO;
	c->sock_events = events;
	rsec_lanes_watch(c, events);
	return 0;
}

static RSEC_MUST_CHECK int process_tls(struct rsec_conn *c)
{
	bool want_write = false;
	int rc = rsec_tls_handshake_step(c->path.chan->ssl, &want_write);
	c->path.chan->want_write = rc == RSEC_E_AGAIN && want_write;
	if (rsec_conn_watch(c) < 0)
		return rsec_conn_fail(c, RSEC_E_IO, "epoll: %s", strerror(errno));
	if (rc == RSEC_E_AGAIN)
		return RSEC_E_AGAIN;
	if (rc < 0) {
		char why[160];
		rsec_tls_last_error(c->path.chan->ssl, why, sizeof(why));
		return rsec_conn_fail(c, rc, "TLS handshake failed: %s", why);
	}
	return rsec_setup_tls_done(c);
}

/* Queued control frames go out as the peer reads; a peer that stops reading is dropped. */
static RSEC_MUST_CHECK int process_ctrl_out(struct rsec_conn *c)
{
	if (c->lane) {
		if (!c->root)
			return 0;
		int rc = process_ctrl_out(c->root);
		return rc < 0 ? c->path.close_code : 0; /* the root's failure failed its lanes */
	}
	if (c->path.chan->tx.len == 0 || c->rs.parked)
		return 0;
	int rc = rsec_chan_flush(c->path.chan);
	if (rc < 0)
		return rsec_resume_lost(c, rc, "control channel: %s", rsec_error_text(rc));
	if (rsec_chan_stalled(c->path.chan, rsec_now_ms()))
		return rsec_conn_fail(c, RSEC_E_TIMEOUT,
				      "control channel: the peer has not read %zu queued bytes for %u ms",
				      c->path.chan->tx.len, RSEC_CHAN_STALL_MS);
	return 0;
}

int rsec_conn_violation(struct rsec_conn *c, const char *why)
{
	if (c->path.phase == PHASE_CLOSED)
		return c->path.close_code;
	c->path.stats.protocol_violations++;
	rsec_conn_audit(c, RSEC_AUDIT_PROTOCOL_VIOLATION, rsec_error_text(RSEC_E_PROTO), why, NULL);
	return rsec_conn_fail(c, RSEC_E_PROTO, "%s", why);
}

static RSEC_MUST_CHECK int process_keepalive(struct rsec_conn *c)
{
	uint64_t now = rsec_now_ms();
	if (now - c->path.chan->last_rx_ms > 3 * RSEC_KEEPALIVE_MS)
		return rsec_resume_lost(c, RSEC_E_TIMEOUT, "peer silent for %llu ms",
					(unsigned long long)(now - c->path.chan->last_rx_ms));
	if (now - c->path.chan->last_tx_ms < RSEC_KEEPALIVE_MS)
		return 0;
	struct rsec_msg m = { .type = RSEC_MSG_KEEPALIVE };
	m.u.keepalive.nonce = now;
	int rc = rsec_chan_send(c->path.chan, c->lane, &m);
	if (rc < 0 && !rsec_chan_gone(rc))
		return rsec_conn_fail(c, rc, "cannot send KEEPALIVE");
	if (rc < 0)
		return rsec_resume_lost(c, rc, "control channel: cannot send KEEPALIVE: %s", rsec_error_text(rc));
	c->path.chan->last_tx_ms = now;
	return 0;
}

int rsec_conn_setup_step(struct rsec_conn *c)
{
	if (!c || c->lane)
		return RSEC_E_INVAL;
	if (c->path.phase == PHASE_CLOSED)
		return c->path.close_code;
	if (c->path.phase != PHASE_TLS)
		return 0;
	if (rsec_now_ms() > c->deadline_ms)
		return rsec_conn_fail(c, RSEC_E_TIMEOUT, "set-up did not finish in %d ms",
				      c->ctx->handshake_timeout_ms);
	return process_tls(c);
}

/* Every whole control frame the channel has: TLS may hold several in one record. */
static RSEC_MUST_CHECK int process_ctrl_in(struct rsec_conn *c)
{
	/* Parked: no channel. Answered: what follows SESSION is for the session this channel goes to. */
	while (c->path.phase != PHASE_CLOSED && !c->rs.parked && !c->rs.answered) {
		if (c->path.events_known && !c->sock_event)
			return 0; /* nothing arrived: no read (TLS holds nothing back once a read said AGAIN) */
		struct rsec_msg m;
		int rc = rsec_chan_recv(c->path.chan, &m);
		if (rc == RSEC_E_AGAIN) {
			c->sock_event = false; /* read dry: nothing until the fds are looked at again */
			return 0;
		}
		if (rc == RSEC_E_CLOSED)
			return rsec_resume_lost(c, rc, "control channel closed by the peer");
		if (rc == RSEC_E_TLS) {
			/* In TLS 1.3 a server judges our certificate after our handshake ended: its alert
			 * (certificate revoked, expired, unknown CA) comes with the first read. */
			char why[160];
			rsec_tls_last_error(c->path.chan->ssl, why, sizeof(why));
			return rsec_resume_lost(c, rc, "control channel: %s: %s", rsec_error_text(rc), why);
		}
		if (rc < 0)
			return rsec_resume_lost(c, rc, "control channel: %s", rsec_error_text(rc));
		rc = rsec_ctrl_receive(c, &m);
		OPENSSL_cleanse(&m, sizeof(m));
		if (rc < 0)
			return rc;
	}
	return 0;
}

int rsec_conn_last_words(struct rsec_conn *c)
{
	struct rsec_conn *root = c->lane ? c->root : c;
	if (!root || root->path.phase == PHASE_CLOSED || !root->path.chan)
		return 0;
	root->sock_event = true; /* read even if no event said so: the socket may hold them */
	return process_ctrl_in(root);
}

/*
 * Event mode, established: one epoll_wait says which of the control socket
 * and the completion channel have something, so that neither is read, nor
 * a CQ armed again, for nothing (each a system call). Without an answer,
 * both are looked at as before.
 */
static void probe_fds(struct rsec_conn *c)
{
	bool sock_was = c->sock_event;
	c->sock_event = false;
	if (rsec_conn_fd_events(c) < 0) {
		c->sock_event = sock_was;
		return;
	}
	c->path.events_known = true;
}

static bool running(const struct rsec_conn *c)
{
	return c->path.phase == PHASE_ESTABLISHED && !c->rs.parked;
}

/* An established session's own work, each step only while it still runs: one may park it or close it. */
static RSEC_MUST_CHECK int process_established(struct rsec_conn *c)
{
	if (running(c))
		RSEC_GUARD(rsec_conn_poll_data(c));
	if (running(c))
		RSEC_GUARD(rsec_rebuild_check_step(c));
	if (running(c))
		RSEC_GUARD(rsec_rebuild_expire(c));
	if (running(c))
		RSEC_GUARD(rsec_conn_settle(c, rsec_grant_expire(&c->path)));
	if (running(c))
		RSEC_GUARD(process_keepalive(c));
	if (running(c))
		RSEC_GUARD(rsec_rekey_step(c));
	if (running(c))
		rsec_lanes_expire(c);
	return 0;
}

static RSEC_MUST_CHECK int process_root(struct rsec_conn *c)
{
	if (c->rs.parked) {
		/* No control channel: only a try at a new one (client) and the grace period run, and the
		 * completion channel is drained (the old QP's flush woke it: level-triggered, it would spin). */
		RSEC_GUARD(rsec_conn_poll_data(c));
		RSEC_GUARD(rsec_resume_step(c));
		if (c->rs.parked || c->path.phase == PHASE_CLOSED)
			return c->path.phase == PHASE_CLOSED ? c->path.close_code : 0;
	}
	if (c->path.phase != PHASE_ESTABLISHED && rsec_now_ms() > c->deadline_ms)
		return rsec_conn_fail(c, RSEC_E_TIMEOUT, "set-up did not finish in %d ms",
				      c->ctx->handshake_timeout_ms);
	if (c->path.phase == PHASE_TLS) {
		int rc = process_tls(c);
		if (rc < 0)
			return rc;
	}
	RSEC_GUARD(process_ctrl_out(c));
	RSEC_GUARD(process_ctrl_in(c));
	if (c->path.phase == PHASE_QP_INFO || c->path.phase == PHASE_READY)
		RSEC_GUARD(rsec_conn_settle(c, rsec_data_quiet(&c->path)));
	RSEC_GUARD(process_established(c));
	if (c->path.phase == PHASE_CLOSED)
		return c->path.close_code;
	return c->path.phase == PHASE_ESTABLISHED ? 0 : RSEC_E_AGAIN;
}

int rsec_conn_progress(struct rsec_conn *c)
{
	if (!c)
		return RSEC_E_INVAL;
	if (c->lane)
		return rsec_lane_process(c);
	if (c->path.phase == PHASE_CLOSED)
		return c->path.close_code;
	if (c->ctx->poll_mode != RSEC_POLL_BUSY && c->path.phase == PHASE_ESTABLISHED && !c->rs.parked) {
		if (c->turn_probed) {
			c->path.events_known = true; /* the application's turn: the first look holds */
		} else {
			probe_fds(c);
			c->turn_probed = c->turns && c->path.events_known;
		}
	}
	int rc = process_root(c);
	c->path.events_known = false; /* what it said holds for this call, or the application's turn */
	return rc;
}

int rsec_conn_step(struct rsec_conn *c)
{
	uint64_t now = rsec_now_ms();
	if (c->ctx->poll_mode != RSEC_POLL_BUSY || c->path.phase != PHASE_ESTABLISHED || c->sock_event ||
	    c->rs.parked || now >= c->next_full_ms) {
		/* Keepalives, grant expiry and the peer's control frames never wait longer than this. */
		c->sock_event = false;
		c->next_full_ms = now + RSEC_BUSY_FULL_MS;
		return rsec_conn_progress(c);
	}
	/* The data path only: completions, credits, what waits for them, and queued control frames. */
	RSEC_GUARD(process_ctrl_out(c));
	RSEC_GUARD(rsec_conn_poll_data(c));
	return c->path.phase == PHASE_CLOSED ? c->path.close_code : 0;
}

/* The control connection leaves from source, if given, so that it and the
 * RDMA traffic (whose device owns that address) take the same path. */
static RSEC_MUST_CHECK int bind_source(int fd, int family, const char *source)
{
	struct addrinfo hints = { .ai_family = family, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST };
	struct addrinfo *ai;
	if (getaddrinfo(source, NULL, &hints, &ai) != 0)
		return RSEC_E_INVAL;
	int rc = bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 ? 0 : RSEC_E_IO;
	freeaddrinfo(ai);
	return rc;
}

static RSEC_MUST_CHECK int tcp_connect(const char *host, uint16_t port, const char *source, int timeout_ms,
				       int *out)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
	struct addrinfo *res;
	char service[8];
	snprintf(service, sizeof(service), "%u", port);
	if (getaddrinfo(host, service, &hints, &res) != 0)
		return RSEC_E_INVAL;
	int rc = RSEC_E_IO;
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0)
			continue;
		if (source && bind_source(fd, ai->ai_family, source) < 0) {
			close(fd);
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 && errno != EINPROGRESS) {
			close(fd);
			continue;
		}
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		int soerr = 0;
		socklen_t len = sizeof(soerr);
		int ready = poll(&p, 1, timeout_ms);
		if (ready == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) == 0 && soerr == 0) {
			*out = fd;
			rc = 0;
			break;
		}
		rc = ready == 0 ? RSEC_E_TIMEOUT : RSEC_E_IO;
		close(fd);
	}
	freeaddrinfo(res);
	return rc;
}

/* Set up (a HELLO's or a RESUME's answer) within c's deadline. */
static bool dialled(struct rsec_conn *c)
{
	return c->rs.offer ? c->rs.answered : c->path.phase == PHASE_ESTABLISHED;
}

int rsec_conn_dial(struct rsec_ctx *ctx, const char *host, uint16_t port, const char *server_name, int timeout_ms,
		   const struct rsec_conn *resuming, struct rsec_conn **out)
{
	*out = NULL;
	int sock;
	RSEC_GUARD(tcp_connect(host, port, ctx->local_addr, timeout_ms, &sock));
	struct rsec_conn *c = conn_new(ctx, sock);
	if (!c) {
		close(sock);
		return RSEC_E_NOMEM;
	}
	if (resuming) {
		c->rs.offer = resuming->rs.token;
		c->rs.epochs = resuming->rs.epochs;
		c->rs.offer_epoch = resuming->path.rb.epoch;
	}
	c->deadline_ms = rsec_now_ms() + (uint64_t)timeout_ms;
	int rc = conn_start_tls(c, host, port, server_name ? server_name : host);
	if (rc < 0 && !c->error[0])
		(void)rsec_conn_fail(c, rc, "cannot start TLS: %s", rsec_error_text(rc));
	while (rc >= 0 && !dialled(c) && c->path.phase != PHASE_CLOSED) {
		rc = rsec_conn_progress(c);
		if (!dialled(c) && (rc == RSEC_E_AGAIN || rc == 0))
			rc = rsec_conn_wait(c, 100);
	}
	if (c->path.phase == PHASE_CLOSED && rc >= 0)
		rc = c->path.close_code;
	/*
	 * RSEC_E_AGAIN from rsec_conn_process means only "not established": a
	 * resume's channel is done at SESSION, before that. Failing it here
	 * would free it with a goodbye on the channel the server just handed to
	 * the session, and the server would close the session.
	 */
	if (rc == RSEC_E_AGAIN && dialled(c))
		rc = 0;
	/* The connection object carries the reason; the caller may read it before freeing. */
	*out = c;
	return rc < 0 ? rc : 0;
}

int rsec_conn_accept(struct rsec_listener *l, struct rsec_conn **out)
{
	if (!l || !out)
		return RSEC_E_INVAL;
	*out = NULL;
	int sock = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (sock < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == ECONNABORTED ? RSEC_E_AGAIN : RSEC_E_IO;
	struct rsec_conn *c = conn_new(l->ctx, sock);
	if (!c) {
		close(sock);
		return RSEC_E_NOMEM;
	}
	int rc = conn_start_tls(c, NULL, 0, NULL);
	if (rc < 0) {
		rsec_conn_destroy(c);
		return rc;
	}
	*out = c;
	return 0;
}

/*
 * Message counters live in the seal; data MAC failures (grant.c) are added to
 * its MAC failures, and so are malformed frames: forgeries all, whatever
 * failed first (malformed tells how many of them did not even parse).
 */
static void fold_seal_stats(struct rsec_conn_stats *out, const struct rsec_conn *c)
{
	struct rsec_seal_stats s;
	rsec_seal_stats(rsec_seal_rx_now(&c->path.seal), &s);
	out->malformed = s.malformed + c->path.seal_before.malformed;
	out->mac_failures =
		s.mac_failures + c->path.seal_before.mac_failures + c->path.data_mac_failures + out->malformed;
	out->seq_violations = s.seq_violations + c->path.seal_before.seq_violations;
}

void rsec_conn_teardown_rdma(struct rsec_conn *c)
{
	rsec_onesided_teardown(&c->path); /* first: the regions its operations hold may be dying */
	rsec_grant_teardown(&c->path);
	rsec_region_teardown(&c->path); /* before the PD: a registration left on it would keep it */
	rsec_data_teardown(&c->path);
	if (c->path.have_seal) {
		fold_seal_stats(&c->path.stats, c);
		rsec_seal_free(&c->path.seal);
		c->path.have_seal = false;
	}
}

int rsec_conn_close_local(struct rsec_conn *c, const char *reason)
{
	if (!c)
		return RSEC_E_INVAL;
	if (c->path.phase == PHASE_CLOSED)
		return 0;
	int rc = 0;
	if (c->path.phase != PHASE_TLS) {
		struct rsec_msg m = { .type = RSEC_MSG_DISCONNECT };
		m.u.disconnect.reason = RSEC_DISC_NORMAL;
		rsec_wire_text_set(&m.u.disconnect.text, reason ? reason : "closed");
		rc = rsec_chan_send(c->path.chan, c->lane, &m);
		if (!c->lane && c->path.chan->ssl) /* a lane's goodbye is one frame: the session's channel stays */
			(void)!rsec_tls_shutdown(c->path.chan->ssl);
	}
	rsec_grant_close(&c->path); /* audited revokes, before the resources go */
	rsec_conn_teardown_rdma(c);
	(void)rsec_conn_fail(c, RSEC_E_CLOSED, "closed locally%s%s", reason ? ": " : "", reason ? reason : "");
	return rc;
}

void rsec_conn_destroy(struct rsec_conn *c)
{
	if (!c)
		return;
	if (c->path.phase != PHASE_CLOSED)
		(void)rsec_conn_close_local(c, "closed");
	rsec_conn_teardown_rdma(c);
	rsec_ops_free(&c->path.ops);
	rsec_resume_forget(c);
	rsec_rekey_forget(c);
	rsec_pgk_clear(&c->path.grantee_keys);
	if (c->lane)
		rsec_lane_unlink(c);
	else
		rsec_lanes_detach(c);
	rsec_chan_drop(&c->own_chan); /* a lane's own is unused */
	if (c->dev)
		rsec_dev_put(c->dev);
	if (c->epfd >= 0)
		close(c->epfd);
	OPENSSL_cleanse(c, sizeof(*c));
	free(c);
}

int rsec_conn_stats_fill(const struct rsec_conn *c, struct rsec_conn_stats *out)
{
	if (!c || !out)
		return RSEC_E_INVAL;
	*out = c->path.stats;
	if (c->path.have_seal)
		fold_seal_stats(out, c);
	return 0;
}
