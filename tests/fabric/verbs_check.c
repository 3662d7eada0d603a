/* SPDX-License-Identifier: MIT */
/*
 * Fabric check of librdmasec's verbs layer (lib/dev, lib/qp, lib/mw) on real
 * soft-RoCE. Roles: server (host 1), client (host 2), third (host 3, a
 * third party that learned a window's key). Run by tests/fabric/verbs.sh.
 *
 * QP parameters and window descriptors travel over a plain TCP socket here,
 * as raw structs (same build, same architecture on both ends): a test
 * shortcut. The product carries them only inside TLS.
 *
 * Lines starting "RESULT " are what verbs.sh asserts on; any hard check that
 * fails prints "FAIL:" and exits 1.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "dev.h"
#include "mw.h"
#include "qp.h"

#define WAIT_MS 60000
#define BIG (16u << 20)
#define SMALL 4096u
#define WIN2_LEN (64u << 10)

static const char *role = "?";

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("%s: ", role);
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	va_end(ap);
}

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("FAIL: %s: ", role);
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	va_end(ap);
	exit(1);
}

static void check(int rc, const char *what)
{
	if (rc != 0)
		die("%s: %s", what, rsec_strerror(rc));
}

static const char *qp_state_name(int s)
{
	static const char *const names[] = { "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR" };

	return s >= 0 && s < (int)(sizeof(names) / sizeof(names[0])) ? names[s] : "unknown";
}

static double ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) * 1e3 + (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
}

/* xorshift32: both ends regenerate the same bytes from a seed. */
static void pattern(uint8_t *p, size_t n, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1;

	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[i] = (uint8_t)x;
	}
}

static bool matches(const uint8_t *p, size_t n, uint32_t seed)
{
	uint8_t *want = malloc(n);
	bool ok;

	if (want == NULL)
		die("out of memory");
	pattern(want, n, seed);
	ok = memcmp(p, want, n) == 0;
	free(want);
	return ok;
}

static void *xalloc(size_t n)
{
	void *p = aligned_alloc(4096, (n + 4095) & ~(size_t)4095);

	if (p == NULL)
		die("out of memory");
	memset(p, 0, n);
	return p;
}

/* ---- TCP control channel (test only; the product uses TLS) ---- */

static void xwrite(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n > 0) {
		ssize_t w = write(fd, b, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			die("control write: %s", strerror(errno));
		b += w;
		n -= (size_t)w;
	}
}

static void xread(int fd, void *p, size_t n)
{
	uint8_t *b = p;

	while (n > 0) {
		ssize_t r = read(fd, b, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			die("control read: %s", r == 0 ? "peer closed" : strerror(errno));
		b += r;
		n -= (size_t)r;
	}
}

static int tcp_listen(const char *ip, const char *port)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE };
	struct addrinfo *ai;
	int fd, one = 1;

	if (getaddrinfo(ip, port, &hints, &ai) != 0)
		die("getaddrinfo %s", ip);
	fd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 4) != 0)
		die("listen %s:%s: %s", ip, port, strerror(errno));
	freeaddrinfo(ai);
	return fd;
}

static int tcp_accept(int lfd)
{
	int fd = accept(lfd, NULL, NULL), one = 1;

	if (fd < 0)
		die("accept: %s", strerror(errno));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static int tcp_connect(const char *ip, const char *port, char hello)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *ai;
	int one = 1;

	if (getaddrinfo(ip, port, &hints, &ai) != 0)
		die("getaddrinfo %s", ip);
	for (int i = 0; i < 300; i++) {
		int fd = socket(ai->ai_family, SOCK_STREAM, 0);

		if (fd < 0)
			die("socket: %s", strerror(errno));
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
			freeaddrinfo(ai);
			(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
			xwrite(fd, &hello, 1);
			return fd;
		}
		close(fd);
		usleep(100000);
	}
	die("connect %s:%s: %s", ip, port, strerror(errno));
}

/* Both sides call it: each writes the tag, then reads the other's. */
static void sync_tag(int fd, uint32_t tag)
{
	uint32_t got;

	xwrite(fd, &tag, sizeof(tag));
	xread(fd, &got, sizeof(got));
	if (got != tag)
		die("out of step: expected sync %u, peer is at %u", tag, got);
}

struct wire_win {
	uint64_t addr, len;
	uint32_t rkey, pad;
};

/* One side's outcome of an operation. */
struct note {
	int32_t rc, wc_status, qp_state, value;
};

static const char *note_str(const struct note *n)
{
	if (n->rc == 0)
		return "success";
	if (n->rc == RSEC_E_QP)
		return ibv_wc_status_str((enum ibv_wc_status)n->wc_status);
	return rsec_strerror(n->rc);
}

/* ---- verbs helpers ---- */

static uint32_t qpn_log[32];
static unsigned qpn_count;

static void log_qpn(const struct rsec_qp *q, const char *what)
{
	if (qpn_count < sizeof(qpn_log) / sizeof(qpn_log[0]))
		qpn_log[qpn_count++] = q->qp->qp_num;
	say("created %s: QPN 0x%06x, local PSN 0x%06x", what, q->qp->qp_num, q->local_psn);
}

