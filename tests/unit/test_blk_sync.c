/* SPDX-License-Identifier: MIT */
/*
 * rdmasec-blk's synchronous layer (tools/blk/client/blk_sync.c) over a
 * stand-in session (the session calls are wrapped): its callers drive the
 * session in turn. A request is split into commands of io_max and all of it
 * comes back; many threads at once all finish, with their own data, while the
 * queue holds only a few commands (callers wait, the lead passes on); a
 * command's error reaches its caller; a session that ends fails every
 * request, those in flight and those after, and says why; a session nobody
 * uses is still driven (keepalives). What the leader's wait (busy-poll window,
 * sleep) finds is reaped, and a request that comes meanwhile ends the wait at
 * once. With reconnect_ms, a session that ends
 * is replaced and every request not done is sent again (no caller sees an
 * error), also while idle; when none comes back in time, everything fails
 * and the error says both why the session ended and why no new one came.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "blk_client.h"

#define FAKE_DEPTH 4u
#define FAKE_IO_MAX 8192u

/* The stand-in session: commands in flight complete on the next poll, two at a time. */
static struct {
	pthread_mutex_t mu;
	struct blk_io inflight[FAKE_DEPTH];
	unsigned n;
	unsigned polls, submits;
	unsigned violations; /* calls while another was under way, over-long commands (atomic) */
	unsigned waits, wait_misses; /* leader waits; of them, held the full 2 s (never interrupted) */
	bool only_wait_completes; /* polls complete nothing: only what a wait finds finishes */
	bool hold;         /* a poll completes only with two commands in flight; a wait lasts until interrupted */
	int fail_offset;   /* a READ of this offset completes with EIO; -1: none */
	unsigned end_after; /* the session ends after this many submits; 0: never */
	bool ended;
	unsigned opens, opens_refused; /* sessions opened; the next this many opens are refused */
	int refusal;       /* ... with this errno (ECONNREFUSED unless set) */
	struct blk_open_reply info;
} fake = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* The wrapped session calls (linked with --wrap). */
int __wrap_blk_session_open(const struct blk_client_opts *o, struct blk_session **out, char *err, size_t errlen);
void __wrap_blk_session_close(struct blk_session *s);
const struct blk_open_reply *__wrap_blk_session_info(const struct blk_session *s);
unsigned __wrap_blk_session_queues(const struct blk_session *s);
uint32_t __wrap_blk_session_io_max(const struct blk_session *s);
const char *__wrap_blk_session_error(const struct blk_session *s);
int __wrap_blk_queue_submit(struct blk_session *s, unsigned q, const struct blk_io *io);
int __wrap_blk_session_poll(struct blk_session *s, struct blk_done *d, unsigned max, int timeout_ms);
int __wrap_blk_session_wait(struct blk_session *s, struct blk_done *d, unsigned max, int extra_fd,
			    const atomic_bool *interrupt, int timeout_ms);

static uint8_t byte_at(uint64_t off)
{
	return (uint8_t)(off * 7 + (off >> 12));
}

int __wrap_blk_session_open(const struct blk_client_opts *o, struct blk_session **out, char *err, size_t errlen)
{
	(void)o;
	pthread_mutex_lock(&fake.mu);
	int rc = 0;
	if (fake.opens_refused) {
		fake.opens_refused--;
		snprintf(err, errlen, "refused");
		rc = -(fake.refusal ? fake.refusal : ECONNREFUSED);
	} else {
		fake.opens++;
		fake.ended = false;
		fake.n = 0; /* the commands of the last one were all reported */
		*out = (struct blk_session *)&fake;
	}
	pthread_mutex_unlock(&fake.mu);
	return rc;
}

void __wrap_blk_session_close(struct blk_session *s)
{
	(void)s;
}

const struct blk_open_reply *__wrap_blk_session_info(const struct blk_session *s)
{
	(void)s;
	return &fake.info;
}

unsigned __wrap_blk_session_queues(const struct blk_session *s)
{
	(void)s;
	return 1;
}

uint32_t __wrap_blk_session_io_max(const struct blk_session *s)
{
	(void)s;
	return FAKE_IO_MAX;
}

