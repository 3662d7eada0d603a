/* SPDX-License-Identifier: MIT */
/*
 * The RoCEv2 builder and parser against packets captured from real rxe on the
 * fabric (ibv_rc_pingpong -s 64 and ib_write_bw -s 64, host 2 -> host 1, and
 * host 1's ACK): the ICRC must match what rxe computed, and rebuilding from
 * the decoded fields must reproduce every byte.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "proto/roce_packet.h"
#include "cm_vectors.h"

/* RC SEND Only, 64 bytes of '{', QPN 0x11, PSN 0xcd1d36, AckReq. */
static const uint8_t cap_send_only[] = {
	0x45, 0x00, 0x00, 0x6c, 0x54, 0xae, 0x40, 0x00, 0x40, 0x11, 0xd1, 0x36,
	0x0a, 0x4d, 0x00, 0x02, 0x0a, 0x4d, 0x00, 0x01, 0xc1, 0x21, 0x12, 0xb7,
	0x00, 0x58, 0x00, 0x00, 0x04, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x11,
	0x80, 0xcd, 0x1d, 0x36, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0xad, 0x95, 0xbe, 0xd0,
};

/* RC RDMA WRITE Only, 64 bytes, QPN 0x12, PSN 0x1edbac, VA 0x55bfaf599000, rkey 0x3d8. */
static const uint8_t cap_write_only[] = {
	0x45, 0x00, 0x00, 0x7c, 0x56, 0x8c, 0x40, 0x00, 0x40, 0x11, 0xcf, 0x48,
	0x0a, 0x4d, 0x00, 0x02, 0x0a, 0x4d, 0x00, 0x01, 0xc1, 0x44, 0x12, 0xb7,
	0x00, 0x68, 0x00, 0x00, 0x0a, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x12,
	0x80, 0x1e, 0xdb, 0xac, 0x00, 0x00, 0x55, 0xbf, 0xaf, 0x59, 0x90, 0x00,
	0x00, 0x00, 0x03, 0xd8, 0x00, 0x00, 0x00, 0x40, 0x8d, 0x3f, 0xe2, 0xbb,
	0xac, 0xce, 0xc1, 0xf3, 0x74, 0x9d, 0x1c, 0xc4, 0x6f, 0xc2, 0xb3, 0x65,
	0x18, 0x96, 0x71, 0x19, 0xbc, 0x14, 0x27, 0xfa, 0x46, 0x0d, 0x35, 0x16,
	0x57, 0x9b, 0x22, 0xe4, 0xda, 0x04, 0x9f, 0x86, 0xd2, 0x61, 0x79, 0x47,
	0xfe, 0x96, 0x0b, 0x6d, 0x58, 0xbe, 0xd2, 0x70, 0x55, 0x44, 0x89, 0x11,
	0x58, 0xb0, 0x0b, 0x9e, 0xbe, 0x41, 0xb4, 0x15, 0xdc, 0xd7, 0xf9, 0xb6,
	0x54, 0x94, 0x6d, 0x2e,
};

/* RC Acknowledge from host 1 for the SEND above: AETH syndrome 0x1f, MSN 1. */
static const uint8_t cap_ack[] = {
	0x45, 0x00, 0x00, 0x30, 0xdc, 0x8a, 0x40, 0x00, 0x40, 0x11, 0x49, 0x96,
	0x0a, 0x4d, 0x00, 0x01, 0x0a, 0x4d, 0x00, 0x02, 0xc1, 0x21, 0x12, 0xb7,
	0x00, 0x1c, 0x00, 0x00, 0x11, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x11,
	0x00, 0xcd, 0x1d, 0x36, 0x1f, 0x00, 0x00, 0x01, 0xe8, 0xef, 0x27, 0x05,
};

