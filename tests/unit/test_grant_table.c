/* SPDX-License-Identifier: MIT */
/*
 * Grant bookkeeping (lib/grant_table): ids and their issuer bit, slots,
 * expiry, the peer's write claims, verified READ grants and their MACs, and
 * the remote table's limits. The verbs side is tested on the fabric
 * (tests/fabric/grants.sh).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "grant_table.h"
#include "sealed.h"

static struct rsec_grant_table t;

/* Issue one live local grant of len bytes with these rights. */
static struct rsec_local_grant *issue(uint64_t len, unsigned access, uint64_t now, uint32_t ttl)
{
	unsigned idx;
	struct rsec_local_grant *g = rsec_gt_slot(&t, &idx);
	assert_non_null(g);
	assert_ptr_equal(g, &t.local[idx]);
	g->len = len;
	g->access = access;
	rsec_gt_activate(&t, g, now, ttl);
	return g;
}

static struct rsec_msg_verify verify_msg(uint64_t id, uint64_t off, uint64_t len, uint8_t fill)
{
	struct rsec_msg_verify v = { .grant_id = id, .offset = off, .len = len, .mac_alg = RSEC_WIRE_MAC_HMAC_SHA256 };
	memset(v.mac, fill, sizeof(v.mac));
	return v;
}

static void ids_carry_their_issuer(void **state)
{
	(void)state;
	rsec_gt_init(&t, true, 0);
	struct rsec_local_grant *a = issue(10, RSEC_ACCESS_READ, 0, 0);
	struct rsec_local_grant *b = issue(10, RSEC_ACCESS_READ, 0, 0);
	assert_true(a->id & RSEC_GRANT_ID_SERVER);
	assert_int_not_equal(a->id, b->id);
	assert_true(rsec_gt_ours(&t, a->id));
	assert_false(rsec_gt_ours(&t, 1));
	rsec_gt_init(&t, false, 0);
	struct rsec_local_grant *c = issue(10, RSEC_ACCESS_READ, 0, 0);
	assert_false(c->id & RSEC_GRANT_ID_SERVER);
	assert_true(rsec_gt_ours(&t, c->id));
	assert_false(rsec_gt_ours(&t, RSEC_GRANT_ID_SERVER | 1));
	/* A further queue pair's grants carry its lane, so ids never repeat within a session, also after a wipe. */
	rsec_gt_init(&t, true, 7);
	struct rsec_local_grant *d = issue(10, RSEC_ACCESS_READ, 0, 0);
	assert_int_equal(rsec_gt_id_lane(d->id), 7);
	assert_true(rsec_gt_ours(&t, d->id));
	assert_int_not_equal(d->id, RSEC_GRANT_ID_SERVER | 1); /* the first grant of lane 0 */
	assert_int_equal(rsec_gt_id_lane(RSEC_GRANT_ID_SERVER | 1), 0);
	rsec_gt_wipe(&t);
	assert_int_equal(rsec_gt_id_lane(rsec_gt_next_id(&t)), 7);
}

static void slots_run_out_and_come_back(void **state)
{
	(void)state;
	rsec_gt_init(&t, false, 0);
	struct rsec_local_grant *all[RSEC_MAX_GRANTS];
	for (unsigned i = 0; i < RSEC_MAX_GRANTS; i++)
		all[i] = issue(1, RSEC_ACCESS_WRITE, 0, 0);
	unsigned idx = 99;
	assert_null(rsec_gt_slot(&t, &idx));
	/* A bind in flight holds its slot too. */
	all[5]->live = false;
	all[5]->busy = true;
	assert_null(rsec_gt_slot(&t, &idx));
	all[5]->busy = false;
	struct rsec_local_grant *g = rsec_gt_slot(&t, &idx);
	assert_int_equal(idx, 5);
	assert_int_equal(g->id, 0); /* handed out wiped */
	assert_ptr_equal(rsec_gt_find(&t, all[7]->id), all[7]);
	assert_null(rsec_gt_find(&t, 12345));
}

