/* SPDX-License-Identifier: MIT */
/*
 * rdmasec-server's event loop: one thread, one epoll set holding the
 * listener, a signalfd and one fd per connection. No thread per client and
 * no fixed small cap: limits come from the configuration and hold before
 * any RDMA resource is spent (capacity, per-source handshakes and rate, and
 * a file-descriptor reserve at accept; identity at admission). No session
 * waits inside the loop: a request that needs the peer (a VERIFY, credits,
 * a TLS window) leaves its session waiting while the others are served.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "admission.h"
#include "app_proto.h"
#include "fdlimit.h"
#include "log.h"
#include "metrics.h"
#include "ratelog.h"
#include "rdmasec.h"
#include "server.h"

#define TICK_MS 250
#define DEVICES_BY_ADDRESS 8 /* without --device, librdmasec opens up to 8, one per local address */

struct session {
	struct server *srv;
	struct rsec_conn *conn;
	uint64_t id;
	bool established;
	bool admitted;
	bool admission_held; /* counts as one of its source's handshakes in progress */
	char peer[256];
	/* The one buffer this client may reach by RDMA, only through grants. */
	struct rsec_region *region;
	uint8_t *mem;
	size_t mem_len, data_len;
	uint64_t grant_id, grant_tag, next_tag;
	bool grant_live;
	uint8_t grant_op;  /* APP_WRITE_REQ or APP_READ_REQ */
	bool grant_sealed; /* RSEC_GRANT_SEALED: rsec_grant_open ends it */
	size_t want_len;   /* the write asked for: the plaintext the client must deliver */
	/* WRITE_DONE came and the client's VERIFY (TLS) has not: it may trail (RDMA). */
	bool verify_pending;
	uint64_t verify_deadline_ms;
	uint64_t rebuilds; /* of its data path, logged so far */
	struct session *prev, *next;
};

struct server {
	const struct rsec_conf *conf;
	struct rsec_ctx *ctx;
	struct rsec_listener *listener;
	int epfd, sigfd;
	struct session *sessions;
	size_t nsessions;
	uint64_t next_id;
	struct session *current; /* the session rsec_conn_process is running for */
	uint8_t *msg;            /* one receive buffer, max_msg + opcode */
	size_t msg_cap;
	struct server_counters n;
	struct metrics *metrics;       /* per-peer counters: the stats reply and the metrics file */
	struct metrics_export metrics_file;
	struct admission *adm;         /* per-source handshakes before authentication */
	struct ratelog *rlog;          /* log lines about unauthenticated peers, rate limited */
	struct fdlimit_gate fdgate;    /* accepting pauses to keep a file-descriptor reserve */
	uint64_t fd_base;              /* fds open with no session */
	bool stop;
};

static uint64_t monotonic_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int admit(void *arg, const char *peer)
{
	struct server *srv = arg;
	size_t same = 0;
	for (struct session *s = srv->sessions; s; s = s->next)
		if (s->admitted && strcmp(s->peer, peer) == 0)
			same++;
	if (same >= srv->conf->max_per_identity)
		return RSEC_E_LIMIT;
	if (srv->current) {
		srv->current->admitted = true;
		snprintf(srv->current->peer, sizeof(srv->current->peer), "%s", peer);
	}
	return 0;
}

static void region_release(struct session *s)
{
	if (s->grant_live)
		(void)rsec_revoke(s->conn, s->grant_id);
	s->grant_live = false;
	rsec_region_free(s->region); /* wipes the buffer */
	s->region = NULL;
	s->mem = NULL;
	s->mem_len = s->data_len = 0;
}

/* The session's handshake is over (or it ended): its source may start another. */
static void admission_done(struct session *s)
{
	if (!s->admission_held)
		return;
	(void)admission_release(s->srv->adm, rsec_conn_peer_addr(s->conn));
	s->admission_held = false;
}

static uint64_t fds_in_use(const struct server *srv)
{
	return srv->fd_base + (uint64_t)srv->nsessions * FDLIMIT_PER_CONN;
}

/* When the fd gate flipped: the listener leaves the epoll set (no busy loop at the limit), or returns. */
static void listener_gate(struct server *srv, bool flipped)
{
	if (!flipped)
		return;
	int fd = rsec_listener_fd(srv->listener);
	if (srv->fdgate.paused) {
		(void)epoll_ctl(srv->epfd, EPOLL_CTL_DEL, fd, NULL);
		srv->n.accept_paused++;
		log_event("warn", "accept_paused", "clients=%zu fds=%llu fd_limit=%llu", srv->nsessions,
			  (unsigned long long)fds_in_use(srv), (unsigned long long)srv->fdgate.soft);
		return;
	}
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &srv->listener };
	if (epoll_ctl(srv->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		/* Paused again, so the tick retries: accepting must not stop for good. */
		log_event("error", "accept_resume_failed", "reason=%s", log_q(strerror(errno)));
		(void)fdlimit_gate_exhausted(&srv->fdgate, fds_in_use(srv), monotonic_ms());
		return;
	}
	log_event("info", "accept_resumed", "clients=%zu fds=%llu", srv->nsessions,
		  (unsigned long long)fds_in_use(srv));
}