static void pair_qp(int fd, struct rsec_qp *q, const char *what)
{
	struct rsec_qp_peer me, peer;

	rsec_qp_describe_local(q, &me);
	xwrite(fd, &me, sizeof(me));
	xread(fd, &peer, sizeof(peer));
	check(rsec_qp_connect(q, &peer), "rsec_qp_connect");
	say("%s: QP 0x%06x psn 0x%06x <-> peer QP 0x%06x psn 0x%06x, path MTU %u", what, me.qpn, me.psn, peer.qpn,
	    peer.psn, rsec_mtu_bytes(rsec_qp_path_mtu(me.mtu, peer.mtu)));
}

static void new_qp(struct rsec_dev *d, struct rsec_qp *q, const char *what)
{
	check(rsec_qp_create(d, 64, 64, q), "rsec_qp_create");
	log_qpn(q, what);
}

static struct ibv_mr *local_mr(struct ibv_pd *pd, void *p, size_t n)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, p, n, IBV_ACCESS_LOCAL_WRITE);

	if (mr == NULL)
		die("ibv_reg_mr: %s", strerror(errno));
	return mr;
}

static int post_recv(struct rsec_qp *q, struct ibv_mr *mr, void *buf, uint32_t len, uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = len, .lkey = mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad = NULL;

	return ibv_post_recv(q->qp, &wr, &bad) == 0 ? 0 : RSEC_E_VERBS;
}

/* Post one signaled WR and wait for it; the outcome goes into n. */
static void op_sync(struct rsec_qp *q, enum ibv_wr_opcode op, struct ibv_mr *mr, void *buf, uint32_t len,
		    uint64_t raddr, uint32_t rkey, uint32_t inv_rkey, struct note *n)
{
	static uint64_t next_id = 1000;
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = len, .lkey = mr->lkey };
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_wc wc;

	memset(&wr, 0, sizeof(wr));
	memset(n, 0, sizeof(*n));
	wr.wr_id = next_id++;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	if (op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_READ) {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	if (op == IBV_WR_SEND_WITH_INV)
		wr.invalidate_rkey = inv_rkey;
	if (ibv_post_send(q->qp, &wr, &bad) != 0) {
		n->rc = RSEC_E_VERBS;
	} else {
		memset(&wc, 0, sizeof(wc));
		n->rc = rsec_qp_wait_wr(q, wr.wr_id, WAIT_MS, &wc);
		n->wc_status = (int32_t)wc.status;
	}
	n->qp_state = rsec_qp_state(q);
}

static void wait_local(struct rsec_qp *q, uint64_t wr_id, const char *what)
{
	struct ibv_wc wc;
	int rc;

	memset(&wc, 0, sizeof(wc));
	rc = rsec_qp_wait_wr(q, wr_id, WAIT_MS, &wc);
	if (rc == RSEC_E_QP)
		die("%s: completion %s", what, ibv_wc_status_str(wc.status));
	check(rc, what);
}

static void bind_sync(struct rsec_qp *q, struct rsec_mw *w, struct ibv_mr *mr, void *buf, size_t len)
{
	check(rsec_mw_bind_post(q, w, mr, (uintptr_t)buf, len, IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE, 7),
	      "rsec_mw_bind_post");
	wait_local(q, 7, "bind");
}

static void inv_sync(struct rsec_qp *q, struct rsec_mw *w)
{
	check(rsec_mw_invalidate_post(q, w, 8), "rsec_mw_invalidate_post");
	wait_local(q, 8, "local invalidate");
}

static struct wire_win win_of(const struct rsec_mw *w)
{
	struct wire_win ww = { .addr = w->addr, .len = w->len, .rkey = w->rkey };

	return ww;
}

