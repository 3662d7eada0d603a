/* SPDX-License-Identifier: MIT */
/*
 * rdmasec-blk's client (docs/blk.md), on librdmasec's public API and the
 * protocol codec (tools/blk/proto). Two layers:
 *
 *  - the asynchronous core: a session (connection, OPEN, its queue pairs)
 *    and, per queue, commands submitted with a cookie and reaped by
 *    blk_session_poll. Every command owns one slot of its queue's registered
 *    region (one per cid): nothing is registered per I/O. Like librdmasec it
 *    wants one thread per session.
 *  - the synchronous layer (blk_sync_*): thread-safe pread/pwrite/flush for
 *    callers with many threads (the nbdkit plugin). The callers drive the
 *    session themselves, one at a time: whoever waits leads (submits, reaps,
 *    wakes the others), so a lone caller's I/O has no hand-off; a
 *    housekeeping thread drives a session nobody leads once a second.
 *
 * Errors are negative errno values; blk_session_error / blk_sync_error say
 * why a session ended. Every completion is checked against the command it
 * answers (cid in flight, length, status): anything else ends the session.
 */
#ifndef RSEC_BLK_CLIENT_H
#define RSEC_BLK_CLIENT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "blk_wire.h"

#define BLK_CLIENT_IO_MAX_DEFAULT (256u << 10) /* bytes per command unless asked otherwise */
#define BLK_POOL_WINDOW_S_MAX 86400u
#define BLK_CLIENT_BUSY_POLL_US 2000u          /* rdmasec-blk's and the plugin's busy_poll_us */
#define BLK_CLIENT_RETRIES 3u                  /* a command whose transfer failed is sent again this often */

struct blk_client_opts {
	const char *host;        /* the target's address */
	uint16_t port;           /* 0: BLK_DEFAULT_PORT */
	const char *server_name; /* the name the target's certificate must carry; NULL: host */
	const char *certs_dir;   /* ca.pem, client.pem, client.key (rdmasec-keygen) */
	const char *device;      /* RDMA device; NULL: the one owning the local address */
	const char *source;      /* local address to leave from; NULL: any */
	const char *export_name;
	bool write;              /* ask to write (BLK_OPEN_WRITE) */
	uint16_t queue_depth;    /* per queue, 1..BLK_QD_MAX; 0: 32 */
	uint16_t queues;         /* 1..BLK_QUEUES_MAX; 0: 1 */
	uint32_t io_max;         /* the largest command this client sends; 0: BLK_CLIENT_IO_MAX_DEFAULT
				  * (never more than the target's max_transfer) */
	int timeout_ms;          /* set-up, and the longest a command may stay in flight; 0: 30000 */
	bool busy_poll;          /* spin on completions instead of sleeping */
	uint32_t busy_poll_us;   /* while 1..4 commands are in flight, poll completions this long before sleeping
				  * (an adaptive window, tools/common/busy_poll.h); 0: never, at most BUSY_POLL_MAX_US */
	uint32_t rekey_s;        /* keys renewed at least this often, 1..RSEC_MAX_REKEY_S; 0: RSEC_DEFAULT_REKEY_S */
	uint64_t rekey_bytes;    /* ... and every this many bytes, 1..RSEC_MAX_REKEY_BYTES; 0: RSEC_DEFAULT_REKEY_BYTES */
	uint32_t pool_window_s;  /* each queue's pool window serves new commands this long, then the next is
				  * granted (docs/blk.md, "Pool windows"); 1..BLK_POOL_WINDOW_S_MAX; 0: 10 */
	uint32_t reconnect_ms;   /* blk_sync: after a session ends, open new ones for this long, re-issuing
				  * what was in flight (0: fail at once); the strings above must outlive it */
};

/* One I/O of the asynchronous core. buf stays the caller's and must stay
 * valid until its completion: a WRITE's is read at submit (and again if it
 * is sent again), a READ's written when it completes. */
struct blk_io {
	uint8_t opcode;   /* BLK_OP_READ, BLK_OP_WRITE, BLK_OP_FLUSH */
	uint16_t flags;   /* BLK_CMD_FUA (WRITE) */
	uint64_t offset;  /* bytes, a multiple of block_size */
	uint32_t length;  /* bytes, a multiple of block_size, <= blk_session_io_max; 0 for FLUSH */
	void *buf;
	uint64_t cookie;  /* returned in its blk_done */
};

struct blk_done {
	uint64_t cookie;
	int error;       /* 0, or a positive errno: EIO, ENOSPC, EROFS, EINVAL, ERANGE... */
	uint16_t status; /* the target's status (enum blk_status); BLK_S_IO when the session ended */
	unsigned queue;
};

struct blk_session;

/*
 * Connect, authenticate the target, OPEN the export and bring up the queues
 * granted. Returns 0, or a negative errno with the reason in err.
 */
