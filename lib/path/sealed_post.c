/* SPDX-License-Identifier: MIT */
/*
 * The grantee's side of grants: their keys, made when their GRANT came
 * (grant_keys.h) and kept, those of sealed grants (lib/base/sealed.h) kept
 * keyed too, and the posted form of sealed transfers: rsec_region_seal seals in
 * a registered region for one rsec_post WRITE, which claims it over TLS
 * when it has succeeded; rsec_region_open opens what a posted READ of a
 * whole sealed READ grant brought in. rsec_post takes no other operation on
 * a sealed grant, so no plaintext leaves through one.
 */
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "grant.h"
#include "sealed_post.h"

static bool is_sealed(const struct rsec_remote_grant *g, unsigned access)
{
	return (g->access & (RSEC_GRANT_SEALED | access)) == (RSEC_GRANT_SEALED | access);
}

int rsec_peer_grant_arrived(struct rsec_path *path, const struct rsec_msg_grant *g)
{
	bool chained = path->cfg.grant_keys_chained;
	RSEC_ENSURE(g->has_key_id == chained, RSEC_E_PROTO);
	if (!chained)
		return 0;
	/* Bound again after a rebuild: its keys stay what they were (its key id may be gone since). */
	if (rsec_pgk_find(&path->grantee_keys, g->grant_id))
		return 0;
	struct rsec_grant_keys k;
	int rc = rsec_grant_keys_make(&k, &path->rk, true, g->key_id, g->grant_id);
	uint64_t now = rsec_now_ms();
	if (rc == 0)
		rsec_pgk_keep(&path->grantee_keys, g->grant_id, g->ttl_ms ? now + g->ttl_ms : 0, &k, now);
	rsec_grant_keys_wipe(&k);
	return rc;
}

int rsec_peer_grant_keys(const struct rsec_path *path, uint64_t grant_id, struct rsec_grant_keys *out)
{
	if (!path->cfg.grant_keys_chained) {
		*out = (struct rsec_grant_keys){ .chain = false };
		return 0;
	}
	const struct rsec_grant_keys *k = rsec_pgk_find(&path->grantee_keys, grant_id);
	RSEC_ENSURE(k != NULL, RSEC_E_GRANT);
	*out = *k;
	return 0;
}

/* The sealed-grant key of the peer's grant grant_id. */
static RSEC_MUST_CHECK int peer_sealed_key(const struct rsec_path *path, uint64_t grant_id,
					   uint8_t key[static RSEC_SEALED_KEY_LEN])
{
	struct rsec_grant_keys k;
	int rc = rsec_peer_grant_keys(path, grant_id, &k);
	if (rc == 0)
		rc = rsec_grant_keys_sealed(&k, rsec_chan_ssl(path->chan), grant_id, key);
	rsec_grant_keys_wipe(&k);
	return rc;
}

int rsec_sealed_peer_key(struct rsec_path *path, uint64_t grant_id, struct rsec_sealed_key **out)
{
	for (unsigned i = 0; i < RSEC_PEER_KEYS; i++)
		if (path->peer_keys[i].key.ctx && path->peer_keys[i].grant_id == grant_id) {
			*out = &path->peer_keys[i].key;
			return 0;
		}
	/* The oldest slot goes: a grant whose key is dropped derives it again. */
	struct rsec_peer_key *k = &path->peer_keys[path->peer_key_next];
	path->peer_key_next = (path->peer_key_next + 1) % RSEC_PEER_KEYS;
	rsec_sealed_key_free(&k->key);
	uint8_t key[RSEC_SEALED_KEY_LEN];
	int rc = peer_sealed_key(path, grant_id, key);
	if (rc == 0)
		rc = rsec_sealed_key_init(&k->key, path->cfg.aead, key);
	OPENSSL_cleanse(key, sizeof(key));
	RSEC_GUARD(rc);
	k->grant_id = grant_id;
	*out = &k->key;
	return 0;
}

/*
 * w's grant is gone. A WRITE in flight still points at w (its operation's
 * slot): w stays taken, as an orphan its completion frees without a claim,
 * so it can neither be claimed nor become another grant's write meanwhile;
 * it still names the bytes the device reads (write_overlaps).
 */
static void write_drop(struct rsec_sealed_write *w)
{
	if (w->state == SEALED_WRITE_POSTED || w->state == SEALED_WRITE_ORPHAN)
		w->state = SEALED_WRITE_ORPHAN;
	else
		*w = (struct rsec_sealed_write){ 0 };
}

/* A sealed write waits for or is in its WRITE from bytes of r[off, off + len). */
static bool write_overlaps(const struct rsec_path *path, const struct rsec_region *r, size_t off, size_t len)
{
	for (unsigned i = 0; i < RSEC_MAX_GRANTS; i++) {
		const struct rsec_sealed_write *w = &path->sealed_writes[i];
		if (w->state != SEALED_WRITE_READY && w->state != SEALED_WRITE_POSTED &&
		    w->state != SEALED_WRITE_ORPHAN)
			continue;
		if (w->region != r->serial)
			continue; /* 0 (rsec_write_sealed's own buffer) is no region's serial */
		size_t end = w->local_off + rsec_sealed_size(w->plain_len); /* within r: rsec_region_seal checked */
		if (off < end && w->local_off < off + len)
			return true;
	}
	return false;
}

