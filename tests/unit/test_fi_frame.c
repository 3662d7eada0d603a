/* SPDX-License-Identifier: MIT */
/* The libfabric provider's frame header (fi/frame.c): round trips and every refusal. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "frame.h"

static void data_round_trip(void **state)
{
	struct rsfi_frame in = { .type = RSFI_FRAME_DATA, .flags = RSFI_FRAME_HAS_DATA, .cq_data = 0x0123456789abcdefULL };
	struct rsfi_frame out;
	uint8_t msg[RSFI_FRAME_HDR + 5] = { 0 };

	(void)state;
	assert_int_equal(rsfi_frame_write(&in, msg), 0);
	assert_int_equal(msg[0], RSFI_FRAME_VERSION);
	assert_int_equal(msg[8], 0x01); /* big-endian CQ data */
	assert_int_equal(rsfi_frame_read(msg, sizeof(msg), &out), 0);
	assert_int_equal(out.type, RSFI_FRAME_DATA);
	assert_int_equal(out.flags, RSFI_FRAME_HAS_DATA);
	assert_true(out.cq_data == in.cq_data);
	assert_int_equal(out.body_len, 5);
}

static void cm_frames_carry_bounded_private_data(void **state)
{
	uint8_t msg[RSFI_FRAME_HDR + RSFI_CM_DATA_MAX + 1] = { 0 };
	struct rsfi_frame f = { .type = RSFI_FRAME_ACCEPT };
	struct rsfi_frame out;

	(void)state;
	assert_int_equal(rsfi_frame_write(&f, msg), 0);
	assert_int_equal(rsfi_frame_read(msg, RSFI_FRAME_HDR + RSFI_CM_DATA_MAX, &out), 0);
	assert_int_equal(out.body_len, RSFI_CM_DATA_MAX);
	assert_int_equal(rsfi_frame_read(msg, sizeof(msg), &out), RSEC_E_PROTO);
	f.body_len = RSFI_CM_DATA_MAX + 1;
	assert_int_equal(rsfi_frame_write(&f, msg), RSEC_E_RANGE);
}

static void refuses_malformed_headers(void **state)
{
	struct rsfi_frame f = { .type = RSFI_FRAME_DATA };
	struct rsfi_frame out;
	uint8_t good[RSFI_FRAME_HDR], bad[RSFI_FRAME_HDR];

	(void)state;
	assert_int_equal(rsfi_frame_write(&f, good), 0);
	assert_int_equal(rsfi_frame_read(good, RSFI_FRAME_HDR - 1, &out), RSEC_E_PROTO); /* short */
	assert_int_equal(rsfi_frame_read(NULL, 0, &out), RSEC_E_PROTO);
	const struct {
		size_t off;
		uint8_t val;
	} patches[] = {
		{ 0, 2 },    /* unknown version */
		{ 1, 0 },    /* type 0 */
		{ 1, 10 },   /* unknown type */
		{ 3, 2 },    /* unknown flag */
		{ 2, 0x80 }, /* unknown flag, high byte */
		{ 4, 1 },    /* reserved byte set */
		{ 7, 1 },
		{ 15, 1 },   /* CQ data without its flag */
	};
	for (size_t i = 0; i < sizeof(patches) / sizeof(patches[0]); i++) {
		memcpy(bad, good, sizeof(bad));
		bad[patches[i].off] = patches[i].val;
		assert_int_equal(rsfi_frame_read(bad, sizeof(bad), &out), RSEC_E_PROTO);
	}
}

static void cm_frames_carry_no_cq_data(void **state)
{
	struct rsfi_frame f = { .type = RSFI_FRAME_CONNREQ, .flags = RSFI_FRAME_HAS_DATA, .cq_data = 1 };
	struct rsfi_frame out;
	uint8_t msg[RSFI_FRAME_HDR];

	(void)state;
	assert_int_equal(rsfi_frame_write(&f, msg), RSEC_E_RANGE);
	f = (struct rsfi_frame){ .type = RSFI_FRAME_DATA, .flags = RSFI_FRAME_HAS_DATA, .cq_data = 1 };
	assert_int_equal(rsfi_frame_write(&f, msg), 0);
	msg[1] = RSFI_FRAME_REJECT; /* a data header relabelled as CM keeps its CQ data: refused */
	assert_int_equal(rsfi_frame_read(msg, sizeof(msg), &out), RSEC_E_PROTO);
}

