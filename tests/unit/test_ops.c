/* SPDX-License-Identifier: MIT */
/*
 * One-sided operations in flight (lib/ops): slots in posting order, which
 * ones are signaled, completions matched against what is in flight (an RC
 * send queue completes in order, so one completion ends every unsignaled
 * operation before it), what the application is told, and the bound on
 * memory when it does not poll. tests/fabric/async.sh runs the real thing.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "ops.h"

/* What release saw, in order. */
static struct {
	int n;
	uintptr_t owner[64];
	int status[64];
} released;

static void release(void *arg, struct rsec_op_slot *s, int status)
{
	assert_ptr_equal(arg, &released);
	released.owner[released.n] = (uintptr_t)s->owner;
	released.status[released.n] = status;
	released.n++;
}

static int setup(void **state)
{
	(void)state;
	memset(&released, 0, sizeof(released));
	return 0;
}

static uint32_t push(struct rsec_ops *o, uint64_t id, enum rsec_op_reporting rep)
{
	struct rsec_op_slot s = {
		.user_id = id, .op = id % 2 ? RSEC_OP_READ : RSEC_OP_WRITE, .len = (uint32_t)(100 + id),
		.reporting = rep, .owner = (void *)(uintptr_t)(0x1000 + id),
	};
	return rsec_ops_push(o, &s);
}

static int complete(struct rsec_ops *o, uint32_t idx, int status)
{
	char why[160] = "";
	int rc = rsec_ops_complete(o, idx, status, release, &released, why, sizeof(why));
	if (rc < 0)
		assert_true(why[0] != '\0');
	return rc;
}

static void test_init_bounds(void **state)
{
	(void)state;
	struct rsec_ops o;
	assert_int_equal(rsec_ops_init(&o, 0), RSEC_E_INVAL);
	assert_int_equal(rsec_ops_init(&o, RSEC_MAX_INFLIGHT + 1), RSEC_E_INVAL);
	assert_int_equal(rsec_ops_init(&o, RSEC_MAX_INFLIGHT), 0);
	assert_int_equal(rsec_ops_room(&o), RSEC_MAX_INFLIGHT);
	rsec_ops_free(&o);
	rsec_ops_free(&o); /* zeroed: safe again */
}

static void test_reported_in_order(void **state)
{
	(void)state;
	struct rsec_ops o;
	assert_int_equal(rsec_ops_init(&o, 8), 0);
	for (uint64_t id = 1; id <= 3; id++)
		assert_int_equal(push(&o, id, RSEC_OP_REPORT), id - 1);
	assert_true(o.ring[0].signaled && o.ring[1].signaled && o.ring[2].signaled);
	assert_int_equal(rsec_ops_room(&o), 5);
	assert_int_equal(complete(&o, 0, 0), 0);
	assert_int_equal(complete(&o, 1, RSEC_E_QP), 0);
	struct rsec_wc wc[4];
	assert_int_equal(rsec_ops_take(&o, wc, 4), 2);
	assert_int_equal(wc[0].user_id, 1);
	assert_int_equal(wc[0].op, RSEC_OP_READ);
	assert_int_equal(wc[0].status, 0);
	assert_int_equal(wc[0].len, 101);
	assert_int_equal(wc[1].user_id, 2);
	assert_int_equal(wc[1].status, RSEC_E_QP);
	assert_int_equal(wc[1].len, 0); /* nothing transferred that we can vouch for */
	assert_int_equal(released.n, 2);
	assert_int_equal(released.owner[0], 0x1001);
	assert_int_equal(released.status[1], RSEC_E_QP);
	assert_int_equal(rsec_ops_pending(&o), 1);
	rsec_ops_free(&o);
}

