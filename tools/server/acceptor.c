/* SPDX-License-Identifier: MIT */
/*
 * The front door (acceptor.h). Its own epoll set holds the listener, the
 * workers' eventfd, a stop eventfd and the connections in TLS that no worker
 * has. A connection's life here: accepted and judged (verdict), then its TLS
 * steps go to a worker whenever it has input (handshake_step), until the
 * peer has authenticated (handed to the event loop) or it fails, is evicted
 * or passes its deadline (pending_end). No step waits for a peer.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "acceptor.h"
#include "admission.h"
#include "clock.h"
#include "fdlimit.h"
#include "log.h"
#include "offload.h"
#include "ratelog.h"

#define TICK_MS 250
#define ACCEPT_BATCH 32 /* connections taken per turn: its other work is never starved */
#define EVICT_SCAN 64   /* handshakes looked at for one that may give way: bounded work per accept */
struct pending {
	struct acceptor *a;
	struct rsec_conn *conn;
	uint64_t id, accepted_ms;
	bool away; /* a worker has it: neither watched nor touched here */
	bool dead; /* ended: freed at the end of the loop turn (an event of this turn may name it) */
	int job_rc;
	char source[ADMISSION_SOURCE_MAX]; /* its fairness key */
	struct pending *prev, *next;       /* oldest first */
};

struct ready {
	struct rsec_conn *conn;
	uint64_t id;
	struct ready *next;
};

struct acceptor {
	const struct rsec_conf *conf;
	struct rsec_listener *listener;
	struct acceptor_shared *sh;
	struct admission *adm;
	struct ratelog *rlog;
	struct offload *work;
	struct fdlimit_gate gate;
	struct acceptor_fds fds;
	int epfd, stopfd, readyfd;
	pthread_t thread;
	bool started;
	struct pending *head, *tail;
	struct pending *dead; /* ended this loop turn, linked by next */
	size_t handshaking; /* __atomic: read by the event loop */
	double tokens;      /* the handshake rate of all sources (a bucket of one second's worth) */
	uint64_t refill_ms, last_tick_ms, next_id;
	pthread_mutex_t ready_lock;
	struct ready *ready_head, *ready_tail;
};

#define COUNT(a, field)                               \
	do {                                          \
		pthread_mutex_lock(&(a)->sh->lock);   \
		(a)->sh->n.field++;                   \
		pthread_mutex_unlock(&(a)->sh->lock); \
	} while (0)

static uint64_t fds_in_use(const struct acceptor *a)
{
	size_t conns = __atomic_load_n(&a->handshaking, __ATOMIC_RELAXED) +
		       __atomic_load_n(&a->sh->sessions, __ATOMIC_RELAXED);
	return a->fds.base + (uint64_t)conns * FDLIMIT_PER_CONN;
}

/* A refusal before authentication, counted under the identity if TLS told one, else the address. */
static void count_refused(struct acceptor *a, struct rsec_conn *conn)
{
	char key[METRICS_KEY_MAX];
	metrics_peer_key(key, rsec_conn_peer(conn), rsec_conn_peer_addr(conn));
	pthread_mutex_lock(&a->sh->lock);
	metrics_add(a->sh->metrics, key, &(struct peer_counters){ .refused_handshakes = 1 });
	pthread_mutex_unlock(&a->sh->lock);
}

/* When the fd gate flipped: the listener leaves the epoll set (no busy loop at the limit), or returns. */
static void listener_gate(struct acceptor *a, bool flipped)
{
	if (!flipped)
		return;
	int fd = rsec_listener_fd(a->listener);
	if (a->gate.paused) {
		(void)epoll_ctl(a->epfd, EPOLL_CTL_DEL, fd, NULL);
		COUNT(a, accept_paused);
		log_event("warn", "accept_paused", "clients=%zu fds=%llu fd_limit=%llu",
			  __atomic_load_n(&a->handshaking, __ATOMIC_RELAXED) +
				  __atomic_load_n(&a->sh->sessions, __ATOMIC_RELAXED),
			  (unsigned long long)fds_in_use(a), (unsigned long long)a->gate.soft);
		return;
	}
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &a->listener };
	if (epoll_ctl(a->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		/* Paused again, so the tick retries: accepting must not stop for good. */
		log_event("error", "accept_resume_failed", "reason=%s", log_q(strerror(errno)));
		(void)fdlimit_gate_exhausted(&a->gate, fds_in_use(a), clock_mono_ms());
		return;
	}
	log_event("info", "accept_resumed", "fds=%llu", (unsigned long long)fds_in_use(a));
}