/* The library rebuilt the session's data path (self-healing): say so, with why. */
static void log_rebuilds(struct session *s)
{
	struct rsec_conn_stats st;
	if (rsec_conn_stats(s->conn, &st) < 0 || st.rebuilds == s->rebuilds)
		return;
	s->rebuilds = st.rebuilds;
	const char *why = rsec_conn_rebuild_reason(s->conn);
	log_event("warn", "rebuilt",
		  "conn=%llu peer=%s rebuilds=%llu reason=%s local_qpn=%u mac_failures=%llu malformed=%llu "
		  "seq_violations=%llu qp_errors=%llu protocol_violations=%llu",
		  (unsigned long long)s->id, log_q(s->peer), (unsigned long long)st.rebuilds, log_q(why ? why : ""),
		  st.local_qpn, (unsigned long long)st.mac_failures, (unsigned long long)st.malformed,
		  (unsigned long long)st.seq_violations, (unsigned long long)st.qp_errors,
		  (unsigned long long)st.protocol_violations);
}

/* An established session's end: every counter the library keeps, in the log. */
static void log_closed(const struct session *s, int rc, const char *why, const struct rsec_conn_stats *st)
{
	log_event(rc == RSEC_E_CLOSED || rc == 0 ? "info" : "warn", "closed",
		  "conn=%llu peer=%s code=%s reason=%s msgs_in=%llu msgs_out=%llu bytes_in=%llu bytes_out=%llu "
		  "mac_failures=%llu malformed=%llu seq_violations=%llu qp_errors=%llu protocol_violations=%llu "
		  "rebuilds=%llu resumes=%llu grants_issued=%llu grants_revoked=%llu grants_expired=%llu "
		  "rdma_writes=%llu rdma_reads=%llu",
		  (unsigned long long)s->id, log_q(s->peer), log_q(rsec_strerror(rc)), log_q(why),
		  (unsigned long long)st->msgs_received, (unsigned long long)st->msgs_sent,
		  (unsigned long long)st->bytes_received, (unsigned long long)st->bytes_sent,
		  (unsigned long long)st->mac_failures, (unsigned long long)st->malformed,
		  (unsigned long long)st->seq_violations, (unsigned long long)st->qp_errors,
		  (unsigned long long)st->protocol_violations, (unsigned long long)st->rebuilds,
		  (unsigned long long)st->resumes, (unsigned long long)st->grants_issued,
		  (unsigned long long)st->grants_revoked, (unsigned long long)st->grants_expired,
		  (unsigned long long)st->rdma_writes, (unsigned long long)st->rdma_reads);
}

/* A set-up that ended: refused, failed, or handed over to the session it resumed. */
static void log_setup_end(struct session *s, int rc, const char *why, struct peer_counters *per_peer)
{
	struct server *srv = s->srv;
	if (rc == RSEC_E_CLOSED && strncmp(why, "handed over:", 12) == 0) {
		/* It carried a RESUME: its TLS connection now serves the session it named. */
		log_event("info", "resumed", "conn=%llu peer=%s addr=%s tls=%s reason=%s", (unsigned long long)s->id,
			  log_q(s->peer[0] ? s->peer : rsec_conn_peer(s->conn)), log_q(rsec_conn_peer_addr(s->conn)),
			  rsec_conn_resumed(s->conn) ? "resumed" : "full", log_q(why));
		return;
	}
	const char *event = "handshake_failed";
	if (!s->admitted && (rc == RSEC_E_AUTH || rc == RSEC_E_TLS)) {
		srv->n.refused_auth++;
		per_peer->refused_handshakes = 1;
		event = "refused";
	} else if (rc == RSEC_E_LIMIT) {
		srv->n.refused_identity++;
		per_peer->refused_handshakes = 1;
		event = "refused";
	} else {
		srv->n.handshake_failed++;
	}
	/* Anyone can make these: counted always, logged at a bounded rate. */
	if (s->admitted || ratelog_allow(srv->rlog, event, monotonic_ms()))
		log_event("warn", event, "conn=%llu peer=%s addr=%s code=%s reason=%s qp_created=no",
			  (unsigned long long)s->id, log_q(s->peer[0] ? s->peer : "unauthenticated"),
			  log_q(rsec_conn_peer_addr(s->conn)), log_q(rsec_strerror(rc)), log_q(why));
}

