/* SPDX-License-Identifier: MIT */
/*
 * Grant bookkeeping, apart from verbs and the network so it can be tested on
 * its own: the grants we issued (slots, ids, expiry, the peer's write
 * claims) and the grants the peer issued to us (with the MACs of verified
 * READ grants, which arrive just before them). grant.c does the verbs work.
 *
 * Each side numbers its own grants; RSEC_GRANT_ID_SERVER marks the
 * server's, so a VERIFY's grant id says whose grant it names, and the lane
 * (queue pair of the session, wire.h) sits in bits 48..55, so no two grants
 * of a session share an id (sealed grants' keys are derived from it).
 */
#ifndef RSEC_GRANT_TABLE_H
#define RSEC_GRANT_TABLE_H

#include <stdbool.h>
#include <stdint.h>

#include "verbs/mw.h"
#include "rdmasec.h"
#include "result.h"
#include "base/seal.h"
#include "base/wire.h"
#include "grant_keys.h"

#define RSEC_GRANT_ID_SERVER (UINT64_C(1) << 63)
#define RSEC_GRANT_ID_LANE_SHIFT 48

struct rsec_region;

struct rsec_local_grant {
	bool live;     /* issued: described to the peer, or about to be once its bind completes */
	bool busy;     /* its bind is in flight: the slot and the window stay until it completes */
	bool announce; /* send GRANT (and the MAC of a verified READ grant) when the bind completes */
	bool rebind;   /* live through a rebuild: bound again on the new QP and announced again, same id */
	bool verified;
	/* Its keys (grant_keys.h), made when it was, under key id key_id: they stay for its life. */
	struct rsec_grant_keys keys;
	uint64_t key_id;
	/* A verified READ grant: the MAC of its bytes, taken by rsec_grant itself, so that announcing it
	 * when the bind completes (inside rsec_conn_process) costs no pass over the bytes. */
	bool read_mac_ready;
	uint8_t read_mac[RSEC_SEAL_DATAMAC_LEN];
	bool sealed;   /* RSEC_GRANT_SEALED: claims are sealed transfers (lib/base/sealed.h) */
	uint64_t tag;
	struct rsec_region *region; /* window mode: the region the window is bound in */
	uint64_t id;
	struct rsec_mw mw;    /* type-2 window mode */
	struct ibv_mr *mr;    /* fallback mode: this grant's own registration */
	bool by_mr;
	uint8_t *addr;        /* the exposed range */
	uint64_t len;
	unsigned access;      /* RSEC_ACCESS_READ/WRITE */
	uint32_t rkey, ttl_ms;
	uint64_t expires_ms;  /* 0: never */
	/* The peer's claim about what it wrote (a VERIFY naming this grant):
	 * an HMAC, or for a sealed grant the plaintext length and nonce prefix. */
	bool claim;
	uint64_t claim_off, claim_len;
	uint8_t claim_mac[RSEC_SEAL_DATAMAC_LEN];
	/* A claim already in at a rebuild was checked then, under the keys it was
	 * made with (the next epoch's differ): the result, for rsec_grant_verify. */
	bool claim_checked, claim_ok;
	/* A sealed READ grant: what was sealed in place (plaintext length, prefix,
	 * the grant's key: kept so the range can be opened whatever becomes of
	 * the TLS session), and once it ended, how turning it back into plaintext went. */
	uint64_t sealed_len;
	uint8_t sealed_prefix[RSEC_WIRE_SEALED_PREFIX_LEN];
	uint8_t sealed_key[32];
	bool unsealed;
	int unseal_rc;
};

struct rsec_pending_mac {
	bool live;
	uint8_t alg; /* RSEC_WIRE_MAC_HMAC_SHA256, or RSEC_WIRE_MAC_SEALED (mac: the prefix) */
	uint64_t grant_id, len;
	uint8_t mac[RSEC_SEAL_DATAMAC_LEN];
};

struct rsec_grant_table {
	bool is_server;
	uint16_t lane;
	uint64_t next_id;
	uint64_t peer_max_id;  /* the highest id of a GRANT the peer sent */
	uint64_t peer_floor;   /* the peer's grants below this went with a rebuilt data path */
	struct rsec_local_grant local[RSEC_MAX_GRANTS];
	struct rsec_remote_grant remote[RSEC_MAX_GRANTS];
	bool remote_live[RSEC_MAX_GRANTS];
	struct rsec_pending_mac pending[RSEC_MAX_GRANTS];
	/* Grants the peer bound again after a rebuild (RSEC_WIRE_FEATURE_REBIND):
	 * their ids are stale, their handles resolve here. remote_stale: one not
	 * yet handed out, held back until it comes again. */
	bool remote_stale[RSEC_MAX_GRANTS];
	struct rsec_remote_grant rebound[RSEC_MAX_GRANTS];
	bool rebound_live[RSEC_MAX_GRANTS];
};