static void expiry_follows_ttl(void **state)
{
	(void)state;
	rsec_gt_init(&t, true, 0);
	struct rsec_local_grant *forever = issue(8, RSEC_ACCESS_READ, 1000, 0);
	struct rsec_local_grant *short_ = issue(8, RSEC_ACCESS_READ, 1000, 50);
	struct rsec_local_grant *long_ = issue(8, RSEC_ACCESS_READ, 1000, 5000);
	/* What a wait sleeps until, at the latest. */
	assert_int_equal(rsec_gt_next_expiry(&t), 1050);
	assert_null(rsec_gt_expired(&t, 1049));
	assert_ptr_equal(rsec_gt_expired(&t, 1050), short_);
	short_->live = false; /* what revoking it does */
	assert_int_equal(rsec_gt_next_expiry(&t), 6000);
	assert_null(rsec_gt_expired(&t, 5999));
	assert_ptr_equal(rsec_gt_expired(&t, 6000), long_);
	long_->live = false;
	assert_int_equal(rsec_gt_next_expiry(&t), 0); /* the one left never expires */
	assert_null(rsec_gt_expired(&t, UINT64_MAX));
	assert_true(forever->live);
}

static void write_claims_are_checked(void **state)
{
	(void)state;
	rsec_gt_init(&t, true, 0);
	struct rsec_local_grant *w = issue(100, RSEC_ACCESS_WRITE, 0, 0);
	struct rsec_local_grant *r = issue(100, RSEC_ACCESS_READ, 0, 0);
	struct rsec_msg_verify v;

	v = verify_msg(r->id, 0, 10, 1);
	assert_int_equal(rsec_gt_claim(&t, &v), RSEC_E_PROTO); /* nobody writes a READ grant */
	v = verify_msg(w->id, 91, 10, 1);
	assert_int_equal(rsec_gt_claim(&t, &v), RSEC_E_PROTO); /* past the end */
	v = verify_msg(w->id, UINT64_MAX, 2, 1);
	assert_int_equal(rsec_gt_claim(&t, &v), RSEC_E_PROTO); /* wraps */
	v = verify_msg(w->id, 0, 0, 1);
	assert_int_equal(rsec_gt_claim(&t, &v), RSEC_E_PROTO);
	v = verify_msg(w->id + 100, 0, 10, 1);
	assert_int_equal(rsec_gt_claim(&t, &v), RSEC_E_GRANT); /* unknown: ignored by the caller */
	assert_false(w->claim);

	v = verify_msg(w->id, 90, 10, 7);
	assert_int_equal(rsec_gt_claim(&t, &v), 0);
	assert_true(w->claim);
	assert_int_equal(w->claim_off, 90);
	assert_int_equal(w->claim_len, 10);
	assert_memory_equal(w->claim_mac, v.mac, sizeof(v.mac));
	v = verify_msg(w->id, 0, 10, 8);
	assert_int_equal(rsec_gt_claim(&t, &v), RSEC_E_PROTO); /* one claim per grant */
	assert_int_equal(w->claim_mac[0], 7);

	w->live = false; /* revoked: a late claim is ignored */
	v = verify_msg(w->id, 0, 10, 1);
	assert_int_equal(rsec_gt_claim(&t, &v), RSEC_E_GRANT);
}

static struct rsec_msg_grant grant_msg(uint64_t id, uint64_t tag, uint64_t len, uint32_t access)
{
	return (struct rsec_msg_grant){ .grant_id = id, .addr = 0x10000, .rkey = 0x123456, .len = len,
					.access = access, .tag = tag };
}

