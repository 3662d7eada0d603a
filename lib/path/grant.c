/* SPDX-License-Identifier: MIT */
/*
 * Our grants: the only way a peer reaches our memory. Each grant is a type-2
 * memory window bound to this connection's QP alone, with a fresh key byte
 * per bind, described to the peer over TLS. Memory regions themselves are
 * registered without remote access, and their rkeys never leave the process.
 *
 * A window is allocated right before its bind and deallocated to revoke it,
 * never invalidated and kept: on Linux 6.1's rxe, a SEND_WITH_INV naming an
 * unbound type-2 window (one invalidated before, or never bound) panics the
 * host (docs/verbs.md), and any peer that ever held the key could send one.
 *
 * Devices without type-2 windows (or RSEC_GRANT_MR) get one fresh memory
 * registration per grant instead: a new rkey each time, reachable only from
 * this connection's protection domain, whose one QP is this connection's;
 * deregistration revokes it.
 *
 * This file issues them (bind, announce), revokes and expires them, and
 * carries them through a bind's completion, a rebuild and the close.
 * Regions are in region.c, the checks of the peer's claims on our grants in
 * grant_claim.c, the peer's grants and the transfers through them in
 * grant_peer.c.
 */
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "grant.h"
#include "sealed_post.h"

static int access_to_verbs(unsigned access)
{
	int v = 0;
	if (access & RSEC_ACCESS_READ)
		v |= IBV_ACCESS_REMOTE_READ;
	if (access & RSEC_ACCESS_WRITE)
		v |= IBV_ACCESS_REMOTE_WRITE;
	return v;
}

void rsec_grant_audit_local(struct rsec_path *path, enum rsec_audit_event ev, const struct rsec_local_grant *g,
			    const char *result, const char *reason, uint64_t off, uint64_t span)
{
	struct rsec_audit_region r = {
		.grant_id = g->id, .addr = (uintptr_t)g->addr, .len = g->len, .offset = off, .span = span,
		.access = g->access, .rkey = g->rkey, .ttl_ms = g->ttl_ms, .mechanism = g->by_mr ? "mr" : "mw2",
	};
	path->hooks->audit(path->owner, ev, result, reason, &r);
}

void rsec_grant_audit_remote(struct rsec_path *path, enum rsec_audit_event ev, const struct rsec_remote_grant *g,
			     const char *result, const char *reason)
{
	struct rsec_audit_region r = {
		.grant_id = g->id, .addr = g->addr, .len = g->len, .span = g->len,
		.access = g->access & RSEC_GRANT_ACCESS_RW, .rkey = g->rkey, .ttl_ms = g->ttl_ms,
	};
	path->hooks->audit(path->owner, ev, result, reason, &r);
}

/* Frees the window or registration; RSEC_E_VERBS if the device refused (the peer's key may still work). */
static RSEC_MUST_CHECK int grant_release(struct rsec_local_grant *g)
{
	int rc = rsec_mw_free(&g->mw);
	if (g->mr && ibv_dereg_mr(g->mr) != 0)
		rc = RSEC_E_VERBS;
	g->mr = NULL;
	return rc;
}

static RSEC_MUST_CHECK int send_revoke(struct rsec_path *path, uint64_t id)
{
	struct rsec_msg m = { .type = RSEC_MSG_REVOKE };
	m.u.revoke.grant_id = id;
	int rc = rsec_chan_send(path->chan, path->cfg.lane, &m);
	/* A fault, so the session settles it: a channel the peer closed is read for its last words (why). */
	return rc < 0 ? rsec_fault_fail(&path->fault, rc, "cannot send REVOKE") : 0;
}

/*
 * Post the bind of a fresh window over g's range, for this QP only. It is
 * not waited for: on an RC QP the bind completes behind every earlier send,
 * whose acknowledgement the peer controls, so an event loop must never wait
 * for it. The GRANT goes out when it completes (rsec_grant_on_wc).
 */
static RSEC_MUST_CHECK int bind_window(struct rsec_path *path, struct rsec_region *r, unsigned idx)
{
	struct rsec_local_grant *g = &path->gt.local[idx];
	RSEC_GUARD(rsec_mw_alloc(&path->qp, &g->mw));
	int rc = rsec_mw_bind_post(&path->qp, &g->mw, r->mr, (uintptr_t)g->addr, g->len, access_to_verbs(g->access),
				   RSEC_WR_ID(WR_BIND, idx));
	if (rc < 0) {
		(void)!rsec_mw_free(&g->mw);
		return rc;
	}
	g->busy = true;
	path->binds_inflight++;
	return 0;
}

