/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "wire.h"

/* Body offsets of the fields the negative tests patch (docs/protocol.md). */
#define OFF_HELLO_MIN 0
#define OFF_HELLO_MAX 2
#define OFF_HELLO_FEATURES 4
#define OFF_HELLO_AEAD 8
#define OFF_QP_QPN 0
#define OFF_QP_PSN 4
#define OFF_QP_MTU 26
#define OFF_QP_LINK 27
#define OFF_QP_SLOTS 28
#define OFF_QP_SLOT_SIZE 32
#define OFF_QP_MAX_MSG 36
#define OFF_GRANT_ADDR 8
#define OFF_GRANT_LEN 20
#define OFF_GRANT_ACCESS 28
#define OFF_KA_REPLY 8
#define OFF_TEXT_CODE 0 /* DISCONNECT reason / ERROR code */
#define OFF_TEXT_LEN 4
#define OFF_TEXT 6
#define OFF_VERIFY_OFFSET 8
#define OFF_VERIFY_LEN 16
#define OFF_VERIFY_ALG 24
#define OFF_REBUILD_EPOCH 0
#define OFF_REBUILD_REASON 4
#define OFF_REBUILD_QP 13 /* QP_INFO's fields follow */

static const size_t body_len_of[RSEC_MSG_TYPE_MAX + 1] = {
	[RSEC_MSG_HELLO] = 9,      [RSEC_MSG_QP_INFO] = 40, [RSEC_MSG_READY] = 0,
	[RSEC_MSG_GRANT] = 44,     [RSEC_MSG_REVOKE] = 8,   [RSEC_MSG_KEEPALIVE] = 9,
	[RSEC_MSG_DISCONNECT] = 6, [RSEC_MSG_ERROR] = 6,    [RSEC_MSG_VERIFY] = 57,
	[RSEC_MSG_REBUILD] = 53, [RSEC_MSG_REBUILD_READY] = 4,
	[RSEC_MSG_SESSION] = 32,   [RSEC_MSG_RESUME] = 32,
	[RSEC_MSG_REKEY] = 40,     [RSEC_MSG_REKEY_REPLY] = 40, [RSEC_MSG_REKEY_DONE] = 8,
	[RSEC_MSG_PATH_CHECK] = 12,
};

static void fill_text(struct rsec_wire_text *t, size_t n)
{
	for (size_t i = 0; i < n; i++)
		t->s[i] = (char)(RSEC_WIRE_TEXT_MIN_CHAR + i % (RSEC_WIRE_TEXT_MAX_CHAR - RSEC_WIRE_TEXT_MIN_CHAR + 1));
	t->s[n] = '\0';
	t->len = (uint16_t)n;
}

/* QP_INFO's fields (also REBUILD's), all at their largest legal value (high) or smallest. */
static void sample_qp(struct rsec_msg_qp_info *q, int high)
{
	q->qpn = high ? RSEC_WIRE_QPN_MAX : 0;
	q->psn = high ? RSEC_WIRE_PSN_MAX : 0;
	q->lid = high ? UINT16_MAX : 0;
	memset(q->gid, high ? 0xff : 0, sizeof(q->gid));
	q->mtu = high ? RSEC_WIRE_MTU_MAX : RSEC_WIRE_MTU_MIN;
	q->link = high ? RSEC_WIRE_LINK_ETHERNET : RSEC_WIRE_LINK_IB;
	q->recv_slots = high ? RSEC_WIRE_RECV_SLOTS_MAX : RSEC_WIRE_RECV_SLOTS_MIN;
	q->slot_size = high ? RSEC_WIRE_SLOT_SIZE_MAX : RSEC_WIRE_SLOT_SIZE_MIN;
	q->max_msg = high ? RSEC_WIRE_MAX_MSG_MAX : RSEC_WIRE_MAX_MSG_MIN;
}

/* A valid message of type; high picks the largest legal value of every field, else the smallest. */
static struct rsec_msg sample(uint8_t type, int high)
{
	struct rsec_msg m;

