/* SPDX-License-Identifier: MIT */
/*
 * One-sided operations through the peer's grants. rsec_post chains RDMA
 * WRITE and READ work requests from registered regions onto the QP without
 * waiting; ops.c keeps them in posting order and decides which are
 * signaled; rsec_poll hands their completions back in batches. rsec_write
 * and rsec_read are one operation each plus the one wait of conn.c.
 *
 * Nothing the device reports is used before ops.c has matched it against
 * what is in flight. An operation outlives neither its connection nor its
 * buffer: when the connection fails, its QP is in the error state and the
 * operations end with the flushed completions, or when the QP is destroyed.
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "grant.h"
#include "onesided.h"
#include "sealed_post.h"

#define CHAIN_MAX 32     /* work requests per ibv_post_send */
/*
 * A blocking call's transfer goes in pieces of at most this many bytes, one
 * work request each: a READ response lost in the network is replayed from its
 * piece's start, and no single request keeps the QP's retry budget for long.
 */
#define PIECE_MAX (1u << 20)
#define DRAIN_MS 1000    /* how long a failed connection's flushed completions are waited for */

int rsec_onesided_setup(struct rsec_path *path)
{
	return rsec_ops_init(&path->ops, path->cfg.max_inflight);
}

/* The operation's buffer is the device's no more: a blocking call's own registration goes, a region has one user less. */
static void release_owner(struct rsec_path *path, struct rsec_op_slot *s)
{
	if (s->reporting == RSEC_OP_PIECE)
		return;
	if (s->reporting != RSEC_OP_WAITER)
		rsec_region_unuse(path, s->owner);
	else if (s->owner) /* not the staging buffer, which stays */
		(void)ibv_dereg_mr(s->owner);
}

static void release(void *arg, struct rsec_op_slot *s, int status)
{
	struct rsec_path *path = arg;
	if (status == 0) {
		path->onesided_bytes += s->len;
		if (s->reporting != RSEC_OP_PIECE) /* an operation in pieces counts once, with its last */
			*(s->op == RSEC_OP_WRITE ? &path->stats.rdma_writes : &path->stats.rdma_reads) += 1;
	}
	release_owner(path, s);
	if (s->then)
		rsec_sealed_write_end(path, s->then, status);
}

int rsec_onesided_on_wc(struct rsec_path *path, const struct ibv_wc *wc)
{
	char why[160];
	int status = wc->status == IBV_WC_SUCCESS ? 0 : RSEC_E_QP;
	if (rsec_ops_complete(&path->ops, RSEC_WR_INDEX(wc->wr_id), status, release, path, why, sizeof(why)) < 0)
		return rsec_fault_fail(&path->fault, RSEC_E_VERBS, "%s", why);
	return 0;
}

/* Deregistered first, so the device can no longer reach it; it held the application's bytes. */
static void stage_free(struct rsec_path *path)
{
	if (path->stage_mr)
		(void)ibv_dereg_mr(path->stage_mr);
	path->stage_mr = NULL;
	if (path->stage) {
		OPENSSL_cleanse(path->stage, RSEC_STAGE_SIZE);
		(void)munmap(path->stage, RSEC_STAGE_SIZE);
	}
	path->stage = NULL;
}

void rsec_onesided_teardown(struct rsec_path *path)
{
	if (path->ops.busy) {
		if (path->have_qp && path->qp.qp)
			(void)!rsec_qp_to_error(&path->qp);
		rsec_ops_flush(&path->ops, path->phase == PHASE_CLOSED ? path->close_code : RSEC_E_CLOSED, release,
			       path);
	}
	stage_free(path);
}

void rsec_onesided_abort(struct rsec_path *path, int status)
{
	if (path->ops.busy)
		rsec_ops_flush(&path->ops, status, release, path);
}

void rsec_onesided_flushed(struct rsec_path *path, const struct ibv_wc *wc, int n, int status)
{
	for (int i = 0; i < n; i++)
		if (RSEC_WR_KIND(wc[i].wr_id) == WR_RDMA && !(wc[i].wr_id & RSEC_WR_UNUSED_BITS))
			(void)rsec_ops_flush_through(&path->ops, RSEC_WR_INDEX(wc[i].wr_id), status, release, path);
}