/* Client: WRITE then READ back 'len' bytes of pattern(seed) at the window's start; byte-exact or die. */
static void write_read(struct rsec_qp *q, struct ibv_mr *smr, struct ibv_mr *dmr, uint8_t *src, uint8_t *dst,
		       uint32_t len, const struct wire_win *w, uint32_t seed, double *wms, double *rms)
{
	struct timespec t0;
	struct note n;

	pattern(src, len, seed);
	memset(dst, 0, len);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	op_sync(q, IBV_WR_RDMA_WRITE, smr, src, len, w->addr, w->rkey, 0, &n);
	if (n.rc != 0)
		die("RDMA WRITE %u B: %s", len, note_str(&n));
	*wms = ms_since(&t0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	op_sync(q, IBV_WR_RDMA_READ, dmr, dst, len, w->addr, w->rkey, 0, &n);
	if (n.rc != 0)
		die("RDMA READ %u B: %s", len, note_str(&n));
	*rms = ms_since(&t0);
	if (memcmp(src, dst, len) != 0)
		die("RDMA READ of %u B returned other bytes than written", len);
}

static struct rsec_dev *open_dev(const char *ip)
{
	struct rsec_dev *d;
	char why[160];

	check(rsec_dev_open_err(NULL, ip, &d, why, sizeof(why)) == 0 ? 0 : RSEC_E_NODEV, why);
	say("device %s port %u gid_index %d link %s active MTU %u mw_type2 %d max_qp_wr %u max_rd_atom %u", d->name,
	    (unsigned)d->port, d->gid_index, d->link_layer == IBV_LINK_LAYER_ETHERNET ? "RoCE" : "IB",
	    rsec_mtu_bytes(d->active_mtu), (int)d->mw_type2, d->max_qp_wr, (unsigned)d->max_rd_atom);
	return d;
}

/* ---- server: host 1 ---- */

struct server {
	struct rsec_dev *dev;
	int lfd, cfd, tfd;
	struct rsec_qp sA, sA2, sC, sE, sC2[3];
	uint8_t *msg, *big, *small, *rbuf2, *b3;
	struct ibv_mr *msg_mr, *mrA, *mrE, *rmr2[3], *mr3;
	struct rsec_mw W, W2, W3;
};

static void srv_sendrecv(struct server *s)
{
	struct ibv_wc wc;
	struct note n;

	s->msg = xalloc(2 * SMALL);
	s->msg_mr = local_mr(s->sA.pd, s->msg, 2 * SMALL);
	check(post_recv(&s->sA, s->msg_mr, s->msg, SMALL, 1), "post_recv");
	sync_tag(s->cfd, 1);
	memset(&wc, 0, sizeof(wc));
	check(rsec_cq_wait(s->sA.recv_cq, 1, WAIT_MS, &wc), "receive");
	if (wc.byte_len != SMALL || !matches(s->msg, SMALL, 0xC1))
		die("SEND/RECV: received %u bytes, not the client's 4096-byte pattern", wc.byte_len);
	pattern(s->msg + SMALL, SMALL, 0x51);
	op_sync(&s->sA, IBV_WR_SEND, s->msg_mr, s->msg + SMALL, SMALL, 0, 0, 0, &n);
	if (n.rc != 0)
		die("SEND: %s", note_str(&n));
	say("RESULT sendrecv server-received 4096 B byte-exact");
}

static void srv_rdma_sizes(struct server *s)
{
	static const uint32_t sizes[] = { 1, 4096, 1u << 20, BIG };
	struct wire_win ww;

	s->big = xalloc(BIG);
	check(rsec_mr_reg(&s->sA, s->big, BIG, true, &s->mrA), "rsec_mr_reg");
	say("window MR: lkey 0x%08x rkey 0x%08x (no REMOTE_* access on the MR)", s->mrA->lkey, s->mrA->rkey);
	check(rsec_mw_alloc(&s->sA, &s->W), "rsec_mw_alloc");
	say("type-2 MW allocated: rkey 0x%08x", s->W.rkey);
	bind_sync(&s->sA, &s->W, s->mrA, s->big, BIG);
	say("bound to QP 0x%06x: rkey 0x%08x", s->sA.qp->qp_num, s->W.rkey);
	ww = win_of(&s->W);
	xwrite(s->cfd, &ww, sizeof(ww));
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint32_t got;
		int32_t ok;

		xread(s->cfd, &got, sizeof(got));
		ok = got == sizes[i] && matches(s->big, sizes[i], sizes[i]);
		xwrite(s->cfd, &ok, sizeof(ok));
		if (!ok)
			die("server memory after the client's %u-byte WRITE is not what it wrote", sizes[i]);
	}
	say("RESULT window memory holds the client's bytes for 1 B, 4 KiB, 1 MiB, 16 MiB");
}

/* The server checks the client's 4 KiB probe through QP1 (seed) landed. */
static void srv_qp1_probe(struct server *s, uint32_t tag, uint32_t seed, const char *label)
{
	struct note n;

	sync_tag(s->cfd, tag);
	xread(s->cfd, &n, sizeof(n));
	if (n.rc != 0 || !matches(s->big, SMALL, seed))
		die("QP1 access after %s failed: %s", label, note_str(&n));
	say("RESULT qp1-after-%s ok", label);
}

/* A second QP in the window's own PD: only the type-2 QP binding can stop it. */
static void srv_foreign_same_pd(struct server *s)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;
	struct note n;
	int st;

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = s->sA.send_cq;
	ia.recv_cq = s->sA.recv_cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	s->sA2 = s->sA; /* alias of QP1's PD and CQs; only .qp is its own */
	s->sA2.qp = ibv_create_qp(s->sA.pd, &ia);
	if (s->sA2.qp == NULL)
		die("ibv_create_qp: %s", strerror(errno));
	check(rsec_psn_random(&s->sA2.local_psn), "rsec_psn_random");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = s->dev->port;
	a.qp_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
	if (ibv_modify_qp(s->sA2.qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) != 0)
		die("INIT of second QP");
	log_qpn(&s->sA2, "QP1' (same PD as QP1)");
	pair_qp(s->cfd, &s->sA2, "QP1' <-> client QP2");
	sync_tag(s->cfd, 30);
	xread(s->cfd, &n, sizeof(n));
	st = rsec_qp_state(&s->sA2);
	say("RESULT foreign-qp-same-pd requester=\"%s\" requester_qp=%s responder_qp=%s memory=%s", note_str(&n),
	    qp_state_name(n.qp_state), qp_state_name(st),
	    matches(s->big, SMALL, BIG) ? "untouched" : "MODIFIED");
	if (n.rc == 0 || !matches(s->big, SMALL, BIG))
		die("a QP the window is not bound to reached its memory");
	srv_qp1_probe(s, 31, 0x31, "foreign-same-pd");
}

