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
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "audit.h"
#include "conn.h"

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

static RSEC_MUST_CHECK int require_established(struct rsec_conn *c)
{
	if (c->phase == PHASE_CLOSED)
		return c->close_code;
	return c->phase == PHASE_ESTABLISHED ? 0 : RSEC_E_AGAIN;
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
	RSEC_GUARD(require_established(c));
	struct rsec_region *r = calloc(1, sizeof(*r));
	if (!r)
		return RSEC_E_NOMEM;
	r->conn = c;
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
	RSEC_GUARD(require_established(c));
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
static RSEC_MUST_CHECK int expose_by_window(struct rsec_conn *c, struct rsec_region *r, unsigned idx)
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
	g->region = r;
	r->users++;
	c->binds_inflight++;
	return 0;
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

/* For a verified READ grant: the MAC of its bytes, sent before the GRANT itself. */
static RSEC_MUST_CHECK int send_read_mac(struct rsec_conn *c, const struct rsec_local_grant *g)
{
	struct rsec_msg m = { .type = RSEC_MSG_VERIFY };
	m.u.verify.grant_id = g->id;
	m.u.verify.offset = 0;
	m.u.verify.len = g->len;
	m.u.verify.mac_alg = RSEC_WIRE_MAC_HMAC_SHA256;
	int rc = rsec_seal_data_mac(&c->seal, c->is_server, g->id, 0, g->addr, g->len, m.u.verify.mac);
	if (rc == 0)
		rc = rsec_chan_send(c, &m);
	OPENSSL_cleanse(&m, sizeof(m));
	return rc;
}

/* Tell the peer about a grant whose window (or registration) is in place. */
static RSEC_MUST_CHECK int announce(struct rsec_conn *c, struct rsec_local_grant *g)
{
	g->announce = false;
	int rc = g->verified ? send_read_mac(c, g) : 0;
	if (rc < 0)
		return rsec_conn_fail(c, rc, "cannot send the MAC of grant %llu", (unsigned long long)g->id);
	struct rsec_msg m = { .type = RSEC_MSG_GRANT };
	m.u.grant.grant_id = g->id;
	m.u.grant.addr = (uintptr_t)g->addr;
	m.u.grant.rkey = g->rkey;
	m.u.grant.len = g->len;
	m.u.grant.access = g->access;
	m.u.grant.ttl_ms = g->ttl_ms;
	m.u.grant.tag = g->tag;
	rc = rsec_chan_send(c, &m);
	OPENSSL_cleanse(&m, sizeof(m));
	if (rc < 0)
		return rsec_conn_fail(c, rc, "cannot send GRANT");
	c->stats.grants_issued++;
	audit_grant(c, RSEC_AUDIT_GRANT, g, "ok", g->verified ? "verified read" : NULL, 0, 0);
	return 0;
}

int rsec_grant(struct rsec_conn *c, struct rsec_region *r, size_t off, size_t len, unsigned access,
	       uint32_t ttl_ms, uint64_t tag, uint64_t *grant_id)
{
	bool verified = access & RSEC_GRANT_VERIFIED;
	access &= ~(unsigned)RSEC_GRANT_VERIFIED;
	if (!c || !r || r->conn != c || !len || !access_valid(access) || (access & ~r->access) ||
	    (verified && !(access & RSEC_ACCESS_READ)) || off > r->len || len > r->len - off)
		return RSEC_E_INVAL;
	RSEC_GUARD(require_established(c));
	bool by_mr;
	RSEC_GUARD(use_mr(c, &by_mr));
	unsigned idx;
	struct rsec_local_grant *g = rsec_gt_slot(&c->gt, &idx);
	if (!g)
		return RSEC_E_LIMIT;
	g->addr = r->addr + off;
	g->len = len;
	g->access = access;
	g->by_mr = by_mr;
	g->verified = verified;
	g->tag = tag;
	RSEC_GUARD(by_mr ? expose_by_registration(c, g) : expose_by_window(c, r, idx));
	rsec_gt_activate(&c->gt, g, rsec_now_ms(), ttl_ms);
	if (grant_id)
		*grant_id = g->id;
	if (g->busy) {
		g->announce = true; /* when the bind completes */
		return 0;
	}
	return announce(c, g);
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
		/* Never described to the peer; its window goes when the bind completes. */
		g->announce = false;
		audit_grant(c, ev, g, "ok", "before its bind completed; the peer was never told", 0, 0);
		return 0;
	}
	if (grant_release(g) < 0) {
		audit_grant(c, ev, g, "failed", "the device refused to free the window; connection closed", 0, 0);
		return rsec_conn_fail(c, RSEC_E_VERBS, "cannot revoke grant %#llx", (unsigned long long)g->id);
	}
	audit_grant(c, ev, g, "ok", NULL, 0, 0);
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
	RSEC_GUARD(require_established(c));
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

int rsec_grant_verify(struct rsec_conn *c, uint64_t grant_id, uint64_t *off, uint64_t *len, int timeout_ms)
{
	if (!c || !off || !len)
		return RSEC_E_INVAL;
	*off = *len = 0;
	RSEC_GUARD(require_established(c));
	struct rsec_local_grant *g = find_live(c, grant_id);
	if (!g || !(g->access & RSEC_ACCESS_WRITE))
		return RSEC_E_GRANT;
	struct claim_wanted w = { .g = g, .grant_id = grant_id };
	RSEC_GUARD(rsec_conn_wait_for(c, claim_arrived, &w, timeout_ms));
	RSEC_GUARD(require_established(c)); /* closing revoked it: say why, not RSEC_E_GRANT */
	if (!g->live || g->id != grant_id)
		return RSEC_E_GRANT; /* expired meanwhile */
	/* Revoke first: once checked, nobody may change the bytes. */
	RSEC_GUARD(invalidate(c, g, RSEC_AUDIT_REVOKE));
	c->stats.grants_revoked++;
	uint8_t *p = g->addr + g->claim_off;
	uint8_t mac[RSEC_SEAL_DATAMAC_LEN];
	int rc = rsec_seal_data_mac(&c->seal, !c->is_server, g->id, g->claim_off, p, g->claim_len, mac);
	bool ok = rc == 0 && rsec_seal_mac_equal(mac, g->claim_mac);
	OPENSSL_cleanse(mac, sizeof(mac));
	OPENSSL_cleanse(g->claim_mac, sizeof(g->claim_mac));
	g->claim = false;
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
	rsec_region_unuse(c, g->region);
	g->region = NULL;
	return g;
}

int rsec_grant_on_wc(struct rsec_conn *c, const struct ibv_wc *wc)
{
	struct rsec_local_grant *g = bound_grant(c, wc);
	if (!g)
		return rsec_conn_fail(c, RSEC_E_VERBS, "bind completion for a window with no bind in flight");
	if (!g->live) {
		/* Revoked or expired while binding (audited then): nothing was told, nothing stays. */
		(void)!rsec_mw_free(&g->mw);
		return 0;
	}
	g->rkey = g->mw.rkey;
	return g->announce ? announce(c, g) : 0;
}

void rsec_grant_on_wc_failed(struct rsec_conn *c, const struct ibv_wc *wc)
{
	struct rsec_local_grant *g = bound_grant(c, wc);
	if (g)
		g->announce = false; /* a failed bind leaves the key unknown: never told, freed with the rest */
}

int rsec_grant_on_msg(struct rsec_conn *c, const struct rsec_msg *m)
{
	int rc;
	switch (m->type) {
	case RSEC_MSG_REVOKE:
		rsec_gt_remote_revoke(&c->gt, m->u.revoke.grant_id);
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
		rc = rsec_gt_remote_add(&c->gt, &m->u.grant);
		if (rc == RSEC_E_LIMIT)
			return rsec_conn_fail(c, rc, "peer holds more than %u grants open", RSEC_MAX_GRANTS);
		return rc < 0 ? rsec_conn_fail(c, rc, "GRANT with one of our own grant ids") : 0;
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
	struct rsec_msg m = { .type = RSEC_MSG_VERIFY };
	m.u.verify.grant_id = g->id;
	m.u.verify.offset = off;
	m.u.verify.len = len;
	m.u.verify.mac_alg = RSEC_WIRE_MAC_HMAC_SHA256;
	int rc = rsec_seal_data_mac(&c->seal, c->is_server, g->id, off, buf, len, m.u.verify.mac);
	if (rc == 0)
		rc = rsec_chan_send(c, &m);
	OPENSSL_cleanse(&m, sizeof(m));
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
	struct rsec_audit_region r = {
		.grant_id = g->id, .addr = g->addr, .len = g->len, .span = g->len,
		.access = g->access & ACCESS_RW, .rkey = g->rkey, .ttl_ms = g->ttl_ms,
	};
	rsec_conn_audit(c, RSEC_AUDIT_VERIFIED_READ, ok ? "ok" : "mismatch",
			ok ? NULL : "bytes differ from what the granter exposed; wiped", &r);
	if (!ok) {
		OPENSSL_cleanse(buf, g->len);
		c->data_mac_failures++;
		return RSEC_E_MAC;
	}
	return 0;
}

void rsec_grant_close(struct rsec_conn *c)
{
	if (c->have_qp && c->qp.qp)
		(void)!rsec_qp_to_error(&c->qp); /* no remote access at all from here on */
	for (unsigned i = 0; i < RSEC_MAX_GRANTS; i++) {
		struct rsec_local_grant *g = &c->gt.local[i];
		if (!g->live)
			continue;
		g->live = false;
		bool freed = grant_release(g) == 0;
		audit_grant(c, RSEC_AUDIT_REVOKE, g, freed ? "ok" : "failed", "connection closed", 0, 0);
		c->stats.grants_revoked++;
	}
}

void rsec_grant_teardown(struct rsec_conn *c)
{
	/* Windows first: a registration with windows bound to it cannot go. */
	for (unsigned i = 0; i < RSEC_MAX_GRANTS; i++) {
		struct rsec_local_grant *g = &c->gt.local[i];
		if (g->busy) {
			g->busy = false;
			c->binds_inflight--;
			rsec_region_unuse(c, g->region); /* the QP is gone: its binds will never complete */
			g->region = NULL;
		}
		(void)!grant_release(g);
	}
	while (c->dying) {
		struct rsec_region *r = c->dying;
		c->dying = r->next_dying;
		region_destroy(r);
	}
	rsec_gt_wipe(&c->gt);
}
