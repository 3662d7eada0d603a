/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "buf.h"

static void put_get_every_width_big_endian(void **state)
{
	(void)state;
	uint8_t mem[32];
	struct rsec_buf b;
	static const uint8_t want[] = {
		0xa5,
		0x12, 0x34,
		0xde, 0xad, 0xbe, 0xef,
		0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
		'x', 'y', 'z',
	};

	rsec_buf_init(&b, mem, sizeof(mem));
	assert_int_equal(rsec_buf_remaining(&b), 0);
	assert_int_equal(rsec_buf_avail(&b), sizeof(mem));
	assert_int_equal(rsec_buf_put_u8(&b, 0xa5), 0);
	assert_int_equal(rsec_buf_put_u16(&b, 0x1234), 0);
	assert_int_equal(rsec_buf_put_u32(&b, 0xdeadbeef), 0);
	assert_int_equal(rsec_buf_put_u64(&b, 0x0102030405060708ull), 0);
	assert_int_equal(rsec_buf_put_bytes(&b, "xyz", 3), 0);
	assert_int_equal(rsec_buf_written(&b), sizeof(want));
	assert_memory_equal(mem, want, sizeof(want));
	assert_int_equal(rsec_buf_remaining(&b), sizeof(want));
	assert_int_equal(rsec_buf_avail(&b), sizeof(mem) - sizeof(want));

	uint8_t v8;
	uint16_t v16;
	uint32_t v32;
	uint64_t v64;
	char s[3];
	assert_int_equal(rsec_buf_get_u8(&b, &v8), 0);
	assert_int_equal(v8, 0xa5);
	assert_int_equal(rsec_buf_get_u16(&b, &v16), 0);
	assert_int_equal(v16, 0x1234);
	assert_int_equal(rsec_buf_get_u32(&b, &v32), 0);
	assert_int_equal(v32, 0xdeadbeef);
	assert_int_equal(rsec_buf_get_u64(&b, &v64), 0);
	assert_true(v64 == 0x0102030405060708ull);
	assert_int_equal(rsec_buf_get_bytes(&b, s, 3), 0);
	assert_memory_equal(s, "xyz", 3);
	assert_int_equal(rsec_buf_remaining(&b), 0);
	assert_int_equal(rsec_buf_get_u8(&b, &v8), RSEC_E_RANGE);
}

static void edge_values_round_trip(void **state)
{
	(void)state;
	uint8_t mem[30];
	struct rsec_buf b;
	uint8_t v8;
	uint16_t v16;
	uint32_t v32;
	uint64_t v64;

	rsec_buf_init(&b, mem, sizeof(mem));
	assert_int_equal(rsec_buf_put_u8(&b, UINT8_MAX), 0);
	assert_int_equal(rsec_buf_put_u16(&b, UINT16_MAX), 0);
	assert_int_equal(rsec_buf_put_u32(&b, UINT32_MAX), 0);
	assert_int_equal(rsec_buf_put_u64(&b, UINT64_MAX), 0);
	assert_int_equal(rsec_buf_put_u8(&b, 0), 0);
	assert_int_equal(rsec_buf_put_u16(&b, 0), 0);
	assert_int_equal(rsec_buf_put_u32(&b, 0), 0);
	assert_int_equal(rsec_buf_put_u64(&b, 0), 0);
	assert_int_equal(rsec_buf_avail(&b), 0);

	assert_int_equal(rsec_buf_get_u8(&b, &v8), 0);
	assert_int_equal(v8, UINT8_MAX);
	assert_int_equal(rsec_buf_get_u16(&b, &v16), 0);
	assert_int_equal(v16, UINT16_MAX);
	assert_int_equal(rsec_buf_get_u32(&b, &v32), 0);
	assert_true(v32 == UINT32_MAX);
	assert_int_equal(rsec_buf_get_u64(&b, &v64), 0);
	assert_true(v64 == UINT64_MAX);
	assert_int_equal(rsec_buf_get_u8(&b, &v8), 0);
	assert_int_equal(v8, 0);
	assert_int_equal(rsec_buf_get_u16(&b, &v16), 0);
	assert_int_equal(v16, 0);
	assert_int_equal(rsec_buf_get_u32(&b, &v32), 0);
	assert_int_equal(v32, 0);
	assert_int_equal(rsec_buf_get_u64(&b, &v64), 0);
	assert_true(v64 == 0);
}