static void session_end(struct session *s, int rc)
{
	struct server *srv = s->srv;
	struct rsec_conn_stats st = { 0 };
	struct peer_counters per_peer = { 0 };
	if (rsec_conn_stats(s->conn, &st) == 0) {
		srv->n.mac_failures += st.mac_failures;
		srv->n.seq_violations += st.seq_violations;
		srv->n.qp_errors += st.qp_errors;
		srv->n.protocol_violations += st.protocol_violations;
		srv->n.malformed += st.malformed;
		srv->n.rebuilds += st.rebuilds;
		srv->n.resumes += st.resumes;
		per_peer.mac_failures = st.mac_failures;
		per_peer.seq_violations = st.seq_violations;
		per_peer.qp_errors = st.qp_errors;
		per_peer.protocol_violations = st.protocol_violations;
		per_peer.malformed = st.malformed;
		per_peer.rebuilds = st.rebuilds;
		per_peer.resumes = st.resumes;
	}
	const char *why = rsec_conn_error(s->conn);
	if (s->established) {
		per_peer.connections = 1;
		srv->n.closed++;
		/* A rebuild that completed in the step that closed it (inside rsec_recv, say) is told first. */
		log_rebuilds(s);
		log_closed(s, rc, why, &st);
	} else {
		log_setup_end(s, rc, why, &per_peer);
	}
	/* Under the identity; a peer refused before authenticating, under its address. */
	char key[METRICS_KEY_MAX];
	metrics_peer_key(key, rsec_conn_peer(s->conn), rsec_conn_peer_addr(s->conn));
	metrics_add(srv->metrics, key, &per_peer);
	region_release(s);
	admission_done(s);
	if (s->prev)
		s->prev->next = s->next;
	else
		srv->sessions = s->next;
	if (s->next)
		s->next->prev = s->prev;
	srv->nsessions--;
	rsec_conn_free(s->conn); /* closes its fd, which leaves the epoll set */
	free(s);
	listener_gate(srv, fdlimit_gate_update(&srv->fdgate, fds_in_use(srv), monotonic_ms()));
}

/*
 * Replies never wait: what credits do not let out now waits in the library,
 * and the session takes no new request until it has left (session_busy).
 */
static int send_now(struct session *s, const uint8_t *buf, size_t len)
{
	return rsec_send(s->conn, buf, len, 0);
}

static int reply(struct session *s, const struct app_msg *m)
{
	uint8_t buf[128];
	size_t n = app_encode(m, buf, sizeof(buf));
	if (n == 0)
		return RSEC_E_INVAL;
	return send_now(s, buf, n);
}

static int reply_error(struct session *s, const char *text)
{
	struct app_msg m = { .op = APP_ERROR };
	snprintf(m.text, sizeof(m.text), "%s", text);
	return reply(s, &m);
}

static void sha256(const uint8_t *p, size_t n, uint8_t out[APP_SHA256_LEN])
{
	unsigned len = APP_SHA256_LEN;
	if (!EVP_Digest(p, n, out, &len, EVP_sha256(), NULL))
		memset(out, 0, APP_SHA256_LEN);
}

/* At a random address, so buffers of consecutive clients are not predictable (ReDMArk V4). */
static int region_alloc(struct session *s, size_t len)
{
	int rc = rsec_region_alloc(s->conn, len, RSEC_ACCESS_READ | RSEC_ACCESS_WRITE, &s->region);
	if (rc < 0)
		return rc;
	s->mem = rsec_region_addr(s->region);
	s->mem_len = len;
	return 0;
}

/* The buffer has room for the sealed form of what is written, so any write can be read back sealed. */
static int on_write_req(struct session *s, const struct app_msg *m, bool sealed)
{
	if (m->len == 0 || m->len > s->srv->conf->max_msg)
		return reply_error(s, "write: length out of range");
	region_release(s);
	size_t room = rsec_sealed_len(m->len);
	int rc = region_alloc(s, room);
	if (rc < 0) {
		region_release(s);
		return reply_error(s, "write: cannot prepare a buffer");
	}
	s->grant_tag = ++s->next_tag;
	rc = rsec_grant(s->conn, s->region, 0, sealed ? room : m->len,
			RSEC_ACCESS_WRITE | (sealed ? RSEC_GRANT_SEALED : 0), s->srv->conf->grant_ttl_ms, s->grant_tag,
			&s->grant_id);
	if (rc < 0)
		return rc;
	s->grant_live = true;
	s->grant_op = APP_WRITE_REQ;
	s->grant_sealed = sealed;
	s->want_len = m->len;
	struct app_msg r = { .op = APP_WRITE_GRANTED, .tag = s->grant_tag };
	return reply(s, &r);
}

static bool grant_matches(const struct session *s, const struct app_msg *m, uint8_t op)
{
	return s->grant_live && s->grant_op == op && m->tag == s->grant_tag;
}

/*
 * The library revokes the grant, then checks the client's MAC of what it
 * wrote, or opens what it sealed. Until the client's VERIFY arrives (or
 * verify_timeout_ms passes) the session waits; the server does not.
 */
