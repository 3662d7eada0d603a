/* SPDX-License-Identifier: MIT */
/*
 * rdmasec-bench's server: like perftest's, it serves one client and exits
 * (for --op connect, every connection of the client's run). The test's
 * parameters come from the client; options given here must agree.
 */
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "bconn.h"
#include "bench.h"
#include "clock.h"
#include "pingpong.h"

#define MAX_ROWS 32
#define GRANT_ACCESS (RSEC_ACCESS_READ | RSEC_ACCESS_WRITE)

enum { SERVE_MORE = 0, SERVE_DONE = 1 };

struct server {
	const struct bench_opts *o;
	struct rsec_ctx *ctx;
	struct rsec_listener *l;
	struct bench_row rows[MAX_ROWS];
	size_t nrows;
	uint64_t *samples;
	size_t samples_cap;
	uint64_t next_tag;
	bool banner_done;
	struct bench_params shown; /* the test the banner announced */
	char peer[256];
	/* The connection's further queue pairs (-q), taken at its first PARAMS with lanes. */
	struct rsec_conn *lanes[BENCH_LANES_MAX];
	unsigned nlanes;
	/* --op connect: the run in progress */
	uint64_t round_next, rounds;
	uint64_t run_start_ns;
	struct bench_cpu run_cpu0;
};

/* One accepted connection: when it came and what the process had spent by then. */
struct arrival {
	struct rsec_conn *c;
	uint64_t accept_ns, established_ns;
	struct bench_cpu cpu;
};

static int need_samples(struct server *s, uint64_t n)
{
	if (n <= s->samples_cap)
		return 0;
	uint64_t *p = realloc(s->samples, n * sizeof(*p));
	if (!p) {
		fprintf(stderr, "%s: out of memory\n", PROG);
		return RSEC_E_NOMEM;
	}
	s->samples = p;
	s->samples_cap = n;
	return 0;
}

/* ---- the parameters ---- */

static bool in_list(const uint64_t *list, size_t n, uint64_t v)
{
	for (size_t i = 0; i < n; i++)
		if (list[i] == v)
			return true;
	return false;
}

static bool size_allowed(const struct bench_opts *o, uint64_t size)
{
	if (!(o->set & BENCH_SET_SIZE))
		return true;
	if (!o->all_sizes)
		return in_list(o->sizes, o->nsizes, size);
	return size >= BENCH_ALL_MIN && size <= BENCH_ALL_MAX && (size & (size - 1)) == 0;
}

/* NULL if this server runs p, else why not. */
static const char *params_refused(const struct bench_opts *o, const struct bench_params *p)
{
	if ((o->set & BENCH_SET_OP) && p->op != o->op)
		return "this server was started for another --op";
	if ((o->set & BENCH_SET_LAT) && p->lat != o->lat)
		return "this server was started for another test (--lat)";
	if ((o->set & BENCH_SET_SEALED) && p->sealed != o->sealed)
		return "this server was started for another test (--sealed)";
	if ((o->set & BENCH_SET_QPS) && p->lanes + 1u != o->qps)
		return "this server was started for another -q";
	if (!size_allowed(o, p->size))
		return "this server was started for other sizes (-s, -a)";
	if ((o->set & BENCH_SET_ITERS) && !in_list(o->iters, o->niters, p->iters))
		return "this server was started for another -n";
	if ((o->set & BENCH_SET_DURATION) && p->duration_ms != o->duration_ms)
		return "this server was started for another -D";
	if (p->poll == BENCH_POLL_BUSY && p->op == BENCH_OP_CONNECT)
		return "--poll busy is not for --op connect";
	return NULL;
}

static int refuse(struct bench_conn *bc, const char *why)
{
	fprintf(stderr, "%s: refusing the client's test: %s\n", PROG, why);
	bconn_send_error(bc, why);
	return RSEC_E_PROTO;
}

/* ---- output ---- */

static void banner(struct server *s, const struct bench_params *p)
{
	if (s->banner_done)
		return;
	s->banner_done = true;
	s->shown = *p;
	report_rule(stdout);
	printf("                    rdmasec %s %s Test (server)\n", bench_op_name(p->op),
	       p->op == BENCH_OP_CONNECT || p->op == BENCH_OP_QP ? "Set-up" : p->lat ? "Latency" : "BW");
	printf(" Device          : %s\t\tPoll           : %s (client: %s)\n", rsec_ctx_device(s->ctx),
	       s->o->poll == BENCH_POLL_BUSY ? "busy" : "event", p->poll == BENCH_POLL_BUSY ? "busy" : "event");
	printf(" Client          : %s\n", s->peer);
	if (p->op == BENCH_OP_WRITE || p->op == BENCH_OP_READ)
		printf(" One-sided       : the client measures; this side reports its CPU time only\n");
	report_rule(stdout);
	if (p->op != BENCH_OP_WRITE && p->op != BENCH_OP_READ)
		report_header(stdout, p->lat, p->duration_ms != 0);
}

