/* SPDX-License-Identifier: MIT */
/*
 * The generation secrets of a queue pair's keys (rekey.h): X25519 (RFC 7748)
 * and HKDF-SHA256 (RFC 5869) through OpenSSL's EVP_PKEY and EVP_KDF.
 */
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>

#include "buf.h"
#include "rekey.h"

#define INFO_NEXT "rdmasec-v1 rekey"
#define INFO_DATA "rdmasec-v1 data"
#define INFO_EXPORT "rdmasec-v1 export"

int rsec_rekey_first(SSL *ssl, uint16_t lane, uint32_t epoch, uint8_t secret[static RSEC_REKEY_SECRET_LEN])
{
	RSEC_ENSURE(ssl && SSL_version(ssl) == TLS1_3_VERSION && SSL_is_init_finished(ssl), RSEC_E_INVAL);
	uint8_t ctx[6];
	struct rsec_buf b;
	rsec_buf_init(&b, ctx, sizeof(ctx));
	RSEC_GUARD(rsec_buf_put_u16(&b, lane));
	RSEC_GUARD(rsec_buf_put_u32(&b, epoch));
	static const char label[] = RSEC_REKEY_LABEL;
	RSEC_ENSURE(SSL_export_keying_material(ssl, secret, RSEC_REKEY_SECRET_LEN, label, sizeof(label) - 1, ctx,
					       sizeof(ctx), 1) == 1,
		    RSEC_E_TLS);
	return 0;
}

int rsec_rekey_keypair(EVP_PKEY **priv, uint8_t pub[static RSEC_REKEY_PUB_LEN])
{
	RSEC_ENSURE(priv && pub, RSEC_E_INVAL);
	*priv = EVP_PKEY_Q_keygen(NULL, NULL, "X25519");
	RSEC_ENSURE(*priv != NULL, RSEC_E_CRYPTO);
	size_t len = RSEC_REKEY_PUB_LEN;
	if (EVP_PKEY_get_raw_public_key(*priv, pub, &len) != 1 || len != RSEC_REKEY_PUB_LEN) {
		EVP_PKEY_free(*priv);
		*priv = NULL;
		return RSEC_E_CRYPTO;
	}
	return 0;
}

/* X25519(priv, peer_pub) into shared; OpenSSL refuses an all-zero result (RFC 7748 section 6.1). */
static RSEC_MUST_CHECK int ecdh(EVP_PKEY *priv, const uint8_t peer_pub[static RSEC_REKEY_PUB_LEN],
				uint8_t shared[static RSEC_REKEY_SECRET_LEN])
{
	EVP_PKEY *peer = EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, NULL, peer_pub, RSEC_REKEY_PUB_LEN);
	EVP_PKEY_CTX *pc = peer ? EVP_PKEY_CTX_new(priv, NULL) : NULL;
	size_t len = RSEC_REKEY_SECRET_LEN;
	int rc = pc && EVP_PKEY_derive_init(pc) == 1 && EVP_PKEY_derive_set_peer(pc, peer) == 1 &&
			 EVP_PKEY_derive(pc, shared, &len) == 1 && len == RSEC_REKEY_SECRET_LEN
		 ? 0 : RSEC_E_CRYPTO;
	EVP_PKEY_CTX_free(pc);
	EVP_PKEY_free(peer);
	return rc;
}

/* HKDF-SHA256, extract and expand (salt given) or expand only (salt NULL: key is the PRK). */
static RSEC_MUST_CHECK int hkdf(const uint8_t *salt, const uint8_t *key, size_t key_len, const uint8_t *info,
				size_t info_len, uint8_t *out, size_t out_len)
{
	EVP_KDF *kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
	EVP_KDF_CTX *kc = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
	EVP_KDF_free(kdf);
	RSEC_ENSURE(kc != NULL, RSEC_E_CRYPTO);
	char digest[] = "SHA256";
	int mode = salt ? EVP_KDF_HKDF_MODE_EXTRACT_AND_EXPAND : EVP_KDF_HKDF_MODE_EXPAND_ONLY;
	OSSL_PARAM params[6], *p = params;
	*p++ = OSSL_PARAM_construct_int(OSSL_KDF_PARAM_MODE, &mode);
	*p++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, digest, 0);
	*p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)key, key_len);
	*p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, (void *)info, info_len);
	if (salt)
		*p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, (void *)salt, RSEC_REKEY_SECRET_LEN);
	*p = OSSL_PARAM_construct_end();
	int rc = EVP_KDF_derive(kc, out, out_len, params) == 1 ? 0 : RSEC_E_CRYPTO;
	EVP_KDF_CTX_free(kc);
	if (rc < 0)
		OPENSSL_cleanse(out, out_len);
	return rc;
}

