/* SPDX-License-Identifier: MIT */
/*
 * The pure parts of QPN randomization: the pool's uniform index choice
 * (lib/qpool.c). The pool itself runs on real rxe in
 * tests/fabric/qpn_entropy.sh; the benchmark's arithmetic is test_qpn_guess.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(uniform_accept_is_exact),
		cmocka_unit_test(uniform_accept_full_range),
		cmocka_unit_test(random_index_is_uniform),
		cmocka_unit_test(pool_size_defaults),
		cmocka_unit_test(pool_new_rejects),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
