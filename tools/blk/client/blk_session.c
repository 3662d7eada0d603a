/* SPDX-License-Identifier: MIT */
/* The asynchronous core: a session, its queues, commands in flight. */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include <openssl/crypto.h>

#include "blk_client.h"
#include "busy_poll.h"
#include "clock.h"
#include "blk_data.h"
#include "rdmasec.h"

#define DEFAULT_DEPTH 32u
#define DEFAULT_TIMEOUT_MS 30000
#define WAIT_SLICE_MS 100 /* the longest one poll() sleeps: deadlines are checked between */
#define PAGE 4096u
#define DEFAULT_POOL_WINDOW_S 10u

struct cmd_slot {
	struct blk_io io;
	uint64_t seq; /* of its last capsule: its transfer's nonce */
	uint64_t deadline_ms;
	unsigned tries;
	bool resend; /* its transfer failed: send it again when the queue lets us */
	bool in_window; /* its last capsule named a pool window (window): counted in that window's users */
	uint16_t window;
};

struct queue {
	struct rsec_conn *conn;
	struct rsec_region *region; /* one slot per cid, all of it granted to the target (the pool) */
	uint8_t *base;
	/* Pool windows (docs/blk.md, "Pool windows"): new commands name window; the one before is revoked once
	 * no command of it is in flight (retiring until then); a new one is granted pool_window_ms after. */
	uint16_t window;
	bool retiring;
	uint64_t window_since_ms;
	uint64_t window_grant[2][2]; /* by window parity, by enum blk_pool_dir */
	unsigned window_users[2];
	struct blk_data_keys *keys; /* the queue's data keys by key id: every transfer through the pool is sealed */
	uint64_t next_seq;
	unsigned index;
	struct blk_cids free;
	struct blk_expect expect[BLK_QD_MAX];
	struct cmd_slot cmd[BLK_QD_MAX];
	unsigned inflight, resends;
	bool corked; /* commands submitted since the last poll: they go in one doorbell (rsec_conn_cork) */
	uint8_t *tx; /* one capsule: header + in-capsule data */
	size_t tx_cap;
};

struct blk_session {
	struct rsec_ctx *ctx;
	struct queue *q;
	unsigned nq;
	struct blk_open_reply info;
	uint32_t io_max;
	size_t slot_size;
	int timeout_ms;
	uint64_t pool_window_ms;
	bool busy_poll;
	struct busy_poll bp; /* how long a wait polls the queues before it sleeps */
	bool ended;
	char error[256];
};

/* End the session once, with its reason; every command in flight is then reported failed. */
static void end_session(struct blk_session *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void end_session(struct blk_session *s, const char *fmt, ...)
{
	if (s->ended)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->error, sizeof(s->error), fmt, ap);
	va_end(ap);
	s->ended = true;
	if (s->q && s->q[0].conn && rsec_conn_state(s->q[0].conn) != RSEC_CONN_CLOSED)
		(void)rsec_conn_close(s->q[0].conn, s->error);
}

static void set_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || !errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static const char *conn_why(struct rsec_conn *c, int rc)
{
	return c && *rsec_conn_error(c) ? rsec_conn_error(c) : rsec_strerror(rc);
}

