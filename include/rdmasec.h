/* SPDX-License-Identifier: MIT */
/*
 * librdmasec: secure-by-default RDMA connections over IB verbs.
 *
 * Conventions: functions that can fail return 0 on success or a negative
 * RSEC_E* code (rsec_strerror() names it); functions returning a pointer
 * return NULL and set errno. Handles are opaque.
 */
#ifndef RDMASEC_H
#define RDMASEC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum rsec_error {
	RSEC_OK = 0,
	RSEC_E_INVAL = -1,      /* bad argument */
	RSEC_E_NOMEM = -2,      /* out of memory */
	RSEC_E_IO = -3,         /* socket or file error */
	RSEC_E_TLS = -4,        /* TLS failure */
	RSEC_E_AUTH = -5,       /* peer failed authentication */
	RSEC_E_PROTO = -6,      /* malformed or unexpected control message */
	RSEC_E_VERBS = -7,      /* a verbs call failed */
	RSEC_E_MAC = -8,        /* message failed authentication (AEAD/MAC) */
	RSEC_E_SEQ = -9,        /* message out of sequence (replay, loss, reorder) */
	RSEC_E_CLOSED = -10,    /* connection closed */
	RSEC_E_TIMEOUT = -11,   /* deadline passed */
	RSEC_E_LIMIT = -12,     /* a configured limit was reached */
	RSEC_E_RANGE = -13,     /* value or length out of range */
	RSEC_E_NODEV = -14,     /* no usable RDMA device */
	RSEC_E_AGAIN = -15,     /* would block; retry later */
	RSEC_E_QP = -16,        /* the queue pair entered the error state */
	RSEC_E_CRYPTO = -17,    /* a cryptographic primitive failed */
	RSEC_E_GRANT = -18,     /* unknown, expired or revoked grant */
	RSEC_E_CONFIG = -19,    /* bad configuration */
	RSEC_E_DENIED = -20,    /* authenticated, but not authorized (allow rules) */
};

/** rsec_version - the library's version string, "MAJOR.MINOR.PATCH". */
const char *rsec_version(void);

/** rsec_strerror - a static, human-readable description of an RSEC_E* code. */
const char *rsec_strerror(int code);

struct rsec_ctx;      /* one per process and role: RDMA device + TLS credentials */
struct rsec_listener; /* a server's listening control socket */
struct rsec_conn;     /* one authenticated connection: TLS channel + its own PD, CQs, QP */
struct rsec_region;   /* local memory that grants can expose */

enum rsec_aead_choice {
	RSEC_AEAD_DEFAULT = 0, /* AES-256-GCM */
	RSEC_AEAD_AES_256_GCM = 1,
	RSEC_AEAD_CHACHA20_POLY1305 = 2,
};

/*
 * Admission hook, called on a server when an authenticated peer's HELLO
 * starts a new connection, before any RDMA resource exists for it, from the
 * thread that runs that connection's rsec_conn_process(). A connection that
 * resumes a parked session (RESUME instead of HELLO) is not a new one: the
 * hook is not called for it, nor for a peer the context's allow rules
 * refused. Return 0 to admit, or an RSEC_E_* code
 * (typically RSEC_E_LIMIT) to refuse; the peer is told and disconnected.
 */
typedef int (*rsec_admit_fn)(void *arg, const char *peer_identity);

/* How grants expose memory (docs/protocol.md, "Grants"). */
enum rsec_grant_mode {
	RSEC_GRANT_AUTO = 0, /* type-2 memory windows when the device has them, else RSEC_GRANT_MR */
	RSEC_GRANT_MW = 1,   /* type-2 memory windows only; without them grants fail with RSEC_E_NODEV */
	RSEC_GRANT_MR = 2,   /* fallback: one fresh memory registration per grant (new random rkey) */
};

/* rsec_ctx_attr.comp_mask: which fields after admit_arg the caller filled in. */
enum rsec_ctx_attr_mask {
	RSEC_CTX_ATTR_AUDIT = 1u << 0,      /* audit_path */
	RSEC_CTX_ATTR_GRANT_MODE = 1u << 1, /* grant_mode */
	RSEC_CTX_ATTR_QP_POOL = 1u << 2,    /* qp_pool */
	RSEC_CTX_ATTR_DEPTH = 1u << 3,      /* max_inflight */
	RSEC_CTX_ATTR_POLL = 1u << 4,       /* poll_mode */
	RSEC_CTX_ATTR_RESUME = 1u << 5,     /* tls_resume_s */
	RSEC_CTX_ATTR_QPS = 1u << 6,        /* max_qps */
	RSEC_CTX_ATTR_REBUILDS = 1u << 7,   /* rebuilds_per_min */
	RSEC_CTX_ATTR_GRACE = 1u << 8,      /* resume_grace_ms */
	RSEC_CTX_ATTR_CRL = 1u << 9,        /* crl_file */
	RSEC_CTX_ATTR_ALLOW = 1u << 10,     /* allow, n_allow */
	RSEC_CTX_ATTR_REKEY = 1u << 11,     /* rekey_s, rekey_bytes */
};

/* How the library waits for completions (rsec_ctx_attr.poll_mode). */
enum rsec_poll_mode {
	RSEC_POLL_EVENT = 0, /* sleep on the completion channel: no CPU while idle */
	RSEC_POLL_BUSY = 1,  /* spin on the completion queues: lowest latency, a core while waiting */
};