	memset(&m, 0, sizeof(m));
	m.type = type;
	switch (type) {
	case RSEC_MSG_HELLO:
		m.u.hello.min_version = high ? UINT16_MAX : RSEC_WIRE_PROTO_MIN;
		m.u.hello.max_version = high ? UINT16_MAX : RSEC_WIRE_PROTO_MIN;
		m.u.hello.features = high ? UINT32_MAX : 0;
		m.u.hello.aead = high ? RSEC_WIRE_AEAD_CHACHA20_POLY1305 : RSEC_WIRE_AEAD_AES_256_GCM;
		break;
	case RSEC_MSG_QP_INFO:
		sample_qp(&m.u.qp_info, high);
		break;
	case RSEC_MSG_READY:
		break;
	case RSEC_MSG_GRANT:
		m.u.grant.grant_id = high ? UINT64_MAX : 0;
		/* The highest window that still ends at the top of the address space. */
		m.u.grant.addr = high ? UINT64_MAX - RSEC_WIRE_GRANT_LEN_MAX + 1 : 0;
		m.u.grant.rkey = high ? UINT32_MAX : 0;
		m.u.grant.len = high ? RSEC_WIRE_GRANT_LEN_MAX : RSEC_WIRE_GRANT_LEN_MIN;
		m.u.grant.access = high ? RSEC_WIRE_ACCESS_SEALED | RSEC_WIRE_ACCESS_WRITE : RSEC_WIRE_ACCESS_READ;
		m.u.grant.ttl_ms = high ? UINT32_MAX : 0;
		m.u.grant.tag = high ? UINT64_MAX : 0;
		/* RSEC_WIRE_FEATURE_GRANT_KEYS: the key id follows; without it the 44 bytes of old. */
		m.u.grant.has_key_id = high;
		m.u.grant.key_id = high ? UINT64_MAX : 0;
		break;
	case RSEC_MSG_REVOKE:
		m.u.revoke.grant_id = high ? UINT64_MAX : 0;
		break;
	case RSEC_MSG_KEEPALIVE:
		m.u.keepalive.nonce = high ? UINT64_MAX : 0;
		m.u.keepalive.is_reply = high ? 1 : 0;
		break;
	case RSEC_MSG_DISCONNECT:
		m.u.disconnect.reason = high ? RSEC_DISC_MAX : RSEC_DISC_NORMAL;
		fill_text(&m.u.disconnect.text, high ? RSEC_WIRE_MAX_TEXT : 0);
		break;
	case RSEC_MSG_ERROR:
		m.u.error.code = high ? RSEC_WIRE_ERROR_CODE_MAX : RSEC_WIRE_ERROR_CODE_MIN;
		fill_text(&m.u.error.text, high ? RSEC_WIRE_MAX_TEXT : 0);
		break;
	case RSEC_MSG_VERIFY:
		m.u.verify.grant_id = high ? UINT64_MAX : 0;
		m.u.verify.offset = high ? RSEC_WIRE_GRANT_LEN_MAX - 1 : 0;
		m.u.verify.len = RSEC_WIRE_GRANT_LEN_MIN;
		m.u.verify.mac_alg = RSEC_WIRE_MAC_HMAC_SHA256;
		memset(m.u.verify.mac, high ? 0xff : 0, sizeof(m.u.verify.mac));
		break;
	case RSEC_MSG_REBUILD:
		m.u.rebuild.epoch = high ? UINT32_MAX : RSEC_WIRE_EPOCH_MIN;
		m.u.rebuild.reason = high ? RSEC_WIRE_REBUILD_REASON_MAX : RSEC_WIRE_REBUILD_ANSWER;
		m.u.rebuild.opened = high ? UINT64_MAX : 0;
		sample_qp(&m.u.rebuild.qp, high);
		break;
	case RSEC_MSG_REBUILD_READY:
		m.u.rebuild_ready.epoch = high ? UINT32_MAX : RSEC_WIRE_EPOCH_MIN;
		break;
	case RSEC_MSG_SESSION:
	case RSEC_MSG_RESUME:
		memset(m.u.session.token, high ? 0xff : 0, sizeof(m.u.session.token));
		/* RSEC_WIRE_FEATURE_RESUME_EPOCH: the epoch follows; without it the 32 bytes of old. */
		m.u.session.has_epoch = high;
		m.u.session.epoch = high ? UINT32_MAX : 0;
		break;
	case RSEC_MSG_REKEY:
	case RSEC_MSG_REKEY_REPLY:
		memset(m.u.rekey.pub, high ? 0xff : 0, sizeof(m.u.rekey.pub));
		/* fall through */
	case RSEC_MSG_REKEY_DONE:
		m.u.rekey.epoch = high ? UINT32_MAX : 0;
		m.u.rekey.gen = high ? UINT32_MAX : RSEC_WIRE_REKEY_GEN_MIN;
		break;
	case RSEC_MSG_PATH_CHECK:
		m.u.path_check.epoch = high ? UINT32_MAX : 0;
		m.u.path_check.delivered = high ? UINT64_MAX : 0;
		break;
	default:
		fail();
	}
	return m;
}

static size_t encode_ok(const struct rsec_msg *m, uint8_t *out)
{
	size_t len = 0;

	assert_int_equal(rsec_wire_encode(m, out, RSEC_WIRE_MAX_FRAME, &len), 0);
	assert_true(len >= RSEC_WIRE_HDR_LEN && len <= RSEC_WIRE_MAX_FRAME);
	return len;
}

static void put_be(uint8_t *p, unsigned width, uint64_t v)
{
	for (unsigned i = 0; i < width; i++)
		p[i] = (uint8_t)(v >> (8 * (width - 1 - i)));
}

static void expect_proto(const uint8_t *frame, size_t len)
{
	/* Guard bytes after the message catch a decoder writing past it, even without ASan. */
	static struct {
		struct rsec_msg m;
		uint8_t guard[RSEC_WIRE_MAX_FRAME];
	} out;
	static const struct rsec_msg zero;

	memset(&out, 0xcc, sizeof(out));
	assert_int_equal(rsec_wire_decode(frame, len, &out.m), RSEC_E_PROTO);
	/* A rejected frame leaves nothing half-parsed behind. */
	assert_memory_equal(&out.m, &zero, sizeof(out.m));
	for (size_t i = 0; i < sizeof(out.guard); i++)
		assert_int_equal(out.guard[i], 0xcc);
}

