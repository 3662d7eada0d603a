/* SPDX-License-Identifier: MIT */
/*
 * Grant keys (lib/path/grant_keys.c): both ends make the same keys of a grant
 * from the key id it names; a grant made under a later key id has keys of
 * its own; an id the chain no longer holds makes none; the grantee's store
 * keeps a grant's keys and gives room from revoked, expired, then oldest
 * grants. The exchange that moves the chain is tested in test_rekey.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "base/rekey.h"
#include "base/seal.h"
#include "path/grant_keys.h"

/* A chain at (epoch 0, generation gen) whose secrets are gen-filled bytes, the 3 before it kept. */
static void chain_at(struct rsec_rekey *rk, uint32_t gen)
{
	memset(rk, 0, sizeof(*rk));
	rk->have_secret = true;
	rk->gen = gen;
	memset(rk->secret, (int)gen + 1, sizeof(rk->secret));
	for (uint32_t i = 0; i < RSEC_REKEY_KEPT && i < gen; i++) {
		rk->kept[i].used = true;
		rk->kept[i].gen = gen - 1 - i;
		memset(rk->kept[i].secret, (int)(gen - i), sizeof(rk->kept[i].secret));
	}
}

static void mac_of(const struct rsec_grant_keys *k, bool server, uint64_t grant_id, uint8_t mac[32])
{
	static const uint8_t data[] = "the bytes of a verified transfer";
	assert_int_equal(rsec_grant_keys_mac(k, NULL, server, grant_id, 4, data, sizeof(data), mac), 0);
}

static void both_ends_agree(void **state)
{
	(void)state;
	struct rsec_rekey owner, grantee;
	chain_at(&owner, 2);
	chain_at(&grantee, 4); /* two rekeys on: generation 2 is kept */
	const uint64_t id = 0x8000000000000007ull;
	struct rsec_grant_keys a, b, other_id;
	assert_int_equal(rsec_grant_keys_make(&a, &owner, true, rsec_rekey_id(&owner), id), 0);
	assert_true(a.chain);
	assert_int_equal(rsec_grant_keys_make(&b, &grantee, true, 2, id), 0);
	assert_memory_equal(a.secret, b.secret, sizeof(a.secret));
	assert_int_equal(rsec_grant_keys_make(&other_id, &owner, true, 2, id + 1), 0);
	assert_memory_not_equal(a.secret, other_id.secret, sizeof(a.secret));

	uint8_t ka[32], kb[32], ma[32], mb[32], mc[32];
	assert_int_equal(rsec_grant_keys_sealed(&a, NULL, id, ka), 0);
	assert_int_equal(rsec_grant_keys_sealed(&b, NULL, id, kb), 0);
	assert_memory_equal(ka, kb, sizeof(ka));
	mac_of(&a, true, id, ma);
	mac_of(&b, true, id, mb);
	assert_memory_equal(ma, mb, sizeof(ma));
	mac_of(&a, false, id, mc); /* the other side's key */
	assert_memory_not_equal(ma, mc, sizeof(ma));
	assert_memory_not_equal(ka, ma, sizeof(ka));
}

static void later_ids_make_other_keys(void **state)
{
	(void)state;
	struct rsec_rekey rk;
	chain_at(&rk, 1);
	const uint64_t id = 9;
	struct rsec_grant_keys before, after;
	assert_int_equal(rsec_grant_keys_make(&before, &rk, true, 1, id), 0);
	chain_at(&rk, 2);
	assert_int_equal(rsec_grant_keys_make(&after, &rk, true, 2, id), 0);
	assert_memory_not_equal(before.secret, after.secret, sizeof(before.secret));
	/* Four generations on, generation 1 is gone: nobody makes its grants' keys again. */
	chain_at(&rk, 5);
	struct rsec_grant_keys gone;
	assert_int_equal(rsec_grant_keys_make(&gone, &rk, true, 1, id), RSEC_E_RANGE);
	assert_int_equal(rsec_grant_keys_make(&gone, &rk, true, 2, id), 0);
	assert_memory_equal(gone.secret, after.secret, sizeof(gone.secret));
}