struct rsec_ctx_attr {
	uint32_t comp_mask;        /* enum rsec_ctx_attr_mask: fields after admit_arg to read */
	int is_server;
	const char *device;        /* RDMA device name; NULL: the one owning local_addr */
	const char *local_addr;    /* IP whose port/GID to use; a client's control socket is
				    * bound to it too. NULL: chosen per connection by the
				    * control socket's local address */
	/* Certificate mode: all three. */
	const char *ca_file;
	const char *cert_file;
	const char *key_file;
	/* External-PSK mode instead of certificates (32..64 bytes). */
	const uint8_t *psk;
	size_t psk_len;
	const char *psk_identity;
	enum rsec_aead_choice aead;
	uint32_t recv_slots;       /* receive buffers per connection, 4..4096; 0: 16 */
	uint32_t slot_size;        /* bytes per receive buffer, 4096..1048576; 0: 65536 */
	uint32_t max_msg;          /* largest two-sided message; 0: 16 MiB */
	int handshake_timeout_ms;  /* 0: 10000 */
	rsec_admit_fn admit;       /* server only; NULL admits every authenticated peer */
	void *admit_arg;
	/* Read only when their comp_mask bit is set. */
	const char *audit_path;    /* JSON-lines audit log, appended, created 0600 (docs/audit.md) */
	enum rsec_grant_mode grant_mode;
	uint32_t qp_pool;          /* pre-created QPs drawn at random (QPN randomization);
				    * 0: the default (32 for servers, 4 for clients),
				    * 1: off (the device's sequential QPNs) */
	uint32_t max_inflight;     /* one-sided operations in flight per connection (rsec_post),
				    * 1..RSEC_MAX_INFLIGHT; 0: 128 */
	enum rsec_poll_mode poll_mode; /* every wait of this context's connections */
	uint32_t tls_resume_s;     /* certificate mode: TLS 1.3 session resumption (docs/crypto.md).
				    * A server issues tickets, a client keeps them per destination
				    * and offers each once; a ticket resumes for this many seconds
				    * after the certificate check it stands for, 1..RSEC_MAX_RESUME_S;
				    * 0: never resume. Without the bit: RSEC_DEFAULT_RESUME_S */
	uint32_t max_qps;          /* queue pairs per connection, the first included
				    * (rsec_conn_add_qp): 1..RSEC_MAX_QPS, 1: no further ones;
				    * 0: RSEC_DEFAULT_QPS. Without the bit: 1 on a server
				    * (it takes none unless asked), RSEC_DEFAULT_QPS on a client */
	uint32_t rebuilds_per_min; /* self-healing: how often per minute each queue pair's data
				    * path may be rebuilt under the same session when it fails
				    * (a frame that fails authentication, a QP error, a completion
				    * rdmasec never asks for; docs/protocol.md), 0..RSEC_MAX_REBUILDS;
				    * 0: never, such a failure closes the connection. Without the
				    * bit: RSEC_DEFAULT_REBUILDS. Both sides must allow it */
	uint32_t resume_grace_ms;  /* self-healing of the control channel: how long a session
				    * outlives a lost TLS connection (peer crash, cut, forged
				    * reset), 0..RSEC_MAX_RESUME_GRACE_MS; 0 (the default): it
				    * closes the connection. A server keeps the session that
				    * long for its client to resume it; a client reconnects
				    * (backoff and jitter, TLS resumption) and resumes it, for
				    * that long. Both sides must allow it, and rebuilding too
				    * (rebuilds_per_min > 0: a resume rebuilds the data path
				    * and counts towards that budget). A server that does
				    * must drive all connections of this context from one
				    * thread: a RESUME hands its new channel to the session it
				    * names from inside the rsec_conn_process of the connection
				    * that carried it */
	const char *crl_file;      /* certificate mode: PEM certificate revocation lists, one
				    * from each CA of the peer's chain (OpenSSL's CRL check of
				    * the whole chain); a revoked certificate, or one whose
				    * CRL is missing or out of date, is refused at the
				    * handshake and at TLS resumption. Read at rsec_ctx_new
				    * and rsec_ctx_reload, never in a handshake. NULL: no
				    * revocation */
	const char *const *allow;  /* server: authorization rules (rsec_authz_rule_check);
				    * a peer whose identity matches none is refused after
				    * authentication, before its HELLO costs anything
				    * (RSEC_E_DENIED, audited as "refuse" with the rules).
				    * Copied; rsec_ctx_set_allow replaces them */
	uint32_t n_allow;          /* 0..RSEC_AUTHZ_RULES_MAX; 0: every authenticated peer */
	/* Long sessions get fresh keys: each queue pair's message keys are renewed
	 * from a new X25519 exchange over the TLS channel (docs/crypto.md,
	 * "Rekeying") at least this often, on the same queue pair and without
	 * losing a message, when the peer takes part (both sides of this
	 * version do). Either side may start it. Without the bit:
	 * RSEC_DEFAULT_REKEY_S and RSEC_DEFAULT_REKEY_BYTES. */
	uint32_t rekey_s;          /* seconds, 0..RSEC_MAX_REKEY_S; 0: not by time */
	uint64_t rekey_bytes;      /* bytes sent, received and moved one-sided, 0..RSEC_MAX_REKEY_BYTES; 0: not by bytes */
};

#define RSEC_MAX_INFLIGHT 4096u
#define RSEC_DEFAULT_RESUME_S 600u
#define RSEC_MAX_RESUME_S 86400u
#define RSEC_MAX_QPS 64u
#define RSEC_DEFAULT_QPS 8u
#define RSEC_MAX_REBUILDS 60u
#define RSEC_DEFAULT_REBUILDS 6u
#define RSEC_MAX_RESUME_GRACE_MS 600000u
#define RSEC_DEFAULT_REKEY_S 3600u
#define RSEC_MAX_REKEY_S 604800u
#define RSEC_DEFAULT_REKEY_BYTES (UINT64_C(1) << 36)
#define RSEC_MAX_REKEY_BYTES (UINT64_C(1) << 37) /* half AES-256-GCM's limit per key (2^34 blocks of 16 bytes) */

/**
 * rsec_ctx_new - open the RDMA device and load the TLS credentials.
 * @err: receives a human-readable reason on failure (may be NULL).
 * Returns 0 or RSEC_E_INVAL, RSEC_E_RANGE (a field outside its documented
 * range), RSEC_E_NODEV, RSEC_E_TLS, RSEC_E_CONFIG, RSEC_E_NOMEM.
 */
int rsec_ctx_new(const struct rsec_ctx_attr *attr, struct rsec_ctx **out, char *err, size_t errlen);
void rsec_ctx_free(struct rsec_ctx *ctx);
/** rsec_ctx_audit_errors - audit records that could not be written (a full disk, say) since rsec_ctx_new. */
uint64_t rsec_ctx_audit_errors(const struct rsec_ctx *ctx);
/**
 * rsec_ctx_reload - re-read the CA, certificate, key and CRL from the paths
 * ctx was made with (certificate mode). Atomic: on success new handshakes
 * use the new material while connections made before keep theirs; on any
 * error nothing changes. Either way an audit record `reload` says what
 * happened. Established connections are not closed here: call
 * rsec_conn_check_peer on each. Thread-safe against handshakes.
 * Returns 0, RSEC_E_CONFIG (err names the file and why; also in PSK mode,
 * which has no files), RSEC_E_TLS, RSEC_E_NOMEM, RSEC_E_INVAL.
 */