/* The region stays with the grant while it lives: a rebuild binds it again there. */
static RSEC_MUST_CHECK int expose_by_window(struct rsec_path *path, struct rsec_region *r, unsigned idx)
{
	RSEC_GUARD(bind_window(path, r, idx));
	struct rsec_local_grant *g = &path->gt.local[idx];
	g->region = r;
	r->users++;
	return 0;
}

/* The grant is over (neither live nor binding): its region may go. */
static void drop_region(struct rsec_path *path, struct rsec_local_grant *g)
{
	rsec_region_unuse(path, g->region);
	g->region = NULL;
}

/* Fallback: a registration of just this range, with just these rights. */
static RSEC_MUST_CHECK int expose_by_registration(struct rsec_path *path, struct rsec_local_grant *g)
{
	int access = access_to_verbs(g->access);
	if (g->access & RSEC_ACCESS_WRITE)
		access |= IBV_ACCESS_LOCAL_WRITE; /* verbs demand it with REMOTE_WRITE */
	g->mr = ibv_reg_mr(path->qp.pd, g->addr, g->len, access);
	RSEC_ENSURE(g->mr != NULL, RSEC_E_VERBS);
	g->rkey = g->mr->rkey;
	return 0;
}

int rsec_grant_send_verify(struct rsec_path *path, uint64_t grant_id, uint64_t off, uint64_t len, uint8_t mac_alg,
			   const uint8_t *mac, size_t mac_len)
{
	struct rsec_msg m = { .type = RSEC_MSG_VERIFY };
	RSEC_ENSURE(mac_len <= sizeof(m.u.verify.mac), RSEC_E_INVAL);
	m.u.verify.grant_id = grant_id;
	m.u.verify.offset = off;
	m.u.verify.len = len;
	m.u.verify.mac_alg = mac_alg;
	memcpy(m.u.verify.mac, mac, mac_len);
	int rc = rsec_chan_send(path->chan, path->cfg.lane, &m);
	OPENSSL_cleanse(&m, sizeof(m));
	return rc < 0 ? rsec_fault_fail(&path->fault, rc, "cannot send VERIFY") : 0;
}

/*
 * Sent ahead of a READ grant's GRANT when it has one: the MAC of its bytes
 * (verified), or how to open them (sealed: plaintext length, nonce prefix).
 */
static RSEC_MUST_CHECK int send_read_proof(struct rsec_path *path, const struct rsec_local_grant *g)
{
	if (g->sealed)
		return rsec_grant_send_verify(path, g->id, 0, g->sealed_len, RSEC_WIRE_MAC_SEALED, g->sealed_prefix,
					      sizeof(g->sealed_prefix));
	/* Taken at rsec_grant; a rebuild changed the keys, so a grant bound again is MACed again. */
	if (g->read_mac_ready && !g->rebind)
		return rsec_grant_send_verify(path, g->id, 0, g->len, RSEC_WIRE_MAC_HMAC_SHA256, g->read_mac,
					      sizeof(g->read_mac));
	uint8_t mac[RSEC_SEAL_DATAMAC_LEN];
	int rc = rsec_grant_keys_mac(&g->keys, &path->seal, path->cfg.is_server, g->id, 0, g->addr, g->len, mac);
	if (rc == 0)
		rc = rsec_grant_send_verify(path, g->id, 0, g->len, RSEC_WIRE_MAC_HMAC_SHA256, mac, sizeof(mac));
	OPENSSL_cleanse(mac, sizeof(mac));
	return rc;
}

