/* SPDX-License-Identifier: MIT */
/*
 * The pure parts of QPN randomization: the pool's uniform index choice
 * (lib/qpool.c) and the guess-rank and entropy arithmetic of the benchmark
 * (lib/qpn_entropy.c). The pool itself runs on real rxe in
 * tests/fabric/qpn_entropy.sh.
 */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "qpn_entropy.h"
#include "qpool.h"

/* Every draw of a small range, for every n: each index from the same number of draws, the rest rejected. */
static void uniform_accept_is_exact(void **state)
{
	(void)state;
	const uint64_t range = 256;

	for (uint32_t n = 1; n <= range; n++) {
		uint32_t hits[256] = { 0 };
		uint32_t rejected = 0;

		for (uint64_t r = 0; r < range; r++) {
			uint32_t idx = UINT32_MAX;

			if (rsec_uniform_accept(r, range, n, &idx)) {
				assert_true(idx < n);
				hits[idx]++;
			} else {
				rejected++;
			}
		}
		assert_int_equal(rejected, range % n);
		for (uint32_t i = 0; i < n; i++)
			assert_int_equal(hits[i], range / n);
	}
}

/* The production range, 2^32: the rejected tail is exactly 2^32 mod n, at the top. */
static void uniform_accept_full_range(void **state)
{
	(void)state;
	const uint64_t range = UINT64_C(1) << 32;
	uint32_t idx;

	/* 2^32 mod 3 = 1: only the largest draw goes. */
	assert_false(rsec_uniform_accept(UINT32_MAX, range, 3, &idx));
	assert_true(rsec_uniform_accept(UINT32_MAX - 1, range, 3, &idx));
	assert_int_equal(idx, (UINT32_MAX - 1) % 3);
	/* Powers of two divide 2^32: nothing is rejected. */
	assert_true(rsec_uniform_accept(UINT32_MAX, range, 32, &idx));
	assert_int_equal(idx, 31);
	assert_true(rsec_uniform_accept(0, range, 1, &idx));
	assert_int_equal(idx, 0);
	/* 2^32 mod 1000 = 296. */
	assert_false(rsec_uniform_accept(range - 296, range, 1000, &idx));
	assert_true(rsec_uniform_accept(range - 297, range, 1000, &idx));
	assert_int_equal(idx, (range - 297) % 1000);
	for (uint32_t n = 1; n < 5000; n += 7) {
		uint64_t cut = range - range % n;

		assert_int_equal(cut % n, 0);
		assert_true(rsec_uniform_accept(cut - 1, range, n, &idx));
		assert_int_equal(idx, n - 1);
		if (cut < range)
			assert_false(rsec_uniform_accept(cut, range, n, &idx));
	}
	/* Nothing is below 0, and a range smaller than n cannot serve it. */
	assert_false(rsec_uniform_accept(0, range, 0, &idx));
	assert_false(rsec_uniform_accept(0, 4, 5, &idx));
}

/* RAND_bytes through the rejection: every index shows up, none beyond n, no visible bias. */
static void random_index_is_uniform(void **state)
{
	(void)state;
	enum { N = 5, DRAWS = 50000 };
	uint32_t hits[N] = { 0 }, idx, seen32 = 0;

	for (int i = 0; i < DRAWS; i++) {
		assert_int_equal(rsec_random_index(N, &idx), 0);
		assert_true(idx < N);
		hits[idx]++;
	}
	/*
	 * Chi-square with 4 degrees of freedom. The exactness of the rejection
	 * is proven above; this catches gross faults (a slot never or doubly
	 * drawn gives chi in the thousands). 60 is exceeded by chance with
	 * probability e^-30 * 31 < 3e-12; the 0.1% value (18.47) did fail a
	 * clean-clone run.
	 */
	double chi = 0, expect = (double)DRAWS / N;
	for (int i = 0; i < N; i++)
		chi += (hits[i] - expect) * (hits[i] - expect) / expect;
	assert_true(chi < 60.0);

	/* All 32 slots of a default pool are reachable. */
	for (int i = 0; i < 20000 && seen32 != UINT32_MAX; i++) {
		assert_int_equal(rsec_random_index(32, &idx), 0);
		assert_true(idx < 32);
		seen32 |= 1u << idx;
	}
	assert_int_equal(seen32, UINT32_MAX);
	assert_int_equal(rsec_random_index(1, &idx), 0);
	assert_int_equal(idx, 0);
	assert_int_equal(rsec_random_index(0, &idx), RSEC_E_INVAL);
	assert_int_equal(rsec_random_index(3, NULL), RSEC_E_INVAL);
}

static void pool_size_defaults(void **state)
{
	(void)state;
	assert_int_equal(rsec_qpool_size(false, 7, true), RSEC_QPOOL_DEFAULT);
	assert_int_equal(rsec_qpool_size(true, 0, true), RSEC_QPOOL_DEFAULT);
	assert_int_equal(rsec_qpool_size(false, 7, false), RSEC_QPOOL_DEFAULT_CLIENT);
	assert_int_equal(rsec_qpool_size(true, 0, false), RSEC_QPOOL_DEFAULT_CLIENT);
	assert_int_equal(rsec_qpool_size(true, 1, true), 1);
	assert_int_equal(rsec_qpool_size(true, 1024, false), 1024);
	assert_int_equal(RSEC_QPOOL_DEFAULT, 32);
	assert_int_equal(RSEC_QPOOL_DEFAULT_CLIENT, 4);
}

/* Without a device, a pool cannot be made; bad sizes are refused before anything is allocated. */
static void pool_new_rejects(void **state)
{
	(void)state;
	struct rsec_qpool *p = (struct rsec_qpool *)1;
	struct rsec_qpool_opts o = { .size = 32, .send_wr = 8, .recv_wr = 8 };

	assert_int_equal(rsec_qpool_new(NULL, &o, &p), RSEC_E_INVAL);
	rsec_qpool_free(NULL);
}

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
		cmocka_unit_test(uniform_accept_is_exact),
		cmocka_unit_test(uniform_accept_full_range),
		cmocka_unit_test(random_index_is_uniform),
		cmocka_unit_test(pool_size_defaults),
		cmocka_unit_test(pool_new_rejects),
		cmocka_unit_test(guess_rank_order),
		cmocka_unit_test(summary_figures),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
