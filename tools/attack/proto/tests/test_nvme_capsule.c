/* SPDX-License-Identifier: MIT */
/*
 * The NVMe-oF capsule codec against vectors laid out by hand from the NVMe
 * base specification (Common Command Format, Common Completion Queue Entry)
 * and NVMe-oF's SGL descriptors, the way the Linux host (nvme-rdma) fills
 * them: PSDT 01b, in-capsule data at offset 0 (descriptor 0x01) for small
 * writes, a keyed data block with invalidation (0x4f) otherwise.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "proto/nvme_capsule.h"

/* Write, cid 0x1234, nsid 1, 512 bytes in the capsule, SLBA 2048, one block. */
static const uint8_t sqe_write_inline[NVME_SQE_LEN] = {
	0x01, 0x40, 0x34, 0x12, 0x01, 0x00, 0x00, 0x00, /* opcode flags cid nsid */
	0, 0, 0, 0, 0, 0, 0, 0,                         /* CDW2-3 */
	0, 0, 0, 0, 0, 0, 0, 0,                         /* MPTR */
	0, 0, 0, 0, 0, 0, 0, 0,                         /* SGL1 offset 0 */
	0x00, 0x02, 0x00, 0x00, 0, 0, 0, 0x01,          /* length 512, reserved, Data Block / Offset */
	0x00, 0x08, 0, 0, 0, 0, 0, 0,                   /* SLBA 2048 */
	0x00, 0x00, 0x00, 0x00,                         /* NLB 0 (one block), control */
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,             /* CDW13-15 */
};

/* Read, cid 0xa001, nsid 1, keyed SGL: VA 0xffff888001000000, 4096 bytes, key 0x12345678, invalidate. */
static const uint8_t sqe_read_keyed[NVME_SQE_LEN] = {
	0x02, 0x40, 0x01, 0xa0, 0x01, 0x00, 0x00, 0x00,
	0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0,
	0x00, 0x00, 0x00, 0x01, 0x80, 0x88, 0xff, 0xff, /* address */
	0x00, 0x10, 0x00, 0x78, 0x56, 0x34, 0x12, 0x4f, /* 3-byte length, key, Keyed / Invalidate */
	0x10, 0x00, 0, 0, 0, 0, 0, 0,                   /* SLBA 16 */
	0x07, 0x00, 0x00, 0x40,                         /* NLB 7 (eight blocks), FUA */
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};

/* Completion: result 0, SQ head 5, SQ 1, cid 0x1234, status Invalid Field (SC 02h), phase 1. */
static const uint8_t cqe_invalid_field[NVME_CQE_LEN] = {
	0, 0, 0, 0, 0, 0, 0, 0, 0x05, 0x00, 0x01, 0x00, 0x34, 0x12, 0x05, 0x00,
};

static void sqe_decodes_inline_write(void **state)
{
	struct nvme_sqe s;
	uint8_t out[NVME_SQE_LEN];

	(void)state;
	assert_int_equal(nvme_sqe_decode(sqe_write_inline, sizeof(sqe_write_inline), &s), 0);
	assert_int_equal(s.opcode, NVME_OP_WRITE);
	assert_int_equal(s.flags, NVME_FLAG_SGL_METABUF);
	assert_int_equal(s.cid, 0x1234);
	assert_int_equal(s.nsid, 1);
	assert_int_equal(s.sgl.id, NVME_SGL_INLINE);
	assert_int_equal(s.sgl.addr, 0);
	assert_int_equal(s.sgl.length, 512);
	assert_int_equal(s.slba, 2048);
	assert_int_equal(s.nlb, 0);
	assert_int_equal(nvme_sqe_encode(&s, out), 0);
	assert_memory_equal(out, sqe_write_inline, NVME_SQE_LEN);
}

