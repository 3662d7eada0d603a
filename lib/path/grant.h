/* SPDX-License-Identifier: MIT */
/*
 * Grants of one queue pair: ours (grant.c, region.c, grant_claim.c) and the
 * peer's (grant_peer.c).
 */
#ifndef RSEC_PATH_GRANT_H
#define RSEC_PATH_GRANT_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "base/audit.h"
#include "base/wire.h"
#include "grant_table.h"
#include "path.h"
#include "rdmasec.h"
#include "result.h"


#define RSEC_GRANT_ACCESS_RW (RSEC_ACCESS_READ | RSEC_ACCESS_WRITE)

/* READ, WRITE or both, nothing else. */
static inline bool rsec_grant_access_valid(unsigned access)
{
	return (access & RSEC_GRANT_ACCESS_RW) && !(access & ~(unsigned)RSEC_GRANT_ACCESS_RW);
}

/* Fallback registrations instead of windows? RSEC_E_NODEV if windows are demanded and missing. (region.c) */
RSEC_MUST_CHECK int rsec_grant_use_mr(const struct rsec_path *path, bool *mr);
/* A region: what grants of it may allow, or RSEC_ACCESS_LOCAL alone (never granted). */
static inline bool rsec_region_access_valid(unsigned access)
{
	return access == RSEC_ACCESS_LOCAL || rsec_grant_access_valid(access);
}
/*
 * rsec_region_reg's and rsec_region_alloc's work (api/memory.c checks the
 * arguments and the connection): addr registered, or len bytes mapped at a
 * random address and registered. *out: the region, or NULL. (region.c)
 */
RSEC_MUST_CHECK int rsec_region_make(struct rsec_path *path, void *addr, size_t len, unsigned access,
				     struct rsec_region **out);
RSEC_MUST_CHECK int rsec_region_map(struct rsec_path *path, size_t len, unsigned access, struct rsec_region **out);
/* Deregister, wipe and unmap what we mapped, free. (region.c) */
void rsec_region_destroy(struct rsec_region *r);
/*
 * The path's RDMA resources go (its windows already have): the regions the
 * application still holds lose their registrations, which would keep the
 * protection domain, and leave the path; rsec_region_free then only wipes and
 * unmaps. (region.c)
 */
void rsec_region_teardown(struct rsec_path *path);

/* An audit record of one of our grants; off and span: the bytes it is about. (grant.c) */
void rsec_grant_audit_local(struct rsec_path *path, enum rsec_audit_event ev, const struct rsec_local_grant *g,
			    const char *result, const char *reason, uint64_t off, uint64_t span);
/* Revoke g now, or when its bind completes; a device that refuses is a fault (the connection must close). (grant.c) */
RSEC_MUST_CHECK int rsec_grant_invalidate(struct rsec_path *path, struct rsec_local_grant *g, enum rsec_audit_event ev);

/* Does g's range hold what the peer's claim says it wrote? *rc: why it could not tell. (grant_claim.c) */
bool rsec_grant_check_claim(struct rsec_path *path, const struct rsec_local_grant *g, int *rc);

/*
 * rsec_grant_verify's and rsec_grant_open's steps (grant_claim.c; api/claim.c
 * waits between them). begin: the arguments checked, *off and *len zeroed,
 * *g the live grant of ours to wait for a claim on (0), or why not; open's
 * begin returns 1 when done already: a sealed READ grant turned back into
 * plaintext, its length in *len. claim_arrived: the claim came or g went.
 * claim_settle: g revoked now that the claim is in (nobody may change the
 * bytes any more), or why not (the connection closed, g expired). end: the
 * claimed bytes checked (verify: their MAC; open: opened in place) and
 * audited, *off and *len set; bytes that fail are wiped.
 */
RSEC_MUST_CHECK int rsec_grant_verify_begin(struct rsec_path *path, uint64_t grant_id, uint64_t *off, uint64_t *len,
					    struct rsec_local_grant **g);
RSEC_MUST_CHECK int rsec_grant_open_begin(struct rsec_path *path, uint64_t grant_id, uint64_t *off, uint64_t *len,
					  struct rsec_local_grant **g);
bool rsec_grant_claim_arrived(const struct rsec_local_grant *g, uint64_t grant_id);
RSEC_MUST_CHECK int rsec_grant_claim_settle(struct rsec_path *path, struct rsec_local_grant *g, uint64_t grant_id);
RSEC_MUST_CHECK int rsec_grant_verify_end(struct rsec_path *path, struct rsec_local_grant *g, uint64_t *off,
					  uint64_t *len);
RSEC_MUST_CHECK int rsec_grant_open_end(struct rsec_path *path, struct rsec_local_grant *g, uint64_t *off,
					uint64_t *len);
/* A window bind or one-sided completion (checked against what we posted); a bound grant is announced. */
RSEC_MUST_CHECK int rsec_grant_on_wc(struct rsec_path *path, const struct ibv_wc *wc);
/* The same completion, failed: the connection is failing; only the bookkeeping is done. */
void rsec_grant_on_wc_failed(struct rsec_path *path, const struct ibv_wc *wc);
RSEC_MUST_CHECK int rsec_grant_on_msg(struct rsec_path *path, const struct rsec_msg *m);
/* rsec_grant's and rsec_revoke's work (api/granting.c checks c and settles). */
RSEC_MUST_CHECK int rsec_grant_issue(struct rsec_path *path, struct rsec_region *r, size_t off, size_t len,
				     unsigned access, uint32_t ttl_ms, uint64_t tag, uint64_t *grant_id);
RSEC_MUST_CHECK int rsec_grant_revoke(struct rsec_path *path, uint64_t grant_id);
/* The audit record of a read from the peer's grant g (verified or sealed): its result and, on a mismatch, why. */
void rsec_grant_audit_remote(struct rsec_path *path, enum rsec_audit_event ev, const struct rsec_remote_grant *g,
			     const char *result, const char *reason);
/* VERIFY for grant_id's bytes [off, off + len): their MAC, or (RSEC_WIRE_MAC_SEALED) the prefix that opens them. */
RSEC_MUST_CHECK int rsec_grant_send_verify(struct rsec_path *path, uint64_t grant_id, uint64_t off, uint64_t len,
					   uint8_t mac_alg, const uint8_t *mac, size_t mac_len);
RSEC_MUST_CHECK int rsec_grant_expire(struct rsec_path *path);
/* The connection is closing: QP to error, every live grant revoked (and audited) now. */
void rsec_grant_close(struct rsec_path *path);
/*
 * The data path is being rebuilt (its QP is gone): every grant of ours
 * revoked (audited: why), the peer's forgotten; when both sides take grants
 * bound again (cfg.rebinds), plain live grants stay, to be bound
 * again, and the peer's wait for theirs. Returns 0, or the connection's
 * failure when the device would not free a grant.
 */
RSEC_MUST_CHECK int rsec_grant_reset(struct rsec_path *path, const char *why);
/* The new QP is connected: the grants that outlived the rebuild are bound on it, announced once bound. */
RSEC_MUST_CHECK int rsec_grant_rebind(struct rsec_path *path);
void rsec_grant_teardown(struct rsec_path *path);
/* One user of r's registrations (a bind, an operation) is over; a region freed meanwhile goes with the last. */
void rsec_region_unuse(struct rsec_path *path, struct rsec_region *r);

#endif
