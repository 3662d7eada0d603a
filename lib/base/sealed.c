/* SPDX-License-Identifier: MIT */
/*
 * Sealed one-sided transfers: chunked AEAD in place (layout in sealed.h).
 * Nonces never repeat under a key: the key is the grant's alone, and every
 * sealing draws a fresh 64-bit prefix (a writer may seal into one grant more
 * than once), the chunk index filling the rest. RFC 5116 §3.2 (nonce
 * uniqueness), NIST SP 800-38D §8.3 (at most 2^32 random IVs per key: far
 * more sealings than a grant sees).
 */
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "buf.h"
#include "sealed.h"

#define TAG_LEN RSEC_SEALED_TAG
#define AAD_LEN (8 + 8 + 8 + 4)
#define NONCE_LEN 12

static uint64_t chunks_of(uint64_t plain_len)
{
	return plain_len / RSEC_SEALED_CHUNK + (plain_len % RSEC_SEALED_CHUNK != 0);
}

size_t rsec_sealed_size(size_t plain_len)
{
	uint64_t n = chunks_of(plain_len);
	if (plain_len == 0 || n > (SIZE_MAX - plain_len) / TAG_LEN)
		return 0;
	return plain_len + (size_t)n * TAG_LEN;
}

bool rsec_sealed_plain_len(uint64_t sealed_len, uint64_t *plain_len)
{
	/* P + 16 * ceil(P / C) grows strictly with P, so at most one P fits. */
	uint64_t n = sealed_len / (RSEC_SEALED_CHUNK + TAG_LEN) + (sealed_len % (RSEC_SEALED_CHUNK + TAG_LEN) != 0);
	if (n == 0 || sealed_len <= n * TAG_LEN)
		return false;
	uint64_t p = sealed_len - n * TAG_LEN;
	if (chunks_of(p) != n)
		return false;
	*plain_len = p;
	return true;
}

int rsec_sealed_key(SSL *ssl, uint64_t grant_id, uint8_t key[static RSEC_SEALED_KEY_LEN])
{
	RSEC_ENSURE(ssl && SSL_version(ssl) == TLS1_3_VERSION && SSL_is_init_finished(ssl), RSEC_E_INVAL);
	uint8_t context[8];
	struct rsec_buf b;
	rsec_buf_init(&b, context, sizeof(context));
	RSEC_GUARD(rsec_buf_put_u64(&b, grant_id));
	static const char label[] = RSEC_SEALED_LABEL;
	RSEC_ENSURE(SSL_export_keying_material(ssl, key, RSEC_SEALED_KEY_LEN, label, sizeof(label) - 1, context,
					       sizeof(context), 1) == 1,
		    RSEC_E_TLS);
	return 0;
}

static bool params_valid(const struct rsec_sealed_params *p)
{
	return p && rsec_seal_cipher(p->alg) && p->plain_len > 0 && rsec_sealed_size(p->plain_len) != 0 &&
	       chunks_of(p->plain_len) <= UINT32_MAX;
}

/* Chunk i's nonce and associated data (sealed.h). */
static RSEC_MUST_CHECK int chunk_inputs(const struct rsec_sealed_params *p, uint32_t i, uint8_t nonce[NONCE_LEN],
					uint8_t aad[AAD_LEN])
{
	struct rsec_buf b;
	rsec_buf_init(&b, nonce, NONCE_LEN);
	RSEC_GUARD(rsec_buf_put_bytes(&b, p->prefix, sizeof(p->prefix)));
	RSEC_GUARD(rsec_buf_put_u32(&b, i));
	rsec_buf_init(&b, aad, AAD_LEN);
	RSEC_GUARD(rsec_buf_put_u64(&b, p->grant_id));
	RSEC_GUARD(rsec_buf_put_u64(&b, p->offset));
	RSEC_GUARD(rsec_buf_put_u64(&b, p->plain_len));
	RSEC_GUARD(rsec_buf_put_u32(&b, i));
	return 0;
}

