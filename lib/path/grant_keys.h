/* SPDX-License-Identifier: MIT */
/*
 * The keys of a grant (docs/crypto.md, "Grant keys"): the sealed-grant key
 * and the data-MAC keys of its verified transfers. With a peer that offers
 * RSEC_WIRE_FEATURE_GRANT_KEYS, each grant has a secret of its own from its
 * queue pair's rekey chain, at the key id its GRANT names (the one in use
 * when the granter made it): a grant made after a rekey is keyed from that
 * rekey's fresh exchange. With an older peer the keys come from the TLS
 * session as before (the exporter, and rsec_seal's data-MAC keys).
 *
 * A grant's secret stays as long as the grant may be used: the granter keeps
 * it with the grant, the grantee in a store of its own (the application
 * holds the grants it took), so a grant outlives the key id it was made under.
 */
#ifndef RSEC_PATH_GRANT_KEYS_H
#define RSEC_PATH_GRANT_KEYS_H

#include <stdbool.h>
#include <stdint.h>

#include <openssl/ssl.h>

#include "base/rekey.h"
#include "base/seal.h"
#include "result.h"

struct rsec_grant_keys {
	bool chain; /* secret is the grant's own; else the keys are the TLS session's */
	uint8_t secret[RSEC_REKEY_SECRET_LEN];
};

/*
 * The keys of grant grant_id, made under key id key_id of rk's chain when
 * chain is set (else the TLS session's). Returns 0, RSEC_E_RANGE (rk no
 * longer holds key_id), RSEC_E_CRYPTO.
 */
RSEC_MUST_CHECK int rsec_grant_keys_make(struct rsec_grant_keys *k, const struct rsec_rekey *rk, bool chain,
					 uint64_t key_id, uint64_t grant_id);
/* The grant's sealed-grant key (the session's: from ssl). Returns 0, RSEC_E_INVAL, RSEC_E_TLS, RSEC_E_CRYPTO. */
RSEC_MUST_CHECK int rsec_grant_keys_sealed(const struct rsec_grant_keys *k, SSL *ssl, uint64_t grant_id,
					   uint8_t out[static RSEC_REKEY_SECRET_LEN]);
/*
 * The data MAC of a verified transfer through the grant, made by the server
 * (server_side) or the client (the session's: seal's data-MAC keys).
 * Returns 0, RSEC_E_INVAL, RSEC_E_CRYPTO.
 */
RSEC_MUST_CHECK int rsec_grant_keys_mac(const struct rsec_grant_keys *k, const struct rsec_seal *seal,
					bool server_side, uint64_t grant_id, uint64_t off, const uint8_t *data,
					size_t len, uint8_t mac[static RSEC_SEAL_DATAMAC_LEN]);
void rsec_grant_keys_wipe(struct rsec_grant_keys *k);

/*
 * The grantee's store: the secrets of the peer's grants, by grant id. A
 * grant's entry goes when the peer revokes it, when its ttl ran out, and
 * when room is needed for a newer grant (the peer holds at most
 * RSEC_MAX_GRANTS live ones: the oldest then is dead).
 */
#define RSEC_PEER_GRANT_KEYS 128u
struct rsec_peer_grant_key {
	bool used, revoked;
	uint64_t grant_id;
	uint64_t expires_ms; /* 0: never */
	struct rsec_grant_keys keys;
};
struct rsec_peer_grant_keys {
	struct rsec_peer_grant_key e[RSEC_PEER_GRANT_KEYS];
};

/* Keep k for grant_id (expiring at expires_ms; 0: never), in place of what the store held for it. */
void rsec_pgk_keep(struct rsec_peer_grant_keys *s, uint64_t grant_id, uint64_t expires_ms,
		   const struct rsec_grant_keys *k, uint64_t now_ms);
/* The keys of grant_id, or NULL. */
const struct rsec_grant_keys *rsec_pgk_find(const struct rsec_peer_grant_keys *s, uint64_t grant_id);
/* The peer revoked grant_id: its entry is the first to go when room is needed. */
void rsec_pgk_revoked(struct rsec_peer_grant_keys *s, uint64_t grant_id);
/* Wipe every entry. */
void rsec_pgk_clear(struct rsec_peer_grant_keys *s);

#endif