static void unlink_pending(struct pending *p)
{
	struct acceptor *a = p->a;
	if (p->prev)
		p->prev->next = p->next;
	else
		a->head = p->next;
	if (p->next)
		p->next->prev = p->prev;
	else
		a->tail = p->prev;
	__atomic_sub_fetch(&a->handshaking, 1, __ATOMIC_RELAXED);
	(void)admission_release(a->adm, rsec_conn_peer_addr(p->conn));
	/* Its memory outlives this loop turn; its connection goes now (the caller frees or hands it over). */
	p->dead = true;
	p->next = a->dead;
	a->dead = p;
}

static void bury(struct acceptor *a)
{
	while (a->dead) {
		struct pending *p = a->dead;
		a->dead = p->next;
		free(p);
	}
}

/* A handshake that ended here: refused (authentication) or failed, counted always, logged at a bounded rate. */
static void pending_end(struct pending *p, int rc)
{
	struct acceptor *a = p->a;
	const char *event = "handshake_failed";
	if (rc == RSEC_E_AUTH || rc == RSEC_E_TLS) {
		COUNT(a, refused_auth);
		count_refused(a, p->conn);
		event = "refused";
	} else {
		COUNT(a, handshake_failed);
	}
	if (ratelog_allow(a->rlog, event, clock_mono_ms())) {
		const char *peer = rsec_conn_peer(p->conn);
		log_event("warn", event, "conn=%llu peer=%s addr=%s code=%s reason=%s qp_created=no",
			  (unsigned long long)p->id, log_q(peer[0] ? peer : "unauthenticated"),
			  log_q(rsec_conn_peer_addr(p->conn)), log_q(rsec_strerror(rc)),
			  log_q(rsec_conn_error(p->conn)));
	}
	unlink_pending(p);
	rsec_conn_free(p->conn); /* closes its fd, which leaves the epoll set */
	listener_gate(a, fdlimit_gate_update(&a->gate, fds_in_use(a), clock_mono_ms()));
}

/* Authenticated: to the event loop, which goes on with set-up (admission by identity first). */
static void pending_ready(struct pending *p)
{
	struct acceptor *a = p->a;
	struct ready *r = malloc(sizeof(*r));
	unlink_pending(p);
	if (!r) {
		log_event("warn", "handshake_failed", "conn=%llu reason=%s", (unsigned long long)p->id,
			  log_q("out of memory"));
		COUNT(a, handshake_failed);
		rsec_conn_free(p->conn);
		return;
	}
	*r = (struct ready){ .conn = p->conn, .id = p->id };
	/* Counted as the loop's from here, so capacity and fds never miss it in between. */
	__atomic_add_fetch(&a->sh->sessions, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&a->ready_lock);
	if (a->ready_tail)
		a->ready_tail->next = r;
	else
		a->ready_head = r;
	a->ready_tail = r;
	pthread_mutex_unlock(&a->ready_lock);
	(void)!write(a->readyfd, &(uint64_t){ 1 }, sizeof(uint64_t));
}

/* On a worker: the expensive part of accepting (a key exchange, a signature, a certificate chain). */
static void handshake_job(void *arg)
{
	struct pending *p = arg;
	p->job_rc = rsec_conn_handshake(p->conn);
}

/* It has input, or is new: its next TLS step goes to a worker, in its source's turn. */
static void handshake_step(struct pending *p)
{
	struct acceptor *a = p->a;
	if (epoll_ctl(a->epfd, EPOLL_CTL_DEL, rsec_conn_fd(p->conn), NULL) < 0 && errno != ENOENT) {
		pending_end(p, RSEC_E_IO);
		return;
	}
	p->away = true;
	if (offload_submit(a->work, p->source, handshake_job, p) < 0) {
		p->away = false;
		pending_end(p, RSEC_E_NOMEM);
	}
}

static void handshake_back(struct pending *p)
{
	struct acceptor *a = p->a;
	p->away = false;
	if (p->job_rc == 0) {
		pending_ready(p);
		return;
	}
	if (p->job_rc != RSEC_E_AGAIN) {
		pending_end(p, p->job_rc);
		return;
	}
	/* TLS waits for the peer: watched again. */
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = p };
	if (epoll_ctl(a->epfd, EPOLL_CTL_ADD, rsec_conn_fd(p->conn), &ev) < 0)
		pending_end(p, RSEC_E_IO);
}

static void jobs_back(struct acceptor *a)
{
	struct pending *p;
	while ((p = offload_take_done(a->work)))
		handshake_back(p);
}

/*
 * At a limit of all sources, the oldest handshake (not on a worker) of a
 * source that holds more than the newcomer's source (which counts the
 * newcomer) gives way: sources converge to equal shares, and a flood from a
 * few addresses cannot keep everyone else out. False if none qualifies.
 */
