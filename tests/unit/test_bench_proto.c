/* SPDX-License-Identifier: MIT */
/* rdmasec-bench's protocol (tools/bench/bench_proto.c): round trips and every refusal. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "../../tools/bench/bench_proto.c"

static const struct bench_params good_params = {
	.version = BENCH_PROTO_VERSION, .op = BENCH_OP_SEND, .lat = 1, .poll = BENCH_POLL_BUSY,
	.size = 65536, .iters = 1000,
};

static size_t encode_ok(const struct bench_msg *m, uint8_t *buf, size_t cap)
{
	size_t n = bench_encode(m, buf, cap);
	assert_true(n > 0);
	return n;
}

static void round_trip_every_message(void **state)
{
	(void)state;
	struct bench_msg in[] = {
		{ .type = BENCH_MSG_PARAMS, .params = good_params },
		{ .type = BENCH_MSG_PARAMS,
		  .params = { .version = BENCH_PROTO_VERSION, .op = BENCH_OP_CONNECT, .lat = 1, .iters = 10, .round = 10 } },
		{ .type = BENCH_MSG_PARAMS,
		  .params = { .version = BENCH_PROTO_VERSION, .op = BENCH_OP_READ, .lanes = BENCH_LANES_MAX,
			      .size = BENCH_SIZE_MAX, .duration_ms = 1000 } },
		{ .type = BENCH_MSG_PARAMS,
		  .params = { .version = BENCH_PROTO_VERSION, .op = BENCH_OP_READ, .lat = 1, .sealed = 1, .size = 4096, .iters = 9 } },
		{ .type = BENCH_MSG_READY, .tag = UINT64_MAX },
		{ .type = BENCH_MSG_END, .iters = BENCH_COUNT_MAX },
		{ .type = BENCH_MSG_RESULT, .result = { 5, UINT64_MAX, { 1, BENCH_COUNT_MAX } } },
		{ .type = BENCH_MSG_ERROR, .text = "this server was started for another --op" },
		{ .type = BENCH_MSG_ERROR, .text = "" },
	};
	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		uint8_t buf[BENCH_MSG_FIXED_MAX + 1];
		size_t n = encode_ok(&in[i], buf, sizeof(buf));
		struct bench_msg out;
		const char *why;
		assert_true(bench_decode(buf, n, &out, &why));
		assert_memory_equal(&out.params, &in[i].params, sizeof(out.params));
		assert_memory_equal(&out.result, &in[i].result, sizeof(out.result));
		assert_int_equal(out.tag, in[i].tag);
		assert_int_equal(out.iters, in[i].iters);
		assert_string_equal(out.text, in[i].text);
		/* Every proper prefix of a fixed-size message is refused, and so is one more byte. */
		bool text = in[i].type == BENCH_MSG_ERROR;
		for (size_t cut = 0; cut < n && !text; cut++)
			assert_false(bench_decode(buf, cut, &out, &why));
		if (!text) {
			buf[n] = 0;
			assert_false(bench_decode(buf, n + 1, &out, &why));
			assert_string_equal(why, "trailing bytes");
		}
		/* The encoder never writes past cap. */
		assert_int_equal(bench_encode(&in[i], buf, n - 1), 0);
	}
}

static void data_payload_points_into_input(void **state)
{
	(void)state;
	const uint8_t msg[] = { BENCH_MSG_DATA, 1, 2, 3 };
	struct bench_msg m;
	const char *why;
	assert_true(bench_decode(msg, sizeof(msg), &m, &why));
	assert_ptr_equal(m.payload, msg + 1);
	assert_int_equal(m.payload_len, 3);
	struct bench_msg data = { .type = BENCH_MSG_DATA };
	uint8_t out[4];
	assert_int_equal(bench_encode(&data, out, sizeof(out)), 1);
	assert_int_equal(out[0], BENCH_MSG_DATA);
}

