/* SPDX-License-Identifier: MIT */
/*
 * Grants: the only way a peer reaches our memory. Each grant is a type-2
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
 * Verified transfers (docs/protocol.md): a VERIFY message carries an
 * HMAC of what the writer wrote, or of what a READ grant exposes, under the
 * sender's data-MAC key. Grant ids carry their issuer in the top bit, so a
 * VERIFY names our grant (a write claim) or the peer's (a read MAC).
 *
 * Sealed grants (lib/base/sealed.h): the same VERIFY carries the plaintext length
 * and nonce prefix of a sealed transfer instead of a MAC; the bytes in the
 * grant are AEAD ciphertext under the grant's own key.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "base/audit.h"
#include "session/conn.h"
#include "base/sealed.h"

#define ACCESS_RW (RSEC_ACCESS_READ | RSEC_ACCESS_WRITE)

static int access_to_verbs(unsigned access)
{
	int v = 0;
	if (access & RSEC_ACCESS_READ)
		v |= IBV_ACCESS_REMOTE_READ;
	if (access & RSEC_ACCESS_WRITE)
		v |= IBV_ACCESS_REMOTE_WRITE;
	return v;
}

static bool access_valid(unsigned access)
{
	return (access & ACCESS_RW) && !(access & ~(unsigned)ACCESS_RW);
}

/* A region: what grants of it may allow, or RSEC_ACCESS_LOCAL alone (never granted). */
static bool region_access_valid(unsigned access)
{
	return access == RSEC_ACCESS_LOCAL || access_valid(access);
}

/* Fallback registrations instead of windows? RSEC_E_NODEV if windows are demanded and missing. */
static RSEC_MUST_CHECK int use_mr(const struct rsec_conn *c, bool *mr)
{
	RSEC_ENSURE(c->dev != NULL, RSEC_E_AGAIN);
	switch (c->ctx->grant_mode) {
	case RSEC_GRANT_MR:
		*mr = true;
		return 0;
	case RSEC_GRANT_MW:
		RSEC_ENSURE(c->dev->mw_type2, RSEC_E_NODEV);
		*mr = false;
		return 0;
	default:
		*mr = !c->dev->mw_type2;
		return 0;
	}
}

/*
 * Keys for an application's own sealed transfers through long-lived grants
 * (rdmasec-blk): from the session's TLS exporter, never sent. The library's
 * own labels are refused, so no application key equals one of ours.
 */
int rsec_conn_export_key(const struct rsec_conn *c, const char *label, const void *context, size_t context_len,
			 void *out, size_t out_len)
{
	static const char ours[] = "EXPORTER-rdmasec";
	RSEC_ENSURE(c && label && out && (context || !context_len), RSEC_E_INVAL);
	size_t label_len = strlen(label);
	RSEC_ENSURE(label_len > 9 && label_len <= 64 && strncmp(label, "EXPORTER-", 9) == 0 &&
			    strncmp(label, ours, sizeof(ours) - 1) != 0,
		    RSEC_E_INVAL);
	RSEC_ENSURE(out_len >= 16 && out_len <= 64 && context_len <= 64, RSEC_E_INVAL);
	RSEC_ENSURE(c->phase == PHASE_ESTABLISHED && c->ssl && SSL_version(c->ssl) == TLS1_3_VERSION, RSEC_E_AGAIN);
	if (SSL_export_keying_material(c->ssl, out, out_len, label, label_len, context, context_len,
				       context_len > 0) != 1) {
		OPENSSL_cleanse(out, out_len);
		return RSEC_E_TLS;
	}
	return 0;
}

const char *rsec_conn_grant_mechanism(const struct rsec_conn *c)
{
	bool mr;
	if (!c || use_mr(c, &mr) < 0)
		return NULL;
	return mr ? "mr" : "mw2";
}

static void audit_grant(struct rsec_conn *c, enum rsec_audit_event ev, const struct rsec_local_grant *g,
			const char *result, const char *reason, uint64_t off, uint64_t span)
{
	struct rsec_audit_region r = {
		.grant_id = g->id, .addr = (uintptr_t)g->addr, .len = g->len, .offset = off, .span = span,
		.access = g->access, .rkey = g->rkey, .ttl_ms = g->ttl_ms, .mechanism = g->by_mr ? "mr" : "mw2",
	};
	rsec_conn_audit(c, ev, result, reason, &r);
}

void rsec_grant_audit_remote(struct rsec_conn *c, enum rsec_audit_event ev, const struct rsec_remote_grant *g,
			     const char *result, const char *reason)
{
	struct rsec_audit_region r = {
		.grant_id = g->id, .addr = g->addr, .len = g->len, .span = g->len,
		.access = g->access & ACCESS_RW, .rkey = g->rkey, .ttl_ms = g->ttl_ms,
	};
	rsec_conn_audit(c, ev, result, reason, &r);
}

static RSEC_MUST_CHECK int region_register(struct rsec_conn *c, struct rsec_region *r)
{
	bool mr;
	RSEC_GUARD(use_mr(c, &mr));
	/* The local side of rsec_post: a READ writes into it. No remote access.
	 * Memory the process may not write (a read-only mapping) is still a
	 * source for WRITEs and READ grants. */
	r->local_mr = ibv_reg_mr(c->qp.pd, r->addr, r->len, IBV_ACCESS_LOCAL_WRITE);
	if (!r->local_mr) {
		r->local_mr = ibv_reg_mr(c->qp.pd, r->addr, r->len, 0);
		r->local_ro = true;
	}
	RSEC_ENSURE(r->local_mr != NULL, RSEC_E_VERBS);
	/* Fallback mode registers per grant; window mode binds windows to this. */
	if (mr || !(r->access & ACCESS_RW))
		return 0;
	return rsec_mr_reg(&c->qp, r->addr, r->len, r->access & RSEC_ACCESS_WRITE, &r->mr);
}

