/* SPDX-License-Identifier: MIT */
/*
 * Internal layout of contexts and connections, owned by the session layer:
 * ctx.c (device and credentials), conn.c (event loop and teardown), ctrl.c
 * and setup.c (control messages, ctrl.h), settle.c (path faults), lane.c,
 * rebuild.c, resume.c. The path layer (data.c, onesided.c, grant*.c,
 * region.c, sealed_post.c) still works on struct rsec_conn directly: an
 * upward use lib/layers.allow lists until issue 25 gives it per-queue-pair
 * state. It records its faults in c->fault and acts on none of them.
 */
#ifndef RSEC_CONN_H
#define RSEC_CONN_H

#include <openssl/ssl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/audit.h"
#include "base/authz.h"
#include "base/clock.h"
#include "verbs/completion.h"
#include "verbs/dev.h"
#include "path/chan.h"
#include "path/path.h"
#include "verbs/mw.h"
#include "verbs/qp.h"
#include "verbs/qpool.h"
#include "rdmasec.h"
#include "result.h"
#include "base/rekey.h"
#include "base/seal.h"
#include "base/sealed.h"
#include "base/tls.h"
#include "base/wire.h"

#define RSEC_DEFAULT_RECV_SLOTS 16u
#define RSEC_DEFAULT_SLOT_SIZE 65536u
#define RSEC_DEFAULT_MAX_MSG (16u << 20)
#define RSEC_DEFAULT_HANDSHAKE_MS 10000
#define RSEC_DEFAULT_INFLIGHT 128u /* one-sided operations, as perftest's default TX depth */
/* rsec_write and rsec_read copy up to this much through a buffer registered
 * once per connection instead of registering the caller's (onesided.c). */
#define RSEC_STAGE_SIZE 65536u
#define RSEC_DEV_CACHE 8
/* Receive buffers, ours and (announced in QP_INFO) the peer's: a peer must
 * stay within the limits we hold ourselves to. */
#define RSEC_SLOT_SIZE_MIN 4096u
#define RSEC_SLOT_SIZE_MAX (1u << 20)
#define RSEC_RECV_SLOTS_MIN 4u
#define RSEC_RECV_SLOTS_MAX 4096u
/* Our frames fill at most this much of a peer's slot; the send ring a
 * peer's announcement makes us pin stays within 1 MiB (data.c). */
#define RSEC_FRAME_MAX 65536u
/* How long an accepted message may wait for the peer's credits. */
#define RSEC_SEND_STALL_MS 30000u

/* ctx.c: the device owning local address ip, opened once per context. */
RSEC_MUST_CHECK int rsec_ctx_dev_for(struct rsec_ctx *ctx, const char *ip, struct rsec_dev **out);
/* ctx.c: whether identity passes the context's allow rules; if not, why describes them. */
bool rsec_ctx_authorized(struct rsec_ctx *ctx, const char *identity, char *why, size_t cap);

/* ctx.c: a connection's PD, CQs and QP on dev (from rsec_ctx_dev_for), drawn from dev's QP pool. */
RSEC_MUST_CHECK int rsec_ctx_take_qp(struct rsec_ctx *ctx, struct rsec_dev *dev, struct rsec_qp *q);

/* ctx.c: an SSL on fd from the context's current TLS credentials (rsec_tls_new). */
RSEC_MUST_CHECK int rsec_ctx_tls_new(struct rsec_ctx *ctx, int fd, const struct rsec_tls_opts *o, SSL **out);