static void round_trip_every_type(void **state)
{
	(void)state;
	uint8_t frame[RSEC_WIRE_MAX_FRAME], again[RSEC_WIRE_MAX_FRAME];

	for (uint8_t t = RSEC_MSG_TYPE_MIN; t <= RSEC_MSG_TYPE_MAX; t++) {
		if (t == RSEC_MSG_RESERVED)
			continue;
		for (int high = 0; high <= 1; high++) {
			struct rsec_msg m = sample(t, high), d;
			size_t len = encode_ok(&m, frame);
			size_t want = RSEC_WIRE_HDR_LEN + body_len_of[t];

			if (t == RSEC_MSG_DISCONNECT || t == RSEC_MSG_ERROR)
				want += high ? RSEC_WIRE_MAX_TEXT : 0;
			if (t == RSEC_MSG_SESSION || t == RSEC_MSG_RESUME)
				want += high ? 4 : 0;
			if (t == RSEC_MSG_GRANT)
				want += high ? 8 : 0;
			assert_int_equal(len, want);
			assert_int_equal(frame[0], RSEC_WIRE_VERSION);
			assert_int_equal(frame[1], t);
			assert_int_equal(frame[2] | frame[3], 0);

			uint8_t ht;
			uint32_t bl;
			assert_int_equal(rsec_wire_decode_header(frame, RSEC_WIRE_HDR_LEN, &ht, &bl), 0);
			assert_int_equal(ht, t);
			assert_int_equal(bl, len - RSEC_WIRE_HDR_LEN);

			assert_int_equal(rsec_wire_decode(frame, len, &d), 0);
			assert_memory_equal(&d, &m, sizeof(m));
			assert_int_equal(encode_ok(&d, again), len);
			assert_memory_equal(again, frame, len);
		}
	}
}

/* Pin the byte layout (big-endian, field order) against a hand-written frame. */
static void qp_info_known_answer(void **state)
{
	(void)state;
	static const uint8_t want[] = {
		0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x28,  /* v1, QP_INFO, reserved, body 40 */
		0x00, 0x12, 0x34, 0x56,                          /* qpn */
		0x00, 0xab, 0xcd, 0xef,                          /* psn */
		0xbe, 0xef,                                      /* lid */
		0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0a, 0x4d, 0x00, 0x01, /* gid */
		0x03,                                            /* mtu 1024 */
		0x02,                                            /* RoCE */
		0x00, 0x00, 0x00, 0x40,                          /* recv_slots 64 */
		0x00, 0x01, 0x00, 0x00,                          /* slot_size 65536 */
		0x01, 0x00, 0x00, 0x00,                          /* max_msg 16 MiB */
	};
	struct rsec_msg m;
	uint8_t out[RSEC_WIRE_MAX_FRAME];

	memset(&m, 0, sizeof(m));
	m.type = RSEC_MSG_QP_INFO;
	m.u.qp_info.qpn = 0x123456;
	m.u.qp_info.psn = 0xabcdef;
	m.u.qp_info.lid = 0xbeef;
	memcpy(m.u.qp_info.gid, want + 18, RSEC_WIRE_GID_LEN);
	m.u.qp_info.mtu = 3;
	m.u.qp_info.link = RSEC_WIRE_LINK_ETHERNET;
	m.u.qp_info.recv_slots = 64;
	m.u.qp_info.slot_size = 65536;
	m.u.qp_info.max_msg = 16u << 20;
	assert_int_equal(encode_ok(&m, out), sizeof(want));
	assert_memory_equal(out, want, sizeof(want));
}

static void disconnect_known_answer(void **state)
{
	(void)state;
	static const uint8_t want[] = {
		0x01, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x08,
		0x00, 0x00, 0x00, 0x03,  /* REFUSED */
		0x00, 0x02, 'n', 'o',
	};
	struct rsec_msg m;

	assert_int_equal(rsec_wire_decode(want, sizeof(want), &m), 0);
	assert_int_equal(m.type, RSEC_MSG_DISCONNECT);
	assert_int_equal(m.u.disconnect.reason, RSEC_DISC_REFUSED);
	assert_int_equal(m.u.disconnect.text.len, 2);
	assert_string_equal(m.u.disconnect.text.s, "no");
}

/* PATH_CHECK on lane 2: epoch, then the frames delivered, big-endian. */
static void path_check_known_answer(void **state)
{
	(void)state;
	static const uint8_t want[] = {
		0x01, 0x12, 0x00, 0x02, 0x00, 0x00, 0x00, 0x0c,
		0x00, 0x00, 0x00, 0x03,                         /* epoch 3 */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x03, /* 66051 frames */
	};
	struct rsec_msg m;
	uint8_t frame[RSEC_WIRE_MAX_FRAME];

	assert_int_equal(rsec_wire_decode(want, sizeof(want), &m), 0);
	assert_int_equal(m.type, RSEC_MSG_PATH_CHECK);
	assert_int_equal(m.lane, 2);
	assert_int_equal(m.u.path_check.epoch, 3);
	assert_int_equal(m.u.path_check.delivered, 0x010203);
	assert_int_equal(encode_ok(&m, frame), sizeof(want));
	assert_memory_equal(frame, want, sizeof(want));
}