static int make_ctx(const struct blk_client_opts *o, uint16_t depth, uint16_t queues, struct rsec_ctx **ctx,
		    char *err, size_t errlen)
{
	char ca[4096], cert[4096], key[4096];
	if (!o->certs_dir || snprintf(ca, sizeof(ca), "%s/ca.pem", o->certs_dir) >= (int)sizeof(ca) ||
	    snprintf(cert, sizeof(cert), "%s/client.pem", o->certs_dir) >= (int)sizeof(cert) ||
	    snprintf(key, sizeof(key), "%s/client.key", o->certs_dir) >= (int)sizeof(key)) {
		set_err(err, errlen, "no certificate directory, or its path is too long");
		return -EINVAL;
	}
	struct rsec_ctx_attr a = {
		.device = o->device, .local_addr = o->source, .ca_file = ca, .cert_file = cert, .key_file = key,
		/* Completions are 16 bytes: small receive buffers, one per command in flight and some. */
		.recv_slots = depth + 8u < 16u ? 16u : depth + 8u, .slot_size = 4096,
		.handshake_timeout_ms = o->timeout_ms ? o->timeout_ms : DEFAULT_TIMEOUT_MS,
	};
	a.comp_mask |= RSEC_CTX_ATTR_QPS | RSEC_CTX_ATTR_REKEY;
	a.max_qps = queues;
	a.rekey_s = o->rekey_s ? o->rekey_s : RSEC_DEFAULT_REKEY_S;
	a.rekey_bytes = o->rekey_bytes ? o->rekey_bytes : RSEC_DEFAULT_REKEY_BYTES;
	if (o->busy_poll) {
		a.comp_mask |= RSEC_CTX_ATTR_POLL;
		a.poll_mode = RSEC_POLL_BUSY;
	}
	char why[256] = "";
	int rc = rsec_ctx_new(&a, ctx, why, sizeof(why));
	if (rc < 0) {
		set_err(err, errlen, "%s (%s)", why[0] ? why : "cannot set up RDMA and TLS", rsec_strerror(rc));
		return -EIO;
	}
	return 0;
}

/* The reply must be one the target may give to what we asked. */
static const char *reply_violation(const struct blk_open_reply *r, const struct blk_open *asked)
{
	if (r->version != BLK_VERSION)
		return "OPEN_REPLY of another protocol version than the OPEN's";
	if (r->queue_depth > asked->queue_depth || r->queues > asked->queues)
		return "OPEN_REPLY grants more than was asked";
	if (r->queue_depth > BLK_QD_GRANT_MAX)
		return "OPEN_REPLY grants a queue depth over the grants a connection holds (RSEC_MAX_GRANTS)";
	if ((asked->flags & BLK_OPEN_WRITE) && (r->flags & BLK_EXPORT_READ_ONLY))
		return "OPEN_REPLY accepts a write-open as read-only";
	return NULL;
}

static int exchange_open(struct blk_session *s, struct rsec_conn *c, const struct blk_open *m, char *err,
			 size_t errlen)
{
	uint8_t buf[BLK_OPEN_MAX];
	size_t n = blk_open_encode(m, buf, sizeof(buf));
	if (!n) {
		set_err(err, errlen, "export name \"%s\" is not 1..%u of [A-Za-z0-9._-]", m->name, BLK_NAME_MAX);
		return -EINVAL;
	}
	int rc = rsec_send(c, buf, n, s->timeout_ms);
	uint8_t rx[BLK_OPEN_REPLY_LEN + 1];
	size_t len = 0;
	if (rc == 0)
		rc = rsec_recv(c, rx, sizeof(rx), &len, s->timeout_ms);
	if (rc < 0) {
		set_err(err, errlen, "OPEN of \"%s\" failed: %s", m->name, conn_why(c, rc));
		return -EIO;
	}
	const char *why = NULL;
	if (!blk_open_reply_decode(rx, len, &s->info, &why) ||
	    (s->info.status == BLK_S_OK && (why = reply_violation(&s->info, m)))) {
		set_err(err, errlen, "protocol violation by the target: %s", why);
		return -EPROTO;
	}
	if (s->info.status != BLK_S_OK) {
		set_err(err, errlen, "the target refused export \"%s\": %s", m->name, blk_status_name(s->info.status));
		return -blk_status_errno(s->info.status);
	}
	return 0;
}

static size_t round_up(size_t v, size_t unit)
{
	return (v + unit - 1) / unit * unit;
}

