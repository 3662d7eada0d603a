/* SPDX-License-Identifier: MIT */
/*
 * rdmasec-bench's client: one connection runs every size; each size is one
 * PARAMS/READY, the measured loop, then END/RESULT for the server's CPU
 * time. Write and read post from (or into) one region registered once and
 * keep up to TX_DEPTH operations in flight (rsec_post, rsec_poll), as
 * perftest does. --op connect instead opens ITERS connections one after
 * another.
 */
#include <stdlib.h>
#include <string.h>

#include "bconn.h"
#include "bench.h"
#include "clock.h"
#include "pingpong.h"

#define MAX_ROWS 32
/* --sealed read: the most the region of READs in flight may take. */
#define SEALED_READ_REGION (64u << 20)

struct client {
	const struct bench_opts *o;
	struct bench_step steps[BENCH_LIST_MAX]; /* what to run (bench_plan) */
	size_t nsteps;
	uint64_t max_size, max_iters;
	struct rsec_ctx *ctx;
	struct bench_conn bc;
	uint8_t *data;      /* send: what we send; byte 0 is DATA's type; --sealed write: the plaintext; --blocking:
			     * what rsec_write sends or rsec_read fills */
	struct rsec_region *region; /* write, read: what we write, or where we read */
	size_t region_len;
	/* -q: the connection's further queue pairs, each with a region like the first's */
	struct rsec_conn *lanes[BENCH_LANES_MAX];
	struct rsec_region *lane_regions[BENCH_LANES_MAX];
	unsigned nlanes;
	struct rsec_wr *wr; /* write, read: one batch of work requests (tx_depth) */
	struct rsec_wc *wc; /* ... and of completions */
	uint64_t *samples;  /* latency: one per iteration */
	struct bench_row rows[MAX_ROWS];
	size_t nrows;
};

/* One size's test, as the loop sees it. */
struct test {
	struct client *cl;
	const struct bench_params *p;
	struct rsec_remote_grant g;
	struct rsec_remote_grant lane_g[BENCH_LANES_MAX]; /* -q: the grant on each further queue pair */
	uint64_t tag, done; /* --sealed write: READY's tag, writes done (write k's grant is tag + k) */
	uint64_t slots;     /* --sealed read: READs in flight at once, each into its own part of the region */
};

typedef int (*op_fn)(struct test *t);

static int op_send(struct test *t)
{
	return bconn_send(&t->cl->bc, t->cl->data, t->p->size, "send");
}

/* --sealed write: this write's own grant, sealed, written and claimed (the server opens it). */
static int op_write_sealed(struct test *t)
{
	struct client *cl = t->cl;
	int rc = t->done ? rsec_grant_wait(cl->bc.c, t->tag + t->done, &t->g, cl->o->timeout_ms) : 0;
	if (rc == 0)
		rc = rsec_write_sealed(cl->bc.c, &t->g, 0, cl->data, t->p->size, cl->o->timeout_ms);
	if (rc < 0)
		fprintf(stderr, "%s: sealed write %llu: %s (%s)\n", PROG, (unsigned long long)t->done, rsec_strerror(rc),
			rsec_conn_error(cl->bc.c));
	t->done++;
	return rc;
}

/* --blocking: one rsec_write or rsec_read from or into a buffer the library has not registered. */
static int op_blocking(struct test *t)
{
	struct client *cl = t->cl;
	int rc = t->p->op == BENCH_OP_WRITE ? rsec_write(cl->bc.c, &t->g, 0, cl->data, t->p->size, cl->o->timeout_ms)
					     : rsec_read(cl->bc.c, &t->g, 0, cl->data, t->p->size, cl->o->timeout_ms);
	if (rc < 0)
		fprintf(stderr, "%s: %s %llu: %s (%s)\n", PROG, t->p->op == BENCH_OP_WRITE ? "rsec_write" : "rsec_read",
			(unsigned long long)t->done, rsec_strerror(rc), rsec_conn_error(cl->bc.c));
	t->done++;
	return rc;
}

static int op_pingpong(struct test *t)
{
	int rc = bconn_send(&t->cl->bc, t->cl->data, t->p->size, "send");
	if (rc == 0)
		rc = bconn_recv(&t->cl->bc, "receive the echo");
	if (rc == 0 && t->cl->bc.len != t->p->size) {
		fprintf(stderr, "%s: the echo has %zu bytes, not %llu\n", PROG, t->cl->bc.len,
			(unsigned long long)t->p->size);
		return RSEC_E_PROTO;
	}
	return rc;
}

/*
 * What one iteration is, per operation and test; titles as perftest's
 * banners. Write and read have no op_fn: their loop is run_one_sided.
 */
