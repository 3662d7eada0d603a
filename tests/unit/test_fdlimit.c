/* SPDX-License-Identifier: MIT */
/*
 * File descriptors (tools/daemon/fdlimit): the soft limit goes up to the
 * hard one; the count follows opens and closes; the gate pauses accepting
 * before the reserve is touched, and after EMFILE waits instead of spinning.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <sys/resource.h>
#include <unistd.h>
#include <cmocka.h>

#include "fdlimit.h"

static void raises_the_soft_limit(void **state)
{
	(void)state;
	struct rlimit before;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &before), 0);
	/* Lower it first, so there is something to raise. */
	struct rlimit low = { .rlim_cur = 256, .rlim_max = before.rlim_max };
	if (before.rlim_max != RLIM_INFINITY && before.rlim_max < 256)
		low.rlim_cur = before.rlim_max;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	uint64_t soft = 0, hard = 0;
	assert_int_equal(fdlimit_raise(&soft, &hard), 0);
	struct rlimit now;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &now), 0);
	assert_int_equal(soft, now.rlim_cur);
	if (before.rlim_max == RLIM_INFINITY) {
		assert_int_equal(hard, UINT64_MAX);
		assert_true(soft > 256);
	} else {
		assert_int_equal(hard, before.rlim_max);
		assert_int_equal(soft, before.rlim_max);
	}
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &before), 0);
}

static void counts_open_fds(void **state)
{
	(void)state;
	long n = fdlimit_count_open();
	assert_true(n >= 3);
	int p[2];
	assert_int_equal(pipe(p), 0);
	assert_int_equal(fdlimit_count_open(), n + 2);
	close(p[0]);
	close(p[1]);
	assert_int_equal(fdlimit_count_open(), n);
	assert_true(fdlimit_exhausted_errno(EMFILE));
	assert_true(fdlimit_exhausted_errno(ENFILE));
	assert_false(fdlimit_exhausted_errno(EAGAIN));
	assert_int_equal(fdlimit_reserve(32, 0), FDLIMIT_SPARE);
	assert_int_equal(fdlimit_reserve(32, 2), FDLIMIT_SPARE + 2 * (FDLIMIT_PER_DEVICE + 32));
	assert_int_equal(fdlimit_capacity(1024, 100, 100), (1024 - 200) / FDLIMIT_PER_CONN);
	assert_int_equal(fdlimit_capacity(1024, 1000, 100), 0);
	assert_int_equal(fdlimit_capacity(1024, 2000, 0), 0);
	assert_int_equal(fdlimit_capacity(UINT64_MAX, 0, UINT64_MAX), 0);
}

static void gate_pauses_before_the_reserve(void **state)
{
	(void)state;
	struct fdlimit_gate g;
	fdlimit_gate_init(&g, 1000, 100);
	uint64_t t = 1000000;
	assert_false(fdlimit_gate_update(&g, 10, t));
	assert_false(g.paused);
	/* One more handshake would still leave the reserve. */
	assert_false(fdlimit_gate_update(&g, 1000 - 100 - FDLIMIT_PER_HANDSHAKE, t));
	assert_true(fdlimit_gate_update(&g, 1000 - 100 - FDLIMIT_PER_HANDSHAKE + 1, t));
	assert_true(g.paused);
	assert_false(fdlimit_gate_update(&g, 5000, t)); /* still paused: no change */
	/* Resumes only with slack, so one ended session does not make it flap. */
	assert_false(fdlimit_gate_update(&g, 1000 - 100 - FDLIMIT_PER_HANDSHAKE - 1, t));
	assert_true(fdlimit_gate_update(&g, 1000 - 100 - FDLIMIT_PER_HANDSHAKE - FDLIMIT_SLACK, t));
	assert_false(g.paused);
}

static void gate_waits_after_emfile(void **state)
{
	(void)state;
	struct fdlimit_gate g;
	fdlimit_gate_init(&g, 1000, 100);
	uint64_t t = 1000000;
	/* The count said there was room, the kernel said no: pause, and do not trust the count at once. */
	assert_true(fdlimit_gate_exhausted(&g, 500, t));
	assert_false(fdlimit_gate_exhausted(&g, 500, t));
	assert_false(fdlimit_gate_update(&g, 500, t + 1));
	assert_false(fdlimit_gate_update(&g, 500 - FDLIMIT_SLACK + 1, t + FDLIMIT_RETRY_MS - 1));
	/* Sessions ended: enough fds freed. */
	assert_true(fdlimit_gate_update(&g, 500 - FDLIMIT_SLACK, t + 2));
	/* Or time passed: one retry a second at most. */
	assert_true(fdlimit_gate_exhausted(&g, 500, t + 10));
	assert_false(fdlimit_gate_update(&g, 500, t + 10 + FDLIMIT_RETRY_MS - 1));
	assert_true(fdlimit_gate_update(&g, 500, t + 10 + FDLIMIT_RETRY_MS));
	assert_false(g.paused);
	/* The reserve still holds after a retry. */
	assert_true(fdlimit_gate_exhausted(&g, 950, t + 20));
	assert_false(fdlimit_gate_update(&g, 950, t + 20 + 10 * FDLIMIT_RETRY_MS));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(raises_the_soft_limit),
		cmocka_unit_test(counts_open_fds),
		cmocka_unit_test(gate_pauses_before_the_reserve),
		cmocka_unit_test(gate_waits_after_emfile),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