/* Grant the whole pool as window w: one grant the target may only read, one it may only write. */
static int window_grant(const struct blk_session *s, struct queue *q, uint16_t w)
{
	static const unsigned access[2] = { [BLK_POOL_TARGET_READS] = RSEC_ACCESS_READ,
					    [BLK_POOL_TARGET_WRITES] = RSEC_ACCESS_WRITE };
	size_t len = s->slot_size * s->info.queue_depth;
	uint64_t *ids = q->window_grant[w & 1];
	int rc = rsec_grant(q->conn, q->region, 0, len, access[0], 0, blk_window_tag(w, BLK_POOL_TARGET_READS), &ids[0]);
	if (rc == 0) {
		rc = rsec_grant(q->conn, q->region, 0, len, access[1], 0, blk_window_tag(w, BLK_POOL_TARGET_WRITES),
				&ids[1]);
		if (rc < 0)
			(void)rsec_revoke(q->conn, ids[0]); /* never announced to a command: its failure changes nothing */
	}
	return rc;
}

/* The slots, registered once; the pool granted as window 1 (docs/blk.md, "Data transfers"). */
static int queue_setup(struct blk_session *s, struct queue *q, char *err, size_t errlen)
{
	size_t len = s->slot_size * s->info.queue_depth;
	blk_cids_init(&q->free, s->info.queue_depth);
	q->tx_cap = BLK_CMD_HDR + s->info.max_inline;
	q->tx = malloc(q->tx_cap);
	int rc = q->tx ? rsec_region_alloc(q->conn, len, RSEC_ACCESS_READ | RSEC_ACCESS_WRITE, &q->region) : RSEC_E_NOMEM;
	q->window = 1;
	q->window_since_ms = clock_coarse_ms();
	if (rc == 0)
		rc = window_grant(s, q, q->window);
	if (rc == 0)
		rc = (q->keys = blk_data_keys_new(q->conn, (uint16_t)q->index)) ? 0 : RSEC_E_NOMEM;
	if (rc < 0) {
		set_err(err, errlen, "cannot register and grant %zu bytes of I/O slots: %s", len, conn_why(q->conn, rc));
		return -ENOMEM;
	}
	q->base = rsec_region_addr(q->region);
	return 0;
}