static void header_rejections(void **state)
{
	(void)state;
	uint8_t frame[RSEC_WIRE_MAX_FRAME], bad[RSEC_WIRE_MAX_FRAME + 1];
	struct rsec_msg m = sample(RSEC_MSG_REBUILD_READY, 0);
	size_t len = encode_ok(&m, frame);
	uint8_t t;
	uint32_t bl;

	static const uint8_t versions[] = { 0, 2, 0xff };
	for (size_t i = 0; i < sizeof(versions); i++) {
		memcpy(bad, frame, len);
		bad[0] = versions[i];
		assert_int_equal(rsec_wire_decode_header(bad, len, &t, &bl), RSEC_E_PROTO);
		expect_proto(bad, len);
	}
	static const uint8_t types[] = { 0, RSEC_MSG_RESERVED, RSEC_MSG_TYPE_MAX + 1, 0x80, 0xff };
	for (size_t i = 0; i < sizeof(types); i++) {
		memcpy(bad, frame, len);
		bad[1] = types[i];
		assert_int_equal(rsec_wire_decode_header(bad, len, &t, &bl), RSEC_E_PROTO);
		expect_proto(bad, len);
	}
	/* A lane beyond RSEC_WIRE_LANE_MAX: every bit of the high byte. */
	for (unsigned bit = 0; bit < 8; bit++) {
		memcpy(bad, frame, len);
		bad[2] = (uint8_t)(1u << bit);
		assert_int_equal(rsec_wire_decode_header(bad, len, &t, &bl), RSEC_E_PROTO);
		expect_proto(bad, len);
	}

	/* body_len beyond the maximum, even when that many bytes are present. */
	memset(bad, 0, sizeof(bad));
	memcpy(bad, frame, RSEC_WIRE_HDR_LEN);
	static const uint32_t big[] = { RSEC_WIRE_MAX_BODY + 1, 0x7fffffff, 0xffffffff };
	for (size_t i = 0; i < sizeof(big) / sizeof(big[0]); i++) {
		put_be(bad + 4, 4, big[i]);
		assert_int_equal(rsec_wire_decode_header(bad, RSEC_WIRE_HDR_LEN, &t, &bl), RSEC_E_PROTO);
		expect_proto(bad, sizeof(bad));
	}

	/* body_len that disagrees with the bytes given. */
	memcpy(bad, frame, len);
	put_be(bad + 4, 4, len - RSEC_WIRE_HDR_LEN + 1);
	expect_proto(bad, len);
	put_be(bad + 4, 4, len - RSEC_WIRE_HDR_LEN - 1);
	expect_proto(bad, len);
	put_be(bad + 4, 4, 0);
	expect_proto(bad, len);

	/* A short header, and NULL arguments. */
	for (size_t n = 0; n < RSEC_WIRE_HDR_LEN; n++)
		assert_int_equal(rsec_wire_decode_header(frame, n, &t, &bl), RSEC_E_PROTO);
	assert_int_equal(rsec_wire_decode_header(NULL, 8, &t, &bl), RSEC_E_INVAL);
	assert_int_equal(rsec_wire_decode_header(frame, 8, NULL, &bl), RSEC_E_INVAL);
	assert_int_equal(rsec_wire_decode_header(frame, 8, &t, NULL), RSEC_E_INVAL);
	assert_int_equal(rsec_wire_decode(NULL, len, &m), RSEC_E_INVAL);
	assert_int_equal(rsec_wire_decode(frame, len, NULL), RSEC_E_INVAL);
}

/* Every lane 0..RSEC_WIRE_LANE_MAX goes through unchanged; the encoder refuses the rest. */
static void lanes_round_trip(void **state)
{
	(void)state;
	uint8_t frame[RSEC_WIRE_MAX_FRAME];
	struct rsec_msg m = sample(RSEC_MSG_GRANT, 0), back;
	for (unsigned lane = 0; lane <= RSEC_WIRE_LANE_MAX; lane++) {
		m.lane = (uint16_t)lane;
		size_t len = encode_ok(&m, frame);
		assert_int_equal(frame[2] << 8 | frame[3], lane);
		assert_int_equal(rsec_wire_decode(frame, len, &back), 0);
		assert_int_equal(back.lane, lane);
		assert_memory_equal(&back.u.grant, &m.u.grant, sizeof(m.u.grant));
	}
	size_t out = 0;
	for (unsigned lane = RSEC_WIRE_LANE_MAX + 1; lane <= 0xffff; lane += 97) {
		m.lane = (uint16_t)lane;
		assert_int_equal(rsec_wire_encode(&m, frame, sizeof(frame), &out), RSEC_E_RANGE);
	}
	assert_int_equal(out, 0);
	/* SESSION and RESUME are about the whole session: lane 0 only, both ways. */
	struct rsec_msg r = sample(RSEC_MSG_RESUME, 1);
	r.lane = 1;
	assert_int_equal(rsec_wire_encode(&r, frame, sizeof(frame), &out), RSEC_E_RANGE);
	r.lane = 0;
	size_t len = encode_ok(&r, frame);
	frame[3] = 1;
	assert_int_equal(rsec_wire_decode(frame, len, &back), RSEC_E_PROTO);
}