static void remote_grants_and_their_macs(void **state)
{
	(void)state;
	rsec_gt_init(&t, false, 0); /* a client: the server's ids have the top bit */
	uint64_t sid = RSEC_GRANT_ID_SERVER | 9;
	struct rsec_remote_grant out;

	struct rsec_msg_grant own = grant_msg(3, 1, 10, RSEC_ACCESS_READ);
	assert_int_equal(rsec_gt_remote_add(&t, &own), RSEC_E_PROTO);
	/* The server's id, but of another of the session's queue pairs. */
	struct rsec_msg_grant other_lane = grant_msg(RSEC_GRANT_ID_SERVER | UINT64_C(2) << RSEC_GRANT_ID_LANE_SHIFT | 9,
						     1, 10, RSEC_ACCESS_READ);
	assert_int_equal(rsec_gt_remote_add(&t, &other_lane), RSEC_E_PROTO);

	/* A MAC, then its READ grant: verified. */
	struct rsec_msg_verify v = verify_msg(sid, 0, 64, 0x5a);
	assert_int_equal(rsec_gt_pending_mac(&t, &v), 0);
	struct rsec_msg_grant g = grant_msg(sid, 77, 64, RSEC_ACCESS_READ);
	assert_int_equal(rsec_gt_remote_add(&t, &g), 0);
	assert_false(rsec_gt_remote_take(&t, 78, &out));
	assert_true(rsec_gt_remote_take(&t, 77, &out));
	assert_int_equal(out.access, RSEC_ACCESS_READ | RSEC_GRANT_VERIFIED);
	assert_int_equal(out.mac[31], 0x5a);
	assert_int_equal(out.rkey, 0x123456);
	assert_false(rsec_gt_remote_take(&t, 77, &out)); /* taken once */
	for (unsigned i = 0; i < RSEC_MAX_GRANTS; i++)
		assert_false(t.pending[i].live); /* consumed */

	/* A MAC for another length does not verify the grant. */
	v = verify_msg(sid + 1, 0, 63, 1);
	assert_int_equal(rsec_gt_pending_mac(&t, &v), 0);
	g = grant_msg(sid + 1, 5, 64, RSEC_ACCESS_READ);
	assert_int_equal(rsec_gt_remote_add(&t, &g), 0);
	assert_true(rsec_gt_remote_take(&t, 5, &out));
	assert_int_equal(out.access, RSEC_ACCESS_READ);

	/* A MAC with an offset is malformed. */
	v = verify_msg(sid + 2, 1, 10, 1);
	assert_int_equal(rsec_gt_pending_mac(&t, &v), RSEC_E_PROTO);

	/* Revoked grants cannot be taken; unknown bits never come in. */
	g = grant_msg(sid + 3, 6, 64, RSEC_ACCESS_WRITE | 0x80);
	assert_int_equal(rsec_gt_remote_add(&t, &g), 0);
	rsec_gt_remote_revoke(&t, sid + 3);
	assert_false(rsec_gt_remote_take(&t, 6, &out));
	g = grant_msg(sid + 4, 7, 64, RSEC_ACCESS_WRITE | 0x80);
	assert_int_equal(rsec_gt_remote_add(&t, &g), 0);
	assert_true(rsec_gt_remote_take(&t, 7, &out));
	assert_int_equal(out.access, RSEC_ACCESS_WRITE);
}

static void remote_table_is_bounded(void **state)
{
	(void)state;
	rsec_gt_init(&t, true, 0);
	for (unsigned i = 0; i < RSEC_MAX_GRANTS; i++) {
		struct rsec_msg_grant g = grant_msg(i + 1, i, 8, RSEC_ACCESS_READ);
		assert_int_equal(rsec_gt_remote_add(&t, &g), 0);
	}
	struct rsec_msg_grant g = grant_msg(1000, 1000, 8, RSEC_ACCESS_READ);
	assert_int_equal(rsec_gt_remote_add(&t, &g), RSEC_E_LIMIT);
	for (unsigned i = 0; i < RSEC_MAX_GRANTS; i++) {
		struct rsec_msg_verify v = verify_msg(2000 + i, 0, 8, 1);
		assert_int_equal(rsec_gt_pending_mac(&t, &v), 0);
	}
	struct rsec_msg_verify v = verify_msg(3000, 0, 8, 1);
	assert_int_equal(rsec_gt_pending_mac(&t, &v), RSEC_E_PROTO);
}