static void sqe_decodes_keyed_read(void **state)
{
	struct nvme_sqe s;
	uint8_t out[NVME_SQE_LEN];

	(void)state;
	assert_int_equal(nvme_sqe_decode(sqe_read_keyed, sizeof(sqe_read_keyed), &s), 0);
	assert_int_equal(s.opcode, NVME_OP_READ);
	assert_int_equal(s.cid, 0xa001);
	assert_int_equal(s.sgl.id, NVME_SGL_KEYED_INV);
	assert_true(s.sgl.addr == 0xffff888001000000ull);
	assert_int_equal(s.sgl.length, 4096);
	assert_int_equal(s.sgl.key, 0x12345678);
	assert_int_equal(s.slba, 16);
	assert_int_equal(s.nlb, 7);
	assert_int_equal(s.control, 0x4000);
	assert_int_equal(nvme_sqe_encode(&s, out), 0);
	assert_memory_equal(out, sqe_read_keyed, NVME_SQE_LEN);
}

static void capsule_carries_inline_data(void **state)
{
	uint8_t data[512], buf[NVME_SQE_LEN + 512 + 8];
	struct nvme_sqe s;
	struct nvme_capsule c;
	size_t n = 0;

	(void)state;
	memset(data, 0xa5, sizeof(data));
	assert_int_equal(nvme_sqe_decode(sqe_write_inline, sizeof(sqe_write_inline), &s), 0);
	assert_int_equal(nvme_capsule_build(&s, data, sizeof(data), buf, sizeof(buf), &n), 0);
	assert_int_equal(n, NVME_SQE_LEN + 512);
	assert_memory_equal(buf, sqe_write_inline, NVME_SQE_LEN);
	assert_int_equal(nvme_capsule_parse(buf, n, &c), 0);
	assert_int_equal(c.data_len, 512);
	assert_ptr_equal(c.data, buf + NVME_SQE_LEN);
	assert_memory_equal(c.data, data, 512);
	/* Truncated data, trailing bytes after a keyed SGL, a length past the end. */
	assert_int_equal(nvme_capsule_parse(buf, n - 1, &c), RSEC_E_PROTO);
	memcpy(buf, sqe_read_keyed, NVME_SQE_LEN);
	assert_int_equal(nvme_capsule_parse(buf, NVME_SQE_LEN, &c), 0);
	assert_null(c.data);
	assert_int_equal(nvme_capsule_parse(buf, NVME_SQE_LEN + 1, &c), RSEC_E_PROTO);
}

static void capsule_rejects_hostile_offsets(void **state)
{
	uint8_t buf[NVME_SQE_LEN + 16];
	struct nvme_capsule c;

	(void)state;
	memset(buf, 0, sizeof(buf));
	memcpy(buf, sqe_write_inline, NVME_SQE_LEN);
	/* Offset 8, length 8: the last 8 of 16 bytes. */
	buf[24] = 8;
	buf[32] = 8;
	buf[33] = 0;
	assert_int_equal(nvme_capsule_parse(buf, sizeof(buf), &c), 0);
	assert_ptr_equal(c.data, buf + NVME_SQE_LEN + 8);
	/* Offset near 2^64: offset + length would wrap. */
	memset(buf + 24, 0xff, 8);
	assert_int_equal(nvme_capsule_parse(buf, sizeof(buf), &c), RSEC_E_PROTO);
	/* Length one past the data. */
	memset(buf + 24, 0, 8);
	buf[32] = 17;
	assert_int_equal(nvme_capsule_parse(buf, sizeof(buf), &c), RSEC_E_PROTO);
}

static void sqe_rejects_malformed(void **state)
{
	uint8_t b[NVME_SQE_LEN];
	struct nvme_sqe s;

	(void)state;
	assert_int_equal(nvme_sqe_decode(sqe_write_inline, NVME_SQE_LEN - 1, &s), RSEC_E_PROTO);
	assert_int_equal(nvme_sqe_decode(NULL, NVME_SQE_LEN, &s), RSEC_E_PROTO);
	memcpy(b, sqe_write_inline, sizeof(b));
	b[1] = 0x00; /* PSDT 00b: PRPs, not allowed over fabrics */
	assert_int_equal(nvme_sqe_decode(b, sizeof(b), &s), RSEC_E_PROTO);
	b[1] = 0xc0; /* PSDT 11b: reserved */
	assert_int_equal(nvme_sqe_decode(b, sizeof(b), &s), RSEC_E_PROTO);
	memcpy(b, sqe_write_inline, sizeof(b));
	b[39] = 0x21; /* Segment descriptor: not one the RDMA transport takes in SGL1 here */
	assert_int_equal(nvme_sqe_decode(b, sizeof(b), &s), RSEC_E_PROTO);
	memcpy(b, sqe_write_inline, sizeof(b));
	b[37] = 1; /* reserved byte of a Data Block descriptor */
	assert_int_equal(nvme_sqe_decode(b, sizeof(b), &s), RSEC_E_PROTO);
}

