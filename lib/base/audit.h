/* SPDX-License-Identifier: MIT */
/*
 * The audit log: one JSON object per line for every security-relevant
 * event (docs/audit.md). Records say who (authenticated identity, or the
 * address when there is none yet), when, which region with which rights and
 * window key; never key material or message contents.
 */
#ifndef RSEC_AUDIT_H
#define RSEC_AUDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "result.h"

enum rsec_audit_event {
	RSEC_AUDIT_ACCEPT = 1,       /* connection established */
	RSEC_AUDIT_REFUSE,           /* admission refused (limit) after authentication */
	RSEC_AUDIT_AUTH_FAILURE,     /* TLS/peer authentication failed */
	RSEC_AUDIT_CLOSE,            /* connection closed (reason says why) */
	RSEC_AUDIT_GRANT,            /* we exposed a region to the peer */
	RSEC_AUDIT_REVOKE,           /* we revoked a grant */
	RSEC_AUDIT_EXPIRE,           /* a grant reached its ttl */
	RSEC_AUDIT_VERIFIED_WRITE,   /* the peer's write into our grant was checked (result ok/mismatch) */
	RSEC_AUDIT_VERIFIED_READ,    /* our read from the peer's grant was checked (result ok/mismatch) */
	RSEC_AUDIT_MAC_FAILURE,      /* a sealed message failed authentication */
	RSEC_AUDIT_SEQ_VIOLATION,    /* a sealed message arrived out of sequence */
	RSEC_AUDIT_QP_ERROR,         /* the queue pair entered the error state */
	RSEC_AUDIT_SUPPRESSED,       /* records held back by the rate limit below, counted */
	RSEC_AUDIT_PROTOCOL_VIOLATION, /* a completion rdmasec never asks for (WRITE WITH IMMEDIATE, ...) */
	RSEC_AUDIT_SEALED_OPEN,      /* we opened a sealed grant of ours after revoking it (ok/mismatch) */
	RSEC_AUDIT_SEALED_READ,      /* we opened what we read from the peer's sealed grant (ok/mismatch) */
	RSEC_AUDIT_REBUILD,          /* the data path was rebuilt under the same session (reason says why) */
	RSEC_AUDIT_RESUME,           /* the control channel was lost ("lost") or the session resumed on a new one ("ok") */
	RSEC_AUDIT_RELOAD,           /* credentials re-read (rsec_ctx_reload): "ok" with our certificate, or "failed" with why */
	RSEC_AUDIT_PEER_REVOKED,     /* an established peer is revoked, expired or no longer allowed now: closed */
	RSEC_AUDIT_REKEY,            /* a queue pair's keys were renewed: reason says the new phase and why */
};
#define RSEC_AUDIT_EVENT_LAST RSEC_AUDIT_REKEY

/*
 * Records of peers that never authenticated (peer NULL: auth_failure, refuse
 * and close) cost an attacker nothing but a TCP connection, so each log
 * writes at most RSEC_AUDIT_UNAUTH_RATE of them a second, after a burst of
 * RSEC_AUDIT_UNAUTH_BURST (a token bucket on a monotonic clock). The rest are
 * counted per event, and one "suppressed" record per event (count, first and
 * last time) goes out before the next record written, or at rsec_audit_close.
 * A record with an authenticated peer is never held back.
 */
#define RSEC_AUDIT_UNAUTH_RATE 20    /* records a second, sustained */
#define RSEC_AUDIT_UNAUTH_BURST 100  /* records at once, after a quiet spell */

/* The region a grant-related record is about. */
struct rsec_audit_region {
	uint64_t grant_id;
	uint64_t addr, len;          /* the exposed range, in the granter's address space */
	uint64_t offset, span;       /* verified transfers: the range checked within the grant */
	unsigned access;             /* RSEC_ACCESS_* bits */
	uint32_t rkey;               /* the window's (or fallback MR's) key */
	uint32_t ttl_ms;             /* 0: until revoked */
	const char *mechanism;       /* "mw2" (type-2 window) or "mr" (fallback registration) */
};

/* What a "suppressed" record reports. */
struct rsec_audit_summary {
	enum rsec_audit_event event; /* the event held back */
	uint64_t count;
	uint64_t first_ms, last_ms;  /* wall clock of the first and last one held back */
};

struct rsec_audit_record {
	enum rsec_audit_event event;
	uint64_t time_ms;            /* wall clock, ms since the epoch; 0: now */
	bool is_server;              /* our role */
	uint64_t conn_id;            /* per-context connection number, 0: none */
	const char *peer;            /* authenticated identity; NULL: not authenticated */
	const char *peer_addr;       /* "ip:port" of the control connection; NULL: unknown */
	const char *result;          /* short outcome ("ok", "mismatch", ...); NULL: omitted */
	const char *reason;          /* free text, never secret; NULL: omitted */
	const struct rsec_audit_region *region; /* NULL: none */
	uint32_t local_qpn, remote_qpn; /* 0: none yet */
	const struct rsec_audit_summary *summary; /* RSEC_AUDIT_SUPPRESSED; NULL: none */
};

/* Name of an event as it appears in the "event" field; NULL if unknown. */
const char *rsec_audit_event_name(enum rsec_audit_event ev);

/*
 * Encode r as one JSON object (no newline) into out, NUL-terminated.
 * Returns the length, RSEC_E_INVAL (bad record), RSEC_E_RANGE (cap too
 * small; out holds ""), RSEC_E_NOMEM.
 */
RSEC_MUST_CHECK int rsec_audit_encode(const struct rsec_audit_record *r, char *out, size_t cap);

struct rsec_audit; /* an open log, safe to share between threads */

/* Open (create 0600, append) path. Returns 0, RSEC_E_INVAL, RSEC_E_IO, RSEC_E_NOMEM. */
RSEC_MUST_CHECK int rsec_audit_open(const char *path, struct rsec_audit **out);
/*
 * Append one record as one line with a single write(2), after any pending
 * "suppressed" records. NULL a: no-op, 0. A record held back by the rate
 * limit is counted and returns 0.
 */
RSEC_MUST_CHECK int rsec_audit_write(struct rsec_audit *a, const struct rsec_audit_record *r);
/* Writes the pending "suppressed" records, then closes. */
void rsec_audit_close(struct rsec_audit *a);
/* Records held back by the rate limit since rsec_audit_open (summarised or still pending). */
uint64_t rsec_audit_suppressed(struct rsec_audit *a);
/* Tests: the rate limit's monotonic clock (ms); the bucket starts full at its time. */
void rsec_audit_set_clock(struct rsec_audit *a, uint64_t (*now_ms)(void));

#endif /* RSEC_AUDIT_H */