/* Unsignaled runs are cut at half the depth; one completion ends the run before it, silently. */
static void test_selective_signalling(void **state)
{
	(void)state;
	struct rsec_ops o;
	assert_int_equal(rsec_ops_init(&o, 8), 0);
	for (uint64_t id = 0; id < 4; id++)
		push(&o, id, RSEC_OP_SILENT);
	assert_false(o.ring[0].signaled || o.ring[1].signaled || o.ring[2].signaled);
	assert_true(o.ring[3].signaled);
	/* The device may not report success of an unsignaled slot, nor skip a signaled one. */
	assert_int_equal(complete(&o, 1, 0), RSEC_E_VERBS);
	push(&o, 4, RSEC_OP_REPORT);
	assert_int_equal(complete(&o, 4, 0), RSEC_E_VERBS);
	assert_int_equal(released.n, 0);
	assert_int_equal(complete(&o, 3, 0), 0);
	assert_int_equal(released.n, 4);
	struct rsec_wc wc[8];
	assert_int_equal(rsec_ops_take(&o, wc, 8), 0); /* nobody asked */
	assert_int_equal(complete(&o, 4, 0), 0);
	assert_int_equal(rsec_ops_take(&o, wc, 8), 1);
	assert_int_equal(wc[0].user_id, 4);
	assert_int_equal(rsec_ops_pending(&o), 0);
	rsec_ops_free(&o);
}

/* An unsignaled operation's failure comes with a completion of its own, and is reported. */
static void test_unsignaled_failure_reported(void **state)
{
	(void)state;
	struct rsec_ops o;
	assert_int_equal(rsec_ops_init(&o, 16), 0);
	push(&o, 7, RSEC_OP_SILENT);
	push(&o, 8, RSEC_OP_SILENT);
	assert_int_equal(complete(&o, 1, RSEC_E_QP), 0);
	struct rsec_wc wc[2];
	assert_int_equal(rsec_ops_take(&o, wc, 2), 1);
	assert_int_equal(wc[0].user_id, 8);
	assert_int_equal(wc[0].status, RSEC_E_QP);
	assert_int_equal(released.status[0], 0); /* slot 0 completed before it */
	rsec_ops_free(&o);
}

/* A failed signaled slot: the unsignaled ones before it completed (RC order), it did not. */
static void test_error_after_unsignaled(void **state)
{
	(void)state;
	struct rsec_ops o;
	assert_int_equal(rsec_ops_init(&o, 16), 0);
	push(&o, 1, RSEC_OP_SILENT);
	push(&o, 2, RSEC_OP_SILENT);
	uint32_t idx = push(&o, 3, RSEC_OP_REPORT);
	assert_int_equal(complete(&o, idx, RSEC_E_QP), 0);
	assert_int_equal(released.n, 3);
	assert_int_equal(released.status[0], 0);
	assert_int_equal(released.status[1], 0);
	assert_int_equal(released.status[2], RSEC_E_QP);
	struct rsec_wc wc[4];
	assert_int_equal(rsec_ops_take(&o, wc, 4), 1);
	assert_int_equal(wc[0].user_id, 3);
	assert_int_equal(wc[0].status, RSEC_E_QP);
	rsec_ops_free(&o);
}

/* After the connection failed, a flushed slot ends itself and everything before it with the close code. */
static void test_flush_through(void **state)
{
	(void)state;
	struct rsec_ops o;
	assert_int_equal(rsec_ops_init(&o, 8), 0);
	push(&o, 1, RSEC_OP_REPORT);
	push(&o, 2, RSEC_OP_SILENT);
	uint32_t idx = push(&o, 3, RSEC_OP_SILENT);
	push(&o, 4, RSEC_OP_REPORT);
	assert_false(rsec_ops_flush_through(&o, 7, RSEC_E_QP, release, &released)); /* not in flight */
	assert_int_equal(released.n, 0);
	assert_true(rsec_ops_flush_through(&o, idx, RSEC_E_QP, release, &released));
	assert_int_equal(released.n, 3);
	for (int i = 0; i < 3; i++)
		assert_int_equal(released.status[i], RSEC_E_QP);
	assert_int_equal(rsec_ops_pending(&o), 4); /* 3 reported (failures are), 1 in flight */
	struct rsec_wc wc[4];
	assert_int_equal(rsec_ops_take(&o, wc, 4), 3);
	assert_int_equal(wc[1].user_id, 2);
	assert_int_equal(wc[1].status, RSEC_E_QP);
	assert_false(rsec_ops_flush_through(&o, idx, RSEC_E_QP, release, &released)); /* once only */
	rsec_ops_flush(&o, RSEC_E_QP, release, &released);
	assert_int_equal(rsec_ops_take(&o, wc, 4), 1);
	assert_int_equal(wc[0].user_id, 4);
	rsec_ops_free(&o);
}

