/* SPDX-License-Identifier: MIT */
/*
 * rdmasec-blkd's event loop (docs/blk.md). One thread drives every session
 * and every queue pair of it, as librdmasec asks (a session's queue pairs
 * share its control channel; resume wants one thread per context). Nothing
 * waits: messages are taken with rsec_recv(0), grants with rsec_grant_wait(0)
 * retried until their deadline, one-sided transfers posted with rsec_post and
 * reaped with rsec_poll(0), completions sent with rsec_send(0) and retried
 * while the previous one waits for credits. Work per turn is bounded per
 * queue pair, so no client can keep the loop on itself.
 *
 * A command's life: FREE -> (GRANT -> [STORE] -> SEAL -> POST -> INFLIGHT)
 * -> [STORE] -> CPL -> FREE; in-capsule writes and FLUSH go straight to STORE.
 * STORE is the backing store's I/O, done by a few worker threads (the
 * offload pool of rdmasec-server, fair per session and bounded) and handed
 * back through an eventfd in the loop's epoll set: a slow or hung store stalls
 * the commands waiting for it, never the loop. Each queue pair has one
 * registered buffer slot per command id below its queue depth, large enough
 * for a sealed max_transfer; a session with store I/O in flight keeps its slots
 * (and its connection) until that I/O is back, even once it is closing.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "admission.h"
#include "blkd_audit.h"
#include "blk_data.h"
#include "blk_wire.h"
#include "busy_poll.h"
#include "clock.h"
#include "blkd_conf_live.h"
#include "metrics.h"
#include "offload.h"
#include "rdmasec.h"
#include "share.h"
#include "store.h"
#include "target.h"

#define TICK_MS 250
#define MSGS_PER_TURN 32     /* messages taken from one queue pair per turn */
#define ACCEPTS_PER_TURN 16
#define WCS_PER_POLL 32
/* The user_id of a READ's data WRITE (cmd_post): no command waits for it; only its failure is reported. */
#define CHAINED_WRITE_ID UINT64_MAX
#define REFUSAL_LINGER_MS 1000 /* after a refused OPEN, time for the reply to land before we close */
#define METRICS_INTERVAL_MS 1000
#define PAGE 4096u
#define STORE_JOBS_MAX 1024 /* store I/O queued or running, all sessions: beyond, commands wait their turn */
#define STORE_JOBS_PER_IDENTITY (STORE_JOBS_MAX / 4) /* ... of one identity's sessions */
/* Data and message bytes the loop seals or opens for one identity in a turn, the command that passes it
 * included: what another identity's command may wait for per turn (docs/blk.md, "Shares"). */
#define TURN_BYTES_PER_IDENTITY (32u << 10)
#define WAIT_BACKOFF_MAX_MS 64 /* the longest a turn sleeps while commands wait on the library, with no event */

/* STORE_WAIT: its store I/O waits for room in the pool; STORE: the pool has it. SEAL: a READ's data is in
 * its slot, to be sealed; OPEN: a pulled WRITE's, to be opened; either in its identity's line while the
 * identity's bytes for the turn are spent (docs/blk.md, "Shares"). DONE: completed and audited, its
 * completion sent at the turn's end (send_completions); CPL: that completion waits for credits. */
enum cmd_state {
	CMD_FREE, CMD_GRANT, CMD_STORE_WAIT, CMD_STORE, CMD_SEAL, CMD_POST, CMD_INFLIGHT, CMD_OPEN, CMD_DONE, CMD_CPL
};

struct queue;

struct cmd {
	enum cmd_state state;
	struct queue *q;     /* its queue (each slot has one), for the worker and for its identity's line */
	uint16_t io_status;  /* the store I/O's result, set by the worker */
	struct blk_cmd m; /* m.data is never kept: it pointed into the receive buffer */
	uint8_t mac[BLK_MAC_LEN]; /* an OK READ's data tag, for its completion */
	uint64_t key_id;          /* ... and the key id it was sealed under */
	uint64_t deadline_ms;
	uint8_t cpl[BLK_CPL_LEN];
	struct cmd *line_next; /* in its identity's line (struct share) */
	struct cmd *cpl_next;  /* DONE: on the target's list of the turn's completions */
};

struct export {
	const struct blkd_export_conf *conf;
	struct store store;
	struct export_counters n;
};

struct session;

/* One of the client's pool windows as this queue holds it: the grant of each direction, once it came
 * (version 3: the one pool grant, window 0, serves both). */
struct pool_window {
	uint16_t window;
	bool have[2];
	struct rsec_remote_grant g[2]; /* by enum blk_pool_dir */
};

struct queue {
	struct session *s;
	struct rsec_conn *conn;
	unsigned index;
	struct rsec_region *region;
	/* By window number's parity: the window new commands name and the one before, which the client
	 * revokes only once none of its commands is in flight (docs/blk.md, "Pool windows"). */
	struct pool_window win[2];
	struct blk_data_keys *keys;    /* the queue's data keys by key id (blk_data.h) */
	uint64_t last_seq;             /* commands' sequence numbers only grow: no nonce twice */
	uint8_t *mem;
	size_t mem_len;
	bool watched;
	bool corked;   /* what it posts this turn waits for the turn's end: one doorbell (rsec_conn_cork) */
	bool more;     /* stopped at the per-turn cap with messages left */
	bool deferred; /* its messages wait for its identity's bytes of the next turn */
	unsigned busy;        /* commands not FREE */
	unsigned grant_waits; /* commands in GRANT: woken by the control channel, or timed out by the sweep */
	unsigned cpl_waits;   /* commands in CPL: their completion waits for the client's credits */
	unsigned store_waits; /* commands in STORE: woken by the pool's eventfd */
	struct cmd cmds[BLK_QD_MAX];
};

struct session {
	struct target *t;
	uint64_t id;
	struct export *x;
	char peer[256], addr[64];
	bool established, opened, read_only, write_asked;
	bool handshaking;       /* admitted before TLS: counted in n_handshaking and the admission table */
	bool counted;           /* authenticated: counted in n_sessions (max_sessions) */
	bool dead;              /* to be freed at the end of the turn */
	bool kick;              /* its fd fired: step it this turn */
	uint64_t deadline_ms;   /* before OPEN: its deadline; after a refusal: when to close */
	bool refused;
	unsigned jobs;          /* store I/O in the pool: the slots stay until it is back */
	char why[240];          /* why it closes, for the client once the store I/O is back */
	struct share *share;    /* its identity's, from authentication on (counted in it) */
	struct blk_limits lim;
	size_t slot_len;
	uint64_t mem_reserved;  /* its share of memory_limit, taken whole at OPEN */
	unsigned queues_granted, nq;
	struct queue *q[BLK_QUEUES_MAX];
	struct session *prev, *next;
};

struct target {
	const struct blkd_conf *conf; /* live: a reload rewrites it in place (exports point into it) */
	struct blkd_conf *live;       /* the same, writable */
	blkd_conf_reader reread;      /* SIGHUP: the configuration as it is now */
	void *reread_arg;
	bool reload_pending;          /* SIGHUP came: reload in the loop, not in a handler */
	struct daemon_reload reload;  /* SIGHUP and the etcd watcher's copies (tools/daemon/reload.h) */
	struct rsec_ctx *ctx;
	struct rsec_listener *listener;
	int epfd, sigfd;
	char listener_tag, signal_tag, pool_tag, trust_tag; /* their addresses mark their epoll events */
	struct trust_watch *trust; /* --trust-etcd's watcher; NULL: none */
	struct offload *pool; /* store I/O */
	struct export *exports;
	unsigned n_exports;
	struct session *sessions;
	unsigned n_sessions;    /* authenticated: max_sessions */
	unsigned n_handshaking; /* before TLS: max_handshakes */
	struct admission *admission; /* before TLS, per source: max_handshakes_per_source and its rate */
	uint64_t next_session;
	uint64_t mem_reserved; /* command buffers of every open session, reserved at OPEN: <= memory_limit */
	struct share *shares;  /* one per identity with a session */
	uint64_t turn;         /* loop turns, ever: what the shares' per-turn bytes count in */
	struct target_counters n;
	bool metrics_dirty;
	uint64_t metrics_last_ms;
	uint64_t last_sweep_ms; /* every session is stepped once per TICK_MS: deadlines */
	unsigned quiet_turns;   /* turns in a row with no event and no command moving: how long the next may sleep */
	uint64_t moves;         /* command state changes, ever: a turn that changed none was quiet */
	struct busy_poll bp;    /* how long a turn polls its sessions' completions before it sleeps */
	struct cmd *cpl_head, *cpl_tail; /* completions of this turn, sent after its audit records are written */
	unsigned corked;                 /* queues corked this turn */
	bool stop;
	uint8_t *msg; /* one receive buffer */
	size_t msg_cap;
};