static void keep_row(struct server *s, const struct bench_row *row)
{
	if (s->nrows == MAX_ROWS)
		return;
	s->rows[s->nrows++] = *row;
	if (row->have_row)
		report_row(stdout, row);
}

static int send_result(struct bench_conn *bc, uint64_t iters, uint64_t start_ns, const struct bench_cpu *cpu0,
		       enum bench_cpu_scope scope, struct bench_row *row)
{
	row->cpu = bench_cpu_since(cpu0, scope);
	struct bench_msg m = { .type = BENCH_MSG_RESULT,
			       .result = { .iters = iters, .elapsed_ns = clock_mono_ns() - start_ns,
					   .cpu = row->cpu } };
	return bconn_send_msg(bc, &m, "send the result");
}

/* ---- send: count (bandwidth) or echo (latency) DATA until END ---- */

static int on_data(struct server *s, struct bench_conn *bc, const struct bench_params *p, uint64_t n,
		   uint64_t *prev_ns)
{
	if (bc->len != p->size || (p->iters && n >= p->iters)) {
		bconn_send_error(bc, "DATA of the wrong size, or more than the iterations");
		fprintf(stderr, "%s: the client sent more or other DATA than announced\n", PROG);
		return RSEC_E_PROTO;
	}
	if (!p->lat)
		return 0; /* no clock read per message: END's arrival ends the window */
	uint64_t now = clock_mono_ns();
	if (p->iters)
		s->samples[n] = now - *prev_ns;
	*prev_ns = now;
	return bconn_send(bc, bc->buf, bc->len, "echo");
}

static int serve_send(struct server *s, struct bench_conn *bc, const struct bench_params *p, struct bench_row *row)
{
	struct bench_msg m = { .type = BENCH_MSG_READY };
	int rc = bconn_reserve(bc, p->size);
	if (rc == 0 && p->lat && p->iters)
		rc = need_samples(s, p->iters);
	if (rc == 0)
		rc = bconn_send_msg(bc, &m, "send READY");
	uint64_t start = clock_mono_ns(), last = start, n = 0;
	while (rc == 0) {
		rc = bconn_recv_msg(bc, 0, &m, "receive");
		if (rc == 0 && m.type == BENCH_MSG_END && !p->lat)
			last = clock_mono_ns();
		if (rc < 0 || m.type == BENCH_MSG_END)
			break;
		rc = m.type == BENCH_MSG_DATA ? on_data(s, bc, p, n++, &last) : refuse(bc, "expected DATA or END");
	}
	if (rc < 0)
		return rc;
	if (m.iters != n)
		return refuse(bc, "END does not count the DATA received");
	row->iters = n;
	row->elapsed_s = (double)(last - start) / 1e9;
	row->have_row = n > 0;
	if (!p->lat)
		bench_bw_compute(p->size, n, last - start, 0, &row->bw);
	else if (p->duration_ms)
		row->l.avg = bench_lat_avg_us(last - start, n, 2);
	else if (n)
		bench_lat_summarize(s->samples, n, 2, &row->l);
	return 0;
}

/* ---- write, read: one grant per queue pair for the whole test; the client's END tells the count ---- */

/* The client's further queue pairs: opened before its first PARAMS that has them, the same for every test. */
static int take_lanes(struct server *s, struct bench_conn *bc, unsigned want)
{
	if (s->nlanes && s->nlanes != want)
		return refuse(bc, "another number of queue pairs than the connection's first test");
	while (s->nlanes < want) {
		int rc = rsec_conn_add_qp(bc->c, bc->timeout_ms, &s->lanes[s->nlanes]);
		if (rc < 0) {
			fprintf(stderr, "%s: queue pair %u of %u: %s (%s)\n", PROG, s->nlanes + 2, want + 1,
				rsec_strerror(rc), rsec_conn_error(bc->c));
			bconn_send_error(bc, "the server did not get every queue pair");
			return rc;
		}
		s->nlanes++;
	}
	return 0;
}