int rsec_ctx_reload(struct rsec_ctx *ctx, char *err, size_t errlen);
/**
 * rsec_ctx_reload_failed - record that the application's own part of a
 * reload (its configuration file, say) failed, so nothing was reloaded: an
 * audit record `reload`, result `failed`, reason why (no secrets).
 */
void rsec_ctx_reload_failed(struct rsec_ctx *ctx, const char *why);
/**
 * rsec_ctx_cert_expiry - when our own certificate (the one new handshakes
 * present) expires, Unix seconds. Returns 0, RSEC_E_CONFIG (PSK mode),
 * RSEC_E_INVAL.
 */
int rsec_ctx_cert_expiry(struct rsec_ctx *ctx, int64_t *unix_s);
/** rsec_ctx_device - name of the RDMA device in use. */
const char *rsec_ctx_device(const struct rsec_ctx *ctx);

/*
 * Authorization by identity (docs/operations.md, "Authorization"). A rule is
 * one of: an identity exactly as rsec_conn_peer() names it; a prefix ending
 * in '/' followed by '*' ("spiffe://prod.example/storage/" and a star: every
 * identity that starts with the prefix and goes on); '*' alone (every
 * authenticated identity). 1..RSEC_AUTHZ_RULE_MAX printable ASCII characters,
 * no leading or trailing space, no other '*'.
 */
#define RSEC_AUTHZ_RULE_MAX 255u
#define RSEC_AUTHZ_RULES_MAX 64u
/** rsec_authz_rule_check - 0, or RSEC_E_CONFIG with err quoting the rule and saying what is wrong. */
int rsec_authz_rule_check(const char *rule, char *err, size_t errlen);
/** rsec_authz_match - 1 if the (well-formed) rule takes identity, else 0. */
int rsec_authz_match(const char *rule, const char *identity);
/** rsec_authz_allows - 1 if one of the n rules takes identity, else 0 (also when n is 0). */
int rsec_authz_allows(const char *const *rules, size_t n, const char *identity);
/**
 * rsec_ctx_set_allow - replace a server context's authorization rules (a
 * configuration reload): new connections are checked against them, those
 * already admitted stay. All are checked first; on error the old rules stay.
 * Returns 0, RSEC_E_CONFIG (err says which rule), RSEC_E_INVAL, RSEC_E_NOMEM.
 */
int rsec_ctx_set_allow(struct rsec_ctx *ctx, const char *const *rules, uint32_t n, char *err, size_t errlen);

/**
 * rsec_connect - client: TCP + TLS 1.3 to host:port, authenticate the server
 * as server_name (NULL: host), then bring a QP up with parameters exchanged
 * only inside TLS. Blocks up to timeout_ms for the whole set-up.
 */
int rsec_connect(struct rsec_ctx *ctx, const char *host, uint16_t port, const char *server_name,
		 int timeout_ms, struct rsec_conn **out);

int rsec_listen(struct rsec_ctx *ctx, const char *addr, uint16_t port, int backlog,
		struct rsec_listener **out);
/** rsec_listener_fd - readable when rsec_accept() has a connection to take. */
int rsec_listener_fd(const struct rsec_listener *l);
/**
 * rsec_accept - take one pending TCP connection (never blocks). The new
 * connection is still handshaking and owns no RDMA resource; drive it with
 * rsec_conn_process(). Returns RSEC_E_AGAIN when nothing is pending.
 */
int rsec_accept(struct rsec_listener *l, struct rsec_conn **out);
void rsec_listener_free(struct rsec_listener *l);

enum rsec_conn_state {
	RSEC_CONN_HANDSHAKE = 1,  /* TLS and parameter exchange under way */
	RSEC_CONN_ESTABLISHED = 2,
	RSEC_CONN_CLOSED = 3,     /* closed by either side or by an error */
};

/**
 * rsec_conn_add_qp - a further queue pair under c's authenticated session
 * (perftest's -q), without a new handshake: it comes as a connection of its
 * own (struct rsec_conn: sealed messages, regions, grants, rsec_post and
 * rsec_poll, stats), with its own QP drawn from the context's pool (a random
 * QPN), fresh random PSNs and message keys of its own, brought up by one
 * round trip over c's TLS channel. c must be established and not itself one
 * of these. A client asks for one; a server gets, in the order they were
 * asked for, the ones its client asked for (both sides call this). Waits up
 * to timeout_ms (0: a server returns RSEC_E_AGAIN when none is ready; a
 * client, whose request cannot be left half-made, waits up to the context's
 * handshake_timeout_ms). Returns 0, RSEC_E_LIMIT (max_qps of this side, or
 * the peer's, reached, closed ones not yet freed included: the peer's reason
 * is in rsec_conn_error(c); or the 255 a session may open in its lifetime,
 * closed ones included, are used), RSEC_E_PROTO (the peer's library has no further
 * queue pairs), RSEC_E_TIMEOUT, RSEC_E_INVAL, or c's close code. A failed
 * request leaves c as it was. One that came up and that the peer closed at
 * once is still returned, closed (its calls give its close code).
 *
 * The new connection shares c's control channel: use both from one thread;
 * driving either (rsec_conn_process, rsec_poll, any blocking call) drives
 * the channel for both, and rsec_conn_fd of each wakes for it. Its grants are
 * bound to its own QP, so the peer uses them through its own side of it.
 * Closing or freeing it leaves c as it was; c closing closes it with c's
 * close code. Free it with rsec_conn_free, before or after c.
 */
int rsec_conn_add_qp(struct rsec_conn *c, int timeout_ms, struct rsec_conn **out);