/* Host 3 with its own QP (own PD on our side, as the product does) and the leaked key. */
static void srv_foreign_host(struct server *s)
{
	struct wire_win ww = win_of(&s->W);
	struct note n;
	int st;

	new_qp(s->dev, &s->sC, "QP3 (for host 3, own PD)");
	pair_qp(s->tfd, &s->sC, "QP3 <-> host 3");
	xwrite(s->tfd, &ww, sizeof(ww));
	sync_tag(s->tfd, 40);
	xread(s->tfd, &n, sizeof(n));
	st = rsec_qp_state(&s->sC);
	say("RESULT foreign-host requester=\"%s\" requester_qp=%s responder_qp=%s memory=%s", note_str(&n),
	    qp_state_name(n.qp_state), qp_state_name(st), matches(s->big, SMALL, 0x31) ? "untouched" : "MODIFIED");
	if (n.rc == 0 || !matches(s->big, SMALL, 0x31))
		die("host 3 reached the window's memory");
	srv_qp1_probe(s, 41, 0x41, "foreign-host");
}

static void srv_rebind(struct server *s)
{
	char keys[8 * 4 + 1] = "";
	uint32_t prev = s->W.rkey;
	struct wire_win ww;
	bool differ = true;

	for (int i = 0; i < 8; i++) {
		inv_sync(&s->sA, &s->W);
		bind_sync(&s->sA, &s->W, s->mrA, s->big, BIG);
		if ((s->W.rkey & 0xff) == (prev & 0xff) || (s->W.rkey >> 8) != (prev >> 8))
			differ = false;
		(void)snprintf(keys + strlen(keys), sizeof(keys) - strlen(keys), "%s%02x", i ? "," : "",
			       s->W.rkey & 0xff);
		prev = s->W.rkey;
	}
	say("RESULT rebind 8 times: key bytes %s, index 0x%06x kept, each differs from the previous: %s", keys,
	    s->W.rkey >> 8, differ ? "yes" : "NO");
	if (!differ)
		die("rebinding reused a key byte");
	ww = win_of(&s->W);
	xwrite(s->cfd, &ww, sizeof(ww));
	srv_qp1_probe(s, 50, 0x50, "rebind");
}

static void srv_local_inv(struct server *s)
{
	struct note n;
	int st;

	inv_sync(&s->sA, &s->W);
	sync_tag(s->cfd, 60);
	xread(s->cfd, &n, sizeof(n));
	st = rsec_qp_state(&s->sA);
	say("RESULT after-local-inv requester=\"%s\" requester_qp=%s responder_qp=%s memory=%s", note_str(&n),
	    qp_state_name(n.qp_state), qp_state_name(st), matches(s->big, SMALL, 0x50) ? "untouched" : "MODIFIED");
	if (n.rc == 0 || !matches(s->big, SMALL, 0x50))
		die("access through an invalidated window succeeded");
}

/* One SEND_WITH_INV from host 3 on a fresh QP pair (our side: own PD, one receive posted). */
struct inv_attempt {
	struct note sender;      /* host 3's send completion */
	int rc;                  /* our receive */
	struct ibv_wc wc;
	int qp_state;            /* our QP afterwards */
};

static void srv_inv_attempt(struct server *s, unsigned i, uint32_t key, const char *label, struct inv_attempt *out)
{
	struct rsec_qp *q = &s->sC2[i];
	struct wire_win ww = { .rkey = key };
	char what[64];

	(void)snprintf(what, sizeof(what), "QP%u (host 3, attempt %u, own PD)", 6 + i, i + 1);
	xwrite(s->tfd, &(uint32_t){ i + 1 }, sizeof(uint32_t)); /* attempt number; 0 ends */
	new_qp(s->dev, q, what);
	pair_qp(s->tfd, q, what);
	s->rmr2[i] = local_mr(q->pd, s->rbuf2, SMALL);
	check(post_recv(q, s->rmr2[i], s->rbuf2, SMALL, 71), "post_recv");
	xwrite(s->tfd, &ww, sizeof(ww));
	sync_tag(s->tfd, 71 + i);
	xread(s->tfd, &out->sender, sizeof(out->sender));
	memset(&out->wc, 0, sizeof(out->wc));
	out->rc = rsec_cq_wait(q->recv_cq, 71, 5000, &out->wc);
	out->qp_state = rsec_qp_state(q);
	say("RESULT send-with-inv-%s attacker_send=\"%s\" attacker_qp=%s server_recv=\"%s\" wc_flags=0x%x "
	    "wc_ex_data=0x%08x (key 0x%08x) server_qp=%s",
	    label, note_str(&out->sender), qp_state_name(out->sender.qp_state),
	    out->rc == 0 ? "success" : out->rc == RSEC_E_QP ? ibv_wc_status_str(out->wc.status) : rsec_strerror(out->rc),
	    out->wc.wc_flags, out->wc.invalidated_rkey, key, qp_state_name(out->qp_state));
}

