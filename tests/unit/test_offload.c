/* SPDX-License-Identifier: MIT */
/*
 * Worker threads with fair queues (tools/daemon/offload): a key with many
 * queued jobs cannot hold back another key's job, the job limit holds, every
 * job comes back exactly once (run, or unrun after offload_stop), and the
 * eventfd says when one is waiting.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "offload.h"

#define JOBS 64

struct log {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool open;       /* the gate the first job waits at */
	int order[JOBS]; /* ids in the order they ran */
	int n;
};

struct item {
	struct log *log;
	int id;
	bool ran;
};

static void run(void *arg)
{
	struct item *it = arg;
	struct log *l = it->log;
	pthread_mutex_lock(&l->lock);
	while (!l->open)
		pthread_cond_wait(&l->cond, &l->lock);
	l->order[l->n++] = it->id;
	it->ran = true;
	pthread_mutex_unlock(&l->lock);
}

static void open_gate(struct log *l)
{
	pthread_mutex_lock(&l->lock);
	l->open = true;
	pthread_cond_broadcast(&l->cond);
	pthread_mutex_unlock(&l->lock);
}

static bool readable(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	return poll(&p, 1, timeout_ms) == 1;
}

/* Takes n done jobs back, waiting on the eventfd as the event loop does. */
static int take(struct offload *o, int n)
{
	int got = 0;
	while (got < n && readable(offload_fd(o), 5000))
		while (got < n && offload_take_done(o))
			got++;
	return got;
}

static void a_flood_does_not_hold_back_another_key(void **state)
{
	(void)state;
	struct log l = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
	struct item it[JOBS];
	struct offload *o = offload_new(1, JOBS);
	assert_non_null(o);
	/* 50 jobs of one source, then one of another, while the first runs. */
	for (int i = 0; i < 50; i++) {
		it[i] = (struct item){ .log = &l, .id = i };
		assert_int_equal(offload_submit(o, "10.77.0.3", run, &it[i]), 0);
	}
	it[50] = (struct item){ .log = &l, .id = 50 };
	assert_int_equal(offload_submit(o, "10.77.0.2", run, &it[50]), 0);
	assert_int_equal(offload_pending(o), 51);
	open_gate(&l);
	assert_int_equal(take(o, 51), 51);
	assert_int_equal(l.n, 51);
	/* The worker was at job 0 (or had taken it); the newcomer runs next but one at the latest. */
	int pos = -1;
	for (int i = 0; i < l.n; i++)
		if (l.order[i] == 50)
			pos = i;
	assert_in_range(pos, 0, 2);
	/* Each key's own jobs keep their order. */
	for (int i = 0, last = -1; i < l.n; i++) {
		if (l.order[i] == 50)
			continue;
		assert_true(l.order[i] > last);
		last = l.order[i];
	}
	assert_null(offload_take_done(o));
	assert_false(readable(offload_fd(o), 0));
	assert_int_equal(offload_pending(o), 0);
	offload_free(o);
}

static void the_job_limit_holds(void **state)
{
	(void)state;
	struct log l = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
	struct item it[5];
	struct offload *o = offload_new(2, 4);
	assert_non_null(o);
	for (int i = 0; i < 5; i++)
		it[i] = (struct item){ .log = &l, .id = i };
	for (int i = 0; i < 4; i++)
		assert_int_equal(offload_submit(o, i % 2 ? "a" : "b", run, &it[i]), 0);
	assert_int_equal(offload_submit(o, "c", run, &it[4]), -EAGAIN);
	open_gate(&l);
	/* Done but not taken still counts: the event loop has not got them back. */
	assert_true(readable(offload_fd(o), 5000));
	assert_int_equal(take(o, 4), 4);
	assert_int_equal(offload_submit(o, "c", run, &it[4]), 0);
	assert_int_equal(take(o, 1), 1);
	assert_true(it[4].ran);
	offload_free(o);
}

static void stop_hands_back_what_did_not_run(void **state)
{
	(void)state;
	struct log l = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
	struct item it[10];
	struct offload *o = offload_new(1, 10);
	assert_non_null(o);
	for (int i = 0; i < 10; i++) {
		it[i] = (struct item){ .log = &l, .id = i };
		assert_int_equal(offload_submit(o, "k", run, &it[i]), 0);
	}
	open_gate(&l);
	offload_stop(o);
	assert_int_equal(offload_submit(o, "k", run, &it[0]), -EINVAL);
	bool back[10] = { false };
	struct item *p;
	int n = 0;
	while ((p = offload_take_done(o))) {
		assert_false(back[p->id]);
		back[p->id] = true;
		n++;
	}
	assert_int_equal(n, 10);
	for (int i = 0; i < 10; i++)
		assert_true(back[i]);
	offload_stop(o); /* idempotent */
	offload_free(o);
}

static void a_queued_job_can_be_taken_back(void **state)
{
	(void)state;
	struct log l = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
	struct item it[4];
	struct offload *o = offload_new(1, 4);
	assert_non_null(o);
	for (int i = 0; i < 4; i++) {
		it[i] = (struct item){ .log = &l, .id = i };
		assert_int_equal(offload_submit(o, i < 3 ? "flood" : "other", run, &it[i]), 0);
	}
	/* Job 0 may be running (held at the gate): it cannot be taken back once a worker has it. */
	assert_true(offload_cancel(o, "flood", &it[2]));
	assert_false(offload_cancel(o, "flood", &it[2]));  /* once */
	assert_false(offload_cancel(o, "other", &it[1]));  /* under its own key only */
	assert_true(offload_cancel(o, "other", &it[3]));   /* the last of its key: the key goes */
	assert_int_equal(offload_pending(o), 2);
	open_gate(&l);
	assert_int_equal(take(o, 2), 2);
	assert_false(it[2].ran);
	assert_false(it[3].ran);
	assert_true(it[0].ran && it[1].ran);
	assert_null(offload_take_done(o));
	/* A new job of a dropped key queues as before. */
	assert_int_equal(offload_submit(o, "other", run, &it[3]), 0);
	assert_int_equal(take(o, 1), 1);
	assert_true(it[3].ran);
	offload_free(o);
}

static void bad_arguments(void **state)
{
	(void)state;
	assert_null(offload_new(0, 1));
	assert_null(offload_new(OFFLOAD_THREADS_MAX + 1, 1));
	assert_null(offload_new(1, 0));
	struct offload *o = offload_new(1, 1);
	assert_non_null(o);
	assert_int_equal(offload_submit(o, NULL, run, NULL), -EINVAL);
	assert_int_equal(offload_submit(o, "k", NULL, NULL), -EINVAL);
	offload_free(o);
	offload_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_flood_does_not_hold_back_another_key),
		cmocka_unit_test(the_job_limit_holds),
		cmocka_unit_test(stop_hands_back_what_did_not_run),
		cmocka_unit_test(a_queued_job_can_be_taken_back),
		cmocka_unit_test(bad_arguments),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