static void sqe_encode_checks_fields(void **state)
{
	struct nvme_sqe s = { .opcode = NVME_OP_WRITE, .flags = NVME_FLAG_SGL_METABUF,
			      .sgl = { .id = NVME_SGL_KEYED, .length = 0x1000000 } };
	uint8_t out[NVME_SQE_LEN], buf[NVME_SQE_LEN + 4];
	size_t n;

	(void)state;
	assert_int_equal(nvme_sqe_encode(&s, out), RSEC_E_INVAL); /* keyed length over 24 bits */
	s.sgl.length = 0xffffff;
	assert_int_equal(nvme_sqe_encode(&s, out), 0);
	s.flags = 0;
	assert_int_equal(nvme_sqe_encode(&s, out), RSEC_E_INVAL);
	s.flags = NVME_FLAG_SGL_METABUF;
	/* A keyed SGL carries no in-capsule data; an inline one must describe it exactly. */
	assert_int_equal(nvme_capsule_build(&s, buf, 4, buf, sizeof(buf), &n), RSEC_E_INVAL);
	s.sgl = (struct nvme_sgl){ .id = NVME_SGL_INLINE, .length = 8 };
	assert_int_equal(nvme_capsule_build(&s, (const uint8_t *)"12345678", 8, buf, sizeof(buf), &n), RSEC_E_RANGE);
	assert_int_equal(nvme_capsule_build(&s, (const uint8_t *)"1234", 4, buf, sizeof(buf), &n), RSEC_E_INVAL);
	s.sgl.length = 4;
	assert_int_equal(nvme_capsule_build(&s, (const uint8_t *)"1234", 4, buf, sizeof(buf), &n), 0);
	assert_int_equal(n, sizeof(buf));
}

static void cqe_round_trip(void **state)
{
	struct nvme_cqe c;
	uint8_t out[NVME_CQE_LEN];

	(void)state;
	assert_int_equal(nvme_cqe_decode(cqe_invalid_field, sizeof(cqe_invalid_field), &c), 0);
	assert_int_equal(c.sq_head, 5);
	assert_int_equal(c.sq_id, 1);
	assert_int_equal(c.cid, 0x1234);
	assert_true(c.phase);
	assert_int_equal(nvme_status_sc(c.status), 0x02);
	assert_int_equal(nvme_status_sct(c.status), 0);
	assert_false(nvme_status_dnr(c.status));
	assert_int_equal(nvme_cqe_encode(&c, out), 0);
	assert_memory_equal(out, cqe_invalid_field, NVME_CQE_LEN);
	assert_int_equal(nvme_cqe_decode(cqe_invalid_field, NVME_CQE_LEN - 1, &c), RSEC_E_PROTO);
	assert_int_equal(nvme_cqe_decode(cqe_invalid_field, NVME_CQE_LEN + 1, &c), RSEC_E_PROTO);
	c.status = 0x8000;
	assert_int_equal(nvme_cqe_encode(&c, out), RSEC_E_INVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sqe_decodes_inline_write),
		cmocka_unit_test(sqe_decodes_keyed_read),
		cmocka_unit_test(capsule_carries_inline_data),
		cmocka_unit_test(capsule_rejects_hostile_offsets),
		cmocka_unit_test(sqe_rejects_malformed),
		cmocka_unit_test(sqe_encode_checks_fields),
		cmocka_unit_test(cqe_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
