/* SPDX-License-Identifier: MIT */
/*
 * impersonate's sweep plan: for every target QPN, every PSN of
 * [start, start + count) modulo 2^24 is sent exactly once and nothing else
 * is; no attacker QP gets two jobs in one round; bad parameters are refused.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "impersonate/sweep_plan.h"

/* One byte per PSN (16 MiB): how often each PSN was sent to one QPN. */
static uint8_t *hits;

static int setup(void **state)
{
	(void)state;
	hits = malloc(SWEEP_PSN_SPACE);
	return hits ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	free(hits);
	return 0;
}

static void check_exact_cover(uint32_t start, uint32_t count, uint32_t qpn_first, uint32_t qpn_count,
			      uint32_t window, uint32_t qps)
{
	struct sweep_plan p;
	struct sweep_job j;
	uint64_t packets = 0;

	assert_true(sweep_plan_init(&p, start, count, qpn_first, qpn_count, window, qps));
	assert_int_equal(p.chunks, ((uint64_t)count + window - 1) / window);
	assert_int_equal(p.jobs, p.chunks * qpn_count);
	assert_int_equal(p.rounds, (p.jobs + qps - 1) / qps);
	for (uint32_t q = 0; q < qpn_count; q++) {
		memset(hits, 0, SWEEP_PSN_SPACE);
		for (uint64_t k = 0; sweep_plan_job(&p, k, &j); k++) {
			assert_true(j.qpn >= qpn_first && j.qpn < qpn_first + qpn_count);
			assert_true(j.len >= 1 && j.len <= window);
			assert_true(j.psn < SWEEP_PSN_SPACE);
			assert_int_equal(j.qp, k % qps);
			assert_int_equal(j.round, k / qps);
			assert_true(j.round < p.rounds);
			if (j.qpn != qpn_first + q)
				continue;
			for (uint32_t i = 0; i < j.len; i++)
				hits[(j.psn + i) % SWEEP_PSN_SPACE]++;
			packets += j.len;
		}
		uint64_t wrong = 0;
		for (uint64_t i = 0; i < SWEEP_PSN_SPACE; i++) {
			uint64_t off = (i + SWEEP_PSN_SPACE - start) % SWEEP_PSN_SPACE;
			wrong += hits[i] != (off < count ? 1 : 0);
		}
		assert_int_equal(wrong, 0);
	}
	assert_int_equal(packets, (uint64_t)count * qpn_count);
	assert_false(sweep_plan_job(&p, p.jobs, &j));
}

static void test_simple_range(void **state)
{
	(void)state;
	check_exact_cover(1000, 1280, 0x11, 1, 128, 4);   /* exact multiple of the window */
	check_exact_cover(1000, 1281, 0x11, 1, 128, 4);   /* one PSN left over */
	check_exact_cover(5, 1, 0x11, 1, 128, 64);        /* a single PSN */
	check_exact_cover(5, 100, 0x11, 1, 128, 64);      /* less than one window */
	check_exact_cover(0, 1000, 0x11, 1, 1, 3);        /* window of one */
}

static void test_wraps_at_2_24(void **state)
{
	(void)state;
	check_exact_cover(0xfffff0, 100, 0x11, 1, 7, 5);
	check_exact_cover(0xffffff, 2, 0x11, 1, 128, 2);
	check_exact_cover(0xffff80, 128, 0x11, 1, 128, 1); /* ends exactly at 2^24 */
}

static void test_full_space(void **state)
{
	(void)state;
	/* Every PSN once, from an arbitrary start, with a ragged last chunk. */
	check_exact_cover(0x123456, SWEEP_PSN_SPACE, 0x11, 1, 128, 64);
	check_exact_cover(0, SWEEP_PSN_SPACE, 0x11, 1, 1000, 7);
}

static void test_qpn_range(void **state)
{
	struct sweep_plan p;
	struct sweep_job j;

	(void)state;
	check_exact_cover(0xfffffe, 300, 0x11, 3, 128, 4);
	check_exact_cover(7, 50, 0xfffffd, 3, 16, 5);      /* the range ends at the last QPN */
	/* Consecutive jobs cycle through the QPNs at the same chunk. */
	assert_true(sweep_plan_init(&p, 0, 1024, 0x20, 4, 128, 64));
	for (uint64_t k = 0; k < 8; k++) {
		assert_true(sweep_plan_job(&p, k, &j));
		assert_int_equal(j.qpn, 0x20 + k % 4);
		assert_int_equal(j.psn, (k / 4) * 128);
	}
}

