/* SPDX-License-Identifier: MIT */
/*
 * async_check: the asynchronous one-sided API (rsec_post, rsec_poll) on the
 * fabric, using only include/rdmasec.h. tests/fabric/async.sh runs
 *   async_check serve PKI ADDR PORT N       on host 1: N connections, one after another
 *   async_check run PKI SERVER SOURCE PORT MODE   on host 2, MODE event or busy
 *
 * The server grants each connection a 1 MiB READ|WRITE region (tag 1) and
 * answers text requests: "check SEED" (does the region hold the pattern of
 * SEED? "ok" or "bad at OFFSET"), "revoke" ("revoked"). The client prints one
 * "RESULT name=value" line per scenario:
 *   pipelined-write  256 x 4 KiB WRITEs, up to the depth in flight, most unsignaled;
 *                    the server finds every byte
 *   pipelined-read   256 x 4 KiB READs back; every byte checked
 *   in-order         completions came back in posting order, each with its length
 *   depth            posting past max_inflight without polling: RSEC_E_AGAIN after exactly the depth
 *   bad-wr           a chain whose third request leaves the grant: two posted, RSEC_E_RANGE, the two complete
 *   foreign-region   a region of another connection is refused (RSEC_E_INVAL)
 *   mixed            a blocking rsec_write while posted operations are in flight
 *   after-revoke     8 WRITEs through a revoked grant: each reported failed, none lost; the
 *                    remote access error the first one meets rebuilds the data path, and
 *                    the session goes on
 *   last-words       the server answers "bye" and closes at once; the client, looking only
 *                    once both have arrived, still receives the answer, then the close
 */
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check_util.h"
#include "rdmasec.h"

#define TIMEOUT_MS 60000
#define REGION (1u << 20)
#define CHUNK 4096u
#define NCHUNK (REGION / CHUNK)
#define DEPTH 64u

/* The first offset where p differs from seed's pattern, or n. */
static size_t first_bad(const uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != check_pattern_byte(seed, i))
			return i;
	return n;
}

/* ---- server ---- */

static void answer(struct rsec_conn *c, struct rsec_region *r, uint64_t grant_id, const char *req)
{
	char reply[64];
	unsigned seed;
	if (sscanf(req, "check %u", &seed) == 1) {
		size_t bad = first_bad(rsec_region_addr(r), REGION, seed);
		if (bad == REGION)
			snprintf(reply, sizeof(reply), "ok");
		else
			snprintf(reply, sizeof(reply), "bad at %zu", bad);
	} else if (strcmp(req, "revoke") == 0) {
		check_must(rsec_revoke(c, grant_id), "revoke", c);
		snprintf(reply, sizeof(reply), "revoked");
	} else if (strcmp(req, "ping") == 0) {
		snprintf(reply, sizeof(reply), "ok");
	} else if (strcmp(req, "bye") == 0) {
		snprintf(reply, sizeof(reply), "last words");
	} else {
		snprintf(reply, sizeof(reply), "unknown request");
	}
	check_must(rsec_send(c, reply, strlen(reply), TIMEOUT_MS), "send reply", c);
}

/* One connection of the server's: its grant once established. */
struct served {
	struct rsec_conn *c;
	struct rsec_region *r;
	uint64_t grant_id;
};

/* Drive s; false once its connection is over. */
static bool serve_step(struct served *s)
{
	int rc = rsec_conn_process(s->c);
	if (rc == RSEC_E_AGAIN)
		return true;
	if (rc < 0)
		return false; /* the client is done, or failed: it says so itself */
	if (!s->r) {
		check_must(rsec_region_alloc(s->c, REGION, RSEC_ACCESS_READ | RSEC_ACCESS_WRITE, &s->r), "region", s->c);
		check_must(rsec_grant(s->c, s->r, 0, REGION, RSEC_ACCESS_READ | RSEC_ACCESS_WRITE, 0, 1, &s->grant_id),
		     "grant", s->c);
	}
	char req[64];
	size_t len;
	while ((rc = rsec_recv(s->c, req, sizeof(req) - 1, &len, 0)) == 0) {
		req[len] = '\0';
		answer(s->c, s->r, s->grant_id, req);
		if (strcmp(req, "bye") == 0)
			return false; /* closed at once: the reply was posted a moment ago */
	}
	return rc == RSEC_E_AGAIN;
}