const char *__wrap_blk_session_error(const struct blk_session *s)
{
	(void)s;
	return fake.ended ? "the stand-in session ended" : "";
}

/* Only ever one caller at a time: the layer's promise to librdmasec. (Counted, not asserted: cmocka's
 * asserts belong to the test's own thread.) */
static void enter(void)
{
	if (pthread_mutex_trylock(&fake.mu) != 0) {
		__atomic_add_fetch(&fake.violations, 1, __ATOMIC_RELAXED);
		pthread_mutex_lock(&fake.mu);
	}
}

int __wrap_blk_queue_submit(struct blk_session *s, unsigned q, const struct blk_io *io)
{
	(void)s;
	enter();
	int rc = 0;
	if (q != 0 || io->length > FAKE_IO_MAX)
		fake.violations++;
	if (fake.ended)
		rc = -EIO;
	else if (fake.n == FAKE_DEPTH)
		rc = -EAGAIN;
	else {
		fake.inflight[fake.n++] = *io;
		fake.submits++;
		if (fake.end_after && fake.submits == fake.end_after)
			fake.ended = true;
	}
	pthread_mutex_unlock(&fake.mu);
	return rc;
}

/* Under fake.mu: up to two commands in flight complete, as the target would have done them. */
static unsigned complete_some(struct blk_done *d, unsigned max)
{
	unsigned n = 0;
	while (fake.n && n < max && n < 2) {
		struct blk_io io = fake.inflight[0];
		memmove(fake.inflight, fake.inflight + 1, --fake.n * sizeof(fake.inflight[0]));
		d[n] = (struct blk_done){ .cookie = io.cookie };
		if (fake.ended) {
			d[n].error = EIO;
		} else if (io.opcode == BLK_OP_READ) {
			if ((int)io.offset == fake.fail_offset)
				d[n].error = EIO;
			for (uint32_t i = 0; i < io.length; i++)
				((uint8_t *)io.buf)[i] = byte_at(io.offset + i);
		} else if (io.opcode == BLK_OP_WRITE) {
			for (uint32_t i = 0; i < io.length; i++)
				if (((uint8_t *)io.buf)[i] != byte_at(io.offset + i))
					d[n].error = EINVAL; /* what the caller wrote is not what it meant */
		}
		n++;
	}
	return n;
}

int __wrap_blk_session_poll(struct blk_session *s, struct blk_done *d, unsigned max, int timeout_ms)
{
	(void)s;
	enter();
	fake.polls++;
	if (timeout_ms != 0)
		fake.violations++;
	unsigned n = 0;
	if ((!fake.only_wait_completes && !fake.hold) || (fake.hold && fake.n >= 2) || fake.ended)
		n = complete_some(d, max);
	int rc = n ? (int)n : fake.ended ? -EIO : 0;
	pthread_mutex_unlock(&fake.mu);
	return rc;
}

/* A leader's wait: with hold, until a new request interrupts it (2 s at most: a miss); else at once,
 * with what is in flight completed if only_wait_completes. */
int __wrap_blk_session_wait(struct blk_session *s, struct blk_done *d, unsigned max, int extra_fd,
			    const atomic_bool *interrupt, int timeout_ms)
{
	(void)s;
	enter();
	fake.waits++;
	if (extra_fd < 0 || !interrupt || timeout_ms <= 0)
		fake.violations++;
	unsigned n = fake.only_wait_completes ? complete_some(d, max) : 0;
	bool hold = fake.hold;
	pthread_mutex_unlock(&fake.mu);
	for (unsigned ms = 0; hold && interrupt && !atomic_load(interrupt); ms++) {
		if (ms == 2000) {
			__atomic_add_fetch(&fake.wait_misses, 1, __ATOMIC_RELAXED);
			break;
		}
		usleep(1000);
	}
	return (int)n;
}

static int setup(void **state)
{
	(void)state;
	fake.n = fake.polls = fake.submits = fake.end_after = fake.violations = 0;
	fake.ended = false;
	fake.opens = fake.opens_refused = 0;
	fake.refusal = 0;
	fake.fail_offset = -1;
	fake.info = (struct blk_open_reply){ .size = 1u << 30, .block_size = 4096 };
	fake.waits = fake.wait_misses = 0;
	fake.only_wait_completes = fake.hold = false;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	assert_int_equal(fake.violations, 0);
	return 0;
}

