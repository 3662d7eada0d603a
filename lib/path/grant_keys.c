/* SPDX-License-Identifier: MIT */
/* The keys of grants, and the grantee's store of them (grant_keys.h). */
#include <string.h>

#include <openssl/crypto.h>

#include "base/sealed.h"
#include "grant_keys.h"

int rsec_grant_keys_make(struct rsec_grant_keys *k, const struct rsec_rekey *rk, bool chain, uint64_t key_id,
			 uint64_t grant_id)
{
	*k = (struct rsec_grant_keys){ .chain = chain };
	if (!chain)
		return 0;
	const uint8_t *s = rsec_rekey_secret_of(rk, key_id);
	RSEC_ENSURE(s != NULL, RSEC_E_RANGE);
	return rsec_rekey_grant_secret(s, grant_id, k->secret);
}

int rsec_grant_keys_sealed(const struct rsec_grant_keys *k, SSL *ssl, uint64_t grant_id,
			   uint8_t out[static RSEC_REKEY_SECRET_LEN])
{
	_Static_assert(RSEC_SEALED_KEY_LEN == RSEC_REKEY_SECRET_LEN, "a grant's sealed key is a chain-sized secret");
	if (k->chain)
		return rsec_rekey_grant_sealed_key(k->secret, out);
	RSEC_ENSURE(ssl != NULL, RSEC_E_INVAL);
	return rsec_sealed_key(ssl, grant_id, out);
}

int rsec_grant_keys_mac(const struct rsec_grant_keys *k, const struct rsec_seal *seal, bool server_side,
			uint64_t grant_id, uint64_t off, const uint8_t *data, size_t len,
			uint8_t mac[static RSEC_SEAL_DATAMAC_LEN])
{
	if (!k->chain)
		return rsec_seal_data_mac(seal, server_side, grant_id, off, data, len, mac);
	uint8_t key[RSEC_REKEY_SECRET_LEN];
	int rc = rsec_rekey_grant_mac_key(k->secret, server_side, key);
	if (rc == 0)
		rc = rsec_seal_data_mac_with(key, grant_id, off, data, len, mac);
	OPENSSL_cleanse(key, sizeof(key));
	return rc;
}

void rsec_grant_keys_wipe(struct rsec_grant_keys *k)
{
	OPENSSL_cleanse(k, sizeof(*k));
}

/* Where grant_id's keys go: its own entry, a free one, one revoked or expired, else the oldest grant's. */
static struct rsec_peer_grant_key *place_for(struct rsec_peer_grant_keys *s, uint64_t grant_id, uint64_t now_ms)
{
	struct rsec_peer_grant_key *free_e = NULL, *dead = NULL, *oldest = NULL;
	for (unsigned i = 0; i < RSEC_PEER_GRANT_KEYS; i++) {
		struct rsec_peer_grant_key *e = &s->e[i];
		if (!e->used) {
			free_e = free_e ? free_e : e;
			continue;
		}
		if (e->grant_id == grant_id)
			return e;
		if (e->revoked || (e->expires_ms && e->expires_ms <= now_ms))
			dead = dead ? dead : e;
		if (!oldest || e->grant_id < oldest->grant_id)
			oldest = e;
	}
	return free_e ? free_e : dead ? dead : oldest;
}

void rsec_pgk_keep(struct rsec_peer_grant_keys *s, uint64_t grant_id, uint64_t expires_ms,
		   const struct rsec_grant_keys *k, uint64_t now_ms)
{
	struct rsec_peer_grant_key *e = place_for(s, grant_id, now_ms);
	OPENSSL_cleanse(e, sizeof(*e));
	*e = (struct rsec_peer_grant_key){ .used = true, .grant_id = grant_id, .expires_ms = expires_ms, .keys = *k };
}

const struct rsec_grant_keys *rsec_pgk_find(const struct rsec_peer_grant_keys *s, uint64_t grant_id)
{
	for (unsigned i = 0; i < RSEC_PEER_GRANT_KEYS; i++)
		if (s->e[i].used && s->e[i].grant_id == grant_id)
			return &s->e[i].keys;
	return NULL;
}

void rsec_pgk_revoked(struct rsec_peer_grant_keys *s, uint64_t grant_id)
{
	for (unsigned i = 0; i < RSEC_PEER_GRANT_KEYS; i++)
		if (s->e[i].used && s->e[i].grant_id == grant_id)
			s->e[i].revoked = true;
}

void rsec_pgk_clear(struct rsec_peer_grant_keys *s)
{
	OPENSSL_cleanse(s, sizeof(*s));
}
