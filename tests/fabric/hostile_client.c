/* SPDX-License-Identifier: MIT */
/*
 * hostile_client: an authenticated client that breaks the rules, for
 * tests/fabric/hostile_peer.sh and hostile_flood.sh (run in the guest).
 *
 * It links the library's internals so that it may post any work request on
 * its own QP, or drive the data path without the control channel: what a
 * peer with its own copy of the code could do. One mode per run, from the
 * table at the bottom; each prints "RESULT name=value" lines the scripts
 * assert on. The server's side of each story is in its log.
 *
 *   hostile_client [-i IDENTITY] MODE PKI_DIR SERVER_IP SOURCE_IP [ARGS]
 *
 * IDENTITY names PKI_DIR's IDENTITY.pem/.key (default "client"); each attack
 * gets its own, so the server's log lines tell them apart.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/ssl.h>

#include "app_proto.h"
#include "check_util.h"
#include "conn.h"
#include "rdmasec.h"

#define PORT 7471
/* TLS in the emulated guest is slow, and slower still under a flood. */
#define TIMEOUT_MS 60000
/* How long an attacker waits for the server to close it. */
#define CLOSE_WAIT_MS 30000
#define REPLY_WAIT_MS 15000 /* no-read: the server closes the connection, or stops answering */
#define ECHO_MAX (256u << 10)
#define GAP_REPORT_MS 1000 /* the good client reports every pause this long */
#define PACE_US 20000      /* between its round trips: the guest has two emulated cores */
#define WHY_MAX 512
#define FIRST_ERR_MAX (WHY_MAX + 64)

struct opts {
	const char *pki, *server, *source, *identity;
	int argc; /* the mode's own arguments */
	char **argv;
};

/* SIGTERM/SIGINT: stop holding (or looping) and report. */
static volatile sig_atomic_t stop_requested;

/* Wall-clock seconds, so the scripts can line our events up with theirs. */
static double wall_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int arg_int(const struct opts *o, int i, long min, long max)
{
	char *end;
	errno = 0;
	long v = strtol(o->argv[i], &end, 10);
	if (errno || end == o->argv[i] || *end || v < min || v > max)
		check_die("argument '%s' must be a number in %ld..%ld", o->argv[i], min, max);
	return (int)v;
}

/* An RSEC_E_* code and the connection's own reason, for RESULT lines. */
static const char *why(int rc, const struct rsec_conn *c)
{
	static char buf[WHY_MAX];
	const char *e = rsec_conn_error(c);
	snprintf(buf, sizeof(buf), "%s%s%s", rsec_strerror(rc), e[0] ? ": " : "", e);
	return buf;
}

/* slot_size and recv_slots 0: the library's defaults. */
static struct rsec_ctx *ctx_new(const struct opts *o, uint32_t slot_size, uint32_t recv_slots)
{
	return check_client_ctx(o->pki, o->identity, o->source, TIMEOUT_MS, slot_size, recv_slots);
}

/* On failure *c still holds the connection, with its reason. */
static int conn_open(struct rsec_ctx *ctx, const struct opts *o, struct rsec_conn **c)
{
	return rsec_connect(ctx, o->server, PORT, NULL, TIMEOUT_MS, c);
}

static struct rsec_conn *conn_open_or_die(struct rsec_ctx *ctx, const struct opts *o)
{
	struct rsec_conn *c;
	int rc = conn_open(ctx, o, &c);
	if (rc < 0)
		check_die("connect: %s", why(rc, c));
	return c;
}

static int send_app(struct rsec_conn *c, const struct app_msg *m)
{
	uint8_t buf[APP_MSG_FIXED_MAX];
	size_t n = app_encode(m, buf, sizeof(buf));
	return n ? rsec_send(c, buf, n, TIMEOUT_MS) : RSEC_E_INVAL;
}

/* The next reply; one that does not decode is RSEC_E_PROTO. */
static int recv_app(struct rsec_conn *c, struct app_msg *m, int timeout_ms)
{
	static uint8_t buf[ECHO_MAX + 1];
	size_t len;
	const char *bad;
	int rc = rsec_recv(c, buf, sizeof(buf), &len, timeout_ms);
	if (rc < 0)
		return rc;
	return app_decode(buf, len, m, &bad) ? 0 : RSEC_E_PROTO;
}

/* One echo of len bytes; the reply must carry the same bytes back. */
static int echo(struct rsec_conn *c, size_t len, int timeout_ms)
{
	static uint8_t req[ECHO_MAX + 1], rep[ECHO_MAX + 1];
	static uint32_t seed = 1;
	if (len > ECHO_MAX)
		return RSEC_E_RANGE;
	req[0] = APP_ECHO;
	for (size_t i = 1; i <= len; i++) {
		seed = seed * 1103515245u + 12345u;
		req[i] = (uint8_t)(seed >> 16);
	}
	size_t got;
	int rc = rsec_send(c, req, len + 1, timeout_ms);
	if (rc == 0)
		rc = rsec_recv(c, rep, sizeof(rep), &got, timeout_ms);
	if (rc < 0)
		return rc;
	return got == len + 1 && rep[0] == APP_ECHO_REPLY && memcmp(rep + 1, req + 1, len) == 0 ? 0 : RSEC_E_PROTO;
}

/* A WRITE grant of len bytes at the server, or die: the attacks need one. */
static struct rsec_remote_grant write_grant(struct rsec_conn *c, uint64_t len, uint64_t *tag)
{
	struct app_msg m = { .op = APP_WRITE_REQ, .len = len };
	int rc = send_app(c, &m);
	if (rc == 0)
		rc = recv_app(c, &m, TIMEOUT_MS);
	if (rc < 0)
		check_die("write request: %s", why(rc, c));
	if (m.op != APP_WRITE_GRANTED)
		check_die("no write grant: %s", m.op == APP_ERROR ? m.text : app_op_name(m.op));
	struct rsec_remote_grant g;
	rc = rsec_grant_wait(c, m.tag, &g, TIMEOUT_MS);
	if (rc < 0)
		check_die("grant_wait: %s", why(rc, c));
	*tag = m.tag;
	return g;
}

