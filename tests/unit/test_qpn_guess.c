/* SPDX-License-Identifier: MIT */
/*
 * The guess-rank and entropy arithmetic of the QPN benchmark
 * (benchmarks/qpn_guess.c, used by benchmarks/qpn_entropy.c).
 */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "qpn_guess.h"

static void guess_rank_order(void **state)
{
	(void)state;
	/* q+1, q-1, q+2, q-2, ... */
	assert_int_equal(rsec_qpn_guess_rank(100, 101), 1);
	assert_int_equal(rsec_qpn_guess_rank(100, 99), 2);
	assert_int_equal(rsec_qpn_guess_rank(100, 102), 3);
	assert_int_equal(rsec_qpn_guess_rank(100, 98), 4);
	assert_int_equal(rsec_qpn_guess_rank(100, 105), 9);
	assert_int_equal(rsec_qpn_guess_rank(100, 95), 10);
	assert_int_equal(rsec_qpn_guess_rank(100, 100), 0);
	/* Around the 24-bit circle. */
	assert_int_equal(rsec_qpn_guess_rank(0xffffff, 0), 1);
	assert_int_equal(rsec_qpn_guess_rank(0, 0xffffff), 2);
	assert_int_equal(rsec_qpn_guess_rank(0xfffffe, 0x000001), 5);
	/* The far side: 2^23 above is as far as it gets. */
	assert_int_equal(rsec_qpn_guess_rank(0, 0x7fffff), 2 * 0x7fffff - 1);
	assert_int_equal(rsec_qpn_guess_rank(0, 0x800000), 2 * 0x800000);
	/* Each rank 1..64 is reached from exactly one target. */
	uint64_t seen = 0;
	for (uint32_t t = 1000 - 40; t <= 1000 + 40; t++) {
		uint32_t r = rsec_qpn_guess_rank(1000, t);
		if (r >= 1 && r <= 64) {
			assert_false(seen & (UINT64_C(1) << (r - 1)));
			seen |= UINT64_C(1) << (r - 1);
		}
	}
	assert_true(seen == UINT64_MAX);
}

static void summary_figures(void **state)
{
	(void)state;
	struct rsec_qpn_summary s;

	/* A sequential allocator: always the first guess, no entropy. */
	uint32_t seq[5] = { 1, 1, 1, 1, 1 };
	assert_int_equal(rsec_qpn_summarize(seq, 5, &s), 0);
	assert_int_equal(s.trials, 5);
	assert_true(s.mean == 1.0 && s.median == 1.0 && s.within1 == 1.0 && s.within16 == 1.0);
	assert_true(s.bits == 0.0);

	/* Uniform over 64 targets: mean 32.5, exactly 6 bits. */
	uint32_t uni[64];
	for (uint32_t i = 0; i < 64; i++)
		uni[i] = 64 - i;
	assert_int_equal(rsec_qpn_summarize(uni, 64, &s), 0);
	assert_true(fabs(s.mean - 32.5) < 1e-9);
	assert_true(fabs(s.bits - 6.0) < 1e-9);
	assert_true(fabs(s.median - 32.5) < 1e-9);
	assert_true(fabs(s.within1 - 1.0 / 64) < 1e-9);
	assert_true(fabs(s.within16 - 0.25) < 1e-9);
	assert_int_equal(uni[0], 1); /* sorted in place */

	uint32_t odd[3] = { 40, 2, 9 };
	assert_int_equal(rsec_qpn_summarize(odd, 3, &s), 0);
	assert_true(s.median == 9.0);
	assert_true(fabs(s.mean - 17.0) < 1e-9);
	assert_true(fabs(s.bits - log2(33.0)) < 1e-9);
	assert_true(fabs(s.within16 - 2.0 / 3) < 1e-9);

	assert_true(rsec_qpn_bits(1.0) == 0.0);
	assert_true(fabs(rsec_qpn_bits(8.5) - 4.0) < 1e-9);
	/* Nothing to summarize, or a rank 0 (the attacker's own QPN): refused. */
	assert_int_equal(rsec_qpn_summarize(seq, 0, &s), RSEC_E_INVAL);
	uint32_t zero[2] = { 3, 0 };
	assert_int_equal(rsec_qpn_summarize(zero, 2, &s), RSEC_E_INVAL);
	assert_int_equal(rsec_qpn_summarize(NULL, 2, &s), RSEC_E_INVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(guess_rank_order),
		cmocka_unit_test(summary_figures),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