struct rsec_ctx {
	bool is_server;
	struct rsec_dev *dev; /* fixed device, or NULL: per connection, by local address */
	struct rsec_qpool *pool; /* dev's QP pool (lib/verbs/qpool.c) */
	struct rsec_qpool_opts pool_opts;
	/* Devices opened by local address, each opened once and shared. */
	pthread_mutex_t dev_lock;
	struct rsec_dev_slot {
		char ip[48];
		struct rsec_dev *dev;
		struct rsec_qpool *pool;
	} dev_cache[RSEC_DEV_CACHE];
	pthread_mutex_t tls_lock; /* tls: rsec_ctx_reload swaps it; each SSL holds its own reference */
	SSL_CTX *tls;
	struct rsec_tls_opts tls_opts; /* strings owned below */
	char *ca_file, *cert_file, *key_file, *crl_file, *psk_identity;
	char *local_addr; /* clients bind their control socket to it */
	uint8_t psk[64];
	size_t psk_len;
	enum rsec_aead_alg aead;
	uint32_t recv_slots, slot_size, max_msg;
	int handshake_timeout_ms;
	rsec_admit_fn admit;
	void *admit_arg;
	pthread_mutex_t authz_lock; /* allow: replaced by rsec_ctx_set_allow while connections run */
	struct rsec_authz_set allow;
	enum rsec_grant_mode grant_mode;
	uint32_t max_inflight;     /* one-sided operations in flight per connection */
	uint32_t max_qps;          /* queue pairs per connection, the first included (lane.c) */
	uint32_t rebuilds_per_min; /* of each queue pair's data path; 0: a failed one closes (rebuild.c) */
	uint32_t resume_grace_ms;  /* how long a session outlives its control channel; 0: not at all (resume.c) */
	uint32_t rekey_s;          /* renew each queue pair's keys this often (rekey_exchange.c); 0: not by time */
	uint64_t rekey_bytes;      /* and after this many bytes sent and received; 0: not by bytes */
	/* Sessions that can be resumed (resume.c): established connections with a token, linked by rs.next. */
	pthread_mutex_t sessions_lock;
	struct rsec_conn *sessions;
	enum rsec_poll_mode poll_mode;
	struct rsec_audit *audit;  /* NULL: no audit log */
	uint64_t next_conn_id;     /* atomic */
	uint64_t audit_errors;     /* atomic: records that could not be written */
};

struct rsec_listener {
	struct rsec_ctx *ctx;
	int fd;
};

/* Where the set-up stands; see conn.c for the message sequence. */
enum rsec_phase {
	PHASE_TLS,         /* TLS handshake */
	PHASE_HELLO,       /* waiting for the peer's HELLO */
	PHASE_QP_INFO,     /* waiting for the peer's QP_INFO */
	PHASE_READY,       /* server: waiting for the client's READY */
	PHASE_ESTABLISHED,
	PHASE_CLOSED,
};

/* A session outliving its control channel (resume.c). */
struct rsec_resume {
	bool peer;                /* both sides offered RSEC_WIRE_FEATURE_RESUME */
	bool have_token;
	uint8_t token[RSEC_WIRE_TOKEN_LEN]; /* the server's name for the session; secret, wiped */
	bool registered;          /* server: in ctx->sessions */
	struct rsec_conn *next;   /* server: the next in ctx->sessions */
	bool parked;              /* the control channel is lost; the session waits for a new one */
	uint64_t until_ms;        /* parked: the session fails then */
	char lost[160];           /* why the channel was lost */
	/* Client: where it connected, and its attempts to reconnect. */
	char host[256], server_name[256];
	uint16_t port;
	uint64_t next_try_ms;
	uint32_t backoff_ms;
	unsigned tries;
	char last_try[160];
	/* A client's new control channel: RESUME with this token instead of HELLO; the answer. */
	const uint8_t *offer;
	bool answered;
	bool refused; /* the server has no such session (ERROR) */
	bool denied;  /* the server refused our identity (DISCONNECT, RSEC_DISC_REFUSED): the allow rules */
	/*
	 * Both offered RSEC_WIRE_FEATURE_RESUME_EPOCH: RESUME and its SESSION
	 * answer carry each side's data-path epoch (offer_epoch: ours, on a
	 * client's new channel), so a session lost in the middle of a rebuild
	 * resumes even when one side connected the rebuilt QP and the other did
	 * not (rebuild.c, rsec_rebuild_unpark).
	 */
	bool epochs;
	uint32_t offer_epoch;
	bool peer_epoch_known;
	uint32_t peer_epoch;
};

struct rsec_conn {
	struct rsec_ctx *ctx;
	uint64_t id;          /* per context, for the audit log */
	char peer_addr[64];   /* the control connection's peer, "ip:port" */
	struct rsec_dev *dev; /* the device owning the TCP connection's local address */
	bool is_server;
	enum rsec_phase phase;
	bool was_established; /* reached PHASE_ESTABLISHED, whatever came after */
	int epfd;             /* the channel's socket and (data path) the completion channel */
	struct rsec_chan own_chan; /* the root's (a lane's is unused); resume.c moves it whole; path.chan points to it */
	uint32_t sock_events;      /* the channel's socket's events in epfd */
	char peer[RSEC_TLS_IDENTITY_MAX]; /* rsec_tls_peer_identity: refused, never cut, if longer */
	bool tls_resumed; /* the handshake resumed a ticket: no certificates this time */
	bool admit_refused; /* server: the admission hook refused its HELLO */
	char error[256];
	int close_code;
	uint64_t deadline_ms; /* set-up deadline */
	enum rsec_aead_alg aead;

