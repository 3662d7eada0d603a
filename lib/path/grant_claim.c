/* SPDX-License-Identifier: MIT */
/*
 * The peer's claims on our grants (docs/protocol.md): rsec_grant_verify and
 * rsec_grant_open (api/claim.c) wait for the claim; the steps here find the
 * grant, revoke it once the claim came so nobody may change the bytes any
 * more, then check them. A verified claim carries an HMAC of
 * what the writer wrote, under the sender's data-MAC key; a sealed one
 * carries the plaintext length and nonce prefix of a sealed transfer
 * (lib/base/sealed.h), and the bytes in the grant are AEAD ciphertext under
 * the grant's own key.
 */
#include <string.h>

#include <openssl/crypto.h>

#include "grant.h"

/*
 * Open in place what the peer's claim says it sealed into our WRITE grant g,
 * under the grant's key, wiped after. A failure wipes the sealed range, the
 * key's derivation included: unopened bytes never stay.
 */
static RSEC_MUST_CHECK int open_sealed_claim(struct rsec_path *path, const struct rsec_local_grant *g)
{
	struct rsec_sealed_params p = {
		.alg = path->cfg.aead, .grant_id = g->id, .offset = g->claim_off, .plain_len = g->claim_len
	};
	memcpy(p.prefix, g->claim_mac, sizeof(p.prefix));
	uint8_t *buf = g->addr + g->claim_off, key[RSEC_SEALED_KEY_LEN];
	int rc = rsec_grant_keys_sealed(&g->keys, rsec_chan_ssl(path->chan), g->id, key);
	if (rc == 0)
		rc = rsec_sealed_open(key, &p, buf);
	else
		OPENSSL_cleanse(buf, rsec_sealed_size(p.plain_len));
	OPENSSL_cleanse(key, sizeof(key));
	return rc;
}

/* A live grant of ours, or NULL; one past its ttl but not yet swept counts as gone. */
static struct rsec_local_grant *find_live(struct rsec_path *path, uint64_t grant_id)
{
	struct rsec_local_grant *g = rsec_gt_find(&path->gt, grant_id);
	if (g && g->expires_ms && g->expires_ms <= rsec_now_ms())
		return NULL;
	return g;
}

bool rsec_grant_claim_arrived(const struct rsec_local_grant *g, uint64_t grant_id)
{
	return g->claim || !g->live || g->id != grant_id;
}

int rsec_grant_claim_settle(struct rsec_path *path, struct rsec_local_grant *g, uint64_t grant_id)
{
	RSEC_GUARD(rsec_path_usable(path, false)); /* closing revoked it: say why, not RSEC_E_GRANT */
	if (!g->live || g->id != grant_id)
		return RSEC_E_GRANT; /* expired meanwhile */
	RSEC_GUARD(rsec_grant_invalidate(path, g, RSEC_AUDIT_REVOKE));
	path->stats.grants_revoked++;
	return 0;
}

/* Does g's range hold what the peer's claim says it wrote? *rc: why it could not tell. */
bool rsec_grant_check_claim(struct rsec_path *path, const struct rsec_local_grant *g, int *rc)
{
	uint8_t mac[RSEC_SEAL_DATAMAC_LEN];
	*rc = rsec_grant_keys_mac(&g->keys, &path->seal, !path->cfg.is_server, g->id, g->claim_off,
				  g->addr + g->claim_off, g->claim_len, mac);
	bool ok = *rc == 0 && rsec_seal_mac_equal(mac, g->claim_mac);
	OPENSSL_cleanse(mac, sizeof(mac));
	return ok;
}

/* What verify and open start with: the arguments, outputs zeroed, a live grant on an established connection. */
static RSEC_MUST_CHECK int find_claimable(struct rsec_path *path, uint64_t grant_id, uint64_t *off, uint64_t *len,
					  struct rsec_local_grant **out)
{
	if (!path || !off || !len)
		return RSEC_E_INVAL;
	*off = *len = 0;
	RSEC_GUARD(rsec_path_usable(path, false));
	*out = find_live(path, grant_id);
	return *out ? 0 : RSEC_E_GRANT;
}

int rsec_grant_verify_begin(struct rsec_path *path, uint64_t grant_id, uint64_t *off, uint64_t *len,
			    struct rsec_local_grant **g)
{
	RSEC_GUARD(find_claimable(path, grant_id, off, len, g));
	return !((*g)->access & RSEC_ACCESS_WRITE) || (*g)->sealed ? RSEC_E_GRANT : 0;
}

int rsec_grant_verify_end(struct rsec_path *path, struct rsec_local_grant *g, uint64_t *off, uint64_t *len)
{
	uint8_t *p = g->addr + g->claim_off;
	int rc = 0;
	bool ok = g->claim_checked ? g->claim_ok : rsec_grant_check_claim(path, g, &rc);
	OPENSSL_cleanse(g->claim_mac, sizeof(g->claim_mac));
	g->claim = g->claim_checked = g->claim_ok = false;
	if (rc < 0) {
		OPENSSL_cleanse(p, g->claim_len); /* unverified: never handed out */
		return rc;
	}
	rsec_grant_audit_local(path, RSEC_AUDIT_VERIFIED_WRITE, g, ok ? "ok" : "mismatch",
			       ok ? NULL : "bytes differ from what the peer wrote; wiped", g->claim_off, g->claim_len);
	if (!ok) {
		OPENSSL_cleanse(p, g->claim_len);
		path->data_mac_failures++;
		return RSEC_E_MAC;
	}
	*off = g->claim_off;
	*len = g->claim_len;
	return 0;
}

int rsec_grant_open_begin(struct rsec_path *path, uint64_t grant_id, uint64_t *off, uint64_t *len,
			  struct rsec_local_grant **out)
{
	RSEC_GUARD(find_claimable(path, grant_id, off, len, out));
	struct rsec_local_grant *g = *out;
	if (!g->sealed)
		return RSEC_E_GRANT;
	if (g->access & RSEC_ACCESS_WRITE)
		return 0; /* the peer's claim says where it sealed */
	if (g->busy)
		return RSEC_E_AGAIN; /* its bind is in flight; the peer cannot have read it yet */
	RSEC_GUARD(rsec_grant_invalidate(path, g, RSEC_AUDIT_REVOKE)); /* turns it back into plaintext */
	path->stats.grants_revoked++;
	RSEC_GUARD(g->unseal_rc);
	*len = g->sealed_len;
	return 1;
}

int rsec_grant_open_end(struct rsec_path *path, struct rsec_local_grant *g, uint64_t *off, uint64_t *len)
{
	/* Where the peer says it sealed, and how. */
	uint64_t at = g->claim_off, plain_len = g->claim_len;
	int rc = open_sealed_claim(path, g);
	OPENSSL_cleanse(g->claim_mac, sizeof(g->claim_mac));
	g->claim = false;
	rsec_grant_audit_local(path, RSEC_AUDIT_SEALED_OPEN, g, rc == 0 ? "ok" : "mismatch",
			       rc == 0 ? NULL : "sealed bytes do not open (changed, replayed or cut); wiped", at,
			       rsec_sealed_size(plain_len));
	if (rc == RSEC_E_MAC)
		path->data_mac_failures++;
	if (rc < 0)
		return rc;
	*off = at;
	*len = plain_len;
	return 0;
}