void rsec_sealed_peer_forget(struct rsec_path *path, uint64_t grant_id)
{
	rsec_pgk_revoked(&path->grantee_keys, grant_id);
	for (unsigned i = 0; i < RSEC_PEER_KEYS; i++)
		if (path->peer_keys[i].key.ctx && path->peer_keys[i].grant_id == grant_id)
			rsec_sealed_key_free(&path->peer_keys[i].key);
	for (unsigned i = 0; i < RSEC_MAX_GRANTS; i++)
		if (path->sealed_writes[i].state != SEALED_WRITE_FREE &&
		    path->sealed_writes[i].state != SEALED_WRITE_ORPHAN && path->sealed_writes[i].grant_id == grant_id)
			write_drop(&path->sealed_writes[i]);
}

void rsec_sealed_peer_clear(struct rsec_path *path)
{
	for (unsigned i = 0; i < RSEC_PEER_KEYS; i++)
		rsec_sealed_key_free(&path->peer_keys[i].key);
	for (unsigned i = 0; i < RSEC_MAX_GRANTS; i++)
		write_drop(&path->sealed_writes[i]);
}

void rsec_sealed_write_end(struct rsec_path *path, struct rsec_sealed_write *w, int status)
{
	if (w->state == SEALED_WRITE_POSTED && status == 0)
		(void)!rsec_sealed_write_claim(path, w); /* a failure is recorded: the session settles it */
	else
		*w = (struct rsec_sealed_write){ 0 }; /* it did not happen, or its grant went: nothing to claim */
}

/* The sealed write into grant_id (any state but an orphan's), or NULL. */
static struct rsec_sealed_write *write_of(struct rsec_path *path, uint64_t grant_id)
{
	for (unsigned i = 0; i < RSEC_MAX_GRANTS; i++)
		if (path->sealed_writes[i].state != SEALED_WRITE_FREE &&
		    path->sealed_writes[i].state != SEALED_WRITE_ORPHAN && path->sealed_writes[i].grant_id == grant_id)
			return &path->sealed_writes[i];
	return NULL;
}

static struct rsec_sealed_write *free_write(struct rsec_path *path)
{
	for (unsigned i = 0; i < RSEC_MAX_GRANTS; i++)
		if (path->sealed_writes[i].state == SEALED_WRITE_FREE)
			return &path->sealed_writes[i];
	return NULL;
}

int rsec_sealed_write_begin(struct rsec_path *path, const struct rsec_remote_grant *g, uint64_t remote_off,
			    size_t plain_len, struct rsec_sealed_write **out)
{
	if (!is_sealed(g, RSEC_ACCESS_WRITE))
		return RSEC_E_GRANT;
	size_t total = rsec_sealed_size(plain_len);
	if (!total || remote_off > g->len || total > g->len - remote_off)
		return RSEC_E_RANGE;
	struct rsec_sealed_write *w = write_of(path, g->id);
	if (w && w->state != SEALED_WRITE_READY)
		return RSEC_E_GRANT; /* written already, or on its way: one transfer per grant */
	if (!w)
		w = free_write(path);
	if (!w)
		return RSEC_E_LIMIT;
	*w = (struct rsec_sealed_write){
		.state = SEALED_WRITE_READY, .grant_id = g->id, .remote_off = remote_off, .plain_len = plain_len,
	};
	/* A fresh prefix per sealing: never the same nonce under the grant's key. */
	if (RAND_bytes(w->prefix, sizeof(w->prefix)) != 1) {
		*w = (struct rsec_sealed_write){ 0 };
		return RSEC_E_CRYPTO;
	}
	*out = w;
	return 0;
}

int rsec_sealed_write_seal(struct rsec_path *path, struct rsec_sealed_write *w, uint8_t *buf)
{
	struct rsec_sealed_params p = {
		.alg = path->cfg.aead, .grant_id = w->grant_id, .offset = w->remote_off, .plain_len = w->plain_len,
	};
	memcpy(p.prefix, w->prefix, sizeof(p.prefix));
	struct rsec_sealed_key *k;
	int rc = rsec_sealed_peer_key(path, w->grant_id, &k);
	if (rc == 0)
		rc = rsec_sealed_seal_with(k, &p, buf);
	else
		OPENSSL_cleanse(buf, w->plain_len); /* no plaintext stays where ciphertext was asked for */
	if (rc < 0)
		*w = (struct rsec_sealed_write){ 0 };
	return rc;
}

