/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/rand.h>

#include "base/clock.h"
#include "qpool.h"

struct rsec_qpool {
	struct rsec_dev *dev; /* one reference */
	struct rsec_qpool_opts o;
	pthread_mutex_t lock;
	pthread_cond_t wake;    /* to the worker: an entry was taken, or stop */
	pthread_cond_t changed; /* to waiters: an entry was added, or the worker stalled */
	pthread_t worker;
	bool running;
	_Atomic bool stop;      /* set under lock; also read by the burn loop */
	bool stalled;           /* the last creation failed; retry on the next take */
	struct rsec_qp *entries; /* o.size slots, the first count ready */
	uint32_t count;
	struct rsec_qpool_stats st;
	/* Worker only: where burned QPs live for their moment. */
	struct ibv_pd *burn_pd;
	struct ibv_cq *burn_cq;
};

uint32_t rsec_qpool_size(bool given, uint32_t value, bool is_server)
{
	if (given && value != 0)
		return value;
	return is_server ? RSEC_QPOOL_DEFAULT : RSEC_QPOOL_DEFAULT_CLIENT;
}

/*
 * Advance the device's QPN counter by a random 0..burn_max with throwaway
 * QPs in one PD and CQ of the pool's own (never used for traffic). Best
 * effort: returns how many were burned.
 */
static uint32_t burn_qpns(struct rsec_qpool *p)
{
	uint32_t n;

	if (p->o.burn_max == 0 || rsec_random_index(p->o.burn_max + 1, &n) < 0 || n == 0)
		return 0;
	if (!p->burn_pd)
		p->burn_pd = ibv_alloc_pd(p->dev->ctx);
	if (p->burn_pd && !p->burn_cq)
		p->burn_cq = ibv_create_cq(p->dev->ctx, 1, NULL, NULL, 0);
	if (!p->burn_cq)
		return 0;
	return rsec_qpn_burn(p->burn_pd, p->burn_cq, p->burn_cq, n, &p->stop);
}