static void free_lanes(struct server *s)
{
	for (unsigned i = 0; i < s->nlanes; i++)
		rsec_conn_free(s->lanes[i]);
	s->nlanes = 0;
}

/* A region of span bytes on c, granted under tag. */
static int grant_region(struct rsec_conn *c, size_t span, unsigned access, uint64_t tag, struct rsec_region **r,
			uint64_t *grant_id)
{
	int rc = rsec_region_alloc(c, span, GRANT_ACCESS, r);
	return rc < 0 ? rc : rsec_grant(c, *r, 0, span, access, 0, tag, grant_id);
}

static int serve_one_sided(struct server *s, struct bench_conn *bc, const struct bench_params *p,
			   struct bench_row *row)
{
	struct rsec_region *r[BENCH_LANES_MAX + 1] = { 0 };
	uint64_t grant_id[BENCH_LANES_MAX + 1] = { 0 }, start = clock_mono_ns();
	struct bench_msg m = { .type = BENCH_MSG_READY, .tag = ++s->next_tag };
	/* Sealed: the region's (zeroed) bytes sealed in place, tags after them. */
	size_t span = p->sealed ? rsec_sealed_len(p->size) : p->size;
	unsigned access = p->sealed ? RSEC_ACCESS_READ | RSEC_GRANT_SEALED : GRANT_ACCESS;
	int rc = take_lanes(s, bc, p->lanes);
	if (rc < 0)
		return rc;
	/* Queue pair 0 is the connection; a window is bound to one QP, so each gets its own grant. */
	for (unsigned k = 0; rc == 0 && k <= s->nlanes; k++)
		rc = grant_region(k ? s->lanes[k - 1] : bc->c, span, access, m.tag, &r[k], &grant_id[k]);
	if (rc < 0) {
		fprintf(stderr, "%s: cannot grant %llu bytes: %s\n", PROG, (unsigned long long)p->size, rsec_strerror(rc));
		bconn_send_error(bc, "the server cannot grant a region of that size");
	}
	if (rc == 0)
		rc = bconn_send_msg(bc, &m, "send READY");
	if (rc == 0)
		rc = bconn_recv_msg_driving(bc, s->lanes, s->nlanes, BENCH_MSG_END, &m, "wait for the client's end");
	for (unsigned k = 0; k <= s->nlanes; k++) {
		struct rsec_conn *c = k ? s->lanes[k - 1] : bc->c;
		if (grant_id[k] && rsec_conn_state(c) == RSEC_CONN_ESTABLISHED)
			(void)rsec_revoke(c, grant_id[k]);
		rsec_region_free(r[k]);
	}
	row->iters = m.iters;
	row->elapsed_s = (double)(clock_mono_ns() - start) / 1e9;
	return rc;
}

/*
 * --op write --lat: the ping-pong of perftest's ib_write_lat (pingpong.h).
 * READY names our grant; the client grants us its region under the same
 * tag, then each round's write is answered with ours.
 */
static int serve_write_pingpong(struct server *s, struct bench_conn *bc, const struct bench_params *p,
				struct bench_row *row)
{
	struct rsec_region *dst = NULL, *src = NULL;
	struct rsec_remote_grant peer;
	uint64_t grant_id = 0, start = clock_mono_ns(), i = 0;
	struct bench_msg m = { .type = BENCH_MSG_READY, .tag = ++s->next_tag };
	int rc = rsec_region_alloc(bc->c, (size_t)p->size, RSEC_ACCESS_WRITE, &dst);
	if (rc == 0)
		rc = rsec_region_alloc(bc->c, (size_t)p->size, RSEC_ACCESS_LOCAL, &src);
	if (rc == 0)
		rc = rsec_grant(bc->c, dst, 0, (size_t)p->size, RSEC_ACCESS_WRITE, 0, m.tag, &grant_id);
	if (rc < 0) {
		fprintf(stderr, "%s: cannot grant %llu bytes: %s\n", PROG, (unsigned long long)p->size, rsec_strerror(rc));
		bconn_send_error(bc, "the server cannot grant a region of that size");
	}
	if (rc == 0)
		rc = bconn_send_msg(bc, &m, "send READY");
	if (rc == 0 && (rc = rsec_grant_wait(bc->c, m.tag, &peer, s->o->timeout_ms)) < 0)
		fprintf(stderr, "%s: no grant from the client: %s\n", PROG, rsec_strerror(rc));
	struct pingpong pp = { .c = bc->c, .peer = &peer, .src = src, .dst = dst, .size = (size_t)p->size,
			       .timeout_ms = s->o->timeout_ms };
	while (rc == 0 && i < p->iters) {
		i++;
		rc = pingpong_wait(&pp, i);
		if (rc == 0)
			rc = pingpong_send(&pp, i);
	}
	if (rc == 0)
		rc = bconn_recv_msg(bc, BENCH_MSG_END, &m, "wait for the client's end");
	if (grant_id && rsec_conn_state(bc->c) == RSEC_CONN_ESTABLISHED)
		(void)rsec_revoke(bc->c, grant_id);
	rsec_region_free(src);
	rsec_region_free(dst);
	row->iters = rc == 0 ? m.iters : i;
	row->elapsed_s = (double)(clock_mono_ns() - start) / 1e9;
	return rc;
}