/* A buffer of len bytes of fill, registered on our own PD for hand-made WRs. */
static struct ibv_mr *local_buf(struct rsec_conn *c, size_t len, uint8_t fill)
{
	uint8_t *p = malloc(len);
	if (!p)
		check_die("out of memory");
	memset(p, fill, len);
	struct ibv_mr *mr = ibv_reg_mr(c->path.qp.pd, p, len, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		check_die("ibv_reg_mr: %s", strerror(errno));
	return mr;
}

#define HOSTILE_WR_ID UINT64_C(0x686f7374696c65) /* "hostile": no kind the library uses */

/*
 * Straight onto our QP, past the library, and reaped here: the requester's
 * completion says whether the server's side took the WR (the library never
 * sees it; nothing of its own is outstanding at this point).
 */
static void post_raw(struct rsec_conn *c, struct ibv_send_wr *wr, const char *what)
{
	struct ibv_send_wr *bad;
	wr->wr_id = HOSTILE_WR_ID;
	wr->send_flags |= IBV_SEND_SIGNALED;
	int err = ibv_post_send(c->path.qp.qp, wr, &bad);
	if (err)
		check_die("cannot post %s: %s", what, strerror(err));
	uint64_t deadline = rsec_now_ms() + 10000;
	struct ibv_wc wc;
	while (rsec_now_ms() < deadline) {
		int n = ibv_poll_cq(c->path.qp.send_cq, 1, &wc);
		if (n < 0)
			check_die("ibv_poll_cq failed");
		if (n == 1 && wc.wr_id == HOSTILE_WR_ID) {
			check_result("posted", "%s: %s", what, ibv_wc_status_str(wc.status));
			return;
		}
		if (n == 0)
			usleep(1000);
	}
	check_result("posted", "%s: no completion in 10 s", what);
}

/*
 * Run the connection until it closes (0 if it did not within timeout_ms),
 * keeping the text of any APP_ERROR the server sent meanwhile.
 */
static int wait_closed(struct rsec_conn *c, int timeout_ms, char *app_error, size_t cap)
{
	uint64_t deadline = rsec_now_ms() + (uint64_t)timeout_ms;
	for (;;) {
		uint64_t now = rsec_now_ms();
		if (now >= deadline)
			return 0;
		struct app_msg m;
		int rc = recv_app(c, &m, (int)(deadline - now));
		if (rc == RSEC_E_TIMEOUT)
			return 0;
		if (rc == 0 && m.op == APP_ERROR && app_error)
			snprintf(app_error, cap, "%s", m.text);
		if (rc < 0 && rc != RSEC_E_PROTO)
			return rc;
	}
}

/* NAME=closed (code) after N ms, or still open; NAME-reason=the connection's reason. */
static int report_close(const char *name, struct rsec_conn *c, uint64_t since)
{
	char app_error[APP_ERROR_TEXT_MAX + 1] = "";
	char key[64];
	int rc = wait_closed(c, CLOSE_WAIT_MS, app_error, sizeof(app_error));
	if (rc == 0)
		check_result(name, "still open after %d ms", CLOSE_WAIT_MS);
	else
		check_result(name, "closed (%s) after %llu ms", rsec_strerror(rc), (unsigned long long)(rsec_now_ms() - since));
	snprintf(key, sizeof(key), "%s-reason", name);
	check_result(key, "%s", rsec_conn_error(c));
	if (app_error[0]) {
		snprintf(key, sizeof(key), "%s-app-error", name);
		check_result(key, "%s", app_error);
	}
	return 0;
}

/* Post wr under the library, report how the server ended the connection, and tear down. */
static int post_and_report(const char *name, struct rsec_ctx *ctx, struct rsec_conn *c, struct ibv_send_wr *wr,
			   const char *what)
{
	uint64_t t0 = rsec_now_ms();
	post_raw(c, wr, what);
	report_close(name, c, t0);
	rsec_conn_free(c);
	rsec_ctx_free(ctx);
	return 0;
}

/* Keep c alive (keepalives answered) until seconds pass or a stop signal; 0 or why it failed. */
static int hold(struct rsec_conn *c, int seconds)
{
	uint64_t deadline = rsec_now_ms() + (uint64_t)seconds * 1000u;
	while (!stop_requested && rsec_now_ms() < deadline) {
		int rc = rsec_conn_process(c);
		if (rc < 0)
			return rc;
		usleep(200000);
	}
	return 0;
}

/* ---- good: the well-behaved client that must not notice the attacks ---- */

static int mode_good(const struct opts *o)
{
	int seconds = arg_int(o, 0, 1, 86400);
	struct rsec_ctx *ctx = ctx_new(o, 0, 0);
	struct rsec_conn *c;
	int rc = conn_open(ctx, o, &c);
	if (rc < 0) {
		check_result("good-failed", "connect: %s", why(rc, c));
		return 1;
	}
	check_result("good-connected", "yes");
	uint64_t start = rsec_now_ms(), last = start, max_gap = 0;
	unsigned long rounds = 0;
	while (!stop_requested && rsec_now_ms() - start < (uint64_t)seconds * 1000u) {
		/* Small ones, and ones the server's 4 KiB slots must take in fragments. */
		rc = echo(c, rounds % 2 ? 6000 : 32, TIMEOUT_MS);
		if (rc < 0)
			break;
		uint64_t now = rsec_now_ms(), gap = now - last;
		last = now;
		rounds++;
		if (gap > max_gap)
			max_gap = gap;
		if (gap >= GAP_REPORT_MS)
			printf("good: %llu ms without a round trip, until %.3f\n", (unsigned long long)gap, wall_s());
		usleep(PACE_US);
	}
	check_result("good-rounds", "%lu", rounds);
	check_result("good-max-gap-ms", "%llu", (unsigned long long)max_gap);
	check_result("good-failed", "%s", rc < 0 ? why(rc, c) : "none");
	rsec_conn_free(c);
	rsec_ctx_free(ctx);
	return rc < 0;
}

/* ---- attacks on the data path, by hand-made work requests ---- */

/*
 * RDMA WRITE WITH IMMEDIATE of BYTES through our own WRITE grant: the data
 * goes where the grant says, and the immediate consumes one of the server's
 * receive buffers with byte_len = the whole write. The old code wiped
 * byte_len bytes from that buffer on: with OpenSSL's assembly cleanse, which
 * AddressSanitizer cannot see, so only a length that runs off the heap (16
 * MiB) makes the damage show as a crash.
 */
static int mode_write_imm(const struct opts *o)
{
	size_t len = (size_t)arg_int(o, 0, 1, 1 << 30);
	struct rsec_ctx *ctx = ctx_new(o, 0, 0);
	struct rsec_conn *c = conn_open_or_die(ctx, o);
	uint64_t tag;
	struct rsec_remote_grant g = write_grant(c, len, &tag);
	struct ibv_mr *mr = local_buf(c, len, 'I');
	struct ibv_sge sge = { .addr = (uintptr_t)mr->addr, .length = (uint32_t)len, .lkey = mr->lkey };
	struct ibv_send_wr wr = {
		.opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
		.sg_list = &sge,
		.num_sge = 1,
		.imm_data = htonl(0x1badcafe),
		.wr.rdma = { .remote_addr = g.addr, .rkey = g.rkey },
	};
	return post_and_report("write-imm", ctx, c, &wr, "RDMA_WRITE_WITH_IMM");
}

/* SEND_WITH_INV naming our own live grant's key, with a frame-sized payload. */
static int mode_send_inv(const struct opts *o)
{
	struct rsec_ctx *ctx = ctx_new(o, 0, 0);
	struct rsec_conn *c = conn_open_or_die(ctx, o);
	uint64_t tag;
	struct rsec_remote_grant g = write_grant(c, 4096, &tag);
	struct ibv_mr *mr = local_buf(c, 64, 0x5e);
	struct ibv_sge sge = { .addr = (uintptr_t)mr->addr, .length = 64, .lkey = mr->lkey };
	struct ibv_send_wr wr = {
		.opcode = IBV_WR_SEND_WITH_INV, .sg_list = &sge, .num_sge = 1, .invalidate_rkey = g.rkey,
	};
	return post_and_report("send-inv", ctx, c, &wr, "SEND_WITH_INV");
}

/* A plain SEND of LEN bytes, more than the server's receive buffers hold. */
static int mode_oversize(const struct opts *o)
{
	size_t len = (size_t)arg_int(o, 0, 1, 1 << 30);
	struct rsec_ctx *ctx = ctx_new(o, 0, 0);
	struct rsec_conn *c = conn_open_or_die(ctx, o);
	struct ibv_mr *mr = local_buf(c, len, 0x0f);
	struct ibv_sge sge = { .addr = (uintptr_t)mr->addr, .length = (uint32_t)len, .lkey = mr->lkey };
	struct ibv_send_wr wr = { .opcode = IBV_WR_SEND, .sg_list = &sge, .num_sge = 1 };
	return post_and_report("oversize", ctx, c, &wr, "oversized SEND");
}

/* A plain SEND of 64 bytes that are no sealed frame (its header does not parse): a forgery anyone could send. */
static int mode_garbage_send(const struct opts *o)
{
	struct rsec_ctx *ctx = ctx_new(o, 0, 0);
	struct rsec_conn *c = conn_open_or_die(ctx, o);
	struct ibv_mr *mr = local_buf(c, 64, 0xa5);
	struct ibv_sge sge = { .addr = (uintptr_t)mr->addr, .length = 64, .lkey = mr->lkey };
	struct ibv_send_wr wr = { .opcode = IBV_WR_SEND, .sg_list = &sge, .num_sge = 1 };
	return post_and_report("garbage-send", ctx, c, &wr, "garbage SEND");
}

/* ---- attacks on flow control and resources, by what we announce ---- */

/*
 * One receive buffer announced: the server's last credit is reserved for
 * returning credits, so it could never send us a reply. The public
 * attributes refuse 1; the context's field does not.
 */
static int mode_recv_slots_1(const struct opts *o)
{
	struct rsec_ctx *ctx = ctx_new(o, 0, 0);
	ctx->recv_slots = 1;
	struct rsec_conn *c;
	int rc = conn_open(ctx, o, &c);
	if (rc < 0) {
		check_result("recv-slots-1", "refused at set-up");
		check_result("recv-slots-1-reason", "%s", why(rc, c));
	} else {
		check_result("recv-slots-1", "connected");
		uint64_t t0 = rsec_now_ms();
		rc = echo(c, 32, 30000);
		check_result("recv-slots-1-echo", "%s after %llu ms", rc ? why(rc, c) : "succeeded",
		       (unsigned long long)(rsec_now_ms() - t0));
	}
	rsec_conn_free(c);
	rsec_ctx_free(ctx);
	return 0;
}

/*
 * 1 MiB receive buffers announced: the server sends into them, so it must
 * not pin a 16 x 1 MiB send ring for us. Held open right after set-up (the
 * ring exists from then on) while the script reads the server's VmRSS; then
 * replies big enough to need the large frames.
 */
static int mode_huge_ring(const struct opts *o)
{
	int seconds = arg_int(o, 0, 0, 3600);
	struct rsec_ctx *ctx = ctx_new(o, 1u << 20, 16);
	struct rsec_conn *c = conn_open_or_die(ctx, o);
	int rc = echo(c, 32, TIMEOUT_MS);
	check_result("huge-ring-connected", "%s", rc ? why(rc, c) : "yes");
	if (rc == 0)
		rc = hold(c, seconds);
	for (int i = 0; i < 2 && rc == 0; i++)
		rc = echo(c, 200000, TIMEOUT_MS);
	check_result("huge-ring-echo", "%s", rc ? why(rc, c) : "succeeded");
	rsec_conn_free(c);
	rsec_ctx_free(ctx);
	return 0;
}

/* ---- attacks on the server's waiting ---- */

/* A write, WRITE_DONE, and never the VERIFY the server waits for. */
static int mode_no_verify(const struct opts *o)
{
	int seconds = arg_int(o, 0, 1, 3600);
	struct rsec_ctx *ctx = ctx_new(o, 0, 0);
	struct rsec_conn *c = conn_open_or_die(ctx, o);
	uint64_t tag;
	struct rsec_remote_grant g = write_grant(c, 4096, &tag);
	static uint8_t data[4096];
	memset(data, 'n', sizeof(data));
	int rc = rsec_write(c, &g, 0, data, sizeof(data), TIMEOUT_MS);
	if (rc < 0)
		check_die("write: %s", why(rc, c));
	struct app_msg m = { .op = APP_WRITE_DONE, .tag = tag };
	rc = send_app(c, &m);
	uint64_t t0 = rsec_now_ms();
	check_result("no-verify-sent", "WRITE_DONE at %.3f", wall_s());
	if (rc == 0)
		rc = recv_app(c, &m, seconds * 1000);
	check_result("no-verify-reply", "%s", rc < 0 ? why(rc, c) : m.op == APP_ERROR ? m.text : app_op_name(m.op));
	check_result("no-verify-after-ms", "%llu", (unsigned long long)(rsec_now_ms() - t0));
	if (rc == 0) {
		rc = echo(c, 32, TIMEOUT_MS);
		check_result("no-verify-echo-after", "%s", rc ? why(rc, c) : "succeeded");
	}
	rsec_conn_free(c);
	rsec_ctx_free(ctx);
	return 0;
}

/*
 * The data path without the control channel: rsec_recv and anything else
 * that runs the connection would read TLS, so these reap the RDMA side by
 * hand (rsec_data_poll: completions, reposts, credits) and take reassembled
 * messages straight from the connection.
 */
static bool rdma_can_send(const struct rsec_conn *c)
{
	/* data.c's rule for a data frame */
	return rsec_sendq_inflight(&c->path.sendq) < c->path.send_slots && c->path.credits > 1;
}

static int rdma_poll(struct rsec_conn *c, int wait_ms)
{
	struct pollfd p = { .fd = c->path.qp.chan->fd, .events = POLLIN };
	int rc = rsec_data_poll(&c->path);
	if (rc < 0)
		return rc;
	(void)poll(&p, 1, wait_ms);
	return rsec_data_poll(&c->path);
}

static bool rdma_take(struct rsec_conn *c, struct app_msg *m)
{
	const char *bad;
	if (!c->path.rx_complete)
		return false;
	if (!app_decode(c->path.rx_msg, c->path.rx_len, m, &bad))
		m->op = 0;
	m->payload = NULL; /* it pointed into rx_msg */
	OPENSSL_cleanse(c->path.rx_msg, c->path.rx_len);
	c->path.rx_len = 0;
	c->path.rx_complete = false;
	return true;
}

/* Send m and wait for the reply, over RDMA only. */
static int rdma_request(struct rsec_conn *c, struct app_msg *m, int timeout_ms)
{
	uint8_t buf[APP_MSG_FIXED_MAX];
	size_t n = app_encode(m, buf, sizeof(buf));
	uint64_t deadline = rsec_now_ms() + (uint64_t)timeout_ms;
	int rc = 0;
	while (rc == 0 && !rdma_can_send(c) && rsec_now_ms() < deadline)
		rc = rdma_poll(c, 50);
	if (rc == 0 && !rdma_can_send(c))
		return RSEC_E_TIMEOUT;
	if (rc == 0)
		rc = rsec_send(c, buf, n, 0); /* with credits in hand it only posts */
	while (rc == 0 && !rdma_take(c, m)) {
		if (rsec_now_ms() >= deadline)
			return RSEC_E_TIMEOUT;
		rc = rdma_poll(c, 50);
	}
	return rc;
}

/*
 * Never read the control channel, and make the server write to it: every
 * WRITE_REQ (answered over RDMA) costs it a GRANT, and the REVOKE of the
 * previous grant, over TLS. The script shrinks the guest's TCP buffers.
 */
static int mode_no_read(const struct opts *o)
{
	int count = arg_int(o, 0, 1, 1000000);
	struct rsec_ctx *ctx = ctx_new(o, 0, 0);
	struct rsec_conn *c = conn_open_or_die(ctx, o);
	int small = 1; /* the kernel's minimum */
	if (setsockopt(c->path.chan->sock, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)) < 0)
		check_die("SO_RCVBUF: %s", strerror(errno));
	uint64_t t0 = rsec_now_ms();
	int sent = 0, granted = 0, rc = 0;
	const char *stop = "all requests answered";
	for (; sent < count; sent++) {
		struct app_msg m = { .op = APP_WRITE_REQ, .len = 4096 };
		rc = rdma_request(c, &m, REPLY_WAIT_MS);
		if (rc < 0)
			break;
		if (m.op != APP_WRITE_GRANTED) {
			stop = m.op == APP_ERROR ? "the server answered with an error" : "unexpected reply";
			sent++;
			break;
		}
		granted++;
	}
	if (rc == RSEC_E_TIMEOUT)
		stop = "no reply for 15 s";
	else if (rc < 0)
		stop = why(rc, c);
	check_result("no-read-requests", "%d", sent);
	check_result("no-read-granted", "%d", granted);
	check_result("no-read-stop", "%s after %llu ms", stop, (unsigned long long)(rsec_now_ms() - t0));
	/* Now read: whatever the server queued, then how it ended. */
	report_close("no-read", c, t0);
	rsec_conn_free(c);
	rsec_ctx_free(ctx);
	return 0;
}

