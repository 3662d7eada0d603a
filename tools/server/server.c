/* SPDX-License-Identifier: MIT */
/*
 * rdmasec-server's event loop: one thread, one epoll set holding a signalfd,
 * the acceptor's and the workers' eventfds and one fd per connection. No
 * thread per client and no fixed small cap. Unauthenticated connections
 * never reach this thread: the acceptor (acceptor.h) takes them, judges them
 * before any RDMA resource is spent and runs their TLS handshakes on worker
 * threads, so no flood on the listener delays the sessions served here; this
 * loop admits by identity, then serves. No session waits inside the loop: a
 * request that needs the peer (a VERIFY, credits, a TLS window) leaves its
 * session waiting while the others are served, and the heavy part of a large
 * request (hashing, MAC, sealing, registration) runs on workers too, in turns
 * per identity.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "acceptor.h"
#include "app_proto.h"
#include "clock.h"
#include "fdlimit.h"
#include "log.h"
#include "metrics.h"
#include "offload.h"
#include "ratelog.h"
#include "rdmasec.h"
#include "conf_live.h"
#include "server.h"
#include "trust_conf.h"

#define TICK_MS 250
#define DEVICES_BY_ADDRESS 8 /* without --device, librdmasec opens up to 8, one per local address */
/* A request over fewer bytes is served in the loop; a larger one's hashing, MAC, sealing or registration on a worker. */
#define INLINE_MAX (256u << 10)
/* Large requests of one identity queued or running at once; its others wait in the loop, not stepped. */
#define JOBS_PER_IDENTITY 4

/* The expensive part of a request, run by job_run (on a worker when large) and answered by job_finish. */
enum job_kind { JOB_NONE, JOB_WRITE_GRANT, JOB_VERIFY, JOB_READ_GRANT, JOB_READ_DONE };

struct request_job {
	enum job_kind kind;
	bool queued; /* handed to the workers; else it waits for a slot */
	bool sealed;
	uint32_t grant_ttl_ms; /* the configuration's when the job started: workers never read it (reloads) */
	int rc, region_rc;
	uint64_t off, len, grant_id;
	uint8_t sha256[APP_SHA256_LEN];
};

struct session {
	struct server *srv;
	struct rsec_conn *conn;
	uint64_t id;
	bool established;
	bool admitted;
	bool away;           /* a worker has it (offload.h): the loop neither watches nor steps it */
	bool held;           /* away without a job: in set-up while its identity has sessions on workers */
	bool recheck;        /* credentials were reloaded: check its peer against them when the loop has it */
	void (*back)(struct session *s); /* what the loop does when the worker hands it back */
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
	uint8_t data_sha256[APP_SHA256_LEN]; /* of its data_len bytes, taken when the write was verified */
	struct request_job job; /* a large request's, while away (or waiting for its identity's turn) */
	struct session *prev, *next;
};

struct server {
	const struct rsec_conf *conf; /* the loop's: live, a reload rewrites it (the acceptor has the start-up one) */
	struct rsec_conf *live;       /* what conf points at, owned */
	server_conf_reader reread;    /* SIGHUP: the configuration as it is now; NULL: none */
	void *reread_arg;
	bool psk_mode;                /* no credential files to reload */
	struct daemon_reload reload;  /* SIGHUP and the etcd watcher's copies (tools/daemon/reload.h) */
	bool reload_pending;          /* SIGHUP came: reload in the loop, not in a handler */
	struct rsec_ctx *ctx;
	struct rsec_listener *listener;
	int epfd, sigfd;
	struct session *sessions;
	size_t nsessions;
	struct session *current; /* the session rsec_conn_process is running for */
	uint8_t *msg;            /* one receive buffer, max_msg + opcode */
	size_t msg_cap;
	struct server_counters n;      /* this loop's; the acceptor's are in sh */
	struct acceptor_shared sh;     /* per-peer metrics (the stats reply, the metrics file), the acceptor's counts */
	struct metrics_export metrics_file;
	struct ratelog *rlog;          /* log lines about refused peers, rate limited */
	struct acceptor *acc;          /* the listener's thread: admission before TLS, handshakes */
	struct offload *work;          /* worker threads: the heavy part of large requests */
	struct trust_watch *trust;     /* --trust-etcd's watcher; NULL: none */
	bool stop;
};

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

static struct trust_rules conf_rules(const struct rsec_conf *conf)
{
	return (struct trust_rules){ conf->allow, conf->n_allow };
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
	} else if (rc == RSEC_E_DENIED) {
		srv->n.refused_authz++;
		per_peer->refused_handshakes = 1;
		event = "refused";
	} else if (rc == RSEC_E_LIMIT) {
		srv->n.refused_identity++;
		per_peer->refused_handshakes = 1;
		event = "refused";
	} else {
		srv->n.handshake_failed++;
	}
	/* Anyone can make these: counted always, logged at a bounded rate. The library knows a refused identity. */
	const char *peer = s->peer[0] ? s->peer : rsec_conn_peer(s->conn);
	if (s->admitted || ratelog_allow(srv->rlog, event, clock_mono_ms()))
		log_event("warn", event, "conn=%llu peer=%s addr=%s code=%s reason=%s qp_created=no",
			  (unsigned long long)s->id, log_q(peer[0] ? peer : "unauthenticated"),
			  log_q(rsec_conn_peer_addr(s->conn)), log_q(rsec_strerror(rc)), log_q(why));
}