/** rsec_conn_fd - one pollable fd covering the TLS socket and the completion channel. */
int rsec_conn_fd(const struct rsec_conn *c);
/**
 * rsec_conn_process - advance the handshake, handle control messages and
 * completions, expire grants. Never blocks, but for one case: a client
 * whose session waits to be resumed (resume_grace_ms) makes one reconnect
 * try when its backoff is due, which may take up to 3 s. Returns 0,
 * RSEC_E_AGAIN while handshaking, or the error that closed the connection.
 */
int rsec_conn_process(struct rsec_conn *c);
/**
 * rsec_conn_turn - an event loop that steps many connections says a turn
 * of its loop begins for c (after its own epoll_wait, or its timer). From
 * then until the next rsec_conn_turn, c's non-blocking calls (timeout_ms 0,
 * rsec_conn_process) ask the kernel which of c's fds have something once,
 * at the first call, and go by that answer for the rest of the turn, where
 * otherwise each call that finds nothing ready asks again (one epoll_wait
 * each). Whatever arrives after the answer leaves rsec_conn_fd readable, so
 * the loop's next wait returns at once. A call that sleeps (timeout_ms > 0)
 * asks again after each sleep. Once called for c, the loop must call it
 * each turn before stepping c. A connection of rsec_conn_add_qp probes its
 * own completion channel on each call, as before.
 */
void rsec_conn_turn(struct rsec_conn *c);
/**
 * rsec_conn_cork - from now until rsec_conn_uncork, hold the work requests
 * c posts (rsec_post's operations, rsec_send's frames and the library's own)
 * instead of handing each to the device, and post them then as one chain:
 * one doorbell, on a software device (rxe, siw) one system call instead of
 * one per call, e.g. for a turn of an event loop that sends a data WRITE and
 * its completion message, or many completions. Everything else is as
 * uncorked: the checks, the return values, the order on the wire,
 * completions (a held operation is reported once it was posted and done).
 * The library posts what is held by itself before any call sleeps (a
 * timeout_ms > 0 that has to wait, rsec_conn_wait), when RSEC_CORK_MAX work
 * requests are held, before a window bind, and when the data path fails or
 * c closes (the device then ends it with the rest in flight: rsec_send's
 * frames are sent again by the rebuilt path, posted operations end with
 * RSEC_E_QP or the close code). An application that sleeps by itself (epoll
 * on rsec_conn_fd) uncorks first. Corking a corked connection does nothing.
 */
void rsec_conn_cork(struct rsec_conn *c);
#define RSEC_CORK_MAX 64
/**
 * rsec_conn_uncork - post what c holds, as one chain, and stop holding.
 * Returns 0, RSEC_E_INVAL, c's close code, or what a failure of the device
 * to take the chain did to the connection (as for rsec_send: the data path
 * is rebuilt and 0 returned, or it closes).
 */
int rsec_conn_uncork(struct rsec_conn *c);
/**
 * rsec_conn_handshake - advance only the TLS handshake of a connection that
 * rsec_accept() or a resuming client made, and nothing after it: no message
 * is read, no admission hook is called, nothing outside this connection is
 * touched. It is the part of accepting whose CPU anyone who can open a TCP
 * connection can ask for, so a server may run it on other threads than the
 * one serving its established connections (one thread at a time per
 * connection; hand it back with a memory barrier, such as a mutex, between
 * threads). Never blocks. Returns RSEC_E_AGAIN while TLS waits for the peer,
 * 0 once TLS is complete (or was already: go on with rsec_conn_process),
 * or the error that closed the connection (as rsec_conn_process would,
 * including the set-up deadline).
 */
int rsec_conn_handshake(struct rsec_conn *c);
enum rsec_conn_state rsec_conn_state(const struct rsec_conn *c);
/**
 * rsec_conn_peer - authenticated identity: the peer certificate's first URI
 * subjectAltName (a SPIFFE ID), else its first DNS subjectAltName, else its
 * subject DN (RFC 2253); "psk:<identity>" for PSKs. At most 255 bytes of
 * visible ASCII for a SAN: a certificate whose name would not fit, or whose
 * URI or DNS names hold control characters, is refused at the handshake.
 */
const char *rsec_conn_peer(const struct rsec_conn *c);
/**
 * rsec_conn_resumed - 1 if this connection's TLS handshake resumed an earlier
 * session of the same context (no certificates exchanged; rsec_conn_peer
 * still names the identity checked then), 0 if it checked certificates or
 * used a PSK.
 */
int rsec_conn_resumed(const struct rsec_conn *c);
/** rsec_conn_peer_addr - the control connection's remote address, "IP:PORT" or "[IPv6]:PORT" ("" if unknown). */
const char *rsec_conn_peer_addr(const struct rsec_conn *c);
/** rsec_conn_error - why the connection closed or the last call failed (no secrets). */
const char *rsec_conn_error(const struct rsec_conn *c);
/**
 * rsec_conn_check_peer - whether an established connection's peer is still
 * good under the context's current allow rules (a server's, after
 * rsec_ctx_set_allow), CRL (after rsec_ctx_reload) and the clock: its
 * identity taken by the rules, and every certificate of its chain but the
 * trust anchor neither revoked nor expired (the leaf only for a TLS-resumed
 * session). 0: good, also for PSK peers the rules take and for the
 * certificate of a session whose control channel is lost (its resumption
 * checks it). RSEC_E_AUTH: it is not; an audit record `peer_revoked` says why
 * ("no longer allowed (RULES)", "certificate revoked", ...; also in @why, may
 * be NULL) and the caller closes the connection (rsec_conn_close).
 * RSEC_E_INVAL.
 */
int rsec_conn_check_peer(struct rsec_conn *c, char *why, size_t whylen);
/** rsec_conn_close - authenticated disconnect: tell the peer over TLS, then tear down. */
int rsec_conn_close(struct rsec_conn *c, const char *reason);
/** rsec_conn_free - release everything; closes first if still open. */
void rsec_conn_free(struct rsec_conn *c);

