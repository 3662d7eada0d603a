/* SPDX-License-Identifier: MIT */
/*
 * Sealed one-sided transfers: the layout arithmetic, round trips over chunk
 * boundaries for both AEADs, and every tampering the design must catch
 * (a flipped byte, a flipped tag, chunks swapped, truncation, another
 * grant's ciphertext, another offset or prefix), each leaving no byte of
 * plaintext or ciphertext behind.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sealed.h"
#include "test_util.h"

static const uint8_t key[RSEC_SEALED_KEY_LEN] = { 7, 1, 2, 3 };

static struct rsec_sealed_params params(enum rsec_aead_alg alg, uint64_t plain_len)
{
	struct rsec_sealed_params p = { .alg = alg, .grant_id = 0x8000000000000003ull, .offset = 4096,
					.plain_len = plain_len, .prefix = { 1, 2, 3, 4, 5, 6, 7, 8 } };
	return p;
}

static uint8_t *text(size_t plain_len)
{
	uint8_t *b = malloc(rsec_sealed_len(plain_len));
	assert_non_null(b);
	for (size_t i = 0; i < plain_len; i++)
		b[i] = (uint8_t)('a' + i % 26);
	return b;
}

static void lengths_invert(void **state)
{
	(void)state;
	assert_int_equal(rsec_sealed_len(0), 0);
	assert_int_equal(rsec_sealed_len(1), 17);
	assert_int_equal(rsec_sealed_len(RSEC_SEALED_CHUNK), RSEC_SEALED_CHUNK + 16);
	assert_int_equal(rsec_sealed_len(RSEC_SEALED_CHUNK + 1), RSEC_SEALED_CHUNK + 1 + 32);
	assert_int_equal(rsec_sealed_len(SIZE_MAX), 0);
	/* Every sealed length maps back to its plaintext length, and nothing else does. */
	uint64_t hits = 0;
	for (uint64_t s = 0; s < 3 * (RSEC_SEALED_CHUNK + 16) + 40; s++) {
		uint64_t p;
		if (rsec_sealed_plain_len(s, &p)) {
			assert_int_equal(rsec_sealed_len(p), s);
			hits++;
		}
	}
	assert_int_equal(hits, 3 * RSEC_SEALED_CHUNK + 23); /* plaintexts of 1..3C+23 bytes */
	uint64_t p;
	assert_true(rsec_sealed_plain_len(rsec_sealed_len(16777216), &p));
	assert_int_equal(p, 16777216);
	assert_false(rsec_sealed_plain_len(16, &p));
}

static void round_trips(void **state)
{
	(void)state;
	static const size_t sizes[] = { 1, 15, 16, 4096, RSEC_SEALED_CHUNK - 1, RSEC_SEALED_CHUNK,
					RSEC_SEALED_CHUNK + 1, 3 * RSEC_SEALED_CHUNK + 5 };
	static const enum rsec_aead_alg algs[] = { RSEC_AEAD_AES256GCM, RSEC_AEAD_CHACHA20POLY1305 };
	for (size_t a = 0; a < 2; a++) {
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			size_t n = sizes[i], total = rsec_sealed_len(n);
			uint8_t *b = text(n), *want = text(n);
			struct rsec_sealed_params p = params(algs[a], n);
			assert_int_equal(rsec_sealed_seal(key, &p, b), 0);
			/* No 16-byte window of the text survives sealing. */
			for (size_t off = 0; n >= 16 && off + 16 <= n; off += 7)
				assert_null(memmem(b, total, want + off, 16));
			assert_int_equal(rsec_sealed_open(key, &p, b), 0);
			assert_memory_equal(b, want, n);
			assert_true(all_zero(b + n, total - n)); /* the tags are wiped */
			free(b);
			free(want);
		}
	}
}

/* One kept key for many transfers, both ways, after a refused one too: the same bytes as a key used once. */
static void kept_key_matches_one_shot(void **state)
{
	(void)state;
	static const enum rsec_aead_alg algs[] = { RSEC_AEAD_AES256GCM, RSEC_AEAD_CHACHA20POLY1305 };
	for (size_t a = 0; a < 2; a++) {
		struct rsec_sealed_key k = { 0 };
		assert_int_equal(rsec_sealed_key_init(&k, algs[a], key), 0);
		for (size_t round = 0; round < 3; round++) {
			size_t n = 100 + round * RSEC_SEALED_CHUNK, total = rsec_sealed_len(n);
			uint8_t *b = text(n), *want = text(n), *once = text(n);
			struct rsec_sealed_params p = params(algs[a], n);
			p.prefix[0] = (uint8_t)round;
			assert_int_equal(rsec_sealed_seal_with(&k, &p, b), 0);
			assert_int_equal(rsec_sealed_seal(key, &p, once), 0);
			assert_memory_equal(b, once, total);
			b[n / 2] ^= 1;
			assert_int_equal(rsec_sealed_open_with(&k, &p, b), RSEC_E_MAC);
			assert_true(all_zero(b, total));
			assert_int_equal(rsec_sealed_open_with(&k, &p, once), 0);
			assert_memory_equal(once, want, n);
			free(b);
			free(want);
			free(once);
		}
		struct rsec_sealed_params other = params(algs[1 - a], 10);
		uint8_t small[26] = { 0 };
		assert_int_equal(rsec_sealed_seal_with(&k, &other, small), RSEC_E_INVAL); /* keyed for the other AEAD */
		rsec_sealed_key_free(&k);
		assert_null(k.ctx);
		rsec_sealed_key_free(&k);
	}
}