/*
 * Ends s and frees it. The server is passed, not read from s->srv, so the
 * loops of callers that walk srv->sessions see the list change they read
 * next (clang's analyzer cannot know that s->srv is their srv).
 */
static void session_end(struct server *srv, struct session *s, int rc)
{
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
	pthread_mutex_lock(&srv->sh.lock);
	metrics_add(srv->sh.metrics, key, &per_peer);
	pthread_mutex_unlock(&srv->sh.lock);
	region_release(s);
	if (srv->sessions == s) /* the head has no prev: what the callers' loops read next */
		srv->sessions = s->next;
	else
		s->prev->next = s->next;
	if (s->next)
		s->next->prev = s->prev;
	srv->nsessions--;
	__atomic_sub_fetch(&srv->sh.sessions, 1, __ATOMIC_RELAXED);
	rsec_conn_free(s->conn); /* closes its fd, which leaves the epoll set */
	free(s);
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

/*
 * The buffer a write goes into: the session's own when it is large enough
 * (no wipe, no mapping, no registration per request), else a larger one in
 * its place. The grant before ends first: nobody reaches it but through the new one.
 */
static int region_ready(struct session *s, size_t room)
{
	if (s->grant_live)
		(void)rsec_revoke(s->conn, s->grant_id);
	s->grant_live = false;
	if (s->region && s->mem_len >= room)
		return 0;
	region_release(s);
	return region_alloc(s, room);
}

static int grant_write(struct session *s, size_t room)
{
	bool sealed = s->job.sealed;
	return rsec_grant(s->conn, s->region, 0, sealed ? room : s->want_len,
			  RSEC_ACCESS_WRITE | (sealed ? RSEC_GRANT_SEALED : 0), s->job.grant_ttl_ms, s->grant_tag,
			  &s->job.grant_id);
}

/* The buffer has room for the sealed form of what is written, so any write can be read back sealed. */
static void work_write_grant(struct session *s)
{
	struct request_job *j = &s->job;
	size_t room = rsec_sealed_len(s->want_len);
	j->region_rc = region_ready(s, room);
	if (j->region_rc == 0) {
		j->rc = grant_write(s, room);
		if (j->rc != RSEC_E_RANGE)
			return;
		/* A sealed READ grant whose bind is still in flight holds the old buffer: take another. */
		region_release(s);
		j->region_rc = region_alloc(s, room);
		if (j->region_rc == 0)
			j->rc = grant_write(s, room);
	}
	if (j->region_rc < 0)
		region_release(s);
}

/*
 * The library revokes the grant, then checks the client's MAC of what it
 * wrote, or opens what it sealed; the hash the client is told is taken
 * here, once, for this and every later read of the same bytes.
 */
static void work_verify(struct session *s)
{
	struct request_job *j = &s->job;
	j->rc = s->grant_sealed ? rsec_grant_open(s->conn, s->grant_id, &j->off, &j->len, 0)
				: rsec_grant_verify(s->conn, s->grant_id, &j->off, &j->len, 0);
	if (j->rc == 0 && j->off == 0 && j->len == s->want_len)
		app_sha256(s->mem, j->len, j->sha256);
}

/* A verified READ grant sends a MAC of the bytes; a sealed one seals them in place. */
static void work_read_grant(struct session *s)
{
	bool sealed = s->job.sealed;
	s->job.rc = rsec_grant(s->conn, s->region, 0, sealed ? rsec_sealed_len(s->data_len) : s->data_len,
			       RSEC_ACCESS_READ | (sealed ? RSEC_GRANT_SEALED : RSEC_GRANT_VERIFIED),
			       s->job.grant_ttl_ms, s->grant_tag, &s->job.grant_id);
}

/* A sealed grant turns back into plaintext, for the next read. */
static void work_read_done(struct session *s)
{
	uint64_t off, len;
	s->job.rc = s->grant_sealed ? rsec_grant_open(s->conn, s->grant_id, &off, &len, 0)
				    : rsec_revoke(s->conn, s->grant_id);
}

/* On a worker (or inline): touches only the session's connection, region and job. */
static void job_run(void *arg)
{
	struct session *s = arg;
	switch (s->job.kind) {
	case JOB_WRITE_GRANT: work_write_grant(s); break;
	case JOB_VERIFY: work_verify(s); break;
	case JOB_READ_GRANT: work_read_grant(s); break;
	case JOB_READ_DONE: work_read_done(s); break;
	default: break;
	}
}

static bool grant_matches(const struct session *s, const struct app_msg *m, uint8_t op)
{
	return s->grant_live && s->grant_op == op && m->tag == s->grant_tag;
}

static int finish_write_grant(struct session *s)
{
	if (s->job.region_rc < 0)
		return reply_error(s, "write: cannot prepare a buffer");
	if (s->job.rc < 0)
		return s->job.rc;
	s->grant_id = s->job.grant_id;
	s->grant_live = true;
	s->grant_op = APP_WRITE_REQ;
	s->grant_sealed = s->job.sealed;
	struct app_msg r = { .op = APP_WRITE_GRANTED, .tag = s->grant_tag };
	return reply(s, &r);
}

/* Until the client's VERIFY arrives (or verify_timeout_ms passes) the session waits; the server does not. */
static int finish_verify(struct session *s)
{
	int rc = s->job.rc;
	if (rc == RSEC_E_AGAIN) {
		if (clock_mono_ms() < s->verify_deadline_ms)
			return 0;
		rc = RSEC_E_TIMEOUT;
	}
	s->verify_pending = false;
	s->grant_live = rc == RSEC_E_TIMEOUT; /* without a claim the grant stays until its ttl */
	if (rc == RSEC_E_MAC || rc == RSEC_E_TIMEOUT || rc == RSEC_E_GRANT ||
	    (rc == 0 && (s->job.off || s->job.len != s->want_len))) {
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
	memcpy(s->data_sha256, s->job.sha256, APP_SHA256_LEN);
	s->srv->n.rdma_writes++;
	struct app_msg r = { .op = APP_WRITE_RESULT, .len = s->data_len };
	memcpy(r.sha256, s->data_sha256, APP_SHA256_LEN);
	return reply(s, &r);
}

static int finish_read_grant(struct session *s)
{
	if (s->job.rc < 0)
		return s->job.rc;
	s->grant_id = s->job.grant_id;
	s->grant_live = true;
	s->grant_op = APP_READ_REQ;
	s->grant_sealed = s->job.sealed;
	struct app_msg r = { .op = APP_READ_GRANTED, .tag = s->grant_tag, .len = s->data_len };
	memcpy(r.sha256, s->data_sha256, APP_SHA256_LEN);
	return reply(s, &r);
}

static int finish_read_done(struct session *s)
{
	s->grant_live = false;
	if (s->job.rc == RSEC_E_MAC) {
		s->data_len = 0;
		return reply_error(s, "read: the sealed buffer changed while granted; discarded");
	}
	if (s->job.rc == RSEC_E_GRANT) /* it went with a rebuilt data path, or expired: the client may ask again */
		return reply_error(s, "read: the grant is gone");
	if (s->job.rc < 0)
		return s->job.rc;
	s->srv->n.rdma_reads++;
	struct app_msg r = { .op = APP_READ_RESULT };
	return reply(s, &r);
}

/* In the loop: the job's result, told to the client. */
static int job_finish(struct session *s)
{
	enum job_kind kind = s->job.kind;
	s->job.kind = JOB_NONE;
	switch (kind) {
	case JOB_WRITE_GRANT: return finish_write_grant(s);
	case JOB_VERIFY: return finish_verify(s);
	case JOB_READ_GRANT: return finish_read_grant(s);
	case JOB_READ_DONE: return finish_read_done(s);
	default: return 0;
	}
}

static int session_send_away(struct session *s, const char *key, offload_fn run, void (*back)(struct session *));
static bool session_step(struct server *srv, struct session *s);
static int session_come_back(struct session *s);

static unsigned identity_jobs(const struct server *srv, const char *peer)
{
	unsigned n = 0;
	for (const struct session *t = srv->sessions; t; t = t->next)
		if (t->job.queued && strcmp(t->peer, peer) == 0)
			n++;
	return n;
}

/* A new connection of this identity waits (session_hold): its identity's jobs drain first. */
static bool identity_held(const struct server *srv, const char *peer)
{
	for (const struct session *t = srv->sessions; t; t = t->next)
		if (t->held && strcmp(rsec_conn_peer(t->conn), peer) == 0)
			return true;
	return false;
}

/* Back from a worker: the reply, then the next request (unless it waits for the VERIFY: its fd or the tick). */
static void job_back(struct session *s)
{
	s->job.queued = false;
	int rc = job_finish(s);
	if (rc < 0)
		session_end(s->srv, s, rc);
	else if (!s->verify_pending)
		(void)session_step(s->srv, s);
}

/*
 * To the workers under its identity, in turns with other identities; past
 * its identity's share (or a full queue) it waits away from the loop,
 * unwatched and not stepped, until jobs_retry_waiting lets it in.
 */
static void job_offload(struct session *s)
{
	struct server *srv = s->srv;
	if (identity_jobs(srv, s->peer) < JOBS_PER_IDENTITY && !identity_held(srv, s->peer) &&
	    session_send_away(s, s->peer, job_run, job_back) == 0) {
		s->job.queued = true;
		return;
	}
	(void)epoll_ctl(srv->epfd, EPOLL_CTL_DEL, rsec_conn_fd(s->conn), NULL);
	s->away = true;
	s->back = job_back;
}

/* Waiting sessions, in turn, as their identity's jobs come back. */
static void jobs_retry_waiting(struct server *srv)
{
	for (struct session *s = srv->sessions; s; s = s->next)
		if (s->away && s->job.kind != JOB_NONE && !s->job.queued &&
		    identity_jobs(srv, s->peer) < JOBS_PER_IDENTITY && !identity_held(srv, s->peer) &&
		    offload_submit(srv->work, s->peer, job_run, s) == 0)
			s->job.queued = true;
}

/* Small jobs run at once; a large one on a worker, the session away meanwhile (job_back answers). */
static int job_start(struct session *s, enum job_kind kind, size_t bytes)
{
	struct request_job *j = &s->job;
	j->kind = kind;
	j->grant_ttl_ms = s->srv->conf->grant_ttl_ms;
	j->rc = j->region_rc = 0;
	j->off = j->len = j->grant_id = 0;
	memset(j->sha256, 0, sizeof(j->sha256));
	if (bytes < INLINE_MAX) {
		job_run(s);
		return job_finish(s);
	}
	job_offload(s);
	return 0;
}

static int on_write_req(struct session *s, const struct app_msg *m, bool sealed)
{
	if (m->len == 0 || m->len > s->srv->conf->max_msg)
		return reply_error(s, "write: length out of range");
	s->data_len = 0; /* what was written before is gone with this request */
	s->want_len = m->len;
	s->grant_tag = ++s->next_tag;
	s->job.sealed = sealed;
	/* Costly only when the buffer grows (a fresh mapping, registered), or a sealed READ grant is opened. */
	size_t room = rsec_sealed_len(m->len), cost = room > s->mem_len ? room + s->mem_len : 0;
	if (s->grant_live && s->grant_sealed && s->grant_op == APP_READ_REQ)
		cost += s->mem_len;
	return job_start(s, JOB_WRITE_GRANT, cost);
}

static int resume_verify(struct session *s)
{
	return job_start(s, JOB_VERIFY, s->want_len);
}

static int on_write_done(struct session *s, const struct app_msg *m)
{
	if (!grant_matches(s, m, APP_WRITE_REQ))
		return reply_error(s, "no such grant");
	s->verify_pending = true;
	s->verify_deadline_ms = clock_mono_ms() + s->srv->conf->verify_timeout_ms;
	return resume_verify(s);
}

/* The hash the client is told is the one taken when the write was verified. */
static int on_read_req(struct session *s, bool sealed)
{
	if (!s->region || s->data_len == 0 || s->grant_live)
		return reply_error(s, "read: nothing written yet");
	s->grant_tag = ++s->next_tag;
	s->job.sealed = sealed;
	return job_start(s, JOB_READ_GRANT, s->data_len);
}

static int on_read_done(struct session *s, const struct app_msg *m)
{
	if (!grant_matches(s, m, APP_READ_REQ))
		return reply_error(s, "no such grant");
	return job_start(s, JOB_READ_DONE, s->grant_sealed ? s->data_len : 0);
}

/* The server's counters about this client's identity: its ended connections, plus this one. */
static int on_stats_req(struct session *s)
{
	struct peer_counters c;
	char key[METRICS_KEY_MAX];
	pthread_mutex_lock(&s->srv->sh.lock); /* the acceptor counts refusals in the same table */
	snprintf(key, sizeof(key), "%s", metrics_lookup(s->srv->sh.metrics, s->peer, &c));
	pthread_mutex_unlock(&s->srv->sh.lock);
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

/*
 * A new connection's set-up may carry a RESUME naming a session of its
 * identity, which the library would then take over from this thread: while
 * a job of that identity is on a worker, the newcomer waits, unwatched, and
 * the identity's further jobs wait for it (so it waits for at most
 * JOBS_PER_IDENTITY jobs, however busy the identity is).
 */
static bool session_hold(struct session *s)
{
	if (s->established || identity_jobs(s->srv, rsec_conn_peer(s->conn)) == 0)
		return false;
	if (epoll_ctl(s->srv->epfd, EPOLL_CTL_DEL, rsec_conn_fd(s->conn), NULL) < 0)
		return false; /* watched still: it is tried again on its next event */
	s->away = s->held = true;
	return true;
}

static void release_held(struct server *srv)
{
	struct session *s = srv->sessions;
	while (s) {
		struct session *next = s->next; /* s may end */
		if (s->held && identity_jobs(srv, rsec_conn_peer(s->conn)) == 0) {
			s->held = false;
			if (session_come_back(s) < 0)
				session_end(srv, s, RSEC_E_IO);
			else
				(void)session_step(srv, s);
		}
		s = next;
	}
}

/* Everything one connection can do now; false once it has ended. */
static bool session_step(struct server *srv, struct session *s)
{
	if (s->away || session_hold(s))
		return true; /* a worker has it, or one of its identity's */
	srv->current = s;
	int rc = rsec_conn_process(s->conn);
	srv->current = NULL;
	if (rc == RSEC_E_AGAIN)
		return true;
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
		session_end(srv, s, rc);
		return false;
	}
	/* One request at a time: the next waits in the library until this one is answered. */
	while (!s->verify_pending && !s->away && rsec_send_queued(s->conn) == 0) {
		size_t len;
		rc = rsec_recv(s->conn, srv->msg, srv->msg_cap, &len, 0);
		if (rc == RSEC_E_AGAIN)
			return true;
		if (rc == 0)
			rc = on_message(s, srv->msg, len);
		if (rc < 0) {
			session_end(srv, s, rc);
			return false;
		}
	}
	return true;
}

/* An authenticated connection from the acceptor: set-up goes on here, admission by identity first. */
static void intake(struct server *srv)
{
	struct rsec_conn *conn;
	uint64_t id;
	while (acceptor_take(srv->acc, &conn, &id) == 0) {
		struct session *s = calloc(1, sizeof(*s));
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = s };
		if (!s || epoll_ctl(srv->epfd, EPOLL_CTL_ADD, rsec_conn_fd(conn), &ev) < 0) {
			log_event("warn", "accept_failed", "reason=%s", log_q(s ? strerror(errno) : "out of memory"));
			free(s);
			(void)rsec_conn_close(conn, "server: out of resources");
			rsec_conn_free(conn);
			__atomic_sub_fetch(&srv->sh.sessions, 1, __ATOMIC_RELAXED);
			continue;
		}
		s->srv = srv;
		s->conn = conn;
		s->id = id;
		s->next = srv->sessions;
		if (s->next)
			s->next->prev = s;
		srv->sessions = s;
		srv->nsessions++;
		(void)session_step(srv, s);
	}
}

/*
 * A worker has the session (offload.h): the loop stops watching its fd, which
 * would otherwise wake it for nothing, and steps it only once it is back.
 */
static int session_send_away(struct session *s, const char *key, offload_fn run, void (*back)(struct session *))
{
	struct server *srv = s->srv;
	if (epoll_ctl(srv->epfd, EPOLL_CTL_DEL, rsec_conn_fd(s->conn), NULL) < 0)
		return -errno;
	s->away = true;
	s->back = back;
	int rc = offload_submit(srv->work, key, run, s);
	if (rc < 0) {
		s->away = false;
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = s };
		if (epoll_ctl(srv->epfd, EPOLL_CTL_ADD, rsec_conn_fd(s->conn), &ev) < 0)
			return -errno;
	}
	return rc;
}