#define MAX_SERVED 4

static int serve(char **argv)
{
	struct rsec_ctx_attr attr = { .is_server = 1, .handshake_timeout_ms = TIMEOUT_MS };
	struct rsec_ctx *ctx = check_ctx(argv[2], "server", &attr);
	struct rsec_listener *l;
	int left = atoi(argv[5]);
	check_must(rsec_listen(ctx, argv[3], (uint16_t)atoi(argv[4]), 16, &l), "listen", NULL);
	struct served s[MAX_SERVED] = { 0 };
	while (left > 0) {
		struct pollfd p[MAX_SERVED + 1] = { { .fd = rsec_listener_fd(l), .events = POLLIN } };
		for (int i = 0; i < MAX_SERVED; i++)
			p[i + 1] = (struct pollfd){ .fd = s[i].c ? rsec_conn_fd(s[i].c) : -1, .events = POLLIN };
		(void)poll(p, MAX_SERVED + 1, 100);
		for (int i = 0; i < MAX_SERVED; i++) {
			if (!s[i].c && rsec_accept(l, &s[i].c) < 0)
				s[i].c = NULL;
			if (s[i].c && !serve_step(&s[i])) {
				rsec_region_free(s[i].r);
				rsec_conn_free(s[i].c);
				s[i] = (struct served){ 0 };
				left--;
			}
		}
	}
	rsec_listener_free(l);
	rsec_ctx_free(ctx);
	return 0;
}

/* ---- client ---- */

struct client {
	struct rsec_conn *c;
	struct rsec_remote_grant g;
	struct rsec_region *src, *dst;
	uint64_t next_id;  /* user_id of the next operation */
	uint64_t expect;   /* reported completions carry user_ids from this one up, increasing */
	uint32_t len;      /* and this length */
	bool in_order;
};

static void request(struct client *cl, const char *req, char *reply, size_t cap)
{
	size_t len;
	check_must(rsec_send(cl->c, req, strlen(req), TIMEOUT_MS), "send request", cl->c);
	check_must(rsec_recv(cl->c, reply, cap - 1, &len, TIMEOUT_MS), "receive reply", cl->c);
	reply[len] = '\0';
}

/* Chunk k of the grant, to or from chunk k of local, as operation id. */
static struct rsec_wr chunk(struct client *cl, enum rsec_op op, struct rsec_region *local, unsigned k, uint64_t id)
{
	return (struct rsec_wr){
		.user_id = id, .op = op, .grant = &cl->g, .remote_off = (uint64_t)k * CHUNK, .local = local,
		.local_off = (size_t)k * CHUNK, .len = CHUNK,
	};
}

/* Reap what is there (waiting up to timeout_ms for the first); checks order and status. Returns how many. */
static unsigned reap(struct client *cl, int timeout_ms)
{
	struct rsec_wc wc[32];
	int n = rsec_poll(cl->c, wc, 32, timeout_ms);
	check_must(n, "rsec_poll", cl->c);
	for (int i = 0; i < n; i++) {
		if (wc[i].status != 0)
			check_die("operation %" PRIu64 " failed: %s", wc[i].user_id, rsec_strerror(wc[i].status));
		if (wc[i].user_id < cl->expect || wc[i].len != cl->len)
			cl->in_order = false;
		cl->expect = wc[i].user_id + 1;
	}
	return (unsigned)n;
}

/* NCHUNK operations of CHUNK bytes over the whole grant, every 8th signaled, DEPTH in flight at most. */
static void pipeline(struct client *cl, enum rsec_op op, struct rsec_region *local)
{
	unsigned next = 0;
	cl->len = CHUNK;
	while (next < NCHUNK) {
		struct rsec_wr w[16];
		unsigned n = 0, posted = 0;
		for (; n < 16 && next + n < NCHUNK; n++) {
			unsigned k = next + n;
			bool last = k + 1 == NCHUNK;
			w[n] = chunk(cl, op, local, k, cl->next_id + k);
			w[n].flags = (k % 8 == 7 || last) ? 0 : RSEC_WR_UNSIGNALED;
		}
		int rc = rsec_post(cl->c, w, n, &posted);
		if (rc < 0 && rc != RSEC_E_AGAIN)
			check_must(rc, "rsec_post", cl->c);
		next += posted;
		if (rc == RSEC_E_AGAIN || posted == 0)
			(void)reap(cl, TIMEOUT_MS);
	}
	cl->next_id += NCHUNK;
	while (rsec_inflight(cl->c))
		(void)reap(cl, TIMEOUT_MS);
}