static struct audit_who who(const struct session *s)
{
	return (struct audit_who){ s->id, s->established ? s->peer : NULL, s->addr,
				   s->x ? s->x->conf->name : NULL };
}

/* ---- session teardown ---- */

/* A closing session's commands leave their identity's line. */
static void line_drop_session(struct session *s)
{
	struct share *sh = s->share;
	if (!sh)
		return;
	struct cmd **pp = &sh->line_head;
	sh->line_tail = NULL;
	while (*pp) {
		struct cmd *c = *pp;
		if (c->q->s == s) {
			*pp = c->line_next;
		} else {
			sh->line_tail = c;
			pp = &c->line_next;
		}
	}
}

/* The command slots go (after the operations in flight over them, which closing ends). */
static void queue_free_slots(struct queue *q)
{
	if (!q->region)
		return;
	rsec_region_free(q->region);
	q->region = NULL;
	q->mem = NULL;
	q->mem_len = 0;
}

static void queue_free(struct target *t, struct queue *q)
{
	/* Its fd stays open until rsec_conn_free: this cannot hit another connection's. */
	if (q->watched && epoll_ctl(t->epfd, EPOLL_CTL_DEL, rsec_conn_fd(q->conn), NULL) != 0)
		blkd_log("warn", "epoll", "session=%llu queue=%u error=%s", (unsigned long long)q->s->id, q->index,
			 log_q(strerror(errno)));
	queue_free_slots(q);
	rsec_conn_free(q->conn);
	blk_data_keys_free(q->keys);
	free(q);
}

static void set_state(struct queue *q, struct cmd *c, enum cmd_state to);

/* The slots go and the connection closes: once no store I/O uses the slots any more. */
static void session_release(struct session *s)
{
	/* Regions first: closing tears the protection domains down, which a live registration would keep. */
	for (unsigned i = 0; i < s->nq; i++)
		queue_free_slots(s->q[i]);
	if (rsec_conn_state(s->q[0]->conn) != RSEC_CONN_CLOSED)
		(void)rsec_conn_close(s->q[0]->conn, s->why); /* it may fail only for a connection gone already */
}

/* Store I/O not started yet is taken back; what runs, runs to its end. */
static void session_cancel_jobs(struct session *s)
{
	for (unsigned i = 0; i < s->nq; i++) {
		struct queue *q = s->q[i];
		for (unsigned cid = 0; cid < BLK_QD_MAX && q->store_waits; cid++) {
			struct cmd *c = &q->cmds[cid];
			if (c->state == CMD_STORE && offload_cancel(s->t->pool, s->share->identity, c)) {
				set_state(q, c, CMD_FREE);
				s->jobs--;
				s->share->store_jobs--;
			}
		}
	}
}

/* Close the session (all its queue pairs) with reason; it is freed once its store I/O is back. */
static void session_close(struct session *s, const char *reason)
{
	if (s->dead)
		return;
	s->dead = true;
	snprintf(s->why, sizeof(s->why), "%s", reason);
	if (s->established) {
		struct audit_who w = who(s);
		audit_session_end(&w, reason);
	}
	blkd_log("info", "close", "session=%llu peer=%s reason=%s store_io_running=%u",
		 (unsigned long long)s->id, log_q(s->established ? s->peer : ""), log_q(reason), s->jobs);
	session_cancel_jobs(s);
	line_drop_session(s);
	if (!s->jobs)
		session_release(s);
	if (s->opened) {
		s->x->n.sessions_open--;
		s->t->metrics_dirty = true;
	}
}

/* A protocol violation: the session ends, nothing else does. */
static void violation(struct session *s, unsigned queue, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void violation(struct session *s, unsigned queue, const char *fmt, ...)
{
	char reason[200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	struct audit_who w = who(s);
	audit_violation(&w, queue, reason);
	s->t->n.violations++;
	s->t->metrics_dirty = true;
	char why[240];
	snprintf(why, sizeof(why), "protocol violation: %s", reason);
	session_close(s, why);
}

/* Its share of memory_limit goes back: its slots are gone, or never came. */
static void session_unreserve(struct session *s)
{
	s->t->mem_reserved -= s->mem_reserved;
	if (s->share)
		s->share->mem_reserved -= s->mem_reserved;
	s->mem_reserved = 0;
}

/* Its TLS handshake ended (authenticated, failed or cut): its place before TLS goes back. */
static void session_handshake_done(struct session *s)
{
	if (!s->handshaking)
		return;
	s->handshaking = false;
	s->t->n_handshaking--;
	(void)admission_release(s->t->admission, s->addr);
}

static void session_free(struct target *t, struct session *s)
{
	session_unreserve(s);
	session_handshake_done(s);
	if (s->counted)
		t->n_sessions--;
	if (s->share)
		share_leave(&t->shares, s->share);
	for (unsigned i = s->nq; i-- > 1;)
		queue_free(t, s->q[i]);
	queue_free(t, s->q[0]);
	if (t->sessions == s) /* the head has no prev: what the callers' loops read next */
		t->sessions = s->next;
	else
		s->prev->next = s->next;
	if (s->next)
		s->next->prev = s->prev;
	free(s);
}

/* ---- queues ---- */

static int queue_watch(struct target *t, struct queue *q)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = q };
	if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, rsec_conn_fd(q->conn), &ev) == 0) {
		q->watched = true;
		return 0;
	}
	/* A queue pair that shares its session's fd is woken through the first one's. */
	return errno == EEXIST ? 0 : -1;
}

static struct queue *queue_new(struct session *s, struct rsec_conn *c, unsigned index)
{
	struct queue *q = calloc(1, sizeof(*q));
	if (!q)
		return NULL;
	q->s = s;
	q->conn = c;
	q->index = index;
	for (unsigned cid = 0; cid < BLK_QD_MAX; cid++)
		q->cmds[cid].q = q;
	return q;
}

/* The queue's command slots (registered once, one max_transfer per command id) and its data key. */
static int queue_alloc_slots(struct session *s, struct queue *q)
{
	size_t len = s->slot_len * s->lim.queue_depth;
	int rc = rsec_region_alloc(q->conn, len, RSEC_ACCESS_LOCAL, &q->region);
	if (rc == 0)
		rc = (q->keys = blk_data_keys_new(q->conn, (uint16_t)q->index)) ? 0 : RSEC_E_NOMEM;
	if (rc < 0) {
		blkd_log("error", "region", "session=%llu queue=%u bytes=%zu error=%s", (unsigned long long)s->id,
			 q->index, len, log_q(rsec_strerror(rc)));
		return rc;
	}
	q->mem = rsec_region_addr(q->region);
	q->mem_len = len;
	return 0;
}

/* Every state change goes through here: the queue's counts are what loop_timeout and the steps look at. */
static void set_state(struct queue *q, struct cmd *c, enum cmd_state to)
{
	q->busy = q->busy + (to != CMD_FREE) - (c->state != CMD_FREE);
	q->grant_waits = q->grant_waits + (to == CMD_GRANT) - (c->state == CMD_GRANT);
	q->cpl_waits = q->cpl_waits + (to == CMD_CPL) - (c->state == CMD_CPL);
	q->store_waits = q->store_waits + (to == CMD_STORE) - (c->state == CMD_STORE);
	c->state = to;
	q->s->t->moves++;
}

static uint8_t *slot(const struct queue *q, uint16_t cid)
{
	return q->mem + (size_t)cid * q->s->slot_len;
}

/* ---- commands ---- */

/* Whether the loop may seal or open more for the queue's identity this turn. */
static bool turn_left(const struct queue *q)
{
	return share_turn_left(q->s->share, q->s->t->turn, TURN_BYTES_PER_IDENTITY);
}

static void turn_spend(struct queue *q, uint64_t bytes)
{
	share_turn_spend(q->s->share, q->s->t->turn, bytes);
}

/* A command whose data is to be sealed or opened: now if its identity has nobody in line and bytes left
 * this turn, else at the end of its line (serve_lines). */
static bool turn_now(struct queue *q, struct cmd *c)
{
	struct share *sh = q->s->share;
	if (!sh->line_head && turn_left(q))
		return true;
	c->line_next = NULL;
	if (sh->line_tail)
		sh->line_tail->line_next = c;
	else
		sh->line_head = c;
	sh->line_tail = c;
	return false;
}

static void count(struct session *s, const struct cmd *c, uint16_t status)
{
	struct export_counters *n = &s->x->n;
	switch (c->m.opcode) {
	case BLK_OP_READ:
		n->reads++;
		n->bytes_read += status == BLK_S_OK ? c->m.length : 0;
		break;
	case BLK_OP_WRITE:
		n->writes++;
		n->bytes_written += status == BLK_S_OK ? c->m.length : 0;
		break;
	default:
		n->flushes++;
	}
	if (status != BLK_S_OK && status <= BLK_S_MAX)
		n->errors[status]++;
	s->t->metrics_dirty = true;
}

