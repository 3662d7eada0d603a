/* SPDX-License-Identifier: MIT */
/*
 * Worker threads with fair queues (offload.h).
 *
 * Invariants, all under lock:
 * - every job is in exactly one place: a key's queue, running (counted in
 *   running), or the done list;
 * - the turn ring holds exactly the keys whose queue is not empty, each once;
 *   a key leaves the ring (and is freed) when its queue empties;
 * - jobs (queued + running + done) <= max_jobs.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include "offload.h"

struct job {
	offload_fn run;
	void *arg;
	struct job *next;
};

struct key {
	char name[OFFLOAD_KEY_MAX];
	struct job *head, *tail;
	struct key *next; /* in the turn ring */
};

struct offload {
	pthread_mutex_t lock;
	pthread_cond_t work; /* a key joined the ring, or stopping */
	pthread_cond_t idle; /* a job finished running */
	pthread_t thread[OFFLOAD_THREADS_MAX];
	unsigned threads;
	struct key *ring_head, *ring_tail;
	struct job *done_head, *done_tail;
	size_t jobs, max_jobs;
	int nice; /* the workers' nice value, 0: left as it is */
	unsigned running;
	bool stopping;
	int efd;
};

static void done_push(struct offload *o, struct job *j)
{
	j->next = NULL;
	if (o->done_tail)
		o->done_tail->next = j;
	else
		o->done_head = j;
	o->done_tail = j;
}

/* The next key's first job; the key goes to the back of the ring, or away when it has no more. */
static struct job *take_turn(struct offload *o)
{
	struct key *k = o->ring_head;
	struct job *j = k->head;
	k->head = j->next;
	o->ring_head = k->next;
	if (!o->ring_head)
		o->ring_tail = NULL;
	if (k->head) {
		k->next = NULL;
		if (o->ring_tail)
			o->ring_tail->next = k;
		else
			o->ring_head = k;
		o->ring_tail = k;
	} else {
		free(k);
	}
	return j;
}

static void *worker(void *arg)
{
	struct offload *o = arg;
	/* Signals are the owner's business (a signalfd, say): never delivered here. */
	sigset_t all;
	sigfillset(&all);
	(void)pthread_sigmask(SIG_BLOCK, &all, NULL);
	/* Work anyone can ask for yields the CPU to the thread serving sessions (best effort). */
	if (o->nice)
		(void)setpriority(PRIO_PROCESS, (id_t)gettid(), o->nice);
	pthread_mutex_lock(&o->lock);
	for (;;) {
		while (!o->stopping && !o->ring_head)
			pthread_cond_wait(&o->work, &o->lock);
		if (o->stopping)
			break;
		struct job *j = take_turn(o);
		o->running++;
		pthread_mutex_unlock(&o->lock);
		j->run(j->arg);
		pthread_mutex_lock(&o->lock);
		o->running--;
		done_push(o, j);
		/* An eventfd write cannot fail short of overflowing its 2^64 counter. */
		(void)!write(o->efd, &(uint64_t){ 1 }, sizeof(uint64_t));
		pthread_cond_broadcast(&o->idle);
	}
	pthread_mutex_unlock(&o->lock);
	return NULL;
}

struct offload *offload_new(unsigned threads, size_t max_jobs)
{
	return offload_new_nice(threads, max_jobs, OFFLOAD_NICE);
}

struct offload *offload_new_nice(unsigned threads, size_t max_jobs, int nice)
{
	if (threads < 1 || threads > OFFLOAD_THREADS_MAX || max_jobs < 1 || nice < 0 || nice > 19)
		return NULL;
	struct offload *o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	o->max_jobs = max_jobs;
	o->nice = nice;
	o->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	int made = 0; /* of efd, lock, work, idle */
	if (o->efd >= 0 && ++made && pthread_mutex_init(&o->lock, NULL) == 0 && ++made &&
	    pthread_cond_init(&o->work, NULL) == 0 && ++made && pthread_cond_init(&o->idle, NULL) == 0)
		made++;
	if (made < 4) {
		if (made > 2)
			pthread_cond_destroy(&o->work);
		if (made > 1)
			pthread_mutex_destroy(&o->lock);
		if (made > 0)
			close(o->efd);
		free(o);
		return NULL;
	}
	for (; o->threads < threads; o->threads++) {
		if (pthread_create(&o->thread[o->threads], NULL, worker, o) != 0) {
			offload_free(o);
			return NULL;
		}
	}
	return o;
}