static void scenario_pipelined(struct client *cl)
{
	char reply[64];
	check_pattern_fill(rsec_region_addr(cl->src), REGION, 7);
	pipeline(cl, RSEC_OP_WRITE, cl->src);
	request(cl, "check 7", reply, sizeof(reply));
	check_result("pipelined-write", "%s", strcmp(reply, "ok") == 0 ? "verified" : reply);
	pipeline(cl, RSEC_OP_READ, cl->dst);
	size_t bad = first_bad(rsec_region_addr(cl->dst), REGION, 7);
	if (bad == REGION)
		check_result("pipelined-read", "verified");
	else
		check_result("pipelined-read", "bad at %zu", bad);
	check_result("in-order", "%s", cl->in_order ? "yes" : "no");
}

static void scenario_depth(struct client *cl)
{
	struct rsec_wr w = { .op = RSEC_OP_WRITE, .grant = &cl->g, .local = cl->src, .len = 64 };
	unsigned n = 0;
	int rc;
	for (;;) {
		w.user_id = cl->next_id + n;
		w.remote_off = w.local_off = (size_t)n * 64;
		rc = rsec_post(cl->c, &w, 1, NULL);
		if (rc < 0 || n > DEPTH)
			break;
		n++;
	}
	check_result("depth", "%s after %u", rsec_strerror(rc), n);
	cl->expect = cl->next_id;
	cl->len = 64;
	while (rsec_inflight(cl->c))
		(void)reap(cl, TIMEOUT_MS);
	cl->next_id += n + 1;
}

static void scenario_bad_wr(struct client *cl)
{
	struct rsec_wr w[3];
	for (unsigned i = 0; i < 3; i++)
		w[i] = chunk(cl, RSEC_OP_READ, cl->dst, i, cl->next_id + i);
	w[2].remote_off = REGION - CHUNK / 2; /* half of it past the grant */
	unsigned posted = 99;
	int rc = rsec_post(cl->c, w, 3, &posted);
	unsigned done = 0;
	cl->expect = cl->next_id;
	cl->len = CHUNK;
	while (rsec_inflight(cl->c))
		done += reap(cl, TIMEOUT_MS);
	check_result("bad-wr", "%s posted=%u completed=%u", rsec_strerror(rc), posted, done);
	cl->next_id += 3;
}

static void scenario_mixed(struct client *cl)
{
	struct rsec_wr w[4];
	for (unsigned i = 0; i < 4; i++)
		w[i] = chunk(cl, RSEC_OP_WRITE, cl->src, i, cl->next_id + i);
	check_must(rsec_post(cl->c, w, 4, NULL), "rsec_post", cl->c);
	static uint8_t plain[CHUNK];
	memset(plain, 0x5a, sizeof(plain));
	int rc = rsec_write(cl->c, &cl->g, 8 * CHUNK, plain, sizeof(plain), TIMEOUT_MS);
	unsigned done = 0;
	cl->expect = cl->next_id;
	cl->len = CHUNK;
	while (rsec_inflight(cl->c))
		done += reap(cl, TIMEOUT_MS);
	check_result("mixed", "%s, %u posted completions", rc == 0 ? "rsec_write succeeded" : rsec_strerror(rc), done);
	cl->next_id += 4;
}

static void scenario_foreign(struct client *cl, struct rsec_region *foreign)
{
	struct rsec_wr w = { .op = RSEC_OP_WRITE, .grant = &cl->g, .local = foreign, .len = 64 };
	check_result("foreign-region", "%s", rsec_strerror(rsec_post(cl->c, &w, 1, NULL)));
}