static void exactly_full_then_one_over(void **state)
{
	(void)state;
	uint8_t mem[100], src[101];
	struct rsec_buf b;

	memset(src, 0x5a, sizeof(src));
	/* 101 bytes into 100: refused, nothing written, cursors unchanged. */
	memset(mem, 0, sizeof(mem));
	rsec_buf_init(&b, mem, sizeof(mem));
	assert_int_equal(rsec_buf_put_bytes(&b, src, 101), RSEC_E_RANGE);
	assert_int_equal(rsec_buf_written(&b), 0);
	assert_int_equal(rsec_buf_avail(&b), 100);
	assert_int_equal(mem[0], 0);

	/* Exactly 100 fits; then every width fails. */
	assert_int_equal(rsec_buf_put_bytes(&b, src, 100), 0);
	assert_int_equal(rsec_buf_avail(&b), 0);
	assert_int_equal(rsec_buf_put_u8(&b, 1), RSEC_E_RANGE);
	assert_int_equal(rsec_buf_put_u16(&b, 1), RSEC_E_RANGE);
	assert_int_equal(rsec_buf_put_u32(&b, 1), RSEC_E_RANGE);
	assert_int_equal(rsec_buf_put_u64(&b, 1), RSEC_E_RANGE);
	assert_int_equal(rsec_buf_put_bytes(&b, src, 1), RSEC_E_RANGE);
	assert_int_equal(rsec_buf_put_bytes(&b, src, 0), 0);
	assert_int_equal(rsec_buf_written(&b), 100);

	/* Each width one byte short of fitting. */
	for (size_t room = 0; room < 8; room++) {
		rsec_buf_init(&b, mem, room);
		if (room < 1)
			assert_int_equal(rsec_buf_put_u8(&b, 1), RSEC_E_RANGE);
		if (room < 2)
			assert_int_equal(rsec_buf_put_u16(&b, 1), RSEC_E_RANGE);
		if (room < 4)
			assert_int_equal(rsec_buf_put_u32(&b, 1), RSEC_E_RANGE);
		assert_int_equal(rsec_buf_put_u64(&b, 1), RSEC_E_RANGE);
		assert_int_equal(rsec_buf_written(&b), 0);
	}
}

static void read_past_end_fails_and_keeps_cursor(void **state)
{
	(void)state;
	static const uint8_t src[7] = { 1, 2, 3, 4, 5, 6, 7 };
	struct rsec_buf b;
	uint8_t v8;
	uint16_t v16;
	uint32_t v32;
	uint64_t v64 = 0x1111111111111111ull;
	uint8_t dst[8];

	rsec_buf_init_read(&b, src, sizeof(src));
	assert_int_equal(rsec_buf_remaining(&b), 7);
	assert_int_equal(rsec_buf_get_u64(&b, &v64), RSEC_E_RANGE);
	assert_true(v64 == 0x1111111111111111ull); /* destination untouched */
	assert_int_equal(rsec_buf_remaining(&b), 7);
	memset(dst, 0xee, sizeof(dst));
	assert_int_equal(rsec_buf_get_bytes(&b, dst, 8), RSEC_E_RANGE);
	assert_int_equal(dst[0], 0xee);
	assert_int_equal(rsec_buf_skip(&b, 8), RSEC_E_RANGE);
	assert_int_equal(rsec_buf_remaining(&b), 7);

	assert_int_equal(rsec_buf_get_u32(&b, &v32), 0);
	assert_int_equal(v32, 0x01020304);
	assert_int_equal(rsec_buf_get_u32(&b, &v32), RSEC_E_RANGE);
	assert_int_equal(rsec_buf_remaining(&b), 3);
	assert_int_equal(rsec_buf_get_u16(&b, &v16), 0);
	assert_int_equal(v16, 0x0506);
	assert_int_equal(rsec_buf_get_u16(&b, &v16), RSEC_E_RANGE);
	assert_int_equal(v16, 0x0506);
	assert_int_equal(rsec_buf_skip(&b, 1), 0);
	assert_int_equal(rsec_buf_get_u8(&b, &v8), RSEC_E_RANGE);
	assert_int_equal(rsec_buf_skip(&b, 1), RSEC_E_RANGE);
	assert_int_equal(rsec_buf_skip(&b, 0), 0);
	assert_int_equal(rsec_buf_get_bytes(&b, NULL, 0), 0);
}