/* Open question (facts §3): may a QP the window is not bound to invalidate it with SEND_WITH_INV? */
static void srv_send_with_inv(struct server *s)
{
	struct inv_attempt a;
	struct wire_win ww;
	struct note n, victim;
	bool intact;

	new_qp(s->dev, &s->sE, "QP5 (victim connection, own PD)");
	pair_qp(s->cfd, &s->sE, "QP5 <-> client QP5");
	s->small = xalloc(WIN2_LEN);
	s->rbuf2 = xalloc(SMALL);
	check(rsec_mr_reg(&s->sE, s->small, WIN2_LEN, true, &s->mrE), "rsec_mr_reg");
	check(rsec_mw_alloc(&s->sE, &s->W2), "rsec_mw_alloc");
	bind_sync(&s->sE, &s->W2, s->mrE, s->small, WIN2_LEN);
	ww = win_of(&s->W2);
	xwrite(s->cfd, &ww, sizeof(ww));
	xread(s->cfd, &n, sizeof(n));
	if (n.rc != 0 || !matches(s->small, SMALL, 0x70))
		die("victim window does not work before the attack: %s", note_str(&n));

	srv_inv_attempt(s, 0, ww.rkey, "victim-key", &a);
	sync_tag(s->cfd, 80);
	xread(s->cfd, &victim, sizeof(victim));
	intact = victim.rc == 0 && matches(s->small, SMALL, 0x72);
	say("RESULT send-with-inv window_after=%s victim_access=\"%s\" victim_requester_qp=%s victim_responder_qp=%s",
	    intact ? "valid" : "invalidated", note_str(&victim), qp_state_name(victim.qp_state),
	    qp_state_name(rsec_qp_state(&s->sE)));
	/*
	 * The window is now FREE with the same key. Invalidating it again from
	 * remote panics the 6.1 kernel (NULL mw->qp in rxe_do_invalidate_mw,
	 * observed), so that attempt runs only when asked, in its own boot.
	 */
	if (getenv("VERBS_CHECK_REINVALIDATE") != NULL) {
		say("attempting SEND_WITH_INV of the already invalidated (FREE) window: expect a kernel panic");
		srv_inv_attempt(s, 1, ww.rkey, "same-key-again", &a);
	}
	srv_inv_attempt(s, 2, (ww.rkey & 0xff000000u) | 0x00fff000u | 0x5a, "bogus-key", &a);
	xwrite(s->tfd, &(uint32_t){ 0 }, sizeof(uint32_t));
}

/* Revoke by deallocating a bound window (no LOCAL_INV first): host 3's QP6 is the rightful peer here. */
static void srv_dealloc_bound(struct server *s)
{
	struct rsec_qp *q = &s->sC2[0];
	struct wire_win ww;
	struct note before, after;

	s->b3 = xalloc(SMALL);
	check(rsec_mr_reg(q, s->b3, SMALL, true, &s->mr3), "rsec_mr_reg");
	check(rsec_mw_alloc(q, &s->W3), "rsec_mw_alloc");
	bind_sync(q, &s->W3, s->mr3, s->b3, SMALL);
	ww = win_of(&s->W3);
	xwrite(s->tfd, &ww, sizeof(ww));
	sync_tag(s->tfd, 90);
	xread(s->tfd, &before, sizeof(before));
	if (before.rc != 0 || !matches(s->b3, SMALL, 0x90))
		die("window on QP6 does not work: %s", note_str(&before));
	rsec_mw_free(&s->W3);
	sync_tag(s->tfd, 91);
	xread(s->tfd, &after, sizeof(after));
	say("RESULT dealloc-bound before=\"%s\" after=\"%s\" requester_qp=%s responder_qp=%s memory=%s",
	    note_str(&before), note_str(&after), qp_state_name(after.qp_state), qp_state_name(rsec_qp_state(q)),
	    matches(s->b3, SMALL, 0x90) ? "untouched" : "MODIFIED");
	if (after.rc == 0 || !matches(s->b3, SMALL, 0x90))
		die("access through a deallocated window succeeded");
}

static void srv_qpn_burst(struct server *s)
{
	struct rsec_qp b[4];
	char line[128] = "";
	bool seq = true;

	for (int i = 0; i < 4; i++) {
		check(rsec_qp_create(s->dev, 4, 4, &b[i]), "rsec_qp_create");
		(void)snprintf(line + strlen(line), sizeof(line) - strlen(line), " 0x%06x", b[i].qp->qp_num);
		if (i > 0 && b[i].qp->qp_num != b[i - 1].qp->qp_num + 1)
			seq = false;
	}
	for (int i = 3; i >= 0; i--)
		rsec_qp_destroy(&b[i]);
	say("RESULT qpn-burst%s sequential=%s", line, seq ? "yes" : "no");
}

static void print_qpn_log(void)
{
	char line[512] = "";

	for (unsigned i = 0; i < qpn_count; i++)
		(void)snprintf(line + strlen(line), sizeof(line) - strlen(line), " 0x%06x", qpn_log[i]);
	say("RESULT qpn-order%s", line);
}