/*
 * A client-side guarantee: an RDMA READ that times out must leave the
 * buffer alone afterwards. 16 MiB written (verified), read back with a 1 ms
 * deadline, then the buffer is filled with a sentinel and watched.
 */
static void put_data(struct rsec_conn *c, const uint8_t *data, size_t len)
{
	uint64_t tag;
	struct rsec_remote_grant g = write_grant(c, len, &tag);
	int rc = rsec_write_verified(c, &g, 0, data, len, TIMEOUT_MS);
	struct app_msg m = { .op = APP_WRITE_DONE, .tag = tag };
	if (rc == 0)
		rc = send_app(c, &m);
	if (rc == 0)
		rc = recv_app(c, &m, TIMEOUT_MS);
	if (rc < 0 || m.op != APP_WRITE_RESULT)
		check_die("verified write: %s", rc < 0 ? why(rc, c) : m.op == APP_ERROR ? m.text : app_op_name(m.op));
}

static struct rsec_remote_grant read_grant(struct rsec_conn *c)
{
	struct app_msg m = { .op = APP_READ_REQ };
	int rc = send_app(c, &m);
	if (rc == 0)
		rc = recv_app(c, &m, TIMEOUT_MS);
	if (rc < 0 || m.op != APP_READ_GRANTED)
		check_die("read request: %s", rc < 0 ? why(rc, c) : m.op == APP_ERROR ? m.text : app_op_name(m.op));
	struct rsec_remote_grant g;
	rc = rsec_grant_wait(c, m.tag, &g, TIMEOUT_MS);
	if (rc < 0)
		check_die("grant_wait: %s", why(rc, c));
	return g;
}