/**
 * rsec_send - send len bytes (up to the peer's max_msg) as one sealed
 * message. Fragments go out as the peer's flow-control credits allow, for up
 * to timeout_ms (0: not at all); what is left then is copied and sent by the
 * library as credits return (rsec_conn_process and every blocking call drive
 * it), so a message is never sent in part. One such message may wait per
 * connection: while one does, rsec_send first waits up to timeout_ms for it
 * to leave, and if it has not, returns RSEC_E_TIMEOUT (RSEC_E_AGAIN for
 * timeout_ms 0) having sent nothing of buf. A peer that returns no credit for
 * 30 s while a message waits fails the connection (RSEC_E_TIMEOUT).
 * rsec_conn_close discards a waiting message. Returns 0 (posted or queued),
 * RSEC_E_TIMEOUT, RSEC_E_AGAIN, RSEC_E_RANGE (too long), RSEC_E_CLOSED,
 * RSEC_E_QP.
 */
int rsec_send(struct rsec_conn *c, const void *buf, size_t len, int timeout_ms);
/** rsec_send_queued - bytes of an accepted message still waiting for credits (0: rsec_send takes one now). */
size_t rsec_send_queued(const struct rsec_conn *c);
/**
 * rsec_recv - receive the next authenticated message into buf. timeout_ms 0
 * polls (RSEC_E_AGAIN when none). A message that fails authentication or
 * arrives out of sequence is never delivered: the data path is rebuilt
 * (see "Self-healing" below) and the stream goes on, or, when it may not
 * be, the connection closes with RSEC_E_MAC or RSEC_E_SEQ. RSEC_E_RANGE if
 * cap is too small: the message is kept and *len says how long it is.
 */
int rsec_recv(struct rsec_conn *c, void *buf, size_t cap, size_t *len, int timeout_ms);

enum rsec_access {
	RSEC_ACCESS_READ = 1,   /* the peer may RDMA READ */
	RSEC_ACCESS_WRITE = 2,  /* the peer may RDMA WRITE */
	RSEC_GRANT_VERIFIED = 4, /* rsec_grant, READ grants: send a MAC of the bytes for rsec_read_verified */
	RSEC_ACCESS_LOCAL = 8,  /* regions: a local buffer for rsec_post only, never granted */
	RSEC_GRANT_SEALED = 16, /* rsec_grant: the bytes cross the wire sealed (AEAD), see below */
};

/**
 * rsec_region_reg - register local memory of this connection, for grants
 * and as the local side of rsec_post's operations. access (RSEC_ACCESS_*)
 * is the most any grant of it may allow; RSEC_ACCESS_LOCAL alone makes a
 * region that can never be granted. The registration itself gives the peer
 * nothing. Every region can be the source or destination of rsec_post.
 */
int rsec_region_reg(struct rsec_conn *c, void *addr, size_t len, unsigned access,
		    struct rsec_region **out);
/**
 * rsec_region_alloc - allocate len zeroed bytes at a random page-aligned
 * address (not next to earlier buffers: ReDMArk V4) and register them as
 * rsec_region_reg does. rsec_region_free wipes and unmaps them.
 */
int rsec_region_alloc(struct rsec_conn *c, size_t len, unsigned access, struct rsec_region **out);
/** rsec_region_addr - the region's first byte. */
void *rsec_region_addr(const struct rsec_region *r);
void rsec_region_free(struct rsec_region *r);

/* Live grants per connection, each way: rsec_grant refuses the next, a peer's library fails the connection past it. */
#define RSEC_MAX_GRANTS 64u
/**
 * rsec_grant - expose [off, off+len) of a region to the peer through a
 * type-2 memory window bound to this connection's QP only, with a fresh key;
 * the descriptor travels over TLS. ttl_ms 0: until revoked. The peer finds it
 * with rsec_grant_wait(tag). Never waits: the window's bind completes behind
 * the sends already in flight (whose acknowledgement the peer controls), and
 * the descriptor goes out then, driven by rsec_conn_process and every
 * blocking call. *grant_id is valid at once; a grant revoked before its bind
 * completed is never described to the peer. rsec_region_free may be called
 * while binds are in flight: the region goes when they complete.
 * RSEC_E_AGAIN: the connection is not set up yet, or its data path is being
 * rebuilt or its session waits to be resumed; retry. RSEC_E_LIMIT: the
 * connection holds RSEC_MAX_GRANTS live grants already.
 */
int rsec_grant(struct rsec_conn *c, struct rsec_region *r, size_t off, size_t len, unsigned access,
	       uint32_t ttl_ms, uint64_t tag, uint64_t *grant_id);
/** rsec_revoke - invalidate a grant now; the peer's later accesses fail. */
int rsec_revoke(struct rsec_conn *c, uint64_t grant_id);
/**
 * rsec_grant_verify - granter's side of a verified write: wait for the
 * peer's rsec_write_verified() claim on grant_id, revoke the grant, then
 * check the claimed range against the MAC the peer sent over TLS. Returns 0
 * (off and len: the range, now exactly what the peer wrote), RSEC_E_MAC (the
 * bytes differ from what the peer wrote: the range is wiped, never use it),
 * RSEC_E_GRANT (no such live grant), RSEC_E_TIMEOUT (no claim yet; the grant
 * stays live; RSEC_E_AGAIN with timeout_ms <= 0). Any other error closes
 * the connection, and closing revokes every grant.
 */
int rsec_grant_verify(struct rsec_conn *c, uint64_t grant_id, uint64_t *off, uint64_t *len, int timeout_ms);
/**
 * rsec_conn_export_key - out_len (16..64) bytes of keying material from the
 * session's TLS 1.3 exporter (RFC 8446 7.5) under label ("EXPORTER-...",
 * at most 64 bytes, not "EXPORTER-rdmasec...": those are the library's)
 * and context (0..64 bytes): the same at both ends and on every queue pair
 * of the session, never sent, and never renewed: rsec_conn_derive_key()
 * gives keys that follow each rekey. Returns
 * 0, RSEC_E_INVAL, RSEC_E_AGAIN (not established yet), RSEC_E_TLS.
 */
int rsec_conn_export_key(const struct rsec_conn *c, const char *label, const void *context, size_t context_len,
			 void *out, size_t out_len);
/** rsec_conn_grant_mechanism - "mw2" (type-2 windows) or "mr" (fallback registrations); NULL before set-up. */
const char *rsec_conn_grant_mechanism(const struct rsec_conn *c);

