/* SPDX-License-Identifier: MIT */
/*
 * The event loops' busy-poll window (tools/common/busy_poll): off stays
 * off; short waits grow it to the maximum, never past; long waits and
 * timeouts shrink it to nothing; a client's waits poll only with one to
 * BUSY_POLL_INFLIGHT_MAX commands in flight.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "busy_poll.h"

static void off_never_polls(void **state)
{
	(void)state;
	struct busy_poll b;
	busy_poll_init(&b, 0);
	for (int i = 0; i < 10; i++)
		busy_poll_waited(&b, 1, true);
	assert_int_equal(busy_poll_window(&b), 0);
}

static void starts_without_polling(void **state)
{
	(void)state;
	struct busy_poll b;
	busy_poll_init(&b, 800);
	assert_int_equal(busy_poll_window(&b), 0);
}

static void short_waits_grow_to_the_maximum(void **state)
{
	(void)state;
	struct busy_poll b;
	busy_poll_init(&b, 800);
	uint32_t expect[] = { 100, 200, 400, 800, 800, 800 };
	for (unsigned i = 0; i < sizeof(expect) / sizeof(expect[0]); i++) {
		busy_poll_waited(&b, 800, true); /* at the maximum still counts: that window would have caught it */
		assert_int_equal(busy_poll_window(&b), expect[i]);
	}
}

static void long_waits_shrink_to_nothing(void **state)
{
	(void)state;
	struct busy_poll b;
	busy_poll_init(&b, 800);
	for (int i = 0; i < 4; i++)
		busy_poll_waited(&b, 10, true);
	assert_int_equal(busy_poll_window(&b), 800);
	busy_poll_waited(&b, 801, true);
	assert_int_equal(busy_poll_window(&b), 400);
	busy_poll_waited(&b, 5000, true);
	assert_int_equal(busy_poll_window(&b), 200);
	busy_poll_waited(&b, 100000, true);
	assert_int_equal(busy_poll_window(&b), 100);
	busy_poll_waited(&b, 100000, true);
	assert_int_equal(busy_poll_window(&b), 0);
	busy_poll_waited(&b, 100000, true);
	assert_int_equal(busy_poll_window(&b), 0);
}

static void a_timeout_shrinks_even_when_short(void **state)
{
	(void)state;
	struct busy_poll b;
	busy_poll_init(&b, 800);
	busy_poll_waited(&b, 10, true);
	busy_poll_waited(&b, 10, true);
	assert_int_equal(busy_poll_window(&b), 200);
	busy_poll_waited(&b, 0, false); /* a zero timeout's turn: no event came */
	assert_int_equal(busy_poll_window(&b), 100);
}

static void polls_only_for_a_few_in_flight(void **state)
{
	(void)state;
	struct busy_poll b;
	busy_poll_init(&b, 800);
	assert_false(busy_poll_pays(&b, 0)); /* idle */
	for (unsigned n = 1; n <= BUSY_POLL_INFLIGHT_MAX; n++)
		assert_true(busy_poll_pays(&b, n));
	assert_false(busy_poll_pays(&b, BUSY_POLL_INFLIGHT_MAX + 1));
	assert_false(busy_poll_pays(&b, 32));
	busy_poll_init(&b, 0);
	assert_false(busy_poll_pays(&b, 1)); /* off */
}

static void small_maximum_and_clamp(void **state)
{
	(void)state;
	struct busy_poll b;
	busy_poll_init(&b, 5); /* an eighth is 0: the first window is the maximum */
	busy_poll_waited(&b, 3, true);
	assert_int_equal(busy_poll_window(&b), 5);
	busy_poll_waited(&b, 6, true);
	assert_int_equal(busy_poll_window(&b), 0);
	busy_poll_init(&b, UINT32_MAX);
	assert_int_equal(b.max_us, BUSY_POLL_MAX_US);
	for (int i = 0; i < 10; i++)
		busy_poll_waited(&b, 1, true);
	assert_int_equal(busy_poll_window(&b), BUSY_POLL_MAX_US);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(off_never_polls),
		cmocka_unit_test(starts_without_polling),
		cmocka_unit_test(short_waits_grow_to_the_maximum),
		cmocka_unit_test(long_waits_shrink_to_nothing),
		cmocka_unit_test(a_timeout_shrinks_even_when_short),
		cmocka_unit_test(polls_only_for_a_few_in_flight),
		cmocka_unit_test(small_maximum_and_clamp),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