static const struct client_op {
	enum bench_op op;
	const char *bw_title, *lat_title;
	op_fn bw, lat;
	unsigned lat_divisor; /* 2: a ping-pong reports half the round trip, as ib_send_lat */
} client_ops[] = {
	{ BENCH_OP_SEND, "Send BW Test", "Send Latency Test", op_send, op_pingpong, 2 },
	{ BENCH_OP_WRITE, "RDMA_Write BW Test", "RDMA_Write Latency Test", NULL, NULL, 2 }, /* ping-pong */
	{ BENCH_OP_READ, "RDMA_Read BW Test", "RDMA_Read Latency Test", NULL, NULL, 1 },
	{ BENCH_OP_CONNECT, "Connection Set-up Test", "Connection Set-up Test", NULL, NULL, 1 },
	{ BENCH_OP_QP, "Queue Pair Set-up Test", "Queue Pair Set-up Test", NULL, NULL, 1 },
};

static const struct client_op *find_op(enum bench_op op)
{
	for (size_t i = 0; i < sizeof(client_ops) / sizeof(client_ops[0]); i++)
		if (client_ops[i].op == op)
			return &client_ops[i];
	return NULL;
}

static struct bench_params params_for(const struct bench_opts *o, const struct bench_step *step)
{
	return (struct bench_params){ .version = BENCH_PROTO_VERSION, .op = (uint8_t)o->op, .lat = o->lat,
				      .poll = (uint8_t)o->poll, .sealed = o->sealed, .lanes = (uint8_t)(o->qps - 1),
				      .size = step->size, .iters = step->iters, .duration_ms = o->duration_ms };
}

/*
 * Clock reads per bandwidth test: in an emulated guest each one is a system
 * call, so bandwidth reads the clock once per block of operations and its
 * peak is the best block; latency needs one read per operation (as
 * perftest's one timestamp per iteration).
 */
#define BW_BLOCKS 64
#define DURATION_BLOCK 16

static uint64_t block_of(const struct bench_params *p)
{
	if (p->lat && !p->duration_ms)
		return 1;
	if (p->duration_ms)
		return DURATION_BLOCK;
	return p->iters > BW_BLOCKS ? p->iters / BW_BLOCKS : 1;
}

/* The measured loop: ITERS operations, or as many as fit in the duration. */
static int run_loop(struct test *t, op_fn once, struct bench_row *row, uint64_t *best_ns)
{
	const struct bench_params *p = t->p;
	bool keep = p->lat && !p->duration_ms;
	uint64_t block = block_of(p), start = clock_mono_ns(), mark = start, i = 0;
	uint64_t deadline = start + (uint64_t)p->duration_ms * 1000000u;
	*best_ns = UINT64_MAX;
	while (p->iters ? i < p->iters : mark < deadline) {
		int rc = once(t);
		if (rc < 0)
			return rc;
		i++;
		bool last = p->iters && i == p->iters; /* -D ends on a block's end */
		if (i % block && !last)
			continue;
		uint64_t now = clock_mono_ns(), per_op = (now - mark) / (i % block ? i % block : block);
		if (keep)
			t->cl->samples[i - 1] = now - mark;
		if (per_op < *best_ns)
			*best_ns = per_op;
		mark = now;
	}
	row->iters = i;
	if (i == 0)
		*best_ns = 0;
	row->elapsed_s = (double)(mark - start) / 1e9;
	return 0;
}

/* ---- write and read: TX_DEPTH operations in flight from one region per queue pair ---- */

/* Queue pair k of the test (-q): 0 is the connection, then its further ones, each with its grant and region. */
struct qp_side {
	struct rsec_conn *c;
	const struct rsec_remote_grant *g;
	struct rsec_region *region;
};

static struct qp_side qp_side(struct test *t, unsigned k)
{
	struct client *cl = t->cl;
	if (k == 0)
		return (struct qp_side){ cl->bc.c, &t->g, cl->region };
	return (struct qp_side){ cl->lanes[k - 1], &t->lane_g[k - 1], cl->lane_regions[k - 1] };
}

static unsigned inflight_all(struct test *t)
{
	unsigned n = 0;
	for (unsigned k = 0; k <= t->cl->nlanes; k++)
		n += rsec_inflight(qp_side(t, k).c);
	return n;
}

/*
 * Post n operations on queue pair k numbered from first (their user_id),
 * each of size bytes at offset 0 of the grant and of the region (perftest,
 * too, uses one buffer). A completion is asked for one in cq_mod and for
 * the batch's last, so whatever is in flight always ends with one: nothing
 * waits for a completion nobody asked for. *posted: how many went out.
 */