static bool evict_for(struct acceptor *a, uint32_t mine)
{
	int looked = 0;
	for (struct pending *p = a->head; p && looked < EVICT_SCAN; p = p->next, looked++) {
		if (admission_in_progress(a->adm, rsec_conn_peer_addr(p->conn)) <= mine)
			continue;
		/* One waiting for a worker gives way too (in a flood, most do); one on a worker cannot. */
		if (p->away && !offload_cancel(a->work, p->source, p))
			continue;
		p->away = false;
		COUNT(a, handshakes_evicted);
		if (ratelog_allow(a->rlog, "evicted", clock_mono_ms()))
			log_event("warn", "evicted", "conn=%llu addr=%s reason=%s", (unsigned long long)p->id,
				  log_q(rsec_conn_peer_addr(p->conn)), log_q("max_handshakes reached"));
		(void)rsec_conn_close(p->conn, "max_handshakes reached: its source holds more than its share");
		COUNT(a, handshake_failed);
		unlink_pending(p);
		rsec_conn_free(p->conn);
		return true;
	}
	return false;
}

static bool global_rate_allows(struct acceptor *a, uint64_t now)
{
	double rate = a->conf->handshake_rate;
	a->tokens += (double)(now - a->refill_ms) * rate / 1000.0;
	if (a->tokens > rate)
		a->tokens = rate;
	a->refill_ms = now;
	return a->tokens >= 1.0;
}

/* The source's handshakes in progress and rate: NULL admits (and counts it). */
static const char *source_verdict(struct acceptor *a, const char *addr, uint64_t now)
{
	const char *why = NULL;
	switch (admission_try(a->adm, addr, now, &why)) {
	case ADMISSION_ADMIT:
		return NULL;
	case ADMISSION_REFUSE_CONCURRENT:
		COUNT(a, refused_source_concurrent);
		return why;
	case ADMISSION_REFUSE_RATE:
		COUNT(a, refused_source_rate);
		return why;
	default:
		COUNT(a, refused_source_table);
		return why;
	}
}

/*
 * The rate of all sources (a source with no handshake in progress passes: a
 * flood spends its own share, not a newcomer's), the source's own limits,
 * then capacity and the handshakes in progress of all sources, where a
 * handshake of a source over its share may give way: NULL admits.
 */
static const char *verdict(struct acceptor *a, const char *addr)
{
	uint64_t now = clock_mono_ms();
	size_t conns = __atomic_load_n(&a->handshaking, __ATOMIC_RELAXED) +
		       __atomic_load_n(&a->sh->sessions, __ATOMIC_RELAXED);
	bool full = conns >= a->conf->max_clients;
	bool tokens = global_rate_allows(a, now);
	if (!tokens && admission_in_progress(a->adm, addr) > 0) {
		COUNT(a, refused_handshake_rate);
		return "handshake_rate reached";
	}
	const char *why = source_verdict(a, addr, now);
	if (why)
		return why;
	bool at_limit = full || __atomic_load_n(&a->handshaking, __ATOMIC_RELAXED) >= a->conf->max_handshakes;
	if (at_limit && !evict_for(a, admission_in_progress(a->adm, addr))) {
		(void)admission_release(a->adm, addr);
		if (full)
			COUNT(a, refused_capacity);
		else
			COUNT(a, refused_handshakes);
		return full ? "max_clients reached" : "max_handshakes reached";
	}
	if (tokens)
		a->tokens -= 1.0;
	return NULL;
}

/* Closed at accept, before TLS and any RDMA resource: counted per address, logged at a bounded rate. */
static void refuse(struct acceptor *a, struct rsec_conn *conn, const char *why)
{
	count_refused(a, conn);
	size_t clients = __atomic_load_n(&a->handshaking, __ATOMIC_RELAXED) +
			 __atomic_load_n(&a->sh->sessions, __ATOMIC_RELAXED);
	if (ratelog_allow(a->rlog, "refused", clock_mono_ms()))
		log_event("warn", "refused", "addr=%s reason=%s clients=%zu qp_created=no",
			  log_q(rsec_conn_peer_addr(conn)), log_q(why), clients);
	(void)rsec_conn_close(conn, why); /* the reason goes to the audit log */
	rsec_conn_free(conn);
}

