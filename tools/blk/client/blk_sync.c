/* SPDX-License-Identifier: MIT */
/*
 * The synchronous layer: any number of threads call pread/pwrite/flush, and
 * the callers drive the session themselves, one at a time (librdmasec wants
 * one thread at a time per session; the mutex hands it over). A caller whose
 * request is not done becomes the leader if there is none: it submits every
 * caller's commands, reaps every completion, wakes the callers whose requests
 * are done, waits for the session when nothing is ready (polling its completions
 * for its busy-poll window, then asleep on its fds), and hands the
 * lead to a waiting caller once its own request is done. A lone caller does
 * its I/O with no hand-off at all. A housekeeping thread drives an idle
 * session (nobody leading) once a second: keepalives, rekeys, the target's
 * control messages. When a session ends, whoever drives it opens new ones for
 * up to reconnect_ms and sends again every request not done (a READ or WRITE
 * of the same blocks is idempotent; a FLUSH flushes what the target holds):
 * the callers see nothing of it unless no session comes back in time.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "blk_client.h"
#include "clock.h"

#define DONE_BATCH 64u
#define LEAD_WAIT_MS 100 /* the leader's longest sleep: command deadlines are checked at least this often */
#define IDLE_TICK_MS 1000 /* housekeeping of a session nobody leads */
#define RECONNECT_BACKOFF_MS 100u /* between tries to open a session again: doubled each time, up to a second */

struct sreq {
	uint8_t opcode;
	uint16_t flags;
	uint8_t *buf;
	size_t len;
	uint64_t off;
	size_t sent;      /* bytes handed to commands so far */
	bool all_sent;    /* off the active list */
	bool lost;        /* a command of it went down with its session: sent again on the next */
	unsigned pending; /* its commands in flight */
	int error;        /* the first, negative errno */
	bool done;
	pthread_cond_t cv; /* its caller waits on it: to see it done, or to lead */
	struct sreq *next; /* on the incoming list, then the active list */
	struct sreq *wnext; /* on the list of requests not done */
};

struct blk_sync {
	struct blk_session *s;
	struct blk_client_opts opts; /* to open the next one */
	struct blk_open_reply info;
	uint32_t io_max; /* the first session's: the others' has the same bounds */
	pthread_mutex_t mu; /* everything below; the session, for whoever leads */
	pthread_t keeper;
	pthread_cond_t keeper_cv;
	int efd;                        /* wakes a leader asleep on the session's fds: a new request */
	atomic_bool kicked;             /* efd was written (once per wait): the leader's window ends too */
	bool leading, leader_waiting;
	struct sreq *in_head, *in_tail; /* handed over, not yet taken by a leader */
	struct sreq *act_head, *act_tail; /* taken, not all sent */
	struct sreq *waiting;           /* every request not done: one of them leads next */
	unsigned next_queue;
	uint64_t driven_ms;             /* when the session was last driven */
	bool stop, dead;
	char error[600]; /* why the session ended, and what the reconnects ran into */
	unsigned reconnects;
	char lost_why[256]; /* why the last session that was replaced ended */
};

/* Under mu: r's caller may return. */
static void finish(struct blk_sync *y, struct sreq *r)
{
	r->done = true;
	for (struct sreq **p = &y->waiting; *p; p = &(*p)->wnext)
		if (*p == r) {
			*p = r->wnext;
			break;
		}
	pthread_cond_signal(&r->cv);
}

static void take_incoming(struct blk_sync *y)
{
	if (!y->in_head)
		return;
	if (y->act_tail)
		y->act_tail->next = y->in_head;
	else
		y->act_head = y->in_head;
	y->act_tail = y->in_tail;
	y->in_head = y->in_tail = NULL;
}

static void pop_active(struct blk_sync *y)
{
	struct sreq *r = y->act_head;
	y->act_head = r->next;
	if (!y->act_head)
		y->act_tail = NULL;
	r->next = NULL;
	r->all_sent = true;
	if (r->pending == 0)
		finish(y, r);
}

