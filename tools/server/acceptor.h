/* SPDX-License-Identifier: MIT */
/*
 * rdmasec-server's front door, on a thread of its own: it takes TCP
 * connections from the listener in bounded batches, admits or refuses each
 * before TLS (capacity, the handshakes in progress and their rate per source
 * and for all sources, a file-descriptor reserve), runs their TLS handshakes
 * on worker threads in turns per source (offload.h), and hands each
 * connection whose peer authenticated to the event loop (acceptor_take).
 * Everything anyone can cause without credentials, a flood above all, is
 * spent here and in the workers: the thread serving established sessions
 * never sees an unauthenticated connection. The acceptor and its workers run
 * at a lower scheduling priority than the event loop.
 *
 * Shared with the event loop, under shared->lock: the per-peer metrics and
 * the acceptor's counters; the event loop's session count is an atomic.
 */
#ifndef RSEC_SERVER_ACCEPTOR_H
#define RSEC_SERVER_ACCEPTOR_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "conf.h"
#include "metrics.h"
#include "rdmasec.h"
#include "server.h"

struct acceptor_shared {
	pthread_mutex_t lock;     /* guards metrics and n */
	struct metrics *metrics;  /* per-peer: refusals before authentication are counted by address */
	struct server_counters n; /* the acceptor's counts (accepted, refused_*, ...) */
	uint64_t log_suppressed;  /* its rate-limited log lines left out */
	size_t sessions;          /* the event loop's connections (__atomic) */
};

struct acceptor_fds {
	uint64_t soft;    /* RLIMIT_NOFILE */
	uint64_t base;    /* fds open with no connection */
	uint64_t reserve; /* kept free for the device and the library */
};

struct acceptor;

/* Starts the thread; NULL (with err) on failure. The listener stays the caller's to free, after acceptor_stop. */
struct acceptor *acceptor_start(const struct rsec_conf *conf, struct rsec_listener *listener,
				struct acceptor_shared *shared, const struct acceptor_fds *fds, char *err, size_t errlen);
/* Readable (an eventfd) while an authenticated connection waits to be taken. */
int acceptor_fd(const struct acceptor *a);
/* One authenticated connection (TLS done, set-up to go on) and its id: 0, or RSEC_E_AGAIN when none. */
int acceptor_take(struct acceptor *a, struct rsec_conn **conn, uint64_t *id);
/* Connections in TLS now (__atomic), for the clients gauge. */
size_t acceptor_handshaking(const struct acceptor *a);
/* Ends its handshakes and the connections not taken, joins the thread and frees. */
void acceptor_stop(struct acceptor *a);

#endif