static void wipe_forgets_everything(void **state)
{
	(void)state;
	rsec_gt_init(&t, true, 0);
	struct rsec_local_grant *w = issue(100, RSEC_ACCESS_WRITE, 0, 0);
	struct rsec_msg_verify v = verify_msg(w->id, 0, 10, 0xee);
	assert_int_equal(rsec_gt_claim(&t, &v), 0);
	struct rsec_msg_grant g = grant_msg(5, 1, 8, RSEC_ACCESS_READ);
	assert_int_equal(rsec_gt_remote_add(&t, &g), 0);
	rsec_gt_wipe(&t);
	assert_true(t.is_server);
	for (unsigned i = 0; i < RSEC_MAX_GRANTS; i++) {
		assert_false(t.local[i].live);
		assert_false(t.local[i].claim);
		assert_int_equal(t.local[i].claim_mac[0], 0);
		assert_false(t.remote_live[i]);
		assert_int_equal(t.remote[i].rkey, 0);
	}
}

/* Sealed grants: claims and READ descriptors must match the grant's kind and size. */
/* A rebuild forgets the peer's grants, and every id it issued so far stays refused; later ones work. */
static void forgotten_grants_stay_stale(void **state)
{
	(void)state;
	rsec_gt_init(&t, false, 0);
	uint64_t s = RSEC_GRANT_ID_SERVER;
	struct rsec_remote_grant out;
	struct rsec_msg_grant g5 = grant_msg(s | 5, 1, 64, RSEC_ACCESS_READ), g7 = grant_msg(s | 7, 2, 64, RSEC_ACCESS_WRITE);
	assert_int_equal(rsec_gt_remote_add(&t, &g5), 0);
	assert_int_equal(rsec_gt_remote_add(&t, &g7), 0);
	assert_true(rsec_gt_remote_take(&t, 1, &out)); /* the application holds grant 5 */
	assert_false(rsec_gt_peer_stale(&t, s | 5));
	rsec_gt_forget_peer(&t, false);
	assert_false(rsec_gt_remote_take(&t, 2, &out)); /* 7 was never taken: gone */
	assert_true(rsec_gt_peer_stale(&t, s | 5));
	assert_true(rsec_gt_peer_stale(&t, s | 7));
	assert_false(rsec_gt_peer_stale(&t, s | 8));  /* issued after the rebuild */
	assert_false(rsec_gt_peer_stale(&t, 5));      /* ours, not the peer's */
	assert_false(rsec_gt_peer_stale(&t, s | UINT64_C(1) << RSEC_GRANT_ID_LANE_SHIFT | 5)); /* another lane's */
	struct rsec_msg_grant g8 = grant_msg(s | 8, 3, 64, RSEC_ACCESS_READ);
	assert_int_equal(rsec_gt_remote_add(&t, &g8), 0);
	assert_true(rsec_gt_remote_take(&t, 3, &out));
	/* A second rebuild: 8 goes too. */
	rsec_gt_forget_peer(&t, false);
	assert_true(rsec_gt_peer_stale(&t, s | 8));
	/* Before any rebuild nothing is stale. */
	rsec_gt_init(&t, false, 0);
	assert_false(rsec_gt_peer_stale(&t, s | 1));
}

/*
 * A peer that binds its grants again after a rebuild: a handle handed out
 * resolves to the new key, one held back comes back with it; a grant not
 * bound again, a sealed one, or a GRANT for an id never stale is refused.
 */