/* What the queue posts from now to the turn's end goes to the device in one doorbell (uncork_queues). */
static void queue_cork(struct queue *q)
{
	if (q->corked)
		return;
	rsec_conn_cork(q->conn);
	q->corked = true;
	q->s->t->corked++;
}

/* Before the loop sleeps or frees a session. A failure shows on the session's next step. */
static void uncork_queues(struct target *t)
{
	for (struct session *s = t->sessions; s && t->corked; s = s->next)
		for (unsigned i = 0; i < s->nq; i++)
			if (s->q[i]->corked) {
				(void)rsec_conn_uncork(s->q[i]->conn);
				s->q[i]->corked = false;
				t->corked--;
			}
}

static void try_send_cpl(struct queue *q, struct cmd *c)
{
	queue_cork(q);
	int rc = rsec_send(q->conn, c->cpl, sizeof(c->cpl), 0);
	if (rc == RSEC_E_AGAIN || rc == RSEC_E_TIMEOUT) {
		if (c->state != CMD_CPL) /* another completion still waits for credits: again next turn */
			set_state(q, c, CMD_CPL);
		return;
	}
	/* Sent, or the connection is gone (the session step finds out). */
	set_state(q, c, CMD_FREE);
}

static void complete(struct queue *q, struct cmd *c, uint16_t status)
{
	struct session *s = q->s;
	struct blk_cpl cpl = { .cid = c->m.cid, .status = status, .length = status == BLK_S_OK ? c->m.length : 0 };
	if (status == BLK_S_OK && c->m.opcode == BLK_OP_READ) {
		memcpy(cpl.mac, c->mac, BLK_MAC_LEN);
		cpl.key_id = c->key_id;
	}
	if (blk_cpl_encode(&cpl, c->cpl, sizeof(c->cpl)) != BLK_CPL_LEN)
		abort(); /* every field is ours and in range */
	struct audit_who w = who(s);
	audit_io(&w, blk_opcode_name(c->m.opcode), q->index, c->m.cid, c->m.offset, c->m.length,
		 (c->m.flags & BLK_CMD_FUA) != 0, blk_status_name(status));
	count(s, c, status);
	set_state(q, c, CMD_DONE);
	struct target *t = s->t;
	c->cpl_next = NULL;
	if (t->cpl_tail)
		t->cpl_tail->cpl_next = c;
	else
		t->cpl_head = c;
	t->cpl_tail = c;
}

/* The turn's audit records in one write, then its completions: a client never holds a completion whose
 * record a kill -9 of the target could lose. A closed session's are dropped. */
static void send_completions(struct target *t)
{
	if (!t->cpl_head)
		return;
	audit_flush();
	struct cmd *c = t->cpl_head;
	t->cpl_head = t->cpl_tail = NULL;
	while (c) {
		struct cmd *next = c->cpl_next;
		if (c->q->s->dead)
			set_state(c->q, c, CMD_FREE);
		else
			try_send_cpl(c->q, c);
		c = next;
	}
}

/* The grant the command's transfer goes through, if its window is here; NULL if not (or no longer). */
static const struct rsec_remote_grant *pool_grant(const struct queue *q, const struct cmd *c)
{
	enum blk_pool_dir dir;
	const struct pool_window *w = &q->win[c->m.window & 1];
	if (!blk_cmd_pool_dir(&c->m, &dir) || w->window != c->m.window || !w->have[dir])
		return NULL;
	return &w->g[dir];
}

/* The window must allow the transfer's direction, unsealed (we seal), and hold the transfer. */
static bool pool_fits(const struct queue *q, const struct cmd *c)
{
	const struct rsec_remote_grant *g = pool_grant(q, c);
	unsigned need = c->m.opcode == BLK_OP_READ ? RSEC_ACCESS_WRITE : RSEC_ACCESS_READ;
	return g && (g->access & need) && !(g->access & RSEC_GRANT_SEALED) && c->m.pool_off <= g->len &&
	       c->m.length <= g->len - c->m.pool_off;
}

static struct blk_data_ctx data_ctx(const struct queue *q, const struct cmd *c, enum blk_data_dir dir)
{
	return (struct blk_data_ctx){ .dir = dir, .queue = (uint16_t)q->index, .cid = c->m.cid,
				      .opcode = c->m.opcode, .offset = c->m.offset, .seq = c->m.seq,
				      .length = c->m.length };
}

/* Seal a READ's data in its slot (the tag goes in its completion), or go on to a pulled WRITE's RDMA READ. */
static void cmd_seal(struct queue *q, struct cmd *c)
{
	if (c->m.opcode == BLK_OP_READ) {
		turn_spend(q, c->m.length);
		struct blk_data_ctx x = data_ctx(q, c, BLK_DATA_TO_CLIENT);
		struct blk_data_key *key = NULL;
		c->key_id = rsec_conn_key_id(q->conn);
		if (blk_data_keys_get(q->keys, c->key_id, &key) < 0 ||
		    !blk_data_seal(key, &x, slot(q, c->m.cid), slot(q, c->m.cid), c->mac)) {
			complete(q, c, BLK_S_TRANSFER);
			return;
		}
	}
	set_state(q, c, CMD_POST);
}

/*
 * A READ's sealed data goes out as an unsignaled RDMA WRITE and its completion right behind it, on the
 * same queue pair: the client has the data before the completion (RC order), and nothing here waits for
 * the WRITE. If the WRITE is lost (a rebuild, a forged packet), the data does not open at the client and
 * the READ goes again (docs/blk.md, "Data transfers"). A pulled WRITE's RDMA READ is waited for.
 */
static void cmd_post(struct queue *q, struct cmd *c)
{
	bool read = c->m.opcode == BLK_OP_READ;
	const struct rsec_remote_grant *g = pool_grant(q, c);
	if (!g) { /* a hostile client's window replaced it meanwhile (an honest one waits for its commands) */
		complete(q, c, BLK_S_TRANSFER);
		return;
	}
	struct rsec_wr w = { .user_id = read ? CHAINED_WRITE_ID : c->m.cid,
			     .op = read ? RSEC_OP_WRITE : RSEC_OP_READ,
			     .flags = read ? RSEC_WR_UNSIGNALED : 0,
			     .grant = g,
			     .remote_off = c->m.pool_off,
			     .local = q->region,
			     .local_off = (size_t)c->m.cid * q->s->slot_len,
			     .len = c->m.length };
	queue_cork(q);
	int rc = rsec_post(q->conn, &w, 1, NULL);
	/* RSEC_E_GRANT: a rebuild took the pool, and the client's grant bound again has not come yet (the
	 * library resolves it then): retried, as a full send queue is, until the command's deadline. */
	if (rc == RSEC_E_AGAIN || rc == RSEC_E_GRANT)
		return;
	if (rc < 0)
		complete(q, c, BLK_S_TRANSFER);
	else if (read)
		complete(q, c, BLK_S_OK);
	else
		set_state(q, c, CMD_INFLIGHT);
}

/* On a worker thread: the command's store I/O, through its slot. The loop leaves the command alone meanwhile. */
static void store_job(void *arg)
{
	struct cmd *c = arg;
	struct store *st = &c->q->s->x->store;
	uint8_t *buf = slot(c->q, c->m.cid);
	switch (c->m.opcode) {
	case BLK_OP_READ: c->io_status = store_read(st, buf, c->m.length, c->m.offset); break;
	case BLK_OP_WRITE:
		c->io_status = store_write(st, buf, c->m.length, c->m.offset, (c->m.flags & BLK_CMD_FUA) != 0);
		break;
	default: c->io_status = store_flush(st);
	}
}

static void cmd_stored_on(struct queue *q, struct cmd *c);

/*
 * A READ or a non-FUA WRITE the kernel can do without waiting (RWF_NOWAIT: a RAM disk, the page cache)
 * runs here, on the loop: no hand-off, no wake-up. What would wait, and every sync, goes to the pool.
 */
static bool cmd_store_nowait(struct queue *q, struct cmd *c)
{
	struct export *x = q->s->x;
	uint8_t *buf = slot(q, c->m.cid);
	bool done = false;
	if (!x->conf->nowait)
		return false;
	if (c->m.opcode == BLK_OP_READ)
		done = store_read_nowait(&x->store, buf, c->m.length, c->m.offset, &c->io_status);
	else if (c->m.opcode == BLK_OP_WRITE && !(c->m.flags & BLK_CMD_FUA))
		done = store_write_nowait(&x->store, buf, c->m.length, c->m.offset, &c->io_status);
	if (done)
		x->n.store_nowait++;
	return done;
}