/* The next command of r on some queue with room: 0, -EAGAIN (none has), or the error that ends r. */
static int submit_next(struct blk_sync *y, struct sreq *r)
{
	uint32_t io_max = blk_session_io_max(y->s);
	size_t left = r->len - r->sent;
	struct blk_io io = { .opcode = r->opcode, .flags = r->flags, .cookie = (uintptr_t)r };
	if (r->opcode != BLK_OP_FLUSH) {
		io.offset = r->off + r->sent;
		io.length = (uint32_t)(left < io_max ? left : io_max);
		io.buf = r->buf + r->sent;
	}
	unsigned nq = blk_session_queues(y->s);
	for (unsigned i = 0; i < nq; i++) {
		unsigned q = (y->next_queue + i) % nq;
		int rc = blk_queue_submit(y->s, q, &io);
		if (rc == -EAGAIN)
			continue;
		if (rc < 0)
			return rc;
		y->next_queue = (q + 1) % nq;
		r->pending++;
		r->sent += io.length;
		return 0;
	}
	return -EAGAIN;
}

/* Send what the queues take (a completion makes room for the rest). */
static void submit_active(struct blk_sync *y)
{
	while (y->act_head) {
		struct sreq *r = y->act_head;
		int rc = submit_next(y, r);
		if (rc == -EAGAIN)
			return;
		/* The session ended: the poll says so next, and what is left goes out on the next one. */
		if ((rc == -EIO || rc == -ENOTCONN) && y->opts.reconnect_ms)
			return;
		if (rc < 0 && !r->error)
			r->error = rc;
		if (rc < 0 || r->sent == r->len)
			pop_active(y);
	}
}

static void reap(struct blk_sync *y, const struct blk_done *d, int n)
{
	/* The commands a session that ended drops come back with EIO: sent again on the next one. */
	bool ended = y->opts.reconnect_ms && *blk_session_error(y->s);
	for (int i = 0; i < n; i++) {
		struct sreq *r = (struct sreq *)(uintptr_t)d[i].cookie;
		r->pending--;
		if (ended && d[i].error == EIO)
			r->lost = true;
		else if (d[i].error && !r->error)
			r->error = -d[i].error;
		if (r->all_sent && r->pending == 0 && !r->lost)
			finish(y, r);
	}
}

/* Under mu: the session is over. Every request, now and later, fails with EIO. */
static void session_ended(struct blk_sync *y)
{
	y->dead = true;
	if (!y->error[0])
		snprintf(y->error, sizeof(y->error), "%s", y->s && *blk_session_error(y->s) ? blk_session_error(y->s) : "stopped");
	take_incoming(y);
	y->act_head = y->act_tail = NULL;
	while (y->waiting) {
		struct sreq *r = y->waiting;
		r->error = r->error ? r->error : -EIO;
		finish(y, r);
	}
}

/* Under mu: every request not done goes out again, whole, on the new session. */
static void send_again(struct blk_sync *y)
{
	y->in_head = y->in_tail = NULL;
	y->act_head = y->act_tail = NULL;
	for (struct sreq *r = y->waiting; r; r = r->wnext) {
		r->sent = 0;
		r->pending = 0;
		r->all_sent = r->lost = false;
		r->next = NULL;
		if (y->act_tail)
			y->act_tail->next = r;
		else
			y->act_head = r;
		y->act_tail = r;
	}
}

/* A refusal no retry changes: this identity may not, or the export is gone or read-only now. */
static bool refused_for_good(int rc)
{
	return rc == -EACCES || rc == -ENOENT || rc == -EROFS || rc == -EPROTONOSUPPORT;
}

/* Under mu, leading, the session over: open new ones (mu released meanwhile) until one comes,
 * reconnect_ms ran out or the target refused for good. Whether one came. */