/*
 * A blocking call's transfer in pieces: the pieces are unsignaled and never
 * reported to the application; the waiter learns the outcome from the last
 * piece, and a piece that failed leaves its error to the flushed last one.
 */
static void test_pieces(void **state)
{
	(void)state;
	struct rsec_ops o;
	assert_int_equal(rsec_ops_init(&o, 16), 0);
	uint32_t app = push(&o, 1, RSEC_OP_REPORT);
	uint32_t first = push(&o, 2, RSEC_OP_PIECE);
	push(&o, 3, RSEC_OP_PIECE);
	uint32_t last = push(&o, 4, RSEC_OP_WAITER);
	assert_false(o.ring[first].signaled);
	assert_true(o.ring[last].signaled);
	assert_int_equal(complete(&o, app, 0), 0);
	assert_int_equal(complete(&o, first, 0), RSEC_E_VERBS); /* unsignaled: no success of its own */
	o.waiter_done = false;
	assert_int_equal(complete(&o, last, 0), 0);
	assert_true(o.waiter_done);
	assert_int_equal(o.waiter_status, 0);
	assert_int_equal(released.n, 4);
	struct rsec_wc wc[4];
	assert_int_equal(rsec_ops_take(&o, wc, 4), 1); /* the application's own, not the pieces */
	assert_int_equal(wc[0].user_id, 1);

	first = push(&o, 5, RSEC_OP_PIECE);
	last = push(&o, 6, RSEC_OP_WAITER);
	o.waiter_done = false;
	assert_int_equal(complete(&o, first, RSEC_E_QP), 0);
	assert_false(o.waiter_done);
	assert_int_equal(rsec_ops_take(&o, wc, 4), 0);
	assert_true(rsec_ops_flush_through(&o, last, RSEC_E_QP, release, &released));
	assert_true(o.waiter_done);
	assert_int_equal(o.waiter_status, RSEC_E_QP);
	assert_int_equal(rsec_ops_take(&o, wc, 4), 0);
	assert_int_equal(rsec_ops_pending(&o), 0);
	rsec_ops_free(&o);
}

static void test_not_in_flight(void **state)
{
	(void)state;
	struct rsec_ops o;
	assert_int_equal(rsec_ops_init(&o, 4), 0);
	assert_int_equal(complete(&o, 0, 0), RSEC_E_VERBS);
	push(&o, 1, RSEC_OP_REPORT);
	assert_int_equal(complete(&o, 1, 0), RSEC_E_VERBS);
	assert_int_equal(complete(&o, 4, 0), RSEC_E_VERBS);
	assert_int_equal(complete(&o, UINT32_MAX, 0), RSEC_E_VERBS);
	assert_int_equal(complete(&o, 0, 0), 0);
	assert_int_equal(complete(&o, 0, 0), RSEC_E_VERBS); /* twice */
	rsec_ops_free(&o);
}