/* The command's store I/O: on the loop if it need not wait, else handed to the pool; when the pool is
 * full, it waits its turn (queue_retry). */
static void cmd_store(struct queue *q, struct cmd *c)
{
	if (c->state != CMD_STORE_WAIT && cmd_store_nowait(q, c)) {
		cmd_stored_on(q, c);
		return;
	}
	struct share *sh = q->s->share;
	int rc = sh->store_jobs < STORE_JOBS_PER_IDENTITY ? offload_submit(q->s->t->pool, sh->identity, store_job, c)
							  : -EAGAIN;
	if (rc == -EAGAIN) {
		set_state(q, c, CMD_STORE_WAIT);
		return;
	}
	if (rc < 0) {
		complete(q, c, BLK_S_IO);
		return;
	}
	set_state(q, c, CMD_STORE);
	q->s->jobs++;
	sh->store_jobs++;
}

static void cmd_seal_post(struct queue *q, struct cmd *c)
{
	cmd_seal(q, c);
	if (c->state == CMD_POST)
		cmd_post(q, c);
}

/* A READ's data is sealed in its identity's turn; a transfer that waits on the library (its sealed-write
 * table, the send queue) is retried until its deadline. */
static void cmd_seal_and_post(struct queue *q, struct cmd *c)
{
	set_state(q, c, CMD_SEAL);
	c->deadline_ms = clock_coarse_ms() + q->s->t->conf->grant_timeout_ms;
	if (c->m.opcode != BLK_OP_READ || turn_now(q, c))
		cmd_seal_post(q, c);
}

/* The store I/O is done: a READ goes on to seal and push its data; anything else completes. */
static void cmd_stored_on(struct queue *q, struct cmd *c)
{
	if (c->m.opcode == BLK_OP_READ && c->io_status == BLK_S_OK)
		cmd_seal_and_post(q, c);
	else
		complete(q, c, c->io_status);
}

/* A worker's store I/O is back. */
static void cmd_stored(struct cmd *c)
{
	struct queue *q = c->q;
	struct session *s = q->s;
	s->jobs--;
	s->share->store_jobs--;
	if (s->dead) {
		set_state(q, c, CMD_FREE);
		if (!s->jobs)
			session_release(s);
		return;
	}
	cmd_stored_on(q, c);
}

/* The pool grant is there: a READ reads the store, then seals; a WRITE pulls. */
static void cmd_granted(struct queue *q, struct cmd *c)
{
	if (!pool_fits(q, c)) {
		complete(q, c, BLK_S_TRANSFER);
		return;
	}
	if (c->m.opcode == BLK_OP_READ)
		cmd_store(q, c);
	else
		cmd_seal_and_post(q, c);
}

/*
 * The window the command names, for its direction, taken from the library once it came. A window two
 * numbers on takes the slot of the one the client revoked before granting it.
 */
static int window_take(struct queue *q, const struct cmd *c)
{
	enum blk_pool_dir dir;
	if (!blk_cmd_pool_dir(&c->m, &dir))
		return RSEC_E_INVAL;
	struct pool_window *w = &q->win[c->m.window & 1];
	if (w->window != c->m.window)
		*w = (struct pool_window){ .window = c->m.window };
	if (w->have[dir])
		return 0;
	uint64_t tag = c->m.window ? blk_window_tag(c->m.window, dir) : BLK_POOL_TAG;
	int rc = rsec_grant_wait(q->conn, tag, &w->g[dir], 0);
	if (rc == 0 && !c->m.window) { /* version 3 */
		w->g[!dir] = w->g[dir];
		w->have[!dir] = true;
	}
	w->have[dir] = rc == 0;
	return rc;
}

static void cmd_try_grant(struct queue *q, struct cmd *c, uint64_t now)
{
	int rc = window_take(q, c);
	if (rc == 0) {
		cmd_granted(q, c);
		return;
	}
	if (rc != RSEC_E_AGAIN || now >= c->deadline_ms)
		complete(q, c, BLK_S_TRANSFER);
}

static void cmd_open(struct queue *q, struct cmd *c);

/* A pulled WRITE's RDMA READ ended: its data is here, to open and store. */
static void cmd_transferred(struct queue *q, struct cmd *c, int status)
{
	if (status != 0) {
		complete(q, c, BLK_S_TRANSFER);
		return;
	}
	set_state(q, c, CMD_OPEN);
	if (turn_now(q, c))
		cmd_open(q, c);
}

/* A pulled WRITE's data, opened in place, then stored. */
static void cmd_open(struct queue *q, struct cmd *c)
{
	turn_spend(q, c->m.length);
	struct blk_data_ctx x = data_ctx(q, c, BLK_DATA_TO_TARGET);
	struct blk_data_key *key = NULL;
	if (blk_data_keys_get(q->keys, c->m.key_id, &key) < 0 ||
	    !blk_data_open(key, &x, slot(q, c->m.cid), slot(q, c->m.cid), c->m.mac)) {
		complete(q, c, BLK_S_TRANSFER);
		return;
	}
	cmd_store(q, c);
}

static void handle_cmd(struct queue *q, const uint8_t *buf, size_t len)
{
	struct session *s = q->s;
	struct blk_cmd m;
	const char *why = NULL;
	if (!blk_cmd_decode(buf, len, &m, &why)) {
		violation(s, q->index, "malformed command: %s", why);
		return;
	}
	struct cmd *c = &q->cmds[m.cid];
	if (c->state != CMD_FREE) {
		violation(s, q->index, "cid %u already in flight on queue %u", m.cid, q->index);
		return;
	}
	if (m.seq <= q->last_seq) {
		violation(s, q->index, "sequence number %llu after %llu on queue %u", (unsigned long long)m.seq,
			  (unsigned long long)q->last_seq, q->index);
		return;
	}
	q->last_seq = m.seq;
	const uint8_t *data = m.data;
	c->m = m;
	c->m.data = NULL;
	uint16_t st = blk_cmd_check(&m, &s->lim);
	if (st == BLK_S_OK && m.opcode == BLK_OP_WRITE && s->read_only)
		st = BLK_S_READ_ONLY;
	if (st != BLK_S_OK) {
		complete(q, c, st);
		return;
	}
	if (m.opcode == BLK_OP_FLUSH) {
		cmd_store(q, c);
	} else if (m.opcode == BLK_OP_WRITE && (m.flags & BLK_CMD_INLINE)) {
		/* Through the slot: O_DIRECT wants an aligned buffer, and the receive buffer is reused. */
		memcpy(slot(q, m.cid), data, m.length);
		cmd_store(q, c);
	} else {
		/* A pulled WRITE's key made now, while the library still holds its id: its data opens later. */
		struct blk_data_key *key = NULL;
		if (m.opcode == BLK_OP_WRITE && blk_data_keys_get(q->keys, m.key_id, &key) < 0) {
			complete(q, c, BLK_S_TRANSFER);
			return;
		}
		set_state(q, c, CMD_GRANT);
		uint64_t now = clock_coarse_ms();
		c->deadline_ms = now + s->t->conf->grant_timeout_ms;
		cmd_try_grant(q, c, now);
	}
}

/* ---- OPEN ---- */

/* Whether one rule of the list (an identity, PREFIX/ then '*', or '*': rsec_authz_match) takes peer. */
static bool id_listed(const char list[][BLKD_ID_LEN], unsigned n, const char *peer)
{
	for (unsigned i = 0; i < n; i++)
		if (rsec_authz_match(list[i], peer))
			return true;
	return false;
}

/* What peer may do with export x under its lists now: read (rw or ro lists), write (rw, export not read-only). */
static void export_rights(const struct blkd_export_conf *x, const char *peer, bool *may_read, bool *may_write)
{
	bool rw = id_listed(x->rw_ids, x->n_rw, peer);
	*may_write = rw && !x->read_only;
	*may_read = rw || id_listed(x->ro_ids, x->n_ro, peer);
}

static struct export *export_named(struct target *t, const char *name)
{
	for (unsigned i = 0; i < t->n_exports; i++)
		if (strcmp(t->exports[i].conf->name, name) == 0)
			return &t->exports[i];
	return NULL;
}

