/* SPDX-License-Identifier: MIT */
/* rdmasec-blk's messages (tools/blk/proto/blk_wire.c): round trips, the
 * byte layout docs/blk.md gives, and every bound the decoders enforce. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "blk_data.h"
#include "blk_wire.h"

static const struct blk_open_reply good_reply = {
	.version = BLK_VERSION, .status = BLK_S_OK, .flags = BLK_EXPORT_FLUSH | BLK_EXPORT_FUA, .queue_depth = 32, .queues = 4,
	.block_size = 4096, .max_transfer = 1u << 20, .max_inline = 16384, .size = 64u << 20,
};

static void open_round_trip_and_layout(void **state)
{
	(void)state;
	struct blk_open in = { .version = BLK_VERSION, .flags = BLK_OPEN_WRITE, .queue_depth = 32, .queues = 4,
			       .name = "disk-1.a_b" }, out;
	uint8_t buf[BLK_OPEN_MAX];
	size_t n = blk_open_encode(&in, buf, sizeof(buf));
	const char *why = NULL;
	assert_int_equal(n, BLK_OPEN_HDR + strlen(in.name));
	const uint8_t hdr[] = { BLK_OPEN, BLK_VERSION, 0, 1, 0, 32, 4, 10 };
	assert_memory_equal(buf, hdr, sizeof(hdr));
	assert_true(blk_open_decode(buf, n, &out, &why));
	assert_memory_equal(&in, &out, sizeof(in));
	/* Every byte the header bounds, broken one at a time. */
	uint8_t bad[BLK_OPEN_MAX];
	const struct { size_t at; uint8_t v; } breaks[] = {
		{ 1, BLK_VERSION_MIN - 1 }, { 1, BLK_VERSION + 1 }, { 3, 2 }, { 4, 1 }, { 5, 0 }, { 6, 0 },
		{ 6, BLK_QUEUES_MAX + 1 }, { 7, 9 }, { 7, 11 }, { 8, '/' },
	};
	for (size_t i = 0; i < sizeof(breaks) / sizeof(breaks[0]); i++) {
		memcpy(bad, buf, n);
		bad[breaks[i].at] = breaks[i].v;
		assert_false(blk_open_decode(bad, n, &out, &why));
	}
	assert_false(blk_open_decode(buf, n - 1, &out, &why));
	assert_false(blk_open_decode(buf, 0, &out, &why));
	/* Version 3 is still spoken, and said as it came; no version, the newest. */
	in.version = 3;
	assert_int_equal(blk_open_encode(&in, buf, sizeof(buf)), n);
	assert_int_equal(buf[1], 3);
	assert_true(blk_open_decode(buf, n, &out, &why));
	assert_int_equal(out.version, 3);
	in.version = 0;
	assert_int_equal(blk_open_encode(&in, buf, sizeof(buf)), n);
	assert_int_equal(buf[1], BLK_VERSION);
	in.version = BLK_VERSION + 1;
	assert_int_equal(blk_open_encode(&in, buf, sizeof(buf)), 0);
}