static struct pending *pending_new(struct acceptor *a, struct rsec_conn *conn)
{
	struct pending *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	*p = (struct pending){ .a = a, .conn = conn, .id = ++a->next_id, .accepted_ms = clock_mono_ms() };
	if (!admission_source(rsec_conn_peer_addr(conn), p->source))
		snprintf(p->source, sizeof(p->source), "%s", rsec_conn_peer_addr(conn));
	p->prev = a->tail;
	if (a->tail)
		a->tail->next = p;
	else
		a->head = p;
	a->tail = p;
	__atomic_add_fetch(&a->handshaking, 1, __ATOMIC_RELAXED);
	return p;
}

/* accept(2): network errors of the pending connection, to be treated like EAGAIN and retried. */
static bool accept_error_transient(int err)
{
	switch (err) {
	case ENETDOWN:
	case EPROTO:
	case ENOPROTOOPT:
	case EHOSTDOWN:
	case ENONET:
	case EHOSTUNREACH:
	case EOPNOTSUPP:
	case ENETUNREACH:
	case EPERM:
		return true;
	default:
		return false;
	}
}

/* A bounded batch: the listener stays readable, so the loop comes back after its other work. */
static void accept_batch(struct acceptor *a)
{
	for (int taken = 0; taken < ACCEPT_BATCH && !a->gate.paused; taken++) {
		struct rsec_conn *conn;
		int rc = rsec_accept(a->listener, &conn);
		if (rc == RSEC_E_AGAIN)
			return;
		if (rc < 0) {
			int err = errno;
			if (ratelog_allow(a->rlog, "accept_failed", clock_mono_ms()))
				log_event("warn", "accept_failed", "code=%s reason=%s", log_q(rsec_strerror(rc)),
					  log_q(strerror(err)));
			if (rc == RSEC_E_IO && accept_error_transient(err))
				continue; /* that connection's own trouble */
			/* Out of fds, memory or buffers: pause rather than spin on a readable listener. */
			listener_gate(a, fdlimit_gate_exhausted(&a->gate, fds_in_use(a), clock_mono_ms()));
			return;
		}
		COUNT(a, accepted);
		const char *why = verdict(a, rsec_conn_peer_addr(conn));
		if (why) {
			refuse(a, conn, why);
			continue;
		}
		struct pending *p = pending_new(a, conn);
		if (!p) {
			(void)admission_release(a->adm, rsec_conn_peer_addr(conn));
			refuse(a, conn, "out of memory");
			continue;
		}
		listener_gate(a, fdlimit_gate_update(&a->gate, fds_in_use(a), clock_mono_ms()));
		handshake_step(p);
	}
}

/*
 * Deadlines: the library's came first (set before rsec_accept returned), so
 * rsec_conn_handshake ends such a connection without any TLS work. The list
 * is oldest first: the first one not due ends the scan.
 */
static void tick(struct acceptor *a, uint64_t now)
{
	struct pending *p = a->head;
	while (p && now > p->accepted_ms + a->conf->handshake_timeout_ms) {
		struct pending *next = p->next; /* read first: ending p relinks it */
		if (!p->away)
			pending_end(p, rsec_conn_handshake(p->conn));
		p = next;
	}
	bury(a);
	ratelog_tick(a->rlog, now);
	pthread_mutex_lock(&a->sh->lock);
	a->sh->log_suppressed = ratelog_suppressed_total(a->rlog);
	pthread_mutex_unlock(&a->sh->lock);
	listener_gate(a, fdlimit_gate_update(&a->gate, fds_in_use(a), now));
	a->last_tick_ms = now;
}

static void *acceptor_main(void *arg)
{
	struct acceptor *a = arg;
	sigset_t all; /* signals are the event loop's (its signalfd) */
	sigfillset(&all);
	(void)pthread_sigmask(SIG_BLOCK, &all, NULL);
	/* The acceptor yields the CPU to the event loop, as its workers do (best effort). */
	(void)setpriority(PRIO_PROCESS, (id_t)gettid(), OFFLOAD_NICE);
	for (;;) {
		struct epoll_event ev[64];
		int n = epoll_wait(a->epfd, ev, 64, TICK_MS);
		if (n < 0 && errno != EINTR) {
			log_event("error", "epoll_failed", "reason=%s", log_q(strerror(errno)));
			break;
		}
		bool stop = false;
		for (int i = 0; i < n; i++) {
			void *ptr = ev[i].data.ptr;
			if (ptr == &a->stopfd)
				stop = true;
			else if (ptr == &a->listener)
				accept_batch(a);
			else if (ptr == &a->work)
				jobs_back(a);
			else if (!((struct pending *)ptr)->away && !((struct pending *)ptr)->dead)
				handshake_step(ptr);
		}
		bury(a);
		if (stop)
			break;
		uint64_t now = clock_mono_ms();
		if (now - a->last_tick_ms >= TICK_MS)
			tick(a, now);
	}
	return NULL;
}