/* Answer the OPEN with a refusal, audit it, and close once the reply had time to land. */
static void refuse_open(struct session *s, const struct blk_open *m, uint16_t status, const char *reason)
{
	struct blk_open_reply r = { .version = m ? m->version : BLK_VERSION, .status = status };
	uint8_t out[BLK_OPEN_REPLY_LEN];
	if (blk_open_reply_encode(&r, out, sizeof(out)) == BLK_OPEN_REPLY_LEN)
		(void)rsec_send(s->q[0]->conn, out, sizeof(out), 0); /* if it fails, the close tells the client */
	struct audit_who w = who(s);
	audit_open_result(&w, m && (m->flags & BLK_OPEN_WRITE), blk_status_name(status), reason);
	blkd_log("info", "open_refused", "session=%llu peer=%s export=%s status=%s",
		 (unsigned long long)s->id, log_q(s->peer), log_q(m ? m->name : ""), log_q(blk_status_name(status)));
	if (s->x)
		s->x->n.opens_refused++;
	if (s->x && status == BLK_S_DENIED)
		s->x->n.opens_denied++;
	if (status == BLK_S_NO_EXPORT)
		s->t->n.opens_unknown_export++;
	if (status <= BLK_S_MAX)
		s->t->n.open_refusals[status]++;
	s->t->metrics_dirty = true;
	s->refused = true;
	s->deadline_ms = clock_coarse_ms() + REFUSAL_LINGER_MS;
}

/*
 * What the session may do: its queue depth and queues within the configuration, the grant table and
 * memory_limit. The command buffers of every queue granted are reserved now, those of the queue pairs
 * the client adds later included; a refusal or the session's end gives them back.
 */
static uint16_t open_size(struct session *s, const struct blk_open *m, const char **why)
{
	const struct blkd_conf *conf = s->t->conf;
	struct blkd_open_budget b;
	struct blkd_reserved held = { .all = s->t->mem_reserved, .identity = s->share->mem_reserved };
	s->slot_len = ((size_t)conf->max_transfer + PAGE - 1) / PAGE * PAGE;
	if (!blkd_open_budget(conf, m->queue_depth, m->queues, s->slot_len, &held, &b)) {
		*why = b.identity_bound ? "memory_per_identity reached" : "memory_limit reached";
		if (b.identity_bound)
			s->t->n.share_refusals[SHARE_MEMORY]++;
		return BLK_S_LIMIT;
	}
	s->lim = (struct blk_limits){ .version = m->version, .size = s->x->store.size, .block_size = s->x->conf->block_size,
				      .max_transfer = conf->max_transfer, .max_inline = conf->max_inline,
				      .queue_depth = (uint16_t)b.queue_depth };
	s->queues_granted = b.queues;
	s->mem_reserved = b.bytes;
	s->t->mem_reserved += b.bytes;
	s->share->mem_reserved += b.bytes;
	return BLK_S_OK;
}

static uint16_t open_access(struct session *s, const struct blk_open *m, const char **why)
{
	const struct blkd_export_conf *x = s->x->conf;
	bool may_read, may_write;
	export_rights(x, s->peer, &may_read, &may_write);
	if (!may_read) {
		*why = "identity matches no rw or ro rule of the export";
		return BLK_S_DENIED;
	}
	if ((m->flags & BLK_OPEN_WRITE) && !may_write)
		return BLK_S_READ_ONLY;
	unsigned open_now = 0;
	for (struct session *o = s->t->sessions; o; o = o->next)
		open_now += o->opened && !o->dead && o->x == s->x;
	if (open_now >= x->max_sessions) {
		*why = "the export's max_sessions reached";
		return BLK_S_LIMIT;
	}
	s->read_only = !may_write;
	return BLK_S_OK;
}

/* The OPEN is granted: the reply with the session's limits, then the session serves I/O. */
static void open_accept(struct session *s, const struct blk_open *m)
{
	struct blk_open_reply r = {
		.version = m->version,
		.status = BLK_S_OK,
		.flags = (uint16_t)((s->read_only ? BLK_EXPORT_READ_ONLY : 0) | BLK_EXPORT_FLUSH | BLK_EXPORT_FUA),
		.queue_depth = s->lim.queue_depth,
		.queues = (uint16_t)s->queues_granted,
		.block_size = s->lim.block_size,
		.max_transfer = s->lim.max_transfer,
		.max_inline = s->lim.max_inline,
		.size = s->lim.size,
	};
	uint8_t out[BLK_OPEN_REPLY_LEN];
	if (blk_open_reply_encode(&r, out, sizeof(out)) != BLK_OPEN_REPLY_LEN) {
		session_close(s, "cannot encode the OPEN reply"); /* an export the checks should have refused */
		return;
	}
	int rc = rsec_send(s->q[0]->conn, out, sizeof(out), 0);
	if (rc < 0) {
		session_close(s, rsec_strerror(rc));
		return;
	}
	s->opened = true;
	s->nq = 1;
	s->x->n.sessions_total++;
	s->x->n.sessions_open++;
	s->t->metrics_dirty = true;
	struct audit_who w = who(s);
	audit_open_result(&w, s->write_asked, "ok", s->read_only ? "read-only" : "read-write");
	blkd_log("info", "open", "session=%llu peer=%s export=%s mode=%s queue_depth=%u queues=%u",
		 (unsigned long long)s->id, log_q(s->peer), log_q(m->name), s->read_only ? "ro" : "rw", s->lim.queue_depth,
		 s->queues_granted);
}

static void handle_open(struct session *s, const uint8_t *buf, size_t len)
{
	struct blk_open m;
	const char *why = NULL;
	if (len >= 2 && buf[0] == BLK_OPEN && (buf[1] < BLK_VERSION_MIN || buf[1] > BLK_VERSION)) {
		refuse_open(s, NULL, BLK_S_VERSION, "protocol version not spoken");
		return;
	}
	if (!blk_open_decode(buf, len, &m, &why)) {
		violation(s, 0, "malformed OPEN: %s", why);
		return;
	}
	s->write_asked = (m.flags & BLK_OPEN_WRITE) != 0;
	s->x = export_named(s->t, m.name);
	if (!s->x) {
		refuse_open(s, &m, BLK_S_NO_EXPORT, "no such export");
		return;
	}
	const char *refusal = NULL;
	uint16_t st = open_access(s, &m, &refusal);
	if (st == BLK_S_OK)
		st = open_size(s, &m, &refusal);
	if (st == BLK_S_OK && queue_alloc_slots(s, s->q[0]) < 0) {
		st = BLK_S_LIMIT;
		refusal = "cannot register the command buffers";
	}
	if (st != BLK_S_OK) {
		session_unreserve(s);
		refuse_open(s, &m, st, refusal);
		return;
	}
	open_accept(s, &m);
}

/* ---- stepping a session ---- */

static void handle_msg(struct queue *q, const uint8_t *buf, size_t len)
{
	struct session *s = q->s;
	uint8_t type = blk_type_of(buf, len);
	if (s->refused)
		violation(s, q->index, "a message after a refused OPEN");
	else if (!s->opened && q->index == 0 && type == BLK_OPEN)
		handle_open(s, buf, len);
	else if (s->opened && type == BLK_CMD)
		handle_cmd(q, buf, len);
	else
		violation(s, q->index, "message type 0x%02x out of turn", type);
}

static void queue_reap(struct queue *q)
{
	struct rsec_wc wc[WCS_PER_POLL];
	int n = rsec_poll(q->conn, wc, WCS_PER_POLL, 0);
	for (int i = 0; i < n && !q->s->dead; i++) {
		struct cmd *c = wc[i].user_id < BLK_QD_MAX ? &q->cmds[wc[i].user_id] : NULL;
		if (c && c->state == CMD_INFLIGHT)
			cmd_transferred(q, c, wc[i].status);
	}
	if (n < 0)
		session_close(q->s, rsec_conn_error(q->conn)[0] ? rsec_conn_error(q->conn) : rsec_strerror(n));
}

/* Commands waiting on something outside them: a grant, the seal budget, the send queue, credits. */
static void queue_retry(struct queue *q, uint64_t now)
{
	for (unsigned cid = 0; cid < BLK_QD_MAX && q->busy && !q->s->dead; cid++) {
		struct cmd *c = &q->cmds[cid];
		switch (c->state) {
		case CMD_GRANT: cmd_try_grant(q, c, now); break;
		case CMD_STORE_WAIT: cmd_store(q, c); break;
		case CMD_POST:
			if (now >= c->deadline_ms)
				complete(q, c, BLK_S_TRANSFER);
			else
				cmd_post(q, c);
			break;
		case CMD_CPL: try_send_cpl(q, c); break;
		default: break;
		}
	}
}

static void queue_recv(struct queue *q)
{
	struct target *t = q->s->t;
	q->more = false;
	for (unsigned i = 0; i < MSGS_PER_TURN && !q->s->dead; i++) {
		/* Completions that wait for credits hold back new commands: the client's pace. */
		if (q->cpl_waits)
			return;
		if (!turn_left(q)) {
			q->deferred = true;
			return;
		}
		size_t len = 0;
		int rc = rsec_recv(q->conn, t->msg, t->msg_cap, &len, 0);
		if (rc == RSEC_E_AGAIN)
			return;
		if (rc == RSEC_E_RANGE) {
			violation(q->s, q->index, "a message over %zu bytes", t->msg_cap);
			return;
		}
		if (rc < 0) {
			session_close(q->s, rsec_conn_error(q->conn)[0] ? rsec_conn_error(q->conn) : rsec_strerror(rc));
			return;
		}
		turn_spend(q, len);
		handle_msg(q, t->msg, len);
	}
	q->more = true;
}