static bool reconnect(struct blk_sync *y)
{
	uint64_t deadline = clock_coarse_ms() + y->opts.reconnect_ms;
	unsigned backoff = RECONNECT_BACKOFF_MS;
	char err[256] = "";
	snprintf(y->lost_why, sizeof(y->lost_why), "%s", blk_session_error(y->s));
	blk_session_close(y->s);
	y->s = NULL;
	while (!y->stop) {
		struct blk_session *s = NULL;
		pthread_mutex_unlock(&y->mu);
		int rc = blk_session_open(&y->opts, &s, err, sizeof(err));
		pthread_mutex_lock(&y->mu);
		if (rc == 0) {
			const struct blk_open_reply *now = blk_session_info(s);
			if (now->size == y->info.size && now->block_size == y->info.block_size) {
				y->s = s;
				y->reconnects++;
				send_again(y);
				return true;
			}
			snprintf(err, sizeof(err), "the export came back with another size or block size");
			blk_session_close(s);
			break;
		}
		if (refused_for_good(rc)) {
			snprintf(y->error, sizeof(y->error), "%s; a new session was refused (%s)", y->lost_why, err);
			return false;
		}
		if (clock_coarse_ms() + backoff >= deadline)
			break;
		pthread_mutex_unlock(&y->mu);
		usleep(backoff * 1000u);
		pthread_mutex_lock(&y->mu);
		backoff = backoff * 2 < 1000 ? backoff * 2 : 1000;
	}
	snprintf(y->error, sizeof(y->error), "%s; no new session within %u ms (%s)", y->lost_why,
		 y->opts.reconnect_ms, err[0] ? err : "stopped");
	return false;
}

/* Under mu, leading: submit, reap, wake. Whether anything completed. */
static bool drive(struct blk_sync *y)
{
	struct blk_done d[DONE_BATCH];
	take_incoming(y);
	submit_active(y);
	int n = blk_session_poll(y->s, d, DONE_BATCH, 0);
	y->driven_ms = clock_coarse_ms();
	if (n < 0) {
		if (!y->opts.reconnect_ms || !reconnect(y))
			session_ended(y);
		return true;
	}
	reap(y, d, n);
	return n > 0;
}

/*
 * Under mu, leading: wait (mu released) for the session (its busy-poll window, then its fds) or a
 * new request; reap what the window found.
 */
static void leader_wait(struct blk_sync *y)
{
	struct blk_done d[DONE_BATCH];
	y->leader_waiting = true;
	pthread_mutex_unlock(&y->mu);
	int n = blk_session_wait(y->s, d, DONE_BATCH, y->efd, &y->kicked, LEAD_WAIT_MS);
	pthread_mutex_lock(&y->mu);
	y->leader_waiting = false;
	if (atomic_load_explicit(&y->kicked, memory_order_relaxed)) {
		uint64_t v;
		(void)!read(y->efd, &v, sizeof(v));
		atomic_store_explicit(&y->kicked, false, memory_order_relaxed);
	}
	if (n > 0)
		reap(y, d, n);
}

/* Under mu: lead until r is done, then hand the lead to a caller still waiting. */
static void lead(struct blk_sync *y, struct sreq *r)
{
	y->leading = true;
	while (!r->done && !y->dead)
		if (!drive(y) && !r->done && !y->dead && !y->in_head)
			leader_wait(y);
	y->leading = false;
	if (y->waiting)
		pthread_cond_signal(&y->waiting->cv);
}

static int run(struct blk_sync *y, struct sreq *r)
{
	pthread_cond_init(&r->cv, NULL);
	pthread_mutex_lock(&y->mu);
	if (y->dead || y->stop) {
		pthread_mutex_unlock(&y->mu);
		pthread_cond_destroy(&r->cv);
		return -EIO;
	}
	if (y->in_tail)
		y->in_tail->next = r;
	else
		y->in_head = r;
	y->in_tail = r;
	r->wnext = y->waiting;
	y->waiting = r;
	if (y->leader_waiting && !atomic_load_explicit(&y->kicked, memory_order_relaxed)) {
		uint64_t one = 1;
		atomic_store_explicit(&y->kicked, true, memory_order_relaxed); /* ends its busy-poll window */
		(void)!write(y->efd, &one, sizeof(one)); /* and its sleep */
	}
	while (!r->done) {
		if (!y->leading)
			lead(y, r);
		else
			pthread_cond_wait(&r->cv, &y->mu);
	}
	pthread_mutex_unlock(&y->mu);
	pthread_cond_destroy(&r->cv);
	return r->error;
}