static int resume_verify(struct session *s)
{
	uint64_t off, len;
	int rc = s->grant_sealed ? rsec_grant_open(s->conn, s->grant_id, &off, &len, 0)
				 : rsec_grant_verify(s->conn, s->grant_id, &off, &len, 0);
	if (rc == RSEC_E_AGAIN) {
		if (monotonic_ms() < s->verify_deadline_ms)
			return 0;
		rc = RSEC_E_TIMEOUT;
	}
	s->verify_pending = false;
	s->grant_live = rc == RSEC_E_TIMEOUT; /* without a claim the grant stays until its ttl */
	if (rc == RSEC_E_MAC || rc == RSEC_E_TIMEOUT || rc == RSEC_E_GRANT || (rc == 0 && (off || len != s->want_len))) {
		s->srv->n.verify_failed++;
		log_event("warn", "verify_failed", "conn=%llu peer=%s code=%s", (unsigned long long)s->id,
			  log_q(s->peer), log_q(rc ? rsec_strerror(rc) : "partial write"));
		s->data_len = 0;
		if (rc == RSEC_E_MAC)
			return reply_error(s, s->grant_sealed ? "write: the sealed bytes do not open (changed, replayed "
								"or cut); discarded"
							      : "write: the bytes differ from what you wrote (data MAC); "
								"discarded");
		return reply_error(s, "write: no verified write of the whole grant");
	}
	if (rc < 0)
		return rc;
	s->data_len = s->want_len;
	s->srv->n.rdma_writes++;
	struct app_msg r = { .op = APP_WRITE_RESULT, .len = s->data_len };
	sha256(s->mem, s->data_len, r.sha256);
	return reply(s, &r);
}

static int on_write_done(struct session *s, const struct app_msg *m)
{
	if (!grant_matches(s, m, APP_WRITE_REQ))
		return reply_error(s, "no such grant");
	s->verify_pending = true;
	s->verify_deadline_ms = monotonic_ms() + s->srv->conf->verify_timeout_ms;
	return resume_verify(s);
}

/* A sealed READ grant seals the buffer in place: its hash is taken first. */
static int on_read_req(struct session *s, bool sealed)
{
	if (!s->region || s->data_len == 0 || s->grant_live)
		return reply_error(s, "read: nothing written yet");
	struct app_msg r = { .op = APP_READ_GRANTED, .len = s->data_len };
	sha256(s->mem, s->data_len, r.sha256);
	s->grant_tag = ++s->next_tag;
	int rc = rsec_grant(s->conn, s->region, 0, sealed ? rsec_sealed_len(s->data_len) : s->data_len,
			    RSEC_ACCESS_READ | (sealed ? RSEC_GRANT_SEALED : RSEC_GRANT_VERIFIED),
			    s->srv->conf->grant_ttl_ms, s->grant_tag, &s->grant_id);
	if (rc < 0)
		return rc;
	s->grant_live = true;
	s->grant_op = APP_READ_REQ;
	s->grant_sealed = sealed;
	r.tag = s->grant_tag;
	return reply(s, &r);
}

static int on_read_done(struct session *s, const struct app_msg *m)
{
	if (!grant_matches(s, m, APP_READ_REQ))
		return reply_error(s, "no such grant");
	/* A sealed grant turns back into plaintext, for the next read. */
	uint64_t off, len;
	int rc = s->grant_sealed ? rsec_grant_open(s->conn, s->grant_id, &off, &len, 0)
				 : rsec_revoke(s->conn, s->grant_id);
	s->grant_live = false;
	if (rc == RSEC_E_MAC) {
		s->data_len = 0;
		return reply_error(s, "read: the sealed buffer changed while granted; discarded");
	}
	if (rc == RSEC_E_GRANT) /* it went with a rebuilt data path, or expired: the client may ask again */
		return reply_error(s, "read: the grant is gone");
	if (rc < 0)
		return rc;
	s->srv->n.rdma_reads++;
	struct app_msg r = { .op = APP_READ_RESULT };
	return reply(s, &r);
}

/* The server's counters about this client's identity: its ended connections, plus this one. */
static int on_stats_req(struct session *s)
{
	struct peer_counters c;
	const char *key = metrics_lookup(s->srv->metrics, s->peer, &c);
	struct rsec_conn_stats st;
	if (rsec_conn_stats(s->conn, &st) == 0) {
		c.connections++;
		c.mac_failures += st.mac_failures;
		c.seq_violations += st.seq_violations;
		c.qp_errors += st.qp_errors;
		c.protocol_violations += st.protocol_violations;
	}
	struct app_msg r = { .op = APP_STATS_REPLY };
	r.stats = (struct app_stats){ c.connections, c.mac_failures, c.seq_violations, c.qp_errors,
				      c.refused_handshakes };
	/* The reply's text is printable ASCII; an identity may hold UTF-8. */
	size_t n = 0;
	for (; key[n] && n < APP_ERROR_TEXT_MAX; n++)
		r.text[n] = key[n] >= 0x20 && key[n] < 0x7f ? key[n] : '?';
	r.text[n] = '\0';
	uint8_t buf[APP_MSG_FIXED_MAX];
	size_t len = app_encode(&r, buf, sizeof(buf));
	if (len == 0)
		return RSEC_E_INVAL;
	return send_now(s, buf, len);
}