static void one_request_many_commands(void **state)
{
	(void)state;
	struct blk_sync *y;
	char err[64];
	assert_int_equal(blk_sync_start(&(struct blk_client_opts){ 0 }, &y, err, sizeof(err)), 0);
	size_t len = 16 * FAKE_IO_MAX + 4096;
	uint8_t *buf = malloc(len);
	assert_non_null(buf);
	assert_int_equal(blk_sync_pread(y, buf, len, 1u << 20), 0);
	for (size_t i = 0; i < len; i++)
		assert_int_equal(buf[i], byte_at((1u << 20) + i));
	assert_int_equal(fake.submits, 17);
	assert_int_equal(blk_sync_pwrite(y, buf, len, 1u << 20, false), 0);
	assert_int_equal(blk_sync_flush(y), 0);
	assert_int_equal(fake.submits, 17 + 17 + 1);
	blk_sync_stop(y);
	free(buf);
}

struct worker {
	struct blk_sync *y;
	unsigned id, bad;
};

static void *worker_run(void *arg)
{
	struct worker *w = arg;
	uint8_t buf[3 * FAKE_IO_MAX];
	for (unsigned i = 0; i < 200; i++) {
		uint64_t off = ((uint64_t)w->id * 1000 + i) * sizeof(buf);
		size_t len = (i % 3 + 1) * FAKE_IO_MAX;
		memset(buf, 0, sizeof(buf));
		if (blk_sync_pread(w->y, buf, len, off) != 0)
			w->bad++;
		for (size_t k = 0; k < len; k++)
			if (buf[k] != byte_at(off + k)) {
				w->bad++;
				break;
			}
		if (blk_sync_pwrite(w->y, buf, len, off, i % 2) != 0)
			w->bad++;
	}
	return NULL;
}

/* n (at most 8) threads of fn on y: how many of their requests went wrong. */
static unsigned run_workers(struct blk_sync *y, unsigned n, void *(*fn)(void *))
{
	struct worker w[8];
	pthread_t th[8];
	unsigned bad = 0;
	assert_true(n <= 8);
	for (unsigned i = 0; i < n; i++) {
		w[i] = (struct worker){ .y = y, .id = i };
		assert_int_equal(pthread_create(&th[i], NULL, fn, &w[i]), 0);
	}
	for (unsigned i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		bad += w[i].bad;
	}
	return bad;
}

static void many_threads_each_get_their_own(void **state)
{
	(void)state;
	struct blk_sync *y;
	char err[64];
	assert_int_equal(blk_sync_start(&(struct blk_client_opts){ 0 }, &y, err, sizeof(err)), 0);
	assert_int_equal(run_workers(y, 8, worker_run), 0);
	assert_int_equal(fake.n, 0);
	blk_sync_stop(y);
}

static void a_command_error_reaches_its_caller(void **state)
{
	(void)state;
	struct blk_sync *y;
	char err[64];
	assert_int_equal(blk_sync_start(&(struct blk_client_opts){ 0 }, &y, err, sizeof(err)), 0);
	fake.fail_offset = 3 * FAKE_IO_MAX;
	uint8_t buf[4 * FAKE_IO_MAX];
	assert_int_equal(blk_sync_pread(y, buf, sizeof(buf), 0), -EIO);
	assert_int_equal(fake.n, 0); /* the rest of the request still completed before it returned */
	assert_int_equal(blk_sync_pread(y, buf, FAKE_IO_MAX, 0), 0);
	char why[64];
	blk_sync_error(y, why, sizeof(why));
	assert_string_equal(why, ""); /* the session lives on */
	blk_sync_stop(y);
}

static void *reader(void *arg)
{
	struct worker *w = arg;
	uint8_t buf[2 * FAKE_IO_MAX];
	for (unsigned i = 0; i < 100; i++)
		if (blk_sync_pread(w->y, buf, sizeof(buf), (uint64_t)i * sizeof(buf)) != 0)
			w->bad++;
	return NULL;
}