static void trailing_and_truncated(void **state)
{
	(void)state;
	uint8_t frame[RSEC_WIRE_MAX_FRAME + 1], bad[RSEC_WIRE_MAX_FRAME + 1];

	for (uint8_t t = RSEC_MSG_TYPE_MIN; t <= RSEC_MSG_TYPE_MAX; t++) {
		if (t == RSEC_MSG_RESERVED)
			continue;
		for (int high = 0; high <= 1; high++) {
			struct rsec_msg m = sample(t, high);
			size_t len = encode_ok(&m, frame);
			size_t body = len - RSEC_WIRE_HDR_LEN;

			/* Every strict prefix of a valid frame. */
			for (size_t n = 0; n < len; n++)
				expect_proto(frame, n);

			/* A trailing byte, with and without body_len counting it. */
			memcpy(bad, frame, len);
			bad[len] = 0;
			expect_proto(bad, len + 1);
			put_be(bad + 4, 4, body + 1);
			expect_proto(bad, len + 1);

			/* A consistent header over a body cut short (SESSION and RESUME: but for their epoch, whole;
			 * GRANT: but for its key id). */
			bool epoch = (t == RSEC_MSG_SESSION || t == RSEC_MSG_RESUME) && high;
			bool key_id = t == RSEC_MSG_GRANT && high;
			for (size_t k = 0; k < body; k++) {
				if ((epoch && k == RSEC_WIRE_TOKEN_LEN) || (key_id && k == body_len_of[RSEC_MSG_GRANT]))
					continue;
				memcpy(bad, frame, RSEC_WIRE_HDR_LEN + k);
				put_be(bad + 4, 4, k);
				expect_proto(bad, RSEC_WIRE_HDR_LEN + k);
			}
		}
	}
}

/*
 * bad must be refused by the encoder (RSEC_E_RANGE), and the same value
 * patched into a valid frame at body offset off must be refused by the decoder.
 */
static void reject_field(const struct rsec_msg *bad, size_t off, unsigned width, uint64_t value)
{
	uint8_t frame[RSEC_WIRE_MAX_FRAME];
	size_t len = 0x5a5a;

	assert_int_equal(rsec_wire_encode(bad, frame, sizeof(frame), &len), RSEC_E_RANGE);
	assert_int_equal(len, 0x5a5a);

	struct rsec_msg good = sample(bad->type, 0);
	len = encode_ok(&good, frame);
	assert_true(off + width <= len - RSEC_WIRE_HDR_LEN);
	put_be(frame + RSEC_WIRE_HDR_LEN + off, width, value);
	expect_proto(frame, len);
}

/*
 * A sample of type (variant 0) with one field set to value, which the
 * encoder and the decoder must both refuse.
 */
#define REJECT_SET(type, field, off, width, value)             \
	do {                                                   \
		struct rsec_msg bad_ = sample(type, 0);        \
		bad_.u.field = (value);                        \
		reject_field(&bad_, off, width, value);        \
	} while (0)

static void hello_fields(void **state)
{
	(void)state;
	struct rsec_msg m;
	static const uint8_t aeads[] = { 0, 3, 0xff };

	for (size_t i = 0; i < sizeof(aeads); i++)
		REJECT_SET(RSEC_MSG_HELLO, hello.aead, OFF_HELLO_AEAD, 1, aeads[i]);
	REJECT_SET(RSEC_MSG_HELLO, hello.min_version, OFF_HELLO_MIN, 2, 0);
	REJECT_SET(RSEC_MSG_HELLO, hello.min_version, OFF_HELLO_MIN, 2, 2); /* above max_version 1 */
	REJECT_SET(RSEC_MSG_HELLO, hello.max_version, OFF_HELLO_MAX, 2, 0);

	/* Unknown feature bits are carried, not rejected. */
	uint8_t frame[RSEC_WIRE_MAX_FRAME];
	struct rsec_msg d;
	m = sample(RSEC_MSG_HELLO, 0);
	size_t len = encode_ok(&m, frame);
	put_be(frame + RSEC_WIRE_HDR_LEN + OFF_HELLO_FEATURES, 4, 0x80000001u);
	assert_int_equal(rsec_wire_decode(frame, len, &d), 0);
	assert_int_equal(d.u.hello.features, 0x80000001u);
}

static void qp_info_fields(void **state)
{
	(void)state;
	struct rsec_msg m;

	m = sample(RSEC_MSG_QP_INFO, 0);
	m.u.qp_info.qpn = RSEC_WIRE_QPN_MAX + 1;
	reject_field(&m, OFF_QP_QPN, 4, RSEC_WIRE_QPN_MAX + 1);
	m.u.qp_info.qpn = UINT32_MAX;
	reject_field(&m, OFF_QP_QPN, 4, UINT32_MAX);

	m = sample(RSEC_MSG_QP_INFO, 0);
	m.u.qp_info.psn = RSEC_WIRE_PSN_MAX + 1;
	reject_field(&m, OFF_QP_PSN, 4, RSEC_WIRE_PSN_MAX + 1);
	m.u.qp_info.psn = UINT32_MAX;
	reject_field(&m, OFF_QP_PSN, 4, UINT32_MAX);

	static const uint8_t mtus[] = { 0, RSEC_WIRE_MTU_MAX + 1, 0xff };
	for (size_t i = 0; i < sizeof(mtus); i++)
		REJECT_SET(RSEC_MSG_QP_INFO, qp_info.mtu, OFF_QP_MTU, 1, mtus[i]);
	static const uint8_t links[] = { 0, 3, 0xff };
	for (size_t i = 0; i < sizeof(links); i++)
		REJECT_SET(RSEC_MSG_QP_INFO, qp_info.link, OFF_QP_LINK, 1, links[i]);

	static const struct {
		size_t off;
		uint32_t lo, hi;
	} ranges[] = {
		{ OFF_QP_SLOTS, RSEC_WIRE_RECV_SLOTS_MIN, RSEC_WIRE_RECV_SLOTS_MAX },
		{ OFF_QP_SLOT_SIZE, RSEC_WIRE_SLOT_SIZE_MIN, RSEC_WIRE_SLOT_SIZE_MAX },
		{ OFF_QP_MAX_MSG, RSEC_WIRE_MAX_MSG_MIN, RSEC_WIRE_MAX_MSG_MAX },
	};
	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
		const uint32_t bad[] = { ranges[i].lo - 1, ranges[i].hi + 1, UINT32_MAX };
		for (size_t j = 0; j < sizeof(bad) / sizeof(bad[0]); j++) {
			m = sample(RSEC_MSG_QP_INFO, 0);
			uint32_t *field = i == 0 ? &m.u.qp_info.recv_slots
				        : i == 1 ? &m.u.qp_info.slot_size : &m.u.qp_info.max_msg;
			*field = bad[j];
			reject_field(&m, ranges[i].off, 4, bad[j]);
		}
	}
}

