/* SPDX-License-Identifier: MIT */
/*
 * lanes_check: further queue pairs under one session (rsec_conn_add_qp) on
 * the fabric, using only include/rdmasec.h. tests/fabric/async.sh runs
 *   lanes_check serve PKI ADDR PORT 1        on host 1 (max_qps 4)
 *   lanes_check run PKI SERVER SOURCE PORT MODE   on host 2, MODE event or busy
 *
 * The server takes one connection and every queue pair its client adds;
 * on each it grants a 256 KiB READ|WRITE region (tag 1) and answers "check
 * SEED" ("ok" or "bad at OFFSET") and "ping" ("ok") over that queue pair's
 * own messages. The
 * client prints one "RESULT name=value" line per scenario:
 *   opened        three further queue pairs, without a handshake
 *   qpns          the four local QPNs are distinct, and so are the remote ones
 *   over-limit    a fourth is refused by the server's max_qps; the session goes on
 *   striped       WRITEs striped over the four queue pairs, all in flight at once;
 *                 each server region holds exactly its own pattern
 *   cross-lane    a WRITE through another queue pair's grant fails that queue pair only
 *   lane-close    closing one queue pair leaves the others working
 *   root-free     freeing the session's first connection closes the others
 */
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_util.h"
#include "rdmasec.h"

#define TIMEOUT_MS 60000
#define REGION (256u << 10)
#define CHUNK 4096u
#define NCHUNK (REGION / CHUNK)
#define QPS 4u /* the server's max_qps: the first and three more */

/* ---- server ---- */

struct lane {
	struct rsec_conn *c;
	struct rsec_region *r;
};

static void answer(struct lane *l, const char *req)
{
	char reply[64];
	unsigned seed;
	if (sscanf(req, "check %u", &seed) == 1) {
		const uint8_t *p = rsec_region_addr(l->r);
		size_t i = 0;
		while (i < REGION && p[i] == check_pattern_byte(seed, i))
			i++;
		if (i == REGION)
			snprintf(reply, sizeof(reply), "ok");
		else
			snprintf(reply, sizeof(reply), "bad at %zu", i);
	} else if (strcmp(req, "ping") == 0) {
		snprintf(reply, sizeof(reply), "ok");
	} else {
		snprintf(reply, sizeof(reply), "unknown request");
	}
	check_must(rsec_send(l->c, reply, strlen(reply), TIMEOUT_MS), "send reply", l->c);
}

/* A queue pair just up: its grant. */
static void lane_start(struct lane *l)
{
	uint64_t id;
	check_must(rsec_region_alloc(l->c, REGION, RSEC_ACCESS_READ | RSEC_ACCESS_WRITE, &l->r), "region", l->c);
	check_must(rsec_grant(l->c, l->r, 0, REGION, RSEC_ACCESS_READ | RSEC_ACCESS_WRITE, 0, 1, &id), "grant", l->c);
}

/* Drive one queue pair; false once it is over (closed by either side or failed). */
static bool lane_step(struct lane *l)
{
	int rc = rsec_conn_process(l->c);
	char req[64];
	size_t len;
	while (rc >= 0 && (rc = rsec_recv(l->c, req, sizeof(req) - 1, &len, 0)) == 0) {
		req[len] = '\0';
		answer(l, req);
	}
	return rc == RSEC_E_AGAIN || rc >= 0;
}

static void lane_end(struct lane *l)
{
	rsec_region_free(l->r);
	rsec_conn_free(l->c);
	*l = (struct lane){ 0 };
}