static void malformed_is_refused(void **state)
{
	(void)state;
	struct bench_msg m;
	const char *why;
	assert_false(bench_decode(NULL, 0, &m, &why));
	assert_string_equal(why, "empty message");
	const uint8_t unknown[] = { 'Z', 0, 0 };
	assert_false(bench_decode(unknown, sizeof(unknown), &m, &why));
	assert_string_equal(why, "unknown message type");
	const uint8_t newline[] = { BENCH_MSG_ERROR, 'a', '\n' };
	assert_false(bench_decode(newline, sizeof(newline), &m, &why));
	const uint8_t nul[] = { BENCH_MSG_ERROR, 'a', 0, 'b' };
	assert_false(bench_decode(nul, sizeof(nul), &m, &why));
	uint8_t long_text[2 + BENCH_TEXT_MAX] = { BENCH_MSG_ERROR };
	memset(long_text + 1, 'a', sizeof(long_text) - 1);
	assert_false(bench_decode(long_text, sizeof(long_text), &m, &why));
	assert_true(bench_decode(long_text, sizeof(long_text) - 1, &m, &why));
	/* A refused message leaves nothing half-parsed behind. */
	uint8_t result[1 + 32] = { BENCH_MSG_RESULT };
	memset(result + 1, 0xff, 32);
	assert_false(bench_decode(result, sizeof(result), &m, &why));
	assert_string_equal(why, "result out of range");
	assert_int_equal(m.type, 0);
	assert_int_equal(m.result.iters, 0);
}

/* Each mutation of good_params, and what bench_params_check must say about it. */
static const struct {
	struct bench_params p;
	const char *why;
} bad[] = {
	{ { .version = 1, .op = 1, .size = 1, .iters = 1 }, "unknown protocol version" },
	{ { .version = BENCH_PROTO_VERSION, .op = 2, .lanes = BENCH_LANES_MAX + 1, .size = 1, .iters = 1 },
	  "too many queue pairs" },
	{ { .version = BENCH_PROTO_VERSION, .op = 1, .lanes = 1, .size = 1, .iters = 1 },
	  "further queue pairs are for write and read bandwidth" },
	{ { .version = BENCH_PROTO_VERSION, .op = 2, .lat = 1, .lanes = 1, .size = 1, .iters = 1 },
	  "further queue pairs are for write and read bandwidth" },
	{ { .version = BENCH_PROTO_VERSION, .op = 3, .sealed = 1, .lanes = 1, .size = 1, .iters = 1 },
	  "further queue pairs are for write and read bandwidth" },
	{ { .version = BENCH_PROTO_VERSION, .op = 1, .sealed = 1, .size = 1, .iters = 1 }, "sealed is for write and read" },
	{ { .version = BENCH_PROTO_VERSION, .op = 3, .sealed = 2, .size = 1, .iters = 1 }, "sealed is for write and read" },
	{ { .version = BENCH_PROTO_VERSION, .op = 2, .sealed = 1, .size = 1, .duration_ms = 5 },
	  "a sealed write test needs iterations (a grant each)" },
	{ { .version = BENCH_PROTO_VERSION, .op = 0, .size = 1, .iters = 1 }, "unknown operation" },
	{ { .version = BENCH_PROTO_VERSION, .op = 6, .size = 1, .iters = 1 }, "unknown operation" },
	{ { .version = BENCH_PROTO_VERSION, .op = 5, .lat = 1, .size = 1, .iters = 1 }, "bad queue pair set-up test" },
	{ { .version = BENCH_PROTO_VERSION, .op = 5, .lat = 1, .iters = BENCH_QP_ITERS_MAX + 1 },
	  "bad queue pair set-up test" },
	{ { .version = BENCH_PROTO_VERSION, .op = 5, .iters = 1 }, "bad queue pair set-up test" },
	{ { .version = BENCH_PROTO_VERSION, .op = 1, .lat = 2, .size = 1, .iters = 1 }, "bad test or poll mode" },
	{ { .version = BENCH_PROTO_VERSION, .op = 1, .poll = 2, .size = 1, .iters = 1 }, "bad test or poll mode" },
	{ { .version = BENCH_PROTO_VERSION, .op = 1, .size = 1 }, "need exactly one of iterations and duration" },
	{ { .version = BENCH_PROTO_VERSION, .op = 1, .size = 1, .iters = 1, .duration_ms = 1 },
	  "need exactly one of iterations and duration" },
	{ { .version = BENCH_PROTO_VERSION, .op = 1, .size = 1, .iters = BENCH_ITERS_MAX + 1 }, "iterations or duration out of range" },
	{ { .version = BENCH_PROTO_VERSION, .op = 1, .size = 1, .duration_ms = BENCH_DURATION_MS_MAX + 1 },
	  "iterations or duration out of range" },
	{ { .version = BENCH_PROTO_VERSION, .op = 2, .size = 0, .iters = 1 }, "size out of range" },
	{ { .version = BENCH_PROTO_VERSION, .op = 3, .size = BENCH_SIZE_MAX + 1, .iters = 1 }, "size out of range" },
	{ { .version = BENCH_PROTO_VERSION, .op = 1, .size = 1, .iters = 2, .round = 1 }, "round is for connect only" },
	{ { .version = BENCH_PROTO_VERSION, .op = 4, .size = 1, .iters = 2, .round = 1 }, "bad connect round" },
	{ { .version = BENCH_PROTO_VERSION, .op = 4, .iters = 2, .round = 0 }, "bad connect round" },
	{ { .version = BENCH_PROTO_VERSION, .op = 4, .iters = 2, .round = 3 }, "bad connect round" },
	{ { .version = BENCH_PROTO_VERSION, .op = 4, .duration_ms = 5, .round = 1 }, "bad connect round" },
};