/* The queue pairs the client adds after OPEN: up to the number granted, and not one more. */
static void session_add_queues(struct session *s)
{
	for (;;) {
		struct rsec_conn *c = NULL;
		int rc = rsec_conn_add_qp(s->q[0]->conn, 0, &c);
		if (rc == RSEC_E_AGAIN)
			return;
		if (rc < 0) {
			session_close(s, rsec_strerror(rc));
			return;
		}
		if (s->nq >= s->queues_granted) {
			rsec_conn_free(c);
			violation(s, s->nq, "a queue pair beyond the %u granted", s->queues_granted);
			return;
		}
		struct queue *q = queue_new(s, c, s->nq);
		if (!q) {
			rsec_conn_free(c);
			session_close(s, "out of memory");
			return;
		}
		s->q[s->nq++] = q;
		if (queue_watch(s->t, q) < 0 || queue_alloc_slots(s, q) < 0) {
			session_close(s, "cannot set up a queue pair");
			return;
		}
		blkd_log("debug", "queue", "session=%llu queue=%u", (unsigned long long)s->id, q->index);
	}
}

static void session_established(struct session *s)
{
	struct rsec_conn *c = s->q[0]->conn;
	const char *peer = rsec_conn_peer(c);
	session_handshake_done(s);
	if (s->t->n_sessions >= s->t->conf->max_sessions) {
		blkd_log("warn", "refused", "session=%llu peer=%s reason=\"max_sessions reached\" sessions=%u",
			 (unsigned long long)s->id, log_q(strlen(peer) > BLKD_ID_MAX ? "" : peer), s->t->n_sessions);
		session_close(s, "max_sessions reached");
		return;
	}
	s->counted = true;
	s->t->n_sessions++;
	if (strlen(peer) > BLKD_ID_MAX) {
		/* Perhaps cut short by librdmasec: it could equal an identity of the configuration it is not. */
		blkd_log("warn", "refused", "session=%llu reason=\"identity over %u characters\"",
			 (unsigned long long)s->id, BLKD_ID_MAX);
		session_close(s, "identity too long");
		return;
	}
	s->established = true;
	memcpy(s->peer, peer, strlen(peer) + 1);
	s->share = share_join(&s->t->shares, s->peer);
	if (!s->share) {
		session_close(s, "out of memory");
		return;
	}
	if (s->share->sessions > blkd_identity_sessions(s->t->conf)) {
		blkd_log("warn", "refused", "session=%llu peer=%s reason=\"max_sessions_per_identity reached\" sessions=%u",
			 (unsigned long long)s->id, log_q(s->peer), s->share->sessions - 1);
		s->t->n.share_refusals[SHARE_SESSIONS]++;
		s->t->metrics_dirty = true;
		session_close(s, "max_sessions_per_identity reached");
		return;
	}
	s->deadline_ms = clock_coarse_ms() + s->t->conf->open_timeout_ms;
	blkd_log("debug", "established", "session=%llu peer=%s addr=%s", (unsigned long long)s->id, log_q(s->peer),
		 s->addr);
}

/* A session's work: within the loop's turn, what its one look at the session's fds said holds. */
static void session_work(struct session *s, uint64_t now)
{
	struct rsec_conn *c = s->q[0]->conn;
	int rc = rsec_conn_process(c);
	if (rc == RSEC_E_AGAIN && !s->established)
		return;
	if (rc < 0 && rc != RSEC_E_AGAIN) {
		session_close(s, rsec_conn_error(c)[0] ? rsec_conn_error(c) : rsec_strerror(rc));
		return;
	}
	if (!s->established)
		session_established(s);
	if (s->dead)
		return;
	if (s->refused || !s->opened) {
		if (now >= s->deadline_ms) {
			session_close(s, s->refused ? "OPEN refused" : "no OPEN in time");
			return;
		}
	} else {
		session_add_queues(s);
	}
	/* Each turn from the next queue pair on: none always the one its identity's bytes ran out before. */
	unsigned n = s->opened ? s->nq : 1;
	for (unsigned k = 0; k < n && !s->dead; k++) {
		struct queue *q = s->q[(k + s->t->turn) % n];
		q->deferred = false;
		/* Also with no command busy: READs' unsignaled data WRITEs retire in the library's ring. */
		if (q->busy || rsec_inflight(q->conn))
			queue_reap(q);
		if (q->busy && !s->dead)
			queue_retry(q, now);
		if (!s->dead)
			queue_recv(q);
		/* A grant the receive pass brought in, for a command that waits for it. */
		if (q->grant_waits && !s->dead)
			queue_retry(q, now);
	}
}

static void session_step(struct session *s, uint64_t now)
{
	/* One look at the session's fds for the whole turn, its completions sent at the turn's end included. */
	rsec_conn_turn(s->q[0]->conn);
	session_work(s, now);
}

/* Whether the session needs a turn without an event: work left over, or commands that wait. */
static bool session_pending(const struct session *s)
{
	for (unsigned i = 0; i < s->nq; i++)
		if (s->q[i]->more || s->q[i]->deferred || s->q[i]->busy)
			return true;
	return false;
}

/* ---- accepting ---- */

/* A connection before TLS: within max_handshakes, and its source's share and rate (counted if admitted). */
static bool admit(struct target *t, struct rsec_conn *c)
{
	const char *addr = rsec_conn_peer_addr(c), *why = "max_handshakes reached";
	if (t->n_handshaking < t->conf->max_handshakes &&
	    admission_try(t->admission, addr, clock_coarse_ms(), &why) == ADMISSION_ADMIT)
		return true;
	blkd_log("warn", "refused", "addr=%s reason=%s handshaking=%u", addr, log_q(why), t->n_handshaking);
	return false;
}

static void accept_some(struct target *t)
{
	for (unsigned i = 0; i < ACCEPTS_PER_TURN; i++) {
		struct rsec_conn *c = NULL;
		int rc = rsec_accept(t->listener, &c);
		if (rc == RSEC_E_AGAIN)
			return;
		if (rc < 0) {
			blkd_log("warn", "accept", "error=%s", log_q(rsec_strerror(rc)));
			return;
		}
		t->n.connections++;
		t->metrics_dirty = true;
		if (!admit(t, c)) {
			rsec_conn_free(c);
			continue;
		}
		struct session *s = calloc(1, sizeof(*s));
		struct queue *q = s ? queue_new(s, c, 0) : NULL;
		if (!q) {
			free(s);
			rsec_conn_free(c);
			continue;
		}
		s->t = t;
		s->id = ++t->next_session;
		snprintf(s->addr, sizeof(s->addr), "%s", rsec_conn_peer_addr(c));
		s->handshaking = true;
		t->n_handshaking++;
		s->q[0] = q;
		s->nq = 1;
		s->next = t->sessions;
		if (t->sessions)
			t->sessions->prev = s;
		t->sessions = s;
		if (queue_watch(t, q) < 0) {
			session_close(s, "cannot watch the connection");
			continue;
		}
		session_step(s, clock_coarse_ms());
	}
}

/* ---- set-up ---- */

static int open_exports(struct target *t)
{
	t->exports = calloc(t->conf->n_exports, sizeof(*t->exports));
	if (!t->exports)
		return -1;
	for (unsigned i = 0; i < t->conf->n_exports; i++) {
		struct export *x = &t->exports[i];
		char err[512];
		x->conf = &t->conf->exports[i];
		if (store_open(&x->store, x->conf, err, sizeof(err)) < 0) {
			blkd_log("error", "export", "export=%s error=%s", log_q(x->conf->name), log_q(err));
			for (unsigned j = 0; j < i; j++)
				store_close(&t->exports[j].store);
			return -1;
		}
		t->n_exports = i + 1;
		blkd_log("info", "export", "export=%s path=%s size=%llu block_size=%u mode=%s direct=%s",
			 log_q(x->conf->name), log_q(x->conf->path), (unsigned long long)x->store.size, x->conf->block_size,
			 x->conf->read_only ? "ro" : "rw", x->store.fd_direct >= 0 ? "yes" : "no");
	}
	return 0;
}

/* Who may connect at all: --trust-etcd's allow rules (none: any authenticated identity). */
static struct trust_rules conf_rules(const struct blkd_conf *conf)
{
	return (struct trust_rules){ conf->allow, conf->n_allow };
}