/* With an older peer the keys are the session's: rsec_seal's data-MAC keys. */
static void older_peer_keeps_the_sessions_keys(void **state)
{
	(void)state;
	uint8_t secret[RSEC_SEAL_SECRET_LEN];
	for (size_t i = 0; i < sizeof(secret); i++)
		secret[i] = (uint8_t)(i * 7 + 1);
	struct rsec_seal seal = { 0 };
	assert_int_equal(rsec_seal_from_secret(&seal, secret, true, RSEC_AEAD_AES256GCM), 0);
	struct rsec_rekey rk;
	chain_at(&rk, 0);
	struct rsec_grant_keys k;
	assert_int_equal(rsec_grant_keys_make(&k, &rk, false, 0, 3), 0);
	assert_false(k.chain);
	static const uint8_t data[] = "the bytes of a verified transfer";
	uint8_t want[32], got[32];
	assert_int_equal(rsec_seal_data_mac(&seal, true, 3, 4, data, sizeof(data), want), 0);
	assert_int_equal(rsec_grant_keys_mac(&k, &seal, true, 3, 4, data, sizeof(data), got), 0);
	assert_memory_equal(want, got, sizeof(want));
	uint8_t key[32];
	assert_int_equal(rsec_grant_keys_sealed(&k, NULL, 3, key), RSEC_E_INVAL); /* the session's: needs its TLS */
	rsec_seal_free(&seal);
}

static struct rsec_grant_keys keys_of(uint8_t fill)
{
	struct rsec_grant_keys k = { .chain = true };
	memset(k.secret, fill, sizeof(k.secret));
	return k;
}

static void store_makes_room_from_the_dead(void **state)
{
	(void)state;
	static struct rsec_peer_grant_keys s;
	rsec_pgk_clear(&s);
	const uint64_t now = 1000;
	for (uint64_t id = 1; id <= RSEC_PEER_GRANT_KEYS; id++) {
		struct rsec_grant_keys k = keys_of((uint8_t)id);
		rsec_pgk_keep(&s, id, id == 50 ? now - 1 : 0, &k, now); /* grant 50's ttl ran out */
	}
	rsec_pgk_revoked(&s, 70);
	struct rsec_grant_keys k = keys_of(0xaa);
	rsec_pgk_keep(&s, 1000, 0, &k, now);
	assert_non_null(rsec_pgk_find(&s, 1000));
	/* One of the dead went (the first found), every live grant stays. */
	assert_true(rsec_pgk_find(&s, 50) == NULL || rsec_pgk_find(&s, 70) == NULL);
	for (uint64_t id = 1; id <= RSEC_PEER_GRANT_KEYS; id++)
		if (id != 50 && id != 70)
			assert_non_null(rsec_pgk_find(&s, id));
	rsec_pgk_keep(&s, 1001, 0, &k, now);
	assert_null(rsec_pgk_find(&s, 50));
	assert_null(rsec_pgk_find(&s, 70));
	/* No dead left: the oldest grant's goes. */
	rsec_pgk_keep(&s, 1002, 0, &k, now);
	assert_null(rsec_pgk_find(&s, 1));
	assert_non_null(rsec_pgk_find(&s, 2));
	/* Kept again (bound again after a rebuild): one entry, the keys given last. */
	struct rsec_grant_keys again = keys_of(0x55);
	rsec_pgk_keep(&s, 2, 0, &again, now);
	assert_memory_equal(rsec_pgk_find(&s, 2)->secret, again.secret, sizeof(again.secret));
	rsec_pgk_clear(&s);
	assert_null(rsec_pgk_find(&s, 2));
	static const struct rsec_peer_grant_keys zero;
	assert_memory_equal(&s, &zero, sizeof(s));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(both_ends_agree),
		cmocka_unit_test(later_ids_make_other_keys),
		cmocka_unit_test(older_peer_keeps_the_sessions_keys),
		cmocka_unit_test(store_makes_room_from_the_dead),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