static void open_names(void **state)
{
	(void)state;
	char long_name[BLK_NAME_MAX + 2];
	memset(long_name, 'a', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	assert_false(blk_name_valid(long_name));
	long_name[BLK_NAME_MAX] = '\0';
	assert_true(blk_name_valid(long_name));
	assert_false(blk_name_valid(""));
	assert_false(blk_name_valid("a b"));
	assert_false(blk_name_valid("../x"));
	assert_false(blk_name_valid(NULL));
	struct blk_open in = { .queue_depth = 1, .queues = 1 };
	uint8_t buf[BLK_OPEN_MAX];
	strcpy(in.name, "x/y");
	assert_int_equal(blk_open_encode(&in, buf, sizeof(buf)), 0);
	strcpy(in.name, "ok");
	assert_int_equal(blk_open_encode(&in, buf, BLK_OPEN_HDR + 1), 0);
	assert_int_equal(blk_open_encode(&in, buf, BLK_OPEN_HDR + 2), BLK_OPEN_HDR + 2);
}

static void open_reply_bounds(void **state)
{
	(void)state;
	uint8_t buf[BLK_OPEN_REPLY_LEN];
	struct blk_open_reply out;
	const char *why;
	assert_int_equal(blk_open_reply_encode(&good_reply, buf, sizeof(buf)), BLK_OPEN_REPLY_LEN);
	assert_true(blk_open_reply_decode(buf, sizeof(buf), &out, &why));
	assert_memory_equal(&good_reply, &out, sizeof(out));
	assert_int_equal(buf[31], 0);
	assert_int_equal(buf[28], 0x04); /* size 64 MiB, big-endian at 24..31 */
	struct blk_open_reply r;
	const struct blk_open_reply bads[] = {
		{ .status = BLK_S_MAX + 1 },
		{ .status = BLK_S_DENIED, .size = 1 },
	};
	for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++)
		assert_int_equal(blk_open_reply_encode(&bads[i], buf, sizeof(buf)), 0);
	r = good_reply, r.block_size = 1024;
	assert_int_equal(blk_open_reply_encode(&r, buf, sizeof(buf)), 0);
	r = good_reply, r.max_transfer = 4096 + 512;
	assert_int_equal(blk_open_reply_encode(&r, buf, sizeof(buf)), 0);
	r = good_reply, r.max_inline = BLK_INLINE_MAX + 4096;
	assert_int_equal(blk_open_reply_encode(&r, buf, sizeof(buf)), 0);
	r = good_reply, r.size = (64u << 20) + 512;
	assert_int_equal(blk_open_reply_encode(&r, buf, sizeof(buf)), 0);
	r = good_reply, r.queue_depth = 0;
	assert_int_equal(blk_open_reply_encode(&r, buf, sizeof(buf)), 0);
	/* A refusal carries its status and nothing else. */
	r = (struct blk_open_reply){ .status = BLK_S_DENIED };
	assert_int_equal(blk_open_reply_encode(&r, buf, sizeof(buf)), BLK_OPEN_REPLY_LEN);
	assert_true(blk_open_reply_decode(buf, sizeof(buf), &out, &why));
	assert_int_equal(out.status, BLK_S_DENIED);
	assert_int_equal(out.version, BLK_VERSION);
	buf[1] = BLK_VERSION + 1;
	assert_false(blk_open_reply_decode(buf, sizeof(buf), &out, &why));
	buf[1] = 3;
	assert_true(blk_open_reply_decode(buf, sizeof(buf), &out, &why));
	assert_int_equal(out.version, 3);
	buf[10] = 1; /* reserved */
	assert_false(blk_open_reply_decode(buf, sizeof(buf), &out, &why));
}

static size_t encode_cmd(const struct blk_cmd *c, uint8_t *buf, size_t cap)
{
	size_t n = blk_cmd_encode_hdr(c, buf, cap);
	if (n && (c->flags & BLK_CMD_INLINE)) {
		memcpy(buf + n, c->data, c->length);
		n += c->length;
	}
	return n;
}

static void cmd_round_trips(void **state)
{
	(void)state;
	static uint8_t data[4096];
	memset(data, 0x5a, sizeof(data));
	const struct blk_cmd cmds[] = {
		{ .opcode = BLK_OP_READ, .cid = 0, .window = 1, .offset = 4096, .length = 4096, .pool_off = 8192, .seq = 1 },
		{ .opcode = BLK_OP_WRITE, .flags = BLK_CMD_FUA, .cid = 31, .window = BLK_WINDOW_MAX, .offset = 0,
		  .length = 1u << 20, .pool_off = UINT32_MAX, .seq = ~0ull, .mac = { 1, 2, 3, [15] = 0xff } },
		{ .opcode = BLK_OP_WRITE, .flags = BLK_CMD_INLINE, .cid = 255, .offset = 512, .length = 4096, .seq = 3,
		  .data = data },
		{ .opcode = BLK_OP_FLUSH, .cid = 7, .seq = 4 },
	};
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		uint8_t buf[BLK_CMD_HDR + sizeof(data)];
		struct blk_cmd out;
		const char *why = NULL;
		size_t n = encode_cmd(&cmds[i], buf, sizeof(buf));
		assert_int_not_equal(n, 0);
		assert_int_equal(buf[0], BLK_CMD);
		assert_true(blk_cmd_decode(buf, n, &out, &why));
		assert_int_equal(out.opcode, cmds[i].opcode);
		assert_int_equal(out.flags, cmds[i].flags);
		assert_int_equal(out.cid, cmds[i].cid);
		assert_int_equal(out.window, cmds[i].window);
		assert_int_equal(out.offset, cmds[i].offset);
		assert_int_equal(out.length, cmds[i].length);
		assert_int_equal(out.pool_off, cmds[i].pool_off);
		assert_int_equal(out.seq, cmds[i].seq);
		assert_memory_equal(out.mac, cmds[i].mac, BLK_MAC_LEN);
		if (cmds[i].flags & BLK_CMD_INLINE) {
			assert_ptr_equal(out.data, buf + BLK_CMD_HDR);
			/* Data one byte short or long: refused. */
			assert_false(blk_cmd_decode(buf, n - 1, &out, &why));
		} else {
			assert_null(out.data);
			assert_false(blk_cmd_decode(buf, n + 1, &out, &why));
		}
	}
}