static void grant_fields(void **state)
{
	(void)state;
	struct rsec_msg m;
	/* None; sealed alone; sealed with both READ and WRITE; unknown bits. */
	static const uint32_t access[] = { 0, 4, 7, 8, 0x80000001u, UINT32_MAX };

	for (size_t i = 0; i < sizeof(access) / sizeof(access[0]); i++)
		REJECT_SET(RSEC_MSG_GRANT, grant.access, OFF_GRANT_ACCESS, 4, access[i]);
	static const uint64_t lens[] = { 0, RSEC_WIRE_GRANT_LEN_MAX + 1, UINT64_MAX };
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		REJECT_SET(RSEC_MSG_GRANT, grant.len, OFF_GRANT_LEN, 8, lens[i]);
	/* A window running past the top of the address space. */
	uint8_t frame[RSEC_WIRE_MAX_FRAME];
	size_t len;
	m = sample(RSEC_MSG_GRANT, 1);
	m.u.grant.addr++;
	assert_int_equal(rsec_wire_encode(&m, frame, sizeof(frame), &len), RSEC_E_RANGE);
	m = sample(RSEC_MSG_GRANT, 0);
	m.u.grant.addr = UINT64_MAX; /* len 1: the last byte is addressable */
	len = encode_ok(&m, frame);
	put_be(frame + RSEC_WIRE_HDR_LEN + OFF_GRANT_LEN, 8, 2);
	expect_proto(frame, len);
}

static void rebuild_fields(void **state)
{
	(void)state;
	REJECT_SET(RSEC_MSG_REBUILD, rebuild.epoch, OFF_REBUILD_EPOCH, 4, 0);
	REJECT_SET(RSEC_MSG_REBUILD, rebuild.reason, OFF_REBUILD_REASON, 1, RSEC_WIRE_REBUILD_REASON_MAX + 1);
	REJECT_SET(RSEC_MSG_REBUILD, rebuild.reason, OFF_REBUILD_REASON, 1, 0xff);
	REJECT_SET(RSEC_MSG_REBUILD_READY, rebuild_ready.epoch, 0, 4, 0);
	/* Key generation 0 is the exporter's: no exchange makes it. */
	REJECT_SET(RSEC_MSG_REKEY, rekey.gen, 4, 4, 0);
	REJECT_SET(RSEC_MSG_REKEY_REPLY, rekey.gen, 4, 4, 0);
	REJECT_SET(RSEC_MSG_REKEY_DONE, rekey.gen, 4, 4, 0);
	/* The new QP's fields are checked as QP_INFO's: an MTU out of range, a QPN over 24 bits. */
	REJECT_SET(RSEC_MSG_REBUILD, rebuild.qp.mtu, OFF_REBUILD_QP + OFF_QP_MTU, 1, RSEC_WIRE_MTU_MAX + 1);
	REJECT_SET(RSEC_MSG_REBUILD, rebuild.qp.qpn, OFF_REBUILD_QP + OFF_QP_QPN, 4, RSEC_WIRE_QPN_MAX + 1);
}