static void srv_teardown(struct server *s)
{
	rsec_mw_free(&s->W3);
	rsec_mw_free(&s->W2);
	if (s->mr3)
		(void)ibv_dereg_mr(s->mr3);
	rsec_mw_free(&s->W);
	for (int i = 2; i >= 0; i--)
		if (s->rmr2[i])
			(void)ibv_dereg_mr(s->rmr2[i]);
	if (s->mrE)
		(void)ibv_dereg_mr(s->mrE);
	if (s->mrA)
		(void)ibv_dereg_mr(s->mrA);
	if (s->msg_mr)
		(void)ibv_dereg_mr(s->msg_mr);
	if (s->sA2.qp)
		(void)ibv_destroy_qp(s->sA2.qp);
	for (int i = 2; i >= 0; i--)
		rsec_qp_destroy(&s->sC2[i]);
	rsec_qp_destroy(&s->sE);
	rsec_qp_destroy(&s->sC);
	rsec_qp_destroy(&s->sA);
	rsec_dev_put(s->dev);
	free(s->msg);
	free(s->big);
	free(s->small);
	free(s->rbuf2);
	free(s->b3);
	close(s->cfd);
	close(s->tfd);
	close(s->lfd);
}

static int server_main(const char *ip, const char *port)
{
	struct server s;

	memset(&s, 0, sizeof(s));
	s.dev = open_dev(ip);
	s.lfd = tcp_listen(ip, port);
	/* Host 2 and host 3 connect in any order; each names its role first. */
	s.cfd = s.tfd = -1;
	for (int i = 0; i < 2; i++) {
		int fd = tcp_accept(s.lfd);
		char r;

		xread(fd, &r, 1);
		if (r == 'C' && s.cfd < 0)
			s.cfd = fd;
		else if (r == 'T' && s.tfd < 0)
			s.tfd = fd;
		else
			die("unexpected control connection (role %c)", r);
	}
	new_qp(s.dev, &s.sA, "QP1 (client connection)");
	pair_qp(s.cfd, &s.sA, "QP1 <-> client QP1");
	srv_sendrecv(&s);
	srv_rdma_sizes(&s);
	srv_foreign_same_pd(&s);
	srv_foreign_host(&s);
	srv_rebind(&s);
	srv_local_inv(&s);
	srv_send_with_inv(&s);
	srv_dealloc_bound(&s);
	srv_qpn_burst(&s);
	print_qpn_log();
	srv_teardown(&s);
	say("done");
	return 0;
}

/* ---- client: host 2 ---- */

static void cli_probe(int fd, uint32_t tag, struct rsec_qp *q, struct ibv_mr *smr, struct ibv_mr *dmr,
		      uint8_t *src, uint8_t *dst, const struct wire_win *w, uint32_t seed)
{
	struct note n = { 0, 0, 0, 0 };
	double wms, rms;

	sync_tag(fd, tag);
	write_read(q, smr, dmr, src, dst, SMALL, w, seed, &wms, &rms);
	xwrite(fd, &n, sizeof(n));
}

/*
 * A peer that never answers: host 1 has no QP of that number, so nothing
 * ACKs our WRITE. Transport retries must end in RETRY_EXC, as a peer that
 * died or lost its responses surfaces on hardware; rxe retries forever when
 * retry_cnt is 7 (rxe_comp.c never counts 7 down).
 */
static void cli_dead_peer(struct rsec_dev *d, const char *server, uint8_t *buf)
{
	struct rsec_qp q;
	struct rsec_qp_peer nobody;
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_wc wc;
	struct ibv_mr *mr;
	struct timespec t0;
	int rc;

	new_qp(d, &q, "QP6 (to a QP that does not exist)");
	rsec_qp_describe_local(&q, &nobody);
	memset(&nobody.gid, 0, sizeof(nobody.gid));
	nobody.gid.raw[10] = nobody.gid.raw[11] = 0xff; /* ::ffff:a.b.c.d, host 1's RoCEv2 GID */
	if (inet_pton(AF_INET, server, &nobody.gid.raw[12]) != 1)
		die("bad server address %s", server);
	nobody.qpn = 0xfffff0;
	check(rsec_qp_connect(&q, &nobody), "rsec_qp_connect to no QP");
	mr = local_mr(q.pd, buf, 64);
	sge = (struct ibv_sge){ .addr = (uintptr_t)buf, .length = 64, .lkey = mr->lkey };
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 6;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (ibv_post_send(q.qp, &wr, &bad) != 0)
		die("post to no QP");
	memset(&wc, 0, sizeof(wc));
	rc = rsec_qp_wait_wr(&q, 6, 10000, &wc); /* 7 tries of 67 ms take 0.5 s */
	say("RESULT dead-peer requester=\"%s\" after_ms=%.0f",
	    rc == RSEC_E_QP ? ibv_wc_status_str(wc.status) : rsec_strerror(rc), ms_since(&t0));
	(void)ibv_dereg_mr(mr);
	rsec_qp_destroy(&q);
}