static int post_batch(struct test *t, unsigned k, enum rsec_op op, uint64_t first, unsigned n, unsigned *posted)
{
	struct client *cl = t->cl;
	struct qp_side q = qp_side(t, k);
	uint64_t cq_mod = t->p->lat ? 1 : cl->o->cq_mod;
	for (unsigned i = 0; i < n; i++) {
		uint64_t id = first + i;
		bool signaled = i + 1 == n || (id + 1) % cq_mod == 0;
		cl->wr[i] = (struct rsec_wr){ .user_id = id, .op = op, .flags = signaled ? 0 : RSEC_WR_UNSIGNALED,
					      .grant = q.g, .local = q.region, .len = (uint32_t)t->p->size };
		if (t->slots) { /* a sealed READ takes the whole grant, into a part of the region of its own */
			cl->wr[i].len = (uint32_t)t->g.len;
			cl->wr[i].local_off = (size_t)(id % t->slots * t->g.len);
		}
	}
	int rc = rsec_post(q.c, cl->wr, n, posted);
	if (rc == RSEC_E_AGAIN)
		return 0; /* the library's depth is full: what did not fit goes in the next batch */
	if (rc < 0)
		fprintf(stderr, "%s: rsec_post: %s (%s)\n", PROG, rsec_strerror(rc), rsec_conn_error(q.c));
	return rc;
}

/* Take what queue pair k has, waiting up to timeout_ms; each must have succeeded. Returns how many, or an error. */
static int reap_qp(struct test *t, unsigned k, int timeout_ms)
{
	struct client *cl = t->cl;
	struct rsec_conn *c = qp_side(t, k).c;
	int n = rsec_poll(c, cl->wc, (unsigned)cl->o->tx_depth, timeout_ms);
	if (n < 0) {
		fprintf(stderr, "%s: rsec_poll: %s (%s)\n", PROG, rsec_strerror(n), rsec_conn_error(c));
		return n;
	}
	for (int i = 0; i < n; i++) {
		if (cl->wc[i].status == 0)
			continue;
		fprintf(stderr, "%s: operation %llu: %s (%s)\n", PROG, (unsigned long long)cl->wc[i].user_id,
			rsec_strerror(cl->wc[i].status), rsec_conn_error(c));
		return cl->wc[i].status;
	}
	return n;
}

/*
 * Several queue pairs: take what each has; with none yet, wait a moment on
 * the next one with operations in flight, round robin, as the library waits
 * (busy: spinning, yielding now and then to the device's threads; event:
 * asleep on its completion channel).
 */
#define REAP_WAIT_MS 1

static int reap_any(struct test *t)
{
	struct client *cl = t->cl;
	uint64_t deadline = clock_mono_ns() + (uint64_t)cl->o->timeout_ms * 1000000u;
	for (unsigned next = 0;; next++) {
		int got = 0;
		for (unsigned k = 0; k <= cl->nlanes; k++) {
			int n = rsec_inflight(qp_side(t, k).c) ? reap_qp(t, k, 0) : 0;
			if (n < 0)
				return n;
			got += n;
		}
		if (got || clock_mono_ns() >= deadline)
			return got;
		unsigned k = next % (cl->nlanes + 1);
		if (rsec_inflight(qp_side(t, k).c) && (got = reap_qp(t, k, REAP_WAIT_MS)) != 0)
			return got;
	}
}

/* Wait for completions and take them all; each must have succeeded. */
static int reap(struct test *t)
{
	struct client *cl = t->cl;
	int n = cl->nlanes ? reap_any(t) : reap_qp(t, 0, cl->o->timeout_ms);
	if (n == 0) {
		fprintf(stderr, "%s: rsec_poll: no completion in %d ms (%u operations in flight)\n", PROG,
			cl->o->timeout_ms, inflight_all(t));
		return RSEC_E_TIMEOUT;
	}
	return n < 0 ? n : 0;
}

/* Fill the room of every queue pair (depth in flight on each, as perftest's -t per QP). */
static int post_round(struct test *t, enum rsec_op op, uint64_t depth, uint64_t *posted, bool more)
{
	const struct bench_params *p = t->p;
	for (unsigned k = 0; more && k <= t->cl->nlanes; k++) {
		uint64_t room = depth - rsec_inflight(qp_side(t, k).c);
		if (!room)
			continue;
		unsigned n = (unsigned)(p->iters && p->iters - *posted < room ? p->iters - *posted : room), sent = 0;
		int rc = post_batch(t, k, op, *posted, n, &sent);
		*posted += sent;
		if (rc < 0)
			return rc;
		more = !p->iters || *posted < p->iters;
	}
	return 0;
}

