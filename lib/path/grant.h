/* SPDX-License-Identifier: MIT */
/*
 * What the grant files share (region.c, grant.c, grant_claim.c,
 * grant_peer.c); the rest of lib/ uses session/conn.h's declarations.
 */
#ifndef RSEC_PATH_GRANT_H
#define RSEC_PATH_GRANT_H

#include <stdbool.h>
#include <stdint.h>

#include "base/audit.h"
#include "grant_table.h"
#include "rdmasec.h"
#include "result.h"

struct rsec_conn;
struct rsec_region;

#define RSEC_GRANT_ACCESS_RW (RSEC_ACCESS_READ | RSEC_ACCESS_WRITE)

/* READ, WRITE or both, nothing else. */
static inline bool rsec_grant_access_valid(unsigned access)
{
	return (access & RSEC_GRANT_ACCESS_RW) && !(access & ~(unsigned)RSEC_GRANT_ACCESS_RW);
}

/* Fallback registrations instead of windows? RSEC_E_NODEV if windows are demanded and missing. (region.c) */
RSEC_MUST_CHECK int rsec_grant_use_mr(const struct rsec_conn *c, bool *mr);
/* Deregister, wipe and unmap what we mapped, free. (region.c) */
void rsec_region_destroy(struct rsec_region *r);

/* An audit record of one of our grants; off and span: the bytes it is about. (grant.c) */
void rsec_grant_audit_local(struct rsec_conn *c, enum rsec_audit_event ev, const struct rsec_local_grant *g,
			    const char *result, const char *reason, uint64_t off, uint64_t span);
/* Revoke g now, or when its bind completes; a device that refuses is a fault (the connection must close). (grant.c) */
RSEC_MUST_CHECK int rsec_grant_invalidate(struct rsec_conn *c, struct rsec_local_grant *g, enum rsec_audit_event ev);

/* Does g's range hold what the peer's claim says it wrote? *rc: why it could not tell. (grant_claim.c) */
bool rsec_grant_check_claim(struct rsec_conn *c, const struct rsec_local_grant *g, int *rc);

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
RSEC_MUST_CHECK int rsec_grant_verify_begin(struct rsec_conn *c, uint64_t grant_id, uint64_t *off, uint64_t *len,
					    struct rsec_local_grant **g);
RSEC_MUST_CHECK int rsec_grant_open_begin(struct rsec_conn *c, uint64_t grant_id, uint64_t *off, uint64_t *len,
					  struct rsec_local_grant **g);
bool rsec_grant_claim_arrived(const struct rsec_local_grant *g, uint64_t grant_id);
RSEC_MUST_CHECK int rsec_grant_claim_settle(struct rsec_conn *c, struct rsec_local_grant *g, uint64_t grant_id);
RSEC_MUST_CHECK int rsec_grant_verify_end(struct rsec_conn *c, struct rsec_local_grant *g, uint64_t *off,
					  uint64_t *len);
RSEC_MUST_CHECK int rsec_grant_open_end(struct rsec_conn *c, struct rsec_local_grant *g, uint64_t *off,
					uint64_t *len);

#endif
