/* SPDX-License-Identifier: MIT */
#include <string.h>

#include <openssl/crypto.h>

#include "grant_table.h"
#include "base/sealed.h"

#define ACCESS_RW (RSEC_ACCESS_READ | RSEC_ACCESS_WRITE)

void rsec_gt_init(struct rsec_grant_table *t, bool is_server, uint16_t lane)
{
	memset(t, 0, sizeof(*t));
	t->is_server = is_server;
	t->lane = lane;
	t->next_id = (is_server ? RSEC_GRANT_ID_SERVER : 0) | (uint64_t)lane << RSEC_GRANT_ID_LANE_SHIFT | 1;
}

uint16_t rsec_gt_id_lane(uint64_t grant_id)
{
	return (uint16_t)((grant_id >> RSEC_GRANT_ID_LANE_SHIFT) & 0xff);
}

bool rsec_gt_ours(const struct rsec_grant_table *t, uint64_t grant_id)
{
	return ((grant_id & RSEC_GRANT_ID_SERVER) != 0) == t->is_server;
}

struct rsec_local_grant *rsec_gt_slot(struct rsec_grant_table *t, unsigned *idx)
{
	for (unsigned i = 0; i < RSEC_MAX_GRANTS; i++) {
		struct rsec_local_grant *g = &t->local[i];
		if (g->live || g->busy)
			continue;
		OPENSSL_cleanse(g, sizeof(*g));
		*idx = i;
		return g;
	}
	return NULL;
}

uint64_t rsec_gt_next_id(const struct rsec_grant_table *t)
{
	return t->next_id;
}

void rsec_gt_activate(struct rsec_grant_table *t, struct rsec_local_grant *g, uint64_t now_ms, uint32_t ttl_ms)
{
	g->live = true;
	g->id = t->next_id++;
	g->ttl_ms = ttl_ms;
	g->expires_ms = ttl_ms ? now_ms + ttl_ms : 0;
}

struct rsec_local_grant *rsec_gt_find(struct rsec_grant_table *t, uint64_t grant_id)
{
	for (unsigned i = 0; i < RSEC_MAX_GRANTS; i++)
		if (t->local[i].live && t->local[i].id == grant_id)
			return &t->local[i];
	return NULL;
}

struct rsec_local_grant *rsec_gt_expired(struct rsec_grant_table *t, uint64_t now_ms)
{
	for (unsigned i = 0; i < RSEC_MAX_GRANTS; i++) {
		struct rsec_local_grant *g = &t->local[i];
		if (g->live && g->expires_ms && g->expires_ms <= now_ms)
			return g;
	}
	return NULL;
}

uint64_t rsec_gt_next_expiry(const struct rsec_grant_table *t)
{
	uint64_t next = 0;
	for (unsigned i = 0; i < RSEC_MAX_GRANTS; i++) {
		const struct rsec_local_grant *g = &t->local[i];
		if (g->live && g->expires_ms && (!next || g->expires_ms < next))
			next = g->expires_ms;
	}
	return next;
}

int rsec_gt_claim(struct rsec_grant_table *t, const struct rsec_msg_verify *v)
{
	struct rsec_local_grant *g = rsec_gt_find(t, v->grant_id);
	if (!g)
		return RSEC_E_GRANT;
	/* What the claim covers in the grant: the bytes, or their sealed form. */
	uint64_t span = v->len;
	if (g->sealed)
		span = v->mac_alg == RSEC_WIRE_MAC_SEALED ? rsec_sealed_size(v->len) : 0;
	else if (v->mac_alg != RSEC_WIRE_MAC_HMAC_SHA256)
		span = 0;
	if (!(g->access & RSEC_ACCESS_WRITE) || g->claim || span == 0 || v->offset > g->len ||
	    span > g->len - v->offset)
		return RSEC_E_PROTO;
	g->claim = true;
	g->claim_off = v->offset;
	g->claim_len = v->len;
	memcpy(g->claim_mac, v->mac, sizeof(g->claim_mac));
	return 0;
}

int rsec_gt_pending_mac(struct rsec_grant_table *t, const struct rsec_msg_verify *v)
{
	if (v->offset != 0)
		return RSEC_E_PROTO;
	for (unsigned i = 0; i < RSEC_MAX_GRANTS; i++) {
		struct rsec_pending_mac *p = &t->pending[i];
		if (p->live)
			continue;
		p->live = true;
		p->alg = v->mac_alg;
		p->grant_id = v->grant_id;
		p->len = v->len;
		memcpy(p->mac, v->mac, sizeof(p->mac));
		return 0;
	}
	return RSEC_E_PROTO;
}