/* --sealed read: open in place what operations [from, to) brought in (all done: RC completes in order). */
static int open_sealed(struct test *t, uint64_t from, uint64_t to)
{
	struct client *cl = t->cl;
	for (uint64_t id = from; id < to; id++) {
		size_t len = 0;
		int rc = rsec_region_open(cl->bc.c, &t->g, cl->region, (size_t)(id % t->slots * t->g.len), &len);
		if (rc == 0 && len != t->p->size)
			rc = RSEC_E_PROTO;
		if (rc < 0) {
			fprintf(stderr, "%s: rsec_region_open of read %llu: %s (%zu bytes opened)\n", PROG,
				(unsigned long long)id, rsec_strerror(rc), len);
			return rc;
		}
	}
	return 0;
}

/*
 * The measured loop of write and read: keep up to TX_DEPTH operations in
 * flight (1 for latency) until ITERS are done, or post until the duration
 * ends and let the last ones finish. The clock is read once per rsec_poll
 * return; bandwidth's peak is the best block of operations, as in run_loop.
 * Operations done are those posted and no longer in flight: an unsignaled
 * one is done when a later one completes.
 */
static int run_one_sided(struct test *t, enum rsec_op op, struct bench_row *row, uint64_t *best_ns)
{
	const struct bench_params *p = t->p;
	bool keep = p->lat && !p->duration_ms;
	uint64_t depth = p->lat ? 1 : t->cl->o->tx_depth;
	if (t->slots && depth > t->slots)
		depth = t->slots;
	uint64_t block = block_of(p), start = clock_mono_ns(), now = start, mark = start;
	uint64_t deadline = start + (uint64_t)p->duration_ms * 1000000u;
	uint64_t posted = 0, done = 0, mark_done = 0;
	*best_ns = UINT64_MAX;
	for (;;) {
		bool more = p->iters ? posted < p->iters : now < deadline;
		int rc = post_round(t, op, depth, &posted, more);
		if (rc < 0)
			return rc;
		more = p->iters ? posted < p->iters : now < deadline;
		if (inflight_all(t) == 0 && !more)
			break;
		rc = reap(t);
		if (rc < 0)
			return rc;
		uint64_t was_done = done;
		done = posted - inflight_all(t);
		if (t->slots && (rc = open_sealed(t, was_done, done)) < 0)
			return rc;
		now = clock_mono_ns();
		bool finished = inflight_all(t) == 0 && (p->iters ? done == p->iters : now >= deadline);
		uint64_t ops = done - mark_done;
		if (ops == 0 || (ops < block && !finished))
			continue;
		if (keep)
			t->cl->samples[done - 1] = now - mark; /* one in flight: ops == 1 */
		if ((now - mark) / ops < *best_ns)
			*best_ns = (now - mark) / ops;
		mark = now;
		mark_done = done;
	}
	row->iters = done;
	if (done == 0)
		*best_ns = 0;
	row->elapsed_s = (double)(mark - start) / 1e9;
	return 0;
}

/*
 * --op qp: ITERS further queue pairs of the connection, each timed from the
 * request to its being up (rsec_conn_add_qp), then closed so the server's
 * max_qps never binds; the server takes and frees them meanwhile.
 */
static int run_qp_setup(struct test *t, struct bench_row *row, uint64_t *best_ns)
{
	struct client *cl = t->cl;
	uint64_t start = clock_mono_ns(), i = 0;
	*best_ns = UINT64_MAX;
	for (; i < t->p->iters; i++) {
		struct rsec_conn *more;
		uint64_t t0 = clock_mono_ns();
		int rc = rsec_conn_add_qp(cl->bc.c, cl->o->timeout_ms, &more);
		uint64_t ns = clock_mono_ns() - t0;
		if (rc < 0) {
			fprintf(stderr, "%s: queue pair %llu: %s (%s)\n", PROG, (unsigned long long)i + 1, rsec_strerror(rc),
				rsec_conn_error(cl->bc.c));
			return rc;
		}
		rsec_conn_free(more);
		cl->samples[i] = ns;
		if (ns < *best_ns)
			*best_ns = ns;
	}
	row->iters = i;
	row->elapsed_s = (double)(clock_mono_ns() - start) / 1e9;
	return 0;
}

/*
 * --op write --lat (not sealed): perftest's ib_write_lat. We write into the
 * server's grant, it answers into ours (granted under READY's tag); a
 * sample is one round trip, reported halved as perftest does.
 */
