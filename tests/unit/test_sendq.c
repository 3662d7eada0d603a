/* SPDX-License-Identifier: MIT */
/*
 * Sealed frames in flight (lib/sendq): which frames ask for a completion,
 * a completion ending every frame before it, and the device's reports
 * checked against what is in flight. tests/fabric/secure_core.sh and
 * bench.sh send real frames through it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "sendq.h"

static char why[160];

/* Post one frame; returns its slot, *signaled whether it asked for a completion. */
static uint32_t post(struct rsec_sendq *q, bool *signaled)
{
	bool s;
	uint32_t slot = rsec_sendq_peek(q, &s);
	rsec_sendq_posted(q, s, false);
	if (signaled)
		*signaled = s;
	return slot;
}

static void init_bounds(void **state)
{
	(void)state;
	struct rsec_sendq q;
	assert_int_equal(rsec_sendq_init(&q, 0), RSEC_E_INVAL);
	assert_int_equal(rsec_sendq_init(&q, RSEC_SENDQ_MAX + 1), RSEC_E_INVAL);
	assert_int_equal(rsec_sendq_init(NULL, 4), RSEC_E_INVAL);
	assert_int_equal(rsec_sendq_init(&q, 1), 0);
	assert_int_equal(q.signal_every, 1);
	assert_int_equal(rsec_sendq_init(&q, RSEC_SENDQ_MAX), 0);
	assert_int_equal(q.signal_every, RSEC_SENDQ_MAX / 4);
	assert_int_equal(rsec_sendq_inflight(&q), 0);
}

/* 16 slots: every fourth frame is signaled; its completion frees all four. */
static void one_completion_per_quarter(void **state)
{
	(void)state;
	struct rsec_sendq q;
	assert_int_equal(rsec_sendq_init(&q, 16), 0);
	for (uint32_t round = 0; round < 10; round++) {
		bool s[4];
		uint32_t slot[4];
		for (int i = 0; i < 4; i++)
			slot[i] = post(&q, &s[i]);
		assert_false(s[0] || s[1] || s[2]);
		assert_true(s[3]);
		assert_int_equal(slot[0], (round * 4) % 16);
		assert_int_equal(slot[3], (round * 4 + 3) % 16);
		assert_int_equal(rsec_sendq_inflight(&q), 4);
		assert_int_equal(rsec_sendq_complete(&q, slot[3], true, why, sizeof(why)), 4);
		assert_int_equal(rsec_sendq_inflight(&q), 0);
	}
}

/* Frames posted faster than they complete: the frame that fills the ring asks for a completion. */
static void a_full_ring_always_ends_signaled(void **state)
{
	(void)state;
	struct rsec_sendq q;
	assert_int_equal(rsec_sendq_init(&q, 6), 0); /* signal_every 1: every frame */
	assert_int_equal(rsec_sendq_init(&q, 10), 0); /* signal_every 2 */
	bool s;
	for (int i = 0; i < 9; i++)
		(void)post(&q, &s);
	assert_false(s); /* the ninth: the run restarted after the eighth */
	uint32_t last = post(&q, &s);
	assert_true(s);
	assert_int_equal(rsec_sendq_inflight(&q), 10);
	/* The device completes the signaled frames in order. */
	for (uint32_t slot = 1; slot < 10; slot += 2)
		assert_int_equal(rsec_sendq_complete(&q, slot, true, why, sizeof(why)), 2);
	assert_int_equal(last, 9);
	assert_int_equal(rsec_sendq_inflight(&q), 0);

	/* 128 slots: one completion per 32 frames, the last of them when the ring fills. */
	assert_int_equal(rsec_sendq_init(&q, 128), 0);
	for (int i = 0; i < 128; i++) {
		last = post(&q, &s);
		assert_int_equal(s, i % 32 == 31);
	}
	assert_int_equal(last, 127);
	for (uint32_t slot = 31; slot < 128; slot += 32)
		assert_int_equal(rsec_sendq_complete(&q, slot, true, why, sizeof(why)), 32);
	assert_int_equal(rsec_sendq_inflight(&q), 0);

	/* 13 slots (signal every 3): frames 2, 5, 8 and 11 ask by the count; frame 12,
	 * one after a signaled one, asks because it fills the ring. */
	assert_int_equal(rsec_sendq_init(&q, 13), 0);
	for (int i = 0; i < 13; i++) {
		last = post(&q, &s);
		assert_int_equal(s, i % 3 == 2 || i == 12);
	}
	assert_int_equal(rsec_sendq_inflight(&q), 13);
	for (uint32_t slot = 2; slot < 13; slot += 3)
		assert_int_equal(rsec_sendq_complete(&q, slot, true, why, sizeof(why)), 3);
	assert_int_equal(rsec_sendq_complete(&q, last, true, why, sizeof(why)), 1);
}