static void test_rejects(void **state)
{
	struct sweep_plan p;

	(void)state;
	assert_false(sweep_plan_init(&p, 0x1000000, 1, 0x11, 1, 128, 1));       /* start beyond 24 bits */
	assert_false(sweep_plan_init(&p, 0, 0, 0x11, 1, 128, 1));               /* nothing to sweep */
	assert_false(sweep_plan_init(&p, 0, SWEEP_PSN_SPACE + 1, 0x11, 1, 128, 1));
	assert_false(sweep_plan_init(&p, 0, 10, 0x1000000, 1, 128, 1));         /* QPN beyond 24 bits */
	assert_false(sweep_plan_init(&p, 0, 10, 0x11, 0, 128, 1));              /* no QPN */
	assert_false(sweep_plan_init(&p, 0, 10, 0xffffff, 2, 128, 1));          /* range past 0xFFFFFF */
	assert_false(sweep_plan_init(&p, 0, 10, 0x11, 1, 0, 1));                /* empty window */
	assert_false(sweep_plan_init(&p, 0, 10, 0x11, 1, 128, 0));              /* no QP */
	assert_true(sweep_plan_init(&p, 0xffffff, SWEEP_PSN_SPACE, 0xffffff, 1, 1, 1));
	assert_int_equal(p.jobs, SWEEP_PSN_SPACE);
}

static void test_projection(void **state)
{
	(void)state;
	/* 1000 packets in 0.5 s: 2000 pkt/s, so 2^24 PSNs take 8388.608 s. */
	assert_float_equal(sweep_projected_seconds(1000, 0.5, SWEEP_PSN_SPACE), 8388.608, 1e-6);
	assert_float_equal(sweep_projected_seconds(SWEEP_PSN_SPACE, 2.0, SWEEP_PSN_SPACE), 2.0, 1e-9);
	assert_true(sweep_projected_seconds(0, 1.0, 100) < 0);
	assert_true(sweep_projected_seconds(10, 0.0, 100) < 0);
}

/* The PSN the requester sends next says how much of a window is out, across the 2^24 wrap too. */
static void test_window_sent(void **state)
{
	(void)state;
	assert_int_equal(sweep_window_sent(1000, 128, 1000), 0);
	assert_int_equal(sweep_window_sent(1000, 128, 1064), 64);
	assert_int_equal(sweep_window_sent(1000, 128, 1128), 128);
	assert_int_equal(sweep_window_sent(0xffffc0, 128, 0xffffff), 63);
	assert_int_equal(sweep_window_sent(0xffffc0, 128, 0), 64);
	assert_int_equal(sweep_window_sent(0xffffc0, 128, 0x40), 128);
	assert_int_equal(sweep_window_sent(5, 1, 6), 1);
	/* Behind the window, past it, or nonsense: not this window's progress. */
	assert_int_equal(sweep_window_sent(1000, 128, 999), SWEEP_NOT_IN_WINDOW);
	assert_int_equal(sweep_window_sent(1000, 128, 1129), SWEEP_NOT_IN_WINDOW);
	assert_int_equal(sweep_window_sent(0xffffc0, 128, 0x41), SWEEP_NOT_IN_WINDOW);
	assert_int_equal(sweep_window_sent(0, 128, 0xffffff), SWEEP_NOT_IN_WINDOW);
	assert_int_equal(sweep_window_sent(SWEEP_PSN_SPACE, 128, 0), SWEEP_NOT_IN_WINDOW);
	assert_int_equal(sweep_window_sent(0, 128, SWEEP_PSN_SPACE + 1), SWEEP_NOT_IN_WINDOW);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_simple_range),
		cmocka_unit_test(test_wraps_at_2_24),
		cmocka_unit_test(test_full_space),
		cmocka_unit_test(test_qpn_range),
		cmocka_unit_test(test_rejects),
		cmocka_unit_test(test_projection),
		cmocka_unit_test(test_window_sent),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