/* One chunk, in place; on opening, tag is checked, on sealing written. */
static RSEC_MUST_CHECK int chunk(EVP_CIPHER_CTX *ctx, bool seal, const struct rsec_sealed_params *p, uint32_t i,
				 uint8_t *data, int len, uint8_t tag[TAG_LEN])
{
	uint8_t nonce[NONCE_LEN], aad[AAD_LEN], scratch[16];
	int outl = 0;
	RSEC_GUARD(chunk_inputs(p, i, nonce, aad));
	RSEC_ENSURE(EVP_CipherInit_ex(ctx, NULL, NULL, NULL, nonce, seal ? 1 : 0) == 1, RSEC_E_CRYPTO);
	if (!seal)
		RSEC_ENSURE(EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, TAG_LEN, tag) == 1, RSEC_E_CRYPTO);
	RSEC_ENSURE(EVP_CipherUpdate(ctx, NULL, &outl, aad, AAD_LEN) == 1, RSEC_E_CRYPTO);
	RSEC_ENSURE(EVP_CipherUpdate(ctx, data, &outl, data, len) == 1 && outl == len, RSEC_E_CRYPTO);
	if (!seal)
		return EVP_CipherFinal_ex(ctx, scratch, &outl) == 1 ? 0 : RSEC_E_MAC;
	RSEC_ENSURE(EVP_CipherFinal_ex(ctx, scratch, &outl) == 1, RSEC_E_CRYPTO);
	RSEC_ENSURE(EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, TAG_LEN, tag) == 1, RSEC_E_CRYPTO);
	return 0;
}

int rsec_sealed_key_init(struct rsec_sealed_key *k, enum rsec_aead_alg alg,
			 const uint8_t key[static RSEC_SEALED_KEY_LEN])
{
	RSEC_ENSURE(k && key && rsec_seal_cipher(alg), RSEC_E_INVAL);
	*k = (struct rsec_sealed_key){ 0 };
	EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
	RSEC_ENSURE(ctx != NULL, RSEC_E_NOMEM);
	/* Keyed for sealing; each chunk's EVP_CipherInit_ex sets the direction and nonce, keeping the key. */
	if (EVP_CipherInit_ex(ctx, rsec_seal_cipher(alg), NULL, NULL, NULL, 1) != 1 ||
	    EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_IVLEN, NONCE_LEN, NULL) != 1 ||
	    EVP_CipherInit_ex(ctx, NULL, NULL, key, NULL, 1) != 1) {
		EVP_CIPHER_CTX_free(ctx);
		return RSEC_E_CRYPTO;
	}
	k->alg = alg;
	k->ctx = ctx;
	return 0;
}

void rsec_sealed_key_free(struct rsec_sealed_key *k)
{
	if (!k)
		return;
	EVP_CIPHER_CTX_free(k->ctx); /* cleanses the key schedule */
	*k = (struct rsec_sealed_key){ 0 };
}

static RSEC_MUST_CHECK int run(struct rsec_sealed_key *k, const struct rsec_sealed_params *p, uint8_t *buf, bool seal)
{
	RSEC_ENSURE(k && k->ctx && buf && params_valid(p) && k->alg == p->alg, RSEC_E_INVAL);
	size_t total = rsec_sealed_size(p->plain_len);
	int rc = 0;
	uint64_t n = chunks_of(p->plain_len);
	for (uint64_t i = 0; i < n && rc == 0; i++) {
		uint64_t start = i * RSEC_SEALED_CHUNK;
		uint64_t len = p->plain_len - start < RSEC_SEALED_CHUNK ? p->plain_len - start : RSEC_SEALED_CHUNK;
		rc = chunk(k->ctx, seal, p, (uint32_t)i, buf + start, (int)len, buf + p->plain_len + i * TAG_LEN);
	}
	if (rc < 0)
		OPENSSL_cleanse(buf, total); /* neither half-sealed plaintext nor unauthenticated bytes stay */
	else if (!seal)
		OPENSSL_cleanse(buf + p->plain_len, total - p->plain_len);
	return rc;
}

int rsec_sealed_seal_with(struct rsec_sealed_key *k, const struct rsec_sealed_params *p, uint8_t *buf)
{
	return run(k, p, buf, true);
}

int rsec_sealed_open_with(struct rsec_sealed_key *k, const struct rsec_sealed_params *p, uint8_t *buf)
{
	return run(k, p, buf, false);
}

/* A one-off transfer: the key kept for as long as it takes. */
static RSEC_MUST_CHECK int run_once(const uint8_t key[static RSEC_SEALED_KEY_LEN], const struct rsec_sealed_params *p,
				    uint8_t *buf, bool seal)
{
	RSEC_ENSURE(key && buf && params_valid(p), RSEC_E_INVAL);
	struct rsec_sealed_key k = { 0 };
	int rc = rsec_sealed_key_init(&k, p->alg, key);
	if (rc == 0)
		rc = run(&k, p, buf, seal);
	else
		OPENSSL_cleanse(buf, rsec_sealed_size(p->plain_len));
	rsec_sealed_key_free(&k);
	return rc;
}

int rsec_sealed_seal(const uint8_t key[static RSEC_SEALED_KEY_LEN], const struct rsec_sealed_params *p, uint8_t *buf)
{
	return run_once(key, p, buf, true);
}

int rsec_sealed_open(const uint8_t key[static RSEC_SEALED_KEY_LEN], const struct rsec_sealed_params *p, uint8_t *buf)
{
	return run_once(key, p, buf, false);
}
