/* SPDX-License-Identifier: MIT */
/* rdmasec-blk's client (tools/blk/client): command ids, the check of every
 * completion against what is in flight, the client-side check of an I/O,
 * statuses to errno, the verify pattern, and option checks before any
 * connection. The data path itself runs on the fabric (tests/fabric/blk_nbd.sh). */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "blk_client.h"

static void cids_take_give(void **state)
{
	(void)state;
	struct blk_cids f;
	blk_cids_init(&f, 4);
	int seen = 0;
	for (int i = 0; i < 4; i++) {
		int cid = blk_cids_take(&f);
		assert_true(cid >= 0 && cid < 4);
		assert_false(seen & (1 << cid));
		seen |= 1 << cid;
	}
	assert_int_equal(blk_cids_take(&f), -1);
	assert_true(blk_cids_give(&f, 2));
	assert_false(blk_cids_give(&f, 2)); /* already free */
	assert_false(blk_cids_give(&f, 4)); /* out of range */
	assert_int_equal(blk_cids_take(&f), 2);
	blk_cids_init(&f, BLK_QD_MAX + 10);
	assert_int_equal(f.depth, BLK_QD_MAX);
}

static void completion_checked_against_inflight(void **state)
{
	(void)state;
	struct blk_expect in[4] = { [1] = { .busy = true, .opcode = BLK_OP_READ, .length = 8192 },
				    [2] = { .busy = true, .opcode = BLK_OP_FLUSH, .length = 0 },
				    [3] = { .busy = true, .opcode = BLK_OP_WRITE, .length = 4096 } };
	struct blk_cpl ok = { .cid = 1, .status = BLK_S_OK, .length = 8192 };
	assert_null(blk_cpl_violation(&ok, in, 4));
	struct blk_cpl c = ok;
	c.cid = 0; /* not in flight */
	assert_non_null(blk_cpl_violation(&c, in, 4));
	c.cid = 4; /* past the depth */
	assert_non_null(blk_cpl_violation(&c, in, 4));
	c = ok;
	c.length = 4096; /* short */
	assert_non_null(blk_cpl_violation(&c, in, 4));
	c.length = 8193;
	assert_non_null(blk_cpl_violation(&c, in, 4));
	c = (struct blk_cpl){ .cid = 1, .status = BLK_S_IO, .length = 8192 }; /* failed with a length */
	assert_non_null(blk_cpl_violation(&c, in, 4));
	c.length = 0;
	assert_null(blk_cpl_violation(&c, in, 4));
	c.status = BLK_S_TRANSFER;
	assert_null(blk_cpl_violation(&c, in, 4));
	const uint16_t open_only[] = { BLK_S_DENIED, BLK_S_NO_EXPORT, BLK_S_LIMIT, BLK_S_VERSION, BLK_S_MAX + 1 };
	for (size_t i = 0; i < sizeof(open_only) / sizeof(open_only[0]); i++) {
		c.status = open_only[i];
		assert_non_null(blk_cpl_violation(&c, in, 4));
	}
	c.status = BLK_S_READ_ONLY; /* only a WRITE can be refused for that */
	assert_non_null(blk_cpl_violation(&c, in, 4));
	c.cid = 3;
	assert_null(blk_cpl_violation(&c, in, 4));
	struct blk_cpl flush = { .cid = 2, .status = BLK_S_OK, .length = 0 };
	assert_null(blk_cpl_violation(&flush, in, 4));
	flush.length = 512;
	assert_non_null(blk_cpl_violation(&flush, in, 4));
	/* A command answered already (a READ awaiting its data's claim, or one to send again): a second
	 * completion for it is a violation, never a second result. */
	in[1].answered = true;
	assert_non_null(blk_cpl_violation(&ok, in, 4));
	c = (struct blk_cpl){ .cid = 1, .status = BLK_S_TRANSFER };
	assert_non_null(blk_cpl_violation(&c, in, 4));
	in[1].answered = false;
	assert_null(blk_cpl_violation(&ok, in, 4));
}