static void read_only_refuses_writes(void **state)
{
	(void)state;
	uint8_t mem[16] = { 0 };
	struct rsec_buf b;

	rsec_buf_init_read(&b, mem, sizeof(mem));
	assert_int_equal(rsec_buf_avail(&b), 0);
	/* Make it look like there is room: still refused for being read-only. */
	b.wr = 0;
	assert_int_equal(rsec_buf_avail(&b), 0);
	assert_int_equal(rsec_buf_put_u8(&b, 1), RSEC_E_INVAL);
	assert_int_equal(rsec_buf_put_u16(&b, 1), RSEC_E_INVAL);
	assert_int_equal(rsec_buf_put_u32(&b, 1), RSEC_E_INVAL);
	assert_int_equal(rsec_buf_put_u64(&b, 1), RSEC_E_INVAL);
	assert_int_equal(rsec_buf_put_bytes(&b, "a", 1), RSEC_E_INVAL);
	assert_int_equal(rsec_buf_put_bytes(&b, NULL, 0), RSEC_E_INVAL);
	assert_int_equal(b.wr, 0);
	for (size_t i = 0; i < sizeof(mem); i++)
		assert_int_equal(mem[i], 0);
}

static void null_arguments_are_invalid(void **state)
{
	(void)state;
	uint8_t mem[16];
	struct rsec_buf b;
	uint8_t v8;
	uint16_t v16;
	uint32_t v32;
	uint64_t v64;

	assert_int_equal(rsec_buf_put_u8(NULL, 1), RSEC_E_INVAL);
	assert_int_equal(rsec_buf_put_u16(NULL, 1), RSEC_E_INVAL);
	assert_int_equal(rsec_buf_put_u32(NULL, 1), RSEC_E_INVAL);
	assert_int_equal(rsec_buf_put_u64(NULL, 1), RSEC_E_INVAL);
	assert_int_equal(rsec_buf_put_bytes(NULL, "a", 1), RSEC_E_INVAL);
	assert_int_equal(rsec_buf_get_u8(NULL, &v8), RSEC_E_INVAL);
	assert_int_equal(rsec_buf_get_u16(NULL, &v16), RSEC_E_INVAL);
	assert_int_equal(rsec_buf_get_u32(NULL, &v32), RSEC_E_INVAL);
	assert_int_equal(rsec_buf_get_u64(NULL, &v64), RSEC_E_INVAL);
	assert_int_equal(rsec_buf_get_bytes(NULL, mem, 1), RSEC_E_INVAL);
	assert_int_equal(rsec_buf_skip(NULL, 0), RSEC_E_INVAL);
	assert_int_equal(rsec_buf_remaining(NULL), 0);
	assert_int_equal(rsec_buf_avail(NULL), 0);
	assert_int_equal(rsec_buf_written(NULL), 0);
	rsec_buf_wipe(NULL);
	rsec_buf_init(NULL, mem, sizeof(mem));
	rsec_buf_init_read(NULL, mem, sizeof(mem));

	rsec_buf_init(&b, mem, sizeof(mem));
	assert_int_equal(rsec_buf_put_bytes(&b, NULL, 1), RSEC_E_INVAL);
	assert_int_equal(rsec_buf_put_u32(&b, 7), 0);
	assert_int_equal(rsec_buf_get_u8(&b, NULL), RSEC_E_INVAL);
	assert_int_equal(rsec_buf_get_u16(&b, NULL), RSEC_E_INVAL);
	assert_int_equal(rsec_buf_get_u32(&b, NULL), RSEC_E_INVAL);
	assert_int_equal(rsec_buf_get_u64(&b, NULL), RSEC_E_INVAL);
	assert_int_equal(rsec_buf_get_bytes(&b, NULL, 1), RSEC_E_INVAL);
	assert_int_equal(rsec_buf_remaining(&b), 4);

	/* NULL memory is an empty buffer, whatever size is claimed. */
	rsec_buf_init(&b, NULL, 100);
	assert_int_equal(rsec_buf_avail(&b), 0);
	assert_int_equal(rsec_buf_put_u8(&b, 1), RSEC_E_RANGE);
	rsec_buf_init_read(&b, NULL, 100);
	assert_int_equal(rsec_buf_remaining(&b), 0);
	assert_int_equal(rsec_buf_get_u8(&b, &v8), RSEC_E_RANGE);
}

