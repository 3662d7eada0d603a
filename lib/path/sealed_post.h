/* SPDX-License-Identifier: MIT */
/*
 * The peer's grants' keys and sealed writes into them (sealed_post.c).
 */
#ifndef RSEC_PATH_SEALED_POST_H
#define RSEC_PATH_SEALED_POST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "base/wire.h"
#include "path.h"
#include "rdmasec.h"
#include "result.h"

/*
 * A GRANT of the peer's came: the keys of its grant, made now from the key id
 * it names (grant_keys.h) and kept as long as the grant may be used. Returns
 * 0, RSEC_E_PROTO (a key id with a peer that did not offer it, or none with
 * one that did), RSEC_E_RANGE (a key id we do not hold), RSEC_E_CRYPTO.
 */
RSEC_MUST_CHECK int rsec_peer_grant_arrived(struct rsec_path *path, const struct rsec_msg_grant *g);
/* The keys of the peer's grant grant_id (the TLS session's with an older peer). Returns 0 or RSEC_E_GRANT. */
RSEC_MUST_CHECK int rsec_peer_grant_keys(const struct rsec_path *path, uint64_t grant_id, struct rsec_grant_keys *out);
/* The kept key of the peer's sealed grant grant_id, derived now if it is not kept. */
RSEC_MUST_CHECK int rsec_sealed_peer_key(struct rsec_path *path, uint64_t grant_id, struct rsec_sealed_key **out);
/* The peer revoked grant_id: its key and sealed write go. */
void rsec_sealed_peer_forget(struct rsec_path *path, uint64_t grant_id);
/* The connection ends: every kept key and sealed write goes. */
void rsec_sealed_peer_clear(struct rsec_path *path);
/*
 * A sealed write of plain_len bytes at remote_off into g: its slot (one per
 * grant) with a fresh prefix. Returns 0, RSEC_E_GRANT (not a sealed WRITE
 * grant, or written already), RSEC_E_RANGE, RSEC_E_LIMIT, RSEC_E_CRYPTO.
 */
RSEC_MUST_CHECK int rsec_sealed_write_begin(struct rsec_path *path, const struct rsec_remote_grant *g,
					    uint64_t remote_off, size_t plain_len, struct rsec_sealed_write **out);
/* Seal buf (plain_len bytes, room for the tags) for w; on failure buf holds no plaintext and w is free. */
RSEC_MUST_CHECK int rsec_sealed_write_seal(struct rsec_path *path, struct rsec_sealed_write *w, uint8_t *buf);
/*
 * w's WRITE ended (status 0: it succeeded): claim it if its grant is still
 * there, else free w. The only way a posted sealed write leaves POSTED.
 */
void rsec_sealed_write_end(struct rsec_path *path, struct rsec_sealed_write *w, int status);
/* w's WRITE succeeded: tell the granter over TLS (VERIFY). A fault if it cannot. */
RSEC_MUST_CHECK int rsec_sealed_write_claim(struct rsec_path *path, struct rsec_sealed_write *w);
/*
 * rsec_post's check of an operation on a sealed grant: a READ of the whole
 * grant, or the WRITE rsec_region_seal prepared (*claim: its sealed write).
 * Returns 0 or RSEC_E_RANGE.
 */
RSEC_MUST_CHECK int rsec_sealed_post_check(struct rsec_path *path, const struct rsec_wr *wr,
					   struct rsec_sealed_write **claim);
/* Open a whole sealed READ grant g read into buf; audited; on failure buf is wiped. */
RSEC_MUST_CHECK int rsec_sealed_read_open(struct rsec_path *path, const struct rsec_remote_grant *g, uint8_t *buf,
					  size_t *plain_len);

/* rsec_region_seal's and rsec_region_open's work (api/memory.c checks the connection). */
RSEC_MUST_CHECK int rsec_sealed_region_seal(struct rsec_path *path, const struct rsec_remote_grant *g,
					    uint64_t remote_off, struct rsec_region *r, size_t off, size_t plain_len);
RSEC_MUST_CHECK int rsec_sealed_region_open(struct rsec_path *path, const struct rsec_remote_grant *g,
					    struct rsec_region *r, size_t off, size_t *plain_len);

#endif /* RSEC_PATH_SEALED_POST_H */