/*
 * --sealed write: a sealed WRITE grant carries one transfer, which its
 * granter opens, so each operation has its own grant, tagged READY's tag + k:
 * granted, written and claimed by the client, opened here.
 */
static int serve_sealed_write(struct server *s, struct bench_conn *bc, const struct bench_params *p,
			      struct bench_row *row)
{
	struct rsec_region *r = NULL;
	uint64_t start = clock_mono_ns(), done = 0;
	size_t span = rsec_sealed_len(p->size);
	struct bench_msg m = { .type = BENCH_MSG_READY, .tag = s->next_tag + 1 };
	s->next_tag += p->iters;
	int rc = rsec_region_alloc(bc->c, span, RSEC_ACCESS_WRITE, &r);
	if (rc < 0)
		bconn_send_error(bc, "the server cannot grant a region of that size");
	if (rc == 0)
		rc = bconn_send_msg(bc, &m, "send READY");
	for (; rc == 0 && done < p->iters; done++) {
		uint64_t id, off, len;
		rc = rsec_grant(bc->c, r, 0, span, RSEC_ACCESS_WRITE | RSEC_GRANT_SEALED, 0, m.tag + done, &id);
		if (rc == 0)
			rc = rsec_grant_open(bc->c, id, &off, &len, s->o->timeout_ms);
		if (rc == 0 && (off != 0 || len != p->size))
			rc = RSEC_E_PROTO;
		if (rc < 0)
			fprintf(stderr, "%s: sealed write %llu: %s (%s)\n", PROG, (unsigned long long)done,
				rsec_strerror(rc), rsec_conn_error(bc->c));
	}
	if (rc == 0)
		rc = bconn_recv_msg(bc, BENCH_MSG_END, &m, "wait for the client's end");
	rsec_region_free(r);
	row->iters = rc == 0 ? m.iters : done;
	row->elapsed_s = (double)(clock_mono_ns() - start) / 1e9;
	return rc;
}

/* ---- qp: take and free the client's further queue pairs until END ---- */

static int serve_qp_setup(struct bench_conn *bc, struct bench_row *row)
{
	struct bench_msg m = { .type = BENCH_MSG_READY };
	uint64_t start = clock_mono_ns(), deadline = start + (uint64_t)bc->timeout_ms * 1000000u;
	int rc = bconn_send_msg(bc, &m, "send READY");
	while (rc == 0) {
		struct rsec_conn *more;
		while ((rc = rsec_conn_add_qp(bc->c, 0, &more)) == 0) {
			rsec_conn_free(more); /* the client closes its side as soon as it is up */
			deadline = clock_mono_ns() + (uint64_t)bc->timeout_ms * 1000000u;
		}
		if (rc != RSEC_E_AGAIN)
			break;
		rc = rsec_recv(bc->c, bc->buf, bc->cap, &bc->len, 10);
		if (rc == 0) {
			const char *why;
			if (!bench_decode(bc->buf, bc->len, &m, &why) || m.type != BENCH_MSG_END)
				return refuse(bc, "expected END");
			break;
		}
		if (rc == RSEC_E_TIMEOUT && clock_mono_ns() < deadline)
			rc = 0;
	}
	if (rc < 0) {
		fprintf(stderr, "%s: queue pair set-up test: %s (%s)\n", PROG, rsec_strerror(rc), rsec_conn_error(bc->c));
		return rc;
	}
	row->iters = m.iters;
	row->elapsed_s = (double)(clock_mono_ns() - start) / 1e9;
	return 0;
}