static void rebound_grants_resolve(void **state)
{
	(void)state;
	rsec_gt_init(&t, false, 0);
	uint64_t s = RSEC_GRANT_ID_SERVER;
	struct rsec_remote_grant held, out, now;
	struct rsec_msg_grant g5 = grant_msg(s | 5, 1, 64, RSEC_ACCESS_READ), g7 = grant_msg(s | 7, 2, 64, RSEC_ACCESS_WRITE);
	struct rsec_msg_grant g9 = grant_msg(s | 9, 3, 64, RSEC_ACCESS_WRITE);
	assert_int_equal(rsec_gt_remote_add(&t, &g5), 0);
	assert_int_equal(rsec_gt_remote_add(&t, &g7), 0);
	assert_int_equal(rsec_gt_remote_add(&t, &g9), 0);
	assert_true(rsec_gt_remote_take(&t, 1, &held));
	assert_true(rsec_gt_remote_take(&t, 3, &out));
	rsec_gt_forget_peer(&t, true);
	assert_false(rsec_gt_resolve(&t, &held, &now)); /* not bound again yet */
	assert_false(rsec_gt_remote_take(&t, 2, &out)); /* held back until it comes again */
	g5.rkey = 0x654321;
	g5.addr = 0x20000;
	assert_int_equal(rsec_gt_remote_rebind(&t, &g5), 0);
	assert_true(rsec_gt_resolve(&t, &held, &now));
	assert_int_equal(now.rkey, 0x654321);
	assert_int_equal(now.addr, 0x20000);
	assert_int_equal(now.id, held.id);
	/* The same id with another range is not the same grant. */
	struct rsec_remote_grant other = held;
	other.len = 32;
	assert_false(rsec_gt_resolve(&t, &other, &now));
	g7.rkey = 0x777777;
	assert_int_equal(rsec_gt_remote_rebind(&t, &g7), 0);
	assert_true(rsec_gt_remote_take(&t, 2, &out));
	assert_int_equal(out.rkey, 0x777777);
	/* Taken after it came again, its id is still below the floor: the handle resolves, to the latest key. */
	assert_true(rsec_gt_resolve(&t, &out, &now));
	assert_int_equal(now.rkey, 0x777777);
	g7.rkey = 0x787878;
	assert_int_equal(rsec_gt_remote_rebind(&t, &g7), 0);
	assert_true(rsec_gt_resolve(&t, &out, &now));
	assert_int_equal(now.rkey, 0x787878);
	/* Refused: an id never issued before the rebuild, a sealed grant, a held-back one changed. */
	struct rsec_msg_grant g11 = grant_msg(s | 11, 4, 64, RSEC_ACCESS_READ);
	assert_int_equal(rsec_gt_remote_rebind(&t, &g11), RSEC_E_PROTO);
	g9.access |= RSEC_WIRE_ACCESS_SEALED;
	assert_int_equal(rsec_gt_remote_rebind(&t, &g9), RSEC_E_PROTO);
	/* Revoked: the handle no longer resolves. */
	rsec_gt_remote_revoke(&t, s | 5);
	assert_false(rsec_gt_resolve(&t, &held, &now));
	/* A held-back grant that never came again is gone when the rebuild ends. */
	struct rsec_msg_grant g12 = grant_msg(s | 12, 5, 64, RSEC_ACCESS_READ);
	assert_int_equal(rsec_gt_remote_add(&t, &g12), 0);
	rsec_gt_forget_peer(&t, true);
	rsec_gt_rebind_done(&t);
	g12.rkey = 1;
	assert_int_equal(rsec_gt_remote_rebind(&t, &g12), 0); /* too late to be handed out: a handle's only */
	assert_false(rsec_gt_remote_take(&t, 5, &out));
	/* Fresh grants still count against the table, rebound ones do not: bounded. */
	for (unsigned i = 0; i < RSEC_MAX_GRANTS + 1; i++) {
		struct rsec_msg_grant r = grant_msg(s | 5, 1, 64, RSEC_ACCESS_READ);
		r.rkey = i;
		assert_int_equal(rsec_gt_remote_rebind(&t, &r), 0); /* the same id again: updated in place */
	}
}

