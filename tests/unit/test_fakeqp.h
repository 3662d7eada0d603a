/* SPDX-License-Identifier: MIT */
/*
 * An established connection whose queue pair is a stand-in, for tests of
 * the data path, rebuilds and resumes without a device (test_data,
 * test_rebuild, test_resume). Real: the TLS 1.3 session (PSK, a
 * socketpair) and every key derived from it, so the peer's frames are
 * sealed by the peer's own keys. Faked: the verbs the library calls through
 * a context's ops (poll a CQ, post a receive or a send) answer from here,
 * and the few it calls in libibverbs (create, modify, query and destroy a
 * QP; deregister memory) are wrapped at link time (-Wl,--wrap,
 * tests/CMakeLists.txt). A test queues receive completions as the device
 * would report them; a QP's state is what the library last moved it to.
 * Include after cmocka.h and test_frames.h; one fake per program.
 */
#ifndef RSEC_TEST_FAKEQP_H
#define RSEC_TEST_FAKEQP_H

#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <fcntl.h>
#include <unistd.h>

#include "conn.h"

#define FAKE_WC_MAX 16
#define FAKE_SLOTS 8u
#define FAKE_SLOT_SIZE 4096u

struct fake_verbs {
	struct ibv_context ctx;
	struct ibv_pd pd;
	struct ibv_cq send_cq, recv_cq;
	struct ibv_mr mr;
	struct ibv_wc recv_wc[FAKE_WC_MAX]; /* what the receive CQ reports next */
	unsigned recv_wc_n, recv_wc_next;
	unsigned recvs_posted, sends_posted;
	unsigned doorbells;  /* ibv_post_send calls */
	unsigned recv_arms;  /* ibv_req_notify_cq on the receive CQ */
	struct ibv_comp_channel chan; /* fake_channel: a pipe whose bytes are events of the receive CQ */
	int chan_in;         /* its write end */
	uint32_t next_qpn;
	int qps_live; /* created, not destroyed */
};

static struct fake_verbs fake;

static inline int fake_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	int got = 0;
	while (cq == &fake.recv_cq && got < n && fake.recv_wc_next < fake.recv_wc_n)
		wc[got++] = fake.recv_wc[fake.recv_wc_next++];
	return got;
}

static inline int fake_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	(void)solicited_only;
	fake.recv_arms += cq == &fake.recv_cq;
	return 0;
}

/* The completion channel's stand-in (fake_channel): a byte is one event of the receive CQ. */
int __wrap_ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context);
int __wrap_ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
	char b;
	if (read(channel->fd, &b, 1) != 1)
		return -1; /* errno: EAGAIN when empty (non-blocking) */
	*cq = &fake.recv_cq;
	*cq_context = NULL;
	return 0;
}

void __wrap_ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents);
void __wrap_ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	(void)cq;
	(void)nevents;
}

static inline int fake_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	(void)qp;
	(void)bad;
	for (; wr; wr = wr->next)
		fake.recvs_posted++;
	return 0;
}

static inline int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	(void)qp;
	(void)bad;
	fake.doorbells++;
	for (; wr; wr = wr->next)
		fake.sends_posted++;
	return 0;
}

struct ibv_qp *__wrap_ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
struct ibv_qp *__wrap_ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp *qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;
	qp->context = &fake.ctx;
	qp->pd = pd;
	qp->send_cq = attr->send_cq;
	qp->recv_cq = attr->recv_cq;
	qp->qp_type = IBV_QPT_RC;
	qp->state = IBV_QPS_RESET;
	qp->qp_num = fake.next_qpn++;
	fake.qps_live++;
	return qp;
}

int __wrap_ibv_destroy_qp(struct ibv_qp *qp);
int __wrap_ibv_destroy_qp(struct ibv_qp *qp)
{
	fake.qps_live--;
	free(qp);
	return 0;
}

int __wrap_ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
int __wrap_ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	if (mask & IBV_QP_STATE)
		qp->state = attr->qp_state;
	return 0;
}

int __wrap_ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask, struct ibv_qp_init_attr *init);
int __wrap_ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask, struct ibv_qp_init_attr *init)
{
	(void)mask;
	memset(attr, 0, sizeof(*attr));
	memset(init, 0, sizeof(*init));
	attr->qp_state = qp->state;
	return 0;
}

int __wrap_ibv_dereg_mr(struct ibv_mr *mr);
int __wrap_ibv_dereg_mr(struct ibv_mr *mr)
{
	assert_ptr_equal(mr, &fake.mr); /* the only registration a test connection has */
	return 0;
}

static inline void fake_reset(void)
{
	memset(&fake, 0, sizeof(fake));
	fake.ctx.ops.poll_cq = fake_poll_cq;
	fake.ctx.ops.req_notify_cq = fake_req_notify_cq;
	fake.ctx.ops.post_recv = fake_post_recv;
	fake.ctx.ops.post_send = fake_post_send;
	fake.pd.context = fake.send_cq.context = fake.recv_cq.context = &fake.ctx;
	fake.mr.lkey = 0x11;
	fake.next_qpn = 0x100;
}

