/* SPDX-License-Identifier: MIT */
/*
 * rebuild_check: self-healing on the fabric (lib/rebuild.c). The faults are
 * real: a queue pair moved to the error state mid-stream, on either side, as
 * a forged bad-rkey WRITE would leave it (attack_rdmasec_qp_error.sh does it
 * with a forged packet; here the test reaches into the library to do it at
 * exact moments). tests/fabric/rebuild.sh runs
 *   rebuild_check serve PKI ADDR PORT N [mr]     on host 1 (rebuilds_per_min 60;
 *                                                mr: grants by registration)
 *   rebuild_check run PKI SERVER SOURCE PORT     on host 2
 *   rebuild_check grants PKI SERVER SOURCE PORT  on host 2: the grants scenario alone
 *
 * The server echoes every message; "msg-N!fault" makes it fail its own queue
 * pair before echoing; "grant" grants a 64 KiB READ|WRITE region under a new
 * tag and answers "granted TAG" ("vgrant": the same region, READ only and
 * verified); "check SEED" answers "ok" or "bad at OFFSET"; "stats" answers
 * "rebuilds=N". The client prints one "RESULT
 * name=value" line per scenario, each on a connection of its own:
 *   stream    bursts of messages up to 200 KiB (several fragments), a fault
 *             in most bursts on one side or the other while frames are in
 *             flight: every echo arrives once, in order, intact
 *   grants    a grant works, and goes on working through the same handle
 *             after a rebuild of either side's making (bound again, a new
 *             key), a verified READ grant too (its MAC announced again);
 *             a new one works; one-sided operations in flight at the fault
 *             are each reported, none lost, and the grant works after
 *   budget    a client that allows 3 rebuilds a minute closes at the 4th
 *             fault, saying why
 *   off       a client that allows none closes at the first, as before
 *   timing    recovery time after a fault (until an echo round trip is
 *             back), median and 90th percentile of 15, beside an echo round
 *             trip without a fault and a whole new (resumed) connection
 * Both sides renew their keys every REKEY_BYTES bytes of messages, so the
 * stream's faults strike between and during rekeys (issue 26 item 6): the
 * stream line is followed by "RESULT stream-rekeys=N", the client's count.
 */
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check_util.h"
#include "conn.h"
#include "rdmasec.h"

#define TIMEOUT_MS 30000
#define REGION (64u << 10)
#define MSG_MAX (256u << 10)
#define BURST 24u
#define ROUNDS 12u

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The fault under test: the queue pair in the error state, as a forged WRITE with a bad rkey leaves it. */
static void fail_qp(struct rsec_conn *c)
{
	check_must(rsec_qp_to_error(&c->path.qp), "move the queue pair to error", c);
}

/* ---- server ---- */

struct serving {
	struct rsec_conn *c;
	struct rsec_region *r;
	uint64_t tag;
};

static void reply(struct serving *s, const void *p, size_t n)
{
	check_must(rsec_send(s->c, p, n, TIMEOUT_MS), "send reply", s->c);
}

static void answer(struct serving *s, char *req, size_t len)
{
	char out[64];
	unsigned seed;
	req[len] = '\0';
	if (len >= 4 && memcmp(req, "msg-", 4) == 0) {
		if (strstr(req, "!fault"))
			fail_qp(s->c);
		reply(s, req, len);
	} else if (strcmp(req, "grant") == 0 || strcmp(req, "vgrant") == 0) {
		uint64_t id;
		unsigned access = req[0] == 'v' ? RSEC_ACCESS_READ | RSEC_GRANT_VERIFIED
						: RSEC_ACCESS_READ | RSEC_ACCESS_WRITE;
		if (!s->r)
			check_must(rsec_region_alloc(s->c, REGION, RSEC_ACCESS_READ | RSEC_ACCESS_WRITE, &s->r), "region",
				   s->c);
		s->tag++;
		check_must(rsec_grant(s->c, s->r, 0, REGION, access, 0, s->tag, &id), "grant", s->c);
		snprintf(out, sizeof(out), "granted %" PRIu64, s->tag);
		reply(s, out, strlen(out));
	} else if (sscanf(req, "check %u", &seed) == 1) {
		const uint8_t *p = rsec_region_addr(s->r);
		size_t i = 0;
		while (i < REGION && p[i] == check_pattern_byte(seed, i))
			i++;
		snprintf(out, sizeof(out), i == REGION ? "ok" : "bad at %zu", i);
		reply(s, out, strlen(out));
	} else if (strcmp(req, "stats") == 0) {
		struct rsec_conn_stats st;
		check_must(rsec_conn_stats(s->c, &st), "stats", s->c);
		snprintf(out, sizeof(out), "rebuilds=%" PRIu64, st.rebuilds);
		reply(s, out, strlen(out));
	} else {
		reply(s, "unknown request", 15);
	}
}