static void io_checked_before_sending(void **state)
{
	(void)state;
	struct blk_open_reply info = { .block_size = 4096, .max_transfer = 1u << 20, .size = 1u << 20,
				       .flags = BLK_EXPORT_FLUSH };
	uint8_t buf[8];
	struct blk_io io = { .opcode = BLK_OP_READ, .offset = 4096, .length = 8192, .buf = buf };
	assert_int_equal(blk_io_check(&io, &info, 65536), 0);
	io.offset = 512;
	assert_int_equal(blk_io_check(&io, &info, 65536), -EINVAL);
	io.offset = 4096;
	io.length = 4095;
	assert_int_equal(blk_io_check(&io, &info, 65536), -EINVAL);
	io.length = 0;
	assert_int_equal(blk_io_check(&io, &info, 65536), -EINVAL);
	io.length = 131072; /* over io_max */
	assert_int_equal(blk_io_check(&io, &info, 65536), -EINVAL);
	io.length = 8192;
	io.offset = (1u << 20) - 4096; /* past the end */
	assert_int_equal(blk_io_check(&io, &info, 65536), -ERANGE);
	io.offset = UINT64_MAX - 4095;
	assert_int_equal(blk_io_check(&io, &info, 65536), -ERANGE);
	io.offset = 0;
	io.flags = BLK_CMD_FUA; /* FUA is for writes */
	assert_int_equal(blk_io_check(&io, &info, 65536), -EINVAL);
	io.opcode = BLK_OP_WRITE;
	assert_int_equal(blk_io_check(&io, &info, 65536), 0);
	io.flags = BLK_CMD_INLINE; /* the core decides that, not the caller */
	assert_int_equal(blk_io_check(&io, &info, 65536), -EINVAL);
	io.flags = 0;
	info.flags |= BLK_EXPORT_READ_ONLY;
	assert_int_equal(blk_io_check(&io, &info, 65536), -EROFS);
	struct blk_io flush = { .opcode = BLK_OP_FLUSH };
	assert_int_equal(blk_io_check(&flush, &info, 65536), 0);
	flush.length = 4096;
	assert_int_equal(blk_io_check(&flush, &info, 65536), -EINVAL);
	io.opcode = 9;
	assert_int_equal(blk_io_check(&io, &info, 65536), -EINVAL);
}

static void statuses_to_errno(void **state)
{
	(void)state;
	assert_int_equal(blk_status_errno(BLK_S_OK), 0);
	assert_int_equal(blk_status_errno(BLK_S_READ_ONLY), EROFS);
	assert_int_equal(blk_status_errno(BLK_S_NO_SPACE), ENOSPC);
	assert_int_equal(blk_status_errno(BLK_S_RANGE), ERANGE);
	assert_int_equal(blk_status_errno(BLK_S_IO), EIO);
	assert_int_equal(blk_status_errno(BLK_S_TRANSFER), EIO);
	assert_int_equal(blk_status_errno(BLK_S_DENIED), EACCES);
	assert_int_equal(blk_status_errno(BLK_S_NO_EXPORT), ENOENT);
	assert_int_equal(blk_status_errno(999), EIO);
}

static void pattern_depends_on_offset_and_seed(void **state)
{
	(void)state;
	uint8_t a[4096], b[4096];
	blk_pattern_fill(a, sizeof(a), 8192, 7);
	assert_int_equal(blk_pattern_check(a, sizeof(a), 8192, 7), sizeof(a));
	assert_int_equal(blk_pattern_check(a, sizeof(a), 4096, 7), 0); /* a block written at the wrong place */
	assert_int_equal(blk_pattern_check(a, sizeof(a), 8192, 8), 0); /* a stale block of another run */
	memcpy(b, a, sizeof(b));
	b[1000] ^= 1;
	assert_int_equal(blk_pattern_check(b, sizeof(b), 8192, 7), 1000 / 8 * 8);
	/* A block is the same words whether written whole or in parts. */
	blk_pattern_fill(b, 2048, 8192, 7);
	blk_pattern_fill(b + 2048, 2048, 8192 + 2048, 7);
	assert_memory_equal(a, b, sizeof(a));
	memset(b, 0, sizeof(b));
	assert_int_equal(blk_pattern_check(b, sizeof(b), 8192, 7), 0);
}

static void session_options_refused_before_connecting(void **state)
{
	(void)state;
	char err[256] = "";
	struct blk_session *s = (struct blk_session *)1;
	struct blk_client_opts o = { .host = "192.0.2.1", .certs_dir = "/nonexistent", .export_name = "disk" };
	o.queue_depth = BLK_QD_MAX + 1;
	assert_int_equal(blk_session_open(&o, &s, err, sizeof(err)), -EINVAL);
	assert_null(s);
	assert_non_null(strstr(err, "queue depth"));
	o.queue_depth = 1;
	o.queues = BLK_QUEUES_MAX + 1;
	assert_int_equal(blk_session_open(&o, &s, err, sizeof(err)), -EINVAL);
	o.queues = 1;
	o.export_name = "a-name-of-more-than-sixty-four-bytes-is-not-an-export-name-at-all-ever";
	assert_int_equal(blk_session_open(&o, &s, err, sizeof(err)), -EINVAL);
	o.export_name = NULL;
	assert_int_equal(blk_session_open(&o, &s, err, sizeof(err)), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(cids_take_give),
		cmocka_unit_test(completion_checked_against_inflight),
		cmocka_unit_test(io_checked_before_sending),
		cmocka_unit_test(statuses_to_errno),
		cmocka_unit_test(pattern_depends_on_offset_and_seed),
		cmocka_unit_test(session_options_refused_before_connecting),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
