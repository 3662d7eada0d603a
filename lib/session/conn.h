/* SPDX-License-Identifier: MIT */
/*
 * Internal layout of contexts and connections, owned by the session layer:
 * ctx.c (device and credentials), conn.c (event loop and teardown), ctrl.c
 * and setup.c (control messages, ctrl.h), settle.c (path faults), lane.c,
 * rebuild.c, resume.c. A connection holds its queue pair's engine as
 * `path` (path/path.h): the path layer sees only that, never the
 * connection; it records its faults in path.fault and acts on none of them.
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
#include "path/check.h"
#include "path/data.h"
#include "path/grant.h"
#include "path/onesided.h"
#include "path/path.h"
#include "path/sealed_post.h"
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
#define RSEC_DEV_CACHE 8
/* ctx.c: the device owning local address ip, opened once per context. */
RSEC_MUST_CHECK int rsec_ctx_dev_for(struct rsec_ctx *ctx, const char *ip, struct rsec_dev **out);
/* ctx.c: whether identity passes the context's allow rules; if not, why describes them. */
bool rsec_ctx_authorized(struct rsec_ctx *ctx, const char *identity, char *why, size_t cap);

/* ctx.c: a connection's PD, CQs and QP on dev (from rsec_ctx_dev_for), drawn from dev's QP pool. */
RSEC_MUST_CHECK int rsec_ctx_take_qp(struct rsec_ctx *ctx, struct rsec_dev *dev, struct rsec_qp *q);

/*
 * ctx.c: what the exported context calls (api/context.c) do, arguments as theirs: rsec_ctx_new,
 * rsec_ctx_set_allow, rsec_ctx_free, rsec_ctx_reload, rsec_ctx_reload_failed, rsec_ctx_cert_expiry,
 * rsec_conn_check_peer, rsec_listen.
 */
int rsec_ctx_create(const struct rsec_ctx_attr *a, struct rsec_ctx **out, char *err, size_t errlen);
int rsec_ctx_allow(struct rsec_ctx *ctx, const char *const *rules, uint32_t n, char *err, size_t errlen);
void rsec_ctx_destroy(struct rsec_ctx *ctx);
int rsec_ctx_reload_files(struct rsec_ctx *ctx, char *err, size_t errlen);
void rsec_ctx_audit_reload_failed(struct rsec_ctx *ctx, const char *why);
int rsec_ctx_own_not_after(struct rsec_ctx *ctx, int64_t *unix_s);
int rsec_conn_recheck_peer(struct rsec_conn *c, char *why, size_t whylen);
int rsec_ctx_listen(struct rsec_ctx *ctx, const char *addr, uint16_t port, int backlog, struct rsec_listener **out);

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
	bool was_established; /* reached PHASE_ESTABLISHED, whatever came after */
	int epfd;             /* the channel's socket and (data path) the completion channel */
	struct rsec_chan own_chan; /* the root's (a lane's is unused); resume.c moves it whole; path.chan points to it */
	uint32_t sock_events;      /* the channel's socket's events in epfd */
	char peer[RSEC_TLS_IDENTITY_MAX]; /* rsec_tls_peer_identity: refused, never cut, if longer */
	bool tls_resumed; /* the handshake resumed a ticket: no certificates this time */
	bool admit_refused; /* server: the admission hook refused its HELLO */
	char error[256];
	uint64_t deadline_ms; /* set-up deadline */
	enum rsec_aead_alg aead;

	/* The queue pair's engine and everything it owns (path/path.h), valid from PHASE_QP_INFO on. */
	struct rsec_path path;

	bool sock_event;          /* busy polling, or path.events_known: the control socket has something */
	bool turns;               /* the application calls rsec_conn_turn: one look at the fds per turn */
	bool turn_probed;         /* ... and this turn's look was taken: chan_event and sock_event hold */
	uint64_t next_full_ms;    /* busy polling: when the next whole rsec_conn_process is due */

	struct rsec_resume rs;

	/*
	 * Lanes (lane.c): the further queue pairs of a session. A lane is a
	 * connection of its own for data and shares its root's channel (path.chan).
	 */
	struct rsec_conn *root;   /* a lane: the session's first connection (NULL once that is freed) */
	uint16_t lane;            /* 0: the session's first connection; else its index on the wire */
	bool lane_taken;          /* a lane: handed to the application */
	bool peer_lanes;          /* root: the peer's HELLO offered RSEC_WIRE_FEATURE_LANES */
	bool peer_rebuilds;       /* root: the peer's HELLO offered RSEC_WIRE_FEATURE_REBUILD */
	bool peer_rebinds;        /* root: and RSEC_WIRE_FEATURE_REBIND: grants outlive a rebuild */
	bool peer_rekeys;         /* root: the peer's HELLO offered RSEC_WIRE_FEATURE_REKEY */
	bool peer_grant_keys;     /* root: and RSEC_WIRE_FEATURE_GRANT_KEYS: grants keyed from the rekey chain */
	bool peer_path_checks;    /* root: the peer's HELLO offered RSEC_WIRE_FEATURE_PATH_CHECK */
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
 * A path call on c returned rc: the fault it recorded (c->path.fault), if any,
 * settled now: the data path rebuilt if it may be (0), else the connection
 * closed (its close code). Without a fault, rc as it is.
 */