static void huge_lengths_do_not_wrap(void **state)
{
	(void)state;
	uint8_t mem[64];
	struct rsec_buf b;

	/* wr + n would wrap to a small number; n > avail cannot. */
	rsec_buf_init(&b, mem, sizeof(mem));
	assert_int_equal(rsec_buf_put_u32(&b, 1), 0);
	assert_int_equal(rsec_buf_put_bytes(&b, mem, SIZE_MAX), RSEC_E_RANGE);
	assert_int_equal(rsec_buf_put_bytes(&b, mem, SIZE_MAX - 3), RSEC_E_RANGE);
	assert_int_equal(rsec_buf_put_bytes(&b, mem, SIZE_MAX - 60), RSEC_E_RANGE);
	assert_int_equal(rsec_buf_written(&b), 4);

	assert_int_equal(rsec_buf_skip(&b, 2), 0);
	assert_int_equal(rsec_buf_skip(&b, SIZE_MAX), RSEC_E_RANGE);
	assert_int_equal(rsec_buf_skip(&b, SIZE_MAX - 1), RSEC_E_RANGE);
	assert_int_equal(rsec_buf_get_bytes(&b, mem, SIZE_MAX), RSEC_E_RANGE);
	assert_int_equal(rsec_buf_get_bytes(&b, mem, SIZE_MAX - 1), RSEC_E_RANGE);
	assert_int_equal(rsec_buf_remaining(&b), 2);

	/* A buffer claiming SIZE_MAX bytes (never dereferenced past what we write). */
	rsec_buf_init(&b, mem, SIZE_MAX);
	assert_int_equal(rsec_buf_put_u8(&b, 9), 0);
	assert_int_equal(rsec_buf_put_bytes(&b, mem, SIZE_MAX), RSEC_E_RANGE);
	assert_int_equal(rsec_buf_avail(&b), SIZE_MAX - 1);
}