/* Keep the pool full: sleep until an entry is taken, then create one replacement at a time. */
static void *pool_worker(void *arg)
{
	struct rsec_qpool *p = arg;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		while (!p->stop && (p->stalled || p->count >= p->o.size))
			pthread_cond_wait(&p->wake, &p->lock);
		if (p->stop)
			break;
		pthread_mutex_unlock(&p->lock);

		struct rsec_qp q;
		uint64_t t0 = rsec_now_ns();
		uint32_t burned = burn_qpns(p);
		uint64_t t1 = rsec_now_ns();
		int rc = rsec_qp_create(p->dev, p->o.send_wr, p->o.recv_wr, &q);
		uint64_t t2 = rsec_now_ns();

		pthread_mutex_lock(&p->lock);
		p->st.burned += burned;
		p->st.burn_ns += t1 - t0;
		if (rc < 0) {
			p->st.failures++;
			p->stalled = true;
		} else {
			/* Only this thread adds, and count < size held when we let go of the lock. */
			p->entries[p->count++] = q;
			p->st.created++;
			p->st.create_ns += t2 - t1;
		}
		pthread_cond_broadcast(&p->changed);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* Start the worker with every signal blocked: a process-directed signal (signalfd users) must not land there. */
RSEC_MUST_CHECK static int start_worker(struct rsec_qpool *p)
{
	sigset_t all, old;
	int err;

	sigfillset(&all);
	RSEC_ENSURE(pthread_sigmask(SIG_SETMASK, &all, &old) == 0, RSEC_E_IO);
	err = pthread_create(&p->worker, NULL, pool_worker, p);
	(void)pthread_sigmask(SIG_SETMASK, &old, NULL);
	RSEC_ENSURE(err == 0, RSEC_E_IO);
	p->running = true;
	return 0;
}

RSEC_MUST_CHECK static int init_sync(struct rsec_qpool *p)
{
	pthread_condattr_t ca;
	int ok;

	RSEC_ENSURE(pthread_condattr_init(&ca) == 0, RSEC_E_NOMEM);
	ok = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 && pthread_cond_init(&p->changed, &ca) == 0;
	(void)pthread_condattr_destroy(&ca);
	RSEC_ENSURE(ok, RSEC_E_NOMEM);
	if (pthread_cond_init(&p->wake, NULL) != 0) {
		(void)pthread_cond_destroy(&p->changed);
		return RSEC_E_NOMEM;
	}
	if (pthread_mutex_init(&p->lock, NULL) != 0) {
		(void)pthread_cond_destroy(&p->wake);
		(void)pthread_cond_destroy(&p->changed);
		return RSEC_E_NOMEM;
	}
	return 0;
}

int rsec_qpool_new(struct rsec_dev *d, const struct rsec_qpool_opts *o, struct rsec_qpool **out)
{
	struct rsec_qpool *p;
	int rc;

	RSEC_ENSURE(d != NULL && o != NULL && out != NULL, RSEC_E_INVAL);
	*out = NULL;
	RSEC_ENSURE(o->send_wr > 0 && o->recv_wr > 0, RSEC_E_INVAL);
	RSEC_ENSURE(o->size >= 1 && o->size <= RSEC_QPOOL_MAX && o->burn_max <= RSEC_QPOOL_BURN_MAX, RSEC_E_RANGE);
	p = calloc(1, sizeof(*p));
	RSEC_ENSURE(p != NULL, RSEC_E_NOMEM);
	p->o = *o;
	if (init_sync(p) < 0) {
		free(p);
		return RSEC_E_NOMEM;
	}
	p->dev = rsec_dev_ref(d);
	if (o->size > 1) {
		p->entries = calloc(o->size, sizeof(*p->entries));
		rc = p->entries ? start_worker(p) : RSEC_E_NOMEM;
		if (rc < 0) {
			rsec_qpool_free(p);
			return rc;
		}
	}
	*out = p;
	return 0;
}

int rsec_qpool_take(struct rsec_qpool *p, struct rsec_qp *q)
{
	uint32_t i;
	int rc;

	RSEC_ENSURE(p != NULL && q != NULL, RSEC_E_INVAL);
	pthread_mutex_lock(&p->lock);
	if (p->count > 0) {
		rc = rsec_random_index(p->count, &i);
		if (rc == 0) {
			*q = p->entries[i];
			p->entries[i] = p->entries[--p->count];
			memset(&p->entries[p->count], 0, sizeof(p->entries[p->count]));
			p->st.taken++;
			p->stalled = false;
			pthread_cond_signal(&p->wake);
		}
		pthread_mutex_unlock(&p->lock);
		return rc;
	}
	p->st.taken++;
	if (p->o.size > 1)
		p->st.empty++;
	p->stalled = false;
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
	return rsec_qp_create(p->dev, p->o.send_wr, p->o.recv_wr, q);
}

int rsec_qpool_wait_ready(struct rsec_qpool *p, uint32_t n, int timeout_ms)
{
	struct timespec until;
	int rc = 0;

	RSEC_ENSURE(p != NULL && n <= (p->o.size > 1 ? p->o.size : 0), RSEC_E_INVAL);
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += timeout_ms / 1000;
	until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&p->lock);
	while (p->count < n && rc == 0) {
		if (p->stalled)
			rc = RSEC_E_VERBS;
		else if (pthread_cond_timedwait(&p->changed, &p->lock, &until) == ETIMEDOUT)
			rc = p->count < n ? RSEC_E_TIMEOUT : 0;
	}
	pthread_mutex_unlock(&p->lock);
	return rc;
}

void rsec_qpool_stats(struct rsec_qpool *p, struct rsec_qpool_stats *out)
{
	pthread_mutex_lock(&p->lock);
	*out = p->st;
	out->ready = p->count;
	pthread_mutex_unlock(&p->lock);
}

void rsec_qpool_free(struct rsec_qpool *p)
{
	if (p == NULL)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->lock);
	if (p->running)
		(void)pthread_join(p->worker, NULL);
	for (uint32_t i = 0; i < p->count; i++)
		rsec_qp_destroy(&p->entries[i]);
	free(p->entries);
	if (p->burn_cq)
		(void)ibv_destroy_cq(p->burn_cq);
	if (p->burn_pd)
		(void)ibv_dealloc_pd(p->burn_pd);
	rsec_dev_put(p->dev);
	(void)pthread_mutex_destroy(&p->lock);
	(void)pthread_cond_destroy(&p->wake);
	(void)pthread_cond_destroy(&p->changed);
	free(p);
}