static void cmd_stateless_rules(void **state)
{
	(void)state;
	const struct blk_cmd bad[] = {
		{ .opcode = 0, .length = 512, .seq = 1 },
		{ .opcode = 4, .length = 512, .seq = 1 },
		{ .opcode = BLK_OP_READ, .length = 512, .seq = 0 },
		{ .opcode = BLK_OP_READ, .length = 0, .seq = 1 },
		{ .opcode = BLK_OP_READ, .flags = BLK_CMD_FUA, .length = 512, .seq = 1 },
		{ .opcode = BLK_OP_READ, .length = 512, .seq = 1, .mac = { [7] = 1 } },
		{ .opcode = BLK_OP_WRITE, .length = 512, .seq = 0 },
		{ .opcode = BLK_OP_WRITE, .length = 0, .seq = 1 },
		{ .opcode = BLK_OP_WRITE, .flags = BLK_CMD_INLINE, .length = 512, .pool_off = 4096, .seq = 1 },
		{ .opcode = BLK_OP_WRITE, .flags = BLK_CMD_INLINE, .length = 512, .seq = 1, .mac = { 1 } },
		{ .opcode = BLK_OP_WRITE, .flags = BLK_CMD_INLINE, .length = BLK_INLINE_MAX + 512, .seq = 1 },
		{ .opcode = BLK_OP_WRITE, .flags = 0x8, .length = 512, .seq = 1 },
		{ .opcode = BLK_OP_WRITE, .length = BLK_TRANSFER_MAX + 512, .seq = 1 },
		{ .opcode = BLK_OP_FLUSH, .offset = 512, .seq = 1 },
		{ .opcode = BLK_OP_FLUSH, .flags = BLK_CMD_FUA, .seq = 1 },
		{ .opcode = BLK_OP_FLUSH, .pool_off = 4096, .seq = 1 },
		{ .opcode = BLK_OP_FLUSH, .seq = 1, .mac = { [15] = 1 } },
		{ .opcode = BLK_OP_FLUSH, .window = 1, .seq = 1 },
		{ .opcode = BLK_OP_WRITE, .flags = BLK_CMD_INLINE, .window = 1, .length = 512, .seq = 1 },
		{ .opcode = BLK_OP_READ, .cid = BLK_QD_MAX, .length = 512, .seq = 1 },
	};
	uint8_t buf[BLK_CMD_HDR];
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(blk_cmd_encode_hdr(&bad[i], buf, sizeof(buf)), 0);
	/* The decoder refuses the same, and a reserved byte set. */
	struct blk_cmd ok = { .opcode = BLK_OP_READ, .cid = 1, .length = 512, .seq = 1 }, out;
	const char *why;
	assert_int_equal(blk_cmd_encode_hdr(&ok, buf, sizeof(buf)), BLK_CMD_HDR);
	buf[1] = 4;
	assert_false(blk_cmd_decode(buf, sizeof(buf), &out, &why));
	buf[1] = BLK_OP_READ;
	buf[6] = 1; /* the window, big-endian */
	assert_true(blk_cmd_decode(buf, sizeof(buf), &out, &why));
	assert_int_equal(out.window, 256);
	buf[6] = 0;
	buf[40] = 1; /* a READ carries no data MAC */
	assert_false(blk_cmd_decode(buf, sizeof(buf), &out, &why));
	buf[40] = 0;
	buf[39] = 1; /* nor a key id */
	assert_false(blk_cmd_decode(buf, sizeof(buf), &out, &why));
	buf[39] = 0;
	buf[31] = 0; /* sequence number 0 */
	assert_false(blk_cmd_decode(buf, sizeof(buf), &out, &why));
	buf[31] = 1;
	assert_true(blk_cmd_decode(buf, sizeof(buf), &out, &why));
	buf[0] = BLK_CPL;
	assert_false(blk_cmd_decode(buf, sizeof(buf), &out, &why));
}