static int run_write_pingpong(struct test *t, struct bench_row *row, uint64_t *best_ns)
{
	struct client *cl = t->cl;
	struct rsec_conn *c = cl->bc.c;
	struct rsec_region *dst = NULL;
	uint64_t grant_id = 0;
	int rc = rsec_region_alloc(c, (size_t)t->p->size, RSEC_ACCESS_WRITE, &dst);
	if (rc == 0)
		rc = rsec_grant(c, dst, 0, (size_t)t->p->size, RSEC_ACCESS_WRITE, 0, t->tag, &grant_id);
	if (rc < 0)
		fprintf(stderr, "%s: cannot grant the server %llu bytes: %s\n", PROG, (unsigned long long)t->p->size,
			rsec_strerror(rc));
	struct pingpong pp = { .c = c, .peer = &t->g, .src = cl->region, .dst = dst, .size = (size_t)t->p->size,
			       .timeout_ms = cl->o->timeout_ms };
	uint64_t i = 0, start = clock_mono_ns(), mark = start;
	*best_ns = UINT64_MAX;
	while (rc == 0 && i < t->p->iters) {
		i++;
		rc = pingpong_send(&pp, i);
		if (rc == 0)
			rc = pingpong_wait(&pp, i);
		uint64_t now = clock_mono_ns();
		cl->samples[i - 1] = now - mark;
		if (now - mark < *best_ns)
			*best_ns = now - mark;
		mark = now;
	}
	if (grant_id && rsec_conn_state(c) == RSEC_CONN_ESTABLISHED)
		(void)rsec_revoke(c, grant_id);
	rsec_region_free(dst);
	row->iters = rc == 0 ? i : 0;
	row->elapsed_s = (double)(mark - start) / 1e9;
	return rc;
}

static void figures(const struct client_op *op, const struct test *t, struct bench_row *row, uint64_t best_ns)
{
	/* A sealed write is timed whole (grant, seal, WRITE, claim, open): nothing to halve. */
	unsigned divisor = t->p->sealed ? 1 : op->lat_divisor;
	row->have_row = true;
	if (!row->lat) {
		bench_bw_compute(row->bytes, row->iters, (uint64_t)(row->elapsed_s * 1e9), best_ns, &row->bw);
		return;
	}
	if (row->duration)
		row->l.avg = bench_lat_avg_us((uint64_t)(row->elapsed_s * 1e9), row->iters, divisor);
	else
		bench_lat_summarize(t->cl->samples, row->iters, divisor, &row->l);
}

/* PARAMS out, READY back; for write and read, the grant READY names. */
static int start_test(struct test *t)
{
	struct bench_msg m = { .type = BENCH_MSG_PARAMS, .params = *t->p };
	struct bench_conn *bc = &t->cl->bc;
	int rc = bconn_send_msg(bc, &m, "send the parameters");
	if (rc == 0)
		rc = bconn_recv_msg(bc, BENCH_MSG_READY, &m, "wait for the server");
	if (rc < 0 || (t->p->op != BENCH_OP_WRITE && t->p->op != BENCH_OP_READ))
		return rc;
	t->tag = m.tag;
	rc = rsec_grant_wait(bc->c, m.tag, &t->g, t->cl->o->timeout_ms);
	for (unsigned k = 0; rc == 0 && k < t->cl->nlanes; k++)
		rc = rsec_grant_wait(t->cl->lanes[k], m.tag, &t->lane_g[k], t->cl->o->timeout_ms);
	if (rc < 0)
		fprintf(stderr, "%s: no grant from the server: %s\n", PROG, rsec_strerror(rc));
	return rc;
}

/* END out, RESULT back: the server's count must be ours. */
static int finish_test(struct test *t, struct bench_row *row)
{
	struct bench_msg m = { .type = BENCH_MSG_END, .iters = row->iters };
	int rc = bconn_send_msg(&t->cl->bc, &m, "end the test");
	if (rc == 0)
		rc = bconn_recv_msg(&t->cl->bc, BENCH_MSG_RESULT, &m, "wait for the server's result");
	if (rc < 0)
		return rc;
	if (m.result.iters != row->iters) {
		fprintf(stderr, "%s: the server counted %llu operations, we did %llu\n", PROG,
			(unsigned long long)m.result.iters, (unsigned long long)row->iters);
		return RSEC_E_PROTO;
	}
	row->peer_cpu = m.result.cpu;
	row->have_peer = true;
	return 0;
}