static int serve_test(struct server *s, struct bench_conn *bc, const struct bench_params *p)
{
	struct bench_row row = { .bytes = p->size, .lat = p->lat, .duration = p->duration_ms != 0 };
	struct bench_cpu cpu0 = bench_cpu_now(BENCH_CPU_THREAD);
	uint64_t start = clock_mono_ns();
	banner(s, p);
	int rc = p->op == BENCH_OP_SEND			   ? serve_send(s, bc, p, &row)
		 : p->sealed && p->op == BENCH_OP_WRITE ? serve_sealed_write(s, bc, p, &row)
		 : p->lat && p->op == BENCH_OP_WRITE	   ? serve_write_pingpong(s, bc, p, &row)
		 : p->op == BENCH_OP_QP			   ? serve_qp_setup(bc, &row)
							   : serve_one_sided(s, bc, p, &row);
	if (rc == 0)
		rc = send_result(bc, row.iters, start, &cpu0, BENCH_CPU_THREAD, &row);
	if (rc == 0)
		keep_row(s, &row);
	return rc;
}

/* ---- --op connect: one round per connection ---- */

/* The client closes each connection after its answer; anything else is an error. */
static int wait_close(struct bench_conn *bc)
{
	int rc = rsec_recv(bc->c, bc->buf, bc->cap, &bc->len, bc->timeout_ms);
	if (rc == RSEC_E_CLOSED)
		return 0;
	fprintf(stderr, "%s: the client did not close the connection: %s\n", PROG,
		rc < 0 ? rsec_strerror(rc) : "it sent more");
	return RSEC_E_PROTO;
}

static int start_run(struct server *s, const struct bench_params *p, const struct arrival *a)
{
	s->round_next = 1;
	s->rounds = p->iters;
	s->run_start_ns = a->accept_ns;
	s->run_cpu0 = a->cpu;
	return need_samples(s, p->iters);
}

static int serve_round(struct server *s, struct bench_conn *bc, const struct bench_params *p, const struct arrival *a)
{
	if (p->round == 1) {
		int rc = start_run(s, p, a);
		if (rc < 0)
			return rc;
	}
	if (p->round != s->round_next || p->iters != s->rounds)
		return refuse(bc, "connection rounds out of order");
	banner(s, p);
	s->samples[p->round - 1] = a->established_ns - a->accept_ns;
	s->round_next++;
	if (p->round < p->iters) {
		struct bench_msg m = { .type = BENCH_MSG_READY };
		int rc = bconn_send_msg(bc, &m, "send READY");
		if (rc == 0)
			rc = wait_close(bc);
		return rc < 0 ? rc : SERVE_MORE;
	}
	struct bench_row row = { .lat = true, .iters = p->iters, .have_row = true };
	row.elapsed_s = (double)(clock_mono_ns() - s->run_start_ns) / 1e9;
	int rc = send_result(bc, p->iters, s->run_start_ns, &s->run_cpu0, BENCH_CPU_PROCESS, &row);
	if (rc == 0)
		rc = wait_close(bc);
	if (rc < 0)
		return rc;
	bench_lat_summarize(s->samples, p->iters, 1, &row.l);
	keep_row(s, &row);
	return SERVE_DONE;
}

/* ---- one connection ---- */

/* The next test's PARAMS, or SERVE_DONE when the client closed. */
static int next_params(struct bench_conn *bc, struct bench_msg *m)
{
	const char *why;
	int rc = rsec_recv(bc->c, bc->buf, bc->cap, &bc->len, bc->timeout_ms);
	if (rc == RSEC_E_CLOSED)
		return SERVE_DONE;
	if (rc < 0) {
		fprintf(stderr, "%s: waiting for the client: %s (%s)\n", PROG, rsec_strerror(rc), rsec_conn_error(bc->c));
		return rc;
	}
	if (!bench_decode(bc->buf, bc->len, m, &why))
		return refuse(bc, why);
	return m->type == BENCH_MSG_PARAMS ? 0 : refuse(bc, "expected PARAMS");
}

static int serve_conn(struct server *s, struct bench_conn *bc, const struct arrival *a)
{
	struct bench_msg m;
	int rc = bconn_recv_msg(bc, BENCH_MSG_PARAMS, &m, "wait for the client's parameters");
	if (rc < 0)
		return rc;
	snprintf(s->peer, sizeof(s->peer), "%s", rsec_conn_peer(bc->c));
	const char *why = params_refused(s->o, &m.params);
	if (why)
		return refuse(bc, why);
	if (m.params.op == BENCH_OP_CONNECT)
		return serve_round(s, bc, &m.params, a);
	if (s->round_next)
		return refuse(bc, "a connect run is in progress");
	for (;;) {
		rc = serve_test(s, bc, &m.params);
		if (rc == 0)
			rc = next_params(bc, &m);
		if (rc != 0)
			return rc;
		why = params_refused(s->o, &m.params);
		if (why || m.params.op == BENCH_OP_CONNECT)
			return refuse(bc, why ? why : "connect rounds need connections of their own");
	}
}