static int session_come_back(struct session *s)
{
	s->away = false;
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = s };
	return epoll_ctl(s->srv->epfd, EPOLL_CTL_ADD, rsec_conn_fd(s->conn), &ev) < 0 ? -errno : 0;
}

/* What the workers handed back: watched again, then whatever the job was for. */
static void jobs_back(struct server *srv)
{
	struct session *s;
	while ((s = offload_take_done(srv->work))) {
		int rc = session_come_back(s);
		if (rc < 0) {
			log_event("warn", "epoll_failed", "conn=%llu reason=%s", (unsigned long long)s->id,
				  log_q(strerror(-rc)));
			session_end(srv, s, RSEC_E_IO);
			continue;
		}
		s->back(s);
	}
	release_held(srv); /* first: while one is held, its identity's waiting jobs stay waiting */
	jobs_retry_waiting(srv); /* their identities' shares may have room again */
}

_Static_assert(sizeof(struct server_counters) % sizeof(uint64_t) == 0, "server_counters: uint64_t fields only");

/* This loop's counters and the acceptor's, added up. */
static void counters_total(struct server *srv, struct server_counters *out)
{
	pthread_mutex_lock(&srv->sh.lock);
	struct server_counters a = srv->sh.n;
	a.log_suppressed = srv->sh.log_suppressed;
	pthread_mutex_unlock(&srv->sh.lock);
	const uint64_t *x = (const uint64_t *)&srv->n, *y = (const uint64_t *)&a;
	uint64_t *o = (uint64_t *)out;
	for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
		o[i] = x[i] + y[i];
}