/* Last: it costs the connection a rebuild of its data path. */
static void scenario_after_revoke(struct client *cl)
{
	char reply[64];
	request(cl, "revoke", reply, sizeof(reply));
	struct rsec_wr w[8];
	for (unsigned i = 0; i < 8; i++) {
		w[i] = chunk(cl, RSEC_OP_WRITE, cl->src, i, 1000 + i);
		w[i].flags = i == 7 ? 0 : RSEC_WR_UNSIGNALED;
	}
	check_must(rsec_post(cl->c, w, 8, NULL), "rsec_post after revoke", cl->c);
	unsigned failed = 0, ok = 0;
	int rc = 0;
	struct rsec_wc wc[8];
	while (failed + ok < 8 && (rc = rsec_poll(cl->c, wc, 8, TIMEOUT_MS)) > 0)
		for (int i = 0; i < rc; i++)
			wc[i].status ? failed++ : ok++;
	unsigned inflight = rsec_inflight(cl->c);
	/* The session goes on: a request and its answer over the rebuilt data path. */
	request(cl, "ping", reply, sizeof(reply));
	struct rsec_conn_stats st;
	check_must(rsec_conn_stats(cl->c, &st), "stats", cl->c);
	check_result("after-revoke", "%u failed, %u succeeded; in flight %u; then %s after %" PRIu64 " rebuild", failed,
		     ok, inflight, reply, st.rebuilds);
}

/* The server answers "bye" and closes at once; we look only once both have arrived. */
static void scenario_last_words(struct client *cl)
{
	char reply[64] = "";
	size_t len = 0;
	check_must(rsec_send(cl->c, "bye", 3, TIMEOUT_MS), "send bye", cl->c);
	struct timespec nap = { .tv_nsec = 300 * 1000 * 1000 };
	nanosleep(&nap, NULL);
	int rc = rsec_recv(cl->c, reply, sizeof(reply) - 1, &len, TIMEOUT_MS);
	reply[rc == 0 ? len : 0] = '\0';
	char more[8];
	int after = rsec_recv(cl->c, more, sizeof(more), &len, TIMEOUT_MS);
	check_result("last-words", "%s, then %s", rc == 0 ? reply : rsec_strerror(rc), rsec_strerror(after));
}

static int run(char **argv)
{
	bool busy = strcmp(argv[6], "busy") == 0;
	struct rsec_ctx_attr attr = {
		.local_addr = argv[4], .handshake_timeout_ms = TIMEOUT_MS,
		.comp_mask = RSEC_CTX_ATTR_DEPTH | RSEC_CTX_ATTR_POLL, .max_inflight = DEPTH,
		.poll_mode = busy ? RSEC_POLL_BUSY : RSEC_POLL_EVENT,
	};
	struct rsec_ctx *ctx = check_ctx(argv[2], "client", &attr);
	struct client cl = { .in_order = true };
	uint16_t port = (uint16_t)atoi(argv[5]);
	check_must(rsec_connect(ctx, argv[3], port, NULL, TIMEOUT_MS, &cl.c), "connect", NULL);
	check_must(rsec_grant_wait(cl.c, 1, &cl.g, TIMEOUT_MS), "grant", cl.c);
	check_must(rsec_region_alloc(cl.c, REGION, RSEC_ACCESS_LOCAL, &cl.src), "region", cl.c);
	check_must(rsec_region_alloc(cl.c, REGION, RSEC_ACCESS_LOCAL, &cl.dst), "region", cl.c);
	/* A second connection, for its region only. */
	struct rsec_conn *other;
	struct rsec_region *foreign;
	check_must(rsec_connect(ctx, argv[3], port, NULL, TIMEOUT_MS, &other), "connect", NULL);
	check_must(rsec_region_alloc(other, 4096, RSEC_ACCESS_LOCAL, &foreign), "region", other);

	scenario_pipelined(&cl);
	scenario_depth(&cl);
	scenario_bad_wr(&cl);
	scenario_mixed(&cl);
	scenario_foreign(&cl, foreign);
	scenario_after_revoke(&cl);
	scenario_last_words(&cl);

	rsec_region_free(foreign);
	rsec_conn_free(other);
	rsec_region_free(cl.src);
	rsec_region_free(cl.dst);
	rsec_conn_free(cl.c);
	rsec_ctx_free(ctx);
	return 0;
}

int main(int argc, char **argv)
{
	return check_serve_or_run(argc, argv, "async_check", "event|busy", serve, run);
}