/* The next connection, once set up. */
static struct rsec_conn *accept_one(struct rsec_listener *l)
{
	struct rsec_conn *c = NULL;
	double end = now_ms() + TIMEOUT_MS;
	while (!c && now_ms() < end) {
		struct pollfd p = { .fd = rsec_listener_fd(l), .events = POLLIN };
		(void)poll(&p, 1, 100);
		if (rsec_accept(l, &c) < 0)
			c = NULL;
	}
	if (!c)
		check_die("no connection in %d ms", TIMEOUT_MS);
	/* A client may be done before we see it set up (the "off" scenario): the serving loop says how it ended. */
	while (rsec_conn_process(c) == RSEC_E_AGAIN && now_ms() < end) {
		struct pollfd p = { .fd = rsec_conn_fd(c), .events = POLLIN };
		(void)poll(&p, 1, 100);
	}
	return c;
}

/* Keys renewed this often (bytes sent and received): several times a stream burst. */
#define REKEY_BYTES (256u << 10)

static int serve(char **argv)
{
	struct rsec_ctx_attr attr = { .is_server = 1, .comp_mask = RSEC_CTX_ATTR_REBUILDS | RSEC_CTX_ATTR_REKEY,
				      .rebuilds_per_min = 60, .rekey_bytes = REKEY_BYTES };
	if (argv[6] && strcmp(argv[6], "mr") == 0) {
		attr.comp_mask |= RSEC_CTX_ATTR_GRANT_MODE;
		attr.grant_mode = RSEC_GRANT_MR;
	}
	struct rsec_ctx *ctx = check_ctx(argv[2], "server", &attr);
	struct rsec_listener *l;
	check_must(rsec_listen(ctx, argv[3], (uint16_t)atoi(argv[4]), 8, &l), "listen", NULL);
	char *buf = malloc(MSG_MAX + 1);
	if (!buf)
		check_die("out of memory");
	for (int n = atoi(argv[5]); n > 0; n--) {
		struct serving s = { .c = accept_one(l) };
		const char *how = rsec_conn_grant_mechanism(s.c);
		printf("server: grants by %s\n", how ? how : "(not set up)");
		int rc = 0;
		while (rc == 0) {
			size_t len;
			rc = rsec_recv(s.c, buf, MSG_MAX, &len, TIMEOUT_MS);
			if (rc == 0)
				answer(&s, buf, len);
		}
		struct rsec_conn_stats st;
		(void)rsec_conn_stats(s.c, &st);
		printf("server: connection over (%s: %s), %" PRIu64 " rebuilds\n", rsec_strerror(rc),
		       rsec_conn_error(s.c), st.rebuilds);
		rsec_region_free(s.r);
		rsec_conn_free(s.c);
	}
	free(buf);
	rsec_listener_free(l);
	rsec_ctx_free(ctx);
	return 0;
}

/* ---- client ---- */

struct run {
	char **argv;
	char *buf;
};

static struct rsec_conn *dial(struct run *r, uint32_t rebuilds, struct rsec_ctx **ctx)
{
	struct rsec_ctx_attr attr = {
		.local_addr = r->argv[4], .handshake_timeout_ms = TIMEOUT_MS,
		.comp_mask = RSEC_CTX_ATTR_REBUILDS | RSEC_CTX_ATTR_REKEY, .rebuilds_per_min = rebuilds,
		.rekey_bytes = REKEY_BYTES,
	};
	*ctx = check_ctx(r->argv[2], "client", &attr);
	struct rsec_conn *c;
	check_must(rsec_connect(*ctx, r->argv[3], (uint16_t)atoi(r->argv[5]), NULL, TIMEOUT_MS, &c), "connect", NULL);
	return c;
}

static void hang_up(struct rsec_conn *c, struct rsec_ctx *ctx)
{
	(void)rsec_conn_close(c, "done");
	rsec_conn_free(c);
	rsec_ctx_free(ctx);
}