/* Completions not taken count against the depth: a caller that never polls is refused, memory stays bounded. */
static void test_room_counts_untaken(void **state)
{
	(void)state;
	struct rsec_ops o;
	assert_int_equal(rsec_ops_init(&o, 4), 0);
	for (uint32_t round = 0; round < 4; round++) {
		uint32_t idx = push(&o, round, RSEC_OP_REPORT);
		assert_int_equal(complete(&o, idx, 0), 0);
	}
	assert_int_equal(rsec_ops_room(&o), 0);
	struct rsec_wc wc[4];
	assert_int_equal(rsec_ops_take(&o, wc, 1), 1);
	assert_int_equal(rsec_ops_room(&o), 1);
	/* The last slot before the rings fill is signaled even if unsignaled was asked. */
	uint32_t idx = push(&o, 9, RSEC_OP_SILENT);
	assert_true(o.ring[idx].signaled);
	assert_int_equal(rsec_ops_take(&o, wc, 4), 3);
	assert_int_equal(wc[0].user_id, 1);
	assert_int_equal(wc[2].user_id, 3);
	rsec_ops_free(&o);
}

static void test_wraparound(void **state)
{
	(void)state;
	struct rsec_ops o;
	assert_int_equal(rsec_ops_init(&o, 3), 0);
	struct rsec_wc wc[3];
	for (uint64_t id = 0; id < 20; id++) {
		uint32_t idx = push(&o, id, RSEC_OP_REPORT);
		assert_int_equal(idx, id % 3);
		assert_int_equal(complete(&o, idx, 0), 0);
		assert_int_equal(rsec_ops_take(&o, wc, 3), 1);
		assert_int_equal(wc[0].user_id, id);
	}
	rsec_ops_free(&o);
}

static void test_flush_and_waiter(void **state)
{
	(void)state;
	struct rsec_ops o;
	assert_int_equal(rsec_ops_init(&o, 8), 0);
	push(&o, 1, RSEC_OP_REPORT);
	push(&o, 2, RSEC_OP_WAITER);
	push(&o, 3, RSEC_OP_SILENT);
	assert_false(o.waiter_done);
	rsec_ops_flush(&o, RSEC_E_CLOSED, release, &released);
	assert_true(o.waiter_done);
	assert_int_equal(o.waiter_status, RSEC_E_CLOSED);
	assert_int_equal(released.n, 3);
	struct rsec_wc wc[4];
	/* The application's operation and the silent one's failure; the waiter's is the waiter's. */
	assert_int_equal(rsec_ops_take(&o, wc, 4), 2);
	assert_int_equal(wc[0].user_id, 1);
	assert_int_equal(wc[0].status, RSEC_E_CLOSED);
	assert_int_equal(wc[1].user_id, 3);
	assert_int_equal(rsec_ops_pending(&o), 0);
	assert_int_equal(rsec_ops_room(&o), 8);
	rsec_ops_free(&o);
}

static void test_unpush(void **state)
{
	(void)state;
	struct rsec_ops o;
	assert_int_equal(rsec_ops_init(&o, 8), 0);
	push(&o, 1, RSEC_OP_SILENT);
	push(&o, 2, RSEC_OP_SILENT);
	rsec_ops_unpush(&o);
	assert_int_equal(rsec_ops_pending(&o), 1);
	/* Never posted: the next one is signaled, so the one left in flight still completes. */
	uint32_t idx = push(&o, 3, RSEC_OP_SILENT);
	assert_int_equal(idx, 1);
	assert_true(o.ring[idx].signaled);
	assert_int_equal(complete(&o, idx, 0), 0);
	assert_int_equal(released.n, 2);
	rsec_ops_free(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_init_bounds, setup),
		cmocka_unit_test_setup(test_reported_in_order, setup),
		cmocka_unit_test_setup(test_selective_signalling, setup),
		cmocka_unit_test_setup(test_unsignaled_failure_reported, setup),
		cmocka_unit_test_setup(test_error_after_unsignaled, setup),
		cmocka_unit_test_setup(test_flush_through, setup),
		cmocka_unit_test_setup(test_pieces, setup),
		cmocka_unit_test_setup(test_not_in_flight, setup),
		cmocka_unit_test_setup(test_room_counts_untaken, setup),
		cmocka_unit_test_setup(test_wraparound, setup),
		cmocka_unit_test_setup(test_flush_and_waiter, setup),
		cmocka_unit_test_setup(test_unpush, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