/* Drive the handshake; the library holds its deadline (--timeout). */
static int establish(struct rsec_conn *c)
{
	for (;;) {
		int rc = rsec_conn_process(c);
		if (rc == 0 && rsec_conn_state(c) == RSEC_CONN_ESTABLISHED)
			return 0;
		if (rc < 0 && rc != RSEC_E_AGAIN)
			return rc;
		struct pollfd p = { .fd = rsec_conn_fd(c), .events = POLLIN };
		(void)poll(&p, 1, 100);
	}
}

/* Wait for a connection and bring it up. RSEC_E_AGAIN: that one failed, wait for another. */
static int arrive(struct server *s, struct arrival *a)
{
	struct pollfd p = { .fd = rsec_listener_fd(s->l), .events = POLLIN };
	if (poll(&p, 1, -1) < 0)
		return RSEC_E_AGAIN;
	a->cpu = bench_cpu_now(BENCH_CPU_PROCESS);
	a->accept_ns = clock_mono_ns();
	int rc = rsec_accept(s->l, &a->c);
	if (rc == RSEC_E_AGAIN)
		return rc;
	if (rc < 0) {
		fprintf(stderr, "%s: accept: %s\n", PROG, rsec_strerror(rc));
		return rc;
	}
	rc = establish(a->c);
	a->established_ns = clock_mono_ns();
	if (rc == 0)
		return 0;
	fprintf(stderr, "%s: a connection failed to set up: %s (%s)\n", PROG, rsec_strerror(rc), rsec_conn_error(a->c));
	rsec_conn_free(a->c);
	a->c = NULL;
	return RSEC_E_AGAIN;
}

static int serve_loop(struct server *s)
{
	printf("\n************************************\n"
	       "* Waiting for client to connect... *\n"
	       "************************************\n");
	for (;;) {
		struct arrival a = { 0 };
		int rc = arrive(s, &a);
		if (rc == RSEC_E_AGAIN)
			continue;
		if (rc < 0)
			return rc;
		struct bench_conn bc;
		rc = bconn_init(&bc, a.c, s->o->timeout_ms, 0);
		if (rc == 0)
			rc = serve_conn(s, &bc, &a);
		if (rc >= 0 && rsec_conn_state(a.c) != RSEC_CONN_CLOSED)
			(void)rsec_conn_close(a.c, "bench done");
		free_lanes(s);
		bconn_free(&bc);
		rsec_conn_free(a.c);
		if (rc != SERVE_MORE)
			return rc;
	}
}

static void print_end(struct server *s)
{
	report_rule(stdout);
	for (size_t i = 0; i < s->nrows; i++)
		report_cpu(stdout, "server", &s->rows[i]);
	if (!s->o->json_path)
		return;
	struct bench_meta meta = { .role = "server", .device = rsec_ctx_device(s->ctx), .peer = s->peer,
				   .o = s->o, .op = (enum bench_op)s->shown.op, .lat = s->shown.lat,
				   .aead = s->o->aead == RSEC_AEAD_CHACHA20_POLY1305 ? "chacha20-poly1305" : "aes-256-gcm" };
	if (!report_json(s->o->json_path, &meta, s->rows, s->nrows))
		s->nrows = 0;
}

int bench_server_run(const struct bench_opts *o)
{
	struct server s = { .o = o };
	int rc = bench_ctx_new(o, true, &s.ctx);
	if (rc == 0) {
		rc = rsec_listen(s.ctx, o->source ? o->source : "0.0.0.0", o->port, 16, &s.l);
		if (rc < 0)
			fprintf(stderr, "%s: cannot listen on port %u: %s\n", PROG, o->port, rsec_strerror(rc));
	}
	if (rc == 0)
		rc = serve_loop(&s);
	if (rc >= 0) {
		print_end(&s);
		rc = s.nrows ? 0 : RSEC_E_IO;
	}
	rsec_listener_free(s.l);
	rsec_ctx_free(s.ctx);
	free(s.samples);
	return rc;
}