static void bye_frames_are_empty(void **state)
{
	struct rsfi_frame f = { .type = RSFI_FRAME_BYE };
	struct rsfi_frame out;
	uint8_t msg[RSFI_FRAME_HDR + 1] = { 0 };

	(void)state;
	assert_int_equal(rsfi_frame_write(&f, msg), 0);
	assert_int_equal(rsfi_frame_read(msg, RSFI_FRAME_HDR, &out), 0);
	assert_int_equal(out.type, RSFI_FRAME_BYE);
	assert_int_equal(rsfi_frame_read(msg, sizeof(msg), &out), RSEC_E_PROTO); /* a body */
	f.type = RSFI_FRAME_BYE_ACK;
	f.body_len = 1;
	assert_int_equal(rsfi_frame_write(&f, msg), RSEC_E_RANGE);
}

static void rma_bodies_round_trip_and_refuse(void **state)
{
	struct rsfi_rma_msg m = { .tag = 7, .key = 0xfeedULL, .addr = 0x1000, .len = 4096, .kind = RSFI_RMA_READ };
	struct rsfi_rma_msg out;
	uint8_t body[RSFI_RMA_REQ_LEN];

	(void)state;
	assert_int_equal(rsfi_rma_write(RSFI_FRAME_RMA_REQ, &m, body), RSFI_RMA_REQ_LEN);
	assert_int_equal(rsfi_rma_read(RSFI_FRAME_RMA_REQ, body, sizeof(body), &out), 0);
	assert_true(out.tag == 7 && out.key == 0xfeedULL && out.addr == 0x1000 && out.len == 4096);
	assert_int_equal(out.kind, RSFI_RMA_READ);
	assert_int_equal(rsfi_rma_read(RSFI_FRAME_RMA_REQ, body, sizeof(body) - 1, &out), RSEC_E_PROTO);
	body[32] = 3; /* unknown kind */
	assert_int_equal(rsfi_rma_read(RSFI_FRAME_RMA_REQ, body, sizeof(body), &out), RSEC_E_PROTO);
	m.addr = UINT64_MAX - 10; /* wraps */
	assert_int_equal(rsfi_rma_write(RSFI_FRAME_RMA_REQ, &m, body), RSEC_E_RANGE);
	m.addr = 0x1000;
	m.len = 0;
	assert_int_equal(rsfi_rma_write(RSFI_FRAME_RMA_REQ, &m, body), RSEC_E_RANGE);
	m = (struct rsfi_rma_msg){ .tag = 9, .code = 13 };
	assert_int_equal(rsfi_rma_write(RSFI_FRAME_RMA_NAK, &m, body), RSFI_RMA_NAK_LEN);
	assert_int_equal(rsfi_rma_read(RSFI_FRAME_RMA_NAK, body, RSFI_RMA_NAK_LEN, &out), 0);
	assert_int_equal(out.code, 13);
	body[8] = body[9] = body[10] = body[11] = 0; /* code 0 */
	assert_int_equal(rsfi_rma_read(RSFI_FRAME_RMA_NAK, body, RSFI_RMA_NAK_LEN, &out), RSEC_E_PROTO);
	assert_int_equal(rsfi_rma_write(RSFI_FRAME_DATA, &m, body), RSEC_E_RANGE);
}

static void rma_frames_have_exact_bodies(void **state)
{
	struct rsfi_frame f = { .type = RSFI_FRAME_RMA_DONE, .body_len = RSFI_RMA_DONE_LEN };
	struct rsfi_frame out;
	uint8_t msg[RSFI_FRAME_HDR + RSFI_RMA_REQ_LEN] = { 0 };

	(void)state;
	assert_int_equal(rsfi_frame_write(&f, msg), 0);
	assert_int_equal(rsfi_frame_read(msg, RSFI_FRAME_HDR + RSFI_RMA_DONE_LEN, &out), 0);
	assert_int_equal(rsfi_frame_read(msg, RSFI_FRAME_HDR + RSFI_RMA_DONE_LEN + 1, &out), RSEC_E_PROTO);
	f.body_len = 0;
	assert_int_equal(rsfi_frame_write(&f, msg), RSEC_E_RANGE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(data_round_trip),
		cmocka_unit_test(cm_frames_carry_bounded_private_data),
		cmocka_unit_test(refuses_malformed_headers),
		cmocka_unit_test(cm_frames_carry_no_cq_data),
		cmocka_unit_test(bye_frames_are_empty),
		cmocka_unit_test(rma_bodies_round_trip_and_refuse),
		cmocka_unit_test(rma_frames_have_exact_bodies),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