/* A grant received from the peer. */
struct rsec_remote_grant {
	uint64_t id;
	uint64_t tag;
	uint64_t len;
	unsigned access;  /* RSEC_ACCESS_*, plus RSEC_GRANT_VERIFIED when a MAC came with it */
	uint32_t ttl_ms;
	uint64_t addr;   /* private to the library */
	uint32_t rkey;   /* private to the library */
	uint8_t mac[32]; /* private to the library */
};
/** rsec_grant_wait - wait for the peer's grant labelled tag. */
int rsec_grant_wait(struct rsec_conn *c, uint64_t tag, struct rsec_remote_grant *out, int timeout_ms);
/**
 * rsec_write / rsec_read - one-sided transfer through a remote grant from or
 * into any local buffer, waiting for it to complete: rsec_post and a wait.
 * Up to 64 KiB are copied through a staging buffer the connection registers
 * once (wiped after each call); longer transfers register buf for the call
 * and deregister it after (use a region and rsec_post to pay neither a copy
 * nor a registration per operation). More than 1 MiB moves as several work
 * requests of at most 1 MiB, one per free max_inflight slot (a lost packet
 * is resent from its piece's start; the device's retry budget is per
 * piece); it counts as one operation in rsec_stats. Operations posted
 * with rsec_post may be in flight meanwhile; their completions stay for
 * rsec_poll. If it does not complete within timeout_ms, the connection
 * fails (RSEC_E_TIMEOUT, and rsec_conn_error says so): its queue pair is
 * moved to the error state first, so a late READ response can never land in
 * buf after the call returned. RSEC_E_AGAIN: max_inflight operations are
 * in flight already, or the data path is being rebuilt; RSEC_E_GRANT: g is
 * a grant of a data path since rebuilt that was not bound again (sealed,
 * claimed, or an older peer; ask for a new one); RSEC_E_QP: the
 * device failed it, or a rebuild began while it was in flight (it may or
 * may not have happened). After either, with the connection still open,
 * rsec_conn_error names the grant or the operation and the rebuild's cause.
 */
int rsec_write(struct rsec_conn *c, const struct rsec_remote_grant *g, uint64_t off, const void *buf,
	       size_t len, int timeout_ms);
int rsec_read(struct rsec_conn *c, const struct rsec_remote_grant *g, uint64_t off, void *buf, size_t len,
	      int timeout_ms);
/**
 * rsec_write_verified - rsec_write, then send the peer over TLS a MAC (keyed
 * from this connection's TLS secrets) of grant id, offset, length and the
 * bytes, for its rsec_grant_verify(). The grant is single use.
 */
int rsec_write_verified(struct rsec_conn *c, const struct rsec_remote_grant *g, uint64_t off, const void *buf,
			size_t len, int timeout_ms);
/*
 * Sealed grants (docs/crypto.md, "Sealed grants"): with RSEC_GRANT_SEALED
 * the bytes of a one-sided transfer cross the wire encrypted and
 * authenticated, under a key of that grant alone derived from the TLS
 * session (never sent). A sealed transfer of P bytes takes rsec_sealed_len(P)
 * bytes of the grant: the ciphertext in place of the plaintext, then one
 * 16-byte tag per started chunk of RSEC_SEALED_CHUNK bytes. A sealed grant
 * allows READ or WRITE, not both, and only the calls below: rsec_write
 * and rsec_read refuse it (RSEC_E_RANGE), rsec_post takes only the posted
 * form below.
 *
 * WRITE: the peer's rsec_write_sealed seals and writes, then tells us over
 * TLS what it wrote; rsec_grant_open revokes the grant and opens the bytes
 * in place. READ: rsec_grant seals [off, off+len) in place at once, so len
 * must be rsec_sealed_len(P), the plaintext in its first P bytes (if sealing
 * fails, RSEC_E_CRYPTO, the range is wiped); the peer's rsec_read_sealed
 * reads and opens; our rsec_grant_open revokes the grant and turns the range
 * back into plaintext (so do rsec_revoke, expiry and closing, once the
 * window is gone; if the device will not free it, the range is wiped
 * instead). While it holds ciphertext, a sealed READ grant's range may not
 * overlap another grant of ours, nor another grant it (RSEC_E_RANGE). An old
 * ciphertext written again,
 * chunks moved or cut, any changed byte: the opener gets RSEC_E_MAC and the
 * range wiped, never unauthenticated bytes.
 *
 * Posted form (no copy, no registration per call, many in flight): seal in
 * a registered region with rsec_region_seal and rsec_post the WRITE it
 * names; rsec_post a READ of a whole sealed READ grant into a region and
 * open it there with rsec_region_open once it completed. rsec_post takes no
 * other operation on a sealed grant.
 */
#define RSEC_SEALED_CHUNK 65536u
#define RSEC_SEALED_TAG 16u
/** rsec_sealed_len - bytes a sealed transfer of plain_len bytes takes in a grant; 0 if plain_len is 0 or too large. */
size_t rsec_sealed_len(size_t plain_len);
/**
 * rsec_write_sealed - seal len bytes of buf (a copy: buf is not changed) and
 * write them at off into a sealed WRITE grant, taking rsec_sealed_len(len)
 * bytes of it; then tell the granter over TLS. One transfer per grant is
 * opened (a second claim fails the connection). Returns rsec_write's
 * codes, RSEC_E_GRANT (not a sealed WRITE grant, or the peer revoked it
 * while the WRITE was in flight: nothing claimed), RSEC_E_RANGE, RSEC_E_CRYPTO.
 */
int rsec_write_sealed(struct rsec_conn *c, const struct rsec_remote_grant *g, uint64_t off, const void *buf,
		      size_t len, int timeout_ms);
/**
 * rsec_read_sealed - read a whole sealed READ grant into buf (cap >= g->len:
 * the tags land there too) and open it in place: *len plaintext bytes at buf.
 * Returns 0, RSEC_E_MAC (buf wiped), RSEC_E_GRANT (not a sealed READ grant),
 * RSEC_E_RANGE (cap too small), or rsec_read's errors.
 */
int rsec_read_sealed(struct rsec_conn *c, const struct rsec_remote_grant *g, void *buf, size_t cap, size_t *len,
		     int timeout_ms);