int rsec_sealed_write_claim(struct rsec_path *path, struct rsec_sealed_write *w)
{
	w->state = SEALED_WRITE_CLAIMED; /* kept until the peer revokes the grant: no second write */
	int rc = rsec_grant_send_verify(path, w->grant_id, w->remote_off, w->plain_len, RSEC_WIRE_MAC_SEALED, w->prefix,
					sizeof(w->prefix));
	OPENSSL_cleanse(w->prefix, sizeof(w->prefix));
	if (rc < 0)
		return rsec_fault_fail(&path->fault, rc, "cannot send the sealed write's VERIFY");
	return 0;
}

int rsec_sealed_region_seal(struct rsec_path *path, const struct rsec_remote_grant *g, uint64_t remote_off,
			     struct rsec_region *r, size_t off, size_t plain_len)
{
	if (!g || !r || r->path != path || r->dying || !r->local_mr || !plain_len)
		return RSEC_E_INVAL;
	size_t total = rsec_sealed_size(plain_len);
	/* Sealing is in place: not in memory the process may not write (registered read-only). */
	if (r->local_ro || !total || off > r->len || total > r->len - off)
		return RSEC_E_RANGE;
	RSEC_GUARD(rsec_path_usable(path, false));
	struct rsec_sealed_write *w;
	RSEC_GUARD(rsec_sealed_write_begin(path, g, remote_off, plain_len, &w));
	w->region = r->serial;
	w->local_off = off;
	return rsec_sealed_write_seal(path, w, r->addr + off);
}

int rsec_sealed_post_check(struct rsec_path *path, const struct rsec_wr *wr, struct rsec_sealed_write **claim)
{
	const struct rsec_remote_grant *g = wr->grant;
	*claim = NULL;
	if (wr->op == RSEC_OP_READ) {
		/* Ciphertext and tags, all of them: what rsec_region_open needs. */
		RSEC_ENSURE(is_sealed(g, RSEC_ACCESS_READ) && wr->remote_off == 0 && wr->len == g->len, RSEC_E_RANGE);
		return 0;
	}
	struct rsec_sealed_write *w = write_of(path, g->id);
	RSEC_ENSURE(is_sealed(g, RSEC_ACCESS_WRITE) && w && w->state == SEALED_WRITE_READY &&
			    w->region == wr->local->serial && w->local_off == wr->local_off &&
			    w->remote_off == wr->remote_off && wr->len == rsec_sealed_size(w->plain_len),
		    RSEC_E_RANGE); /* only bytes rsec_region_seal sealed for this very operation */
	*claim = w;
	return 0;
}

int rsec_sealed_region_open(struct rsec_path *path, const struct rsec_remote_grant *g, struct rsec_region *r,
			     size_t off, size_t *plain_len)
{
	if (!g || !r || !plain_len || r->path != path || r->dying)
		return RSEC_E_INVAL;
	*plain_len = 0;
	uint64_t p_len;
	if (!is_sealed(g, RSEC_ACCESS_READ) || !rsec_sealed_plain_len(g->len, &p_len))
		return RSEC_E_GRANT;
	/* Opening (or wiping) is in place; no READ can have landed in a read-only region. */
	if (r->local_ro || off > r->len || g->len > r->len - off)
		return RSEC_E_RANGE;
	/* Plaintext never goes where rsec_post takes a sealed write's bytes, or the device reads them now. */
	if (write_overlaps(path, r, off, g->len))
		return RSEC_E_RANGE;
	return rsec_sealed_read_open(path, g, r->addr + off, plain_len);
}

int rsec_sealed_read_open(struct rsec_path *path, const struct rsec_remote_grant *g, uint8_t *buf, size_t *plain_len)
{
	uint64_t p_len = 0;
	(void)rsec_sealed_plain_len(g->len, &p_len); /* the callers checked it */
	struct rsec_sealed_params p = { .alg = path->cfg.aead, .grant_id = g->id, .offset = 0, .plain_len = p_len };
	memcpy(p.prefix, g->mac, sizeof(p.prefix));
	struct rsec_sealed_key *k, once = { 0 };
	int rc;
	if (!rsec_chan_ssl(path->chan)) {
		rc = RSEC_E_CLOSED;
	} else if (path->phase == PHASE_CLOSED) {
		/* A READ that completed before the connection ended still opens, but no key is kept past its end. */
		uint8_t key[RSEC_SEALED_KEY_LEN];
		rc = peer_sealed_key(path, g->id, key);
		if (rc == 0)
			rc = rsec_sealed_key_init(&once, path->cfg.aead, key);
		OPENSSL_cleanse(key, sizeof(key));
		k = &once;
	} else {
		rc = rsec_sealed_peer_key(path, g->id, &k);
	}
	if (rc == 0)
		rc = rsec_sealed_open_with(k, &p, buf);
	else
		OPENSSL_cleanse(buf, g->len); /* unopened bytes never stay */
	rsec_sealed_key_free(&once);
	rsec_grant_audit_remote(path, RSEC_AUDIT_SEALED_READ, g, rc == 0 ? "ok" : "mismatch",
				rc == 0 ? NULL : "bytes do not open: not what the granter sealed; wiped");
	if (rc == RSEC_E_MAC)
		path->data_mac_failures++;
	if (rc < 0)
		return rc;
	*plain_len = p_len;
	return 0;
}
