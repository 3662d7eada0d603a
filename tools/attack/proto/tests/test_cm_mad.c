/* SPDX-License-Identifier: MIT */
/*
 * The CM MAD decoder, the connection learner and the DREQ builder against
 * rping's REQ, REP and DREQ captured on the fabric: a DREQ built from what
 * was learned from the REQ and REP must equal, byte for byte, the one the
 * kernel sent when rping -c ended.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "proto/cm_mad.h"
#include "cm_vectors.h"
#include "proto/roce_packet.h"

enum { HOST1 = 0x0a4d0001, HOST2 = 0x0a4d0002, HOST3 = 0x0a4d0003 };
enum { CLIENT_ID = 0xe85b5bc4u, SERVER_ID = 0xeb5b5bc4u };
#define RPING_TID 0x00000004c45b5be8ull

static void mad_of(const uint8_t *pkt, size_t len, struct roce_pkt *p)
{
	assert_int_equal(roce_pkt_parse(pkt, len, p), 0);
	assert_true(p->icrc_ok);
	assert_int_equal(p->payload_len, CM_MAD_LEN);
}

static void msg_of(const uint8_t *pkt, size_t len, struct cm_msg *m)
{
	struct roce_pkt p;

	mad_of(pkt, len, &p);
	assert_int_equal(cm_mad_parse(p.payload, p.payload_len, m), 0);
}

/* What every captured message carries: its kind, both comm IDs, QPN 0x11 (both sides had it). */
static void msg_is(const uint8_t *pkt, size_t len, struct cm_msg *m, uint16_t attr, uint32_t local,
		   uint32_t remote)
{
	msg_of(pkt, len, m);
	assert_int_equal(m->attr_id, attr);
	assert_int_equal(m->local_comm_id, local);
	assert_int_equal(m->remote_comm_id, remote);
	assert_int_equal(m->qpn, 0x11);
}

static void parse_captured_messages(void **state)
{
	struct cm_msg m;

	(void)state;
	msg_is(cap_req, sizeof(cap_req), &m, CM_ATTR_REQ, CLIENT_ID, 0);
	assert_int_equal(m.tid, RPING_TID);
	assert_int_equal(m.start_psn, 0x286bab);

	msg_is(cap_rep, sizeof(cap_rep), &m, CM_ATTR_REP, SERVER_ID, CLIENT_ID);
	assert_int_equal(m.tid, RPING_TID);
	assert_int_equal(m.start_psn, 0xcb7bf1);

	msg_is(cap_dreq, sizeof(cap_dreq), &m, CM_ATTR_DREQ, CLIENT_ID, SERVER_ID);
	assert_string_equal(cm_attr_name(m.attr_id), "DREQ");
}

static void parse_rejects_other_mads(void **state)
{
	struct roce_pkt p;
	struct cm_msg m;
	uint8_t mad[CM_MAD_LEN];

	(void)state;
	mad_of(cap_dreq, sizeof(cap_dreq), &p);
	for (size_t n = 0; n < CM_MAD_LEN; n++)
		assert_int_equal(cm_mad_parse(p.payload, n, &m), RSEC_E_PROTO);
	static const struct {
		size_t off;
		uint8_t val;
	} bad[] = {
		{ 0, 2 },     /* base version */
		{ 1, 0x01 },  /* SMP class */
		{ 2, 1 },     /* class version */
		{ 3, 0x81 },  /* a GetResp, not a Send */
		{ 17, 0x17 }, /* an attribute CM does not have */
		{ 35, 0x01 }, /* DREQ: reserved byte after the remote QPN */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memcpy(mad, p.payload, sizeof(mad));
		mad[bad[i].off] = bad[i].val;
		assert_int_equal(cm_mad_parse(mad, sizeof(mad), &m), RSEC_E_PROTO);
	}
	assert_int_equal(cm_mad_parse(NULL, CM_MAD_LEN, &m), RSEC_E_PROTO);
	assert_null(cm_attr_name(0x0017));
}

/* The whole packet of a forged DREQ, with the capture's IP ID, port and PSN. */
static void build_like_capture(const struct cm_dreq *d, uint8_t *out, size_t cap, size_t *n)
{
	static uint8_t mad[CM_MAD_LEN];
	struct roce_pkt p = { .src_ip = HOST2, .dst_ip = HOST1, .ttl = 64, .ip_id = 0xf877,
			      .frag_off = 0x4000, .udp_sport = 0xd872, .opcode = ROCE_UD_SEND_ONLY,
			      .pkey = ROCE_DEFAULT_PKEY, .dest_qp = ROCE_GSI_QPN, .ack_req = true, .psn = 2,
			      .deth_qkey = ROCE_GSI_QKEY, .deth_src_qp = ROCE_GSI_QPN,
			      .payload = mad, .payload_len = sizeof(mad) };

	assert_int_equal(cm_dreq_build(d, mad), 0);
	assert_int_equal(roce_pkt_build(&p, out, cap, n), 0);
}