int blk_session_open(const struct blk_client_opts *o, struct blk_session **out, char *err, size_t errlen);
/* Commands in flight are dropped (their completions never come). */
void blk_session_close(struct blk_session *s);
const struct blk_open_reply *blk_session_info(const struct blk_session *s);
unsigned blk_session_queues(const struct blk_session *s);
uint32_t blk_session_io_max(const struct blk_session *s);
/* Why the session ended ("" while it lives). */
const char *blk_session_error(const struct blk_session *s);
/* The target's authenticated identity. */
const char *blk_session_peer(const struct blk_session *s);

/*
 * Send one command on queue q: it leaves with the others submitted before
 * the next blk_session_poll, at its start, in one doorbell per queue.
 * Returns 0; -EAGAIN (no free cid on q, or
 * the data path is busy or being rebuilt: reap, then submit again);
 * -EINVAL / -ERANGE / -EROFS (the command breaks the session's limits,
 * nothing sent); -EIO or -ENOTCONN (the session ended).
 */
int blk_queue_submit(struct blk_session *s, unsigned q, const struct blk_io *io);
/* Commands of queue q in flight. */
unsigned blk_queue_inflight(const struct blk_session *s, unsigned q);
/*
 * Reap up to max completions of every queue, waiting up to timeout_ms for
 * the first (0: never). Returns how many, or -EIO once the session ended and
 * every command in flight then has been reported (with error EIO).
 */
int blk_session_poll(struct blk_session *s, struct blk_done *done, unsigned max, int timeout_ms);
/*
 * For a caller with more to wake for than the session (blk_sync: a new request), after a
 * blk_session_poll that found nothing: while 1..4 commands are in flight, poll the queues'
 * completions for the busy-poll window (busy_poll_us; no system call but sched_yield), ending
 * early once *interrupt (may be NULL) is set; then sleep on the queues' fds and extra_fd (if
 * >= 0) for up to timeout_ms. Returns the completions polling found (in done, at most max), or
 * 0: woken, interrupted or timed out (blk_session_poll next). Sends what was submitted first.
 */
int blk_session_wait(struct blk_session *s, struct blk_done *done, unsigned max, int extra_fd,
		     const atomic_bool *interrupt, int timeout_ms);

/* --- Synchronous, thread-safe layer --- */
struct blk_sync;
int blk_sync_start(const struct blk_client_opts *o, struct blk_sync **out, char *err, size_t errlen);
/* Ends the housekeeping thread and the session. Call it with no request under way. */
void blk_sync_stop(struct blk_sync *y);
const struct blk_open_reply *blk_sync_info(const struct blk_sync *y);
/* The largest command (blk_session_io_max of the first session). */
uint32_t blk_sync_io_max(const struct blk_sync *y);
/* Any length and offset aligned to block_size (split into commands of at most io_max).
 * Return 0 or a negative errno. */
int blk_sync_pread(struct blk_sync *y, void *buf, size_t len, uint64_t offset);
int blk_sync_pwrite(struct blk_sync *y, const void *buf, size_t len, uint64_t offset, bool fua);
int blk_sync_flush(struct blk_sync *y);
/* Why the session ended ("" while it lives); a copy into out. */
void blk_sync_error(struct blk_sync *y, char *out, size_t cap);
/* Sessions opened again after one ended (reconnect_ms), and why the last one before them ended. */
unsigned blk_sync_reconnects(struct blk_sync *y, char *why, size_t cap);

/* --- Pieces the core is made of, exposed for the unit tests --- */

/* errno for a command's status (0 for BLK_S_OK). */
int blk_status_errno(uint16_t status);

/* A stack of free command ids, 0..depth-1. */
struct blk_cids {
	uint16_t ids[BLK_QD_MAX];
	unsigned n, depth;
};
void blk_cids_init(struct blk_cids *f, unsigned depth);
/* -1 if none is free. */
int blk_cids_take(struct blk_cids *f);
/* false if cid is out of range or free already (the caller's bug). */
bool blk_cids_give(struct blk_cids *f, uint16_t cid);

/* What a completion must match: the command in flight under its cid. */
struct blk_expect {
	bool busy;
	bool answered; /* its completion came: its capsule goes again */
	uint8_t opcode;
	uint32_t length;
};
/*
 * Check a decoded completion against the commands in flight (depth of
 * them, indexed by cid). NULL if it answers one of them; otherwise why it
 * is a protocol violation.
 */
const char *blk_cpl_violation(const struct blk_cpl *c, const struct blk_expect *inflight, unsigned depth);

/* The verify pattern (rdmasec-blk bench --verify): every 8-byte word a function of
 * its byte offset in the export and a seed. len and offset multiples of 8. */
void blk_pattern_fill(void *buf, size_t len, uint64_t offset, uint64_t seed);
/* The offset in buf of the first word that differs, or len if none does. */
size_t blk_pattern_check(const void *buf, size_t len, uint64_t offset, uint64_t seed);

/* A client-side check of an I/O against the session, before anything is sent:
 * 0 or a negative errno. */
int blk_io_check(const struct blk_io *io, const struct blk_open_reply *info, uint32_t io_max);

#endif