static int on_message(struct session *s, uint8_t *buf, size_t len)
{
	struct app_msg m;
	const char *why;
	s->srv->n.messages++;
	if (!app_decode(buf, len, &m, &why)) {
		log_event("warn", "bad_request", "conn=%llu peer=%s reason=%s", (unsigned long long)s->id,
			  log_q(s->peer), log_q(why));
		return reply_error(s, "malformed request");
	}
	log_event("debug", "request", "conn=%llu op=%s len=%zu", (unsigned long long)s->id, app_op_name(m.op), len);
	switch (m.op) {
	case APP_ECHO:
		buf[0] = APP_ECHO_REPLY; /* the reply is the request with its opcode changed */
		return send_now(s, buf, len);
	case APP_WRITE_REQ:
	case APP_SEALED_WRITE_REQ:
		return on_write_req(s, &m, m.op == APP_SEALED_WRITE_REQ);
	case APP_WRITE_DONE:
		return on_write_done(s, &m);
	case APP_READ_REQ:
	case APP_SEALED_READ_REQ:
		return on_read_req(s, m.op == APP_SEALED_READ_REQ);
	case APP_READ_DONE:
		return on_read_done(s, &m);
	case APP_STATS_REQ:
		return on_stats_req(s);
	default:
		return reply_error(s, "unexpected request");
	}
}

/* Everything one connection can do now; false once it has ended. */
static bool session_step(struct session *s)
{
	struct server *srv = s->srv;
	srv->current = s;
	int rc = rsec_conn_process(s->conn);
	srv->current = NULL;
	if (rc == RSEC_E_AGAIN)
		return true;
	admission_done(s); /* set-up is over, either way */
	/* A connection may come up and fail in one step (its fresh QP attacked): it still had a QP. */
	struct rsec_conn_stats st;
	if (!s->established && (rc == 0 || (rsec_conn_stats(s->conn, &st) == 0 && st.local_qpn != 0))) {
		s->established = true;
		srv->n.established++;
		snprintf(s->peer, sizeof(s->peer), "%s", rsec_conn_peer(s->conn));
		const char *grants = rsec_conn_grant_mechanism(s->conn);
		log_event("info", "established", "conn=%llu peer=%s clients=%zu tls=%s grants=%s",
			  (unsigned long long)s->id, log_q(s->peer), srv->nsessions,
			  rsec_conn_resumed(s->conn) ? "resumed" : "full", grants ? grants : "none");
	}
	if (s->established)
		log_rebuilds(s);
	if (rc == 0 && s->verify_pending)
		rc = resume_verify(s);
	if (rc < 0) {
		session_end(s, rc);
		return false;
	}
	/* One request at a time: the next waits in the library until this one is answered. */
	while (!s->verify_pending && rsec_send_queued(s->conn) == 0) {
		size_t len;
		rc = rsec_recv(s->conn, srv->msg, srv->msg_cap, &len, 0);
		if (rc == RSEC_E_AGAIN)
			return true;
		if (rc == 0)
			rc = on_message(s, srv->msg, len);
		if (rc < 0) {
			session_end(s, rc);
			return false;
		}
	}
	return true;
}

/* Closed at accept, before TLS and any RDMA resource: counted per address, logged at a bounded rate. */
static void refuse_at_accept(struct server *srv, struct rsec_conn *conn, const char *why)
{
	char key[METRICS_KEY_MAX];
	metrics_peer_key(key, NULL, rsec_conn_peer_addr(conn));
	metrics_add(srv->metrics, key, &(struct peer_counters){ .refused_handshakes = 1 });
	if (ratelog_allow(srv->rlog, "refused", monotonic_ms()))
		log_event("warn", "refused", "addr=%s reason=%s clients=%zu qp_created=no",
			  log_q(rsec_conn_peer_addr(conn)), log_q(why), srv->nsessions);
	(void)rsec_conn_close(conn, why); /* the reason goes to the audit log */
	rsec_conn_free(conn);
}

/* Capacity, then the source's handshakes in progress and rate: NULL admits. */
static const char *accept_verdict(struct server *srv, struct rsec_conn *conn)
{
	if (srv->nsessions >= srv->conf->max_clients) {
		srv->n.refused_capacity++;
		return "max_clients reached";
	}
	const char *why = NULL;
	switch (admission_try(srv->adm, rsec_conn_peer_addr(conn), monotonic_ms(), &why)) {
	case ADMISSION_ADMIT:
		return NULL;
	case ADMISSION_REFUSE_CONCURRENT:
		srv->n.refused_source_concurrent++;
		return why;
	case ADMISSION_REFUSE_RATE:
		srv->n.refused_source_rate++;
		return why;
	default:
		srv->n.refused_source_table++;
		return why;
	}
}