/**
 * rsec_region_seal - seal plain_len bytes at r[off] in place, for one
 * rsec_post WRITE of rsec_sealed_len(plain_len) bytes from r[off] to
 * remote_off of the sealed WRITE grant g (the region must hold that many
 * bytes from off). rsec_post then takes exactly that operation, once; when
 * it has succeeded, the library tells the granter over TLS what it wrote,
 * as rsec_write_sealed does (so the granter's rsec_grant_open opens it).
 * Until then do not change those bytes. One sealed write per grant: a
 * second rsec_region_seal for g replaces one not yet posted. Returns 0,
 * RSEC_E_GRANT (not a sealed WRITE grant, or one written already),
 * RSEC_E_RANGE (also: r is memory the process may not write), RSEC_E_LIMIT (sealed writes of 64 live grants at once),
 * RSEC_E_INVAL, RSEC_E_CRYPTO (r[off...] wiped).
 */
int rsec_region_seal(struct rsec_conn *c, const struct rsec_remote_grant *g, uint64_t remote_off,
		     struct rsec_region *r, size_t off, size_t plain_len);
/**
 * rsec_region_open - open in place what a completed rsec_post READ of the
 * whole sealed READ grant g (g->len bytes from offset 0) put at r[off]:
 * *plain_len bytes of plaintext at r[off] on success. Returns 0,
 * RSEC_E_MAC (not what the granter sealed: r[off, off+g->len) wiped),
 * RSEC_E_GRANT (not a sealed READ grant), RSEC_E_RANGE (also: r is memory
 * the process may not write, or the range overlaps bytes rsec_region_seal
 * sealed whose WRITE has not ended: plaintext never goes there), RSEC_E_INVAL.
 */
int rsec_region_open(struct rsec_conn *c, const struct rsec_remote_grant *g, struct rsec_region *r, size_t off,
		     size_t *plain_len);
/**
 * rsec_grant_open - granter's side of a sealed grant. WRITE: wait for the
 * peer's rsec_write_sealed claim, revoke, open in place; READ: revoke and
 * turn the range back into plaintext. *off and *len: where the plaintext is
 * in the grant. Returns 0, RSEC_E_MAC (not what the peer sealed, or changed
 * since: the range is wiped), RSEC_E_GRANT (no such live sealed grant),
 * RSEC_E_TIMEOUT / RSEC_E_AGAIN as rsec_grant_verify; other errors close
 * the connection.
 */
int rsec_grant_open(struct rsec_conn *c, uint64_t grant_id, uint64_t *off, uint64_t *len, int timeout_ms);

/**
 * rsec_read_verified - read a whole RSEC_GRANT_VERIFIED grant (g->len bytes,
 * cap >= g->len) and check it against the granter's MAC. Returns 0,
 * RSEC_E_MAC (buf wiped: the bytes are not what the granter exposed),
 * RSEC_E_GRANT (the grant carries no MAC), or rsec_read's errors.
 */
int rsec_read_verified(struct rsec_conn *c, const struct rsec_remote_grant *g, void *buf, size_t cap,
		       int timeout_ms);

/*
 * Asynchronous one-sided operations (docs/async.md). rsec_post queues work
 * requests on the connection's QP without waiting, up to the context's
 * max_inflight at once; rsec_poll reaps their completions in batches.
 * Completions come in the order the operations were posted. The local side
 * of every operation is a registered region of this connection, so nothing
 * is registered per operation; neither buffer may be touched (a WRITE's
 * source changed, a READ's destination read) before its completion.
 */
enum rsec_op {
	RSEC_OP_WRITE = 1, /* RDMA WRITE local -> the peer's grant (needs RSEC_ACCESS_WRITE) */
	RSEC_OP_READ = 2,  /* RDMA READ the peer's grant -> local (needs RSEC_ACCESS_READ) */
};

enum rsec_wr_flags {
	/* Report no completion for this operation: it is done when a later
	 * operation of this connection completes (selective signalling, as
	 * perftest's --cq-mod). Its failure is still reported. */
	RSEC_WR_UNSIGNALED = 1u << 0,
};

struct rsec_wr {
	uint64_t user_id;                      /* returned in its rsec_wc */
	enum rsec_op op;
	unsigned flags;                        /* enum rsec_wr_flags */
	const struct rsec_remote_grant *grant; /* the peer's grant (rsec_grant_wait) */
	uint64_t remote_off;                   /* offset into the grant */
	struct rsec_region *local;             /* a region of this connection */
	size_t local_off;                      /* offset into it */
	uint32_t len;                          /* bytes, > 0 */
};

struct rsec_wc {
	uint64_t user_id;
	enum rsec_op op;
	int status;   /* 0; RSEC_E_QP: the device failed it, or a rebuild ended it in flight
		       * (the data path is rebuilt, or the connection closed if it may not
		       * be); or the connection's close code (closed while in flight: it
		       * did not happen) */
	uint32_t len; /* bytes transferred (the posted length on success, 0 otherwise) */
};

/**
 * rsec_post - post n operations in order, in chains of up to 32 work
 * requests. Each is checked first (grant access and range, local region and
 * range, a READ's region writable); *posted (may be NULL) says how many went
 * out (each of those is reported by rsec_poll, even if the call failed; the
 * chains before a bad request may be on the wire already). Returns 0 (all
 * posted), RSEC_E_AGAIN (max_inflight reached, or the data path is being
 * rebuilt: the first *posted went out; reap with rsec_poll and post the
 * rest), RSEC_E_INVAL (bad wr[*posted]: nothing of it posted), RSEC_E_RANGE
 * (wr[*posted] outside its grant or region, or not allowed by the grant),
 * RSEC_E_GRANT (wr[*posted]'s grant belongs to a data path since rebuilt),
 * RSEC_E_VERBS (the device refused the chain), RSEC_E_CLOSED or the
 * connection's close code.
 */
int rsec_post(struct rsec_conn *c, const struct rsec_wr *wr, unsigned n, unsigned *posted);
/** rsec_post_write / rsec_post_read - rsec_post of one operation. */
int rsec_post_write(struct rsec_conn *c, const struct rsec_remote_grant *g, uint64_t remote_off,
		    struct rsec_region *local, size_t local_off, uint32_t len, uint64_t user_id);
int rsec_post_read(struct rsec_conn *c, const struct rsec_remote_grant *g, uint64_t remote_off,
		   struct rsec_region *local, size_t local_off, uint32_t len, uint64_t user_id);