/* Tell the peer about a grant whose window (or registration) is in place. */
static RSEC_MUST_CHECK int announce(struct rsec_path *path, struct rsec_local_grant *g)
{
	g->announce = false;
	bool proof = g->verified || (g->sealed && (g->access & RSEC_ACCESS_READ));
	int rc = proof ? send_read_proof(path, g) : 0;
	if (rc < 0)
		return rsec_fault_fail(&path->fault, rc, "cannot send the MAC of grant %llu",
				       (unsigned long long)g->id);
	struct rsec_msg m = { .type = RSEC_MSG_GRANT };
	m.u.grant.grant_id = g->id;
	m.u.grant.addr = (uintptr_t)g->addr;
	m.u.grant.rkey = g->rkey;
	m.u.grant.len = g->len;
	m.u.grant.access = g->access | (g->sealed ? RSEC_WIRE_ACCESS_SEALED : 0);
	m.u.grant.ttl_ms = g->ttl_ms;
	m.u.grant.tag = g->tag;
	m.u.grant.has_key_id = g->keys.chain;
	m.u.grant.key_id = g->key_id;
	rc = rsec_chan_send(path->chan, path->cfg.lane, &m);
	OPENSSL_cleanse(&m, sizeof(m));
	if (rc < 0)
		return rsec_fault_fail(&path->fault, rc, "cannot send GRANT");
	const char *note = g->verified ? "verified read" : g->sealed ? "sealed" : NULL;
	if (g->rebind)
		note = g->verified ? "verified read, bound again after a rebuild" : "bound again after a rebuild";
	else
		path->stats.grants_issued++;
	g->rebind = false;
	rsec_grant_audit_local(path, RSEC_AUDIT_GRANT, g, "ok", note, 0, 0);
	return 0;
}

/* Seal or open a sealed READ grant's whole range under its kept key. */
static RSEC_MUST_CHECK int sealed_read_range(struct rsec_path *path, const struct rsec_local_grant *g, bool seal)
{
	struct rsec_sealed_params p = { .alg = path->cfg.aead, .grant_id = g->id, .plain_len = g->sealed_len };
	memcpy(p.prefix, g->sealed_prefix, sizeof(p.prefix));
	return seal ? rsec_sealed_seal(g->sealed_key, &p, g->addr) : rsec_sealed_open(g->sealed_key, &p, g->addr);
}

/*
 * A sealed READ grant: its range is the sealed form of a plaintext held in
 * its first bytes, sealed here before anything is exposed, under the id the
 * grant is about to get (rsec_gt_activate gives the same). The key stays
 * with the grant: a connection that fails (its TLS session gone) must still
 * give the caller its plaintext back. The memory must be writable.
 */
static RSEC_MUST_CHECK int seal_for_reading(struct rsec_path *path, const struct rsec_region *r,
					    struct rsec_local_grant *g)
{
	_Static_assert(sizeof(g->sealed_key) == RSEC_SEALED_KEY_LEN, "a grant keeps one sealed-grant key");
	RSEC_ENSURE(!r->local_ro && rsec_sealed_plain_len(g->len, &g->sealed_len), RSEC_E_RANGE);
	RSEC_ENSURE(RAND_bytes(g->sealed_prefix, sizeof(g->sealed_prefix)) == 1, RSEC_E_CRYPTO);
	int rc = rsec_grant_keys_sealed(&g->keys, rsec_chan_ssl(path->chan), g->id, g->sealed_key);
	if (rc == 0)
		rc = sealed_read_range(path, g, true); /* on failure the range is wiped (lib/base/sealed.h) */
	if (rc < 0)
		OPENSSL_cleanse(g->sealed_key, sizeof(g->sealed_key));
	return rc;
}

/* Sealed READ bytes are ciphertext while granted: no other grant may cover
 * them, and a sealed READ grant may not cover bytes granted otherwise. */
static bool sealed_overlap(const struct rsec_path *path, const uint8_t *addr, uint64_t len, bool sealed_read)
{
	for (unsigned i = 0; i < RSEC_MAX_GRANTS; i++) {
		const struct rsec_local_grant *g = &path->gt.local[i];
		bool holds_ciphertext = g->sealed && (g->access & RSEC_ACCESS_READ) && !g->unsealed;
		bool counts = (sealed_read && g->live) || (holds_ciphertext && (g->live || g->busy));
		if (counts && addr < g->addr + g->len && g->addr < addr + len)
			return true;
	}
	return false;
}