static struct session *session_new(struct server *srv, struct rsec_conn *conn)
{
	struct session *s = calloc(1, sizeof(*s));
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = s };
	if (!s || epoll_ctl(srv->epfd, EPOLL_CTL_ADD, rsec_conn_fd(conn), &ev) < 0) {
		log_event("warn", "accept_failed", "reason=%s", log_q(s ? strerror(errno) : "out of memory"));
		free(s);
		return NULL;
	}
	s->srv = srv;
	s->conn = conn;
	s->admission_held = true;
	s->id = ++srv->next_id;
	s->next = srv->sessions;
	if (s->next)
		s->next->prev = s;
	srv->sessions = s;
	srv->nsessions++;
	return s;
}

/* accept(2): network errors of the pending connection, to be treated like EAGAIN and retried. */
static bool accept_error_transient(int err)
{
	switch (err) {
	case ENETDOWN:
	case EPROTO:
	case ENOPROTOOPT:
	case EHOSTDOWN:
	case ENONET:
	case EHOSTUNREACH:
	case EOPNOTSUPP:
	case ENETUNREACH:
	case EPERM:
		return true;
	default:
		return false;
	}
}

static void accept_all(struct server *srv)
{
	while (!srv->fdgate.paused) {
		struct rsec_conn *conn;
		int rc = rsec_accept(srv->listener, &conn);
		if (rc == RSEC_E_AGAIN)
			return;
		if (rc < 0) {
			int err = errno;
			if (ratelog_allow(srv->rlog, "accept_failed", monotonic_ms()))
				log_event("warn", "accept_failed", "code=%s reason=%s", log_q(rsec_strerror(rc)),
					  log_q(strerror(err)));
			if (rc == RSEC_E_IO && accept_error_transient(err))
				continue; /* that connection's own trouble */
			/* Out of fds, memory or buffers: pause rather than spin on a readable listener. */
			listener_gate(srv, fdlimit_gate_exhausted(&srv->fdgate, fds_in_use(srv), monotonic_ms()));
			return;
		}
		srv->n.accepted++;
		const char *why = accept_verdict(srv, conn);
		if (why) {
			refuse_at_accept(srv, conn, why);
			continue;
		}
		struct session *s = session_new(srv, conn);
		if (!s) {
			(void)admission_release(srv->adm, rsec_conn_peer_addr(conn));
			rsec_conn_free(conn);
			continue;
		}
		log_event("debug", "accepted", "conn=%llu addr=%s", (unsigned long long)s->id,
			  log_q(rsec_conn_peer_addr(conn)));
		listener_gate(srv, fdlimit_gate_update(&srv->fdgate, fds_in_use(srv), monotonic_ms()));
		(void)session_step(s);
	}
}

static void log_counters(const struct server *srv)
{
	const struct server_counters *n = &srv->n;
	log_event("info", "counters",
		  "clients=%zu accepted=%llu established=%llu qps_created=%llu refused_capacity=%llu "
		  "refused_source_concurrent=%llu refused_source_rate=%llu refused_source_table=%llu "
		  "accept_paused=%llu log_suppressed=%llu "
		  "refused_auth=%llu refused_identity=%llu handshake_failed=%llu closed=%llu messages=%llu "
		  "rdma_writes=%llu rdma_reads=%llu mac_failures=%llu seq_violations=%llu qp_errors=%llu "
		  "protocol_violations=%llu malformed=%llu rebuilds=%llu resumes=%llu "
		  "audit_errors=%llu",
		  srv->nsessions, (unsigned long long)n->accepted, (unsigned long long)n->established,
		  (unsigned long long)n->established, (unsigned long long)n->refused_capacity,
		  (unsigned long long)n->refused_source_concurrent, (unsigned long long)n->refused_source_rate,
		  (unsigned long long)n->refused_source_table, (unsigned long long)n->accept_paused,
		  (unsigned long long)n->log_suppressed,
		  (unsigned long long)n->refused_auth, (unsigned long long)n->refused_identity,
		  (unsigned long long)n->handshake_failed, (unsigned long long)n->closed,
		  (unsigned long long)n->messages, (unsigned long long)n->rdma_writes,
		  (unsigned long long)n->rdma_reads, (unsigned long long)n->mac_failures,
		  (unsigned long long)n->seq_violations, (unsigned long long)n->qp_errors,
		  (unsigned long long)n->protocol_violations, (unsigned long long)n->malformed,
		  (unsigned long long)n->rebuilds, (unsigned long long)n->resumes,
		  (unsigned long long)n->audit_errors);
}