/* rg from the peer's GRANT g, with the MAC or prefix announced for it (consumed). */
static RSEC_MUST_CHECK int fill_remote(struct rsec_grant_table *t, const struct rsec_msg_grant *g,
				       struct rsec_remote_grant *rg)
{
	bool sealed = g->access & RSEC_WIRE_ACCESS_SEALED;
	*rg = (struct rsec_remote_grant){
		.id = g->grant_id, .tag = g->tag, .len = g->len,
		.access = (g->access & ACCESS_RW) | (sealed ? RSEC_GRANT_SEALED : 0),
		.ttl_ms = g->ttl_ms, .addr = g->addr, .rkey = g->rkey,
	};
	bool proven = false; /* a sealed READ grant's prefix came */
	for (unsigned j = 0; j < RSEC_MAX_GRANTS; j++) {
		struct rsec_pending_mac *p = &t->pending[j];
		if (!p->live || p->grant_id != g->grant_id)
			continue;
		bool read = rg->access & RSEC_ACCESS_READ;
		if (!sealed && read && p->alg == RSEC_WIRE_MAC_HMAC_SHA256 && p->len == g->len) {
			rg->access |= RSEC_GRANT_VERIFIED;
			memcpy(rg->mac, p->mac, sizeof(rg->mac));
		} else if (sealed && read && p->alg == RSEC_WIRE_MAC_SEALED && rsec_sealed_size(p->len) == g->len) {
			memcpy(rg->mac, p->mac, sizeof(rg->mac));
			proven = true;
		}
		OPENSSL_cleanse(p, sizeof(*p));
	}
	if (sealed && (rg->access & RSEC_ACCESS_READ) && !proven) {
		OPENSSL_cleanse(rg, sizeof(*rg));
		return RSEC_E_PROTO;
	}
	return 0;
}

int rsec_gt_remote_add(struct rsec_grant_table *t, const struct rsec_msg_grant *g)
{
	if (rsec_gt_ours(t, g->grant_id) || rsec_gt_id_lane(g->grant_id) != t->lane)
		return RSEC_E_PROTO;
	unsigned i = 0;
	while (i < RSEC_MAX_GRANTS && t->remote_live[i])
		i++;
	if (i == RSEC_MAX_GRANTS)
		return RSEC_E_LIMIT;
	if (g->grant_id > t->peer_max_id)
		t->peer_max_id = g->grant_id;
	RSEC_GUARD(fill_remote(t, g, &t->remote[i]));
	t->remote_live[i] = true;
	return 0;
}

/* The same grant, bound again: only its key, address and MAC may differ. */
static bool same_grant(const struct rsec_remote_grant *a, const struct rsec_remote_grant *b)
{
	return a->id == b->id && a->tag == b->tag && a->len == b->len && a->access == b->access &&
	       a->ttl_ms == b->ttl_ms;
}

/* A grant held back since the rebuild (never handed out), bound again: 0 updated, RSEC_E_PROTO changed,
 * RSEC_E_LIMIT not held back. */
static int update_held_back(struct rsec_grant_table *t, const struct rsec_remote_grant *rg)
{
	for (unsigned i = 0; i < RSEC_MAX_GRANTS; i++) {
		if (t->remote_live[i] && t->remote_stale[i] && t->remote[i].id == rg->id) {
			if (!same_grant(&t->remote[i], rg))
				return RSEC_E_PROTO;
			t->remote[i] = *rg;
			t->remote_stale[i] = false;
			return 0;
		}
	}
	return RSEC_E_LIMIT;
}

/* Where handles with rg's id resolve: its latest binding (the peer may say it again). */
static int note_rebound(struct rsec_grant_table *t, const struct rsec_remote_grant *rg)
{
	unsigned free_slot = RSEC_MAX_GRANTS;
	for (unsigned i = 0; i < RSEC_MAX_GRANTS; i++) {
		if (t->rebound_live[i] && t->rebound[i].id == rg->id) {
			t->rebound[i] = *rg;
			return 0;
		}
		if (!t->rebound_live[i] && free_slot == RSEC_MAX_GRANTS)
			free_slot = i;
	}
	if (free_slot == RSEC_MAX_GRANTS)
		return RSEC_E_LIMIT;
	t->rebound[free_slot] = *rg;
	t->rebound_live[free_slot] = true;
	return 0;
}