/* A session nobody leads is driven once a second: keepalives, rekeys, what the target sends. */
static void *keeper(void *arg)
{
	struct blk_sync *y = arg;
	pthread_mutex_lock(&y->mu);
	while (!y->stop) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += IDLE_TICK_MS / 1000;
		(void)pthread_cond_timedwait(&y->keeper_cv, &y->mu, &ts);
		if (!y->stop && !y->dead && !y->leading && clock_coarse_ms() - y->driven_ms >= IDLE_TICK_MS / 2) {
			y->leading = true; /* a reconnect releases mu: nobody else may drive meanwhile */
			(void)drive(y);
			y->leading = false;
			if (y->waiting)
				pthread_cond_signal(&y->waiting->cv);
		}
	}
	pthread_mutex_unlock(&y->mu);
	return NULL;
}

int blk_sync_start(const struct blk_client_opts *o, struct blk_sync **out, char *err, size_t errlen)
{
	struct blk_sync *y = calloc(1, sizeof(*y));
	if (!y)
		return -ENOMEM;
	y->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	int rc = y->efd < 0 ? -errno : blk_session_open(o, &y->s, err, errlen);
	if (rc == 0) {
		y->opts = *o;
		y->info = *blk_session_info(y->s);
		y->io_max = blk_session_io_max(y->s);
		y->driven_ms = clock_coarse_ms();
		pthread_mutex_init(&y->mu, NULL);
		pthread_cond_init(&y->keeper_cv, NULL);
		rc = -pthread_create(&y->keeper, NULL, keeper, y);
		if (rc < 0) {
			pthread_cond_destroy(&y->keeper_cv);
			pthread_mutex_destroy(&y->mu);
			blk_session_close(y->s);
		}
	}
	if (rc < 0) {
		if (y->efd >= 0)
			close(y->efd);
		free(y);
		return rc;
	}
	*out = y;
	return 0;
}

void blk_sync_stop(struct blk_sync *y)
{
	if (!y)
		return;
	pthread_mutex_lock(&y->mu);
	y->stop = true;
	pthread_cond_signal(&y->keeper_cv);
	pthread_mutex_unlock(&y->mu);
	pthread_join(y->keeper, NULL);
	/* No request is under way (the caller's promise): nobody leads, the session is ours. */
	if (y->s)
		blk_session_close(y->s);
	close(y->efd);
	pthread_cond_destroy(&y->keeper_cv);
	pthread_mutex_destroy(&y->mu);
	free(y);
}

const struct blk_open_reply *blk_sync_info(const struct blk_sync *y)
{
	return &y->info; /* a copy made at the start */
}

uint32_t blk_sync_io_max(const struct blk_sync *y)
{
	return y->io_max;
}

void blk_sync_error(struct blk_sync *y, char *out, size_t cap)
{
	pthread_mutex_lock(&y->mu);
	/* A request can fail with the session's end before the next poll marks the layer dead: its reason. */
	snprintf(out, cap, "%s", y->error[0] || !y->s ? y->error : blk_session_error(y->s));
	pthread_mutex_unlock(&y->mu);
}

unsigned blk_sync_reconnects(struct blk_sync *y, char *why, size_t cap)
{
	pthread_mutex_lock(&y->mu);
	unsigned n = y->reconnects;
	snprintf(why, cap, "%s", y->lost_why);
	pthread_mutex_unlock(&y->mu);
	return n;
}

int blk_sync_pread(struct blk_sync *y, void *buf, size_t len, uint64_t offset)
{
	struct sreq r = { .opcode = BLK_OP_READ, .buf = buf, .len = len, .off = offset };
	return len ? run(y, &r) : 0;
}

int blk_sync_pwrite(struct blk_sync *y, const void *buf, size_t len, uint64_t offset, bool fua)
{
	/* Only read from a WRITE's buffer. */
	struct sreq r = { .opcode = BLK_OP_WRITE, .flags = fua ? BLK_CMD_FUA : 0, .buf = (uint8_t *)(uintptr_t)buf,
			  .len = len, .off = offset };
	return len ? run(y, &r) : 0;
}

int blk_sync_flush(struct blk_sync *y)
{
	struct sreq r = { .opcode = BLK_OP_FLUSH };
	return run(y, &r);
}