static int open_context(struct target *t)
{
	const struct blkd_conf *conf = t->conf;
	struct rsec_ctx_attr attr = {
		.is_server = 1,
		.device = conf->device[0] ? conf->device : NULL,
		.ca_file = conf->ca,
		.cert_file = conf->cert,
		.key_file = conf->key,
		/* A capsule takes one receive buffer; a client may have queue_depth of them in flight. */
		.recv_slots = conf->queue_depth + 8,
		.slot_size = 65536,
		.max_msg = 65536,
		.comp_mask = RSEC_CTX_ATTR_QPS | RSEC_CTX_ATTR_DEPTH | RSEC_CTX_ATTR_REBUILDS | RSEC_CTX_ATTR_REKEY |
			     (conf->crl[0] ? RSEC_CTX_ATTR_CRL : 0),
		.crl_file = conf->crl[0] ? conf->crl : NULL,
		.max_qps = conf->queues,
		.max_inflight = conf->queue_depth > 128 ? conf->queue_depth : 128,
		.rebuilds_per_min = conf->rebuilds_per_min,
		.rekey_s = conf->rekey_s,
		.rekey_bytes = conf->rekey_bytes,
	};
	if (conf->audit_log[0]) {
		attr.comp_mask |= RSEC_CTX_ATTR_AUDIT;
		attr.audit_path = conf->audit_log;
	}
	char err[512] = "";
	int rc = rsec_ctx_new(&attr, &t->ctx, err, sizeof(err));
	if (rc < 0) {
		blkd_log("error", "context", "error=%s reason=%s", log_q(rsec_strerror(rc)), log_q(err));
		return -1;
	}
	if (trust_conf_set_allow(t->ctx, conf_rules(conf), err, sizeof(err)) < 0) {
		blkd_log("error", "authz", "reason=%s", log_q(err));
		return -1;
	}
	if (conf->n_allow)
		blkd_log("info", "authz", "allow_rules=%u", conf->n_allow);
	rc = rsec_listen(t->ctx, conf->listen_addr, conf->listen_port, 128, &t->listener);
	if (rc < 0) {
		blkd_log("error", "listen", "addr=%s port=%u error=%s", log_q(conf->listen_addr), conf->listen_port,
			 log_q(rsec_strerror(rc)));
		return -1;
	}
	return 0;
}

static int open_events(struct target *t)
{
	sigset_t set;
	if (sigemptyset(&set) != 0 || sigaddset(&set, SIGINT) != 0 || sigaddset(&set, SIGTERM) != 0 ||
	    sigaddset(&set, SIGHUP) != 0 ||
	    sigprocmask(SIG_BLOCK, &set, NULL) != 0 || signal(SIGPIPE, SIG_IGN) == SIG_ERR)
		return -1;
	t->sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	t->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (t->sigfd < 0 || t->epfd < 0)
		return -1;
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &t->signal_tag };
	if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, t->sigfd, &ev) != 0)
		return -1;
	ev.data.ptr = &t->pool_tag;
	if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, offload_fd(t->pool), &ev) != 0)
		return -1;
	ev.data.ptr = &t->trust_tag;
	if (t->trust && epoll_ctl(t->epfd, EPOLL_CTL_ADD, trust_watch_fd(t->trust), &ev) != 0)
		return -1;
	ev.data.ptr = &t->listener_tag;
	return epoll_ctl(t->epfd, EPOLL_CTL_ADD, rsec_listener_fd(t->listener), &ev);
}

static void write_metrics(struct target *t, uint64_t now, bool force)
{
	bool dirty = t->metrics_dirty || t->n.reload.changed;
	if (!t->conf->metrics_file[0] || (!force && (!dirty || now - t->metrics_last_ms < METRICS_INTERVAL_MS)))
		return;
	const char *names[BLKD_EXPORTS_MAX];
	const struct export_counters *counters[BLKD_EXPORTS_MAX];
	for (unsigned i = 0; i < t->n_exports; i++) {
		names[i] = t->exports[i].conf->name;
		counters[i] = &t->exports[i].n;
	}
	t->n.audit_errors = audit_errors() + rsec_ctx_audit_errors(t->ctx);
	struct metrics_source m = { names, counters, t->n_exports, &t->n };
	char err[512];
	if (metrics_write(t->conf->metrics_file, &m, err, sizeof(err)) < 0)
		blkd_log("error", "metrics", "error=%s", log_q(err));
	t->metrics_dirty = false;
	t->n.reload.changed = 0;
	t->metrics_last_ms = now;
}

/* ---- the loop ---- */