static void keepalive_verify_fields(void **state)
{
	(void)state;
	struct rsec_msg m;

	REJECT_SET(RSEC_MSG_KEEPALIVE, keepalive.is_reply, OFF_KA_REPLY, 1, 2);

	static const uint8_t algs[] = { 0, 3, 0xff };
	for (size_t i = 0; i < sizeof(algs); i++)
		REJECT_SET(RSEC_MSG_VERIFY, verify.mac_alg, OFF_VERIFY_ALG, 1, algs[i]);
	m = sample(RSEC_MSG_VERIFY, 0);
	m.u.verify.len = 0;
	reject_field(&m, OFF_VERIFY_LEN, 8, 0);
	m.u.verify.len = RSEC_WIRE_GRANT_LEN_MAX + 1;
	reject_field(&m, OFF_VERIFY_LEN, 8, RSEC_WIRE_GRANT_LEN_MAX + 1);
	m = sample(RSEC_MSG_VERIFY, 0); /* len 1 */
	m.u.verify.offset = RSEC_WIRE_GRANT_LEN_MAX;
	reject_field(&m, OFF_VERIFY_OFFSET, 8, RSEC_WIRE_GRANT_LEN_MAX);
	m.u.verify.offset = UINT64_MAX; /* offset + len wraps */
	reject_field(&m, OFF_VERIFY_OFFSET, 8, UINT64_MAX);

	/* A sealed transfer's VERIFY: the nonce prefix, then only zeros. */
	uint8_t frame[RSEC_WIRE_MAX_FRAME];
	size_t len;
	struct rsec_msg back;
	m = sample(RSEC_MSG_VERIFY, 0);
	m.u.verify.mac_alg = RSEC_WIRE_MAC_SEALED;
	memset(m.u.verify.mac, 0xa5, RSEC_WIRE_SEALED_PREFIX_LEN);
	len = encode_ok(&m, frame);
	assert_int_equal(rsec_wire_decode(frame, len, &back), 0);
	assert_memory_equal(back.u.verify.mac, m.u.verify.mac, RSEC_WIRE_MAC_LEN);
	frame[RSEC_WIRE_HDR_LEN + OFF_VERIFY_ALG + 1 + RSEC_WIRE_MAC_LEN - 1] = 1;
	expect_proto(frame, len);
	m.u.verify.mac[RSEC_WIRE_SEALED_PREFIX_LEN] = 1;
	assert_int_equal(rsec_wire_encode(&m, frame, sizeof(frame), &len), RSEC_E_RANGE);
}

static void text_fields(void **state)
{
	(void)state;
	static const uint8_t types[] = { RSEC_MSG_DISCONNECT, RSEC_MSG_ERROR };
	static const char bad_chars[] = { 0x7f, '\n', '\r', '\t', 0x00, 0x1b, (char)0x80, (char)0xff };
	uint8_t frame[RSEC_WIRE_MAX_FRAME];

	for (size_t i = 0; i < sizeof(types); i++) {
		struct rsec_msg m;
		struct rsec_wire_text *txt;

		/* One bad character, at the start, in the middle or at the end. */
		for (size_t c = 0; c < sizeof(bad_chars); c++) {
			for (size_t at = 0; at < 3; at++) {
				m = sample(types[i], 0);
				txt = types[i] == RSEC_MSG_ERROR ? &m.u.error.text : &m.u.disconnect.text;
				fill_text(txt, 5);
				size_t pos = at == 0 ? 0 : at == 1 ? 2 : 4;
				size_t len = encode_ok(&m, frame), scratch_len;
				uint8_t scratch[RSEC_WIRE_MAX_FRAME];
				txt->s[pos] = bad_chars[c];
				assert_int_equal(rsec_wire_encode(&m, scratch, sizeof(scratch), &scratch_len),
						 RSEC_E_RANGE);
				frame[RSEC_WIRE_HDR_LEN + OFF_TEXT + pos] = (uint8_t)bad_chars[c];
				expect_proto(frame, len);
			}
		}

		/* text_len 257, with 257 printable bytes present. */
		m = sample(types[i], 1);
		txt = types[i] == RSEC_MSG_ERROR ? &m.u.error.text : &m.u.disconnect.text;
		size_t len = encode_ok(&m, frame);
		assert_int_equal(len, RSEC_WIRE_HDR_LEN + OFF_TEXT + RSEC_WIRE_MAX_TEXT);
		frame[len] = 'x';
		put_be(frame + 4, 4, OFF_TEXT + RSEC_WIRE_MAX_TEXT + 1);
		put_be(frame + RSEC_WIRE_HDR_LEN + OFF_TEXT_LEN, 2, RSEC_WIRE_MAX_TEXT + 1);
		expect_proto(frame, len + 1);
		/* The largest text_len a full-size body could carry. */
		size_t huge = RSEC_WIRE_MAX_BODY - OFF_TEXT;
		memset(frame + RSEC_WIRE_HDR_LEN + OFF_TEXT, 'x', huge);
		put_be(frame + 4, 4, RSEC_WIRE_MAX_BODY);
		put_be(frame + RSEC_WIRE_HDR_LEN + OFF_TEXT_LEN, 2, huge);
		expect_proto(frame, RSEC_WIRE_MAX_FRAME);
		put_be(frame + RSEC_WIRE_HDR_LEN + OFF_TEXT_LEN, 2, UINT16_MAX);
		expect_proto(frame, RSEC_WIRE_MAX_FRAME);
		txt->s[RSEC_WIRE_MAX_TEXT] = 'x'; /* 257 printable bytes in the array: only len is wrong */
		txt->len = RSEC_WIRE_MAX_TEXT + 1;
		assert_int_equal(rsec_wire_encode(&m, frame, sizeof(frame), &len), RSEC_E_RANGE);
		txt->len = UINT16_MAX;
		assert_int_equal(rsec_wire_encode(&m, frame, sizeof(frame), &len), RSEC_E_RANGE);

		/* text_len larger (or smaller) than the bytes that follow. */
		m = sample(types[i], 0);
		txt = types[i] == RSEC_MSG_ERROR ? &m.u.error.text : &m.u.disconnect.text;
		fill_text(txt, 10);
		len = encode_ok(&m, frame);
		put_be(frame + RSEC_WIRE_HDR_LEN + OFF_TEXT_LEN, 2, 11);
		expect_proto(frame, len);
		put_be(frame + RSEC_WIRE_HDR_LEN + OFF_TEXT_LEN, 2, 9);
		expect_proto(frame, len);
	}

	struct rsec_msg m = sample(RSEC_MSG_DISCONNECT, 0);
	m.u.disconnect.reason = RSEC_DISC_MAX + 1;
	reject_field(&m, OFF_TEXT_CODE, 4, RSEC_DISC_MAX + 1);
	m.u.disconnect.reason = UINT32_MAX;
	reject_field(&m, OFF_TEXT_CODE, 4, UINT32_MAX);
	static const uint32_t codes[] = { 0, RSEC_WIRE_ERROR_CODE_MAX + 1, UINT32_MAX };
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
		REJECT_SET(RSEC_MSG_ERROR, error.code, OFF_TEXT_CODE, 4, codes[i]);
	/* Every library error code fits. */
	m = sample(RSEC_MSG_ERROR, 0);
	m.u.error.code = (uint32_t)-RSEC_E_CONFIG;
	(void)encode_ok(&m, frame);
}