static int client_main(const char *ip, const char *server, const char *port)
{
	static const uint32_t sizes[] = { 1, 4096, 1u << 20, BIG };
	struct rsec_dev *d = open_dev(ip);
	struct rsec_qp cA, cB, cE;
	struct ibv_mr *msg_mr, *mr, *dmr, *mrB, *mrE;
	struct wire_win w, w2;
	struct ibv_wc wc;
	struct note n;
	uint8_t *msg = xalloc(2 * SMALL), *src = xalloc(BIG), *dst = xalloc(BIG);
	int fd = tcp_connect(server, port, 'C');

	new_qp(d, &cA, "QP1");
	pair_qp(fd, &cA, "QP1 <-> server QP1");

	/* (1) SEND/RECV both ways */
	msg_mr = local_mr(cA.pd, msg, 2 * SMALL);
	check(post_recv(&cA, msg_mr, msg, SMALL, 2), "post_recv");
	pattern(msg + SMALL, SMALL, 0xC1);
	sync_tag(fd, 1);
	op_sync(&cA, IBV_WR_SEND, msg_mr, msg + SMALL, SMALL, 0, 0, 0, &n);
	if (n.rc != 0)
		die("SEND: %s", note_str(&n));
	memset(&wc, 0, sizeof(wc));
	check(rsec_cq_wait(cA.recv_cq, 2, WAIT_MS, &wc), "receive");
	if (wc.byte_len != SMALL || !matches(msg, SMALL, 0x51))
		die("SEND/RECV: received %u bytes, not the server's pattern", wc.byte_len);
	say("RESULT sendrecv client-received 4096 B byte-exact");

	/* (2) WRITE then READ through the window */
	mr = local_mr(cA.pd, src, BIG);
	dmr = local_mr(cA.pd, dst, BIG);
	{
		xread(fd, &w, sizeof(w));
		say("window: len %llu rkey 0x%08x", (unsigned long long)w.len, w.rkey);
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			double wms, rms;
			int32_t ok;

			/* READ lands in dst, which its own MR covers; WRITE sources src. */
			pattern(src, sizes[i], sizes[i]);
			memset(dst, 0, sizes[i]);
			{
				struct timespec t0;

				clock_gettime(CLOCK_MONOTONIC, &t0);
				op_sync(&cA, IBV_WR_RDMA_WRITE, mr, src, sizes[i], w.addr, w.rkey, 0, &n);
				if (n.rc != 0)
					die("RDMA WRITE %u B: %s", sizes[i], note_str(&n));
				wms = ms_since(&t0);
				clock_gettime(CLOCK_MONOTONIC, &t0);
				op_sync(&cA, IBV_WR_RDMA_READ, dmr, dst, sizes[i], w.addr, w.rkey, 0, &n);
				if (n.rc != 0)
					die("RDMA READ %u B: %s", sizes[i], note_str(&n));
				rms = ms_since(&t0);
			}
			if (memcmp(src, dst, sizes[i]) != 0)
				die("READ of %u B returned other bytes than written", sizes[i]);
			xwrite(fd, &sizes[i], sizeof(sizes[i]));
			xread(fd, &ok, sizeof(ok));
			if (!ok)
				die("server saw other bytes than written (%u B)", sizes[i]);
			say("RESULT rdma size=%u write+read byte-exact write_ms=%.2f read_ms=%.2f (%.1f/%.1f MB/s)",
			    sizes[i], wms, rms, sizes[i] / wms / 1e3, sizes[i] / rms / 1e3);
		}
	}

	/* (3a) QP2: the server side is a second QP in the window's PD */
	new_qp(d, &cB, "QP2");
	pair_qp(fd, &cB, "QP2 <-> server QP1'");
	mrB = local_mr(cB.pd, src, SMALL);
	pattern(src, SMALL, 0xBAD);
	sync_tag(fd, 30);
	op_sync(&cB, IBV_WR_RDMA_WRITE, mrB, src, SMALL, w.addr, w.rkey, 0, &n);
	say("QP2 WRITE with QP1's window: \"%s\", QP2 now %s", note_str(&n), qp_state_name(n.qp_state));
	xwrite(fd, &n, sizeof(n));
	cli_probe(fd, 31, &cA, mr, dmr, src, dst, &w, 0x31);
	/* (3b) host 3 tries; then QP1 again */
	cli_probe(fd, 41, &cA, mr, dmr, src, dst, &w, 0x41);

	/* (5) rebinding: the new key works */
	xread(fd, &w, sizeof(w));
	cli_probe(fd, 50, &cA, mr, dmr, src, dst, &w, 0x50);

	/* (4) after LOCAL_INV the key is dead */
	pattern(src, SMALL, 0x60);
	sync_tag(fd, 60);
	op_sync(&cA, IBV_WR_RDMA_WRITE, mr, src, SMALL, w.addr, w.rkey, 0, &n);
	say("QP1 WRITE after LOCAL_INV: \"%s\", QP1 now %s", note_str(&n), qp_state_name(n.qp_state));
	xwrite(fd, &n, sizeof(n));

	/* (6) victim connection for the SEND_WITH_INV question */
	new_qp(d, &cE, "QP5");
	pair_qp(fd, &cE, "QP5 <-> server QP5");
	mrE = local_mr(cE.pd, src, 2 * SMALL);
	xread(fd, &w2, sizeof(w2));
	{
		double wms, rms;

		write_read(&cE, mrE, mrE, src, src + SMALL, SMALL, &w2, 0x70, &wms, &rms);
	}
	memset(&n, 0, sizeof(n));
	xwrite(fd, &n, sizeof(n));
	sync_tag(fd, 80);
	pattern(src, SMALL, 0x72);
	op_sync(&cE, IBV_WR_RDMA_WRITE, mrE, src, SMALL, w2.addr, w2.rkey, 0, &n);
	say("QP5 WRITE after host 3's SEND_WITH_INV: \"%s\", QP5 now %s", note_str(&n), qp_state_name(n.qp_state));
	xwrite(fd, &n, sizeof(n));
	cli_dead_peer(d, server, src);

	print_qpn_log();
	(void)ibv_dereg_mr(mrE);
	(void)ibv_dereg_mr(mrB);
	(void)ibv_dereg_mr(dmr);
	(void)ibv_dereg_mr(mr);
	(void)ibv_dereg_mr(msg_mr);
	rsec_qp_destroy(&cE);
	rsec_qp_destroy(&cB);
	rsec_qp_destroy(&cA);
	rsec_dev_put(d);
	free(msg);
	free(src);
	free(dst);
	close(fd);
	say("done");
	return 0;
}