	/* The queue pair's engine and everything it owns (path/path.h), valid from PHASE_QP_INFO on. */
	struct rsec_path path;

	bool sock_event;          /* busy polling, or fds_probed: the control socket has something */
	bool fds_probed;          /* rsec_conn_process asked epoll which fds are ready: the others are left alone */
	uint64_t next_full_ms;    /* busy polling: when the next whole rsec_conn_process is due */

	struct rsec_resume rs;

	/*
	 * Lanes (lane.c): the further queue pairs of a session. A lane is a
	 * connection of its own for data and shares its root's channel (chan).
	 */
	struct rsec_conn *root;   /* a lane: the session's first connection (NULL once that is freed) */
	uint16_t lane;            /* 0: the session's first connection; else its index on the wire */
	bool lane_taken;          /* a lane: handed to the application */
	bool peer_lanes;          /* root: the peer's HELLO offered RSEC_WIRE_FEATURE_LANES */
	bool peer_rebuilds;       /* root: the peer's HELLO offered RSEC_WIRE_FEATURE_REBUILD */
	bool peer_rebinds;        /* root: and RSEC_WIRE_FEATURE_REBIND: grants outlive a rebuild */
	bool peer_rekeys;         /* root: the peer's HELLO offered RSEC_WIRE_FEATURE_REKEY */
	bool peer_grant_keys;     /* root: and RSEC_WIRE_FEATURE_GRANT_KEYS: grants keyed from the rekey chain */
	uint16_t lanes_opened;    /* root: the highest lane index used so far (never reused) */
	struct rsec_conn *lanes[RSEC_WIRE_LANE_MAX + 1]; /* root: its lanes by index */
};

/* The earliest of deadline and the library's timers of c (grant expiry, keepalive, rekey_s, ...). */
uint64_t rsec_conn_next_timer(const struct rsec_conn *c, uint64_t deadline);

/*
 * Audit an event of connection c to its context's log (if any): the record
 * takes the time, role, connection number, peer identity and address and
 * QPNs from c. Never fails the caller; a write error is counted in the context.
 */
void rsec_conn_audit(struct rsec_conn *c, enum rsec_audit_event ev, const char *result, const char *reason,
		     const struct rsec_audit_region *region);

