/* SPDX-License-Identifier: MIT */
/*
 * mem-access's model: calibration from two own registrations, the candidate
 * order (nearest registration first, predicted address first, all 256 key
 * bytes), index wrap inside rxe's MR and MW pools, refusal of bad
 * parameters; and the naive victim's exchange-line parser.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "mem_access/memacc_model.h"

static struct memacc_model model(uint32_t rkey, uint64_t addr, int32_t step, int64_t stride, uint32_t dist,
				 uint32_t variants)
{
	struct memacc_model m = { .own_rkey = rkey, .own_addr = addr, .index_step = step, .stride = stride,
				  .distance = dist, .addr_variants = variants, .granule = 4096 };
	const char *why = NULL;
	assert_true(memacc_model_init(&m, &why));
	return m;
}

static void test_calibrate(void **state)
{
	int32_t step;
	int64_t stride;
	const char *why;
	(void)state;

	assert_true(memacc_calibrate(0x1234a7, 0x5000, 0x1235c2, 0xb000, &step, &stride, &why));
	assert_int_equal(step, 1);
	assert_int_equal(stride, 0x6000);
	/* Downward allocation: a negative stride. */
	assert_true(memacc_calibrate(0x1234a7, 0xb000, 0x1236c2, 0x5000, &step, &stride, &why));
	assert_int_equal(step, 2);
	assert_int_equal(stride, -0x6000);
	/* The MR pool wraps from 0x80000 to 1. */
	assert_true(memacc_calibrate(0x80000ffu, 0x5000, 0x00001ffu, 0x6000, &step, &stride, &why));
	assert_int_equal(step, 1);
	/* Windows live in their own pool. */
	assert_true(memacc_calibrate(0x8000100u, 0x5000, 0x8000200u, 0x9000, &step, &stride, &why));
	assert_int_equal(step, 1);
	/* Refused: same index, same address, mixed pools, index 0 or beyond the MW pool. */
	assert_false(memacc_calibrate(0x1234a7, 0x5000, 0x1234c2, 0x6000, &step, &stride, &why));
	assert_false(memacc_calibrate(0x1234a7, 0x5000, 0x1235c2, 0x5000, &step, &stride, &why));
	assert_false(memacc_calibrate(0x1234a7, 0x5000, 0x8000100u, 0x6000, &step, &stride, &why));
	assert_false(memacc_calibrate(0x0000a7, 0x5000, 0x1235c2, 0x6000, &step, &stride, &why));
	assert_false(memacc_calibrate(0x1234a7, 0x5000, 0x10000100u, 0x6000, &step, &stride, &why));
	assert_non_null(why);
}

static void test_order(void **state)
{
	struct memacc_model m = model(0x1234a7, 0x7f0000010000, 1, 0x6000, 2, 3);
	struct memacc_candidate c;
	(void)state;

	assert_int_equal(m.count, 2 * 3 * 256);
	/* The nearest older registration, at the predicted address, key 0 first. */
	assert_true(memacc_candidate(&m, 0, &c));
	assert_int_equal(c.rkey, 0x123300);
	assert_int_equal(c.addr, 0x7f0000010000 - 0x6000);
	assert_int_equal(c.distance, 1);
	assert_int_equal(c.variant, 0);
	assert_true(memacc_candidate(&m, 255, &c));
	assert_int_equal(c.rkey, 0x1233ff);
	assert_int_equal(c.addr, 0x7f0000010000 - 0x6000);
	/* Then one granule below, then one above. */
	assert_true(memacc_candidate(&m, 256, &c));
	assert_int_equal(c.rkey, 0x123300);
	assert_int_equal(c.addr, 0x7f0000010000 - 0x6000 - 4096);
	assert_int_equal(c.variant, -1);
	assert_true(memacc_candidate(&m, 512 + 7, &c));
	assert_int_equal(c.rkey, 0x123307);
	assert_int_equal(c.addr, 0x7f0000010000 - 0x6000 + 4096);
	assert_int_equal(c.variant, 1);
	/* Distance 2: two indices and two strides back. */
	assert_true(memacc_candidate(&m, 768, &c));
	assert_int_equal(c.rkey, 0x123200);
	assert_int_equal(c.addr, 0x7f0000010000 - 2 * 0x6000);
	assert_int_equal(c.distance, 2);
	assert_true(memacc_candidate(&m, m.count - 1, &c));
	assert_int_equal(c.rkey, 0x1232ff);
	assert_false(memacc_candidate(&m, m.count, &c));
}