/* Rewrites the metrics file (if any) when due, or now; logs when writing starts failing and recovers. */
static int metrics_flush(struct server *srv, bool force)
{
	char err[512] = "";
	bool was_failing = srv->metrics_file.failing;
	int rc = metrics_export_tick(&srv->metrics_file, srv->metrics, &srv->n, srv->nsessions, monotonic_ms(),
				     force, err, sizeof(err));
	if (rc < 0 && !was_failing)
		log_event("warn", "metrics_failed", "reason=%s", log_q(err));
	else if (rc > 0 && was_failing)
		log_event("info", "metrics_written", "file=%s", log_q(srv->metrics_file.path));
	return rc;
}

static void on_signal(struct server *srv)
{
	struct signalfd_siginfo si;
	while (read(srv->sigfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGUSR1) {
			log_counters(srv);
			(void)metrics_flush(srv, true);
			continue;
		}
		log_event("info", "shutdown", "signal=%s clients=%zu", si.ssi_signo == SIGINT ? "INT" : "TERM",
			  srv->nsessions);
		srv->stop = true;
	}
}

/* A lost audit record is a security event of its own: say so once per second it happens. */
static void check_audit(struct server *srv)
{
	uint64_t lost = rsec_ctx_audit_errors(srv->ctx);
	if (lost > srv->n.audit_errors)
		log_event("error", "audit_failed", "records_lost=%llu total=%llu",
			  (unsigned long long)(lost - srv->n.audit_errors), (unsigned long long)lost);
	srv->n.audit_errors = lost;
}

static void tick_all(struct server *srv)
{
	check_audit(srv);
	uint64_t now = monotonic_ms();
	ratelog_tick(srv->rlog, now);
	srv->n.log_suppressed = ratelog_suppressed_total(srv->rlog);
	listener_gate(srv, fdlimit_gate_update(&srv->fdgate, fds_in_use(srv), now));
	struct session *s = srv->sessions;
	while (s) {
		struct session *next = s->next; /* s may end */
		(void)session_step(s);
		s = next;
	}
}

static int server_setup(struct server *srv, const struct rsec_conf *conf, uint8_t *psk, size_t psk_len)
{
	char err[256] = "";
	uint64_t fd_soft, fd_hard;
	(void)fdlimit_raise(&fd_soft, &fd_hard); /* logs both limits, and a failure to raise */
	struct admission_limits limits;
	admission_limits_from_conf(&limits, conf);
	srv->adm = admission_new(&limits);
	srv->rlog = ratelog_new(RATELOG_DEFAULT_LINES, NULL, NULL);
	srv->metrics = metrics_new(METRICS_MAX_PEERS);
	if (!srv->metrics || !srv->adm || !srv->rlog) {
		fprintf(stderr, "rdmasec-server: out of memory\n");
		return RSEC_E_NOMEM;
	}
	srv->metrics_file.path = conf->metrics_file;
	struct rsec_ctx_attr attr = {
		.is_server = 1,
		.device = conf->device[0] ? conf->device : NULL,
		.recv_slots = conf->recv_slots,
		.slot_size = conf->slot_size,
		.max_msg = conf->max_msg + 1, /* room for the opcode byte */
		.handshake_timeout_ms = (int)conf->handshake_timeout_ms,
		.admit = admit,
		.admit_arg = srv,
	};
	attr.comp_mask |= RSEC_CTX_ATTR_GRANT_MODE | RSEC_CTX_ATTR_QP_POOL | RSEC_CTX_ATTR_RESUME | RSEC_CTX_ATTR_REBUILDS |
			  RSEC_CTX_ATTR_GRACE;
	attr.resume_grace_ms = conf->resume_grace_ms;
	attr.tls_resume_s = conf->resume_s;
	attr.rebuilds_per_min = conf->rebuilds_per_min;
	if (conf->audit_log[0]) {
		attr.comp_mask |= RSEC_CTX_ATTR_AUDIT;
		attr.audit_path = conf->audit_log;
	}
	attr.qp_pool = conf->qp_pool;
	attr.grant_mode = strcmp(conf->grant_mode, "mw") == 0   ? RSEC_GRANT_MW
			  : strcmp(conf->grant_mode, "mr") == 0 ? RSEC_GRANT_MR
								: RSEC_GRANT_AUTO;
	if (psk_len) {
		attr.psk = psk;
		attr.psk_len = psk_len;
		attr.psk_identity = conf->psk_identity;
	} else {
		attr.ca_file = conf->ca;
		attr.cert_file = conf->cert;
		attr.key_file = conf->key;
	}
	int rc = rsec_ctx_new(&attr, &srv->ctx, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "rdmasec-server: %s (%s)\n", err[0] ? err : "cannot set up", rsec_strerror(rc));
		return rc;
	}
	rc = rsec_listen(srv->ctx, conf->listen_addr, conf->listen_port, 1024, &srv->listener);
	if (rc < 0) {
		fprintf(stderr, "rdmasec-server: cannot listen on %s:%u: %s\n", conf->listen_addr, conf->listen_port,
			rsec_strerror(rc));
		return rc;
	}
	srv->msg_cap = (size_t)conf->max_msg + 1;
	srv->msg = malloc(srv->msg_cap);
	srv->epfd = epoll_create1(EPOLL_CLOEXEC);
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGUSR1);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	srv->sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (!srv->msg || srv->epfd < 0 || srv->sigfd < 0) {
		fprintf(stderr, "rdmasec-server: cannot set up the event loop: %s\n", strerror(errno));
		return RSEC_E_IO;
	}
	struct epoll_event lev = { .events = EPOLLIN, .data.ptr = &srv->listener };
	struct epoll_event sev = { .events = EPOLLIN, .data.ptr = &srv->sigfd };
	if (epoll_ctl(srv->epfd, EPOLL_CTL_ADD, rsec_listener_fd(srv->listener), &lev) < 0 ||
	    epoll_ctl(srv->epfd, EPOLL_CTL_ADD, srv->sigfd, &sev) < 0) {
		fprintf(stderr, "rdmasec-server: epoll: %s\n", strerror(errno));
		return RSEC_E_IO;
	}
	srv->fd_base = (uint64_t)(fdlimit_count_open() > 0 ? fdlimit_count_open() : 0);
	uint64_t reserve = fdlimit_reserve(conf->qp_pool, rsec_ctx_device(srv->ctx) ? 0 : DEVICES_BY_ADDRESS);
	fdlimit_gate_init(&srv->fdgate, fd_soft, reserve);
	uint64_t room = fdlimit_capacity(fd_soft, srv->fd_base, reserve);
	if (room < conf->max_clients)
		log_event("warn", "fd_limit_low", "max_clients=%u fit=%llu fd_limit=%llu", conf->max_clients,
			  (unsigned long long)room, (unsigned long long)fd_soft);
	/* A metrics file that cannot be written is a set-up error, not a warning nobody reads. */
	char merr[512] = "";
	if (metrics_export_tick(&srv->metrics_file, srv->metrics, &srv->n, 0, monotonic_ms(), true, merr,
				sizeof(merr)) < 0) {
		fprintf(stderr, "rdmasec-server: metrics: %s\n", merr);
		return RSEC_E_IO;
	}
	return 0;
}

