/* SPDX-License-Identifier: MIT */
/*
 * The synchronous layer: any number of threads call pread/pwrite/flush; one
 * I/O thread owns the session (librdmasec wants one thread per session),
 * splits each request into commands, spreads them over the queues and wakes
 * the caller when the last one completed.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "blk_client.h"

#define DONE_BATCH 64u
#define IDLE_WAIT_MS 100

struct sreq {
	uint8_t opcode;
	uint16_t flags;
	uint8_t *buf;
	size_t len;
	uint64_t off;
	size_t sent;      /* bytes handed to commands so far */
	bool all_sent;
	unsigned pending; /* its commands in flight */
	int error;        /* the first, negative errno */
	bool done;
	struct sreq *next;
};

struct blk_sync {
	struct blk_session *s; /* the I/O thread's once it runs */
	struct blk_open_reply info;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int efd;
	struct sreq *in_head, *in_tail; /* handed over, not yet taken by the I/O thread (under mu) */
	struct sreq *act_head, *act_tail; /* the I/O thread's: taken, not all sent */
	unsigned next_queue;
	bool stop, dead; /* under mu */
	char error[256]; /* under mu */
};

static void wake_caller(struct blk_sync *y, struct sreq *r)
{
	pthread_mutex_lock(&y->mu);
	r->done = true;
	pthread_cond_broadcast(&y->cv);
	pthread_mutex_unlock(&y->mu);
}

static void take_incoming(struct blk_sync *y, bool *stop)
{
	uint64_t v;
	(void)!read(y->efd, &v, sizeof(v)); /* non-blocking: clears the wake-up, if any */
	pthread_mutex_lock(&y->mu);
	if (y->in_head) {
		if (y->act_tail)
			y->act_tail->next = y->in_head;
		else
			y->act_head = y->in_head;
		y->act_tail = y->in_tail;
		y->in_head = y->in_tail = NULL;
	}
	*stop = y->stop;
	pthread_mutex_unlock(&y->mu);
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
		wake_caller(y, r);
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

/* Send what the queues take; true if they had no room for all (a completion makes some). */
static bool submit_active(struct blk_sync *y)
{
	while (y->act_head) {
		struct sreq *r = y->act_head;
		int rc = submit_next(y, r);
		if (rc == -EAGAIN)
			return true;
		if (rc < 0 && !r->error)
			r->error = rc;
		if (rc < 0 || r->sent == r->len)
			pop_active(y);
	}
	return false;
}

static void reap(struct blk_sync *y, const struct blk_done *d, int n)
{
	for (int i = 0; i < n; i++) {
		struct sreq *r = (struct sreq *)(uintptr_t)d[i].cookie;
		r->pending--;
		if (d[i].error && !r->error)
			r->error = -d[i].error;
		if (r->all_sent && r->pending == 0)
			wake_caller(y, r);
	}
}

static void wait_work(struct blk_sync *y)
{
	struct pollfd p[BLK_QUEUES_MAX + 1];
	int fds[BLK_QUEUES_MAX];
	unsigned n = blk_session_fds(y->s, fds, BLK_QUEUES_MAX);
	for (unsigned i = 0; i < n; i++)
		p[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
	p[n] = (struct pollfd){ .fd = y->efd, .events = POLLIN };
	(void)poll(p, n + 1, IDLE_WAIT_MS);
}

/* The session is over: every request, now and later, fails with EIO. */
static void fail_everything(struct blk_sync *y)
{
	pthread_mutex_lock(&y->mu);
	y->dead = true;
	for (struct sreq *r = y->in_head; r; r = r->next)
		if (!r->error)
			r->error = -EIO;
	if (y->act_tail)
		y->act_tail->next = y->in_head;
	else
		y->act_head = y->in_head;
	y->in_head = y->in_tail = NULL;
	for (struct sreq *r = y->act_head, *next; r; r = next) {
		next = r->next;
		r->error = r->error ? r->error : -EIO;
		r->done = true;
	}
	y->act_head = y->act_tail = NULL;
	pthread_cond_broadcast(&y->cv);
	pthread_mutex_unlock(&y->mu);
}

static void *io_thread(void *arg)
{
	struct blk_sync *y = arg;
	struct blk_done d[DONE_BATCH];
	for (;;) {
		bool stop;
		take_incoming(y, &stop);
		if (stop)
			break;
		(void)submit_active(y);
		int n = blk_session_poll(y->s, d, DONE_BATCH, 0);
		if (n < 0)
			break;
		reap(y, d, n);
		if (n == 0)
			wait_work(y);
	}
	pthread_mutex_lock(&y->mu);
	snprintf(y->error, sizeof(y->error), "%s", *blk_session_error(y->s) ? blk_session_error(y->s) : "stopped");
	pthread_mutex_unlock(&y->mu);
	/* Requests stopped with commands in flight fail: the caller of blk_sync_stop waited for none. */
	blk_session_close(y->s);
	y->s = NULL;
	fail_everything(y);
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
		y->info = *blk_session_info(y->s);
		pthread_mutex_init(&y->mu, NULL);
		pthread_cond_init(&y->cv, NULL);
		rc = -pthread_create(&y->thread, NULL, io_thread, y);
		if (rc < 0) {
			pthread_cond_destroy(&y->cv);
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
	pthread_mutex_unlock(&y->mu);
	uint64_t one = 1;
	(void)!write(y->efd, &one, sizeof(one));
	pthread_join(y->thread, NULL);
	close(y->efd);
	pthread_cond_destroy(&y->cv);
	pthread_mutex_destroy(&y->mu);
	free(y);
}

const struct blk_open_reply *blk_sync_info(const struct blk_sync *y)
{
	return &y->info; /* a copy made before the I/O thread started */
}

void blk_sync_error(struct blk_sync *y, char *out, size_t cap)
{
	pthread_mutex_lock(&y->mu);
	snprintf(out, cap, "%s", y->error);
	pthread_mutex_unlock(&y->mu);
}

static int run(struct blk_sync *y, struct sreq *r)
{
	pthread_mutex_lock(&y->mu);
	if (y->dead || y->stop) {
		pthread_mutex_unlock(&y->mu);
		return -EIO;
	}
	if (y->in_tail)
		y->in_tail->next = r;
	else
		y->in_head = r;
	y->in_tail = r;
	pthread_mutex_unlock(&y->mu);
	uint64_t one = 1;
	(void)!write(y->efd, &one, sizeof(one)); /* the counter cannot overflow at one per request */
	pthread_mutex_lock(&y->mu);
	while (!r->done)
		pthread_cond_wait(&y->cv, &y->mu);
	pthread_mutex_unlock(&y->mu);
	return r->error;
}

int blk_sync_pread(struct blk_sync *y, void *buf, size_t len, uint64_t offset)
{
	struct sreq r = { .opcode = BLK_OP_READ, .buf = buf, .len = len, .off = offset };
	return len ? run(y, &r) : 0;
}

int blk_sync_pwrite(struct blk_sync *y, const void *buf, size_t len, uint64_t offset, bool fua)
{
	/* The I/O thread only reads a WRITE's buffer. */
	struct sreq r = { .opcode = BLK_OP_WRITE, .flags = fua ? BLK_CMD_FUA : 0, .buf = (uint8_t *)(uintptr_t)buf,
			  .len = len, .off = offset };
	return len ? run(y, &r) : 0;
}

int blk_sync_flush(struct blk_sync *y)
{
	struct sreq r = { .opcode = BLK_OP_FLUSH };
	return run(y, &r);
}