static int mode_timeout_read(const struct opts *o)
{
	const size_t len = 16u << 20;
	const uint8_t sentinel = 0xa5; /* the data is lower-case letters */
	uint8_t *data = malloc(len), *back = calloc(1, len);
	if (!data || !back)
		check_die("out of memory");
	for (size_t i = 0; i < len; i++)
		data[i] = (uint8_t)('a' + i % 26);
	struct rsec_ctx *ctx = ctx_new(o, 0, 0);
	struct rsec_conn *c = conn_open_or_die(ctx, o);
	put_data(c, data, len);
	struct rsec_remote_grant g = read_grant(c);
	int rc = rsec_read(c, &g, 0, back, len, 1);
	memset(back, sentinel, len);
	check_result("timeout-read", "%s", rsec_strerror(rc));
	check_result("timeout-state", "%s", rsec_conn_state(c) == RSEC_CONN_CLOSED ? "closed" : "open");
	check_result("timeout-reason", "%s", rsec_conn_error(c));
	/* On the old code the READ went on and filled the buffer behind our back. */
	sleep(3);
	size_t late = 0;
	for (size_t i = 0; i < len; i++)
		late += back[i] != sentinel;
	check_result("timeout-late-bytes", "%zu", late);
	rsec_conn_free(c);
	rsec_ctx_free(ctx);
	free(data);
	free(back);
	return 0;
}

/* ---- amplification: tiny requests that make the server hash, seal or register 16 MiB ---- */

#define LOOP_BYTES (16u << 20) /* the server's default max_msg */
#define RTT_MAX 100000

static bool loop_on(uint64_t deadline)
{
	return !stop_requested && rsec_now_ms() < deadline;
}

static void loop_report(const char *name, struct rsec_conn *c, int rc, unsigned long rounds, const char *stop)
{
	char key[64];
	snprintf(key, sizeof(key), "%s-rounds", name);
	check_result(key, "%lu", rounds);
	snprintf(key, sizeof(key), "%s-stop", name);
	check_result(key, "%s", rc < 0 ? why(rc, c) : stop);
}