RSEC_MUST_CHECK int rsec_conn_settle(struct rsec_conn *c, int rc);
/*
 * The control channel failed under one of our sends: read what the peer sent
 * before it went (a DISCONNECT and its reason), so that the connection ends
 * with the peer's word rather than our failed send's. Returns what reading did.
 */
int rsec_conn_last_words(struct rsec_conn *c);
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
 * conn.c: what the exported connection calls (api/connection.c) do, arguments as theirs:
 * rsec_conn_handshake, rsec_conn_process (the library's own callers too), rsec_accept,
 * rsec_conn_close, rsec_conn_free (the library's own callers too), rsec_conn_stats.
 */
int rsec_conn_setup_step(struct rsec_conn *c);
int rsec_conn_progress(struct rsec_conn *c);
int rsec_conn_accept(struct rsec_listener *l, struct rsec_conn **out);
int rsec_conn_close_local(struct rsec_conn *c, const char *reason);
void rsec_conn_destroy(struct rsec_conn *c);
int rsec_conn_stats_fill(const struct rsec_conn *c, struct rsec_conn_stats *out);
/*
 * Advance the connection as the blocking calls do: rsec_conn_progress, or
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
/*
 * What c's path engine must know of it (path.h, struct rsec_path_cfg), from
 * c, its root and its context once set-up negotiated them: called before
 * the data path is made, and fixed from then on.
 */
void rsec_conn_configure_path(struct rsec_conn *c);
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
/*
 * PATH_CHECK (path/data.h): ours goes when due (a failure to send it fails
 * or parks the connection like any control frame's); the peer's is kept for
 * the data path's next poll to judge. Both return 0 or the failure.
 */
RSEC_MUST_CHECK int rsec_rebuild_check_step(struct rsec_conn *c);
RSEC_MUST_CHECK int rsec_rebuild_on_check(struct rsec_conn *c, const struct rsec_msg *m);
/* Does the peer take our PATH_CHECKs (it offered RSEC_WIRE_FEATURE_PATH_CHECK)? */
static inline bool rsec_path_check_possible(const struct rsec_conn *c)
{
	const struct rsec_conn *root = c->lane ? c->root : c;
	return root && root->peer_path_checks;
}
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

/* The peer broke the protocol: counted, audited, the connection fails with RSEC_E_PROTO. */
int rsec_conn_violation(struct rsec_conn *c, const char *why);

#endif /* RSEC_CONN_H */