bool rsec_onesided_drain(struct rsec_path *path)
{
	uint64_t deadline = rsec_now_ms() + DRAIN_MS;
	while (path->ops.busy && path->have_qp && rsec_now_ms() < deadline) {
		struct ibv_wc wc[16];
		int n = ibv_poll_cq(path->qp.send_cq, 16, wc);
		if (n < 0)
			break;
		rsec_onesided_flushed(path, wc, n, path->close_code);
		if (n == 0)
			(void)usleep(100);
	}
	return !path->ops.busy;
}

/*
 * What the grant allows: the operation's kind, and [off, off + len) within
 * it. A sealed grant's bytes move only through the sealed calls (sealed_ok).
 */
static RSEC_MUST_CHECK int check_remote(const struct rsec_remote_grant *g, enum rsec_op op, uint64_t off, uint64_t len,
					bool sealed_ok)
{
	unsigned need = op == RSEC_OP_WRITE ? RSEC_ACCESS_WRITE : RSEC_ACCESS_READ;
	RSEC_ENSURE(g->access & need, RSEC_E_RANGE);
	RSEC_ENSURE(sealed_ok || !(g->access & RSEC_GRANT_SEALED), RSEC_E_RANGE);
	RSEC_ENSURE(off <= g->len && len <= g->len - off, RSEC_E_RANGE);
	return 0;
}

/*
 * A one-sided call failed because the data path was rebuilt, the connection
 * open: rsec_conn_error says so (a closed connection keeps its own reason).
 */
static int rebuilt_error(struct rsec_path *path, int code, const char *what)
{
	if (path->phase == PHASE_CLOSED)
		return code;
	const char *why = rsec_rebuilding(path) ? path->rb.reason : path->rb.done_reason;
	char text[256];
	snprintf(text, sizeof(text), "%.90s: the data path was rebuilt (%.130s)", what, why[0] ? why : "a fault");
	path->hooks->explain(path->owner, text);
	return code;
}

/*
 * The grant to go through, in *now: g, or g as its granter bound it again
 * after a rebuild (a new key); RSEC_E_GRANT if it went with a rebuilt data path.
 */
static RSEC_MUST_CHECK int check_fresh(struct rsec_path *path, const struct rsec_remote_grant *g,
				       struct rsec_remote_grant *now)
{
	if (rsec_gt_resolve(&path->gt, g, now))
		return 0;
	char what[96];
	snprintf(what, sizeof(what), "grant 0x%llx is gone, ask its granter for a new one",
		 (unsigned long long)g->id);
	return rebuilt_error(path, RSEC_E_GRANT, what);
}

/* *claim: the sealed write this operation carries (rsec_region_seal), or NULL. */
static RSEC_MUST_CHECK int check_wr(struct rsec_path *path, const struct rsec_wr *w, struct rsec_sealed_write **claim,
				     struct rsec_remote_grant *now)
{
	*claim = NULL;
	RSEC_ENSURE(w->op == RSEC_OP_WRITE || w->op == RSEC_OP_READ, RSEC_E_INVAL);
	RSEC_ENSURE(!(w->flags & ~(unsigned)RSEC_WR_UNSIGNALED), RSEC_E_INVAL);
	RSEC_ENSURE(w->grant && w->local && w->len, RSEC_E_INVAL);
	RSEC_ENSURE(w->local->path == path && !w->local->dying && w->local->local_mr, RSEC_E_INVAL);
	RSEC_ENSURE(w->op == RSEC_OP_WRITE || !w->local->local_ro, RSEC_E_RANGE); /* a READ writes into it */
	bool sealed = w->grant->access & RSEC_GRANT_SEALED;
	RSEC_GUARD(check_remote(w->grant, w->op, w->remote_off, w->len, sealed));
	RSEC_GUARD(check_fresh(path, w->grant, now));
	RSEC_ENSURE(w->local_off <= w->local->len && w->len <= w->local->len - w->local_off, RSEC_E_RANGE);
	if (sealed)
		RSEC_GUARD(rsec_sealed_post_check(path, w, claim));
	return 0;
}

/* Claim a slot for op and fill its work request. */
static void fill_wr(struct rsec_path *path, const struct rsec_op_slot *op, const struct rsec_remote_grant *g,
		    uint64_t remote_off, uint64_t laddr, uint32_t lkey, struct ibv_send_wr *w, struct ibv_sge *sge)
{
	uint32_t idx = rsec_ops_push(&path->ops, op);
	*sge = (struct ibv_sge){ .addr = laddr, .length = op->len, .lkey = lkey };
	*w = (struct ibv_send_wr){
		.wr_id = RSEC_WR_ID(WR_RDMA, idx),
		.sg_list = sge,
		.num_sge = 1,
		.opcode = op->op == RSEC_OP_WRITE ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ,
		.send_flags = path->ops.ring[idx].signaled ? IBV_SEND_SIGNALED : 0,
		.wr.rdma = { .remote_addr = g->addr + remote_off, .rkey = g->rkey },
	};
}