static void params_limits(void **state)
{
	(void)state;
	assert_null(bench_params_check(&good_params));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_string_equal(bench_params_check(&bad[i].p), bad[i].why);
		/* Neither side of the codec lets it through. */
		struct bench_msg m = { .type = BENCH_MSG_PARAMS, .params = bad[i].p };
		uint8_t buf[64];
		assert_int_equal(bench_encode(&m, buf, sizeof(buf)), 0);
		struct bench_msg ok = { .type = BENCH_MSG_PARAMS, .params = good_params };
		size_t n = encode_ok(&ok, buf, sizeof(buf));
		buf[1] = bad[i].p.version;
		buf[2] = bad[i].p.op;
		buf[3] = bad[i].p.lat;
		buf[4] = bad[i].p.poll;
		buf[5] = bad[i].p.sealed;
		buf[6] = bad[i].p.lanes;
		for (int b = 0; b < 8; b++) {
			buf[7 + b] = (uint8_t)(bad[i].p.size >> (56 - 8 * b));
			buf[15 + b] = (uint8_t)(bad[i].p.iters >> (56 - 8 * b));
			buf[27 + b] = (uint8_t)(bad[i].p.round >> (56 - 8 * b));
		}
		for (int b = 0; b < 4; b++)
			buf[23 + b] = (uint8_t)(bad[i].p.duration_ms >> (24 - 8 * b));
		const char *why;
		assert_false(bench_decode(buf, n, &m, &why));
		assert_string_equal(why, bad[i].why);
	}
}

static void encoder_refuses_what_decoder_would(void **state)
{
	(void)state;
	uint8_t buf[BENCH_MSG_FIXED_MAX];
	struct bench_msg unknown = { .type = 'Z' };
	assert_int_equal(bench_encode(&unknown, buf, sizeof(buf)), 0);
	struct bench_msg ctl = { .type = BENCH_MSG_ERROR, .text = "bell\a" };
	assert_int_equal(bench_encode(&ctl, buf, sizeof(buf)), 0);
	struct bench_msg end = { .type = BENCH_MSG_END, .iters = BENCH_COUNT_MAX + 1 };
	assert_int_equal(bench_encode(&end, buf, sizeof(buf)), 0);
	assert_string_equal(bench_op_name(BENCH_OP_CONNECT), "connect");
	assert_string_equal(bench_op_name(0), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(round_trip_every_message),
		cmocka_unit_test(data_payload_points_into_input),
		cmocka_unit_test(malformed_is_refused),
		cmocka_unit_test(params_limits),
		cmocka_unit_test(encoder_refuses_what_decoder_would),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