int rsec_grant_issue(struct rsec_path *path, struct rsec_region *r, size_t off, size_t len, unsigned access,
		     uint32_t ttl_ms, uint64_t tag, uint64_t *grant_id)
{
	bool verified = access & RSEC_GRANT_VERIFIED, sealed = access & RSEC_GRANT_SEALED;
	access &= ~(unsigned)(RSEC_GRANT_VERIFIED | RSEC_GRANT_SEALED);
	if (!r || r->path != path || !len || !rsec_grant_access_valid(access) || (access & ~r->access) ||
	    (verified && !(access & RSEC_ACCESS_READ)) || (sealed && (verified || access == RSEC_GRANT_ACCESS_RW)) ||
	    off > r->len || len > r->len - off)
		return RSEC_E_INVAL;
	RSEC_GUARD(rsec_path_usable(path, false));
	if (rsec_rebuilding(path))
		return RSEC_E_AGAIN; /* no QP to bind a window through; over in a round trip */
	bool by_mr;
	RSEC_GUARD(rsec_grant_use_mr(path, &by_mr));
	bool sealed_read = sealed && (access & RSEC_ACCESS_READ);
	if (sealed_overlap(path, r->addr + off, len, sealed_read))
		return RSEC_E_RANGE;
	unsigned idx;
	struct rsec_local_grant *g = rsec_gt_slot(&path->gt, &idx);
	if (!g)
		return RSEC_E_LIMIT;
	g->addr = r->addr + off;
	g->len = len;
	g->access = access;
	g->by_mr = by_mr;
	g->verified = verified;
	g->sealed = sealed;
	g->tag = tag;
	/* Keyed under the key id in use now; the id is the one rsec_gt_activate is about to give. */
	g->id = rsec_gt_next_id(&path->gt);
	g->key_id = rsec_rekey_id(&path->rk);
	RSEC_GUARD(rsec_grant_keys_make(&g->keys, &path->rk, path->cfg.grant_keys_chained, g->key_id, g->id));
	if (sealed_read)
		RSEC_GUARD(seal_for_reading(path, r, g));
	int rc = by_mr ? expose_by_registration(path, g) : expose_by_window(path, r, idx);
	if (rc < 0) {
		if (sealed_read) { /* never exposed: the caller's plaintext back */
			(void)!sealed_read_range(path, g, false);
			g->unsealed = true;
			OPENSSL_cleanse(g->sealed_key, sizeof(g->sealed_key));
		}
		return rc;
	}
	rsec_gt_activate(&path->gt, g, rsec_now_ms(), ttl_ms);
	if (grant_id)
		*grant_id = g->id;
	/* The pass over the bytes belongs to the caller of rsec_grant, not to the completion that announces it. */
	if (verified && rsec_grant_keys_mac(&g->keys, &path->seal, path->cfg.is_server, g->id, 0, g->addr, g->len,
					    g->read_mac) == 0)
		g->read_mac_ready = true;
	if (g->busy) {
		g->announce = true; /* when the bind completes */
		return 0;
	}
	return announce(path, g);
}

/*
 * A sealed READ grant that ended (revoked, expired, opened, its connection
 * closing) turns back into plaintext, but only when the peer can no longer
 * read the range (unreachable: its window or registration freed, or the QP
 * in the error state); when that is not known, the range is wiped instead.
 * Bytes that no longer open (changed while granted) are wiped too. Once: the
 * result stays in unseal_rc for rsec_grant_open.
 */
static void settle_sealed_read(struct rsec_path *path, struct rsec_local_grant *g, bool unreachable)
{
	if (!g->sealed || !(g->access & RSEC_ACCESS_READ) || g->unsealed)
		return;
	g->unsealed = true;
	const char *why = NULL;
	if (unreachable) {
		g->unseal_rc = sealed_read_range(path, g, false);
		if (g->unseal_rc == RSEC_E_MAC)
			why = "the sealed bytes changed while granted; wiped";
		else if (g->unseal_rc < 0)
			why = "the sealed bytes could not be opened; wiped";
	} else {
		OPENSSL_cleanse(g->addr, g->len);
		g->unseal_rc = RSEC_E_VERBS;
		why = "the peer might still reach the range (the device refused to free its window); wiped";
	}
	OPENSSL_cleanse(g->sealed_key, sizeof(g->sealed_key));
	OPENSSL_cleanse(g->sealed_prefix, sizeof(g->sealed_prefix));
	rsec_grant_audit_local(path, RSEC_AUDIT_SEALED_OPEN, g, why ? "mismatch" : "ok", why, 0, g->len);
	if (g->unseal_rc == RSEC_E_MAC)
		path->data_mac_failures++;
}

/*
 * Deallocating a bound window (or the registration) revokes it at once: the
 * peer's next access fails. If the device refuses, the key may still work,
 * so that is a fault: the session closes the connection, which puts the QP in the
 * error state.
 */