static void a_session_that_ends_fails_everyone(void **state)
{
	(void)state;
	struct blk_sync *y;
	char err[64];
	assert_int_equal(blk_sync_start(&(struct blk_client_opts){ 0 }, &y, err, sizeof(err)), 0);
	fake.end_after = 50;
	unsigned failed = run_workers(y, 4, reader);
	/* 400 requests of 2 commands; the session took 50 commands: at least 375 requests failed. */
	assert_true(failed >= 375);
	uint8_t buf[FAKE_IO_MAX];
	assert_int_equal(blk_sync_pread(y, buf, sizeof(buf), 0), -EIO);
	char why[64];
	blk_sync_error(y, why, sizeof(why));
	assert_string_equal(why, "the stand-in session ended");
	blk_sync_stop(y);
}

static void an_idle_session_is_driven(void **state)
{
	(void)state;
	struct blk_sync *y;
	char err[64];
	assert_int_equal(blk_sync_start(&(struct blk_client_opts){ 0 }, &y, err, sizeof(err)), 0);
	usleep(2500 * 1000);
	pthread_mutex_lock(&fake.mu);
	unsigned polls = fake.polls;
	pthread_mutex_unlock(&fake.mu);
	assert_in_range(polls, 1, 3);
	blk_sync_stop(y);
}

static void reconnect_sends_again(void **state)
{
	(void)state;
	struct blk_sync *y;
	char err[64], why[64];
	assert_int_equal(blk_sync_start(&(struct blk_client_opts){ .reconnect_ms = 5000 }, &y, err, sizeof(err)), 0);
	fake.end_after = 50;
	fake.opens_refused = 3; /* the target is back on the fourth try */
	/* Each read its own data, each write what it meant, no error. */
	assert_int_equal(run_workers(y, 4, worker_run), 0);
	assert_int_equal(blk_sync_reconnects(y, why, sizeof(why)), 1);
	assert_string_equal(why, "the stand-in session ended");
	assert_int_equal(fake.opens, 2);
	blk_sync_error(y, why, sizeof(why));
	assert_string_equal(why, "");
	blk_sync_stop(y);
}

static void reconnect_gives_up_after_its_time(void **state)
{
	(void)state;
	struct blk_sync *y;
	char err[64], why[200];
	assert_int_equal(blk_sync_start(&(struct blk_client_opts){ .reconnect_ms = 300 }, &y, err, sizeof(err)), 0);
	fake.end_after = 3;
	fake.opens_refused = 1000;
	uint8_t buf[4 * FAKE_IO_MAX];
	assert_int_equal(blk_sync_pread(y, buf, sizeof(buf), 0), -EIO);
	assert_int_equal(blk_sync_pread(y, buf, FAKE_IO_MAX, 0), -EIO);
	assert_in_range(fake.opens_refused, 995, 998); /* 100, 200 ms apart: 3 or 4 tries in 300 ms */
	blk_sync_error(y, why, sizeof(why));
	assert_string_equal(why, "the stand-in session ended; no new session within 300 ms (refused)");
	blk_sync_stop(y);
}

/* A refusal no retry changes ends the trying at once, whatever time is left. */
static void reconnect_stops_at_a_refusal_for_good(void **state)
{
	(void)state;
	struct blk_sync *y;
	char err[64], why[200];
	assert_int_equal(blk_sync_start(&(struct blk_client_opts){ .reconnect_ms = 60000 }, &y, err, sizeof(err)), 0);
	fake.end_after = 1;
	fake.opens_refused = 1000;
	fake.refusal = EACCES;
	uint8_t buf[FAKE_IO_MAX];
	assert_int_equal(blk_sync_pread(y, buf, sizeof(buf), 0), -EIO);
	assert_int_equal(fake.opens_refused, 999);
	blk_sync_error(y, why, sizeof(why));
	assert_string_equal(why, "the stand-in session ended; a new session was refused (refused)");
	blk_sync_stop(y);
}