static int serve(char **argv)
{
	struct rsec_ctx_attr attr = { .is_server = 1, .handshake_timeout_ms = TIMEOUT_MS,
				      .comp_mask = RSEC_CTX_ATTR_QPS, .max_qps = QPS };
	struct rsec_ctx *ctx = check_ctx(argv[2], "server", &attr);
	struct rsec_listener *l;
	check_must(rsec_listen(ctx, argv[3], (uint16_t)atoi(argv[4]), 4, &l), "listen", NULL);
	struct lane lanes[QPS] = { 0 };
	struct pollfd p = { .fd = rsec_listener_fd(l), .events = POLLIN };
	while (poll(&p, 1, TIMEOUT_MS) == 1 && rsec_accept(l, &lanes[0].c) == RSEC_E_AGAIN)
		;
	if (!lanes[0].c)
		check_die("no connection");
	int rc;
	while ((rc = rsec_conn_process(lanes[0].c)) == RSEC_E_AGAIN)
		(void)poll(&(struct pollfd){ .fd = rsec_conn_fd(lanes[0].c), .events = POLLIN }, 1, 100);
	check_must(rc, "set-up", lanes[0].c);
	lane_start(&lanes[0]);
	for (;;) {
		struct pollfd fds[QPS];
		for (unsigned i = 0; i < QPS; i++)
			fds[i] = (struct pollfd){ .fd = lanes[i].c ? rsec_conn_fd(lanes[i].c) : -1, .events = POLLIN };
		(void)poll(fds, QPS, 10);
		struct rsec_conn *more;
		rc = rsec_conn_add_qp(lanes[0].c, 0, &more);
		for (unsigned i = 1; rc == 0 && i < QPS; i++) {
			if (!lanes[i].c) {
				lanes[i].c = more;
				lane_start(&lanes[i]);
				break;
			}
		}
		if (!lane_step(&lanes[0]))
			break;
		for (unsigned i = 1; i < QPS; i++)
			if (lanes[i].c && !lane_step(&lanes[i]))
				lane_end(&lanes[i]);
	}
	for (unsigned i = 0; i < QPS; i++)
		if (lanes[i].c)
			lane_end(&lanes[i]);
	rsec_listener_free(l);
	rsec_ctx_free(ctx);
	return 0;
}

/* ---- client ---- */

struct qp {
	struct rsec_conn *c;
	struct rsec_remote_grant g;
	struct rsec_region *src;
};

/* Ask q's side of the server req; true if it said "ok". */
static bool ask(struct qp *q, const char *req)
{
	char reply[64];
	size_t len;
	check_must(rsec_send(q->c, req, strlen(req), TIMEOUT_MS), "send request", q->c);
	check_must(rsec_recv(q->c, reply, sizeof(reply) - 1, &len, TIMEOUT_MS), "receive reply", q->c);
	reply[len] = '\0';
	return strcmp(reply, "ok") == 0;
}

static bool check_ok(struct qp *q, unsigned seed)
{
	char req[32];
	snprintf(req, sizeof(req), "check %u", seed);
	return ask(q, req);
}

static void scenario_opened(struct qp *qps)
{
	for (unsigned i = 1; i < QPS; i++)
		check_must(rsec_conn_add_qp(qps[0].c, TIMEOUT_MS, &qps[i].c), "rsec_conn_add_qp", qps[0].c);
	check_result("opened", "%u further, first resumed=%d", QPS - 1, rsec_conn_resumed(qps[0].c));
	bool distinct = true;
	struct rsec_conn_stats s[QPS];
	for (unsigned i = 0; i < QPS; i++)
		check_must(rsec_conn_stats(qps[i].c, &s[i]), "stats", qps[i].c);
	for (unsigned i = 0; i < QPS; i++)
		for (unsigned j = 0; j < i; j++)
			distinct &= s[i].local_qpn != s[j].local_qpn && s[i].remote_qpn != s[j].remote_qpn;
	check_result("qpns", "%s", distinct ? "distinct" : "repeated");
}

static void scenario_over_limit(struct qp *qps)
{
	struct rsec_conn *extra = NULL;
	int rc = rsec_conn_add_qp(qps[0].c, TIMEOUT_MS, &extra);
	check_result("over-limit", "%s, %s; session %s", rsec_strerror(rc), extra ? "got one" : "none",
		     ask(&qps[0], "ping") ? "goes on" : "broken");
}