static void encode_rejects_bad_calls(void **state)
{
	(void)state;
	uint8_t frame[RSEC_WIRE_MAX_FRAME];
	size_t len = 0, full;
	struct rsec_msg m = sample(RSEC_MSG_QP_INFO, 1);

	full = encode_ok(&m, frame);
	for (size_t cap = 0; cap < full; cap++) {
		len = 77;
		assert_int_equal(rsec_wire_encode(&m, frame, cap, &len), RSEC_E_RANGE);
		assert_int_equal(len, 77);
	}
	assert_int_equal(rsec_wire_encode(&m, frame, full, &len), 0);
	assert_int_equal(len, full);
	assert_int_equal(rsec_wire_encode(&m, frame, SIZE_MAX, &len), 0); /* body is still bounded */

	assert_int_equal(rsec_wire_encode(NULL, frame, sizeof(frame), &len), RSEC_E_INVAL);
	assert_int_equal(rsec_wire_encode(&m, NULL, sizeof(frame), &len), RSEC_E_INVAL);
	assert_int_equal(rsec_wire_encode(&m, frame, sizeof(frame), NULL), RSEC_E_INVAL);
	static const uint8_t types[] = { 0, RSEC_MSG_RESERVED, RSEC_MSG_TYPE_MAX + 1, 0xff };
	for (size_t i = 0; i < sizeof(types); i++) {
		m.type = types[i];
		assert_int_equal(rsec_wire_encode(&m, frame, sizeof(frame), &len), RSEC_E_RANGE);
	}
}

static void names_and_text_helper(void **state)
{
	(void)state;
	static const char *const names[] = {
		"UNKNOWN", "HELLO", "QP_INFO", "READY", "GRANT", "REVOKE",
		"KEEPALIVE", "DISCONNECT", "ERROR", "VERIFY", "UNKNOWN", "REBUILD", "REBUILD_READY", "SESSION",
		"RESUME", "REKEY", "REKEY_REPLY", "REKEY_DONE", "PATH_CHECK", "UNKNOWN",
	};
	for (unsigned t = 0; t < sizeof(names) / sizeof(names[0]); t++)
		assert_string_equal(rsec_wire_type_name((uint8_t)t), names[t]);
	assert_string_equal(rsec_wire_type_name(0xff), "UNKNOWN");

	struct rsec_wire_text t;
	rsec_wire_text_set(&t, "bad\nline\x1b[31m\x7f\xc3\xa9 ok");
	assert_string_equal(t.s, "bad?line?[31m??? ok");
	assert_int_equal(t.len, strlen(t.s));
	rsec_wire_text_set(&t, NULL);
	assert_int_equal(t.len, 0);
	assert_string_equal(t.s, "");
	rsec_wire_text_set(NULL, "x");

	char longer[RSEC_WIRE_MAX_TEXT + 50];
	memset(longer, 'a', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	rsec_wire_text_set(&t, longer);
	assert_int_equal(t.len, RSEC_WIRE_MAX_TEXT);
	assert_int_equal(strlen(t.s), RSEC_WIRE_MAX_TEXT);

	/* Whatever the input, the result encodes. */
	struct rsec_msg m;
	uint8_t frame[RSEC_WIRE_MAX_FRAME];
	memset(&m, 0, sizeof(m));
	m.type = RSEC_MSG_ERROR;
	m.u.error.code = (uint32_t)-RSEC_E_PROTO;
	rsec_wire_text_set(&m.u.error.text, "\x01\x02\xff" "abc\n");
	(void)encode_ok(&m, frame);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(round_trip_every_type),
		cmocka_unit_test(qp_info_known_answer),
		cmocka_unit_test(disconnect_known_answer),
		cmocka_unit_test(path_check_known_answer),
		cmocka_unit_test(header_rejections),
		cmocka_unit_test(lanes_round_trip),
		cmocka_unit_test(trailing_and_truncated),
		cmocka_unit_test(hello_fields),
		cmocka_unit_test(qp_info_fields),
		cmocka_unit_test(grant_fields),
		cmocka_unit_test(keepalive_verify_fields),
		cmocka_unit_test(rebuild_fields),
		cmocka_unit_test(text_fields),
		cmocka_unit_test(encode_rejects_bad_calls),
		cmocka_unit_test(names_and_text_helper),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