/**
 * rsec_poll - reap up to max completions of posted operations into wc,
 * driving the connection (control messages, receives) as rsec_conn_process
 * does. Waits up to timeout_ms for the first (0: never; the context's
 * poll_mode says how). Returns the number reaped (0: none yet), or the
 * close code once the connection is closed and every operation posted
 * before has been reported (those in flight when it closed come back with
 * that code as status: none of them can touch memory any more; to be sure
 * of that the first call after a failure may wait up to 1 s for the
 * device, whatever timeout_ms).
 */
int rsec_poll(struct rsec_conn *c, struct rsec_wc *wc, unsigned max, int timeout_ms);
/** rsec_inflight - operations posted and not yet reaped by rsec_poll. */
unsigned rsec_inflight(const struct rsec_conn *c);

struct rsec_conn_stats {
	uint64_t msgs_sent, msgs_received, bytes_sent, bytes_received;
	/* Data frames and verified transfers that failed authentication: forged
	 * or corrupt, never delivered; a frame whose header does not even parse
	 * counts here too. malformed: how many of those did not parse.
	 * seq_violations: frames that authenticated but came replayed or out of
	 * order. Each rebuilds the data path, or closes the connection. */
	uint64_t mac_failures, seq_violations, malformed;
	uint64_t qp_errors;
	uint64_t grants_issued, grants_revoked, grants_expired;
	uint64_t rdma_writes, rdma_reads;
	uint32_t local_qpn, remote_qpn;
	/* Completions the peer caused that rdmasec never asks for (a WRITE WITH
	 * IMMEDIATE, a SEND_WITH_INV, a frame over our buffer): each rebuilds
	 * the data path, or closes the connection with RSEC_E_PROTO. Also
	 * control messages that break the protocol (out of turn, malformed for
	 * their state): those always close with RSEC_E_PROTO. */
	uint64_t protocol_violations;
	/* Rebuilds of this queue pair's data path that completed (self-healing). */
	uint64_t rebuilds;
	/* Times the session went on over a new control channel (resume_grace_ms). */
	uint64_t resumes;
};
int rsec_conn_stats(const struct rsec_conn *c, struct rsec_conn_stats *out);

/**
 * Self-healing. When a queue pair's data path fails in a way anyone who can
 * put a packet on the wire can cause (a frame that fails authentication or
 * sequencing, the QP in the error state, a completion rdmasec never asks
 * for) and both sides allow it (rsec_ctx_attr.rebuilds_per_min), the
 * connection does not close: both sides rebuild its data path over the TLS
 * channel (new QP, fresh PSNs, new message keys) within one round trip, and
 * every two-sided message arrives exactly once and in order across it. No
 * two-sided call fails because of a rebuild: rsec_send and rsec_recv go on.
 * rsec_post, rsec_write, rsec_read and rsec_grant return RSEC_E_AGAIN while
 * it is under way (retry). One-sided operations in flight complete with
 * RSEC_E_QP (done or not). Grants go on: each plain grant that was live is
 * bound again on the new queue pair with a fresh key and announced again
 * under its id before the rebuild ends, so the holder's rsec_remote_grant
 * keeps working as it is. Sealed grants and WRITE grants already claimed
 * (and every grant, with a peer that does not bind grants again) are
 * revoked: the granter's audit log says so, the holder's copies are refused
 * with RSEC_E_GRANT and rsec_conn_error naming the rebuild (ask for a new
 * one). stats.rebuilds counts
 * rebuilds, the audit log has a "rebuild" record for each, and
 * rsec_conn_rebuild_reason tells the latest one's cause. Past the per-minute
 * budget, the connection closes with the failure's code, as without it
 * (a lost TLS connection: with the code of that loss, such as
 * RSEC_E_CLOSED or RSEC_E_TIMEOUT).
 * With resume_grace_ms, a lost TLS connection is handled the same way: the
 * session waits (a client reconnects) and goes on over a new one, calls
 * waiting meanwhile; stats.resumes counts it.
 */
/**
 * rsec_conn_rebuild_reason - why the latest completed rebuild happened (the
 * one stats.rebuilds counted last); NULL if none completed.
 */
const char *rsec_conn_rebuild_reason(const struct rsec_conn *c);
/**
 * rsec_conn_rekeys - how many times this queue pair's message keys were
 * renewed (rsec_ctx_attr.rekey_s, rekey_bytes) since its data path was set
 * up, rebuilds included; 0 for NULL.
 */
uint64_t rsec_conn_rekeys(const struct rsec_conn *c);
/**
 * rsec_conn_key_id - the id of the keys this queue pair seals under now.
 * It grows with each rekey (rekey_s, rekey_bytes) and each rebuild of the
 * data path, and both sides agree on what each id names. A sender that
 * protects data with rsec_conn_derive_key() takes the id now and tells its
 * peer which one it used. 0 for NULL (and until the first rekey or rebuild).
 */
uint64_t rsec_conn_key_id(const struct rsec_conn *c);
/**
 * rsec_conn_derive_key - out_len (16..64) bytes of keying material of key
 * id `id` of this queue pair, under label (1..64 bytes, not "rdmasec...":
 * those are the library's) and context (0..64 bytes): the same at both ends,
 * never sent. Unlike rsec_conn_export_key(), it follows the rekey chain
 * (docs/crypto.md, "Rekeying"): each id's keys come from a fresh X25519
 * exchange, and once an id's secret is wiped its keys cannot be made again.
 * The library holds the secret of the id in use, of one being agreed with
 * the peer, and of the 3 ids before (a rebuild or rekey supersedes one);
 * work begun under an older id must be redone. For an application that
 * seals its own transfers through long-lived grants (rdmasec-blk). Returns
 * 0, RSEC_E_INVAL, RSEC_E_AGAIN (no keys yet), RSEC_E_RANGE (no longer, or
 * never, an id of this queue pair), RSEC_E_CRYPTO.
 */
int rsec_conn_derive_key(const struct rsec_conn *c, uint64_t id, const char *label, const void *context,
			 size_t context_len, void *out, size_t out_len);

#ifdef __cplusplus
}
#endif
#endif /* RDMASEC_H */