/* WRITEs of seed i+1 striped over every queue pair's grant, all posted before any is reaped. */
static void scenario_striped(struct qp *qps)
{
	for (unsigned i = 0; i < QPS; i++) {
		check_must(rsec_grant_wait(qps[i].c, 1, &qps[i].g, TIMEOUT_MS), "grant", qps[i].c);
		check_must(rsec_region_alloc(qps[i].c, REGION, RSEC_ACCESS_LOCAL, &qps[i].src), "region", qps[i].c);
		check_pattern_fill(rsec_region_addr(qps[i].src), REGION, i + 1);
	}
	for (unsigned k = 0; k < NCHUNK; k++)
		for (unsigned i = 0; i < QPS; i++)
			check_must(rsec_post_write(qps[i].c, &qps[i].g, (uint64_t)k * CHUNK, qps[i].src, (size_t)k * CHUNK,
						   CHUNK, k),
				   "rsec_post_write", qps[i].c);
	unsigned verified = 0;
	for (unsigned i = 0; i < QPS; i++) {
		struct rsec_wc wc[16];
		unsigned done = 0, ok = 0;
		while (done < NCHUNK) {
			int n = rsec_poll(qps[i].c, wc, 16, TIMEOUT_MS);
			check_must(n, "rsec_poll", qps[i].c);
			for (int j = 0; j < n; j++)
				ok += wc[j].status == 0 && wc[j].user_id == done + (unsigned)j;
			done += (unsigned)n;
		}
		verified += ok == NCHUNK && check_ok(&qps[i], i + 1);
	}
	check_result("striped", "%u of %u verified", verified, QPS);
}

/* Queue pair 1 writes through queue pair 2's grant: its window is bound to the other QP. */
static void scenario_cross_lane(struct qp *qps)
{
	int rc = rsec_write(qps[1].c, &qps[2].g, 0, "x", 1, TIMEOUT_MS);
	bool others = check_ok(&qps[0], 1) && check_ok(&qps[2], 3) && check_ok(&qps[3], 4);
	check_result("cross-lane", "%s; the others %s", rsec_strerror(rc), others ? "work" : "broken");
	rsec_region_free(qps[1].src);
	rsec_conn_free(qps[1].c);
	qps[1] = (struct qp){ 0 };
}

static void scenario_lane_close(struct qp *qps)
{
	check_must(rsec_conn_close(qps[3].c, "done"), "close", qps[3].c);
	bool others = check_ok(&qps[0], 1) && check_ok(&qps[2], 3);
	check_result("lane-close", "the others %s", others ? "work" : "broken");
	rsec_region_free(qps[3].src);
	rsec_conn_free(qps[3].c);
	qps[3] = (struct qp){ 0 };
}

static void scenario_root_free(struct qp *qps)
{
	rsec_region_free(qps[0].src);
	rsec_conn_free(qps[0].c);
	qps[0] = (struct qp){ 0 };
	char buf[8];
	size_t len;
	int rc = rsec_recv(qps[2].c, buf, sizeof(buf), &len, 1000);
	check_result("root-free", "%s, %s", rsec_conn_state(qps[2].c) == RSEC_CONN_CLOSED ? "closed" : "open",
		     rsec_strerror(rc));
	rsec_region_free(qps[2].src);
	rsec_conn_free(qps[2].c);
}

static int run(char **argv)
{
	bool busy = strcmp(argv[6], "busy") == 0;
	struct rsec_ctx_attr attr = {
		.local_addr = argv[4], .handshake_timeout_ms = TIMEOUT_MS,
		.comp_mask = RSEC_CTX_ATTR_POLL, .poll_mode = busy ? RSEC_POLL_BUSY : RSEC_POLL_EVENT,
	};
	struct rsec_ctx *ctx = check_ctx(argv[2], "client", &attr);
	struct qp qps[QPS] = { 0 };
	check_must(rsec_connect(ctx, argv[3], (uint16_t)atoi(argv[5]), NULL, TIMEOUT_MS, &qps[0].c), "connect", NULL);
	scenario_opened(qps);
	scenario_over_limit(qps);
	scenario_striped(qps);
	scenario_cross_lane(qps);
	scenario_lane_close(qps);
	scenario_root_free(qps);
	rsec_ctx_free(ctx);
	return 0;
}

int main(int argc, char **argv)
{
	return check_serve_or_run(argc, argv, "lanes_check", "event|busy", serve, run);
}