static size_t clients_now(const struct server *srv)
{
	return srv->nsessions + (srv->acc ? acceptor_handshaking(srv->acc) : 0);
}

static void log_counters(struct server *srv)
{
	struct server_counters total;
	counters_total(srv, &total);
	const struct server_counters *n = &total;
	log_event("info", "counters",
		  "clients=%zu accepted=%llu established=%llu qps_created=%llu refused_capacity=%llu "
		  "refused_source_concurrent=%llu refused_source_rate=%llu refused_source_table=%llu "
		  "refused_max_handshakes=%llu refused_handshake_rate=%llu handshakes_evicted=%llu "
		  "accept_paused=%llu log_suppressed=%llu "
		  "refused_auth=%llu refused_identity=%llu handshake_failed=%llu closed=%llu messages=%llu "
		  "rdma_writes=%llu rdma_reads=%llu mac_failures=%llu seq_violations=%llu qp_errors=%llu "
		  "protocol_violations=%llu malformed=%llu rebuilds=%llu resumes=%llu "
		  "audit_errors=%llu refused_authz=%llu",
		  clients_now(srv), (unsigned long long)n->accepted, (unsigned long long)n->established,
		  (unsigned long long)n->established, (unsigned long long)n->refused_capacity,
		  (unsigned long long)n->refused_source_concurrent, (unsigned long long)n->refused_source_rate,
		  (unsigned long long)n->refused_source_table, (unsigned long long)n->refused_handshakes,
		  (unsigned long long)n->refused_handshake_rate, (unsigned long long)n->handshakes_evicted,
		  (unsigned long long)n->accept_paused,
		  (unsigned long long)n->log_suppressed,
		  (unsigned long long)n->refused_auth, (unsigned long long)n->refused_identity,
		  (unsigned long long)n->handshake_failed, (unsigned long long)n->closed,
		  (unsigned long long)n->messages, (unsigned long long)n->rdma_writes,
		  (unsigned long long)n->rdma_reads, (unsigned long long)n->mac_failures,
		  (unsigned long long)n->seq_violations, (unsigned long long)n->qp_errors,
		  (unsigned long long)n->protocol_violations, (unsigned long long)n->malformed,
		  (unsigned long long)n->rebuilds, (unsigned long long)n->resumes,
		  (unsigned long long)n->audit_errors, (unsigned long long)n->refused_authz);
}