/* conn.c */
int rsec_conn_fail(struct rsec_conn *c, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* settle.c */
/*
 * A path call on c returned rc: the fault it recorded (c->fault), if any,
 * settled now: the data path rebuilt if it may be (0), else the connection
 * closed (its close code). Without a fault, rc as it is.
 */
RSEC_MUST_CHECK int rsec_conn_settle(struct rsec_conn *c, int rc);
/* rsec_data_poll, settled; a rebuild whose binds all completed sends its REBUILD_READY. */
RSEC_MUST_CHECK int rsec_conn_poll_data(struct rsec_conn *c);
/* The control channel sends a KEEPALIVE after this long without a frame, and is lost after three. */
#define RSEC_KEEPALIVE_MS 15000u
/* Busy polling: a whole rsec_conn_process (TLS read, timers: system calls) at least this often. */
#define RSEC_BUSY_FULL_MS 10u

/* wait.c: which of epfd's fds have something (chan_event, sock_event set for them); epoll_wait's count. */
int rsec_conn_fd_events(struct rsec_conn *c);
/* Keep epfd watching the socket for writability exactly while TLS or the control queue waits for it. */
RSEC_MUST_CHECK int rsec_conn_watch(struct rsec_conn *c);
/*
 * Advance the connection as the blocking calls do: rsec_conn_process, or
 * when busy polling, mostly the data path alone (no system call), the
 * whole of it when the control socket has something and now and then.
 */
RSEC_MUST_CHECK int rsec_conn_step(struct rsec_conn *c);
/* Wait until the fd is readable (busy polling: a completion arrives) or timeout; processes the connection. */
RSEC_MUST_CHECK int rsec_conn_wait(struct rsec_conn *c, int timeout_ms);
/*
 * The one wait loop of the blocking calls: process the connection until
 * ready(c, arg) holds. Returns 0, RSEC_E_TIMEOUT (timeout_ms > 0 passed),
 * RSEC_E_AGAIN (timeout_ms <= 0 and not ready), or the connection's error.
 */
typedef bool (*rsec_ready_fn)(struct rsec_conn *c, void *arg);
RSEC_MUST_CHECK int rsec_conn_wait_for(struct rsec_conn *c, rsec_ready_fn ready, void *arg, int timeout_ms);

void rsec_conn_teardown_rdma(struct rsec_conn *c);
/* A zeroed connection of ctx with its epoll set watching fd (EPOLLIN), or NULL. */
struct rsec_conn *rsec_conn_alloc(struct rsec_ctx *ctx, int fd);
/* setup.c: our QP's parameters and receive buffers as QP_INFO and REBUILD announce them. */
void rsec_conn_describe_qp(const struct rsec_conn *c, struct rsec_msg_qp_info *out);
/* The peer's QP as it announced it; RSEC_E_PROTO if no RC queue pair can be that. */
RSEC_MUST_CHECK int rsec_conn_peer_qp(const struct rsec_msg_qp_info *q, struct rsec_qp_peer *out);
/* Tell the peer our QP's parameters (QP_INFO). */
RSEC_MUST_CHECK int rsec_conn_send_qp_info(struct rsec_conn *c);

/* lane.c */
/*
 * rsec_conn_add_qp's steps (api/connect.c waits between them). Client:
 * request asks the peer for a new lane (*out: the lane, also when it failed
 * on the way: hand it to requested), settled says its answer came, requested
 * says how it went (0, or the lane freed and why in root's error). Server:
 * offered finds a lane the client opened that nobody took (arg: struct rsec_conn **).
 */
RSEC_MUST_CHECK int rsec_lane_request(struct rsec_conn *root, struct rsec_conn **out);
bool rsec_lane_settled(struct rsec_conn *c, void *arg);
RSEC_MUST_CHECK int rsec_lane_requested(struct rsec_conn *root, struct rsec_conn *c, int rc, int timeout_ms);
bool rsec_lane_offered(struct rsec_conn *root, void *arg);
/* rsec_conn_process of a lane: its root's channel, then its own data path. */
RSEC_MUST_CHECK int rsec_lane_process(struct rsec_conn *c);
/* Lanes whose set-up passed its deadline fail; closed lanes nobody took are freed. */
void rsec_lanes_expire(struct rsec_conn *root);
/* The root failed with code: every lane fails with it (nothing more goes to the peer). */
void rsec_lanes_fail(struct rsec_conn *root, int code);
/* The root's control channel is lost (resume.c): every lane fails with code and leaves the session. */
void rsec_lanes_lost(struct rsec_conn *root, int code, const char *why);
/* The root goes: lanes nobody took are freed, the others stay closed without it. */
void rsec_lanes_detach(struct rsec_conn *root);
/* A lane goes: its root forgets it. */
void rsec_lane_unlink(struct rsec_conn *c);
/* The root's socket events changed: every lane's epoll set watches the same. */
void rsec_lanes_watch(struct rsec_conn *root, uint32_t events);
/* The data path's device (the one owning the control connection's local
 * address, or the context's), a QP from its pool, then rsec_data_setup. */
RSEC_MUST_CHECK int rsec_conn_data_setup(struct rsec_conn *c);

/* rebuild.c */
/*
 * The data path failed (why: RSEC_WIRE_REBUILD_*; code and the text: what
 * rsec_conn_fail would say): rebuild it if the peer can and the budget
 * allows, else fail the connection. Returns 1 when a rebuild is under way,
 * or the connection's failure. Only settle.c calls it for a path fault.
 */
RSEC_MUST_CHECK int rsec_rebuild_fault(struct rsec_conn *c, uint8_t why, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/*
 * The control channel is lost (why): stop the data path, our REBUILD waits
 * (REBUILD_PARKED). Past the rebuild budget the connection fails with code.
 */
RSEC_MUST_CHECK int rsec_rebuild_park(struct rsec_conn *c, int code, const char *why);
/*
 * A new control channel is up: our REBUILD goes out (REBUILD_SENT), for the
 * epoch after both sides' (c->rs.peer_epoch, when the peer said it).
 */
RSEC_MUST_CHECK int rsec_rebuild_unpark(struct rsec_conn *c);
/* REBUILD and REBUILD_READY. Returns 0 or the connection's failure. */
RSEC_MUST_CHECK int rsec_rebuild_on_msg(struct rsec_conn *c, const struct rsec_msg *m);
/* A bind completed: once none is left, the REBUILD_READY owed goes out. Returns 0 or the connection's failure. */
RSEC_MUST_CHECK int rsec_rebuild_binds_settled(struct rsec_conn *c);
/* A rebuild under way past its deadline fails the connection. */
RSEC_MUST_CHECK int rsec_rebuild_expire(struct rsec_conn *c);
/* Can this connection's data path be rebuilt at all (both sides offered it)? */
static inline bool rsec_rebuild_possible(const struct rsec_conn *c)
{
	const struct rsec_conn *root = c->lane ? c->root : c;
	return root && root->peer_rebuilds;
}
/* Do grants outlive a rebuild (both sides offered RSEC_WIRE_FEATURE_REBIND)? */
static inline bool rsec_rebind_possible(const struct rsec_conn *c)
{
	const struct rsec_conn *root = c->lane ? c->root : c;
	return root && root->peer_rebinds;
}
/*
 * May an API call use c now? The one rule of include/rdmasec.h: 0; once
 * closed, the error that closed it; RSEC_E_AGAIN while it is being set up
 * and, for a call that posts on the queue pair (posts), while its data path
 * is rebuilt or its session waits to be resumed (rebuild PARKED).
 */
static inline int rsec_conn_require_established(const struct rsec_conn *c, bool posts)
{
	if (c->phase == PHASE_CLOSED)
		return c->close_code;
	if (c->phase != PHASE_ESTABLISHED)
		return RSEC_E_AGAIN;
	return posts && (!c->path.ops.ring || rsec_rebuilding(&c->path)) ? RSEC_E_AGAIN : 0;
}

/* rekey_exchange.c */
/* Renew c's keys if they are due (rekey_s, rekey_bytes) and nothing stands in the way. Returns 0 or the failure. */
RSEC_MUST_CHECK int rsec_rekey_step(struct rsec_conn *c);
/* Offer new keys now (REKEY) unless a rekey or rebuild is under way: 0 (offered or not), or the failure. */
RSEC_MUST_CHECK int rsec_rekey_start(struct rsec_conn *c);
/* Are c's grants keyed from its rekey chain (both sides offered RSEC_WIRE_FEATURE_GRANT_KEYS)? */
static inline bool rsec_grant_keys_chained(const struct rsec_conn *c)
{
	const struct rsec_conn *root = c->lane ? c->root : c;
	return root && root->peer_grant_keys;
}
/* Can c's keys be renewed at all (both sides offered RSEC_WIRE_FEATURE_REKEY)? */
static inline bool rsec_rekey_possible(const struct rsec_conn *c)
{
	const struct rsec_conn *root = c->lane ? c->root : c;
	return root && root->peer_rekeys;
}
/*
 * c's data path has new message keys from the exporter (set-up, a lane, a
 * rebuild's epoch): its chain starts again there, made now from the same TLS
 * session (a resumed channel later has another exporter). Returns 0 or RSEC_E_TLS.
 */
RSEC_MUST_CHECK int rsec_rekey_begin(struct rsec_conn *c);
/* The connection goes: its key material is wiped. */
void rsec_rekey_forget(struct rsec_conn *c);
/* When rekey_s runs out for c's keys, for waits to wake then; UINT64_MAX if not ahead (none, or offered). */
uint64_t rsec_rekey_next_ms(const struct rsec_conn *c);

/* resume.c */
/*
 * The control channel failed (code, and what rsec_conn_fail would say):
 * park the session for its grace period if both sides allow it, else fail
 * the connection. Returns 0 (parked) or the connection's failure.
 */
RSEC_MUST_CHECK int rsec_resume_lost(struct rsec_conn *c, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Server, set-up over: name the session (SESSION) and make it resumable. */
void rsec_resume_established(struct rsec_conn *c);
/* Server: a new connection's RESUME. Returns its end (handed over, or refused). */
RSEC_MUST_CHECK int rsec_resume_accept(struct rsec_conn *c, const struct rsec_msg *m);
/* Client: SESSION, the session's token, or the answer to a RESUME. Returns 0 or the failure. */
RSEC_MUST_CHECK int rsec_resume_on_session(struct rsec_conn *c, const struct rsec_msg *m);
/* A parked session: a client's next try when due; the end of the grace period. Returns 0 or the failure. */
RSEC_MUST_CHECK int rsec_resume_step(struct rsec_conn *c);
/* When a parked session needs rsec_resume_step (UINT64_MAX: not parked). */
uint64_t rsec_resume_next_ms(const struct rsec_conn *c);
/* Client: where it connected, for the tries. */
void rsec_resume_remember(struct rsec_conn *c, const char *host, uint16_t port, const char *server_name);
/* The connection goes: no longer resumable, its token wiped. */
void rsec_resume_forget(struct rsec_conn *c);

/* conn.c: a client connection to host:port, set up within timeout_ms;
 * resuming: RESUME that parked session instead of a HELLO (the call returns
 * once the server confirmed it). *out is set whenever a connection object
 * was made. */
RSEC_MUST_CHECK int rsec_conn_dial(struct rsec_ctx *ctx, const char *host, uint16_t port, const char *server_name,
				   int timeout_ms, const struct rsec_conn *resuming, struct rsec_conn **out);

/* data.c */
/*
 * Rebuild, first half: the QP replaced by a new one in INIT (same PD, CQs
 * and rings) with every receive posted again. Returns 0 or an error.
 */
RSEC_MUST_CHECK int rsec_data_renew(struct rsec_conn *c);
/*
 * Rebuild, second half: the peer opened `opened` of our frames of the old
 * epoch; the data frames after them are recovered for sending again, the
 * keys of epoch c->rb.epoch + 1 replace the old ones, send queue and
 * credits start afresh. Returns 0, RSEC_E_PROTO (opened is not between
 * what the peer acknowledged and what we sent), or an error.
 */
RSEC_MUST_CHECK int rsec_data_rekey(struct rsec_conn *c, uint64_t opened);
/* The peer's frames of the current epoch we opened. */
uint64_t rsec_data_opened(const struct rsec_conn *c);
/*
 * We seal under new keys (rekey_exchange.c): the old sending key goes now if the
 * peer acknowledged all it sealed, and a CREDIT_ONLY frame under the new
 * one retires the peer's old receiving key, so that an idle connection can
 * rekey again. Returns 0 or the failure.
 */
RSEC_MUST_CHECK int rsec_data_new_tx_keys(struct rsec_conn *c);

/* Receive buffers on c->qp (taken by rsec_conn_data_setup), receives posted (QP in INIT). */
RSEC_MUST_CHECK int rsec_data_setup(struct rsec_conn *c);
/* Send WRs of every connection's QP with depth one-sided operations (QP pools create theirs with it). */
uint32_t rsec_data_send_wr(uint32_t depth);
/* Once the peer's QP_INFO is in: RTR/RTS and send buffers. */
RSEC_MUST_CHECK int rsec_data_start(struct rsec_conn *c);
void rsec_data_teardown(struct rsec_conn *c);
/*
 * Set-up: completions wait until the connection is established (its CQs are
 * polled then), but the completion channel's events are taken now: one left
 * unread keeps the fd readable, and every wait would spin until then on what
 * the peer sent early. Returns 0 or the fault.
 */
RSEC_MUST_CHECK int rsec_data_quiet(struct rsec_conn *c);
/* Reap completions: sends, receives (sealed frames), window ops; until the first fault (c->fault). */
RSEC_MUST_CHECK int rsec_data_poll(struct rsec_conn *c);
/*
 * rsec_send's and rsec_recv's steps, none of which waits (api/msg.c waits
 * between them). send_some posts fragments of the message [p, p + len)
 * from *off on while credits allow: all of it is out when *started and
 * *off == len; a failure is the frame's (recorded: the caller settles it).
 * can_send: whether a new frame could go now. queue_rest keeps what did not
 * go out, to be sent as credits return (0, or the connection failed).
 */
RSEC_MUST_CHECK int rsec_data_send_some(struct rsec_conn *c, const uint8_t *p, size_t len, size_t *off,
					bool *started);
bool rsec_data_can_send(const struct rsec_conn *c);
RSEC_MUST_CHECK int rsec_data_queue_rest(struct rsec_conn *c, const uint8_t *p, size_t len, size_t off,
					 bool started);
/*
 * recv_into: a message that arrives while the caller waits is opened into
 * buf (cap bytes). recv_take, after the wait (waited: its result): the
 * message into buf and its length in *len, or why not (the wait's failure,
 * RSEC_E_RANGE: longer than cap, kept for a larger buffer); buf is the
 * caller's again either way.
 */
void rsec_data_recv_into(struct rsec_conn *c, void *buf, size_t cap);
RSEC_MUST_CHECK int rsec_data_recv_take(struct rsec_conn *c, void *buf, size_t cap, size_t *len, int waited);
/* The peer broke the protocol: counted, audited, the connection fails with RSEC_E_PROTO. */
int rsec_conn_violation(struct rsec_conn *c, const char *why);

/* onesided.c: the operations that completed, up to max of them (those of a closed connection failed first). */
unsigned rsec_onesided_reap(struct rsec_conn *c, struct rsec_wc *wc, unsigned max);

/* grant.c */
/* A window bind or one-sided completion (checked against what we posted); a bound grant is announced. */
RSEC_MUST_CHECK int rsec_grant_on_wc(struct rsec_conn *c, const struct ibv_wc *wc);
/* The same completion, failed: the connection is failing; only the bookkeeping is done. */
void rsec_grant_on_wc_failed(struct rsec_conn *c, const struct ibv_wc *wc);
RSEC_MUST_CHECK int rsec_grant_on_msg(struct rsec_conn *c, const struct rsec_msg *m);
/* rsec_grant's and rsec_revoke's work (api/granting.c checks c and settles). */
RSEC_MUST_CHECK int rsec_grant_issue(struct rsec_conn *c, struct rsec_region *r, size_t off, size_t len,
				     unsigned access, uint32_t ttl_ms, uint64_t tag, uint64_t *grant_id);
RSEC_MUST_CHECK int rsec_grant_revoke(struct rsec_conn *c, uint64_t grant_id);
/* The audit record of a read from the peer's grant g (verified or sealed): its result and, on a mismatch, why. */
void rsec_grant_audit_remote(struct rsec_conn *c, enum rsec_audit_event ev, const struct rsec_remote_grant *g,
			     const char *result, const char *reason);
/* VERIFY for grant_id's bytes [off, off + len): their MAC, or (RSEC_WIRE_MAC_SEALED) the prefix that opens them. */
RSEC_MUST_CHECK int rsec_grant_send_verify(struct rsec_conn *c, uint64_t grant_id, uint64_t off, uint64_t len,
					   uint8_t mac_alg, const uint8_t *mac, size_t mac_len);
RSEC_MUST_CHECK int rsec_grant_expire(struct rsec_conn *c);
/* The connection is closing: QP to error, every live grant revoked (and audited) now. */
void rsec_grant_close(struct rsec_conn *c);
/*
 * The data path is being rebuilt (its QP is gone): every grant of ours
 * revoked (audited: why), the peer's forgotten; when both sides take grants
 * bound again (rsec_rebind_possible), plain live grants stay, to be bound
 * again, and the peer's wait for theirs. Returns 0, or the connection's
 * failure when the device would not free a grant.
 */
RSEC_MUST_CHECK int rsec_grant_reset(struct rsec_conn *c, const char *why);
/* The new QP is connected: the grants that outlived the rebuild are bound on it, announced once bound. */
RSEC_MUST_CHECK int rsec_grant_rebind(struct rsec_conn *c);
void rsec_grant_teardown(struct rsec_conn *c);
/* One user of r's registrations (a bind, an operation) is over; a region freed meanwhile goes with the last. */
void rsec_region_unuse(struct rsec_conn *c, struct rsec_region *r);

/* onesided.c */
RSEC_MUST_CHECK int rsec_onesided_setup(struct rsec_conn *c);
/* A send-queue completion of a one-sided operation, successful or not (checked by completion.c first). */
RSEC_MUST_CHECK int rsec_onesided_on_wc(struct rsec_conn *c, const struct ibv_wc *wc);
/* The data path is being rebuilt: every operation in flight ends with status. */
void rsec_onesided_abort(struct rsec_conn *c, int status);
/* Completions polled after a fault: the operations they name, and all before, end with status. */
void rsec_onesided_flushed(struct rsec_conn *c, const struct ibv_wc *wc, int n, int status);
/*
 * The connection failed (its QP is in the error state): take the flushed
 * completions of operations in flight for a while, each the proof that the
 * device let go of the buffers up to it. Whether none is left; if some are,
 * only destroying the QP ends them (rsec_conn_teardown_rdma, the session's).
 */
bool rsec_onesided_drain(struct rsec_conn *c);
/* The QP is in the error state or gone: every operation in flight ends with the close code. */
void rsec_onesided_teardown(struct rsec_conn *c);
/*
 * A blocking one-sided call's steps (api/transfer.c waits between them).
 * start: the arguments and the grant checked (sealed_ok: a sealed grant's
 * bytes may be moved, for the sealed calls), buf staged or registered, the
 * operation posted; 0 or why not (nothing posted). end, once
 * c->ops.waiter_done: the operation's status (a READ's bytes in buf).
 * unstage, when it ended otherwise and the device let go of the stage: the
 * stage keeps none of the bytes (status 0: a READ's go to buf first).
 */
RSEC_MUST_CHECK int rsec_onesided_start(struct rsec_conn *c, const struct rsec_remote_grant *g, uint64_t off,
					void *buf, size_t len, enum rsec_op op, bool sealed_ok);
RSEC_MUST_CHECK int rsec_onesided_end(struct rsec_conn *c, void *buf, size_t len, enum rsec_op op);
void rsec_onesided_unstage(struct rsec_conn *c, void *buf, size_t len, enum rsec_op op, int status);
/* rsec_post's work: the work requests checked and posted (api/post.c checks the arguments and settles). */
RSEC_MUST_CHECK int rsec_onesided_post(struct rsec_conn *c, const struct rsec_wr *wr, unsigned n, unsigned *posted);

/* sealed_post.c */
/*
 * A GRANT of the peer's came: the keys of its grant, made now from the key id
 * it names (grant_keys.h) and kept as long as the grant may be used. Returns
 * 0, RSEC_E_PROTO (a key id with a peer that did not offer it, or none with
 * one that did), RSEC_E_RANGE (a key id we do not hold), RSEC_E_CRYPTO.
 */
RSEC_MUST_CHECK int rsec_peer_grant_arrived(struct rsec_conn *c, const struct rsec_msg_grant *g);
/* The keys of the peer's grant grant_id (the TLS session's with an older peer). Returns 0 or RSEC_E_GRANT. */
RSEC_MUST_CHECK int rsec_peer_grant_keys(const struct rsec_conn *c, uint64_t grant_id, struct rsec_grant_keys *out);
/* The kept key of the peer's sealed grant grant_id, derived now if it is not kept. */
RSEC_MUST_CHECK int rsec_sealed_peer_key(struct rsec_conn *c, uint64_t grant_id, struct rsec_sealed_key **out);
/* The peer revoked grant_id: its key and sealed write go. */
void rsec_sealed_peer_forget(struct rsec_conn *c, uint64_t grant_id);
/* The connection ends: every kept key and sealed write goes. */
void rsec_sealed_peer_clear(struct rsec_conn *c);
/*
 * A sealed write of plain_len bytes at remote_off into g: its slot (one per
 * grant) with a fresh prefix. Returns 0, RSEC_E_GRANT (not a sealed WRITE
 * grant, or written already), RSEC_E_RANGE, RSEC_E_LIMIT, RSEC_E_CRYPTO.
 */
RSEC_MUST_CHECK int rsec_sealed_write_begin(struct rsec_conn *c, const struct rsec_remote_grant *g,
					    uint64_t remote_off, size_t plain_len, struct rsec_sealed_write **out);
/* Seal buf (plain_len bytes, room for the tags) for w; on failure buf holds no plaintext and w is free. */
RSEC_MUST_CHECK int rsec_sealed_write_seal(struct rsec_conn *c, struct rsec_sealed_write *w, uint8_t *buf);
/*
 * w's WRITE ended (status 0: it succeeded): claim it if its grant is still
 * there, else free w. The only way a posted sealed write leaves POSTED.
 */
void rsec_sealed_write_end(struct rsec_conn *c, struct rsec_sealed_write *w, int status);
/* w's WRITE succeeded: tell the granter over TLS (VERIFY). A fault if it cannot. */
RSEC_MUST_CHECK int rsec_sealed_write_claim(struct rsec_conn *c, struct rsec_sealed_write *w);
/*
 * rsec_post's check of an operation on a sealed grant: a READ of the whole
 * grant, or the WRITE rsec_region_seal prepared (*claim: its sealed write).
 * Returns 0 or RSEC_E_RANGE.
 */
RSEC_MUST_CHECK int rsec_sealed_post_check(struct rsec_conn *c, const struct rsec_wr *wr,
					   struct rsec_sealed_write **claim);
/* Open a whole sealed READ grant g read into buf; audited; on failure buf is wiped. */
RSEC_MUST_CHECK int rsec_sealed_read_open(struct rsec_conn *c, const struct rsec_remote_grant *g, uint8_t *buf,
					  size_t *plain_len);

#endif /* RSEC_CONN_H */
