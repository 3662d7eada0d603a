/* SPDX-License-Identifier: MIT */
/*
 * Rate-limited logging (tools/daemon/ratelog): at most N lines a window,
 * every other event counted per kind and summarised once the window is
 * over; nothing summarised twice, nothing left out.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "ratelog.h"

#define T0 5000000u

struct sink {
	int n;
	char what[16][RATELOG_KIND_MAX];
	uint64_t count[16], window[16];
};

static void collect(void *arg, const char *what, uint64_t count, uint64_t window_ms)
{
	struct sink *s = arg;
	assert_true(s->n < 16);
	snprintf(s->what[s->n], RATELOG_KIND_MAX, "%s", what);
	s->count[s->n] = count;
	s->window[s->n] = window_ms;
	s->n++;
}

static uint64_t summarised(const struct sink *s, const char *what)
{
	uint64_t n = 0;
	for (int i = 0; i < s->n; i++)
		if (strcmp(s->what[i], what) == 0)
			n += s->count[i];
	return n;
}

static void limits_lines_and_summarises(void **state)
{
	(void)state;
	struct sink s = { 0 };
	struct ratelog *r = ratelog_new(3, collect, &s);
	assert_non_null(r);
	int logged = 0;
	for (int i = 0; i < 10; i++)
		logged += ratelog_allow(r, "refused", T0 + (uint64_t)i);
	for (int i = 0; i < 4; i++)
		logged += ratelog_allow(r, "handshake_failed", T0 + 10);
	assert_int_equal(logged, 3);
	assert_int_equal(ratelog_suppressed_total(r), 11);
	/* Not before the window is over. */
	ratelog_tick(r, T0 + RATELOG_WINDOW_MS - 1);
	assert_int_equal(s.n, 0);
	ratelog_tick(r, T0 + RATELOG_WINDOW_MS);
	assert_int_equal(s.n, 2);
	assert_string_equal(s.what[0], "refused");
	assert_int_equal(s.count[0], 7);
	assert_string_equal(s.what[1], "handshake_failed");
	assert_int_equal(s.count[1], 4);
	assert_int_equal(s.window[0], RATELOG_WINDOW_MS);
	/* Once only; a quiet window says nothing. */
	ratelog_tick(r, T0 + 5 * RATELOG_WINDOW_MS);
	assert_int_equal(s.n, 2);
	/* A new window has a new budget. */
	assert_true(ratelog_allow(r, "refused", T0 + 6 * RATELOG_WINDOW_MS));
	ratelog_free(r);
}

static void an_event_rolls_the_window_too(void **state)
{
	(void)state;
	struct sink s = { 0 };
	struct ratelog *r = ratelog_new(1, collect, &s);
	assert_true(ratelog_allow(r, "refused", T0));
	assert_false(ratelog_allow(r, "refused", T0 + 1));
	/* No tick came: the next event still brings the summary first, then its own line. */
	assert_true(ratelog_allow(r, "refused", T0 + 1500));
	assert_int_equal(s.n, 1);
	assert_int_equal(s.count[0], 1);
	assert_int_equal(s.window[0], 1500);
	assert_false(ratelog_allow(r, "refused", T0 + 1501));
	/* Shutdown flushes what is pending. */
	ratelog_flush(r, T0 + 1600);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.count[1], 1);
	ratelog_flush(r, T0 + 1700);
	assert_int_equal(s.n, 2);
	ratelog_free(r);
}

static void every_event_is_counted(void **state)
{
	(void)state;
	struct sink s = { 0 };
	struct ratelog *r = ratelog_new(5, collect, &s);
	char kind[RATELOG_KINDS + 3][16];
	uint64_t logged = 0, events = 0;
	/* More kinds than slots: the extra ones share "other"; none is lost. kind0 and kind1 fit the
	 * budget and take no slot, so kind2..kind9 get the slots. */
	for (int k = 0; k < RATELOG_KINDS + 3; k++) {
		snprintf(kind[k], sizeof(kind[k]), "kind%d", k);
		for (int i = 0; i <= k; i++, events++)
			logged += ratelog_allow(r, kind[k], T0 + 10);
	}
	logged += ratelog_allow(r, "", T0 + 10);
	logged += ratelog_allow(r, NULL, T0 + 10);
	events += 2;
	ratelog_flush(r, T0 + 20);
	uint64_t total = 0;
	for (int i = 0; i < s.n; i++)
		total += s.count[i];
	assert_int_equal(logged, 5);
	assert_int_equal(total, events - logged);
	assert_int_equal(ratelog_suppressed_total(r), events - logged);
	assert_int_equal(summarised(&s, "kind1"), 0);
	assert_int_equal(summarised(&s, "kind2"), 1);
	assert_int_equal(summarised(&s, "kind9"), 10);
	assert_int_equal(summarised(&s, "kind10"), 0); /* counted under other */
	assert_int_equal(summarised(&s, "other"), 11 + 2);
	ratelog_free(r);
	assert_null(ratelog_new(0, collect, &s));
	assert_true(ratelog_allow(NULL, "refused", T0));
	ratelog_tick(NULL, T0);
	ratelog_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(limits_lines_and_summarises),
		cmocka_unit_test(an_event_rolls_the_window_too),
		cmocka_unit_test(every_event_is_counted),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