/* Rewrites the metrics file (if any) when due, or now; logs when writing starts failing and recovers. */
static int metrics_flush(struct server *srv, bool force)
{
	char err[512] = "";
	bool was_failing = srv->metrics_file.failing;
	struct server_counters total;
	counters_total(srv, &total);
	pthread_mutex_lock(&srv->sh.lock);
	int rc = metrics_export_tick(&srv->metrics_file, srv->sh.metrics, &total, clients_now(srv), clock_mono_ms(),
				     force, err, sizeof(err));
	pthread_mutex_unlock(&srv->sh.lock);
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
		if (si.ssi_signo == SIGHUP) {
			srv->reload_pending = true;
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

/* A peer revoked, expired or no longer allowed under the trust now in force is closed (the library audits it). */
static void recheck_peer(struct session *s)
{
	char why[128];
	s->recheck = false;
	if (rsec_conn_check_peer(s->conn, why, sizeof(why)) != RSEC_E_AUTH)
		return;
	s->srv->n.closed_revoked++;
	log_event("warn", "peer_revoked", "conn=%llu peer=%s reason=%s", (unsigned long long)s->id, log_q(s->peer),
		  log_q(why));
	(void)rsec_conn_close(s->conn, why);
	session_end(s->srv, s, RSEC_E_AUTH);
}

/* Sessions a reload marked; one on a worker is checked when it is back (the next tick). */
static void recheck_marked(struct server *srv)
{
	struct session *s = srv->sessions;
	while (s) {
		struct session *next = s->next; /* s may end */
		if (s->recheck && !s->away)
			recheck_peer(s);
		s = next;
	}
}

/* The service's side of a reload (tools/daemon/reload.h). */
static void *reload_reread(void *svc, char *err, size_t errlen)
{
	struct server *srv = svc;
	struct rsec_conf *fresh = malloc(sizeof(*fresh));
	if (!fresh) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (!srv->reread)
		*fresh = *srv->live;
	else if (srv->reread(srv->reread_arg, fresh, err, errlen) < 0) {
		free(fresh);
		return NULL;
	}
	return fresh;
}

static struct trust_rules reload_rules(void *svc, const void *conf)
{
	const struct server *srv = svc;
	return conf_rules(conf ? conf : srv->live);
}

/* Keys that need a restart keep their values (conf_live.h). */
static void reload_apply(void *svc, void *fresh, char *pinned, size_t cap)
{
	struct server *srv = svc;
	if (!conf_pin_fixed(fresh, srv->live, pinned, cap))
		pinned[0] = '\0';
	*srv->live = *(struct rsec_conf *)fresh;
	free(fresh);
}

static void reload_recheck(void *svc)
{
	struct server *srv = svc;
	for (struct session *s = srv->sessions; s; s = s->next)
		s->recheck = true;
	recheck_marked(srv);
}

static size_t reload_sessions(void *svc)
{
	return ((struct server *)svc)->nsessions;
}

static const struct daemon_reload_ops reload_ops = {
	.reread = reload_reread, .rules = reload_rules, .apply = reload_apply, .recheck = reload_recheck,
	.sessions = reload_sessions,
};

static void tick_all(struct server *srv)
{
	check_audit(srv);
	daemon_reload_cert_expiry(&srv->reload);
	uint64_t now = clock_mono_ms();
	ratelog_tick(srv->rlog, now);
	srv->n.log_suppressed = ratelog_suppressed_total(srv->rlog);
	struct session *s = srv->sessions;
	while (s) {
		struct session *next = s->next; /* s may end */
		(void)session_step(srv, s);
		s = next;
	}
	release_held(srv);
	jobs_retry_waiting(srv);
	recheck_marked(srv);
}

/* The library's context as the configuration asks for it. */
static struct rsec_ctx_attr ctx_attr(struct server *srv, const struct rsec_conf *conf, uint8_t *psk, size_t psk_len)
{
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
	attr.comp_mask |= RSEC_CTX_ATTR_REKEY;
	attr.rekey_s = conf->rekey_s;
	attr.rekey_bytes = conf->rekey_bytes;
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
		if (conf->crl[0]) {
			attr.comp_mask |= RSEC_CTX_ATTR_CRL;
			attr.crl_file = conf->crl;
		}
	}
	return attr;
}

/* The context, its allow rules and the listener. */
static int open_context(struct server *srv, const struct rsec_conf *conf, uint8_t *psk, size_t psk_len)
{
	char err[256] = "";
	struct rsec_ctx_attr attr = ctx_attr(srv, conf, psk, psk_len);
	int rc = rsec_ctx_new(&attr, &srv->ctx, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "rdmasec-server: %s (%s)\n", err[0] ? err : "cannot set up", rsec_strerror(rc));
		return rc;
	}
	rc = trust_conf_set_allow(srv->ctx, conf_rules(conf), err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "rdmasec-server: %s (%s)\n", err, rsec_strerror(rc));
		return rc;
	}
	if (conf->n_allow)
		log_event("info", "authz", "allow_rules=%u", conf->n_allow);
	rc = rsec_listen(srv->ctx, conf->listen_addr, conf->listen_port, 1024, &srv->listener);
	if (rc < 0)
		fprintf(stderr, "rdmasec-server: cannot listen on %s:%u: %s\n", conf->listen_addr, conf->listen_port,
			rsec_strerror(rc));
	return rc;
}