/* A queue pair the peer could announce (QP_INFO, REBUILD): its buffers as the test connection's peer has them. */
static inline struct rsec_msg_qp_info fake_peer_qp(uint32_t qpn)
{
	return (struct rsec_msg_qp_info){ .qpn = qpn, .psn = 7, .mtu = IBV_MTU_1024, .link = RSEC_WIRE_LINK_ETHERNET,
					  .recv_slots = FAKE_SLOTS, .slot_size = FAKE_SLOT_SIZE, .max_msg = 65536 };
}

struct fake_conn {
	struct test_tls_pair tls; /* client: the peer's end, written and read by the tests; server: c's */
	struct rsec_ctx ctx;
	struct rsec_dev dev;
	struct rsec_conn *c;  /* the server's side, established, its data path up */
	struct rsec_seal peer; /* the client's data-path keys of epoch 0 */
};

static inline uint8_t *fake_ring(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(p != MAP_FAILED);
	return p;
}

/* What rsec_conn_data_setup and rsec_data_start leave behind, on the stand-ins. */
static inline void fake_data_path(struct fake_conn *f, struct rsec_conn *c)
{
	c->dev = c->path.qp.dev = &f->dev;
	rsec_conn_configure_path(c); /* as rsec_conn_data_setup does */
	c->path.qp.pd = &fake.pd;
	c->path.qp.send_cq = &fake.send_cq;
	c->path.qp.recv_cq = &fake.recv_cq;
	c->path.qp.send_wr = 64;
	c->path.qp.recv_wr = FAKE_SLOTS;
	struct ibv_qp_init_attr ia = { .send_cq = c->path.qp.send_cq, .recv_cq = c->path.qp.recv_cq, .qp_type = IBV_QPT_RC };
	c->path.qp.qp = ibv_create_qp(&fake.pd, &ia);
	assert_non_null(c->path.qp.qp);
	c->path.qp.qp->state = IBV_QPS_RTS;
	c->path.have_qp = true;
	c->path.recv_slots = FAKE_SLOTS;
	c->path.recv_ring = fake_ring((size_t)FAKE_SLOTS * FAKE_SLOT_SIZE);
	c->path.recv_mr = &fake.mr;
	c->path.peer_slots = FAKE_SLOTS;
	c->path.peer_slot_size = FAKE_SLOT_SIZE;
	c->path.peer_max_msg = 65536;
	c->path.frame_size = FAKE_SLOT_SIZE;
	c->path.send_slots = FAKE_SLOTS;
	assert_int_equal(rsec_sendq_init(&c->path.sendq, c->path.send_slots), 0);
	c->path.send_ring = fake_ring((size_t)FAKE_SLOTS * FAKE_SLOT_SIZE);
	c->path.send_mr = &fake.mr;
	c->path.credits = c->path.peer_slots;
	c->path.credits_due = FAKE_SLOTS / 2;
	struct rsec_msg_qp_info q = fake_peer_qp(0x77);
	assert_int_equal(rsec_conn_peer_qp(&q, &c->path.remote), 0);
	assert_int_equal(rsec_seal_from_tls(&c->path.seal, c->path.chan->ssl, c->is_server, c->aead, c->lane, 0), 0);
	c->path.have_seal = true;
	assert_int_equal(rsec_rekey_begin(c), 0); /* as set-up does */
}

/* c's completion channel becomes a non-blocking pipe (fake.chan); fake_event writes one event into it. */
static inline void fake_channel(struct rsec_conn *c)
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	assert_int_equal(fcntl(p[0], F_SETFL, O_NONBLOCK), 0);
	fake.chan.fd = p[0];
	fake.chan_in = p[1];
	c->path.qp.chan = &fake.chan;
}

static inline void fake_event(void)
{
	assert_int_equal(write(fake.chan_in, "e", 1), 1);
}

/* Whether the completion channel still holds an event. */
static inline bool fake_event_pending(void)
{
	struct pollfd p = { .fd = fake.chan.fd, .events = POLLIN };
	return poll(&p, 1, 0) == 1;
}