int server_run(const struct rsec_conf *conf, uint8_t *psk, size_t psk_len)
{
	struct server srv = { .conf = conf, .epfd = -1, .sigfd = -1 };
	int status = 1;
	if (server_setup(&srv, conf, psk, psk_len) < 0)
		goto out;
	log_event("info", "listening", "addr=%s port=%u device=%s max_clients=%u max_per_identity=%u mode=%s",
		  log_q(conf->listen_addr), conf->listen_port,
		  log_q(rsec_ctx_device(srv.ctx) ? rsec_ctx_device(srv.ctx) : "by-address"), conf->max_clients,
		  conf->max_per_identity, psk_len ? "psk" : "certificate");
	uint64_t last_tick = 0;
	while (!srv.stop) {
		struct epoll_event ev[64];
		int n = epoll_wait(srv.epfd, ev, 64, TICK_MS);
		if (n < 0 && errno != EINTR) {
			log_event("error", "epoll_failed", "reason=%s", log_q(strerror(errno)));
			break;
		}
		for (int i = 0; i < n; i++) {
			if (ev[i].data.ptr == &srv.listener)
				accept_all(&srv);
			else if (ev[i].data.ptr == &srv.sigfd)
				on_signal(&srv);
		}
		for (int i = 0; i < n; i++) {
			if (ev[i].data.ptr == &srv.listener || ev[i].data.ptr == &srv.sigfd)
				continue;
			struct session *s = ev[i].data.ptr;
			/* A session ended earlier in this batch is gone; only step live ones. */
			for (struct session *t = srv.sessions; t; t = t->next) {
				if (t == s) {
					(void)session_step(s);
					break;
				}
			}
		}
		uint64_t now = monotonic_ms();
		if (now - last_tick >= TICK_MS) {
			/* Deadlines, keepalives and grant expiry need time to pass, not events. */
			tick_all(&srv);
			last_tick = now;
		}
		(void)metrics_flush(&srv, false); /* at most once a second, and only after a change */
	}
	while (srv.sessions) {
		struct session *s = srv.sessions;
		(void)rsec_conn_close(s->conn, "server shutting down");
		session_end(s, RSEC_E_CLOSED);
	}
	check_audit(&srv);
	ratelog_flush(srv.rlog, monotonic_ms());
	srv.n.log_suppressed = ratelog_suppressed_total(srv.rlog);
	log_counters(&srv);
	(void)metrics_flush(&srv, true);
	status = 0;
out:
	ratelog_free(srv.rlog);
	admission_free(srv.adm);
	metrics_free(srv.metrics);
	rsec_listener_free(srv.listener);
	rsec_ctx_free(srv.ctx);
	free(srv.msg);
	if (srv.epfd >= 0)
		close(srv.epfd);
	if (srv.sigfd >= 0)
		close(srv.sigfd);
	return status;
}