/* The loop's receive buffer and its epoll set: signals (mask), the workers' results, the etcd watcher. */
static int open_events(struct server *srv, const struct rsec_conf *conf, const sigset_t *mask)
{
	srv->msg_cap = (size_t)conf->max_msg + 1;
	srv->msg = malloc(srv->msg_cap);
	srv->epfd = epoll_create1(EPOLL_CLOEXEC);
	srv->sigfd = signalfd(-1, mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (!srv->msg || srv->epfd < 0 || srv->sigfd < 0) {
		fprintf(stderr, "rdmasec-server: cannot set up the event loop: %s\n", strerror(errno));
		return RSEC_E_IO;
	}
	struct epoll_event sev = { .events = EPOLLIN, .data.ptr = &srv->sigfd };
	struct epoll_event wev = { .events = EPOLLIN, .data.ptr = &srv->work };
	struct epoll_event tev = { .events = EPOLLIN, .data.ptr = &srv->trust };
	if (epoll_ctl(srv->epfd, EPOLL_CTL_ADD, srv->sigfd, &sev) < 0 ||
	    epoll_ctl(srv->epfd, EPOLL_CTL_ADD, offload_fd(srv->work), &wev) < 0 ||
	    (srv->trust && epoll_ctl(srv->epfd, EPOLL_CTL_ADD, trust_watch_fd(srv->trust), &tev) < 0)) {
		fprintf(stderr, "rdmasec-server: epoll: %s\n", strerror(errno));
		return RSEC_E_IO;
	}
	return 0;
}

/* The metrics file's first write (a file that cannot be written is a set-up error), then the acceptor thread. */
static int start_acceptor(struct server *srv, const struct rsec_conf *conf, uint64_t fd_soft)
{
	char err[256] = "";
	struct acceptor_fds fds = { .soft = fd_soft };
	fds.base = (uint64_t)(fdlimit_count_open() > 0 ? fdlimit_count_open() : 0) + 2; /* + the acceptor's */
	fds.reserve = fdlimit_reserve(conf->qp_pool, rsec_ctx_device(srv->ctx) ? 0 : DEVICES_BY_ADDRESS);
	uint64_t room = fdlimit_capacity(fd_soft, fds.base, fds.reserve);
	if (room < conf->max_clients)
		log_event("warn", "fd_limit_low", "max_clients=%u fit=%llu fd_limit=%llu", conf->max_clients,
			  (unsigned long long)room, (unsigned long long)fd_soft);
	char merr[512] = "";
	if (metrics_export_tick(&srv->metrics_file, srv->sh.metrics, &srv->n, 0, clock_mono_ms(), true, merr,
				sizeof(merr)) < 0) {
		fprintf(stderr, "rdmasec-server: metrics: %s\n", merr);
		return RSEC_E_IO;
	}
	srv->acc = acceptor_start(conf, srv->listener, &srv->sh, &fds, err, sizeof(err));
	struct epoll_event aev = { .events = EPOLLIN, .data.ptr = &srv->acc };
	if (!srv->acc || epoll_ctl(srv->epfd, EPOLL_CTL_ADD, acceptor_fd(srv->acc), &aev) < 0) {
		fprintf(stderr, "rdmasec-server: %s\n", srv->acc ? strerror(errno) : err);
		return RSEC_E_IO;
	}
	return 0;
}

static int server_setup(struct server *srv, const struct rsec_conf *conf, uint8_t *psk, size_t psk_len)
{
	/* Blocked before any thread exists, so that only the signalfd ever sees them. */
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGUSR1);
	sigaddset(&mask, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	uint64_t fd_soft, fd_hard;
	(void)fdlimit_raise(&fd_soft, &fd_hard); /* logs both limits, and a failure to raise */
	srv->rlog = ratelog_new(RATELOG_DEFAULT_LINES, NULL, NULL);
	srv->sh.metrics = metrics_new(METRICS_MAX_PEERS);
	/* One job per session at most: the queue never refuses one. */
	srv->work = offload_new(conf->worker_threads, (size_t)conf->max_clients + 1);
	if (!srv->sh.metrics || !srv->rlog || !srv->work) {
		fprintf(stderr, "rdmasec-server: out of memory\n");
		return RSEC_E_NOMEM;
	}
	srv->metrics_file.path = conf->metrics_file;
	int rc = open_context(srv, conf, psk, psk_len);
	if (rc == 0)
		rc = open_events(srv, conf, &mask);
	return rc < 0 ? rc : start_acceptor(srv, conf, fd_soft);
}

/* One turn of the loop: the events epoll has, the tick when it is due, a reload when one is pending. */
static void serve_turn(struct server *srv, uint64_t *last_tick)
{
	struct epoll_event ev[64];
	int n = epoll_wait(srv->epfd, ev, 64, TICK_MS);
	if (n < 0 && errno != EINTR) {
		log_event("error", "epoll_failed", "reason=%s", log_q(strerror(errno)));
		srv->stop = true;
		return;
	}
	for (int i = 0; i < n; i++) {
		if (ev[i].data.ptr == &srv->acc)
			intake(srv);
		else if (ev[i].data.ptr == &srv->sigfd)
			on_signal(srv);
		else if (ev[i].data.ptr == &srv->work)
			jobs_back(srv);
		else if (ev[i].data.ptr == &srv->trust)
			daemon_reload_trust(&srv->reload, srv->trust);
	}
	for (int i = 0; i < n; i++) {
		if (ev[i].data.ptr == &srv->acc || ev[i].data.ptr == &srv->sigfd || ev[i].data.ptr == &srv->work ||
		    ev[i].data.ptr == &srv->trust)
			continue;
		struct session *s = ev[i].data.ptr;
		/* A session ended earlier in this batch is gone; only step live ones. */
		for (struct session *t = srv->sessions; t; t = t->next) {
			if (t == s) {
				if (!s->away) /* its fd left the set after this batch was read */
					(void)session_step(srv, s);
				break;
			}
		}
	}
	uint64_t now = clock_mono_ms();
	if (now - *last_tick >= TICK_MS) {
		/* Deadlines, keepalives and grant expiry need time to pass, not events. */
		tick_all(srv);
		*last_tick = now;
	}
	if (srv->reload_pending)
		daemon_reload_run(&srv->reload);
	(void)metrics_flush(srv, false); /* at most once a second, and only after a change */
}

/* The end: no new connection, the workers' sessions back, every session closed, the last counters out. */
static void server_shutdown(struct server *srv)
{
	/* The workers' sessions come back, queued ones unrun. */
	acceptor_stop(srv->acc);
	srv->acc = NULL;
	offload_stop(srv->work);
	for (struct session *s; (s = offload_take_done(srv->work));)
		s->away = false;
	while (srv->sessions) {
		struct session *s = srv->sessions;
		(void)rsec_conn_close(s->conn, "server shutting down");
		session_end(srv, s, RSEC_E_CLOSED);
	}
	check_audit(srv);
	ratelog_flush(srv->rlog, clock_mono_ms());
	srv->n.log_suppressed = ratelog_suppressed_total(srv->rlog);
	log_counters(srv);
	(void)metrics_flush(srv, true);
}

int server_run(const struct rsec_conf *conf, uint8_t *psk, size_t psk_len, server_conf_reader reread, void *arg,
	       struct trust_watch *trust)
{
	struct server srv = { .epfd = -1, .sigfd = -1, .sh.lock = PTHREAD_MUTEX_INITIALIZER, .reread = reread,
			      .reread_arg = arg, .psk_mode = psk_len > 0, .trust = trust };
	int status = 1;
	srv.live = malloc(sizeof(*srv.live));
	if (!srv.live) {
		fprintf(stderr, "rdmasec-server: out of memory\n");
		return 1;
	}
	*srv.live = *conf;
	srv.conf = srv.live;
	if (server_setup(&srv, conf, psk, psk_len) < 0)
		goto out;
	srv.reload = (struct daemon_reload){ .ops = &reload_ops, .svc = &srv, .ctx = srv.ctx,
					     .certificates = !srv.psk_mode, .n = &srv.n.reload, .pending = &srv.reload_pending };
	daemon_reload_cert_expiry(&srv.reload);
	log_event("info", "listening", "addr=%s port=%u device=%s max_clients=%u max_per_identity=%u mode=%s",
		  log_q(conf->listen_addr), conf->listen_port,
		  log_q(rsec_ctx_device(srv.ctx) ? rsec_ctx_device(srv.ctx) : "by-address"), conf->max_clients,
		  conf->max_per_identity, psk_len ? "psk" : "certificate");
	uint64_t last_tick = 0;
	while (!srv.stop)
		serve_turn(&srv, &last_tick);
	server_shutdown(&srv);
	status = 0;
out:
	acceptor_stop(srv.acc);
	offload_free(srv.work);
	ratelog_free(srv.rlog);
	metrics_free(srv.sh.metrics);
	pthread_mutex_destroy(&srv.sh.lock);
	rsec_listener_free(srv.listener);
	rsec_ctx_free(srv.ctx);
	free(srv.live);
	free(srv.msg);
	if (srv.epfd >= 0)
		close(srv.epfd);
	if (srv.sigfd >= 0)
		close(srv.sigfd);
	return status;
}