static int run_size(struct client *cl, const struct client_op *op, const struct bench_step *step,
		    struct bench_row *row)
{
	struct bench_params p = params_for(cl->o, step);
	struct test t = { .cl = cl, .p = &p };
	uint64_t best_ns = 0, start = clock_mono_ns();
	*row = (struct bench_row){ .bytes = step->size, .lat = p.lat, .duration = p.duration_ms != 0 };
	struct bench_cpu cpu0 = bench_cpu_now(BENCH_CPU_THREAD);
	int rc = start_test(&t);
	if (rc == 0 && p.sealed && op->op == BENCH_OP_READ)
		t.slots = cl->region_len / rsec_sealed_len(p.size);
	if (rc == 0 && p.sealed && op->op == BENCH_OP_WRITE)
		rc = run_loop(&t, op_write_sealed, row, &best_ns);
	else if (rc == 0 && cl->o->blocking)
		rc = run_loop(&t, op_blocking, row, &best_ns);
	else if (rc == 0 && p.lat && op->op == BENCH_OP_WRITE)
		rc = run_write_pingpong(&t, row, &best_ns);
	else if (rc == 0 && op->op == BENCH_OP_QP)
		rc = run_qp_setup(&t, row, &best_ns);
	else if (rc == 0 && (op->op == BENCH_OP_WRITE || op->op == BENCH_OP_READ))
		rc = run_one_sided(&t, op->op == BENCH_OP_WRITE ? RSEC_OP_WRITE : RSEC_OP_READ, row, &best_ns);
	else if (rc == 0)
		rc = run_loop(&t, p.lat ? op->lat : op->bw, row, &best_ns);
	if (rc == 0)
		rc = finish_test(&t, row);
	if (rc < 0)
		return rc;
	row->cpu = bench_cpu_since(&cpu0, BENCH_CPU_THREAD);
	/* A sent message is only done once the server has it: its RESULT says so. */
	if (op->op == BENCH_OP_SEND && !p.lat)
		row->elapsed_s = (double)(clock_mono_ns() - start) / 1e9;
	figures(op, &t, row, best_ns);
	return 0;
}

/* ---- --op connect ---- */

static int connect_round(struct client *cl, uint64_t round, uint64_t *setup_ns, struct bench_msg *last,
			 uint64_t *resumed)
{
	const struct bench_opts *o = cl->o;
	struct rsec_conn *c;
	uint64_t t0 = clock_mono_ns();
	int rc = rsec_connect(cl->ctx, o->host, o->port, NULL, o->timeout_ms, &c);
	*setup_ns = clock_mono_ns() - t0;
	if (rc < 0) {
		fprintf(stderr, "%s: connection %llu: %s (%s)\n", PROG, (unsigned long long)round, rsec_strerror(rc),
			c ? rsec_conn_error(c) : "");
		rsec_conn_free(c);
		return rc;
	}
	*resumed += (uint64_t)rsec_conn_resumed(c);
	struct bench_conn bc;
	rc = bconn_init(&bc, c, o->timeout_ms, 0);
	struct bench_params p = params_for(o, &cl->steps[0]);
	p.round = round;
	struct bench_msg m = { .type = BENCH_MSG_PARAMS, .params = p };
	if (rc == 0)
		rc = bconn_send_msg(&bc, &m, "send the parameters");
	if (rc == 0)
		rc = bconn_recv_msg(&bc, round == p.iters ? BENCH_MSG_RESULT : BENCH_MSG_READY, last,
				    "wait for the server");
	(void)rsec_conn_close(c, "round done");
	bconn_free(&bc);
	rsec_conn_free(c);
	return rc;
}

static int run_connect(struct client *cl, struct bench_row *row)
{
	struct bench_msg last = { 0 };
	*row = (struct bench_row){ .lat = true, .set_up = true };
	struct bench_cpu cpu0 = bench_cpu_now(BENCH_CPU_PROCESS);
	uint64_t start = clock_mono_ns();
	uint64_t n = cl->steps[0].iters;
	for (uint64_t k = 1; k <= n; k++) {
		int rc = connect_round(cl, k, &cl->samples[k - 1], &last, &row->resumed);
		if (rc < 0)
			return rc;
	}
	row->cpu = bench_cpu_since(&cpu0, BENCH_CPU_PROCESS);
	row->iters = n;
	row->elapsed_s = (double)(clock_mono_ns() - start) / 1e9;
	row->peer_cpu = last.result.cpu;
	row->have_peer = true;
	row->have_row = true;
	bench_lat_summarize(cl->samples, row->iters, 1, &row->l);
	return 0;
}

/* ---- output and the run ---- */

