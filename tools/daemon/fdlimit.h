/* SPDX-License-Identifier: MIT */
/*
 * File descriptors: raise RLIMIT_NOFILE at start, keep a reserve, and pause
 * accepting (not spin on EMFILE) when a new connection would eat into it.
 *
 * What a daemon's connection holds (librdmasec's session, path and device
 * layers): from accept, the TCP socket and the connection's epoll fd
 * (rsec_conn_fd); once its queue pair is set up, also that QP's completion
 * channel. The QP comes from the device's pool, whose worker replaces it
 * with a new one (with its own channel), so the process grows by exactly
 * one fd more. Per device, shared by all its connections: the uverbs command
 * fd and the async event fd (ibv_open_device), plus one completion channel
 * per ready QP in the pool (qp_pool). Without --device, devices are opened
 * on first use, one per local address clients reach (at most 8).
 */
#ifndef RSEC_DAEMON_FDLIMIT_H
#define RSEC_DAEMON_FDLIMIT_H

#include <stdbool.h>
#include <stdint.h>

#define FDLIMIT_PER_HANDSHAKE 2u   /* TCP socket, epoll fd */
#define FDLIMIT_PER_CONN 3u        /* and the QP's completion channel */
#define FDLIMIT_PER_DEVICE 2u      /* uverbs command and async fds; plus qp_pool channels */
#define FDLIMIT_SPARE 32u          /* metrics file, audit log, OpenSSL, a device query... */
#define FDLIMIT_SLACK (4u * FDLIMIT_PER_CONN) /* resume only this far below the pause point */
#define FDLIMIT_RETRY_MS 1000u     /* after EMFILE/ENFILE, try accept again at most this often */

/*
 * Raises the soft RLIMIT_NOFILE to the hard limit (to fs.nr_open when the
 * hard limit is unlimited) and logs both (event fd_limit). soft and hard get
 * the limits now in force (UINT64_MAX: unlimited). Returns 0, or -errno when
 * the limit could not be read or raised (soft is then the old one, still valid).
 */
int fdlimit_raise(uint64_t *soft, uint64_t *hard);

/* Open fds of this process (/proc/self/fd); -1 if it cannot be read. For reporting and a baseline. */
long fdlimit_count_open(void);

/* Is err (errno after a failed accept) the fd limit: EMFILE (ours) or ENFILE (the system's)? */
bool fdlimit_exhausted_errno(int err);

/* The fds to keep free: FDLIMIT_SPARE, and room for devices not opened yet with their pools. */
uint64_t fdlimit_reserve(uint32_t qp_pool, unsigned devices_not_open);

/* Connections that fit: (soft - in_use - reserve) / FDLIMIT_PER_CONN, 0 if none. */
uint64_t fdlimit_capacity(uint64_t soft, uint64_t in_use, uint64_t reserve);

/*
 * Whether the listener is polled. in_use is the caller's count: a baseline
 * (fdlimit_count_open after set-up) plus FDLIMIT_PER_CONN per connection.
 */
struct fdlimit_gate {
	uint64_t soft, reserve;
	bool paused;
	bool exhausted;               /* paused by EMFILE/ENFILE: the count was too low */
	uint64_t exhausted_in_use, exhausted_ms;
};

void fdlimit_gate_init(struct fdlimit_gate *g, uint64_t soft, uint64_t reserve);
/*
 * Pauses when one more handshake would leave fewer than reserve fds;
 * resumes FDLIMIT_SLACK below that and, after an EMFILE/ENFILE, once
 * FDLIMIT_SLACK fds were freed or FDLIMIT_RETRY_MS passed. Returns true when
 * paused changed: remove the listener from epoll or add it back, and log it.
 */
bool fdlimit_gate_update(struct fdlimit_gate *g, uint64_t in_use, uint64_t now_ms);
/* accept failed with EMFILE/ENFILE: pause now. Returns true when paused changed. */
bool fdlimit_gate_exhausted(struct fdlimit_gate *g, uint64_t in_use, uint64_t now_ms);

#endif