/* Slots wrap around the ring; frame numbers do not. */
static void slots_wrap(void **state)
{
	(void)state;
	struct rsec_sendq q;
	assert_int_equal(rsec_sendq_init(&q, 7), 0); /* signal_every 1 */
	for (uint32_t i = 0; i < 1000; i++) {
		bool s;
		uint32_t slot = post(&q, &s);
		assert_true(s);
		assert_int_equal(slot, i % 7);
		if (i % 3 == 2) /* complete three at a time, oldest first */
			for (uint32_t k = 0; k < 3; k++)
				assert_int_equal(rsec_sendq_complete(&q, (i - 2 + k) % 7, true, why, sizeof(why)), 1);
	}
	assert_int_equal(rsec_sendq_inflight(&q), 1);
}

/* What the device reports is bounded by what is in flight. */
static void reports_checked(void **state)
{
	(void)state;
	struct rsec_sendq q;
	assert_int_equal(rsec_sendq_init(&q, 16), 0);
	/* Nothing in flight: no completion is ours. */
	assert_int_equal(rsec_sendq_complete(&q, 0, true, why, sizeof(why)), RSEC_E_VERBS);
	assert_non_null(strstr(why, "no frame in flight"));
	for (int i = 0; i < 6; i++)
		(void)post(&q, NULL); /* slots 0..5; 3 signaled */
	/* A slot past the newest, or past the ring. */
	assert_int_equal(rsec_sendq_complete(&q, 6, true, why, sizeof(why)), RSEC_E_VERBS);
	assert_int_equal(rsec_sendq_complete(&q, 16, false, why, sizeof(why)), RSEC_E_VERBS);
	assert_int_equal(rsec_sendq_complete(&q, UINT32_MAX, false, why, sizeof(why)), RSEC_E_VERBS);
	/* The success of a frame that asked for none. */
	assert_int_equal(rsec_sendq_complete(&q, 4, true, why, sizeof(why)), RSEC_E_VERBS);
	assert_non_null(strstr(why, "posted without one"));
	(void)post(&q, NULL);
	(void)post(&q, NULL); /* slot 7: signaled */
	/* Skipping slot 3's completion for slot 7's. */
	assert_int_equal(rsec_sendq_complete(&q, 7, true, why, sizeof(why)), RSEC_E_VERBS);
	assert_non_null(strstr(why, "slot 3"));
	assert_int_equal(rsec_sendq_inflight(&q), 8); /* refused reports change nothing */
	assert_int_equal(rsec_sendq_complete(&q, 3, true, why, sizeof(why)), 4);
	assert_int_equal(rsec_sendq_complete(&q, 7, true, why, sizeof(why)), 4);
	/* Completed already. */
	assert_int_equal(rsec_sendq_complete(&q, 7, true, why, sizeof(why)), RSEC_E_VERBS);
}