/*
 * Post the n work requests just filled, as one chain; *sent says how many
 * the device took. On failure the ones it refused leave the ring.
 */
static RSEC_MUST_CHECK int post_chain(struct rsec_path *path, struct ibv_send_wr *w, unsigned n, unsigned *sent_out)
{
	for (unsigned i = 0; i + 1 < n; i++)
		w[i].next = &w[i + 1];
	w[n - 1].next = NULL;
	unsigned sent = 0;
	int err = rsec_qp_post(&path->qp, w, &sent);
	*sent_out = n;
	if (!err)
		return 0;
	*sent_out = sent;
	for (unsigned i = n; i > sent; i--) {
		struct rsec_op_slot *s = &path->ops.ring[RSEC_WR_INDEX(w[i - 1].wr_id)];
		release_owner(path, s);
		if (s->then) /* never posted: it may be posted again */
			((struct rsec_sealed_write *)s->then)->state = SEALED_WRITE_READY;
		s->then = NULL;
		rsec_ops_unpush(&path->ops);
	}
	return rsec_fault_fail(&path->fault, RSEC_E_VERBS, "ibv_post_send: %s", strerror(err));
}

int rsec_onesided_post(struct rsec_path *path, const struct rsec_wr *wr, unsigned n, unsigned *posted)
{
	RSEC_GUARD(rsec_path_usable(path, true));
	unsigned done = 0;
	int rc = 0;
	while (done < n && rc == 0) {
		struct ibv_send_wr w[CHAIN_MAX];
		struct ibv_sge sge[CHAIN_MAX];
		unsigned k = 0;
		for (; done + k < n && k < CHAIN_MAX; k++) {
			const struct rsec_wr *x = &wr[done + k];
			struct rsec_sealed_write *claim = NULL;
			struct rsec_remote_grant now;
			rc = rsec_ops_room(&path->ops) ? check_wr(path, x, &claim, &now) : RSEC_E_AGAIN;
			if (rc < 0)
				break;
			struct rsec_op_slot op = {
				.user_id = x->user_id, .op = x->op, .len = x->len, .owner = x->local, .then = claim,
				.reporting = (x->flags & RSEC_WR_UNSIGNALED) ? RSEC_OP_SILENT : RSEC_OP_REPORT,
			};
			if (claim)
				claim->state = SEALED_WRITE_POSTED;
			x->local->users++;
			fill_wr(path, &op, &now, x->remote_off, (uintptr_t)x->local->addr + x->local_off,
				x->local->local_mr->lkey, &w[k], &sge[k]);
		}
		unsigned sent = 0;
		int prc = k ? post_chain(path, w, k, &sent) : 0;
		done += sent;
		if (posted)
			*posted = done;
		RSEC_GUARD(prc);
	}
	return rc;
}

unsigned rsec_onesided_reap(struct rsec_path *path, struct rsec_wc *wc, unsigned max)
{
	return rsec_ops_take(&path->ops, wc, max > INT32_MAX ? INT32_MAX : max);
}

unsigned rsec_onesided_inflight(const struct rsec_path *path)
{
	return rsec_ops_pending(&path->ops);
}