/* A request and its one reply, which must be want (an APP_ERROR's text goes to *err). */
static int request(struct rsec_conn *c, struct app_msg *m, uint8_t want, const char **err)
{
	int rc = send_app(c, m);
	if (rc == 0)
		rc = recv_app(c, m, TIMEOUT_MS);
	if (rc == 0 && m->op != want) {
		*err = m->op == APP_ERROR ? m->text : app_op_name(m->op);
		return RSEC_E_PROTO;
	}
	return rc;
}

/*
 * 16 MiB written once, then READ_REQ (verified and sealed in turn) and
 * READ_DONE in a loop, never reading a byte: each round used to cost the
 * server a SHA-256 and an HMAC (or a seal and an open) of 16 MiB in its loop.
 */
static int mode_read_loop(const struct opts *o)
{
	int seconds = arg_int(o, 0, 1, 3600);
	uint8_t *data = malloc(LOOP_BYTES);
	if (!data)
		check_die("out of memory");
	memset(data, 'r', LOOP_BYTES);
	struct rsec_ctx *ctx = ctx_new(o, 0, 0);
	struct rsec_conn *c = conn_open_or_die(ctx, o);
	put_data(c, data, LOOP_BYTES);
	check_result("read-loop-started", "%.3f", wall_s());
	uint64_t deadline = rsec_now_ms() + (uint64_t)seconds * 1000u;
	unsigned long rounds = 0;
	const char *err = "time up";
	int rc = 0;
	while (rc == 0 && loop_on(deadline)) {
		struct app_msg m = { .op = rounds % 2 ? APP_SEALED_READ_REQ : APP_READ_REQ };
		struct rsec_remote_grant g;
		rc = request(c, &m, APP_READ_GRANTED, &err);
		if (rc == 0)
			rc = rsec_grant_wait(c, m.tag, &g, TIMEOUT_MS); /* its bind is done: READ_DONE may end it */
		if (rc == 0) {
			m = (struct app_msg){ .op = APP_READ_DONE, .tag = m.tag };
			rc = request(c, &m, APP_READ_RESULT, &err);
		}
		rounds += rc == 0;
	}
	loop_report("read-loop", c, rc == RSEC_E_PROTO ? 0 : rc, rounds, err);
	rsec_conn_free(c);
	rsec_ctx_free(ctx);
	free(data);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* ---- floods ---- */

/* One pass over the open connections: keepalives answered, failures noted and dropped. */
static void service_all(struct rsec_conn **cs, int n, char first_err[static FIRST_ERR_MAX])
{
	for (int i = 0; i < n; i++) {
		int rc = cs[i] ? rsec_conn_process(cs[i]) : 0;
		if (rc < 0) {
			if (!first_err[0])
				snprintf(first_err, FIRST_ERR_MAX, "held connection %d: %s", i, why(rc, cs[i]));
			rsec_conn_free(cs[i]);
			cs[i] = NULL;
		}
	}
}

/* Keep every open connection alive until seconds pass or a stop signal. */
static void hold_all(struct rsec_conn **cs, int n, int seconds, char first_err[static FIRST_ERR_MAX])
{
	uint64_t deadline = rsec_now_ms() + (uint64_t)seconds * 1000u;
	while (!stop_requested && rsec_now_ms() < deadline) {
		service_all(cs, n, first_err);
		usleep(500000);
	}
}

/*
 * N authenticated connections from one context, one after another, each
 * with an echo; all held; one more echo on each. Small buffers: each
 * connection costs both sides memory.
 */
static int mode_many(const struct opts *o)
{
	int n = arg_int(o, 0, 1, 100000), seconds = arg_int(o, 1, 0, 3600);
	struct rsec_ctx *ctx = ctx_new(o, 4096, 4);
	struct rsec_conn **cs = calloc((size_t)n, sizeof(*cs));
	char first_err[FIRST_ERR_MAX] = "";
	int connected = 0, ok = 0;
	if (!cs)
		check_die("out of memory");
	uint64_t t0 = rsec_now_ms(), serviced = t0;
	for (int i = 0; i < n; i++) {
		/* Those already open must answer the server's keepalives meanwhile. */
		if (rsec_now_ms() - serviced >= 1000) {
			service_all(cs, i, first_err);
			serviced = rsec_now_ms();
		}
		int rc = conn_open(ctx, o, &cs[i]);
		if (rc == 0)
			rc = echo(cs[i], 32, TIMEOUT_MS);
		if (rc < 0) {
			if (!first_err[0])
				snprintf(first_err, sizeof(first_err), "connection %d: %s", i, why(rc, cs[i]));
			rsec_conn_free(cs[i]);
			cs[i] = NULL;
			continue;
		}
		if (++connected % 50 == 0)
			fprintf(stderr, "many: %d connected\n", connected);
	}
	check_result("many-connected", "%d", connected);
	check_result("many-connect-ms", "%llu", (unsigned long long)(rsec_now_ms() - t0));
	hold_all(cs, n, seconds, first_err);
	uint64_t t1 = rsec_now_ms();
	serviced = t1;
	for (int i = 0; i < n; i++) {
		/* A loaded server answers slowly: the others still owe it keepalives. */
		if (rsec_now_ms() - serviced >= 1000) {
			service_all(cs, n, first_err);
			serviced = rsec_now_ms();
		}
		int rc = cs[i] ? echo(cs[i], 32, TIMEOUT_MS) : RSEC_E_CLOSED;
		if (rc == 0)
			ok++;
		else if (cs[i] && !first_err[0])
			snprintf(first_err, sizeof(first_err), "second echo on %d: %s", i, why(rc, cs[i]));
		rsec_conn_free(cs[i]);
		cs[i] = NULL; /* service_all skips it from now on */
	}
	check_result("many-echo-ms", "%llu", (unsigned long long)(rsec_now_ms() - t1));
	check_result("many-ok", "%d", ok);
	check_result("many-failed", "%s", first_err[0] ? first_err : "none");
	free(cs);
	rsec_ctx_free(ctx);
	return 0;
}

static int tcp_start(const struct opts *o)
{
	struct sockaddr_in src = { .sin_family = AF_INET }, dst = { .sin_family = AF_INET, .sin_port = htons(PORT) };
	if (inet_pton(AF_INET, o->source, &src.sin_addr) != 1 || inet_pton(AF_INET, o->server, &dst.sin_addr) != 1)
		check_die("half-open: IPv4 addresses only");
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		check_die("socket: %s", strerror(errno));
	if (bind(fd, (struct sockaddr *)&src, sizeof(src)) < 0 ||
	    (connect(fd, (struct sockaddr *)&dst, sizeof(dst)) < 0 && errno != EINPROGRESS))
		check_die("connect: %s", strerror(errno));
	return fd;
}

/*
 * Wait for every connect to finish; the connected ones send the first bytes
 * of a TLS record (a ClientHello that never comes). Returns how many connected;
 * the others' fds become -1.
 */
static int tcp_finish(struct pollfd *p, int n, int timeout_ms)
{
	static const uint8_t partial_hello[] = { 0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00 };
	uint64_t deadline = rsec_now_ms() + (uint64_t)timeout_ms;
	int pending = n, connected = 0;
	for (int i = 0; i < n; i++)
		p[i].events = POLLOUT;
	while (pending > 0 && rsec_now_ms() < deadline) {
		(void)poll(p, (nfds_t)n, 200);
		for (int i = 0; i < n; i++) {
			if (p[i].fd < 0 || p[i].events != POLLOUT || !p[i].revents)
				continue;
			int err = 0;
			socklen_t len = sizeof(err);
			pending--;
			p[i].events = POLLIN | POLLRDHUP;
			if (getsockopt(p[i].fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err ||
			    send(p[i].fd, partial_hello, sizeof(partial_hello), MSG_NOSIGNAL) < 0) {
				close(p[i].fd);
				p[i].fd = -1;
				continue;
			}
			connected++;
		}
	}
	for (int i = 0; i < n; i++) {
		if (p[i].fd >= 0 && p[i].events == POLLOUT) {
			close(p[i].fd); /* never connected */
			p[i].fd = -1;
		}
	}
	return connected;
}

/* Until seconds pass or a stop signal; returns how many the server closed. */
static int tcp_watch(struct pollfd *p, int n, int seconds)
{
	uint64_t deadline = rsec_now_ms() + (uint64_t)seconds * 1000u;
	int closed = 0;
	while (!stop_requested && rsec_now_ms() < deadline) {
		(void)poll(p, (nfds_t)n, 200);
		for (int i = 0; i < n; i++) {
			uint8_t buf[512];
			if (p[i].fd < 0 || !p[i].revents)
				continue;
			ssize_t got = recv(p[i].fd, buf, sizeof(buf), MSG_DONTWAIT);
			if (got > 0 || (got < 0 && (errno == EAGAIN || errno == EINTR)))
				continue; /* a TLS alert, say: the close follows */
			closed++;
			close(p[i].fd);
			p[i].fd = -1;
		}
	}
	return closed;
}

/* N TCP connections that never finish a TLS handshake, held. */
static int mode_half_open(const struct opts *o)
{
	int n = arg_int(o, 0, 1, 100000), seconds = arg_int(o, 1, 0, 3600);
	struct pollfd *p = calloc((size_t)n, sizeof(*p));
	if (!p)
		check_die("out of memory");
	for (int i = 0; i < n; i++)
		p[i].fd = tcp_start(o);
	int connected = tcp_finish(p, n, TIMEOUT_MS);
	check_result("half-open-connected", "%d", connected);
	int closed = tcp_watch(p, n, seconds);
	check_result("half-open-closed-by-server", "%d", closed);
	check_result("half-open-open-at-end", "%d", connected - closed);
	for (int i = 0; i < n; i++)
		if (p[i].fd >= 0)
			close(p[i].fd);
	free(p);
	return 0;
}

/* ---- hostile-load suite (tests/fabric/hostile_load.sh) ---- */

#define RT_MAX 1000000 /* round trips a bystander or newcomer keeps for its percentiles */

/* The p-th percentile (nearest rank) of n sorted values; 0 if none. */
static uint64_t percentile(const uint64_t *v, size_t n, unsigned p)
{
	if (n == 0)
		return 0;
	size_t rank = (n * p + 99) / 100;
	return v[rank ? rank - 1 : 0];
}

/* Sort v and print NAME-count, -p50-ms, -p99-ms and -max-ms. */
static void report_ms(const char *name, uint64_t *v, size_t n)
{
	char key[64];
	qsort(v, n, sizeof(*v), cmp_u64);
	snprintf(key, sizeof(key), "%s-count", name);
	check_result(key, "%zu", n);
	snprintf(key, sizeof(key), "%s-p50-ms", name);
	check_result(key, "%llu", (unsigned long long)percentile(v, n, 50));
	snprintf(key, sizeof(key), "%s-p99-ms", name);
	check_result(key, "%llu", (unsigned long long)percentile(v, n, 99));
	snprintf(key, sizeof(key), "%s-max-ms", name);
	check_result(key, "%llu", (unsigned long long)(n ? v[n - 1] : 0));
}

/*
 * The honest session beside the attacks: paced echo round trips for SECONDS
 * (or until SIGTERM), each printed as "rt START_WALL_S MS" so the script can
 * cut the run into its phases (a round trip belongs to the phase it started
 * in). A round trip that fails is lost ("lost START_WALL_S MS reason"); the
 * bystander then connects again ("down START_WALL_S MS reason" while it
 * cannot), so later phases are still measured.
 */
static int mode_bystander(const struct opts *o)
{
	int seconds = arg_int(o, 0, 1, 86400);
	uint64_t *rt = malloc(RT_MAX * sizeof(*rt));
	if (!rt)
		check_die("out of memory");
	struct rsec_ctx *ctx = ctx_new(o, 0, 0);
	struct rsec_conn *c = NULL;
	size_t n = 0;
	unsigned long lost = 0, reconnects = 0;
	uint64_t start = rsec_now_ms();
	while (!stop_requested && rsec_now_ms() - start < (uint64_t)seconds * 1000u) {
		if (!c) {
			double t_wall = wall_s();
			uint64_t t0 = rsec_now_ms();
			int rc = conn_open(ctx, o, &c);
			if (rc < 0) {
				/* Waiting, too: the script counts it in the phase's longest wait. */
				printf("down %.3f %llu %s\n", t_wall, (unsigned long long)(rsec_now_ms() - t0), why(rc, c));
				rsec_conn_free(c);
				c = NULL;
				sleep(1);
				continue;
			}
			printf("bystander: connected at %.3f\n", wall_s());
			reconnects++;
		}
		double t_wall = wall_s();
		uint64_t t0 = rsec_now_ms();
		int rc = echo(c, n % 2 ? 6000 : 32, TIMEOUT_MS);
		if (rc < 0) {
			lost++;
			printf("lost %.3f %llu %s\n", t_wall, (unsigned long long)(rsec_now_ms() - t0), why(rc, c));
			rsec_conn_free(c);
			c = NULL;
			continue;
		}
		printf("rt %.3f %llu\n", t_wall, (unsigned long long)(rsec_now_ms() - t0));
		if (n < RT_MAX)
			rt[n++] = rsec_now_ms() - t0;
		usleep(PACE_US);
	}
	report_ms("bystander", rt, n);
	check_result("bystander-lost", "%lu", lost);
	check_result("bystander-connects", "%lu", reconnects);
	rsec_conn_free(c);
	rsec_ctx_free(ctx);
	free(rt);
	return lost != 0;
}

/* N fresh connections one after another: connect to established, then one echo. */
static int mode_newcomer(const struct opts *o)
{
	int count = arg_int(o, 0, 1, 10000);
	uint64_t *setup = calloc((size_t)count, sizeof(*setup));
	if (!setup)
		check_die("out of memory");
	struct rsec_ctx *ctx = ctx_new(o, 0, 0);
	char first_err[FIRST_ERR_MAX] = "";
	size_t ok = 0;
	for (int i = 0; i < count && !stop_requested; i++) {
		struct rsec_conn *c;
		uint64_t t0 = rsec_now_ms();
		int rc = conn_open(ctx, o, &c);
		uint64_t took = rsec_now_ms() - t0;
		if (rc == 0)
			rc = echo(c, 32, TIMEOUT_MS);
		if (rc == 0)
			setup[ok++] = took;
		else if (!first_err[0])
			snprintf(first_err, sizeof(first_err), "connection %d after %llu ms: %s", i,
				 (unsigned long long)took, why(rc, c));
		printf("newcomer %d at %.3f: %s, set-up %llu ms\n", i, wall_s(), rc ? "failed" : "ok",
		       (unsigned long long)took);
		rsec_conn_free(c);
	}
	check_result("newcomer-ok", "%zu", ok);
	check_result("newcomer-failed", "%zu", (size_t)count - ok);
	report_ms("newcomer-setup", setup, ok);
	check_result("newcomer-first-failure", "%s", first_err[0] ? first_err : "none");
	free(setup);
	rsec_ctx_free(ctx);
	return ok != (size_t)count;
}

/*
 * N connections, each looping WRITE_REQs of BYTES and never writing: each
 * request makes the server wipe and free the last buffer, then map,
 * register and grant a new one of BYTES. All N requests are in flight at
 * once, so the server always has one queued.
 */
static int expensive_round(struct rsec_conn **cs, int n, uint64_t bytes)
{
	for (int i = 0; i < n; i++) {
		struct app_msg m = { .op = APP_WRITE_REQ, .len = bytes };
		int rc = send_app(cs[i], &m);
		if (rc < 0) {
			fprintf(stderr, "expensive-loop: connection %d: %s\n", i, why(rc, cs[i]));
			return rc;
		}
	}
	for (int i = 0; i < n; i++) {
		struct app_msg m;
		int rc = recv_app(cs[i], &m, TIMEOUT_MS);
		if (rc < 0) {
			fprintf(stderr, "expensive-loop: connection %d: %s\n", i, why(rc, cs[i]));
			return rc;
		}
		if (m.op != APP_WRITE_GRANTED)
			check_die("connection %d: %s", i, m.op == APP_ERROR ? m.text : app_op_name(m.op));
	}
	return 0;
}

static int mode_expensive_loop(const struct opts *o)
{
	int n = arg_int(o, 0, 1, 64), bytes = arg_int(o, 1, 1, 1 << 30), seconds = arg_int(o, 2, 1, 3600);
	struct rsec_conn *cs[64];
	struct rsec_ctx *ctx = ctx_new(o, 0, 0);
	char first_err[FIRST_ERR_MAX] = "";
	for (int i = 0; i < n; i++) {
		service_all(cs, i, first_err); /* the ones open answer keepalives meanwhile */
		cs[i] = conn_open_or_die(ctx, o);
	}
	if (first_err[0])
		check_die("%s", first_err);
	check_result("expensive-connected", "%d at %.3f", n, wall_s());
	uint64_t start = rsec_now_ms();
	unsigned long rounds = 0;
	int rc = 0;
	while (rc == 0 && !stop_requested && rsec_now_ms() - start < (uint64_t)seconds * 1000u) {
		rc = expensive_round(cs, n, (uint64_t)bytes);
		rounds += rc == 0;
	}
	check_result("expensive-requests", "%lu", rounds * (unsigned long)n);
	check_result("expensive-failed", "%s", rc < 0 ? "a connection failed" : "none");
	for (int i = 0; i < n; i++)
		rsec_conn_free(cs[i]);
	rsec_ctx_free(ctx);
	return rc < 0;
}

/*
 * One real client's first flight, made once: a TLS 1.3 ClientHello from a
 * memory BIO. Replayed as is, it makes the server do its half of a
 * handshake (key share, signature) while the attacker does nothing.
 */
static size_t record_client_hello(uint8_t *out, size_t cap)
{
	SSL_CTX *sctx = SSL_CTX_new(TLS_client_method());
	SSL *ssl = sctx ? SSL_new(sctx) : NULL;
	BIO *rb = BIO_new(BIO_s_mem()), *wb = BIO_new(BIO_s_mem());
	if (!ssl || !rb || !wb || !SSL_set_min_proto_version(ssl, TLS1_3_VERSION))
		check_die("replay: cannot set up OpenSSL");
	SSL_set_bio(ssl, rb, wb); /* ssl owns both now */
	SSL_set_connect_state(ssl);
	if (SSL_do_handshake(ssl) != -1 || SSL_get_error(ssl, -1) != SSL_ERROR_WANT_READ)
		check_die("replay: no ClientHello");
	char *p;
	long n = BIO_get_mem_data(wb, &p);
	if (n <= 0 || (size_t)n > cap)
		check_die("replay: ClientHello of %ld bytes", n);
	memcpy(out, p, (size_t)n);
	SSL_free(ssl);
	SSL_CTX_free(sctx);
	return (size_t)n;
}

#define REPLAY_SLOTS 1024
#define REPLAY_HOLD_MS 2000 /* a connection the server has not answered by then is closed */

struct replay_slot {
	uint64_t opened;
	bool sent;
};

struct replay_count {
	unsigned long made, answered, closed, reset, unanswered, connect_failed;
};

/* Close slot i and count how it ended. */
static void replay_close(struct pollfd *p, int i, unsigned long *counter)
{
	close(p[i].fd);
	p[i].fd = -1;
	(*counter)++;
}

/* One pass over the open connections: send the hello once connected, close at the first answer. */
static void replay_poll(struct pollfd *p, struct replay_slot *s, const uint8_t *hello, size_t len,
			struct replay_count *n)
{
	(void)poll(p, REPLAY_SLOTS, 5);
	uint64_t now = rsec_now_ms();
	for (int i = 0; i < REPLAY_SLOTS; i++) {
		if (p[i].fd < 0)
			continue;
		if (!s[i].sent && (p[i].revents & (POLLOUT | POLLERR | POLLHUP))) {
			int err = 0;
			socklen_t el = sizeof(err);
			if (getsockopt(p[i].fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0 || err ||
			    send(p[i].fd, hello, len, MSG_NOSIGNAL) != (ssize_t)len) {
				replay_close(p, i, &n->connect_failed);
				continue;
			}
			s[i].sent = true;
			p[i].events = POLLIN;
		} else if (s[i].sent && p[i].revents) {
			uint8_t buf[4096];
			ssize_t got = recv(p[i].fd, buf, sizeof(buf), MSG_DONTWAIT);
			if (got < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			/* Its ServerHello: the work is done; or the server closed it at once. */
			replay_close(p, i, got > 0 ? &n->answered : got == 0 ? &n->closed : &n->reset);
		} else if (now - s[i].opened >= REPLAY_HOLD_MS) {
			replay_close(p, i, s[i].sent ? &n->unanswered : &n->connect_failed);
		}
	}
}

/* A new connection in a free slot; false if none is free. */
static bool replay_open(const struct opts *o, struct pollfd *p, struct replay_slot *s)
{
	for (int i = 0; i < REPLAY_SLOTS; i++) {
		if (p[i].fd >= 0)
			continue;
		p[i].fd = tcp_start(o);
		p[i].events = POLLOUT;
		s[i] = (struct replay_slot){ .opened = rsec_now_ms() };
		return true;
	}
	return false;
}

static int mode_replay(const struct opts *o)
{
	int rate = arg_int(o, 0, 1, 100000), seconds = arg_int(o, 1, 1, 3600);
	static uint8_t hello[16384];
	size_t len = record_client_hello(hello, sizeof(hello));
	static struct pollfd p[REPLAY_SLOTS];
	static struct replay_slot s[REPLAY_SLOTS];
	struct replay_count n = { 0 };
	unsigned long no_slot = 0;
	for (int i = 0; i < REPLAY_SLOTS; i++)
		p[i].fd = -1;
	check_result("replay-start", "%.3f hello=%zu bytes", wall_s(), len);
	uint64_t start = rsec_now_ms(), end = start + (uint64_t)seconds * 1000u;
	while (!stop_requested && rsec_now_ms() < end) {
		/* Keep pace with RATE a second since the start. */
		uint64_t due = (rsec_now_ms() - start) * (uint64_t)rate / 1000u;
		while (n.made + no_slot < due) {
			if (replay_open(o, p, s))
				n.made++;
			else
				no_slot++;
		}
		replay_poll(p, s, hello, len, &n);
	}
	for (uint64_t t = rsec_now_ms(); rsec_now_ms() - t < REPLAY_HOLD_MS;)
		replay_poll(p, s, hello, len, &n);
	for (int i = 0; i < REPLAY_SLOTS; i++)
		if (p[i].fd >= 0)
			replay_close(p, i, &n.unanswered);
	check_result("replay-connections", "%lu", n.made);
	check_result("replay-answered", "%lu", n.answered);
	check_result("replay-closed-by-server", "%lu", n.closed);
	check_result("replay-reset", "%lu", n.reset);
	check_result("replay-connect-failed", "%lu", n.connect_failed);
	check_result("replay-unanswered", "%lu", n.unanswered);
	check_result("replay-skipped", "%lu", no_slot);
	return 0;
}

static const struct mode {
	const char *name;
	int (*fn)(const struct opts *o);
	int nargs;
	const char *args, *help;
} modes[] = {
	{ "good", mode_good, 1, "SECONDS", "echo round trips for SECONDS (or until SIGTERM); reports the longest gap" },
	{ "write-imm", mode_write_imm, 1, "BYTES", "RDMA WRITE WITH IMMEDIATE of BYTES through a WRITE grant" },
	{ "send-inv", mode_send_inv, 0, "", "SEND_WITH_INV naming our own grant's key" },
	{ "oversize", mode_oversize, 1, "BYTES", "a plain SEND of BYTES, over the server's receive buffer size" },
	{ "garbage-send", mode_garbage_send, 0, "", "a plain SEND of 64 bytes whose frame header does not parse" },
	{ "recv-slots-1", mode_recv_slots_1, 0, "", "announce one receive buffer, then echo" },
	{ "no-verify", mode_no_verify, 1, "SECONDS", "WRITE_DONE without VERIFY; wait SECONDS for the reply" },
	{ "no-read", mode_no_read, 1, "COUNT", "up to COUNT WRITE_REQs over RDMA, never reading TLS" },
	{ "huge-ring", mode_huge_ring, 1, "SECONDS", "announce 16 x 1 MiB receive buffers; echo, hold SECONDS, echo" },
	{ "timeout-read", mode_timeout_read, 0, "", "a 16 MiB RDMA READ with a 1 ms deadline; watch the buffer" },
	{ "many", mode_many, 2, "N SECONDS", "N authenticated connections, an echo on each, held SECONDS" },
	{ "half-open", mode_half_open, 2, "N SECONDS", "N TCP connections stuck in the TLS handshake, held SECONDS" },
	{ "bystander", mode_bystander, 1, "SECONDS", "paced echoes for SECONDS: each round trip's time, p50/p99/max" },
	{ "newcomer", mode_newcomer, 1, "N", "N connections one after another: set-up times, ok/failed" },
	{ "expensive-loop", mode_expensive_loop, 3, "N BYTES SECONDS", "N connections loop WRITE_REQs of BYTES, never writing" },
	{ "replay", mode_replay, 2, "RATE SECONDS", "replay one recorded ClientHello on new TCP connections, RATE/s" },
	{ "read-loop", mode_read_loop, 1, "SECONDS", "write 16 MiB, then READ_REQ/READ_DONE for SECONDS, never reading" },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: hostile_client [-i IDENTITY] MODE PKI_DIR SERVER_IP SOURCE_IP [ARGS]\n\n");
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		fprintf(f, "  %-13s %-10s %s\n", modes[i].name, modes[i].args, modes[i].help);
	fprintf(f, "\nPrints RESULT name=value lines. SIGTERM ends holds and the good client's loop.\n");
}

/* The floods hold thousands of sockets. */
static void raise_fd_limit(void)
{
	struct rlimit r;
	if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
		r.rlim_cur = r.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &r);
	}
}

static void on_stop(int sig)
{
	(void)sig;
	stop_requested = 1;
}

int main(int argc, char **argv)
{
	check_prog = "hostile_client";
	struct opts o = { .identity = "client" };
	int i = 1;
	if (argc > 2 && strcmp(argv[1], "-i") == 0) {
		o.identity = argv[2];
		i = 3;
	}
	if (argc - i < 4) {
		usage(stderr);
		return 2;
	}
	const struct mode *m = NULL;
	for (size_t k = 0; k < sizeof(modes) / sizeof(modes[0]); k++)
		if (strcmp(argv[i], modes[k].name) == 0)
			m = &modes[k];
	if (!m || argc - i - 4 != m->nargs) {
		usage(stderr);
		return 2;
	}
	o.pki = argv[i + 1];
	o.server = argv[i + 2];
	o.source = argv[i + 3];
	o.argc = m->nargs;
	o.argv = argv + i + 4;
	raise_fd_limit();
	struct sigaction sa = { .sa_handler = on_stop }; /* no SA_RESTART: a hold's sleep ends early */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	return m->fn(&o);
}