static int watch(struct acceptor *a, int fd, void *ptr)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = ptr };
	return epoll_ctl(a->epfd, EPOLL_CTL_ADD, fd, &ev);
}

/* Everything but the thread; safe on a half-made acceptor. */
static void acceptor_free(struct acceptor *a)
{
	offload_free(a->work);
	ratelog_free(a->rlog);
	admission_free(a->adm);
	int fds[] = { a->epfd, a->stopfd, a->readyfd };
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	pthread_mutex_destroy(&a->ready_lock);
	free(a);
}

struct acceptor *acceptor_start(const struct rsec_conf *conf, struct rsec_listener *listener,
				struct acceptor_shared *shared, const struct acceptor_fds *fds, char *err, size_t errlen)
{
	struct acceptor *a = calloc(1, sizeof(*a));
	if (!a || pthread_mutex_init(&a->ready_lock, NULL) != 0) {
		snprintf(err, errlen, "out of memory");
		free(a);
		return NULL;
	}
	a->conf = conf;
	a->listener = listener;
	a->sh = shared;
	a->fds = *fds;
	struct admission_limits limits;
	admission_limits_for(&limits, conf->max_clients, conf->max_handshakes_per_source,
			     conf->handshake_rate_per_source);
	a->adm = admission_new(&limits);
	a->rlog = ratelog_new(RATELOG_DEFAULT_LINES, NULL, NULL);
	/* One job per connection at most: the queue never refuses one. */
	a->work = offload_new(conf->worker_threads, (size_t)conf->max_clients + 1);
	a->epfd = epoll_create1(EPOLL_CLOEXEC);
	a->stopfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	a->readyfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	a->tokens = conf->handshake_rate;
	a->refill_ms = a->last_tick_ms = clock_mono_ms();
	fdlimit_gate_init(&a->gate, fds->soft, fds->reserve);
	if (!a->adm || !a->rlog || !a->work || a->epfd < 0 || a->stopfd < 0 || a->readyfd < 0 ||
	    watch(a, rsec_listener_fd(listener), &a->listener) < 0 || watch(a, a->stopfd, &a->stopfd) < 0 ||
	    watch(a, offload_fd(a->work), &a->work) < 0) {
		snprintf(err, errlen, "cannot set up the acceptor: %s", strerror(errno ? errno : ENOMEM));
		acceptor_free(a);
		return NULL;
	}
	int rc = pthread_create(&a->thread, NULL, acceptor_main, a);
	if (rc != 0) {
		snprintf(err, errlen, "cannot start the acceptor thread: %s", strerror(rc));
		acceptor_free(a);
		return NULL;
	}
	a->started = true;
	return a;
}

int acceptor_fd(const struct acceptor *a)
{
	return a->readyfd;
}

int acceptor_take(struct acceptor *a, struct rsec_conn **conn, uint64_t *id)
{
	/* Cleared first: a connection handed over after this read writes the eventfd again. */
	uint64_t n;
	(void)!read(a->readyfd, &n, sizeof(n));
	pthread_mutex_lock(&a->ready_lock);
	struct ready *r = a->ready_head;
	if (r) {
		a->ready_head = r->next;
		if (!a->ready_head)
			a->ready_tail = NULL;
	}
	pthread_mutex_unlock(&a->ready_lock);
	if (!r)
		return RSEC_E_AGAIN;
	*conn = r->conn;
	*id = r->id;
	free(r);
	return 0;
}

size_t acceptor_handshaking(const struct acceptor *a)
{
	return __atomic_load_n(&a->handshaking, __ATOMIC_RELAXED);
}

void acceptor_stop(struct acceptor *a)
{
	if (!a)
		return;
	if (a->started) {
		(void)!write(a->stopfd, &(uint64_t){ 1 }, sizeof(uint64_t));
		pthread_join(a->thread, NULL);
	}
	/* The workers' connections come back (queued ones unrun); then every handshake ends. */
	offload_stop(a->work);
	for (struct pending *p; (p = offload_take_done(a->work));)
		p->away = false;
	while (a->head) {
		struct pending *p = a->head;
		(void)rsec_conn_close(p->conn, "server shutting down");
		unlink_pending(p);
		rsec_conn_free(p->conn);
	}
	bury(a);
	struct rsec_conn *conn;
	uint64_t id;
	while (acceptor_take(a, &conn, &id) == 0) {
		(void)rsec_conn_close(conn, "server shutting down");
		rsec_conn_free(conn);
		__atomic_sub_fetch(&a->sh->sessions, 1, __ATOMIC_RELAXED);
	}
	acceptor_free(a);
}