static void cmd_check_against_session(void **state)
{
	(void)state;
	const struct blk_limits l = { .size = 1u << 20, .block_size = 4096, .max_transfer = 65536,
				      .max_inline = 8192, .queue_depth = 32 };
	struct blk_cmd c = { .opcode = BLK_OP_READ, .cid = 31, .offset = (1u << 20) - 4096, .length = 4096, .seq = 1 };
	assert_int_equal(blk_cmd_check(&c, &l), BLK_S_OK);
	c.cid = 32;
	assert_int_equal(blk_cmd_check(&c, &l), BLK_S_INVALID);
	c.cid = 0;
	c.offset = 1u << 20;
	assert_int_equal(blk_cmd_check(&c, &l), BLK_S_RANGE);
	c.offset = UINT64_MAX - 4095; /* offset + length wraps */
	assert_int_equal(blk_cmd_check(&c, &l), BLK_S_RANGE);
	c.offset = 512;
	assert_int_equal(blk_cmd_check(&c, &l), BLK_S_INVALID);
	c.offset = 0;
	c.length = 65536 + 4096;
	assert_int_equal(blk_cmd_check(&c, &l), BLK_S_INVALID);
	c = (struct blk_cmd){ .opcode = BLK_OP_WRITE, .flags = BLK_CMD_INLINE, .length = 12288 };
	assert_int_equal(blk_cmd_check(&c, &l), BLK_S_INVALID);
	c.length = 8192;
	assert_int_equal(blk_cmd_check(&c, &l), BLK_S_OK);
	c = (struct blk_cmd){ .opcode = BLK_OP_FLUSH, .cid = 3 };
	assert_int_equal(blk_cmd_check(&c, &l), BLK_S_OK);
	/* Version 3 names no pool window; version 4 names one for every pool transfer, and only then. */
	struct blk_limits v4 = l;
	v4.version = 4;
	c = (struct blk_cmd){ .opcode = BLK_OP_READ, .length = 4096, .seq = 1, .window = 1 };
	assert_int_equal(blk_cmd_check(&c, &l), BLK_S_INVALID);
	assert_int_equal(blk_cmd_check(&c, &v4), BLK_S_OK);
	c.window = 0;
	assert_int_equal(blk_cmd_check(&c, &l), BLK_S_OK);
	assert_int_equal(blk_cmd_check(&c, &v4), BLK_S_INVALID);
	c.opcode = BLK_OP_WRITE; /* pulled */
	assert_int_equal(blk_cmd_check(&c, &v4), BLK_S_INVALID);
	c.window = 7;
	assert_int_equal(blk_cmd_check(&c, &v4), BLK_S_OK);
	c = (struct blk_cmd){ .opcode = BLK_OP_WRITE, .flags = BLK_CMD_INLINE, .length = 4096, .seq = 1 };
	assert_int_equal(blk_cmd_check(&c, &v4), BLK_S_OK);
	c = (struct blk_cmd){ .opcode = BLK_OP_FLUSH };
	assert_int_equal(blk_cmd_check(&c, &v4), BLK_S_OK);
}

static void pool_windows(void **state)
{
	(void)state;
	/* Every window and direction has its own tag, none of them version 3's. */
	uint64_t seen[6];
	const uint16_t ws[] = { 1, 2, BLK_WINDOW_MAX };
	for (unsigned i = 0; i < 3; i++)
		for (unsigned d = 0; d < 2; d++) {
			seen[2 * i + d] = blk_window_tag(ws[i], (enum blk_pool_dir)d);
			assert_int_not_equal(seen[2 * i + d], BLK_POOL_TAG);
			for (unsigned j = 0; j < 2 * i + d; j++)
				assert_int_not_equal(seen[j], seen[2 * i + d]);
		}
	assert_int_equal(blk_window_next(1), 2);
	assert_int_equal(blk_window_next(BLK_WINDOW_MAX), 1);
	assert_int_equal(blk_window_next(0), 1);
	enum blk_pool_dir dir;
	struct blk_cmd c = { .opcode = BLK_OP_READ };
	assert_true(blk_cmd_pool_dir(&c, &dir));
	assert_int_equal(dir, BLK_POOL_TARGET_WRITES);
	c.opcode = BLK_OP_WRITE;
	assert_true(blk_cmd_pool_dir(&c, &dir));
	assert_int_equal(dir, BLK_POOL_TARGET_READS);
	c.flags = BLK_CMD_INLINE;
	assert_false(blk_cmd_pool_dir(&c, &dir));
	c = (struct blk_cmd){ .opcode = BLK_OP_FLUSH };
	assert_false(blk_cmd_pool_dir(&c, &dir));
}