void rsec_gt_init(struct rsec_grant_table *t, bool is_server, uint16_t lane);
/* The lane a grant id (ours or the peer's) was issued on. */
uint16_t rsec_gt_id_lane(uint64_t grant_id);
/* Did this side issue grant_id? */
bool rsec_gt_ours(const struct rsec_grant_table *t, uint64_t grant_id);

/* A slot neither live nor busy, zeroed, its index in *idx; NULL when all are taken. */
struct rsec_local_grant *rsec_gt_slot(struct rsec_grant_table *t, unsigned *idx);
/* The id the next rsec_gt_activate gives (a sealed READ grant seals under it first). */
uint64_t rsec_gt_next_id(const struct rsec_grant_table *t);
/* Mark g live under a new id, expiring ttl_ms after now_ms (ttl 0: never). */
void rsec_gt_activate(struct rsec_grant_table *t, struct rsec_local_grant *g, uint64_t now_ms, uint32_t ttl_ms);
/* The live grant with this id, or NULL. */
struct rsec_local_grant *rsec_gt_find(struct rsec_grant_table *t, uint64_t grant_id);
/* A live grant whose ttl has run out by now_ms, or NULL. */
struct rsec_local_grant *rsec_gt_expired(struct rsec_grant_table *t, uint64_t now_ms);
/* When the first live grant with a ttl runs out (rsec_now_ms time), or 0 if none has one. */
uint64_t rsec_gt_next_expiry(const struct rsec_grant_table *t);

/*
 * A write claim (VERIFY naming one of our grants). Returns 0 (recorded),
 * RSEC_E_GRANT (no such live grant: revoked or expired meanwhile; ignore),
 * RSEC_E_PROTO (not a WRITE grant, a second claim, outside the grant, or a
 * sealed claim for a plain grant or the reverse).
 */
RSEC_MUST_CHECK int rsec_gt_claim(struct rsec_grant_table *t, const struct rsec_msg_verify *v);

/* The MAC of a verified READ grant of the peer's. Returns 0 or RSEC_E_PROTO (offset != 0, table full). */
RSEC_MUST_CHECK int rsec_gt_pending_mac(struct rsec_grant_table *t, const struct rsec_msg_verify *v);
/*
 * A GRANT from the peer; a pending MAC for it (same id and length, READ
 * access) makes it RSEC_GRANT_VERIFIED. A sealed grant comes out with
 * RSEC_GRANT_SEALED; a sealed READ grant needs its pending prefix (for a
 * plaintext whose sealed form is the grant's length), kept in mac. Returns
 * 0, RSEC_E_PROTO (an id of ours or of another lane, a sealed READ grant without its prefix),
 * RSEC_E_LIMIT (RSEC_MAX_GRANTS already open).
 */
RSEC_MUST_CHECK int rsec_gt_remote_add(struct rsec_grant_table *t, const struct rsec_msg_grant *g);
/* The peer revoked grant_id. */
void rsec_gt_remote_revoke(struct rsec_grant_table *t, uint64_t grant_id);
/* Hand out (and forget) the peer's live grant labelled tag; false if none. */
bool rsec_gt_remote_take(struct rsec_grant_table *t, uint64_t tag, struct rsec_remote_grant *out);

/*
 * Forget every grant of the peer's and every MAC it announced (its grants
 * went with a rebuilt data path): each id it issued so far is stale from now
 * on. keep (the peer binds its live grants again): the ones not yet handed
 * out wait, held back, for their GRANT to come again.
 */
void rsec_gt_forget_peer(struct rsec_grant_table *t, bool keep);
/* Is grant_id one of the peer's (on this lane) that a rebuild made stale? */
bool rsec_gt_peer_stale(const struct rsec_grant_table *t, uint64_t grant_id);
/*
 * A GRANT for a stale id: the peer bound that grant again after a rebuild
 * (same id, tag, range and access; a new key). Handles already handed out
 * resolve to it, one still held back is released. Returns 0, RSEC_E_PROTO
 * (not a stale id of the peer's, a sealed grant, another range or access),
 * RSEC_E_LIMIT (table full).
 */
RSEC_MUST_CHECK int rsec_gt_remote_rebind(struct rsec_grant_table *t, const struct rsec_msg_grant *g);
/* The rebuild is over: grants held back that did not come again are gone. */
void rsec_gt_rebind_done(struct rsec_grant_table *t);
/*
 * What to use for handle g now: g itself, or for a stale id the grant as
 * bound again (its key, address and MAC). False: stale and not bound again.
 */
bool rsec_gt_resolve(const struct rsec_grant_table *t, const struct rsec_remote_grant *g,
		     struct rsec_remote_grant *out);

/* Wipe everything (keys, MACs, addresses); windows and MRs must be released first. */
void rsec_gt_wipe(struct rsec_grant_table *t);

#endif /* RSEC_GRANT_TABLE_H */