static int add_queues(struct blk_session *s, char *err, size_t errlen)
{
	for (unsigned i = 1; i < s->nq; i++) {
		int rc = rsec_conn_add_qp(s->q[0].conn, s->timeout_ms, &s->q[i].conn);
		if (rc < 0) {
			set_err(err, errlen, "cannot add I/O queue %u: %s", i, conn_why(s->q[0].conn, rc));
			return -EIO;
		}
	}
	for (unsigned i = 0; i < s->nq; i++) {
		s->q[i].index = i;
		int rc = queue_setup(s, &s->q[i], err, errlen);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static void limits_from_reply(struct blk_session *s, const struct blk_client_opts *o)
{
	uint32_t want = o->io_max ? o->io_max : BLK_CLIENT_IO_MAX_DEFAULT;
	uint32_t io_max = want < s->info.max_transfer ? want : s->info.max_transfer;
	io_max -= io_max % s->info.block_size;
	s->io_max = io_max ? io_max : s->info.block_size;
	s->slot_size = round_up(s->io_max, PAGE);
	s->nq = s->info.queues;
}

int blk_session_open(const struct blk_client_opts *o, struct blk_session **out, char *err, size_t errlen)
{
	struct blk_open m = { .flags = o->write ? BLK_OPEN_WRITE : 0, .queue_depth = o->queue_depth ? o->queue_depth : DEFAULT_DEPTH,
			      .queues = o->queues ? o->queues : 1 };
	*out = NULL;
	if (!o->host || !o->export_name || strlen(o->export_name) > BLK_NAME_MAX || m.queue_depth > BLK_QD_MAX ||
	    m.queues > BLK_QUEUES_MAX || o->pool_window_s > BLK_POOL_WINDOW_S_MAX) {
		set_err(err, errlen, "bad session options (host, export name, queue depth 1..%u, queues 1..%u, "
			"pool window 1..%u s)", BLK_QD_MAX, BLK_QUEUES_MAX, BLK_POOL_WINDOW_S_MAX);
		return -EINVAL;
	}
	memcpy(m.name, o->export_name, strlen(o->export_name) + 1);
	struct blk_session *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->timeout_ms = o->timeout_ms ? o->timeout_ms : DEFAULT_TIMEOUT_MS;
	s->pool_window_ms = 1000u * (uint64_t)(o->pool_window_s ? o->pool_window_s : DEFAULT_POOL_WINDOW_S);
	s->busy_poll = o->busy_poll;
	busy_poll_init(&s->bp, o->busy_poll_us);
	s->q = calloc(m.queues, sizeof(*s->q));
	int rc = s->q ? make_ctx(o, m.queue_depth, m.queues, &s->ctx, err, errlen) : -ENOMEM;
	if (rc == 0) {
		uint16_t port = o->port ? o->port : BLK_DEFAULT_PORT;
		int crc = rsec_connect(s->ctx, o->host, port, o->server_name, s->timeout_ms, &s->q[0].conn);
		if (crc < 0) {
			set_err(err, errlen, "cannot connect to %s:%u: %s", o->host, port, conn_why(s->q[0].conn, crc));
			rc = -ECONNREFUSED;
		}
	}
	if (rc == 0)
		rc = exchange_open(s, s->q[0].conn, &m, err, errlen);
	if (rc == 0) {
		limits_from_reply(s, o);
		rc = add_queues(s, err, errlen);
	}
	if (rc < 0) {
		s->ended = true;
		blk_session_close(s);
		return rc;
	}
	*out = s;
	return 0;
}

void blk_session_close(struct blk_session *s)
{
	if (!s)
		return;
	if (s->q && s->q[0].conn && !s->ended)
		(void)rsec_conn_close(s->q[0].conn, "client done");
	unsigned n = !s->q ? 0 : s->nq ? s->nq : 1; /* queue 0 may exist before OPEN_REPLY said how many */
	for (unsigned i = n; i-- > 0;) {
		rsec_region_free(s->q[i].region);
		rsec_conn_free(s->q[i].conn);
		blk_data_keys_free(s->q[i].keys);
		free(s->q[i].tx);
	}
	free(s->q);
	rsec_ctx_free(s->ctx);
	free(s);
}

const struct blk_open_reply *blk_session_info(const struct blk_session *s)
{
	return &s->info;
}

unsigned blk_session_queues(const struct blk_session *s)
{
	return s->nq;
}

uint32_t blk_session_io_max(const struct blk_session *s)
{
	return s->io_max;
}

const char *blk_session_error(const struct blk_session *s)
{
	return s->error;
}

const char *blk_session_peer(const struct blk_session *s)
{
	return rsec_conn_peer(s->q[0].conn);
}

unsigned blk_queue_inflight(const struct blk_session *s, unsigned q)
{
	return q < s->nq ? s->q[q].inflight : 0;
}

/* A library failure of a call that touches the connection: retry later, or the session is over. */
static int after_failure(struct blk_session *s, struct queue *q, int rc, const char *what)
{
	if (rc == RSEC_E_AGAIN)
		return -EAGAIN;
	end_session(s, "%s failed: %s", what, conn_why(q->conn, rc));
	return -EIO;
}

/* What the transfer of the command under cid is bound to (blk_data.h). */
static struct blk_data_ctx data_ctx(const struct queue *q, uint16_t cid, enum blk_data_dir dir)
{
	const struct cmd_slot *c = &q->cmd[cid];
	return (struct blk_data_ctx){ .dir = dir, .queue = (uint16_t)q->index, .cid = cid, .opcode = c->io.opcode,
				      .offset = c->io.offset, .seq = c->seq, .length = c->io.length };
}

/* The window before the current one is revoked once no command goes through it any more. */
static int window_retire(struct blk_session *s, struct queue *q)
{
	unsigned old = !(q->window & 1);
	if (!q->retiring || q->window_users[old] || s->ended)
		return 0;
	for (unsigned d = 0; d < 2; d++) {
		int rc = rsec_revoke(q->conn, q->window_grant[old][d]);
		if (rc < 0 && rc != RSEC_E_GRANT) /* RSEC_E_GRANT: this one went on an earlier try */
			return after_failure(s, q, rc, "revoking a pool window");
	}
	q->retiring = false;
	return 0;
}

/* Once the window has served pool_window_ms, the next one is granted and new commands name it. Never
 * more than two: not before the one before was revoked. */
static int window_rotate(struct blk_session *s, struct queue *q)
{
	uint64_t now = clock_coarse_ms();
	if (q->retiring || now - q->window_since_ms < s->pool_window_ms)
		return 0;
	uint16_t next = blk_window_next(q->window);
	int rc = window_grant(s, q, next);
	if (rc == RSEC_E_AGAIN || rc == RSEC_E_LIMIT)
		return 0; /* the send queue or the grant table is full now: at the next command */
	if (rc < 0)
		return after_failure(s, q, rc, "granting a pool window");
	q->window = next;
	q->window_since_ms = now;
	q->retiring = true;
	return window_retire(s, q);
}

/* A command with a pool transfer names the window of now, each time it is sent. */
static void window_use(struct queue *q, struct cmd_slot *c)
{
	if (c->in_window)
		q->window_users[c->window & 1]--;
	c->in_window = true;
	c->window = q->window;
	q->window_users[c->window & 1]++;
}

/* Build and send the capsule of the command under cid (its slot filled in): a new sequence number each time. */
static int send_cmd(struct blk_session *s, struct queue *q, uint16_t cid)
{
	struct cmd_slot *c = &q->cmd[cid];
	c->seq = ++q->next_seq;
	struct blk_cmd m = { .opcode = c->io.opcode, .flags = c->io.flags, .cid = cid, .offset = c->io.offset,
			     .length = c->io.length, .seq = c->seq };
	enum blk_pool_dir dir;
	uint8_t *slot = q->base + (size_t)cid * s->slot_size;
	size_t data = 0;
	if (m.opcode == BLK_OP_WRITE && m.length <= s->info.max_inline) {
		m.flags |= BLK_CMD_INLINE;
		memcpy(q->tx + BLK_CMD_HDR, c->io.buf, m.length);
		data = m.length;
	} else if (m.opcode == BLK_OP_WRITE) {
		/* Only ciphertext goes into the pool the target may read, under the keys of now. */
		struct blk_data_ctx x = data_ctx(q, cid, BLK_DATA_TO_TARGET);
		struct blk_data_key *key = NULL;
		m.key_id = rsec_conn_key_id(q->conn);
		if (blk_data_keys_get(q->keys, m.key_id, &key) < 0 || !blk_data_seal(key, &x, c->io.buf, slot, m.mac)) {
			end_session(s, "cannot seal a WRITE's data");
			return -EIO;
		}
		m.pool_off = (uint32_t)((size_t)cid * s->slot_size);
	} else if (m.opcode == BLK_OP_READ) {
		m.pool_off = (uint32_t)((size_t)cid * s->slot_size);
	}
	if (blk_cmd_pool_dir(&m, &dir))
		m.window = q->window;
	size_t n = blk_cmd_encode_hdr(&m, q->tx, q->tx_cap);
	int rc = n ? rsec_send(q->conn, q->tx, n + data, 0) : RSEC_E_INVAL;
	if (rc < 0)
		return rc == RSEC_E_INVAL ? -EINVAL : after_failure(s, q, rc, "sending a command");
	if (m.window) /* counted once it went: a capsule not sent holds no window */
		window_use(q, c);
	c->deadline_ms = clock_coarse_ms() + (uint64_t)s->timeout_ms;
	return 0;
}

int blk_queue_submit(struct blk_session *s, unsigned qi, const struct blk_io *io)
{
	if (s->ended)
		return -EIO;
	if (qi >= s->nq)
		return -EINVAL;
	int rc = blk_io_check(io, &s->info, s->io_max);
	if (rc < 0)
		return rc;
	struct queue *q = &s->q[qi];
	/* One capsule may wait for credits per connection: do not start what cannot leave now. */
	if (rsec_send_queued(q->conn) || q->resends)
		return -EAGAIN;
	rc = window_rotate(s, q);
	if (rc < 0)
		return rc;
	int cid = blk_cids_take(&q->free);
	if (cid < 0)
		return -EAGAIN;
	q->cmd[cid] = (struct cmd_slot){ .io = *io };
	if (!q->corked) {
		rsec_conn_cork(q->conn);
		q->corked = true;
	}
	rc = send_cmd(s, q, (uint16_t)cid);
	if (rc < 0) {
		(void)blk_cids_give(&q->free, (uint16_t)cid);
		return rc;
	}
	q->expect[cid] = (struct blk_expect){ .busy = true, .opcode = io->opcode, .length = io->length };
	q->inflight++;
	return 0;
}

static void finish(struct queue *q, unsigned qi, uint16_t cid, int error, uint16_t status, struct blk_done *d)
{
	*d = (struct blk_done){ .cookie = q->cmd[cid].io.cookie, .error = error, .status = status, .queue = qi };
	if (q->cmd[cid].in_window)
		q->window_users[q->cmd[cid].window & 1]--;
	q->cmd[cid].in_window = false;
	q->expect[cid].busy = false;
	q->expect[cid].answered = false;
	q->cmd[cid].resend = false;
	q->inflight--;
	(void)blk_cids_give(&q->free, cid);
}

/* A completed READ: its data is the command's result once it opened, out of the pool into the caller's
 * buffer (plaintext never sits where the target can reach). 0, or EAGAIN: not authentic (buffer wiped). */
static int open_read(struct blk_session *s, struct queue *q, const struct blk_cpl *cpl)
{
	struct cmd_slot *c = &q->cmd[cpl->cid];
	struct blk_data_ctx x = data_ctx(q, cpl->cid, BLK_DATA_TO_CLIENT);
	struct blk_data_key *key = NULL;
	if (blk_data_keys_get(q->keys, cpl->key_id, &key) < 0)
		return EAGAIN; /* a key id we no longer hold: the read goes again */
	return blk_data_open(key, &x, q->base + (size_t)cpl->cid * s->slot_size, c->io.buf, cpl->mac) ? 0 : EAGAIN;
}

/* A transfer that failed for a reason a rebuild or a forged packet can cause goes again, a few times. */
static bool try_again(const struct blk_session *s, struct queue *q, uint16_t cid)
{
	struct cmd_slot *c = &q->cmd[cid];
	if (c->tries >= BLK_CLIENT_RETRIES)
		return false;
	c->tries++;
	c->resend = true;
	q->resends++;
	/* Waiting to go out again is bounded like waiting for a completion. */
	c->deadline_ms = clock_coarse_ms() + (uint64_t)s->timeout_ms;
	return true;
}

/* One valid completion: 1 if it produced *d, 0 if the command goes again. Until it is sent again or
 * finished, another completion for it is a violation (blk_cpl_violation). */
static int complete_cmd(struct blk_session *s, struct queue *q, unsigned qi, const struct blk_cpl *cpl,
			struct blk_done *d)
{
	struct cmd_slot *c = &q->cmd[cpl->cid];
	q->expect[cpl->cid].answered = true;
	int error = blk_status_errno(cpl->status);
	if (cpl->status == BLK_S_OK && c->io.opcode == BLK_OP_READ)
		error = open_read(s, q, cpl);
	/* A forged packet or a rebuild can spoil a transfer: it goes again, a few times. */
	bool transient = cpl->status == BLK_S_TRANSFER || error == EAGAIN;
	if (transient && !s->ended && try_again(s, q, cpl->cid))
		return 0;
	finish(q, qi, cpl->cid, error == EAGAIN ? EIO : error, cpl->status, d);
	return 1;
}

/* One message from the target on queue qi: a completion we expect, or the end of the session. */
static int take_message(struct blk_session *s, unsigned qi, const uint8_t *msg, size_t len, struct blk_done *d)
{
	struct queue *q = &s->q[qi];
	struct blk_cpl cpl;
	const char *why = NULL;
	if (blk_type_of(msg, len) != BLK_CPL)
		why = "a message other than a completion";
	else if (!blk_cpl_decode(msg, len, &cpl, &why))
		;
	else
		why = blk_cpl_violation(&cpl, q->expect, q->free.depth);
	if (why) {
		end_session(s, "protocol violation by the target on queue %u: %s", qi, why);
		return 0;
	}
	return complete_cmd(s, q, qi, &cpl, d);
}

static unsigned drain_queue(struct blk_session *s, unsigned qi, struct blk_done *d, unsigned max)
{
	struct queue *q = &s->q[qi];
	unsigned n = 0;
	while (n < max && !s->ended) {
		uint8_t msg[BLK_CPL_LEN + 1];
		size_t len = 0;
		int rc = rsec_recv(q->conn, msg, sizeof(msg), &len, 0);
		if (rc == RSEC_E_AGAIN)
			break;
		if (rc == RSEC_E_RANGE) {
			end_session(s, "protocol violation by the target on queue %u: a message too long", qi);
			break;
		}
		if (rc < 0) {
			end_session(s, "connection lost: %s", conn_why(q->conn, rc));
			break;
		}
		n += (unsigned)take_message(s, qi, msg, len, d + n);
	}
	return n;
}

/* Commands whose transfer failed go out again as soon as their queue allows. */
static unsigned resend_queue(struct blk_session *s, unsigned qi, struct blk_done *d, unsigned max)
{
	struct queue *q = &s->q[qi];
	unsigned n = 0;
	for (unsigned cid = 0; cid < q->free.depth && q->resends && n < max && !s->ended; cid++) {
		if (!q->cmd[cid].resend)
			continue;
		if (rsec_send_queued(q->conn))
			break;
		int rc = send_cmd(s, q, (uint16_t)cid);
		if (rc == -EAGAIN)
			break;
		q->cmd[cid].resend = false;
		q->expect[cid].answered = false; /* out again: its next completion is due */
		q->resends--;
		if (rc < 0)
			finish(q, qi, (uint16_t)cid, EIO, BLK_S_TRANSFER, &d[n++]);
	}
	return n;
}

/* The session ended: every command still in flight is reported failed. */
static int report_dropped(struct blk_session *s, struct blk_done *d, unsigned max)
{
	unsigned n = 0;
	for (unsigned qi = 0; qi < s->nq; qi++) {
		struct queue *q = &s->q[qi];
		for (unsigned cid = 0; cid < q->free.depth && n < max; cid++) {
			if (!q->expect[cid].busy)
				continue;
			if (q->cmd[cid].resend)
				q->resends--;
			finish(q, qi, (uint16_t)cid, EIO, BLK_S_IO, &d[n++]);
		}
	}
	return n ? (int)n : -EIO;
}

static void check_deadlines(struct blk_session *s)
{
	uint64_t now = clock_coarse_ms();
	for (unsigned qi = 0; qi < s->nq; qi++) {
		const struct queue *q = &s->q[qi];
		for (unsigned cid = 0; cid < q->free.depth; cid++) {
			if (!q->expect[cid].busy || now <= q->cmd[cid].deadline_ms)
				continue;
			if (q->cmd[cid].resend)
				end_session(s, "command %u of queue %u could not be sent again within %d ms (%zu bytes "
					       "waiting for credits)", cid, qi, s->timeout_ms, rsec_send_queued(q->conn));
			else
				end_session(s, "command %u of queue %u got no completion within %d ms", cid, qi,
					    s->timeout_ms);
			return;
		}
	}
}

/* Sleep on the queues' fds and extra_fd (if >= 0) for up to ms: whether one woke us. */
static bool wait_any(struct blk_session *s, int extra_fd, int ms)
{
	if (s->busy_poll || ms <= 0)
		return false;
	struct pollfd p[BLK_QUEUES_MAX + 1];
	unsigned n = 0;
	for (; n < s->nq; n++)
		p[n] = (struct pollfd){ .fd = rsec_conn_fd(s->q[n].conn), .events = POLLIN };
	if (extra_fd >= 0)
		p[n++] = (struct pollfd){ .fd = extra_fd, .events = POLLIN };
	return poll(p, n, ms) > 0;
}

static unsigned inflight(const struct blk_session *s)
{
	unsigned n = 0;
	for (unsigned i = 0; i < s->nq; i++)
		n += s->q[i].inflight;
	return n;
}

static bool interrupted(const atomic_bool *interrupt)
{
	return interrupt && atomic_load_explicit(interrupt, memory_order_relaxed);
}

/*
 * Before sleeping while a few commands are in flight (busy_poll_pays): poll the queues'
 * completions for the window (busy_poll.h), within the turn (no look at the fds: no system
 * call but sched_yield). How many commands it finished.
 */
static unsigned poll_window(struct blk_session *s, struct blk_done *d, unsigned max, const atomic_bool *interrupt)
{
	uint64_t end = clock_mono_ns() + (uint64_t)busy_poll_window(&s->bp) * 1000u;
	unsigned n = 0;
	/* The clock every few rounds: under an emulator a precise read is a system call. */
	for (unsigned round = 1; !n && !s->ended && !interrupted(interrupt); round++) {
		if (round % 8 == 0 && clock_mono_ns() >= end)
			break;
		(void)sched_yield();
		for (unsigned qi = 0; qi < s->nq && n < max; qi++)
			n += drain_queue(s, qi, d + n, max - n);
	}
	return n;
}

/* The commands submitted since the last poll or wait leave, one doorbell per queue. */
static void uncork_all(struct blk_session *s)
{
	for (unsigned qi = 0; qi < s->nq; qi++)
		if (s->q[qi].corked) {
			s->q[qi].corked = false;
			int rc = rsec_conn_uncork(s->q[qi].conn);
			if (rc < 0)
				(void)after_failure(s, &s->q[qi], rc, "cannot send commands");
		}
}

int blk_session_wait(struct blk_session *s, struct blk_done *d, unsigned max, int extra_fd,
		     const atomic_bool *interrupt, int timeout_ms)
{
	if (!max)
		return -EINVAL;
	uncork_all(s);
	if (s->ended)
		return 0;
	uint64_t t0 = clock_mono_ns();
	bool measured = busy_poll_pays(&s->bp, inflight(s));
	unsigned n = measured && busy_poll_window(&s->bp) ? poll_window(s, d, max, interrupt) : 0;
	bool woken = n || interrupted(interrupt) || wait_any(s, extra_fd, timeout_ms);
	if (measured)
		busy_poll_waited(&s->bp, (clock_mono_ns() - t0) / 1000u, woken);
	return (int)n;
}

int blk_session_poll(struct blk_session *s, struct blk_done *d, unsigned max, int timeout_ms)
{
	uint64_t deadline = clock_coarse_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
	if (!max)
		return -EINVAL;
	uncork_all(s);
	for (;;) {
		if (s->ended)
			return report_dropped(s, d, max);
		/* A turn: each queue's fds are looked at once for the resends and receives below. */
		for (unsigned qi = 0; qi < s->nq; qi++)
			rsec_conn_turn(s->q[qi].conn);
		unsigned n = 0;
		for (unsigned qi = 0; qi < s->nq && n < max; qi++) {
			n += resend_queue(s, qi, d + n, max - n);
			n += drain_queue(s, qi, d + n, max - n);
			(void)window_retire(s, &s->q[qi]); /* a failure ends the session: seen below */
		}
		if (n)
			return (int)n;
		if (s->ended)
			continue;
		check_deadlines(s);
		uint64_t now = clock_coarse_ms();
		if (s->ended)
			continue;
		if (now >= deadline)
			return 0;
		uint64_t left = deadline - now;
		int found = blk_session_wait(s, d, max, -1, NULL, left < WAIT_SLICE_MS ? (int)left : WAIT_SLICE_MS);
		if (found)
			return found;
	}
}