static void fresh_prefix_fresh_ciphertext(void **state)
{
	(void)state;
	size_t n = 1000;
	uint8_t *a = text(n), *b = text(n);
	struct rsec_sealed_params p = params(RSEC_AEAD_AES256GCM, n), q = p;
	q.prefix[0] ^= 1;
	assert_int_equal(rsec_sealed_seal(key, &p, a), 0);
	assert_int_equal(rsec_sealed_seal(key, &q, b), 0);
	assert_memory_not_equal(a, b, n);
	free(a);
	free(b);
}

/* Seal 2.5 chunks, let tamper change the bytes or the parameters, then open: must fail and wipe. */
static void expect_refused(void (*tamper)(uint8_t *b, size_t n, struct rsec_sealed_params *p))
{
	size_t n = 2 * RSEC_SEALED_CHUNK + RSEC_SEALED_CHUNK / 2, total = rsec_sealed_len(n);
	uint8_t *b = text(n);
	struct rsec_sealed_params p = params(RSEC_AEAD_AES256GCM, n);
	assert_int_equal(rsec_sealed_seal(key, &p, b), 0);
	tamper(b, n, &p);
	assert_int_equal(rsec_sealed_open(key, &p, b), RSEC_E_MAC);
	assert_true(all_zero(b, rsec_sealed_len(p.plain_len) < total ? rsec_sealed_len(p.plain_len) : total));
	free(b);
}

static void flip_text(uint8_t *b, size_t n, struct rsec_sealed_params *p)
{
	(void)p;
	b[n - 1] ^= 0x01; /* the last chunk: earlier ones open first and must be wiped too */
}

static void flip_tag(uint8_t *b, size_t n, struct rsec_sealed_params *p)
{
	(void)p;
	b[n + 16] ^= 0x80;
}

static void swap_chunks(uint8_t *b, size_t n, struct rsec_sealed_params *p)
{
	(void)p;
	uint8_t tmp[RSEC_SEALED_CHUNK];
	memcpy(tmp, b, RSEC_SEALED_CHUNK);
	memcpy(b, b + RSEC_SEALED_CHUNK, RSEC_SEALED_CHUNK);
	memcpy(b + RSEC_SEALED_CHUNK, tmp, RSEC_SEALED_CHUNK);
	uint8_t t[16];
	memcpy(t, b + n, 16);
	memcpy(b + n, b + n + 16, 16);
	memcpy(b + n + 16, t, 16);
}

/* Claim the first two chunks only, their tags moved where a 2-chunk transfer keeps them. */
static void truncate_claim(uint8_t *b, size_t n, struct rsec_sealed_params *p)
{
	memmove(b + 2 * RSEC_SEALED_CHUNK, b + n, 32);
	p->plain_len = 2 * RSEC_SEALED_CHUNK;
}

static void other_grant(uint8_t *b, size_t n, struct rsec_sealed_params *p)
{
	(void)b, (void)n;
	p->grant_id++; /* another grant's ciphertext replayed into this one */
}

static void other_offset(uint8_t *b, size_t n, struct rsec_sealed_params *p)
{
	(void)b, (void)n;
	p->offset += 1;
}

static void other_prefix(uint8_t *b, size_t n, struct rsec_sealed_params *p)
{
	(void)b, (void)n;
	p->prefix[7] ^= 1;
}

static void tampering_is_refused(void **state)
{
	(void)state;
	expect_refused(flip_text);
	expect_refused(flip_tag);
	expect_refused(swap_chunks);
	expect_refused(truncate_claim);
	expect_refused(other_grant);
	expect_refused(other_offset);
	expect_refused(other_prefix);
}

static void bad_parameters(void **state)
{
	(void)state;
	uint8_t b[64] = { 0 };
	struct rsec_sealed_params p = params(RSEC_AEAD_AES256GCM, 0);
	assert_int_equal(rsec_sealed_seal(key, &p, b), RSEC_E_INVAL);
	p = params((enum rsec_aead_alg)9, 8);
	assert_int_equal(rsec_sealed_seal(key, &p, b), RSEC_E_INVAL);
	p = params(RSEC_AEAD_AES256GCM, 8);
	assert_int_equal(rsec_sealed_seal(key, NULL, b), RSEC_E_INVAL);
	assert_int_equal(rsec_sealed_open(key, &p, NULL), RSEC_E_INVAL);
	assert_int_equal(rsec_sealed_key(NULL, 1, b), RSEC_E_INVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(lengths_invert),
		cmocka_unit_test(round_trips),
		cmocka_unit_test(kept_key_matches_one_shot),
		cmocka_unit_test(fresh_prefix_fresh_ciphertext),
		cmocka_unit_test(tampering_is_refused),
		cmocka_unit_test(bad_parameters),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