static void drain_signals(struct target *t)
{
	struct signalfd_siginfo si;
	while (read(t->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		blkd_log("info", "signal", "signo=%u", si.ssi_signo);
		if (si.ssi_signo == SIGHUP)
			t->reload_pending = true;
		else
			t->stop = true;
	}
}

/*
 * An open session put under its export's access lists in force now: NULL while they still take it, or why it
 * must end. A session that may no longer write, and never asked to, becomes read-only here.
 */
static const char *reapply_export_access(struct session *s)
{
	if (!s->opened)
		return NULL;
	bool may_read, may_write;
	export_rights(s->x->conf, s->peer, &may_read, &may_write);
	if (!may_read)
		return "no longer allowed on the export (its rw and ro lists)";
	if (!may_write && !s->read_only && s->write_asked)
		return "no longer allowed to write the export (its rw list)";
	s->read_only = s->read_only || !may_write;
	return NULL;
}

/*
 * After a reload: a session whose peer is revoked, expired or no longer allowed now (the library audits
 * it), or whose export's access lists no longer take it, is closed.
 */
static void recheck_peers(struct target *t)
{
	for (struct session *s = t->sessions; s; s = s->next) {
		char why[128];
		const char *reason = why;
		if (s->dead)
			continue;
		if (rsec_conn_check_peer(s->q[0]->conn, why, sizeof(why)) != RSEC_E_AUTH &&
		    !(reason = reapply_export_access(s)))
			continue;
		t->n.closed_revoked++;
		blkd_log("warn", "peer_revoked", "session=%llu peer=%s reason=%s export=%s",
			 (unsigned long long)s->id, log_q(s->established ? s->peer : ""), log_q(reason),
			 log_q(s->opened ? s->x->conf->name : ""));
		session_close(s, reason);
	}
}

/* The service's side of a reload (tools/daemon/reload.h). */
static void *reload_reread(void *svc, char *err, size_t errlen)
{
	struct target *t = svc;
	return t->reread(t->reread_arg, err, errlen);
}

static struct trust_rules reload_rules(void *svc, const void *conf)
{
	const struct target *t = svc;
	return conf_rules(conf ? conf : t->live);
}

/* Keys that need a restart keep their values (blkd_conf_live.h). */
static void reload_apply(void *svc, void *fresh, char *pinned, size_t cap)
{
	struct target *t = svc;
	if (!blkd_conf_pin_fixed(fresh, t->live, pinned, cap))
		pinned[0] = '\0';
	*t->live = *(struct blkd_conf *)fresh; /* the exports' names and stores are the same: their pointers stay good */
	if (t->bp.max_us != t->conf->busy_poll_us)
		busy_poll_init(&t->bp, t->conf->busy_poll_us);
	free(fresh);
}

static void reload_recheck(void *svc)
{
	recheck_peers(svc);
}

static size_t reload_sessions(void *svc)
{
	return ((struct target *)svc)->n_sessions;
}

static const struct daemon_reload_ops reload_ops = {
	.reread = reload_reread, .rules = reload_rules, .apply = reload_apply, .recheck = reload_recheck,
	.sessions = reload_sessions,
};

/*
 * How long the next turn may sleep. What commands wait for (a grant's descriptor, credits, the seal
 * budget, the device) wakes the connection's fd; a wake-up the library took in passing does not, so
 * a session with waiting commands is stepped again soon: after 1 ms, then twice as long each quiet
 * turn (no event, no command moved), up to WAIT_BACKOFF_MAX_MS, never a spin. Store I/O wakes the
 * pool's eventfd.
 */
static int loop_timeout(const struct target *t)
{
	bool waits = false;
	if (t->cpl_head)
		return 0;
	for (const struct share *sh = t->shares; sh; sh = sh->next)
		if (sh->line_head)
			return 0;
	for (const struct session *s = t->sessions; s; s = s->next) {
		if (!s->opened)
			continue;
		for (unsigned i = 0; i < s->nq; i++) {
			const struct queue *q = s->q[i];
			if (q->more || q->deferred)
				return 0;
			waits = waits || q->busy > q->store_waits;
		}
	}
	if (!waits)
		return TICK_MS;
	unsigned shift = t->quiet_turns < 6 ? t->quiet_turns : 6;
	int backoff = 1 << shift;
	return backoff < WAIT_BACKOFF_MAX_MS ? backoff : WAIT_BACKOFF_MAX_MS;
}

/* Store I/O that is back. At most STORE_JOBS_MAX of it exists: bounded. */
static void take_stored(struct target *t)
{
	for (struct cmd *c; (c = offload_take_done(t->pool));)
		cmd_stored(c);
}

/* Each identity's line, oldest first, as far as its bytes for the turn go (at least one command). */
static void serve_lines(struct target *t)
{
	for (struct share *sh = t->shares; sh; sh = sh->next)
		while (sh->line_head && share_turn_left(sh, t->turn, TURN_BYTES_PER_IDENTITY)) {
			struct cmd *c = sh->line_head;
			sh->line_head = c->line_next;
			if (!sh->line_head)
				sh->line_tail = NULL;
			if (c->state == CMD_SEAL)
				cmd_seal_post(c->q, c);
			else
				cmd_open(c->q, c);
		}
}

static void step_if_due(struct session *s, uint64_t now, bool sweep)
{
	if (!s->dead && (s->kick || sweep || session_pending(s)))
		session_step(s, now);
	s->kick = false;
}

/* Each turn starts one session further down the list, so that no session of an identity is always the
 * one whose turn its others' bytes used up. */
static struct session *turn_first(const struct target *t)
{
	unsigned n = 0;
	for (const struct session *s = t->sessions; s; s = s->next)
		n++;
	struct session *first = t->sessions;
	for (unsigned k = n ? (unsigned)(t->turn % n) : 0; k; k--)
		first = first->next;
	return first;
}

/* Stepping adds and frees no session. */
static void step_sessions(struct target *t, uint64_t now, bool sweep)
{
	struct session *first = turn_first(t);
	for (struct session *s = first; s; s = s->next)
		step_if_due(s, now, sweep);
	for (struct session *s = t->sessions; s != first; s = s->next)
		step_if_due(s, now, sweep);
}

/*
 * Before sleeping, when the last turn had work: poll the sessions' queues (completion queues and
 * receive rings: no system call but a yield, which lets a software device's kernel threads run on
 * these CPUs) until a command moves or the window (busy_poll.h) ends. Within the turn: what each
 * session's look at its fds said holds, and its identity's bytes are the turn's. Whether it found work.
 */
static bool poll_sessions(struct target *t, uint64_t start_ns)
{
	uint64_t moves = t->moves, window_ns = (uint64_t)busy_poll_window(&t->bp) * 1000u;
	struct session *first = turn_first(t);
	for (unsigned round = 1;; round++) {
		uint64_t now = clock_coarse_ms();
		for (struct session *s = first; s; s = s->next)
			if (s->opened && !s->dead)
				session_work(s, now);
		for (struct session *s = t->sessions; s != first; s = s->next)
			if (s->opened && !s->dead)
				session_work(s, now);
		bool found = t->moves != moves || t->cpl_head;
		/* The clock every few rounds: under an emulator a precise read is a system call. */
		if (found || (round % 8 == 0 && clock_mono_ns() - start_ns >= window_ns)) {
			if (found)
				t->n.busy_poll_hits++;
			else
				t->n.busy_poll_misses++;
			t->metrics_dirty = true;
			return found;
		}
		uncork_queues(t); /* what a command posted leaves before the CPU goes */
		(void)sched_yield();
	}
}

/* Wait for the turn's events: a poll of the sessions first while the window is open. */
static int wait_events(struct target *t, struct epoll_event *ev, int max)
{
	int timeout = loop_timeout(t);
	/* A loop that just had work (the last turn moved a command or had an event) measures its waits. */
	bool measured = timeout != 0 && t->bp.max_us && !t->quiet_turns;
	uint64_t start_ns = measured ? clock_mono_ns() : 0;
	if (measured && busy_poll_window(&t->bp) && poll_sessions(t, start_ns))
		return epoll_wait(t->epfd, ev, max, 0); /* the fds' events besides */
	uncork_queues(t);
	int n = epoll_wait(t->epfd, ev, max, timeout);
	if (measured)
		busy_poll_waited(&t->bp, (clock_mono_ns() - start_ns) / 1000u, n > 0);
	return n;
}

static void turn(struct target *t)
{
	struct epoll_event ev[64];
	t->turn++; /* every identity's bytes start again */
	uint64_t moves = t->moves; /* the wait's poll counts */
	int n = wait_events(t, ev, 64);
	if (n < 0 && errno != EINTR) {
		blkd_log("error", "epoll", "error=%s", log_q(strerror(errno)));
		t->stop = true;
		return;
	}
	for (int i = 0; i < n; i++) {
		if (ev[i].data.ptr == &t->signal_tag)
			drain_signals(t);
		else if (ev[i].data.ptr == &t->listener_tag)
			accept_some(t);
		else if (ev[i].data.ptr == &t->pool_tag)
			take_stored(t);
		else if (ev[i].data.ptr == &t->trust_tag)
			daemon_reload_trust(&t->reload, t->trust);
		else
			((struct queue *)ev[i].data.ptr)->s->kick = true;
	}
	uint64_t now = clock_coarse_ms();
	bool sweep = now - t->last_sweep_ms >= TICK_MS;
	if (sweep)
		t->last_sweep_ms = now;
	serve_lines(t);
	step_sessions(t, now, sweep);
	send_completions(t);
	uncork_queues(t); /* the turn's data WRITEs and completions: one doorbell per queue pair */
	for (struct session *s = t->sessions, *next; s; s = next) {
		next = s->next;
		if (s->dead && !s->jobs)
			session_free(t, s);
	}
	if (t->reload_pending)
		daemon_reload_run(&t->reload);
	if (sweep)
		daemon_reload_cert_expiry(&t->reload);
	bool quiet = n <= 0 && t->moves == moves;
	t->quiet_turns = quiet ? t->quiet_turns + (t->quiet_turns < 16) : 0;
	write_metrics(t, now, false);
}

/* The end: every session closed, the store I/O that runs back, the last metrics out. */
static void target_shutdown(struct target *t)
{
	for (struct session *s = t->sessions; s; s = s->next)
		session_close(s, "target shutting down");
	offload_stop(t->pool); /* the store I/O that runs ends; the sessions get it back and release */
	take_stored(t);
	while (t->sessions)
		session_free(t, t->sessions);
	write_metrics(t, clock_coarse_ms(), true);
}

static void target_free(struct target *t)
{
	if (t->pool)
		offload_free(t->pool);
	admission_free(t->admission);
	if (t->listener)
		rsec_listener_free(t->listener);
	if (t->ctx)
		rsec_ctx_free(t->ctx);
	for (unsigned i = 0; i < t->n_exports; i++)
		store_close(&t->exports[i].store);
	free(t->exports);
	if (t->epfd >= 0)
		close(t->epfd);
	if (t->sigfd >= 0)
		close(t->sigfd);
	audit_close();
	free(t->msg);
}

int target_run(struct blkd_conf *conf, blkd_conf_reader reread, void *arg, struct trust_watch *trust)
{
	struct target t = { .conf = conf, .live = conf, .reread = reread, .reread_arg = arg, .epfd = -1, .sigfd = -1,
			    .trust = trust };
	int status = 1;
	t.msg_cap = BLK_CMD_MAX;
	t.msg = malloc(t.msg_cap);
	busy_poll_init(&t.bp, conf->busy_poll_us);
	if (audit_open(conf->audit_log) < 0) {
		blkd_log("error", "audit", "path=%s error=%s", log_q(conf->audit_log), log_q(strerror(errno)));
		goto out;
	}
	struct admission_limits adm;
	admission_limits_for(&adm, conf->max_sessions, conf->max_handshakes_per_source,
			     conf->handshake_rate_per_source);
	t.admission = admission_new(&adm);
	if (!t.msg || !t.admission || open_exports(&t) < 0 || open_context(&t) < 0)
		goto out;
	/* Store I/O is on every command's path: the workers keep the loop's priority. */
	t.pool = offload_new_nice(conf->store_threads, STORE_JOBS_MAX, 0);
	if (!t.pool) {
		blkd_log("error", "threads", "store_threads=%u error=\"cannot start them\"", conf->store_threads);
		goto out;
	}
	if (open_events(&t) < 0) {
		blkd_log("error", "events", "error=%s", log_q(strerror(errno)));
		goto out;
	}
	blkd_log("info", "listening", "addr=%s port=%u exports=%u", log_q(conf->listen_addr), conf->listen_port,
		 t.n_exports);
	t.reload = (struct daemon_reload){ .ops = &reload_ops, .svc = &t, .ctx = t.ctx, .certificates = true,
					   .n = &t.n.reload, .pending = &t.reload_pending };
	daemon_reload_cert_expiry(&t.reload);
	write_metrics(&t, clock_coarse_ms(), true);
	while (!t.stop)
		turn(&t);
	target_shutdown(&t);
	status = 0;
out:
	target_free(&t);
	return status;
}