/* The staging buffer of the blocking calls, made on first use and kept until the connection's RDMA goes. */
static RSEC_MUST_CHECK int stage_get(struct rsec_path *path)
{
	if (path->stage)
		return 0;
	void *p = mmap(NULL, RSEC_STAGE_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	RSEC_ENSURE(p != MAP_FAILED, RSEC_E_NOMEM);
	path->stage = p;
	path->stage_mr = ibv_reg_mr(path->qp.pd, path->stage, RSEC_STAGE_SIZE, IBV_ACCESS_LOCAL_WRITE);
	if (!path->stage_mr) {
		stage_free(path);
		return RSEC_E_VERBS;
	}
	return 0;
}

/*
 * The local side of a blocking call's operation: up to RSEC_STAGE_SIZE bytes
 * go through the staging buffer (a copy, no registration); more are
 * registered for the call (*own: the caller's registration, released with
 * the operation), where pinning is paid once for many bytes.
 */
static RSEC_MUST_CHECK int local_side(struct rsec_path *path, void *buf, size_t len, enum rsec_op op, uint64_t *addr,
				      struct ibv_mr **mr, struct ibv_mr **own)
{
	*own = NULL;
	if (len <= RSEC_STAGE_SIZE) {
		RSEC_GUARD(stage_get(path));
		if (op == RSEC_OP_WRITE)
			memcpy(path->stage, buf, len);
		*addr = (uintptr_t)path->stage;
		*mr = path->stage_mr;
		return 0;
	}
	/* A WRITE only reads buf: no local write access for it. */
	*own = ibv_reg_mr(path->qp.pd, buf, len, op == RSEC_OP_WRITE ? 0 : IBV_ACCESS_LOCAL_WRITE);
	RSEC_ENSURE(*own != NULL, RSEC_E_VERBS);
	*addr = (uintptr_t)buf;
	*mr = *own;
	return 0;
}

void rsec_onesided_unstage(struct rsec_path *path, void *buf, size_t len, enum rsec_op op, int status)
{
	if (len > RSEC_STAGE_SIZE || !path->stage) /* registered for the call, or the stage went with the QP */
		return;
	if (op == RSEC_OP_READ && status == 0)
		memcpy(buf, path->stage, len);
	OPENSSL_cleanse(path->stage, len);
}

int rsec_onesided_start(struct rsec_path *path, const struct rsec_remote_grant *g, uint64_t off, void *buf, size_t len,
			enum rsec_op op, bool sealed_ok, bool *posted)
{
	*posted = false;
	if (!path || !g || !buf || !len)
		return RSEC_E_INVAL;
	RSEC_ENSURE(len <= UINT32_MAX, RSEC_E_RANGE);
	RSEC_GUARD(check_remote(g, op, off, len, sealed_ok));
	RSEC_GUARD(rsec_path_usable(path, true));
	struct rsec_remote_grant now;
	RSEC_GUARD(check_fresh(path, g, &now));
	uint32_t room = rsec_ops_room(&path->ops);
	RSEC_ENSURE(room > 0, RSEC_E_AGAIN);
	uint64_t addr;
	struct ibv_mr *mr, *own;
	RSEC_GUARD(local_side(path, buf, len, op, &addr, &mr, &own));
	/* Pieces of at most PIECE_MAX bytes, as many as there is room for, posted as one chain. */
	uint32_t n = (uint32_t)((len + PIECE_MAX - 1) / PIECE_MAX);
	n = n > room ? room : n > CHAIN_MAX ? CHAIN_MAX : n;
	size_t piece = (len + n - 1) / n;
	struct ibv_send_wr w[CHAIN_MAX];
	struct ibv_sge sge[CHAIN_MAX];
	path->ops.waiter_done = false;
	for (uint32_t i = 0; i < n; i++) {
		size_t at = i * piece;
		struct rsec_op_slot slot = { .op = op, .len = (uint32_t)(i + 1 < n ? piece : len - at),
					     .reporting = i + 1 < n ? RSEC_OP_PIECE : RSEC_OP_WAITER };
		fill_wr(path, &slot, &now, off + at, addr + at, mr->lkey, &w[i], &sge[i]);
	}
	unsigned sent;
	int rc = post_chain(path, w, n, &sent);
	if (sent == 0) {
		if (own)
			(void)ibv_dereg_mr(own);
		rsec_onesided_unstage(path, buf, len, op, rc);
		return rc;
	}
	/* The last piece the device took reports for the call and holds its registration. A
	 * short chain (rc < 0) has pieces in flight all the same: the caller waits for them. */
	struct rsec_op_slot *last = &path->ops.ring[RSEC_WR_INDEX(w[sent - 1].wr_id)];
	last->reporting = RSEC_OP_WAITER;
	last->owner = own;
	*posted = true;
	return rc;
}

int rsec_onesided_end(struct rsec_path *path, void *buf, size_t len, enum rsec_op op)
{
	rsec_onesided_unstage(path, buf, len, op, path->ops.waiter_status);
	if (path->ops.waiter_status == RSEC_E_QP && (rsec_rebuilding(path) || path->stats.rebuilds)) {
		char what[96];
		snprintf(what, sizeof(what), "one-sided %s of %zu bytes ended, done or not",
			 op == RSEC_OP_WRITE ? "WRITE" : "READ", len);
		return rebuilt_error(path, RSEC_E_QP, what);
	}
	return path->ops.waiter_status;
}
