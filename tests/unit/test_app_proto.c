/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "app_proto.h"

static void round_trip_every_fixed_message(void **state)
{
	(void)state;
	struct app_msg in[] = {
		{ .op = APP_WRITE_REQ, .len = 16u << 20 },
		{ .op = APP_WRITE_GRANTED, .tag = UINT64_MAX },
		{ .op = APP_WRITE_DONE, .tag = 7 },
		{ .op = APP_WRITE_RESULT, .len = 3, .sha256 = { 1, 2, 3 } },
		{ .op = APP_READ_REQ },
		{ .op = APP_SEALED_WRITE_REQ, .len = 1 },
		{ .op = APP_SEALED_READ_REQ },
		{ .op = APP_READ_GRANTED, .tag = 9, .len = 1, .sha256 = { [31] = 0xff } },
		{ .op = APP_READ_DONE, .tag = 9 },
		{ .op = APP_READ_RESULT },
		{ .op = APP_ERROR, .text = "no such grant" },
		{ .op = APP_STATS_REQ },
		{ .op = APP_STATS_REPLY, .stats = { 1, 2, 3, 4, UINT64_MAX }, .text = "CN=client1,O=rdmasec-test" },
	};
	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		uint8_t buf[256];
		size_t n = app_encode(&in[i], buf, sizeof(buf));
		assert_true(n > 0);
		struct app_msg out;
		const char *why;
		assert_true(app_decode(buf, n, &out, &why));
		assert_int_equal(out.op, in[i].op);
		assert_int_equal(out.tag, in[i].tag);
		assert_int_equal(out.len, in[i].len);
		assert_memory_equal(out.sha256, in[i].sha256, APP_SHA256_LEN);
		assert_string_equal(out.text, in[i].text);
		assert_memory_equal(&out.stats, &in[i].stats, sizeof(out.stats));
		/* Every shorter prefix is refused, down to the text that ends some messages. */
		bool text_tail = in[i].op == APP_ERROR || in[i].op == APP_STATS_REPLY;
		size_t fixed = in[i].op == APP_STATS_REPLY ? 1 + APP_STATS_LEN : 1;
		for (size_t cut = 0; cut < n; cut++) {
			bool ok = app_decode(buf, cut, &out, &why);
			if (cut < fixed || !text_tail)
				assert_false(ok);
			else
				assert_true(ok);
		}
		/* A trailing byte is refused for fixed-size messages. */
		if (!text_tail) {
			buf[n] = 0;
			assert_false(app_decode(buf, n + 1, &out, &why));
			assert_string_equal(why, "trailing bytes");
		}
	}
}

static void echo_payload_points_into_input(void **state)
{
	(void)state;
	const uint8_t msg[] = { APP_ECHO, 'h', 'i' };
	struct app_msg m;
	const char *why;
	assert_true(app_decode(msg, sizeof(msg), &m, &why));
	assert_ptr_equal(m.payload, msg + 1);
	assert_int_equal(m.payload_len, 2);
}

static void malformed_is_refused(void **state)
{
	(void)state;
	struct app_msg m;
	const char *why;
	const uint8_t unknown[] = { 'Z' };
	assert_false(app_decode(unknown, 1, &m, &why));
	assert_string_equal(why, "unknown opcode");
	const uint8_t newline[] = { APP_ERROR, 'a', '\n' };
	assert_false(app_decode(newline, sizeof(newline), &m, &why));
	uint8_t long_text[2 + APP_ERROR_TEXT_MAX];
	memset(long_text, 'a', sizeof(long_text));
	long_text[0] = APP_ERROR;
	assert_false(app_decode(long_text, sizeof(long_text), &m, &why));
	assert_true(app_decode(long_text, sizeof(long_text) - 1, &m, &why));
	/* The peer in a stats reply is text like an error's: printable, bounded. */
	uint8_t stats[1 + APP_STATS_LEN + APP_ERROR_TEXT_MAX + 1];
	memset(stats, 0, sizeof(stats));
	stats[0] = APP_STATS_REPLY;
	memset(stats + 1 + APP_STATS_LEN, 'p', APP_ERROR_TEXT_MAX + 1);
	assert_false(app_decode(stats, sizeof(stats), &m, &why));
	assert_string_equal(why, "text too long");
	assert_true(app_decode(stats, sizeof(stats) - 1, &m, &why));
	assert_int_equal(strlen(m.text), APP_ERROR_TEXT_MAX);
	stats[1 + APP_STATS_LEN] = 0x80;
	assert_false(app_decode(stats, sizeof(stats) - 1, &m, &why));
	assert_string_equal(why, "text not printable");
	const uint8_t stats_req_extra[] = { APP_STATS_REQ, 0 };
	assert_false(app_decode(stats_req_extra, sizeof(stats_req_extra), &m, &why));
	assert_string_equal(why, "trailing bytes");
	/* The longest message fits the encoder's buffer. */
	struct app_msg longest = { .op = APP_STATS_REPLY };
	memset(longest.text, 'q', APP_ERROR_TEXT_MAX);
	uint8_t out[APP_MSG_FIXED_MAX];
	assert_int_equal(app_encode(&longest, out, sizeof(out)), APP_MSG_FIXED_MAX);
	assert_int_equal(app_encode(&longest, out, sizeof(out) - 1), 0);
	uint8_t small[4];
	struct app_msg big = { .op = APP_WRITE_RESULT };
	assert_int_equal(app_encode(&big, small, sizeof(small)), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(round_trip_every_fixed_message),
		cmocka_unit_test(echo_payload_points_into_input),
		cmocka_unit_test(malformed_is_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