static void test_every_key_once(void **state)
{
	struct memacc_model m = model(0x4242a7, 0x10000, 1, 0x2000, 1, 1);
	uint8_t seen[256] = { 0 };
	struct memacc_candidate c;
	(void)state;

	for (uint64_t k = 0; k < m.count; k++) {
		assert_true(memacc_candidate(&m, k, &c));
		assert_int_equal(c.rkey >> 8, 0x4241);
		assert_int_equal(c.addr, 0xe000);
		seen[c.rkey & 0xff]++;
	}
	for (int k = 0; k < 256; k++)
		assert_int_equal(seen[k], 1);
}

static void test_wrap_and_offset(void **state)
{
	struct memacc_candidate c;
	(void)state;

	/* Index 1 minus one wraps to the top of the MR pool. */
	struct memacc_model m = model(0x1a7, 0x3000, 1, 0x1000, 2, 1);
	assert_true(memacc_candidate(&m, 0, &c));
	assert_int_equal(c.rkey >> 8, MEMACC_MR_INDEX_MAX);
	assert_true(memacc_candidate(&m, 256, &c));
	assert_int_equal(c.rkey >> 8, MEMACC_MR_INDEX_MAX - 1);
	/* And the MW pool wraps inside itself. */
	m = model(MEMACC_MW_INDEX_MIN << 8, 0x3000, 1, 0x1000, 1, 1);
	assert_true(memacc_candidate(&m, 0, &c));
	assert_int_equal(c.rkey >> 8, MEMACC_MW_INDEX_MAX);
	/* A negative step looks upwards; a negative stride too. */
	m = model(0x1000a7, 0x9000, -1, -0x2000, 1, 1);
	assert_true(memacc_candidate(&m, 0, &c));
	assert_int_equal(c.rkey >> 8, 0x1001);
	assert_int_equal(c.addr, 0xb000);
	/* Addresses wrap instead of overflowing; the offset is added. */
	m = model(0x1000a7, 0x1000, 1, 0x2000, 1, 1);
	m.offset = 0x10;
	assert_true(memacc_candidate(&m, 0, &c));
	assert_int_equal(c.addr, (uint64_t)0 - 0x1000 + 0x10);
}

static void test_bad_models(void **state)
{
	const char *why = NULL;
	(void)state;
	struct memacc_model ok = { .own_rkey = 0x1000a7, .own_addr = 0x10000, .index_step = 1, .stride = 0x1000,
				   .distance = 1, .addr_variants = 1 };
	struct memacc_model m = ok;
	assert_true(memacc_model_init(&m, &why));
	m = ok, m.own_rkey = 0xa7; /* index 0 */
	assert_false(memacc_model_init(&m, &why));
	m = ok, m.index_step = 0;
	assert_false(memacc_model_init(&m, &why));
	m = ok, m.distance = 0;
	assert_false(memacc_model_init(&m, &why));
	m = ok, m.distance = MEMACC_MAX_DISTANCE + 1;
	assert_false(memacc_model_init(&m, &why));
	m = ok, m.addr_variants = 2;
	assert_false(memacc_model_init(&m, &why));
	m = ok, m.addr_variants = 3; /* no granule */
	assert_false(memacc_model_init(&m, &why));
	m = ok, m.addr_variants = 11, m.granule = 4096;
	assert_false(memacc_model_init(&m, &why));
	assert_non_null(why);
}