int rsec_grant_invalidate(struct rsec_path *path, struct rsec_local_grant *g, enum rsec_audit_event ev)
{
	g->live = false;
	if (g->busy) {
		/* Never described to the peer; its window goes (and a sealed range
		 * turns back into plaintext) when the bind completes. */
		g->announce = false;
		rsec_grant_audit_local(path, ev, g, "ok", "before its bind completed; the peer was never told", 0, 0);
		return 0;
	}
	if (grant_release(g) < 0) {
		rsec_grant_audit_local(path, ev, g, "failed",
				       "the device refused to free the window; connection closed", 0, 0);
		int rc = rsec_fault_fail(&path->fault, RSEC_E_VERBS, "cannot revoke grant %#llx",
					 (unsigned long long)g->id);
		settle_sealed_read(path, g, false);
		return rc;
	}
	rsec_grant_audit_local(path, ev, g, "ok", NULL, 0, 0);
	settle_sealed_read(path, g, true); /* only once nobody can read the range any more */
	drop_region(path, g);
	return send_revoke(path, g->id);
}

int rsec_grant_revoke(struct rsec_path *path, uint64_t grant_id)
{
	RSEC_GUARD(rsec_path_usable(path, false));
	struct rsec_local_grant *g = rsec_gt_find(&path->gt, grant_id); /* expired or not: revoke it now */
	if (!g)
		return RSEC_E_GRANT;
	RSEC_GUARD(rsec_grant_invalidate(path, g, RSEC_AUDIT_REVOKE));
	path->stats.grants_revoked++;
	return 0;
}

int rsec_grant_expire(struct rsec_path *path)
{
	struct rsec_local_grant *g;
	while ((g = rsec_gt_expired(&path->gt, rsec_now_ms())) != NULL) {
		int rc = rsec_grant_invalidate(path, g, RSEC_AUDIT_EXPIRE);
		if (rc < 0)
			return rsec_fault_fail(&path->fault, rc, "cannot expire grant %llu", (unsigned long long)g->id);
		path->stats.grants_expired++;
	}
	return 0;
}

/* The grant whose bind completed, or NULL if none was in flight in that slot (the device misreported). */
static struct rsec_local_grant *bound_grant(struct rsec_path *path, const struct ibv_wc *wc)
{
	/* The index is bounded: rsec_completion_check_send. */
	struct rsec_local_grant *g = &path->gt.local[RSEC_WR_INDEX(wc->wr_id)];
	if (!g->busy)
		return NULL;
	g->busy = false;
	path->binds_inflight--;
	if (!g->live)
		drop_region(path, g);
	return g;
}

int rsec_grant_on_wc(struct rsec_path *path, const struct ibv_wc *wc)
{
	struct rsec_local_grant *g = bound_grant(path, wc);
	if (!g)
		return rsec_fault_fail(&path->fault, RSEC_E_VERBS,
				       "bind completion for a window with no bind in flight");
	if (!g->live) {
		/* Revoked or expired while binding (audited then): nothing was told, nothing stays. */
		settle_sealed_read(path, g, rsec_mw_free(&g->mw) == 0);
		return 0;
	}
	g->rkey = g->mw.rkey;
	return g->announce ? announce(path, g) : 0;
}

void rsec_grant_on_wc_failed(struct rsec_path *path, const struct ibv_wc *wc)
{
	struct rsec_local_grant *g = bound_grant(path, wc);
	if (!g)
		return;
	g->announce = false; /* a failed bind leaves the key unknown: never told, freed with the rest */
	if (!g->live)
		settle_sealed_read(path, g, true); /* the window was never bound */
}

/* A live grant ends with the path it was granted on: freed, audited (why), counted. Whether the device freed it. */
static bool end_with_path(struct rsec_path *path, struct rsec_local_grant *g, const char *why)
{
	g->live = false;
	bool freed = grant_release(g) == 0;
	rsec_grant_audit_local(path, RSEC_AUDIT_REVOKE, g, freed ? "ok" : "failed", why, 0, 0);
	path->stats.grants_revoked++;
	return freed;
}

/* The QP is gone: a bind still in flight on it will never complete. */
static void forget_bind(struct rsec_path *path, struct rsec_local_grant *g)
{
	if (g->busy) {
		g->busy = false;
		path->binds_inflight--;
	}
}

void rsec_grant_close(struct rsec_path *path)
{
	/* No remote access at all from here on, if the device agrees. */
	bool qp_stopped = path->have_qp && path->qp.qp && rsec_qp_to_error(&path->qp) == 0;
	for (unsigned i = 0; i < RSEC_MAX_GRANTS; i++) {
		struct rsec_local_grant *g = &path->gt.local[i];
		if (!g->live) {
			/* Revoked while its bind was in flight: the completion will not be processed now. */
			if (g->busy)
				settle_sealed_read(path, g, qp_stopped);
			continue;
		}
		bool freed = end_with_path(path, g, "connection closed");
		settle_sealed_read(path, g, freed || qp_stopped);
		if (!g->busy)
			drop_region(path, g);
	}
}