/* After a QP error the device flushes every frame, signaled or not, in order. */
static void flushed_frames(void **state)
{
	(void)state;
	struct rsec_sendq q;
	assert_int_equal(rsec_sendq_init(&q, 16), 0);
	for (int i = 0; i < 6; i++)
		(void)post(&q, NULL);
	/* Frames 0..1 went unreported; frame 2 failed: it ends the ones before it. */
	assert_int_equal(rsec_sendq_complete(&q, 2, false, why, sizeof(why)), 3);
	for (uint32_t slot = 3; slot < 6; slot++)
		assert_int_equal(rsec_sendq_complete(&q, slot, false, why, sizeof(why)), 1);
	assert_int_equal(rsec_sendq_inflight(&q), 0);
}

/* Post one frame, data (kept) or credit-only, asking first whether it has room. */
static bool post_kind(struct rsec_sendq *q, bool kept)
{
	if (!rsec_sendq_room(q, kept))
		return false;
	bool s;
	(void)rsec_sendq_peek(q, &s);
	rsec_sendq_posted(q, s, kept);
	return true;
}

/* Every completion asked for arrives (an unsignaled frame at the end stays in flight). */
static void complete_all(struct rsec_sendq *q)
{
	for (uint64_t f = q->done; f < q->next; f++)
		if (q->signaled[f % q->slots])
			assert_true(rsec_sendq_complete(q, (uint32_t)(f % q->slots), true, why, sizeof(why)) > 0);
}

/*
 * A data frame keeps its slot until the peer acknowledged it, completion or
 * not; it never takes the last slot a credit-only frame could have; the peer
 * acknowledges no more than was posted.
 */
static void data_frames_wait_for_the_peer(void **state)
{
	(void)state;
	struct rsec_sendq q;
	assert_int_equal(rsec_sendq_init(&q, 8), 0);
	int data = 0;
	while (post_kind(&q, true))
		data++;
	assert_int_equal(data, 7); /* one slot left to a credit-only frame */
	complete_all(&q);
	assert_false(rsec_sendq_room(&q, true)); /* completed, not acknowledged: still kept */
	assert_true(post_kind(&q, false));        /* frame 7, credit-only */
	complete_all(&q);
	assert_false(rsec_sendq_room(&q, false)); /* slot 0 holds frame 0, unacknowledged */
	for (uint64_t f = 0; f < 7; f++)
		assert_true(rsec_sendq_kept(&q, f));
	assert_false(rsec_sendq_kept(&q, 7)); /* credit-only: never sent again */
	assert_false(rsec_sendq_kept(&q, 8)); /* not posted */
	/* The peer opened frames 0..2: slots 0..2 free up, two data frames fit (the third leaves one spare). */
	assert_int_equal(rsec_sendq_ack(&q, 3), 0);
	assert_false(rsec_sendq_kept(&q, 2));
	assert_true(post_kind(&q, true));
	assert_true(post_kind(&q, true));
	assert_false(post_kind(&q, true));
	assert_true(post_kind(&q, false));
	/* It cannot acknowledge more than was posted (8 + 3 frames, 3 acknowledged). */
	assert_int_equal(rsec_sendq_ack(&q, 9), RSEC_E_PROTO);
	assert_int_equal(q.acked, 3);
	assert_int_equal(rsec_sendq_ack(&q, 8), 0);
	complete_all(&q);
	assert_true(rsec_sendq_room(&q, true));
}

/* Credit-only frames alone never wait for the peer: they never need sending again. */
static void credit_only_frames_are_not_kept(void **state)
{
	(void)state;
	struct rsec_sendq q;
	assert_int_equal(rsec_sendq_init(&q, 4), 0);
	for (int i = 0; i < 40; i++) {
		assert_true(post_kind(&q, false));
		if (rsec_sendq_inflight(&q) == 4)
			complete_all(&q);
	}
	assert_int_equal(q.acked, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(init_bounds),
		cmocka_unit_test(one_completion_per_quarter),
		cmocka_unit_test(a_full_ring_always_ends_signaled),
		cmocka_unit_test(slots_wrap),
		cmocka_unit_test(reports_checked),
		cmocka_unit_test(flushed_frames),
		cmocka_unit_test(data_frames_wait_for_the_peer),
		cmocka_unit_test(credit_only_frames_are_not_kept),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