static const char LINE[] = "NAIVE qpn=000011 psn=000000 gid=00000000000000000000ffff0a4d0001 "
			   "rkey=000123a7 addr=000055d0c0de1000 len=4096";

static void test_line_parse(void **state)
{
	struct naive_line l;
	const char *why;
	char buf[256];
	(void)state;

	assert_true(naive_line_parse(LINE, strlen(LINE), &l, &why));
	assert_int_equal(l.qpn, 0x11);
	assert_int_equal(l.psn, 0);
	assert_int_equal(l.rkey, 0x123a7);
	assert_int_equal(l.addr, 0x55d0c0de1000);
	assert_int_equal(l.len, 4096);
	assert_int_equal(l.gid[10], 0xff);
	assert_int_equal(l.gid[15], 0x01);
	/* Round trip through the formatter (which adds the newline). */
	size_t n = naive_line_format(&l, buf, sizeof(buf));
	assert_int_equal(n, strlen(LINE) + 1);
	assert_memory_equal(buf, LINE, strlen(LINE));
	assert_int_equal(buf[n - 1], '\n');
	assert_int_equal(naive_line_format(&l, buf, 20), 0);
}

static void test_line_reject(void **state)
{
	struct naive_line l;
	const char *why;
	char bad[256];
	(void)state;

	/* Every strict prefix is refused. */
	for (size_t n = 0; n < strlen(LINE) - 4; n++)
		assert_false(naive_line_parse(LINE, n, &l, &why));
	/* A non-hex digit anywhere in a hex field, a short field, trailing junk, a huge length. */
	static const char *const cases[] = {
		"NAIVE qpn=00001g psn=000000 gid=00000000000000000000ffff0a4d0001 rkey=000123a7 addr=000055d0c0de1000 len=1",
		"NAIVE qpn=0011 psn=000000 gid=00000000000000000000ffff0a4d0001 rkey=000123a7 addr=000055d0c0de1000 len=1",
		"NAIVE qpn=000011 psn=000000 gid=00000000000000000000ffff0a4d00 rkey=000123a7 addr=000055d0c0de1000 len=1",
		"NAIVE qpn=000011 psn=000000 gid=00000000000000000000ffff0a4d0001 rkey=000123a7 addr=000055d0c0de1000 len=1x",
		"NAIVE qpn=000011 psn=000000 gid=00000000000000000000ffff0a4d0001 rkey=000123a7 addr=000055d0c0de1000 len=4294967296",
		"NAIVE qpn=000011 psn=000000 gid=00000000000000000000ffff0a4d0001 rkey=000123a7 addr=000055d0c0de1000 len=-1",
		"naive qpn=000011 psn=000000 gid=00000000000000000000ffff0a4d0001 rkey=000123a7 addr=000055d0c0de1000 len=1",
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_false(naive_line_parse(cases[i], strlen(cases[i]), &l, &why));
	snprintf(bad, sizeof(bad), "%s", LINE);
	bad[strlen(bad) - 4] = '\0'; /* "len=" with nothing after it */
	assert_false(naive_line_parse(bad, strlen(bad), &l, &why));
	static const char max_len[] = "NAIVE qpn=000011 psn=000000 gid=00000000000000000000ffff0a4d0001 "
				      "rkey=000123a7 addr=000055d0c0de1000 len=4294967295";
	assert_true(naive_line_parse(max_len, strlen(max_len), &l, &why));
	assert_int_equal(l.len, 4294967295u);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_calibrate),       cmocka_unit_test(test_order),
		cmocka_unit_test(test_every_key_once),  cmocka_unit_test(test_wrap_and_offset),
		cmocka_unit_test(test_bad_models),      cmocka_unit_test(test_line_parse),
		cmocka_unit_test(test_line_reject),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