int rsec_region_reg(struct rsec_conn *c, void *addr, size_t len, unsigned access, struct rsec_region **out)
{
	if (!c || !addr || !len || !out || !region_access_valid(access))
		return RSEC_E_INVAL;
	*out = NULL;
	RSEC_GUARD(rsec_conn_require_established(c, false));
	struct rsec_region *r = calloc(1, sizeof(*r));
	if (!r)
		return RSEC_E_NOMEM;
	r->conn = c;
	r->serial = ++c->regions_made;
	r->addr = addr;
	r->len = len;
	r->access = access;
	int rc = region_register(c, r);
	if (rc < 0) {
		if (r->local_mr)
			(void)ibv_dereg_mr(r->local_mr);
		free(r);
		return rc;
	}
	*out = r;
	return 0;
}

/*
 * Map len bytes at a random page-aligned address in the lower half of the
 * 47-bit user space, so a peer's address says nothing about the next one.
 * MAP_FIXED_NOREPLACE never clobbers an existing mapping; after a few
 * collisions the kernel's choice is the fallback.
 */
static void *map_random(size_t len)
{
	long page = sysconf(_SC_PAGESIZE);
	for (int tries = 0; tries < 8 && page > 0; tries++) {
		uint64_t r;
		if (RAND_bytes((uint8_t *)&r, sizeof(r)) != 1)
			break;
		uintptr_t hint = (uintptr_t)((UINT64_C(1) << 40) + (r % (UINT64_C(1) << 45))) & ~(uintptr_t)(page - 1);
		void *p = mmap((void *)hint, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (p == (void *)hint)
			return p;
		if (p != MAP_FAILED)
			(void)munmap(p, len); /* an old kernel ignoring NOREPLACE put it elsewhere */
	}
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

int rsec_region_alloc(struct rsec_conn *c, size_t len, unsigned access, struct rsec_region **out)
{
	if (!c || !len || len > RSEC_WIRE_GRANT_LEN_MAX || !out || !region_access_valid(access))
		return RSEC_E_INVAL;
	*out = NULL;
	RSEC_GUARD(rsec_conn_require_established(c, false));
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t map_len = (len + page - 1) / page * page;
	void *p = map_random(map_len);
	if (!p)
		return RSEC_E_NOMEM;
	int rc = rsec_region_reg(c, p, len, access, out);
	if (rc < 0) {
		(void)munmap(p, map_len);
		return rc;
	}
	(*out)->map_len = map_len;
	return 0;
}

void *rsec_region_addr(const struct rsec_region *r)
{
	return r ? r->addr : NULL;
}

static void region_destroy(struct rsec_region *r)
{
	if (r->mr)
		(void)ibv_dereg_mr(r->mr);
	if (r->local_mr)
		(void)ibv_dereg_mr(r->local_mr);
	if (r->map_len) {
		OPENSSL_cleanse(r->addr, r->map_len);
		(void)munmap(r->addr, r->map_len);
	}
	free(r);
}

/* A bind or an operation over the region is in flight: the device still uses its registration, so it goes when that completes. */
void rsec_region_free(struct rsec_region *r)
{
	if (!r)
		return;
	if (r->users == 0) {
		region_destroy(r);
		return;
	}
	r->dying = true;
	r->next_dying = r->conn->dying;
	r->conn->dying = r;
}

void rsec_region_unuse(struct rsec_conn *c, struct rsec_region *r)
{
	if (!r || r->users == 0 || --r->users > 0 || !r->dying)
		return;
	for (struct rsec_region **p = &c->dying; *p; p = &(*p)->next_dying) {
		if (*p == r) {
			*p = r->next_dying;
			break;
		}
	}
	region_destroy(r);
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

static RSEC_MUST_CHECK int send_revoke(struct rsec_conn *c, uint64_t id)
{
	struct rsec_msg m = { .type = RSEC_MSG_REVOKE };
	m.u.revoke.grant_id = id;
	return rsec_chan_send(c, &m);
}

/*
 * Post the bind of a fresh window over g's range, for this QP only. It is
 * not waited for: on an RC QP the bind completes behind every earlier send,
 * whose acknowledgement the peer controls, so an event loop must never wait
 * for it. The GRANT goes out when it completes (rsec_grant_on_wc).
 */
static RSEC_MUST_CHECK int bind_window(struct rsec_conn *c, struct rsec_region *r, unsigned idx)
{
	struct rsec_local_grant *g = &c->gt.local[idx];
	RSEC_GUARD(rsec_mw_alloc(&c->qp, &g->mw));
	int rc = rsec_mw_bind_post(&c->qp, &g->mw, r->mr, (uintptr_t)g->addr, g->len, access_to_verbs(g->access),
				   RSEC_WR_ID(WR_BIND, idx));
	if (rc < 0) {
		(void)!rsec_mw_free(&g->mw);
		return rc;
	}
	g->busy = true;
	c->binds_inflight++;
	return 0;
}

/* The region stays with the grant while it lives: a rebuild binds it again there. */
static RSEC_MUST_CHECK int expose_by_window(struct rsec_conn *c, struct rsec_region *r, unsigned idx)
{
	RSEC_GUARD(bind_window(c, r, idx));
	struct rsec_local_grant *g = &c->gt.local[idx];
	g->region = r;
	r->users++;
	return 0;
}

/* The grant is over (neither live nor binding): its region may go. */
static void drop_region(struct rsec_conn *c, struct rsec_local_grant *g)
{
	rsec_region_unuse(c, g->region);
	g->region = NULL;
}

/* Fallback: a registration of just this range, with just these rights. */
static RSEC_MUST_CHECK int expose_by_registration(struct rsec_conn *c, struct rsec_local_grant *g)
{
	int access = access_to_verbs(g->access);
	if (g->access & RSEC_ACCESS_WRITE)
		access |= IBV_ACCESS_LOCAL_WRITE; /* verbs demand it with REMOTE_WRITE */
	g->mr = ibv_reg_mr(c->qp.pd, g->addr, g->len, access);
	RSEC_ENSURE(g->mr != NULL, RSEC_E_VERBS);
	g->rkey = g->mr->rkey;
	return 0;
}

int rsec_grant_send_verify(struct rsec_conn *c, uint64_t grant_id, uint64_t off, uint64_t len, uint8_t mac_alg,
			   const uint8_t *mac, size_t mac_len)
{
	struct rsec_msg m = { .type = RSEC_MSG_VERIFY };
	RSEC_ENSURE(mac_len <= sizeof(m.u.verify.mac), RSEC_E_INVAL);
	m.u.verify.grant_id = grant_id;
	m.u.verify.offset = off;
	m.u.verify.len = len;
	m.u.verify.mac_alg = mac_alg;
	memcpy(m.u.verify.mac, mac, mac_len);
	int rc = rsec_chan_send(c, &m);
	OPENSSL_cleanse(&m, sizeof(m));
	return rc;
}

/*
 * Sent ahead of a READ grant's GRANT when it has one: the MAC of its bytes
 * (verified), or how to open them (sealed: plaintext length, nonce prefix).
 */
static RSEC_MUST_CHECK int send_read_proof(struct rsec_conn *c, const struct rsec_local_grant *g)
{
	if (g->sealed)
		return rsec_grant_send_verify(c, g->id, 0, g->sealed_len, RSEC_WIRE_MAC_SEALED, g->sealed_prefix,
					      sizeof(g->sealed_prefix));
	/* Taken at rsec_grant; a rebuild changed the keys, so a grant bound again is MACed again. */
	if (g->read_mac_ready && !g->rebind)
		return rsec_grant_send_verify(c, g->id, 0, g->len, RSEC_WIRE_MAC_HMAC_SHA256, g->read_mac,
					      sizeof(g->read_mac));
	uint8_t mac[RSEC_SEAL_DATAMAC_LEN];
	int rc = rsec_seal_data_mac(&c->seal, c->is_server, g->id, 0, g->addr, g->len, mac);
	if (rc == 0)
		rc = rsec_grant_send_verify(c, g->id, 0, g->len, RSEC_WIRE_MAC_HMAC_SHA256, mac, sizeof(mac));
	OPENSSL_cleanse(mac, sizeof(mac));
	return rc;
}

/* Tell the peer about a grant whose window (or registration) is in place. */
static RSEC_MUST_CHECK int announce(struct rsec_conn *c, struct rsec_local_grant *g)
{
	g->announce = false;
	bool proof = g->verified || (g->sealed && (g->access & RSEC_ACCESS_READ));
	int rc = proof ? send_read_proof(c, g) : 0;
	if (rc < 0)
		return rsec_conn_fail(c, rc, "cannot send the MAC of grant %llu", (unsigned long long)g->id);
	struct rsec_msg m = { .type = RSEC_MSG_GRANT };
	m.u.grant.grant_id = g->id;
	m.u.grant.addr = (uintptr_t)g->addr;
	m.u.grant.rkey = g->rkey;
	m.u.grant.len = g->len;
	m.u.grant.access = g->access | (g->sealed ? RSEC_WIRE_ACCESS_SEALED : 0);
	m.u.grant.ttl_ms = g->ttl_ms;
	m.u.grant.tag = g->tag;
	rc = rsec_chan_send(c, &m);
	OPENSSL_cleanse(&m, sizeof(m));
	if (rc < 0)
		return rsec_conn_fail(c, rc, "cannot send GRANT");
	const char *note = g->verified ? "verified read" : g->sealed ? "sealed" : NULL;
	if (g->rebind)
		note = g->verified ? "verified read, bound again after a rebuild" : "bound again after a rebuild";
	else
		c->stats.grants_issued++;
	g->rebind = false;
	audit_grant(c, RSEC_AUDIT_GRANT, g, "ok", note, 0, 0);
	return 0;
}

/*
 * Seal or open buf under the key of grant p->grant_id, derived from this
 * connection's TLS session and wiped after. Opening wipes the sealed range
 * whenever it fails, the key's derivation included: unopened bytes never stay.
 */
static RSEC_MUST_CHECK int sealed_by_session(struct rsec_conn *c, const struct rsec_sealed_params *p, uint8_t *buf,
					     bool seal)
{
	uint8_t key[RSEC_SEALED_KEY_LEN];
	int rc = rsec_sealed_key(c->ssl, p->grant_id, key);
	if (rc == 0)
		rc = seal ? rsec_sealed_seal(key, p, buf) : rsec_sealed_open(key, p, buf);
	else if (!seal)
		OPENSSL_cleanse(buf, rsec_sealed_len(p->plain_len));
	OPENSSL_cleanse(key, sizeof(key));
	return rc;
}

/* Open in place what the peer's claim says it sealed into our WRITE grant g. */
static RSEC_MUST_CHECK int open_sealed_claim(struct rsec_conn *c, const struct rsec_local_grant *g)
{
	struct rsec_sealed_params p = {
		.alg = c->aead, .grant_id = g->id, .offset = g->claim_off, .plain_len = g->claim_len
	};
	memcpy(p.prefix, g->claim_mac, sizeof(p.prefix));
	return sealed_by_session(c, &p, g->addr + g->claim_off, false);
}

/* Seal or open a sealed READ grant's whole range under its kept key. */
static RSEC_MUST_CHECK int sealed_read_range(struct rsec_conn *c, const struct rsec_local_grant *g, bool seal)
{
	struct rsec_sealed_params p = { .alg = c->aead, .grant_id = g->id, .offset = 0, .plain_len = g->sealed_len };
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
static RSEC_MUST_CHECK int seal_for_reading(struct rsec_conn *c, const struct rsec_region *r,
					    struct rsec_local_grant *g)
{
	_Static_assert(sizeof(g->sealed_key) == RSEC_SEALED_KEY_LEN, "a grant keeps one sealed-grant key");
	RSEC_ENSURE(!r->local_ro && rsec_sealed_plain_len(g->len, &g->sealed_len), RSEC_E_RANGE);
	RSEC_ENSURE(RAND_bytes(g->sealed_prefix, sizeof(g->sealed_prefix)) == 1, RSEC_E_CRYPTO);
	g->id = rsec_gt_next_id(&c->gt);
	int rc = rsec_sealed_key(c->ssl, g->id, g->sealed_key);
	if (rc == 0)
		rc = sealed_read_range(c, g, true); /* on failure the range is wiped (lib/base/sealed.h) */
	if (rc < 0)
		OPENSSL_cleanse(g->sealed_key, sizeof(g->sealed_key));
	return rc;
}

/* Sealed READ bytes are ciphertext while granted: no other grant may cover
 * them, and a sealed READ grant may not cover bytes granted otherwise. */
static bool sealed_overlap(const struct rsec_conn *c, const uint8_t *addr, uint64_t len, bool sealed_read)
{
	for (unsigned i = 0; i < RSEC_MAX_GRANTS; i++) {
		const struct rsec_local_grant *g = &c->gt.local[i];
		bool holds_ciphertext = g->sealed && (g->access & RSEC_ACCESS_READ) && !g->unsealed;
		bool counts = (sealed_read && g->live) || (holds_ciphertext && (g->live || g->busy));
		if (counts && addr < g->addr + g->len && g->addr < addr + len)
			return true;
	}
	return false;
}

int rsec_grant(struct rsec_conn *c, struct rsec_region *r, size_t off, size_t len, unsigned access,
	       uint32_t ttl_ms, uint64_t tag, uint64_t *grant_id)
{
	bool verified = access & RSEC_GRANT_VERIFIED, sealed = access & RSEC_GRANT_SEALED;
	access &= ~(unsigned)(RSEC_GRANT_VERIFIED | RSEC_GRANT_SEALED);
	if (!c || !r || r->conn != c || !len || !access_valid(access) || (access & ~r->access) ||
	    (verified && !(access & RSEC_ACCESS_READ)) || (sealed && (verified || access == ACCESS_RW)) ||
	    off > r->len || len > r->len - off)
		return RSEC_E_INVAL;
	RSEC_GUARD(rsec_conn_require_established(c, false));
	if (rsec_rebuilding(c))
		return RSEC_E_AGAIN; /* no QP to bind a window through; over in a round trip */
	bool by_mr;
	RSEC_GUARD(use_mr(c, &by_mr));
	bool sealed_read = sealed && (access & RSEC_ACCESS_READ);
	if (sealed_overlap(c, r->addr + off, len, sealed_read))
		return RSEC_E_RANGE;
	unsigned idx;
	struct rsec_local_grant *g = rsec_gt_slot(&c->gt, &idx);
	if (!g)
		return RSEC_E_LIMIT;
	g->addr = r->addr + off;
	g->len = len;
	g->access = access;
	g->by_mr = by_mr;
	g->verified = verified;
	g->sealed = sealed;
	g->tag = tag;
	if (sealed_read)
		RSEC_GUARD(seal_for_reading(c, r, g));
	int rc = by_mr ? expose_by_registration(c, g) : expose_by_window(c, r, idx);
	if (rc < 0) {
		if (sealed_read) { /* never exposed: the caller's plaintext back */
			(void)!sealed_read_range(c, g, false);
			g->unsealed = true;
			OPENSSL_cleanse(g->sealed_key, sizeof(g->sealed_key));
		}
		return rc;
	}
	rsec_gt_activate(&c->gt, g, rsec_now_ms(), ttl_ms);
	if (grant_id)
		*grant_id = g->id;
	/* The pass over the bytes belongs to the caller of rsec_grant, not to the completion that announces it. */
	if (verified && rsec_seal_data_mac(&c->seal, c->is_server, g->id, 0, g->addr, g->len, g->read_mac) == 0)
		g->read_mac_ready = true;
	if (g->busy) {
		g->announce = true; /* when the bind completes */
		return 0;
	}
	return announce(c, g);
}

/*
 * A sealed READ grant that ended (revoked, expired, opened, its connection
 * closing) turns back into plaintext, but only when the peer can no longer
 * read the range (unreachable: its window or registration freed, or the QP
 * in the error state); when that is not known, the range is wiped instead.
 * Bytes that no longer open (changed while granted) are wiped too. Once: the
 * result stays in unseal_rc for rsec_grant_open.
 */
static void settle_sealed_read(struct rsec_conn *c, struct rsec_local_grant *g, bool unreachable)
{
	if (!g->sealed || !(g->access & RSEC_ACCESS_READ) || g->unsealed)
		return;
	g->unsealed = true;
	const char *why = NULL;
	if (unreachable) {
		g->unseal_rc = sealed_read_range(c, g, false);
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
	audit_grant(c, RSEC_AUDIT_SEALED_OPEN, g, why ? "mismatch" : "ok", why, 0, g->len);
	if (g->unseal_rc == RSEC_E_MAC)
		c->data_mac_failures++;
}

/*
 * Deallocating a bound window (or the registration) revokes it at once: the
 * peer's next access fails. If the device refuses, the key may still work,
 * so the connection fails, which puts the QP in the error state.
 */
static RSEC_MUST_CHECK int invalidate(struct rsec_conn *c, struct rsec_local_grant *g, enum rsec_audit_event ev)
{
	g->live = false;
	if (g->busy) {
		/* Never described to the peer; its window goes (and a sealed range
		 * turns back into plaintext) when the bind completes. */
		g->announce = false;
		audit_grant(c, ev, g, "ok", "before its bind completed; the peer was never told", 0, 0);
		return 0;
	}
	if (grant_release(g) < 0) {
		audit_grant(c, ev, g, "failed", "the device refused to free the window; connection closed", 0, 0);
		int rc = rsec_conn_fail(c, RSEC_E_VERBS, "cannot revoke grant %#llx", (unsigned long long)g->id);
		settle_sealed_read(c, g, false);
		return rc;
	}
	audit_grant(c, ev, g, "ok", NULL, 0, 0);
	settle_sealed_read(c, g, true); /* only once nobody can read the range any more */
	drop_region(c, g);
	return send_revoke(c, g->id);
}

/* A live grant of ours, or NULL; one past its ttl but not yet swept counts as gone. */
static struct rsec_local_grant *find_live(struct rsec_conn *c, uint64_t grant_id)
{
	struct rsec_local_grant *g = rsec_gt_find(&c->gt, grant_id);
	if (g && g->expires_ms && g->expires_ms <= rsec_now_ms())
		return NULL;
	return g;
}

int rsec_revoke(struct rsec_conn *c, uint64_t grant_id)
{
	if (!c)
		return RSEC_E_INVAL;
	RSEC_GUARD(rsec_conn_require_established(c, false));
	struct rsec_local_grant *g = rsec_gt_find(&c->gt, grant_id); /* expired or not: revoke it now */
	if (!g)
		return RSEC_E_GRANT;
	RSEC_GUARD(invalidate(c, g, RSEC_AUDIT_REVOKE));
	c->stats.grants_revoked++;
	return 0;
}

struct claim_wanted {
	const struct rsec_local_grant *g;
	uint64_t grant_id;
};

/* The peer's claim arrived, or the grant is gone (expired meanwhile). */
static bool claim_arrived(struct rsec_conn *c, void *arg)
{
	(void)c;
	const struct claim_wanted *w = arg;
	return w->g->claim || !w->g->live || w->g->id != w->grant_id;
}

/* Wait for the peer's claim on g, then revoke g: once checked, nobody may change the bytes. */
static RSEC_MUST_CHECK int claim_and_revoke(struct rsec_conn *c, struct rsec_local_grant *g, uint64_t grant_id,
					    int timeout_ms)
{
	struct claim_wanted w = { .g = g, .grant_id = grant_id };
	RSEC_GUARD(rsec_conn_wait_for(c, claim_arrived, &w, timeout_ms));
	RSEC_GUARD(rsec_conn_require_established(c, false)); /* closing revoked it: say why, not RSEC_E_GRANT */
	if (!g->live || g->id != grant_id)
		return RSEC_E_GRANT; /* expired meanwhile */
	RSEC_GUARD(invalidate(c, g, RSEC_AUDIT_REVOKE));
	c->stats.grants_revoked++;
	return 0;
}

/* Does g's range hold what the peer's claim says it wrote? *rc: why it could not tell. */
static bool check_claim(struct rsec_conn *c, const struct rsec_local_grant *g, int *rc)
{
	uint8_t mac[RSEC_SEAL_DATAMAC_LEN];
	*rc = rsec_seal_data_mac(&c->seal, !c->is_server, g->id, g->claim_off, g->addr + g->claim_off,
				 g->claim_len, mac);
	bool ok = *rc == 0 && rsec_seal_mac_equal(mac, g->claim_mac);
	OPENSSL_cleanse(mac, sizeof(mac));
	return ok;
}

/* What verify and open start with: the arguments, outputs zeroed, a live grant on an established connection. */
static RSEC_MUST_CHECK int find_claimable(struct rsec_conn *c, uint64_t grant_id, uint64_t *off, uint64_t *len,
					  struct rsec_local_grant **out)
{
	if (!c || !off || !len)
		return RSEC_E_INVAL;
	*off = *len = 0;
	RSEC_GUARD(rsec_conn_require_established(c, false));
	*out = find_live(c, grant_id);
	return *out ? 0 : RSEC_E_GRANT;
}

int rsec_grant_verify(struct rsec_conn *c, uint64_t grant_id, uint64_t *off, uint64_t *len, int timeout_ms)
{
	struct rsec_local_grant *g;
	RSEC_GUARD(find_claimable(c, grant_id, off, len, &g));
	if (!(g->access & RSEC_ACCESS_WRITE) || g->sealed)
		return RSEC_E_GRANT;
	RSEC_GUARD(claim_and_revoke(c, g, grant_id, timeout_ms));
	uint8_t *p = g->addr + g->claim_off;
	int rc = 0;
	bool ok = g->claim_checked ? g->claim_ok : check_claim(c, g, &rc);
	OPENSSL_cleanse(g->claim_mac, sizeof(g->claim_mac));
	g->claim = g->claim_checked = g->claim_ok = false;
	if (rc < 0) {
		OPENSSL_cleanse(p, g->claim_len); /* unverified: never handed out */
		return rc;
	}
	audit_grant(c, RSEC_AUDIT_VERIFIED_WRITE, g, ok ? "ok" : "mismatch",
		    ok ? NULL : "bytes differ from what the peer wrote; wiped", g->claim_off, g->claim_len);
	if (!ok) {
		OPENSSL_cleanse(p, g->claim_len);
		c->data_mac_failures++;
		return RSEC_E_MAC;
	}
	*off = g->claim_off;
	*len = g->claim_len;
	return 0;
}

int rsec_grant_expire(struct rsec_conn *c)
{
	struct rsec_local_grant *g;
	while ((g = rsec_gt_expired(&c->gt, rsec_now_ms())) != NULL) {
		int rc = invalidate(c, g, RSEC_AUDIT_EXPIRE);
		if (rc < 0)
			return rsec_conn_fail(c, rc, "cannot expire grant %llu", (unsigned long long)g->id);
		c->stats.grants_expired++;
	}
	return 0;
}

/* The grant whose bind completed, or NULL if none was in flight in that slot (the device misreported). */
static struct rsec_local_grant *bound_grant(struct rsec_conn *c, const struct ibv_wc *wc)
{
	struct rsec_local_grant *g = &c->gt.local[RSEC_WR_INDEX(wc->wr_id)]; /* bounded: rsec_completion_check_send */
	if (!g->busy)
		return NULL;
	g->busy = false;
	c->binds_inflight--;
	if (!g->live)
		drop_region(c, g);
	return g;
}

int rsec_grant_on_wc(struct rsec_conn *c, const struct ibv_wc *wc)
{
	struct rsec_local_grant *g = bound_grant(c, wc);
	if (!g)
		return rsec_conn_fail(c, RSEC_E_VERBS, "bind completion for a window with no bind in flight");
	if (!g->live) {
		/* Revoked or expired while binding (audited then): nothing was told, nothing stays. */
		settle_sealed_read(c, g, rsec_mw_free(&g->mw) == 0);
		return 0;
	}
	g->rkey = g->mw.rkey;
	return g->announce ? announce(c, g) : 0;
}

void rsec_grant_on_wc_failed(struct rsec_conn *c, const struct ibv_wc *wc)
{
	struct rsec_local_grant *g = bound_grant(c, wc);
	if (!g)
		return;
	g->announce = false; /* a failed bind leaves the key unknown: never told, freed with the rest */
	if (!g->live)
		settle_sealed_read(c, g, true); /* the window was never bound */
}

/*
 * A write claim that came while our data path was stopped, before the peer's
 * REBUILD: made under the keys of the epoch ending, which are still ours. A
 * grant that stayed for the rebuild is checked now (its range out of the
 * peer's reach) and not bound again: it is single use.
 */
static RSEC_MUST_CHECK int claim_while_stopped(struct rsec_conn *c, const struct rsec_msg_verify *v)
{
	int rc = rsec_gt_claim(&c->gt, v);
	if (rc == RSEC_E_GRANT)
		return 0; /* revoked with the old data path */
	if (rc < 0)
		return rsec_conn_fail(c, rc, "bad write claim (VERIFY) for one of our grants");
	struct rsec_local_grant *g = rsec_gt_find(&c->gt, v->grant_id);
	if (g && !g->sealed) {
		g->claim_ok = check_claim(c, g, &rc);
		g->claim_checked = true;
		g->rebind = false;
	}
	return 0;
}

int rsec_grant_on_msg(struct rsec_conn *c, const struct rsec_msg *m)
{
	int rc;
	/* During a rebuild, until the peer's REBUILD, these name grants of the old data path: dropped,
	 * but for a claim on one of ours. After it (REBUILD_CONNECTED): grants bound again on the new one. */
	if (rsec_rebuilding(c) && c->rb.state != REBUILD_CONNECTED)
		return m->type == RSEC_MSG_VERIFY && rsec_gt_ours(&c->gt, m->u.verify.grant_id)
			       ? claim_while_stopped(c, &m->u.verify)
			       : 0;
	switch (m->type) {
	case RSEC_MSG_REVOKE:
		rsec_gt_remote_revoke(&c->gt, m->u.revoke.grant_id);
		rsec_sealed_peer_forget(c, m->u.revoke.grant_id);
		return 0;
	case RSEC_MSG_VERIFY:
		if (!rsec_gt_ours(&c->gt, m->u.verify.grant_id)) {
			rc = rsec_gt_pending_mac(&c->gt, &m->u.verify);
			return rc < 0 ? rsec_conn_fail(c, rc, "unexpected VERIFY for a grant of the peer's") : 0;
		}
		rc = rsec_gt_claim(&c->gt, &m->u.verify);
		if (rc == RSEC_E_GRANT)
			return 0; /* revoked or expired meanwhile: its verifier got RSEC_E_GRANT */
		return rc < 0 ? rsec_conn_fail(c, rc, "bad write claim (VERIFY) for one of our grants") : 0;
	default:
		if (rsec_gt_peer_stale(&c->gt, m->u.grant.grant_id) && rsec_rebind_possible(c)) {
			rc = rsec_gt_remote_rebind(&c->gt, &m->u.grant);
			return rc < 0 ? rsec_conn_fail(c, rc, "bad GRANT for a grant bound again after a rebuild") : 0;
		}
		rc = rsec_gt_remote_add(&c->gt, &m->u.grant);
		if (rc == RSEC_E_LIMIT)
			return rsec_conn_fail(c, rc, "peer holds more than %u grants open", RSEC_MAX_GRANTS);
		return rc < 0 ? rsec_conn_fail(c, rc, "GRANT with one of our own grant ids or another lane's") : 0;
	}
}

struct grant_wanted {
	uint64_t tag;
	struct rsec_remote_grant *out;
};

static bool grant_arrived(struct rsec_conn *c, void *arg)
{
	struct grant_wanted *w = arg;
	return rsec_gt_remote_take(&c->gt, w->tag, w->out);
}

int rsec_grant_wait(struct rsec_conn *c, uint64_t tag, struct rsec_remote_grant *out, int timeout_ms)
{
	if (!c || !out)
		return RSEC_E_INVAL;
	struct grant_wanted w = { .tag = tag, .out = out };
	return rsec_conn_wait_for(c, grant_arrived, &w, timeout_ms);
}

int rsec_write_verified(struct rsec_conn *c, const struct rsec_remote_grant *g, uint64_t off, const void *buf,
			size_t len, int timeout_ms)
{
	RSEC_GUARD(rsec_write(c, g, off, buf, len, timeout_ms));
	uint8_t mac[RSEC_SEAL_DATAMAC_LEN];
	int rc = rsec_seal_data_mac(&c->seal, c->is_server, g->id, off, buf, len, mac);
	if (rc == 0)
		rc = rsec_grant_send_verify(c, g->id, off, len, RSEC_WIRE_MAC_HMAC_SHA256, mac, sizeof(mac));
	OPENSSL_cleanse(mac, sizeof(mac));
	if (rc < 0)
		return rsec_conn_fail(c, rc, "cannot send VERIFY");
	return 0;
}

int rsec_read_verified(struct rsec_conn *c, const struct rsec_remote_grant *g, void *buf, size_t cap,
		       int timeout_ms)
{
	if (!c || !g || !buf)
		return RSEC_E_INVAL;
	if (!(g->access & RSEC_GRANT_VERIFIED))
		return RSEC_E_GRANT;
	if (cap < g->len)
		return RSEC_E_RANGE;
	/* Bound again after a rebuild, its MAC came again under the new keys. */
	struct rsec_remote_grant now;
	if (rsec_gt_resolve(&c->gt, g, &now))
		g = &now;
	/* Whatever fails, unverified bytes never stay in buf. */
	int rc = rsec_read(c, g, 0, buf, g->len, timeout_ms);
	uint8_t mac[RSEC_SEAL_DATAMAC_LEN];
	if (rc == 0)
		rc = rsec_seal_data_mac(&c->seal, !c->is_server, g->id, 0, buf, g->len, mac);
	if (rc < 0) {
		OPENSSL_cleanse(buf, g->len);
		return rc;
	}
	bool ok = rsec_seal_mac_equal(mac, g->mac);
	OPENSSL_cleanse(mac, sizeof(mac));
	rsec_grant_audit_remote(c, RSEC_AUDIT_VERIFIED_READ, g, ok ? "ok" : "mismatch",
				ok ? NULL : "bytes differ from what the granter exposed; wiped");
	if (!ok) {
		OPENSSL_cleanse(buf, g->len);
		c->data_mac_failures++;
		return RSEC_E_MAC;
	}
	return 0;
}

int rsec_grant_open(struct rsec_conn *c, uint64_t grant_id, uint64_t *off, uint64_t *len, int timeout_ms)
{
	struct rsec_local_grant *g;
	RSEC_GUARD(find_claimable(c, grant_id, off, len, &g));
	if (!g->sealed)
		return RSEC_E_GRANT;
	if (!(g->access & RSEC_ACCESS_WRITE)) {
		if (g->busy)
			return RSEC_E_AGAIN; /* its bind is in flight; the peer cannot have read it yet */
		RSEC_GUARD(invalidate(c, g, RSEC_AUDIT_REVOKE)); /* turns it back into plaintext */
		c->stats.grants_revoked++;
		RSEC_GUARD(g->unseal_rc);
		*len = g->sealed_len;
		return 0;
	}
	RSEC_GUARD(claim_and_revoke(c, g, grant_id, timeout_ms));
	/* Where the peer says it sealed, and how. */
	uint64_t at = g->claim_off, plain_len = g->claim_len;
	int rc = open_sealed_claim(c, g);
	OPENSSL_cleanse(g->claim_mac, sizeof(g->claim_mac));
	g->claim = false;
	audit_grant(c, RSEC_AUDIT_SEALED_OPEN, g, rc == 0 ? "ok" : "mismatch",
		    rc == 0 ? NULL : "sealed bytes do not open (changed, replayed or cut); wiped", at,
		    rsec_sealed_len(plain_len));
	if (rc == RSEC_E_MAC)
		c->data_mac_failures++;
	if (rc < 0)
		return rc;
	*off = at;
	*len = plain_len;
	return 0;
}

int rsec_write_sealed(struct rsec_conn *c, const struct rsec_remote_grant *g, uint64_t off, const void *buf,
		      size_t len, int timeout_ms)
{
	if (!c || !g || !buf || !len)
		return RSEC_E_INVAL;
	RSEC_GUARD(rsec_conn_require_established(c, false));
	struct rsec_sealed_write *w;
	RSEC_GUARD(rsec_sealed_write_begin(c, g, off, len, &w));
	size_t total = rsec_sealed_len(len);
	uint8_t *stage = malloc(total);
	if (!stage) {
		*w = (struct rsec_sealed_write){ 0 };
		return RSEC_E_NOMEM;
	}
	memcpy(stage, buf, len);
	int rc = rsec_sealed_write_seal(c, w, stage); /* frees w if it fails */
	if (rc == 0) {
		w->state = SEALED_WRITE_POSTED;
		rc = rsec_onesided_sealed(c, g, off, stage, total, timeout_ms, RSEC_OP_WRITE);
		if (rc == 0 && w->state != SEALED_WRITE_POSTED) /* the grant or the connection went meanwhile: no claim */
			rc = c->phase == PHASE_CLOSED ? c->close_code : RSEC_E_GRANT;
		if (rc < 0)
			*w = (struct rsec_sealed_write){ 0 };
	}
	OPENSSL_cleanse(stage, total);
	free(stage);
	RSEC_GUARD(rc);
	return rsec_sealed_write_claim(c, w);
}

int rsec_read_sealed(struct rsec_conn *c, const struct rsec_remote_grant *g, void *buf, size_t cap, size_t *len,
		     int timeout_ms)
{
	if (!c || !g || !buf || !len)
		return RSEC_E_INVAL;
	*len = 0;
	uint64_t plain_len;
	if ((g->access & (RSEC_GRANT_SEALED | RSEC_ACCESS_READ)) != (RSEC_GRANT_SEALED | RSEC_ACCESS_READ) ||
	    !rsec_sealed_plain_len(g->len, &plain_len))
		return RSEC_E_GRANT;
	if (cap < g->len)
		return RSEC_E_RANGE;
	int rc = rsec_onesided_sealed(c, g, 0, buf, g->len, timeout_ms, RSEC_OP_READ);
	if (rc < 0) {
		OPENSSL_cleanse(buf, g->len); /* unopened bytes never stay */
		return rc;
	}
	return rsec_sealed_read_open(c, g, buf, len);
}

/* A live grant ends with the path it was granted on: freed, audited (why), counted. Whether the device freed it. */
static bool end_with_path(struct rsec_conn *c, struct rsec_local_grant *g, const char *why)
{
	g->live = false;
	bool freed = grant_release(g) == 0;
	audit_grant(c, RSEC_AUDIT_REVOKE, g, freed ? "ok" : "failed", why, 0, 0);
	c->stats.grants_revoked++;
	return freed;
}

/* The QP is gone: a bind still in flight on it will never complete. */
static void forget_bind(struct rsec_conn *c, struct rsec_local_grant *g)
{
	if (g->busy) {
		g->busy = false;
		c->binds_inflight--;
	}
}

void rsec_grant_close(struct rsec_conn *c)
{
	/* No remote access at all from here on, if the device agrees. */
	bool qp_stopped = c->have_qp && c->qp.qp && rsec_qp_to_error(&c->qp) == 0;
	for (unsigned i = 0; i < RSEC_MAX_GRANTS; i++) {
		struct rsec_local_grant *g = &c->gt.local[i];
		if (!g->live) {
			/* Revoked while its bind was in flight: the completion will not be processed now. */
			if (g->busy)
				settle_sealed_read(c, g, qp_stopped);
			continue;
		}
		bool freed = end_with_path(c, g, "connection closed");
		settle_sealed_read(c, g, freed || qp_stopped);
		if (!g->busy)
			drop_region(c, g);
	}
}

/*
 * A live grant through a rebuild, when the peer takes grants bound again:
 * a plain one is bound again on the new QP (rsec_grant_rebind); one the
 * peer already claimed (single use, written) is not, its claim checked now
 * under the keys it was made with, the range out of reach. Sealed grants
 * go: their keys derive from their ids.
 */
static bool outlives_rebuild(struct rsec_conn *c, struct rsec_local_grant *g)
{
	if (!g->live || g->sealed || !rsec_rebind_possible(c))
		return false;
	if (g->claim) {
		int rc;
		g->claim_ok = check_claim(c, g, &rc);
		g->claim_checked = true;
	}
	g->rebind = !g->claim;
	g->announce = false;
	return true;
}

int rsec_grant_reset(struct rsec_conn *c, const char *why)
{
	/* The old QP is gone: nothing of ours is reachable through it, and its binds never complete. */
	bool all_freed = true;
	for (unsigned i = 0; i < RSEC_MAX_GRANTS; i++) {
		struct rsec_local_grant *g = &c->gt.local[i];
		bool freed = true, kept = outlives_rebuild(c, g);
		if (kept) {
			freed = grant_release(g) == 0;
			audit_grant(c, RSEC_AUDIT_REVOKE, g, freed ? "ok" : "failed",
				    g->rebind ? "data path rebuilt; bound again on the new one"
					      : "data path rebuilt; claimed already: checked now, out of the peer's reach",
				    0, 0);
		} else if (g->live) {
			freed = end_with_path(c, g, why);
		}
		/* A registration the device kept (MR mode) still works on the new QP: its sealed bytes are wiped, not opened. */
		settle_sealed_read(c, g, freed);
		all_freed = all_freed && freed;
		forget_bind(c, g);
		if (!g->live)
			drop_region(c, g);
		(void)!grant_release(g);
	}
	/* The peer does the same with its own: what it granted us is gone, or comes again. */
	rsec_gt_forget_peer(&c->gt, rsec_rebind_possible(c));
	rsec_sealed_peer_clear(c);
	if (!all_freed)
		return rsec_conn_fail(c, RSEC_E_VERBS, "the device would not revoke a grant for the rebuild (%s)", why);
	return 0;
}

/* A grant that could not be bound again: gone, and the peer told. */
static RSEC_MUST_CHECK int rebind_failed(struct rsec_conn *c, struct rsec_local_grant *g)
{
	g->live = g->rebind = false;
	(void)!grant_release(g);
	drop_region(c, g);
	audit_grant(c, RSEC_AUDIT_REVOKE, g, "failed", "could not be bound again after a rebuild", 0, 0);
	c->stats.grants_revoked++;
	return send_revoke(c, g->id);
}

int rsec_grant_rebind(struct rsec_conn *c)
{
	for (unsigned i = 0; i < RSEC_MAX_GRANTS; i++) {
		struct rsec_local_grant *g = &c->gt.local[i];
		if (!g->live || !g->rebind)
			continue;
		int rc = g->by_mr     ? expose_by_registration(c, g)
			 : g->region ? bind_window(c, g->region, i)
				     : RSEC_E_VERBS;
		if (rc < 0)
			rc = rebind_failed(c, g);
		else if (g->busy)
			g->announce = true; /* when the bind completes */
		else
			rc = announce(c, g);
		if (rc < 0)
			return rsec_conn_fail(c, rc, "cannot bind grant %#llx again after the rebuild",
					      (unsigned long long)g->id);
	}
	return 0;
}

void rsec_grant_teardown(struct rsec_conn *c)
{
	/* Windows first: a registration with windows bound to it cannot go. */
	for (unsigned i = 0; i < RSEC_MAX_GRANTS; i++) {
		struct rsec_local_grant *g = &c->gt.local[i];
		settle_sealed_read(c, g, false); /* rsec_grant_close settled them all; if not, wipe */
		forget_bind(c, g);
		(void)!grant_release(g);
		drop_region(c, g);
	}
	while (c->dying) {
		struct rsec_region *r = c->dying;
		c->dying = r->next_dying;
		region_destroy(r);
	}
	rsec_gt_wipe(&c->gt);
	rsec_sealed_peer_clear(c);
}