int rsec_gt_remote_rebind(struct rsec_grant_table *t, const struct rsec_msg_grant *g)
{
	/* Sealed grants' keys derive from their ids: never bound again under the same id. */
	if (!rsec_gt_peer_stale(t, g->grant_id) || (g->access & RSEC_WIRE_ACCESS_SEALED))
		return RSEC_E_PROTO;
	struct rsec_remote_grant rg;
	RSEC_GUARD(fill_remote(t, g, &rg));
	/*
	 * Its id stays below the floor, so every handle to it resolves through
	 * rebound: one handed out before the rebuild, and one taken after it
	 * from the table, where a held-back grant comes back.
	 */
	int rc = update_held_back(t, &rg);
	if (rc != RSEC_E_PROTO)
		rc = note_rebound(t, &rg);
	OPENSSL_cleanse(&rg, sizeof(rg));
	return rc;
}

void rsec_gt_rebind_done(struct rsec_grant_table *t)
{
	for (unsigned i = 0; i < RSEC_MAX_GRANTS; i++) {
		if (t->remote_live[i] && t->remote_stale[i]) {
			t->remote_live[i] = t->remote_stale[i] = false;
			OPENSSL_cleanse(&t->remote[i], sizeof(t->remote[i]));
		}
	}
}

bool rsec_gt_resolve(const struct rsec_grant_table *t, const struct rsec_remote_grant *g,
		     struct rsec_remote_grant *out)
{
	*out = *g;
	if (!rsec_gt_peer_stale(t, g->id))
		return true;
	for (unsigned i = 0; i < RSEC_MAX_GRANTS; i++) {
		const struct rsec_remote_grant *b = &t->rebound[i];
		if (t->rebound_live[i] && same_grant(b, g)) {
			out->addr = b->addr;
			out->rkey = b->rkey;
			memcpy(out->mac, b->mac, sizeof(out->mac));
			return true;
		}
	}
	return false;
}

void rsec_gt_remote_revoke(struct rsec_grant_table *t, uint64_t grant_id)
{
	for (unsigned i = 0; i < RSEC_MAX_GRANTS; i++) {
		if (t->remote_live[i] && t->remote[i].id == grant_id) {
			t->remote_live[i] = t->remote_stale[i] = false;
			OPENSSL_cleanse(&t->remote[i], sizeof(t->remote[i]));
		}
		if (t->rebound_live[i] && t->rebound[i].id == grant_id) {
			t->rebound_live[i] = false;
			OPENSSL_cleanse(&t->rebound[i], sizeof(t->rebound[i]));
		}
	}
}

bool rsec_gt_remote_take(struct rsec_grant_table *t, uint64_t tag, struct rsec_remote_grant *out)
{
	for (unsigned i = 0; i < RSEC_MAX_GRANTS; i++) {
		if (t->remote_live[i] && !t->remote_stale[i] && t->remote[i].tag == tag) {
			*out = t->remote[i];
			t->remote_live[i] = false;
			OPENSSL_cleanse(&t->remote[i], sizeof(t->remote[i]));
			return true;
		}
	}
	return false;
}

void rsec_gt_wipe(struct rsec_grant_table *t)
{
	bool is_server = t->is_server;
	uint16_t lane = t->lane;
	OPENSSL_cleanse(t, sizeof(*t));
	rsec_gt_init(t, is_server, lane);
}

void rsec_gt_forget_peer(struct rsec_grant_table *t, bool keep)
{
	/* The peer numbers its grants upwards: every one it issued so far is gone (or comes again). */
	if (t->peer_max_id)
		t->peer_floor = t->peer_max_id + 1;
	for (unsigned i = 0; i < RSEC_MAX_GRANTS; i++) {
		t->remote_stale[i] = keep && t->remote_live[i];
		if (!t->remote_stale[i]) {
			t->remote_live[i] = false;
			OPENSSL_cleanse(&t->remote[i], sizeof(t->remote[i]));
		}
	}
	/* Bound again on the new data path, they are announced again with new keys. */
	OPENSSL_cleanse(t->rebound, sizeof(t->rebound));
	memset(t->rebound_live, 0, sizeof(t->rebound_live));
	OPENSSL_cleanse(t->pending, sizeof(t->pending));
}

bool rsec_gt_peer_stale(const struct rsec_grant_table *t, uint64_t grant_id)
{
	return !rsec_gt_ours(t, grant_id) && rsec_gt_id_lane(grant_id) == t->lane && grant_id < t->peer_floor;
}