static void banner(const struct client *cl, const struct client_op *op)
{
	const struct bench_opts *o = cl->o;
	report_rule(stdout);
	printf("                    rdmasec %s\n", o->lat ? op->lat_title : op->bw_title);
	printf(" Device          : %s\t\tPoll           : %s\n", rsec_ctx_device(cl->ctx),
	       o->poll == BENCH_POLL_BUSY ? "busy" : "event");
	if (o->blocking || (o->sealed && o->op == BENCH_OP_WRITE))
		printf(" Number of qps   : 1\t\tTX depth       : 1\n Local buffer    : a plain one (%s): "
		       "copied through a staging buffer up to 64 KiB, else registered per call\n",
		       o->sealed ? "rsec_write_sealed" : o->op == BENCH_OP_WRITE ? "rsec_write" : "rsec_read");
	else if (o->op == BENCH_OP_WRITE || o->op == BENCH_OP_READ)
		printf(" Number of qps   : %llu\t\tTX depth       : %llu\n CQ Moderation   : %llu\t\tLocal buffer   : "
		       "one region per queue pair, registered once\n",
		       (unsigned long long)o->qps, (unsigned long long)(o->lat ? 1 : o->tx_depth),
		       (unsigned long long)(o->lat ? 1 : o->cq_mod));
	else
		printf(" Number of qps   : 1\t\tTX depth       : %s\n",
		       o->op == BENCH_OP_SEND ? "receiver's credits" : "1");
	printf(" Protection      : TLS 1.3 set-up, %s messages, %s\n",
	       o->aead == RSEC_AEAD_CHACHA20_POLY1305 ? "ChaCha20-Poly1305" : "AES-256-GCM",
	       o->sealed ? "a sealed grant (data encrypted)" : "grants");
	printf(" CPU time        : %s, per operation\n",
	       o->op == BENCH_OP_CONNECT ? "whole process" : "calling thread");
	if (cl->bc.c)
		printf(" Server          : %s (grants: %s)\n", rsec_conn_peer(cl->bc.c),
		       rsec_conn_grant_mechanism(cl->bc.c));
	report_rule(stdout);
	report_header(stdout, o->lat, o->duration_ms != 0);
}

static int run_sizes(struct client *cl, const struct client_op *op)
{
	for (size_t i = 0; i < cl->nsteps && cl->nrows < MAX_ROWS; i++) {
		struct bench_row *row = &cl->rows[cl->nrows];
		int rc = run_size(cl, op, &cl->steps[i], row);
		if (rc < 0)
			return rc;
		cl->nrows++;
		report_row(stdout, row);
	}
	return 0;
}

/* Local only: never granted; the library registers it once, for every operation. */
static int local_region(struct rsec_conn *c, size_t len, struct rsec_region **out)
{
	int rc = rsec_region_alloc(c, len, RSEC_ACCESS_LOCAL, out);
	if (rc < 0) {
		fprintf(stderr, "%s: cannot register %zu bytes: %s\n", PROG, len, rsec_strerror(rc));
		return rc;
	}
	uint8_t *p = rsec_region_addr(*out);
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 131 + 7);
	return 0;
}

static int connect_once(struct client *cl)
{
	const struct bench_opts *o = cl->o;
	int rc = rsec_connect(cl->ctx, o->host, o->port, NULL, o->timeout_ms, &cl->bc.c);
	if (rc < 0) {
		fprintf(stderr, "%s: cannot connect to %s:%u: %s\n", PROG, o->host, o->port,
			cl->bc.c && *rsec_conn_error(cl->bc.c) ? rsec_conn_error(cl->bc.c) : rsec_strerror(rc));
		return rc;
	}
	struct rsec_conn *c = cl->bc.c;
	rc = bconn_init(&cl->bc, c, o->timeout_ms, o->op == BENCH_OP_SEND ? cl->max_size : 0);
	if (rc < 0) {
		fprintf(stderr, "%s: out of memory\n", PROG);
		return rc;
	}
	if (o->op != BENCH_OP_WRITE && o->op != BENCH_OP_READ)
		return 0;
	cl->region_len = (size_t)cl->max_size;
	if (cl->o->sealed && cl->o->op == BENCH_OP_READ) {
		/* A part per READ in flight, as many as fit in SEALED_READ_REGION (one at least). */
		size_t part = rsec_sealed_len((size_t)cl->max_size);
		uint64_t parts = SEALED_READ_REGION / part ? SEALED_READ_REGION / part : 1;
		cl->region_len = part * (size_t)(parts < cl->o->tx_depth ? parts : cl->o->tx_depth);
	}
	rc = local_region(c, cl->region_len, &cl->region);
	for (; rc == 0 && cl->nlanes + 1 < o->qps; cl->nlanes++) {
		rc = rsec_conn_add_qp(c, o->timeout_ms, &cl->lanes[cl->nlanes]);
		if (rc < 0) {
			fprintf(stderr, "%s: queue pair %u of %llu: %s (%s)\n", PROG, cl->nlanes + 2,
				(unsigned long long)o->qps, rsec_strerror(rc), rsec_conn_error(c));
			return rc;
		}
		rc = local_region(cl->lanes[cl->nlanes], cl->region_len, &cl->lane_regions[cl->nlanes]);
	}
	return rc;
}