static uint32_t stored_icrc(const uint8_t *pkt, size_t len)
{
	const uint8_t *p = pkt + len - 4;
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void check_vector(const uint8_t *vec, size_t len)
{
	struct roce_pkt p;
	uint8_t out[ROCE_MAX_PACKET];
	uint32_t icrc;
	size_t n = 0;

	assert_int_equal(roce_icrc(vec, len - 4, &icrc), 0);
	assert_int_equal(icrc, stored_icrc(vec, len));

	assert_int_equal(roce_pkt_parse(vec, len, &p), 0);
	assert_true(p.icrc_ok);
	assert_int_equal(roce_pkt_build(&p, out, sizeof(out), &n), 0);
	assert_int_equal(n, len);
	assert_memory_equal(out, vec, len);
}

/*
 * Every capture: RC SEND, WRITE and ACK, and UD SEND Only + DETH (CM MADs to
 * QP1), whose ICRC masks the same fields as for RC.
 */
static void icrc_matches_captures(void **state)
{
	static const struct {
		const uint8_t *pkt;
		size_t len;
	} caps[] = {
		{ cap_send_only, sizeof(cap_send_only) },
		{ cap_write_only, sizeof(cap_write_only) },
		{ cap_ack, sizeof(cap_ack) },
		{ cap_req, sizeof(cap_req) },
		{ cap_dreq, sizeof(cap_dreq) },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++)
		check_vector(caps[i].pkt, caps[i].len);
}

static void parse_decodes_ud_deth(void **state)
{
	uint8_t pkt[sizeof(cap_dreq)];
	struct roce_pkt p;

	(void)state;
	assert_int_equal(roce_pkt_parse(cap_dreq, sizeof(cap_dreq), &p), 0);
	assert_int_equal(p.opcode, ROCE_UD_SEND_ONLY);
	assert_int_equal(p.dest_qp, ROCE_GSI_QPN);
	assert_int_equal(p.pkey, 0xffff);
	assert_int_equal(p.psn, 2);
	assert_int_equal(p.deth_qkey, ROCE_GSI_QKEY);
	assert_int_equal(p.deth_src_qp, ROCE_GSI_QPN);
	assert_int_equal(p.payload_len, 256);
	assert_int_equal(p.payload[0], 0x01); /* MAD base version */
	assert_int_equal(p.payload[1], 0x07); /* CM class */
	/* The DETH's reserved byte (packet offset 44) must be zero. */
	memcpy(pkt, cap_dreq, sizeof(pkt));
	pkt[44] = 0x01;
	assert_int_equal(roce_pkt_parse(pkt, sizeof(pkt), &p), RSEC_E_PROTO);
	/* Truncated anywhere: malformed, never a read past the end. */
	for (size_t n = 0; n < sizeof(cap_dreq); n++)
		assert_int_equal(roce_pkt_parse(cap_dreq, n, &p), RSEC_E_PROTO);
}

static void build_ud_checks_src_qp(void **state)
{
	static const uint8_t msg[4] = { 1, 2, 3, 4 };
	struct roce_pkt p = { .opcode = ROCE_UD_SEND_ONLY_IMM, .pkey = 0xffff, .ttl = 64, .ip_id = 1,
			      .dest_qp = 1, .deth_qkey = ROCE_GSI_QKEY, .deth_src_qp = 0x1000000,
			      .imm = 0xabcd0123, .payload = msg, .payload_len = sizeof(msg) };
	struct roce_pkt q;
	uint8_t out[128];
	size_t n;

	(void)state;
	assert_int_equal(roce_pkt_build(&p, out, sizeof(out), &n), RSEC_E_INVAL);
	p.deth_src_qp = 0x123456;
	assert_int_equal(roce_pkt_build(&p, out, sizeof(out), &n), 0);
	assert_int_equal(n, 20 + 8 + 12 + 8 + 4 + 4 + 4);
	/* DETH then ImmDt (IBA 9.2). */
	assert_int_equal(out[40], 0x80);
	assert_int_equal(out[45], 0x12);
	assert_int_equal(out[48], 0xab);
	assert_int_equal(roce_pkt_parse(out, n, &q), 0);
	assert_true(q.icrc_ok);
	assert_int_equal(q.deth_src_qp, 0x123456);
	assert_int_equal(q.imm, 0xabcd0123);
	assert_memory_equal(q.payload, msg, sizeof(msg));
}

static void parse_decodes_fields(void **state)
{
	struct roce_pkt p;

	(void)state;
	assert_int_equal(roce_pkt_parse(cap_write_only, sizeof(cap_write_only), &p), 0);
	assert_int_equal(p.src_ip, 0x0a4d0002);
	assert_int_equal(p.dst_ip, 0x0a4d0001);
	assert_int_equal(p.opcode, ROCE_RC_WRITE_ONLY);
	assert_int_equal(p.dest_qp, 0x12);
	assert_int_equal(p.psn, 0x1edbac);
	assert_true(p.ack_req);
	assert_int_equal(p.pkey, 0xffff);
	assert_int_equal(p.reth_va, 0x55bfaf599000ull);
	assert_int_equal(p.reth_rkey, 0x3d8);
	assert_int_equal(p.reth_len, 64);
	assert_int_equal(p.payload_len, 64);

	assert_int_equal(roce_pkt_parse(cap_ack, sizeof(cap_ack), &p), 0);
	assert_int_equal(p.opcode, ROCE_RC_ACK);
	assert_int_equal(p.aeth, 0x1f000001);
	assert_int_equal(p.payload_len, 0);
}

/* The fields the ICRC ignores may change; everything else must break it. */
static void icrc_masks_only_variant_fields(void **state)
{
	uint8_t pkt[sizeof(cap_send_only)];
	uint32_t ref = stored_icrc(cap_send_only, sizeof(cap_send_only)), icrc;
	static const size_t variant[] = { 1, 8, 10, 11, 26, 27, 32 };

	(void)state;
	for (size_t i = 0; i < sizeof(pkt) - 4; i++) {
		int is_variant = 0;
		for (size_t k = 0; k < sizeof(variant) / sizeof(variant[0]); k++)
			is_variant |= variant[k] == i;
		memcpy(pkt, cap_send_only, sizeof(pkt));
		pkt[i] ^= 0x01;
		assert_int_equal(roce_icrc(pkt, sizeof(pkt) - 4, &icrc), 0);
		if (is_variant)
			assert_int_equal(icrc, ref);
		else
			assert_int_not_equal(icrc, ref);
	}
}

static void build_pads_payload(void **state)
{
	static const uint8_t msg[5] = { 'h', 'e', 'l', 'l', 'o' };
	struct roce_pkt p = { .src_ip = 0x0a4d0002, .dst_ip = 0x0a4d0001, .ttl = 64, .ip_id = 1,
			      .udp_sport = 0xc000, .opcode = ROCE_RC_SEND_ONLY, .pkey = 0xffff,
			      .dest_qp = 0x11, .psn = 0, .ack_req = true, .payload = msg,
			      .payload_len = sizeof(msg) };
	struct roce_pkt q;
	uint8_t out[128];
	size_t n;

	(void)state;
	assert_int_equal(roce_pkt_build(&p, out, sizeof(out), &n), 0);
	assert_int_equal(n, 20 + 8 + 12 + 5 + 3 + 4);
	assert_int_equal((out[29] >> 4) & 3, 3);
	assert_int_equal(roce_pkt_parse(out, n, &q), 0);
	assert_true(q.icrc_ok);
	assert_int_equal(q.pad, 3);
	assert_int_equal(q.payload_len, 5);
	assert_memory_equal(q.payload, msg, 5);
	out[n - 1] ^= 0x80;
	assert_int_equal(roce_pkt_parse(out, n, &q), 0);
	assert_false(q.icrc_ok);
}

static void build_rejects_bad_input(void **state)
{
	static uint8_t big[ROCE_MAX_PAYLOAD + 1];
	struct roce_pkt p = { .opcode = ROCE_RC_SEND_ONLY, .pkey = 0xffff, .ttl = 64, .ip_id = 1 };
	uint8_t out[ROCE_MAX_PACKET + 8];
	size_t n;

	(void)state;
	p.dest_qp = 0x1000000;
	assert_int_equal(roce_pkt_build(&p, out, sizeof(out), &n), RSEC_E_INVAL);
	p.dest_qp = 0x11;
	p.psn = 0x1000000;
	assert_int_equal(roce_pkt_build(&p, out, sizeof(out), &n), RSEC_E_INVAL);
	p.psn = 0;
	p.opcode = 0x15; /* reserved */
	assert_int_equal(roce_pkt_build(&p, out, sizeof(out), &n), RSEC_E_INVAL);
	p.opcode = ROCE_RC_CMP_SWAP; /* atomics not modelled */
	assert_int_equal(roce_pkt_build(&p, out, sizeof(out), &n), RSEC_E_INVAL);
	p.opcode = ROCE_RC_ACK; /* no payload allowed */
	p.payload = big;
	p.payload_len = 4;
	assert_int_equal(roce_pkt_build(&p, out, sizeof(out), &n), RSEC_E_INVAL);
	p.opcode = ROCE_RC_SEND_ONLY;
	p.payload_len = sizeof(big);
	assert_int_equal(roce_pkt_build(&p, out, sizeof(out), &n), RSEC_E_RANGE);
	p.payload_len = 64;
	assert_int_equal(roce_pkt_build(&p, out, 100, &n), RSEC_E_RANGE);
	p.payload = NULL;
	assert_int_equal(roce_pkt_build(&p, out, sizeof(out), &n), RSEC_E_INVAL);
	assert_int_equal(roce_pkt_build(NULL, out, sizeof(out), &n), RSEC_E_INVAL);
}

static void parse_rejects_malformed(void **state)
{
	uint8_t pkt[sizeof(cap_write_only)];
	struct roce_pkt p;

	(void)state;
	for (size_t n = 0; n < sizeof(cap_write_only); n++)
		assert_int_equal(roce_pkt_parse(cap_write_only, n, &p), RSEC_E_PROTO);
	memcpy(pkt, cap_write_only, sizeof(pkt));
	pkt[0] = 0x46; /* IP options */
	assert_int_equal(roce_pkt_parse(pkt, sizeof(pkt), &p), RSEC_E_PROTO);
	memcpy(pkt, cap_write_only, sizeof(pkt));
	pkt[23] = 0xb8; /* UDP port 4792 */
	assert_int_equal(roce_pkt_parse(pkt, sizeof(pkt), &p), RSEC_E_PROTO);
	memcpy(pkt, cap_write_only, sizeof(pkt));
	pkt[25] ^= 1; /* UDP length */
	assert_int_equal(roce_pkt_parse(pkt, sizeof(pkt), &p), RSEC_E_PROTO);
	memcpy(pkt, cap_write_only, sizeof(pkt));
	pkt[28] = 0x15; /* reserved opcode */
	assert_int_equal(roce_pkt_parse(pkt, sizeof(pkt), &p), RSEC_E_PROTO);
	memcpy(pkt, cap_write_only, sizeof(pkt));
	pkt[6] = 0x20; /* more fragments */
	assert_int_equal(roce_pkt_parse(pkt, sizeof(pkt), &p), RSEC_E_PROTO);
	memcpy(pkt, cap_ack, sizeof(cap_ack));
	pkt[29] = 0x30; /* pad 3 but no payload room */
	assert_int_equal(roce_pkt_parse(pkt, sizeof(cap_ack), &p), RSEC_E_PROTO);
	assert_int_equal(roce_pkt_parse(NULL, 64, &p), RSEC_E_PROTO);
}

static void crc32_known_answer(void **state)
{
	static const uint8_t digits[] = "123456789";
	(void)state;
	/* The standard CRC-32 check value. */
	assert_int_equal(~roce_crc32_update(0xffffffffu, digits, 9), 0xcbf43926u);
	/* The rxe seed: CRC state after eight 0xFF bytes. */
	static const uint8_t ones[8] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	assert_int_equal(roce_crc32_update(0xffffffffu, ones, 8), 0xdebb20e3u);
}

/* A RoCEv2 CNP: BTH opcode 0x81 with BECN, 16 reserved bytes, ICRC; parses back. */
static void build_cnp(void **state)
{
	static const uint8_t reserved[ROCE_CNP_RESERVED_LEN];
	struct roce_pkt p = { .opcode = ROCE_CNP, .pkey = 0xffff, .ttl = 64, .ip_id = 1, .src_ip = 0x0a4d0002,
			      .dst_ip = 0x0a4d0001, .udp_sport = 49152, .bth_resv8a = ROCE_BTH_BECN,
			      .dest_qp = 0x12, .payload = reserved, .payload_len = sizeof(reserved) };
	struct roce_pkt q;
	uint8_t out[128];
	size_t n = 0;
	const char *name;

	(void)state;
	assert_int_equal(roce_opcode_info(ROCE_CNP, NULL, &name), 0);
	assert_string_equal(name, "CNP");
	assert_int_equal(roce_pkt_build(&p, out, sizeof(out), &n), 0);
	assert_int_equal(n, ROCE_IPV4_LEN + ROCE_UDP_LEN + ROCE_BTH_LEN + ROCE_CNP_RESERVED_LEN + ROCE_ICRC_LEN);
	assert_int_equal(out[28], 0x81);
	assert_int_equal(out[32], ROCE_BTH_BECN);
	assert_int_equal(roce_pkt_parse(out, n, &q), 0);
	assert_true(q.icrc_ok);
	assert_int_equal(q.opcode, ROCE_CNP);
	assert_int_equal(q.dest_qp, 0x12);
	assert_int_equal(q.payload_len, ROCE_CNP_RESERVED_LEN);
	/* Opcodes between UD and CNP stay unknown. */
	assert_int_equal(roce_opcode_info(0x80, NULL, NULL), RSEC_E_PROTO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(crc32_known_answer),
		cmocka_unit_test(icrc_matches_captures),
		cmocka_unit_test(parse_decodes_fields),
		cmocka_unit_test(icrc_masks_only_variant_fields),
		cmocka_unit_test(build_pads_payload),
		cmocka_unit_test(build_rejects_bad_input),
		cmocka_unit_test(parse_rejects_malformed),
		cmocka_unit_test(parse_decodes_ud_deth),
		cmocka_unit_test(build_ud_checks_src_qp),
		cmocka_unit_test(build_cnp),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