static void cpl_bounds(void **state)
{
	(void)state;
	struct blk_cpl in = { .cid = 9, .status = BLK_S_OK, .length = 131072, .key_id = UINT64_C(1) << 32 | 2,
			      .mac = { 0xaa, [15] = 0x55 } }, out;
	uint8_t buf[BLK_CPL_LEN];
	const char *why;
	assert_int_equal(blk_cpl_encode(&in, buf, sizeof(buf)), BLK_CPL_LEN);
	const uint8_t want[] = { BLK_CPL, 0, 0, 9, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2,
				 0xaa,    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x55 };
	assert_memory_equal(buf, want, sizeof(want));
	assert_true(blk_cpl_decode(buf, sizeof(buf), &out, &why));
	assert_memory_equal(&in, &out, sizeof(in));
	buf[5] = BLK_S_IO; /* an error with a length */
	assert_false(blk_cpl_decode(buf, sizeof(buf), &out, &why));
	buf[9] = buf[10] = 0; /* an error with a data MAC */
	assert_false(blk_cpl_decode(buf, sizeof(buf), &out, &why));
	buf[24] = buf[39] = 0; /* an error with a key id */
	assert_false(blk_cpl_decode(buf, sizeof(buf), &out, &why));
	buf[19] = buf[23] = 0;
	assert_true(blk_cpl_decode(buf, sizeof(buf), &out, &why));
	buf[5] = BLK_S_MAX + 1;
	buf[9] = 0;
	assert_false(blk_cpl_decode(buf, sizeof(buf), &out, &why));
	assert_false(blk_cpl_decode(buf, sizeof(buf) - 1, &out, &why));
	in.status = BLK_S_IO;
	in.length = 0;
	assert_int_equal(blk_cpl_encode(&in, buf, sizeof(buf)), 0); /* an error with a data MAC */
	assert_string_equal(blk_status_name(BLK_S_RANGE), "out of range");
	assert_string_equal(blk_status_name(999), "unknown status");
}

/* The data of one transfer opens under its own command only, and never leaves unauthenticated bytes. */
static void data_seal_open(void **state)
{
	(void)state;
	uint8_t key[BLK_DATA_KEY_LEN] = { 7 }, plain[8192], buf[8192], out[8192], tag[BLK_DATA_TAG_LEN];
	for (size_t i = 0; i < sizeof(plain); i++)
		plain[i] = (uint8_t)(i * 31 + 1);
	struct blk_data_key *k = blk_data_key_new(key);
	assert_non_null(k);
	const struct blk_data_ctx x = { .dir = BLK_DATA_TO_CLIENT, .queue = 2, .cid = 5, .opcode = BLK_OP_READ,
					.offset = 1u << 20, .seq = 42, .length = sizeof(plain) };
	assert_true(blk_data_seal(k, &x, plain, buf, tag));
	assert_memory_not_equal(buf, plain, 64);
	assert_true(blk_data_open(k, &x, buf, out, tag));
	assert_memory_equal(out, plain, sizeof(plain));
	/* Another command's nonce or binding, a changed byte, a changed tag: refused, the output wiped. */
	struct blk_data_ctx other[6];
	for (unsigned i = 0; i < 6; i++)
		other[i] = x;
	other[0].dir = BLK_DATA_TO_TARGET;
	other[1].queue = 3;
	other[2].cid = 6;
	other[3].offset += 4096;
	other[4].seq = 43;
	other[5].length = 4096;
	for (unsigned i = 0; i < 6; i++) {
		memset(out, 0x33, sizeof(out));
		assert_false(blk_data_open(k, &other[i], buf, out, tag));
		for (size_t j = 0; j < other[i].length; j++)
			assert_int_equal(out[j], 0);
	}
	buf[100] ^= 1;
	assert_false(blk_data_open(k, &x, buf, out, tag));
	buf[100] ^= 1;
	tag[0] ^= 1;
	assert_false(blk_data_open(k, &x, buf, out, tag));
	tag[0] ^= 1;
	/* In place, as the target opens a pulled WRITE in its slot. */
	assert_true(blk_data_open(k, &x, buf, buf, tag));
	assert_memory_equal(buf, plain, sizeof(plain));
	blk_data_key_free(k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(open_round_trip_and_layout),
		cmocka_unit_test(open_names),
		cmocka_unit_test(open_reply_bounds),
		cmocka_unit_test(cmd_round_trips),
		cmocka_unit_test(cmd_stateless_rules),
		cmocka_unit_test(cmd_check_against_session),
		cmocka_unit_test(pool_windows),
		cmocka_unit_test(cpl_bounds),
		cmocka_unit_test(data_seal_open),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