void offload_stop(struct offload *o)
{
	pthread_mutex_lock(&o->lock);
	o->stopping = true;
	pthread_cond_broadcast(&o->work);
	while (o->running)
		pthread_cond_wait(&o->idle, &o->lock);
	/* Queued jobs go back unrun, each key's in order. */
	bool handed = false;
	while (o->ring_head) {
		done_push(o, take_turn(o));
		handed = true;
	}
	if (handed)
		(void)!write(o->efd, &(uint64_t){ 1 }, sizeof(uint64_t));
	pthread_mutex_unlock(&o->lock);
}

void offload_free(struct offload *o)
{
	if (!o)
		return;
	offload_stop(o);
	for (unsigned i = 0; i < o->threads; i++)
		pthread_join(o->thread[i], NULL);
	while (o->done_head) {
		struct job *j = o->done_head;
		o->done_head = j->next;
		free(j);
	}
	pthread_cond_destroy(&o->work);
	pthread_cond_destroy(&o->idle);
	pthread_mutex_destroy(&o->lock);
	close(o->efd);
	free(o);
}

/* The ring's entry for name, or a new one at its back; NULL if out of memory. */
static struct key *key_for(struct offload *o, const char *name)
{
	for (struct key *k = o->ring_head; k; k = k->next)
		if (strncmp(k->name, name, sizeof(k->name) - 1) == 0)
			return k;
	struct key *k = calloc(1, sizeof(*k));
	if (!k)
		return NULL;
	snprintf(k->name, sizeof(k->name), "%s", name);
	if (o->ring_tail)
		o->ring_tail->next = k;
	else
		o->ring_head = k;
	o->ring_tail = k;
	return k;
}

int offload_submit(struct offload *o, const char *key, offload_fn run, void *arg)
{
	if (!o || !key || !run)
		return -EINVAL;
	struct job *j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->run = run;
	j->arg = arg;
	pthread_mutex_lock(&o->lock);
	int rc = o->stopping ? -EINVAL : o->jobs >= o->max_jobs ? -EAGAIN : 0;
	struct key *k = rc == 0 ? key_for(o, key) : NULL;
	if (rc == 0 && !k)
		rc = -ENOMEM;
	if (rc == 0) {
		if (k->head)
			k->tail->next = j;
		else
			k->head = j;
		k->tail = j;
		o->jobs++;
		pthread_cond_signal(&o->work);
	}
	pthread_mutex_unlock(&o->lock);
	if (rc < 0)
		free(j);
	return rc;
}

/* Unlinks k from the ring (its queue is empty), and frees it. */
static void key_drop(struct offload *o, struct key *k)
{
	struct key **p = &o->ring_head, *prev = NULL;
	while (*p && *p != k) {
		prev = *p;
		p = &(*p)->next;
	}
	if (!*p)
		return;
	*p = k->next;
	if (o->ring_tail == k)
		o->ring_tail = prev;
	free(k);
}

bool offload_cancel(struct offload *o, const char *key, void *arg)
{
	pthread_mutex_lock(&o->lock);
	struct key *k = o->ring_head;
	while (k && strncmp(k->name, key, sizeof(k->name) - 1) != 0)
		k = k->next;
	struct job *j = NULL, *prev = NULL;
	for (j = k ? k->head : NULL; j && j->arg != arg; j = j->next)
		prev = j;
	if (j) {
		if (prev)
			prev->next = j->next;
		else
			k->head = j->next;
		if (k->tail == j)
			k->tail = prev;
		if (!k->head)
			key_drop(o, k);
		o->jobs--;
	}
	pthread_mutex_unlock(&o->lock);
	bool found = j != NULL;
	free(j);
	return found;
}

int offload_fd(const struct offload *o)
{
	return o->efd;
}

void *offload_take_done(struct offload *o)
{
	/* Cleared first: a job done after this read writes the eventfd again. */
	uint64_t n;
	(void)!read(o->efd, &n, sizeof(n));
	pthread_mutex_lock(&o->lock);
	struct job *j = o->done_head;
	if (j) {
		o->done_head = j->next;
		if (!o->done_head)
			o->done_tail = NULL;
		o->jobs--;
	}
	pthread_mutex_unlock(&o->lock);
	if (!j)
		return NULL;
	void *arg = j->arg;
	free(j);
	return arg;
}

size_t offload_pending(struct offload *o)
{
	pthread_mutex_lock(&o->lock);
	size_t n = o->jobs;
	pthread_mutex_unlock(&o->lock);
	return n;
}