/* ---- third party: host 3 ---- */

static int third_main(const char *ip, const char *server, const char *port)
{
	struct rsec_dev *d = open_dev(ip);
	struct rsec_qp cC, cC2[3];
	struct ibv_mr *mr, *mr2[3] = { NULL, NULL, NULL };
	struct wire_win w;
	struct note n;
	uint8_t *buf = xalloc(SMALL);
	int fd = tcp_connect(server, port, 'T');

	memset(cC2, 0, sizeof(cC2));
	new_qp(d, &cC, "QP3");
	pair_qp(fd, &cC, "QP3 <-> server QP3");
	mr = local_mr(cC.pd, buf, SMALL);
	xread(fd, &w, sizeof(w));
	pattern(buf, SMALL, 0xBAD);
	sync_tag(fd, 40);
	op_sync(&cC, IBV_WR_RDMA_WRITE, mr, buf, SMALL, w.addr, w.rkey, 0, &n);
	say("QP3 WRITE with the leaked key: \"%s\", QP3 now %s", note_str(&n), qp_state_name(n.qp_state));
	xwrite(fd, &n, sizeof(n));

	for (;;) {
		uint32_t i;

		xread(fd, &i, sizeof(i));
		if (i-- == 0)
			break;
		if (i > 2)
			die("bad attempt number");
		new_qp(d, &cC2[i], "QP for SEND_WITH_INV");
		pair_qp(fd, &cC2[i], "SEND_WITH_INV QP <-> server");
		mr2[i] = local_mr(cC2[i].pd, buf, SMALL);
		xread(fd, &w, sizeof(w));
		sync_tag(fd, 71 + i);
		op_sync(&cC2[i], IBV_WR_SEND_WITH_INV, mr2[i], buf, 64, 0, 0, w.rkey, &n);
		say("SEND_WITH_INV attempt %u (key 0x%08x): \"%s\", our QP now %s", i + 1, w.rkey, note_str(&n),
		    qp_state_name(n.qp_state));
		xwrite(fd, &n, sizeof(n));
	}

	/* The server deallocates a bound window of QP6 between these two writes. */
	xread(fd, &w, sizeof(w));
	for (uint32_t tag = 90; tag <= 91; tag++) {
		pattern(buf, SMALL, 0x90 + (tag - 90));
		sync_tag(fd, tag);
		op_sync(&cC2[0], IBV_WR_RDMA_WRITE, mr2[0], buf, SMALL, w.addr, w.rkey, 0, &n);
		say("QP6 WRITE %s the window's dealloc: \"%s\"", tag == 90 ? "before" : "after", note_str(&n));
		xwrite(fd, &n, sizeof(n));
	}

	print_qpn_log();
	for (int i = 2; i >= 0; i--) {
		if (mr2[i] != NULL)
			(void)ibv_dereg_mr(mr2[i]);
		rsec_qp_destroy(&cC2[i]);
	}
	(void)ibv_dereg_mr(mr);
	rsec_qp_destroy(&cC);
	rsec_dev_put(d);
	free(buf);
	close(fd);
	say("done");
	return 0;
}

int main(int argc, char **argv)
{
	/* A wedged peer must not hang the fabric test until its outer timeout. */
	alarm(240);
	if (argc == 4 && strcmp(argv[1], "server") == 0) {
		role = "server";
		return server_main(argv[2], argv[3]);
	}
	if (argc == 5 && strcmp(argv[1], "client") == 0) {
		role = "client";
		return client_main(argv[2], argv[3], argv[4]);
	}
	if (argc == 5 && strcmp(argv[1], "third") == 0) {
		role = "third";
		return third_main(argv[2], argv[3], argv[4]);
	}
	fprintf(stderr, "usage: verbs_check server LOCAL_IP PORT\n"
			"       verbs_check client|third LOCAL_IP SERVER_IP PORT\n");
	return 2;
}