int rsec_rekey_next(const uint8_t cur[static RSEC_REKEY_SECRET_LEN], EVP_PKEY *priv,
		    const uint8_t peer_pub[static RSEC_REKEY_PUB_LEN], uint32_t gen,
		    uint8_t next[static RSEC_REKEY_SECRET_LEN])
{
	RSEC_ENSURE(cur && priv && peer_pub && next, RSEC_E_INVAL);
	uint8_t shared[RSEC_REKEY_SECRET_LEN], info[sizeof(INFO_NEXT) - 1 + 4];
	struct rsec_buf b;
	rsec_buf_init(&b, info, sizeof(info));
	RSEC_GUARD(rsec_buf_put_bytes(&b, INFO_NEXT, sizeof(INFO_NEXT) - 1));
	RSEC_GUARD(rsec_buf_put_u32(&b, gen));
	int rc = ecdh(priv, peer_pub, shared);
	if (rc == 0)
		rc = hkdf(cur, shared, sizeof(shared), info, sizeof(info), next, RSEC_REKEY_SECRET_LEN);
	OPENSSL_cleanse(shared, sizeof(shared));
	if (rc < 0)
		OPENSSL_cleanse(next, RSEC_REKEY_SECRET_LEN);
	return rc;
}

int rsec_rekey_data_secret(const uint8_t secret[static RSEC_REKEY_SECRET_LEN], uint8_t out[static RSEC_SEAL_SECRET_LEN])
{
	RSEC_ENSURE(secret && out, RSEC_E_INVAL);
	return hkdf(NULL, secret, RSEC_REKEY_SECRET_LEN, (const uint8_t *)INFO_DATA, sizeof(INFO_DATA) - 1, out,
		    RSEC_SEAL_SECRET_LEN);
}

int rsec_rekey_export(const uint8_t secret[static RSEC_REKEY_SECRET_LEN], const char *label, const void *context,
		      size_t context_len, void *out, size_t out_len)
{
	RSEC_ENSURE(secret && label && out && (context || !context_len), RSEC_E_INVAL);
	size_t label_len = strnlen(label, RSEC_REKEY_LABEL_MAX + 1);
	RSEC_ENSURE(label_len >= 1 && label_len <= RSEC_REKEY_LABEL_MAX && context_len <= RSEC_REKEY_CONTEXT_MAX &&
			    out_len >= 16 && out_len <= 64,
		    RSEC_E_INVAL);
	uint8_t info[sizeof(INFO_EXPORT) - 1 + 1 + RSEC_REKEY_LABEL_MAX + RSEC_REKEY_CONTEXT_MAX];
	struct rsec_buf b;
	rsec_buf_init(&b, info, sizeof(info));
	RSEC_GUARD(rsec_buf_put_bytes(&b, INFO_EXPORT, sizeof(INFO_EXPORT) - 1));
	RSEC_GUARD(rsec_buf_put_u8(&b, (uint8_t)label_len));
	RSEC_GUARD(rsec_buf_put_bytes(&b, label, label_len));
	if (context_len)
		RSEC_GUARD(rsec_buf_put_bytes(&b, context, context_len));
	return hkdf(NULL, secret, RSEC_REKEY_SECRET_LEN, info, b.wr, out, out_len);
}

static uint64_t key_id(uint32_t epoch, uint32_t gen)
{
	return (uint64_t)epoch << 32 | gen;
}

uint64_t rsec_rekey_id(const struct rsec_rekey *rk)
{
	return key_id(rk->epoch, rk->gen);
}

const uint8_t *rsec_rekey_secret_of(const struct rsec_rekey *rk, uint64_t id)
{
	if (rk->have_secret && id == key_id(rk->epoch, rk->gen))
		return rk->secret;
	if (rk->state == REKEY_ANSWERED && rk->gen < UINT32_MAX && id == key_id(rk->epoch, rk->gen + 1))
		return rk->next;
	for (size_t i = 0; i < RSEC_REKEY_KEPT; i++)
		if (rk->kept[i].used && id == key_id(rk->kept[i].epoch, rk->kept[i].gen))
			return rk->kept[i].secret;
	return NULL;
}

int rsec_rekey_grant_secret(const uint8_t chain[static RSEC_REKEY_SECRET_LEN], uint64_t grant_id,
			    uint8_t out[static RSEC_REKEY_SECRET_LEN])
{
	uint8_t id[8];
	struct rsec_buf b;
	rsec_buf_init(&b, id, sizeof(id));
	RSEC_GUARD(rsec_buf_put_u64(&b, grant_id));
	return rsec_rekey_export(chain, "rdmasec-v1 grant", id, sizeof(id), out, RSEC_REKEY_SECRET_LEN);
}

int rsec_rekey_grant_sealed_key(const uint8_t grant[static RSEC_REKEY_SECRET_LEN],
				uint8_t out[static RSEC_REKEY_SECRET_LEN])
{
	return rsec_rekey_export(grant, "rdmasec-v1 grant sealed", NULL, 0, out, RSEC_REKEY_SECRET_LEN);
}

int rsec_rekey_grant_mac_key(const uint8_t grant[static RSEC_REKEY_SECRET_LEN], bool server,
			     uint8_t out[static RSEC_REKEY_SECRET_LEN])
{
	const uint8_t side = server;
	return rsec_rekey_export(grant, "rdmasec-v1 grant mac", &side, 1, out, RSEC_REKEY_SECRET_LEN);
}