static void learn_then_forge_equals_kernel_dreq(void **state)
{
	const struct cm_conn *done = NULL;
	struct cm_learn l = { 0 };
	struct cm_msg req, rep;
	struct cm_dreq d;
	uint32_t peer = 0;
	uint8_t out[ROCE_MAX_PACKET];
	size_t n = 0;

	(void)state;
	msg_of(cap_req, sizeof(cap_req), &req);
	msg_of(cap_rep, sizeof(cap_rep), &rep);
	cm_learn_msg(&l, HOST2, HOST1, &req, &done);
	assert_null(done);
	cm_learn_msg(&l, HOST1, HOST2, &rep, &done);
	assert_non_null(done);
	assert_int_equal(done->active_ip, HOST2);
	assert_int_equal(done->passive_ip, HOST1);

	/* Against the server: exactly what the client's kernel sent. */
	assert_int_equal(cm_conn_dreq(done, HOST1, &d, &peer), 0);
	assert_int_equal(peer, HOST2);
	assert_int_equal(d.tid, RPING_TID);
	build_like_capture(&d, out, sizeof(out), &n);
	assert_int_equal(n, sizeof(cap_dreq));
	assert_memory_equal(out, cap_dreq, n);

	/* Against the client: the server's ID as the sender's, the client's QPN. */
	assert_int_equal(cm_conn_dreq(done, HOST2, &d, &peer), 0);
	assert_int_equal(peer, HOST1);
	assert_int_equal(d.local_comm_id, SERVER_ID);
	assert_int_equal(d.remote_comm_id, CLIENT_ID);
	assert_int_equal(d.remote_qpn, 0x11);
	assert_int_equal(d.tid, 0);

	assert_int_equal(cm_conn_dreq(done, HOST3, &d, &peer), RSEC_E_INVAL);
}

static void learn_ignores_strays(void **state)
{
	const struct cm_conn *done = (const struct cm_conn *)&done;
	struct cm_learn l = { 0 };
	struct cm_msg req, rep, dreq;
	struct cm_dreq d;
	uint32_t peer;

	(void)state;
	msg_of(cap_req, sizeof(cap_req), &req);
	msg_of(cap_rep, sizeof(cap_rep), &rep);
	msg_of(cap_dreq, sizeof(cap_dreq), &dreq);
	/* A REP with no REQ before it. */
	cm_learn_msg(&l, HOST1, HOST2, &rep, &done);
	assert_null(done);
	cm_learn_msg(&l, HOST2, HOST1, &req, &done);
	cm_learn_msg(&l, HOST2, HOST1, &req, &done); /* retransmitted */
	assert_int_equal(l.n, 1);
	assert_false(l.conns[0].have_rep);
	assert_int_equal(cm_conn_dreq(&l.conns[0], HOST1, &d, &peer), RSEC_E_INVAL);
	/* A REP from a third host, and one going to the wrong host. */
	cm_learn_msg(&l, HOST3, HOST2, &rep, &done);
	assert_null(done);
	cm_learn_msg(&l, HOST1, HOST3, &rep, &done);
	assert_null(done);
	cm_learn_msg(&l, HOST2, HOST1, &dreq, &done);
	assert_null(done);
	assert_false(l.conns[0].have_rep);
}

static void learn_forgets_oldest_when_full(void **state)
{
	const struct cm_conn *done;
	struct cm_learn l = { 0 };
	struct cm_msg req, rep;

	(void)state;
	msg_of(cap_req, sizeof(cap_req), &req);
	msg_of(cap_rep, sizeof(cap_rep), &rep);
	for (uint32_t i = 0; i <= CM_LEARN_MAX; i++) {
		req.local_comm_id = CLIENT_ID + i;
		cm_learn_msg(&l, HOST2, HOST1, &req, &done);
	}
	assert_int_equal(l.n, CM_LEARN_MAX);
	/* The first REQ was overwritten: its REP finds nothing. */
	cm_learn_msg(&l, HOST1, HOST2, &rep, &done);
	assert_null(done);
	rep.remote_comm_id = CLIENT_ID + CM_LEARN_MAX;
	cm_learn_msg(&l, HOST1, HOST2, &rep, &done);
	assert_non_null(done);
	assert_int_equal(done->active_comm_id, CLIENT_ID + CM_LEARN_MAX);
}

static void dreq_build_checks_qpn(void **state)
{
	struct cm_dreq d = { .remote_qpn = 0x1000000 };
	uint8_t mad[CM_MAD_LEN];

	(void)state;
	assert_int_equal(cm_dreq_build(&d, mad), RSEC_E_INVAL);
	d.remote_qpn = 0xabcdef;
	d.tid = 0x0102030405060708ull;
	assert_int_equal(cm_dreq_build(&d, mad), 0);
	assert_int_equal(mad[8], 0x01);
	assert_int_equal(mad[15], 0x08);
	assert_int_equal(mad[32], 0xab);
	assert_int_equal(mad[34], 0xef);
	assert_int_equal(mad[35], 0);
	for (size_t i = 36; i < CM_MAD_LEN; i++)
		assert_int_equal(mad[i], 0); /* no private data */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(parse_captured_messages),
		cmocka_unit_test(parse_rejects_other_mads),
		cmocka_unit_test(learn_then_forge_equals_kernel_dreq),
		cmocka_unit_test(learn_ignores_strays),
		cmocka_unit_test(learn_forgets_oldest_when_full),
		cmocka_unit_test(dreq_build_checks_qpn),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