/* The server's side of a session that offered rebuilds (and resumes), rebuilds_per_min of them. */
static inline void fake_conn_setup(struct fake_conn *f, const uint8_t *psk, size_t psk_len, uint32_t rebuilds_per_min)
{
	fake_reset();
	test_tls_pair(&f->tls, psk, psk_len);
	f->ctx = (struct rsec_ctx){ .is_server = true, .handshake_timeout_ms = 10000, .rebuilds_per_min = rebuilds_per_min,
				    .resume_grace_ms = 8000, .aead = RSEC_AEAD_AES256GCM, .recv_slots = FAKE_SLOTS,
				    .slot_size = FAKE_SLOT_SIZE, .max_msg = 65536, .poll_mode = RSEC_POLL_BUSY };
	assert_int_equal(pthread_mutex_init(&f->ctx.sessions_lock, NULL), 0);
	assert_int_equal(pthread_mutex_init(&f->ctx.authz_lock, NULL), 0);
	f->dev = (struct rsec_dev){ .port = 1, .link_layer = IBV_LINK_LAYER_ETHERNET, .active_mtu = IBV_MTU_1024,
				    .max_qp_wr = 1024, .max_sge = 1, .max_rd_atom = 1 };
	struct rsec_conn *c = rsec_conn_alloc(&f->ctx, f->tls.fds[1]);
	assert_non_null(c);
	c->path.chan->ssl = f->tls.server;
	c->path.chan->sock = f->tls.fds[1];
	c->path.phase = PHASE_ESTABLISHED;
	c->was_established = true;
	c->aead = RSEC_AEAD_AES256GCM;
	c->peer_rebuilds = true;
	snprintf(c->peer, sizeof(c->peer), "%s", "psk:node-a");
	fake_data_path(f, c);
	f->c = c;
	assert_int_equal(rsec_seal_from_tls(&f->peer, f->tls.client, false, c->aead, 0, 0), 0);
}

/* Free c made on stand-ins: nothing of them goes to libibverbs. */
static inline void fake_conn_free(struct rsec_conn *c)
{
	if (!c)
		return;
	c->dev = c->path.qp.dev = NULL;
	c->path.qp.pd = NULL;
	c->path.qp.send_cq = c->path.qp.recv_cq = NULL;
	if (c->path.qp.chan == &fake.chan) { /* the pipe is ours, not libibverbs' */
		c->path.qp.chan = NULL;
		close(fake.chan.fd);
		close(fake.chan_in);
	}
	rsec_conn_free(c);
}

static inline void fake_conn_teardown(struct fake_conn *f)
{
	fake_conn_free(f->c);
	rsec_seal_free(&f->peer);
	test_tls_pair_free(&f->tls);
	pthread_mutex_destroy(&f->ctx.sessions_lock);
	rsec_authz_set_free(&f->ctx.allow);
	pthread_mutex_destroy(&f->ctx.authz_lock);
	assert_int_equal(fake.qps_live, 0); /* every QP the library made (throwaways too) was destroyed */
}

/* The receive CQ reports wc next. */
static inline void fake_complete(const struct ibv_wc *wc)
{
	assert_true(fake.recv_wc_n < FAKE_WC_MAX);
	fake.recv_wc[fake.recv_wc_n++] = *wc;
}

/* A plain RECV of n bytes into slot, as the device reports a SEND of the peer's. */
static inline struct ibv_wc fake_recv_wc(const struct rsec_conn *c, uint32_t slot, uint32_t n)
{
	return (struct ibv_wc){ .wr_id = RSEC_WR_ID(WR_RECV, slot), .status = IBV_WC_SUCCESS, .opcode = IBV_WC_RECV,
				.byte_len = n, .qp_num = c->path.qp.qp->qp_num };
}

/* The peer seals a frame (flags, credits it returns, len bytes of pt) into our slot; its length. */
static inline uint32_t peer_seals(struct fake_conn *f, struct rsec_seal_dir *tx, uint32_t slot, uint8_t flags,
			   uint16_t credits, const void *pt, uint32_t len)
{
	size_t n = 0;
	uint8_t *dst = f->c->path.recv_ring + (size_t)slot * FAKE_SLOT_SIZE;
	assert_int_equal(rsec_seal_frame(tx, credits, flags, pt, len, dst, FAKE_SLOT_SIZE, &n), 0);
	return (uint32_t)n;
}

/* The peer sends one whole message of len bytes into slot: its frame completes on our receive CQ. */
static inline void peer_sends(struct fake_conn *f, struct rsec_seal_dir *tx, uint32_t slot, const void *pt, uint32_t len)
{
	uint32_t n = peer_seals(f, tx, slot, RSEC_SEAL_FLAG_FIRST | RSEC_SEAL_FLAG_LAST, 0, pt, len);
	struct ibv_wc wc = fake_recv_wc(f->c, slot, n);
	fake_complete(&wc);
}

/* The next control frame the peer receives, of type want. */
static inline void peer_gets(struct fake_conn *f, uint8_t want, struct rsec_msg *m)
{
	assert_true(test_read_frame(f->tls.client, m, true));
	assert_int_equal(m->type, want);
}

/* The peer sends m over TLS. */
static inline void peer_says(SSL *ssl, const struct rsec_msg *m)
{
	uint8_t frame[RSEC_WIRE_MAX_FRAME];
	size_t len = 0, done = 0;
	assert_int_equal(rsec_wire_encode(m, frame, sizeof(frame), &len), 0);
	assert_int_equal(rsec_tls_write_some(ssl, frame, len, &done), 0);
	assert_int_equal(done, len);
}

#endif