/* Without reconnect, the request the session's end failed says why at once (not only after the next poll). */
static void the_first_failure_says_why(void **state)
{
	(void)state;
	struct blk_sync *y;
	char err[64], why[64];
	assert_int_equal(blk_sync_start(&(struct blk_client_opts){ 0 }, &y, err, sizeof(err)), 0);
	fake.end_after = 1;
	uint8_t buf[FAKE_IO_MAX];
	assert_int_equal(blk_sync_pread(y, buf, sizeof(buf), 0), -EIO);
	blk_sync_error(y, why, sizeof(why));
	assert_string_equal(why, "the stand-in session ended");
	blk_sync_stop(y);
}

static void an_idle_session_that_ends_is_replaced(void **state)
{
	(void)state;
	struct blk_sync *y;
	char err[64], why[64];
	assert_int_equal(blk_sync_start(&(struct blk_client_opts){ .reconnect_ms = 5000 }, &y, err, sizeof(err)), 0);
	pthread_mutex_lock(&fake.mu);
	fake.ended = true;
	pthread_mutex_unlock(&fake.mu);
	usleep(2500 * 1000);
	assert_int_equal(blk_sync_reconnects(y, why, sizeof(why)), 1);
	uint8_t buf[FAKE_IO_MAX];
	assert_int_equal(blk_sync_pread(y, buf, sizeof(buf), 0), 0);
	blk_sync_stop(y);
}

/* What a leader's wait polled up is reaped: with polls that complete nothing, every request still ends. */
static void what_a_wait_finds_is_reaped(void **state)
{
	(void)state;
	struct blk_sync *y;
	char err[64];
	assert_int_equal(blk_sync_start(&(struct blk_client_opts){ 0 }, &y, err, sizeof(err)), 0);
	fake.only_wait_completes = true;
	assert_int_equal(run_workers(y, 4, worker_run), 0);
	assert_int_equal(fake.n, 0);
	assert_true(fake.waits > 0);
	blk_sync_stop(y);
}

static void *one_read(void *arg)
{
	struct worker *w = arg;
	uint8_t buf[FAKE_IO_MAX];
	if (blk_sync_pread(w->y, buf, sizeof(buf), (uint64_t)w->id * sizeof(buf)) != 0)
		w->bad++;
	return NULL;
}

/* A request that comes while the leader waits (its busy-poll window, its sleep) ends the wait at once:
 * here the first request completes only once the second is in flight too. */
static void a_new_request_ends_the_leaders_wait(void **state)
{
	(void)state;
	struct blk_sync *y;
	char err[64];
	assert_int_equal(blk_sync_start(&(struct blk_client_opts){ 0 }, &y, err, sizeof(err)), 0);
	fake.hold = true;
	struct worker w[2] = { { .y = y, .id = 1 }, { .y = y, .id = 2 } };
	pthread_t th[2];
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(pthread_create(&th[0], NULL, one_read, &w[0]), 0);
	usleep(100 * 1000); /* the first leads and waits */
	assert_int_equal(pthread_create(&th[1], NULL, one_read, &w[1]), 0);
	for (unsigned i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(w[i].bad, 0);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_int_equal(fake.wait_misses, 0);
	assert_true(fake.waits > 0);
	assert_true((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 < 1500);
	blk_sync_stop(y);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(one_request_many_commands, setup, teardown),
		cmocka_unit_test_setup_teardown(many_threads_each_get_their_own, setup, teardown),
		cmocka_unit_test_setup_teardown(a_command_error_reaches_its_caller, setup, teardown),
		cmocka_unit_test_setup_teardown(a_session_that_ends_fails_everyone, setup, teardown),
		cmocka_unit_test_setup_teardown(an_idle_session_is_driven, setup, teardown),
		cmocka_unit_test_setup_teardown(reconnect_sends_again, setup, teardown),
		cmocka_unit_test_setup_teardown(reconnect_gives_up_after_its_time, setup, teardown),
		cmocka_unit_test_setup_teardown(an_idle_session_that_ends_is_replaced, setup, teardown),
		cmocka_unit_test_setup_teardown(reconnect_stops_at_a_refusal_for_good, setup, teardown),
		cmocka_unit_test_setup_teardown(the_first_failure_says_why, setup, teardown),
		cmocka_unit_test_setup_teardown(what_a_wait_finds_is_reaped, setup, teardown),
		cmocka_unit_test_setup_teardown(a_new_request_ends_the_leaders_wait, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