/* One request, its answer into r->buf (NUL-terminated). */
static size_t ask(struct run *r, struct rsec_conn *c, const char *req)
{
	size_t len;
	check_must(rsec_send(c, req, strlen(req), TIMEOUT_MS), req, c);
	check_must(rsec_recv(c, r->buf, MSG_MAX, &len, TIMEOUT_MS), req, c);
	r->buf[len] = '\0';
	return len;
}

static uint64_t rebuilds_of(struct rsec_conn *c)
{
	struct rsec_conn_stats st;
	check_must(rsec_conn_stats(c, &st), "stats", c);
	return st.rebuilds;
}

/* Message k of the stream: "msg-K" then a pattern up to a size that varies (1 to 4 fragments of 64 KiB). */
static size_t stream_msg(uint8_t *p, unsigned k, bool fault)
{
	static const size_t sizes[] = { 16, 200, 4000, 70000, 140000, 200000 };
	size_t n = sizes[k % 6];
	int h = snprintf((char *)p, 32, "msg-%u%s|", k, fault ? "!fault" : "");
	check_pattern_fill(p + h, n - (size_t)h, k);
	return n;
}

/* Echo j of the stream is back: it must be message j exactly. */
static unsigned take_echo(struct run *r, struct rsec_conn *c, uint8_t *want, unsigned j, bool fault)
{
	size_t len;
	check_must(rsec_recv(c, r->buf, MSG_MAX, &len, TIMEOUT_MS), "receive", c);
	size_t n = stream_msg(want, j, fault);
	if (len == n && memcmp(r->buf, want, n) == 0)
		return 0;
	fprintf(stderr, "echo %u: %zu bytes, want %zu (\"%.24s\")\n", j, len, n, r->buf);
	return 1;
}

/*
 * Messages go out WINDOW ahead of their echoes (what fits the peer's
 * buffers both ways: an application that sends without reading waits for
 * credits only it can free). In most rounds one side fails its queue pair
 * right after a send, frames of both sides in flight.
 */
static void stream(struct run *r)
{
	enum { WINDOW = 3 };
	struct rsec_ctx *ctx;
	struct rsec_conn *c = dial(r, 60, &ctx);
	uint8_t *want = malloc(MSG_MAX), *out = malloc(MSG_MAX);
	if (!want || !out)
		check_die("out of memory");
	unsigned sent = 0, echoed = 0, faults = 0, bad = 0;
	bool faulted[ROUNDS * BURST] = { false };
	if (rsec_conn_rebuild_reason(c))
		check_die("a rebuild reason before any rebuild: %s", rsec_conn_rebuild_reason(c));
	for (unsigned round = 0; round < ROUNDS; round++) {
		fprintf(stderr, "stream: round %u, %" PRIu64 " rebuilds so far\n", round, rebuilds_of(c));
		for (unsigned i = 0; i < BURST; i++, sent++) {
			bool server_fault = round % 3 == 1 && i == BURST / 2;
			faulted[sent] = server_fault;
			size_t n = stream_msg(out, sent, server_fault);
			check_must(rsec_send(c, out, n, TIMEOUT_MS), "send", c);
			if (round % 3 == 0 && i == BURST / 2) {
				fail_qp(c);
				faults++;
			}
			faults += server_fault;
			if (sent + 1 - echoed >= WINDOW) {
				bad += take_echo(r, c, want, echoed, faulted[echoed]);
				echoed++;
			}
		}
	}
	for (; echoed < sent; echoed++)
		bad += take_echo(r, c, want, echoed, faulted[echoed]);
	uint64_t mine = rebuilds_of(c);
	ask(r, c, "stats");
	if (bad)
		check_result("stream", "%u of %u echoes wrong", bad, sent);
	else
		check_result("stream", "%u echoed in order, %u faults, %" PRIu64 " rebuilds, server %s, latest: %s", sent,
			     faults, mine, r->buf, rsec_conn_rebuild_reason(c));
	check_result("stream-rekeys", "%" PRIu64, rsec_conn_rekeys(c));
	free(want);
	free(out);
	hang_up(c, ctx);
}

static struct rsec_remote_grant get_grant(struct run *r, struct rsec_conn *c, const char *kind)
{
	struct rsec_remote_grant g;
	ask(r, c, kind);
	uint64_t tag = strtoull(r->buf + strlen("granted "), NULL, 10);
	check_must(rsec_grant_wait(c, tag, &g, TIMEOUT_MS), "grant_wait", c);
	return g;
}