/*
 * A live grant through a rebuild, when the peer takes grants bound again:
 * a plain one is bound again on the new QP (rsec_grant_rebind); one the
 * peer already claimed (single use, written) is not, its claim checked now
 * under the keys it was made with, the range out of reach. Sealed grants
 * go: their keys derive from their ids.
 */
static bool outlives_rebuild(struct rsec_path *path, struct rsec_local_grant *g)
{
	if (!g->live || g->sealed || !path->cfg.rebinds)
		return false;
	if (g->claim) {
		int rc;
		g->claim_ok = rsec_grant_check_claim(path, g, &rc);
		g->claim_checked = true;
	}
	g->rebind = !g->claim;
	g->announce = false;
	return true;
}

int rsec_grant_reset(struct rsec_path *path, const char *why)
{
	/* The old QP is gone: nothing of ours is reachable through it, and its binds never complete. */
	bool all_freed = true;
	for (unsigned i = 0; i < RSEC_MAX_GRANTS; i++) {
		struct rsec_local_grant *g = &path->gt.local[i];
		bool freed = true, kept = outlives_rebuild(path, g);
		if (kept) {
			freed = grant_release(g) == 0;
			const char *how = g->rebind ? "data path rebuilt; bound again on the new one"
						    : "data path rebuilt; claimed already: checked now, out of the peer's reach";
			rsec_grant_audit_local(path, RSEC_AUDIT_REVOKE, g, freed ? "ok" : "failed", how, 0, 0);
		} else if (g->live) {
			freed = end_with_path(path, g, why);
		}
		/* A registration the device kept (MR mode) still works on the new QP: its sealed bytes are wiped, not opened. */
		settle_sealed_read(path, g, freed);
		all_freed = all_freed && freed;
		forget_bind(path, g);
		if (!g->live)
			drop_region(path, g);
		(void)!grant_release(g);
	}
	/* The peer does the same with its own: what it granted us is gone, or comes again. */
	rsec_gt_forget_peer(&path->gt, path->cfg.rebinds);
	rsec_sealed_peer_clear(path);
	if (!all_freed)
		return rsec_fault_fail(&path->fault, RSEC_E_VERBS,
				       "the device would not revoke a grant for the rebuild (%s)", why);
	return 0;
}

/* A grant that could not be bound again: gone, and the peer told. */
static RSEC_MUST_CHECK int rebind_failed(struct rsec_path *path, struct rsec_local_grant *g)
{
	g->live = g->rebind = false;
	(void)!grant_release(g);
	drop_region(path, g);
	rsec_grant_audit_local(path, RSEC_AUDIT_REVOKE, g, "failed", "could not be bound again after a rebuild", 0, 0);
	path->stats.grants_revoked++;
	return send_revoke(path, g->id);
}

int rsec_grant_rebind(struct rsec_path *path)
{
	for (unsigned i = 0; i < RSEC_MAX_GRANTS; i++) {
		struct rsec_local_grant *g = &path->gt.local[i];
		if (!g->live || !g->rebind)
			continue;
		int rc = g->by_mr     ? expose_by_registration(path, g)
			 : g->region ? bind_window(path, g->region, i)
				     : RSEC_E_VERBS;
		if (rc < 0)
			rc = rebind_failed(path, g);
		else if (g->busy)
			g->announce = true; /* when the bind completes */
		else
			rc = announce(path, g);
		if (rc < 0)
			return rsec_fault_fail(&path->fault, rc, "cannot bind grant %#llx again after the rebuild",
					      (unsigned long long)g->id);
	}
	return 0;
}

void rsec_grant_teardown(struct rsec_path *path)
{
	/* Windows first: a registration with windows bound to it cannot go. */
	for (unsigned i = 0; i < RSEC_MAX_GRANTS; i++) {
		struct rsec_local_grant *g = &path->gt.local[i];
		settle_sealed_read(path, g, false); /* rsec_grant_close settled them all; if not, wipe */
		forget_bind(path, g);
		(void)!grant_release(g);
		drop_region(path, g);
	}
	while (path->dying) {
		struct rsec_region *r = path->dying;
		path->dying = r->next_dying;
		rsec_region_destroy(r);
	}
	rsec_gt_wipe(&path->gt);
	rsec_sealed_peer_clear(path);
}