static void wipe_zeroes_and_resets(void **state)
{
	(void)state;
	uint8_t mem[48];
	struct rsec_buf b;

	rsec_buf_init(&b, mem, sizeof(mem));
	for (int i = 0; i < 6; i++)
		assert_int_equal(rsec_buf_put_u64(&b, 0xa5a5a5a5a5a5a5a5ull), 0);
	assert_int_equal(rsec_buf_skip(&b, 10), 0);
	rsec_buf_wipe(&b);
	for (size_t i = 0; i < sizeof(mem); i++)
		assert_int_equal(mem[i], 0);
	assert_int_equal(rsec_buf_remaining(&b), 0);
	assert_int_equal(rsec_buf_written(&b), 0);
	assert_int_equal(rsec_buf_avail(&b), sizeof(mem));
	/* Still usable afterwards. */
	assert_int_equal(rsec_buf_put_u16(&b, 0x0102), 0);
	assert_int_equal(mem[1], 2);

	/* Read-only memory is not ours to scrub; only the cursors reset. */
	static const uint8_t ro[4] = { 1, 2, 3, 4 };
	rsec_buf_init_read(&b, ro, sizeof(ro));
	rsec_buf_wipe(&b);
	assert_int_equal(rsec_buf_remaining(&b), 0);
	assert_int_equal(ro[3], 4);
}

static void aliasing_put_is_safe(void **state)
{
	(void)state;
	uint8_t mem[8] = { 1, 2, 3, 4 };
	struct rsec_buf b;

	rsec_buf_init(&b, mem, sizeof(mem));
	b.wr = 2; /* pretend 2 bytes are already written */
	assert_int_equal(rsec_buf_put_bytes(&b, mem, 4), 0);
	static const uint8_t want[6] = { 1, 2, 1, 2, 3, 4 };
	assert_memory_equal(mem, want, sizeof(want));
}

/* Run op on a buffer with broken cursors in a child; it must die by abort(). */
static void expect_abort(void (*op)(struct rsec_buf *), size_t rd, size_t wr)
{
	uint8_t mem[8];
	struct rsec_buf b;
	int status;

	rsec_buf_init(&b, mem, sizeof(mem));
	b.rd = rd;
	b.wr = wr;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		const struct rlimit no_core = { 0, 0 };

		(void)setrlimit(RLIMIT_CORE, &no_core);
		op(&b);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGABRT);
}

static void op_remaining(struct rsec_buf *b) { (void)rsec_buf_remaining(b); }
static void op_avail(struct rsec_buf *b) { (void)rsec_buf_avail(b); }
static void op_written(struct rsec_buf *b) { (void)rsec_buf_written(b); }
static void op_wipe(struct rsec_buf *b) { rsec_buf_wipe(b); }
static void op_put(struct rsec_buf *b) { (void)!rsec_buf_put_u8(b, 1); }
static void op_put_bytes(struct rsec_buf *b) { (void)!rsec_buf_put_bytes(b, "a", 1); }
static void op_get(struct rsec_buf *b) { uint64_t v; (void)!rsec_buf_get_u64(b, &v); }
static void op_get_bytes(struct rsec_buf *b) { uint8_t v; (void)!rsec_buf_get_bytes(b, &v, 1); }
static void op_skip(struct rsec_buf *b) { (void)!rsec_buf_skip(b, 0); }

/* Corrupt cursors are a bug: every entry point aborts rather than use them. */
static void corrupt_cursors_abort(void **state)
{
	(void)state;
	void (*const ops[])(struct rsec_buf *) = {
		op_remaining, op_avail, op_written, op_wipe, op_put, op_put_bytes, op_get, op_get_bytes, op_skip,
	};

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		expect_abort(ops[i], 2, 1);         /* rd > wr */
		expect_abort(ops[i], 0, 9);         /* wr > size */
		expect_abort(ops[i], SIZE_MAX, 0);  /* wrapped cursor */
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(put_get_every_width_big_endian),
		cmocka_unit_test(edge_values_round_trip),
		cmocka_unit_test(exactly_full_then_one_over),
		cmocka_unit_test(read_past_end_fails_and_keeps_cursor),
		cmocka_unit_test(read_only_refuses_writes),
		cmocka_unit_test(null_arguments_are_invalid),
		cmocka_unit_test(huge_lengths_do_not_wrap),
		cmocka_unit_test(wipe_zeroes_and_resets),
		cmocka_unit_test(aliasing_put_is_safe),
		cmocka_unit_test(corrupt_cursors_abort),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