/* Write the pattern of seed through g; the server's answer to "check". */
static const char *write_and_check(struct run *r, struct rsec_conn *c, const struct rsec_remote_grant *g,
				   unsigned seed, uint8_t *src)
{
	char req[32];
	check_pattern_fill(src, REGION, seed);
	check_must(rsec_write(c, g, 0, src, REGION, TIMEOUT_MS), "write", c);
	snprintf(req, sizeof(req), "check %u", seed);
	ask(r, c, req);
	return r->buf;
}

static const char *rc_text(int rc)
{
	return rc == 0 ? "ok" : rsec_strerror(rc);
}

/* Write seed's pattern through g, have the server check it, read it back: "write W, check C, read R". */
static void through(struct run *r, struct rsec_conn *c, const struct rsec_remote_grant *g, unsigned seed,
		    uint8_t *src, uint8_t *dst, char *out, size_t cap)
{
	char req[32];
	check_pattern_fill(src, REGION, seed);
	int w = rsec_write(c, g, 0, src, REGION, TIMEOUT_MS);
	if (w < 0)
		fprintf(stderr, "grants: write: %s: %s\n", rsec_strerror(w), rsec_conn_error(c));
	snprintf(req, sizeof(req), "check %u", seed);
	ask(r, c, req);
	memset(dst, 0, REGION);
	int rd = rsec_read(c, g, 0, dst, REGION, TIMEOUT_MS);
	if (rd == 0 && memcmp(dst, src, REGION) != 0)
		rd = RSEC_E_MAC;
	snprintf(out, cap, "write %s, check %s, read %s", rc_text(w), r->buf, rc_text(rd));
}

static void grants(struct run *r)
{
	struct rsec_ctx *ctx;
	struct rsec_conn *c = dial(r, 60, &ctx);
	uint8_t *src = malloc(REGION), *dst = malloc(REGION);
	if (!src || !dst)
		check_die("out of memory");
	struct rsec_remote_grant g1 = get_grant(r, c, "grant");
	char first[32], mine[80], theirs[80];
	snprintf(first, sizeof(first), "%s", write_and_check(r, c, &g1, 1, src));
	uint64_t n = rebuilds_of(c);
	/* The same handle after a rebuild of ours, then of the server's making: bound again, a new key. */
	fail_qp(c);
	ask(r, c, "msg-after");
	through(r, c, &g1, 3, src, dst, mine, sizeof(mine));
	ask(r, c, "msg-after!fault");
	ask(r, c, "msg-after");
	through(r, c, &g1, 4, src, dst, theirs, sizeof(theirs));
	/* A verified READ grant: its MAC comes again under the new keys. */
	struct rsec_remote_grant vg = get_grant(r, c, "vgrant");
	int v1 = rsec_read_verified(c, &vg, dst, REGION, TIMEOUT_MS);
	fail_qp(c);
	ask(r, c, "msg-after");
	int v2 = rsec_read_verified(c, &vg, dst, REGION, TIMEOUT_MS);
	if (v2 < 0)
		fprintf(stderr, "grants: verified read: %s: %s\n", rsec_strerror(v2), rsec_conn_error(c));
	struct rsec_remote_grant g2 = get_grant(r, c, "grant");
	const char *second = write_and_check(r, c, &g2, 2, src);
	check_result("grants",
		     "%s; after a rebuild, the same handle: %s; after the server's: %s; verified read %s, after a "
		     "rebuild %s; %" PRIu64 " rebuilds; new grant %s",
		     first, mine, theirs, rc_text(v1), rc_text(v2), rebuilds_of(c) - n, second);

	/* Posted operations in flight when the queue pair fails: each one reported. */
	struct rsec_region *local;
	check_must(rsec_region_alloc(c, REGION, RSEC_ACCESS_LOCAL, &local), "local region", c);
	enum { OPS = 48 }; /* 3 MiB in all: about 100 ms on the fabric, most still in flight at the fault */
	struct rsec_wr wr[OPS];
	for (unsigned i = 0; i < OPS; i++)
		wr[i] = (struct rsec_wr){ .op = RSEC_OP_WRITE, .grant = &g2, .local = local, .len = REGION, .user_id = i };
	unsigned posted;
	check_must(rsec_post(c, wr, OPS, &posted), "post", c);
	fail_qp(c);
	unsigned ok = 0, failed = 0, other = 0, seen = 0;
	struct rsec_wc wc[16];
	double end = now_ms() + TIMEOUT_MS;
	while (seen < posted && now_ms() < end) {
		int got = rsec_poll(c, wc, 16, 1000);
		check_must(got, "poll", c);
		for (int i = 0; i < got; i++, seen++) {
			if (wc[i].status == 0)
				ok++;
			else if (wc[i].status == RSEC_E_QP)
				failed++;
			else
				other++;
		}
	}
	ask(r, c, "msg-goes-on");
	char goes_on[32];
	snprintf(goes_on, sizeof(goes_on), "%s", r->buf);
	check_result("inflight", "%u posted: %u reported (%u failed, %u other), %u in flight; then %s, the grant %s",
		     posted, seen, failed, other, rsec_inflight(c), goes_on, write_and_check(r, c, &g2, 5, src));
	(void)ok;
	rsec_region_free(local);
	free(src);
	free(dst);
	hang_up(c, ctx);
}