static int alloc_buffers(struct client *cl)
{
	const struct bench_opts *o = cl->o;
	cl->nsteps = bench_plan(o, cl->steps);
	for (size_t i = 0; i < cl->nsteps; i++) {
		if (cl->steps[i].size > cl->max_size)
			cl->max_size = cl->steps[i].size;
		if (cl->steps[i].iters > cl->max_iters)
			cl->max_iters = cl->steps[i].iters;
	}
	bool plain_buffer = o->op == BENCH_OP_SEND || o->blocking || (o->sealed && o->op == BENCH_OP_WRITE);
	size_t max = plain_buffer ? (size_t)cl->max_size : 1;
	cl->data = malloc(max);
	if (o->lat && cl->max_iters)
		cl->samples = calloc(cl->max_iters, sizeof(*cl->samples));
	if (o->tx_depth) {
		cl->wr = calloc(o->tx_depth, sizeof(*cl->wr));
		cl->wc = calloc(o->tx_depth, sizeof(*cl->wc));
	}
	if (!cl->data || (o->lat && cl->max_iters && !cl->samples) || (o->tx_depth && (!cl->wr || !cl->wc))) {
		fprintf(stderr, "%s: out of memory\n", PROG);
		return RSEC_E_NOMEM;
	}
	for (size_t i = 0; i < max; i++)
		cl->data[i] = (uint8_t)(i * 131 + 7);
	cl->data[0] = BENCH_MSG_DATA;
	return 0;
}

static void print_end(struct client *cl, const struct client_op *op)
{
	report_rule(stdout);
	if (op->op == BENCH_OP_CONNECT && cl->nrows)
		printf(" TLS resumed     : %llu of %llu connections%s\n", (unsigned long long)cl->rows[0].resumed,
		       (unsigned long long)cl->rows[0].iters, cl->o->no_resume ? " (--no-resume)" : "");
	for (size_t i = 0; i < cl->nrows; i++)
		report_cpu(stdout, "client", &cl->rows[i]);
	if (cl->o->json_path) {
		struct bench_meta meta = { .role = "client", .device = rsec_ctx_device(cl->ctx),
					   .peer = cl->bc.c ? rsec_conn_peer(cl->bc.c) : "", .o = cl->o,
					   .op = op->op, .lat = cl->o->lat,
					   .aead = cl->o->aead == RSEC_AEAD_CHACHA20_POLY1305 ? "chacha20-poly1305" : "aes-256-gcm" };
		if (!report_json(cl->o->json_path, &meta, cl->rows, cl->nrows))
			cl->nrows = 0; /* fail the run */
	}
}

static int client_body(struct client *cl, const struct client_op *op)
{
	int rc = alloc_buffers(cl);
	if (rc == 0 && op->op != BENCH_OP_CONNECT)
		rc = connect_once(cl);
	if (rc < 0)
		return rc;
	banner(cl, op);
	if (op->op == BENCH_OP_CONNECT) {
		rc = run_connect(cl, &cl->rows[0]);
		if (rc == 0) {
			cl->nrows = 1;
			report_row(stdout, &cl->rows[0]);
		}
	} else {
		rc = run_sizes(cl, op);
	}
	if (rc < 0)
		return rc;
	print_end(cl, op);
	return cl->nrows ? 0 : RSEC_E_IO;
}

int bench_client_run(const struct bench_opts *o)
{
	struct client cl = { .o = o };
	const struct client_op *op = find_op(o->op);
	int rc = bench_ctx_new(o, false, &cl.ctx);
	if (rc == 0)
		rc = client_body(&cl, op);
	rsec_region_free(cl.region);
	for (unsigned k = 0; k < cl.nlanes; k++) {
		rsec_region_free(cl.lane_regions[k]);
		rsec_conn_free(cl.lanes[k]);
	}
	if (cl.bc.c) {
		(void)rsec_conn_close(cl.bc.c, "bench done");
		rsec_conn_free(cl.bc.c);
	}
	bconn_free(&cl.bc);
	rsec_ctx_free(cl.ctx);
	free(cl.data);
	free(cl.samples);
	free(cl.wr);
	free(cl.wc);
	return rc;
}