static void sealed_claims_and_grants(void **state)
{
	(void)state;
	rsec_gt_init(&t, true, 0);
	uint64_t plain = 100000, span = rsec_sealed_len(plain);
	struct rsec_local_grant *g = issue(span, RSEC_ACCESS_WRITE, 0, 0);
	g->sealed = true;
	struct rsec_msg_verify v = verify_msg(g->id, 0, plain, 0);
	assert_int_equal(rsec_gt_claim(&t, &v), RSEC_E_PROTO); /* an HMAC claim for a sealed grant */
	v.mac_alg = RSEC_WIRE_MAC_SEALED;
	memset(v.mac, 0, sizeof(v.mac));
	v.mac[0] = 0x5a;
	v.offset = 1; /* the sealed form would run one byte past the grant */
	assert_int_equal(rsec_gt_claim(&t, &v), RSEC_E_PROTO);
	v.offset = 0;
	v.len = span; /* a plaintext of the grant's length does not fit sealed */
	assert_int_equal(rsec_gt_claim(&t, &v), RSEC_E_PROTO);
	v.len = plain;
	assert_int_equal(rsec_gt_claim(&t, &v), 0);
	assert_int_equal(g->claim_len, plain);
	assert_int_equal(g->claim_mac[0], 0x5a);
	/* A sealed claim for a plain grant. */
	struct rsec_local_grant *h = issue(span, RSEC_ACCESS_WRITE, 0, 0);
	v.grant_id = h->id;
	assert_int_equal(rsec_gt_claim(&t, &v), RSEC_E_PROTO);

	/* The peer's sealed READ grant needs its prefix first, for exactly its size. */
	struct rsec_msg_grant rg = { .grant_id = 7, .len = span, .access = RSEC_WIRE_ACCESS_READ | RSEC_WIRE_ACCESS_SEALED,
				     .tag = 70 };
	assert_int_equal(rsec_gt_remote_add(&t, &rg), RSEC_E_PROTO);
	struct rsec_msg_verify pv = verify_msg(7, 0, plain + 1, 0);
	pv.mac_alg = RSEC_WIRE_MAC_SEALED;
	memset(pv.mac, 0, sizeof(pv.mac));
	assert_int_equal(rsec_gt_pending_mac(&t, &pv), 0);
	assert_int_equal(rsec_gt_remote_add(&t, &rg), RSEC_E_PROTO); /* the wrong plaintext length */
	pv.len = plain;
	pv.mac[3] = 0x33;
	assert_int_equal(rsec_gt_pending_mac(&t, &pv), 0);
	assert_int_equal(rsec_gt_remote_add(&t, &rg), 0);
	struct rsec_remote_grant out;
	assert_true(rsec_gt_remote_take(&t, 70, &out));
	assert_int_equal(out.access, RSEC_ACCESS_READ | RSEC_GRANT_SEALED);
	assert_int_equal(out.mac[3], 0x33);
	/* A sealed WRITE grant needs nothing first; a sealed prefix never makes a plain grant verified. */
	rg = (struct rsec_msg_grant){ .grant_id = 9, .len = 64, .access = RSEC_WIRE_ACCESS_WRITE | RSEC_WIRE_ACCESS_SEALED,
				      .tag = 90 };
	assert_int_equal(rsec_gt_remote_add(&t, &rg), 0);
	assert_true(rsec_gt_remote_take(&t, 90, &out));
	assert_int_equal(out.access, RSEC_ACCESS_WRITE | RSEC_GRANT_SEALED);
	pv = verify_msg(11, 0, 64, 0);
	pv.mac_alg = RSEC_WIRE_MAC_SEALED;
	memset(pv.mac, 0, sizeof(pv.mac));
	assert_int_equal(rsec_gt_pending_mac(&t, &pv), 0);
	rg = (struct rsec_msg_grant){ .grant_id = 11, .len = 64, .access = RSEC_WIRE_ACCESS_READ, .tag = 110 };
	assert_int_equal(rsec_gt_remote_add(&t, &rg), 0);
	assert_true(rsec_gt_remote_take(&t, 110, &out));
	assert_int_equal(out.access, RSEC_ACCESS_READ);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ids_carry_their_issuer),
		cmocka_unit_test(slots_run_out_and_come_back),
		cmocka_unit_test(expiry_follows_ttl),
		cmocka_unit_test(write_claims_are_checked),
		cmocka_unit_test(remote_grants_and_their_macs),
		cmocka_unit_test(remote_table_is_bounded),
		cmocka_unit_test(wipe_forgets_everything),
		cmocka_unit_test(sealed_claims_and_grants),
		cmocka_unit_test(forgotten_grants_stay_stale),
		cmocka_unit_test(rebound_grants_resolve),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