/* Fail the queue pair until the connection closes; how many rebuilds it took, and why it closed. */
static void until_closed(struct run *r, uint32_t budget, const char *name)
{
	struct rsec_ctx *ctx;
	struct rsec_conn *c = dial(r, budget, &ctx);
	int rc = 0;
	unsigned faults = 0;
	while (rc == 0 && faults < 10) {
		fail_qp(c);
		faults++;
		size_t len;
		rc = rsec_send(c, "msg-x", 5, TIMEOUT_MS);
		if (rc == 0)
			rc = rsec_recv(c, r->buf, MSG_MAX, &len, TIMEOUT_MS);
	}
	check_result(name, "fault %u closed it after %" PRIu64 " rebuilds: %s: %s", faults, rebuilds_of(c),
		     rsec_strerror(rc), rsec_conn_error(c));
	rsec_conn_free(c);
	rsec_ctx_free(ctx);
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Recovery after a fault against a plain round trip and a whole new connection; medians, ms. */
static void timing(struct run *r)
{
	enum { N = 15 };
	double rtt[N], heal[N], conn[5];
	struct rsec_ctx *ctx;
	struct rsec_conn *c = dial(r, 60, &ctx);
	for (int i = 0; i < N; i++) {
		double t0 = now_ms();
		ask(r, c, "msg-t");
		rtt[i] = now_ms() - t0;
		t0 = now_ms();
		fail_qp(c);
		ask(r, c, "msg-t");
		heal[i] = now_ms() - t0;
	}
	uint64_t n = rebuilds_of(c);
	hang_up(c, ctx);
	struct rsec_ctx_attr attr = { .local_addr = r->argv[4], .handshake_timeout_ms = TIMEOUT_MS };
	ctx = check_ctx(r->argv[2], "client", &attr);
	for (int i = 0; i < 5; i++) {
		double t0 = now_ms();
		check_must(rsec_connect(ctx, r->argv[3], (uint16_t)atoi(r->argv[5]), NULL, TIMEOUT_MS, &c), "connect",
			   NULL);
		ask(r, c, "msg-t");
		conn[i] = now_ms() - t0;
		(void)rsec_conn_close(c, "done");
		rsec_conn_free(c);
	}
	rsec_ctx_free(ctx);
	qsort(rtt, N, sizeof(rtt[0]), by_value);
	qsort(heal, N, sizeof(heal[0]), by_value);
	qsort(conn, 5, sizeof(conn[0]), by_value);
	check_result("timing", "%" PRIu64 " rebuilds; recovery median %.1f ms, p90 %.1f ms; round trip median %.2f ms; "
			       "new connection and round trip median %.1f ms",
		     n, heal[N / 2], heal[N * 9 / 10], rtt[N / 2], conn[2]);
}

static int run(char **argv)
{
	struct run r = { .argv = argv, .buf = malloc(MSG_MAX + 1) };
	if (!r.buf)
		check_die("out of memory");
	stream(&r);
	grants(&r);
	until_closed(&r, 3, "budget");
	until_closed(&r, 0, "off");
	timing(&r);
	free(r.buf);
	return 0;
}

int main(int argc, char **argv)
{
	check_prog = "rebuild_check";
	if ((argc == 6 || argc == 7) && strcmp(argv[1], "serve") == 0)
		return serve(argv);
	if (argc == 6 && strcmp(argv[1], "run") == 0)
		return run(argv);
	if (argc == 6 && strcmp(argv[1], "grants") == 0) {
		struct run r = { .argv = argv, .buf = malloc(MSG_MAX + 1) };
		if (!r.buf)
			check_die("out of memory");
		grants(&r);
		free(r.buf);
		return 0;
	}
	fprintf(stderr, "usage: rebuild_check serve PKI ADDR PORT N [mr] | run|grants PKI SERVER SOURCE PORT\n");
	return 2;
}
