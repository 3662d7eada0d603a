/* SPDX-License-Identifier: MIT */
/*
 * Sealed one-sided transfers (docs/crypto.md, "Sealed grants"): the bytes a
 * sealed grant carries are AEAD ciphertext under a key of that grant alone.
 *
 * Layout of a sealed transfer of P plaintext bytes in the granted range:
 *   [0, P)                  ciphertext, chunk i = bytes [i*C, min((i+1)*C, P))
 *   [P, P + 16 * n)         the n = ceil(P / C) tags, tag i at P + 16*i
 * with C = RSEC_SEALED_CHUNK. Ciphertext sits where the plaintext was, so
 * both sealing and opening work in place, with no copy.
 *
 * Chunk i: nonce = prefix (8 bytes, random per sealing) | u32 i;
 *          AAD   = u64 grant_id | u64 offset | u64 P | u32 i   (big-endian).
 * The key differs per grant, the index puts each chunk in its place, and P
 * (told over TLS) catches truncation: an old ciphertext, a chunk moved or
 * cut, a flipped byte all fail to open.
 */
#ifndef RSEC_SEALED_H
#define RSEC_SEALED_H

#include <stdbool.h>
#include <stdint.h>

#include <openssl/evp.h>
#include <openssl/ssl.h>

#include "result.h"
#include "seal.h"

#define RSEC_SEALED_KEY_LEN 32
#define RSEC_SEALED_PREFIX_LEN 8
/* Exporter label; the context is the grant id (u64, big-endian). */
#define RSEC_SEALED_LABEL "EXPORTER-rdmasec-v1-grant"

struct rsec_sealed_params {
	enum rsec_aead_alg alg;
	uint64_t grant_id;
	uint64_t offset;    /* where the transfer starts in the grant */
	uint64_t plain_len; /* P, >= 1 */
	uint8_t prefix[RSEC_SEALED_PREFIX_LEN];
};

/*
 * The grant's key, from this connection's TLS exporter. Grant ids carry their
 * issuer (RSEC_GRANT_ID_SERVER), so no two grants of a connection share one.
 * Returns 0, RSEC_E_INVAL (not an established TLS 1.3 session), RSEC_E_TLS.
 */
RSEC_MUST_CHECK int rsec_sealed_key(SSL *ssl, uint64_t grant_id, uint8_t key[static RSEC_SEALED_KEY_LEN]);

/* A sealed transfer's length for plain_len bytes (rsec_sealed_len); 0 if none fits. */
size_t rsec_sealed_size(size_t plain_len);
/* The P whose sealed length is exactly sealed_len; false if none is. */
bool rsec_sealed_plain_len(uint64_t sealed_len, uint64_t *plain_len);

/*
 * A grant's key, kept ready: the AEAD keyed once, so each transfer pays for
 * its nonces and bytes only. alg 0 marks an empty one.
 */
struct rsec_sealed_key {
	enum rsec_aead_alg alg;
	EVP_CIPHER_CTX *ctx;
};

/* Key k for alg with key. Returns 0, RSEC_E_INVAL, RSEC_E_NOMEM, RSEC_E_CRYPTO (k then empty). */
RSEC_MUST_CHECK int rsec_sealed_key_init(struct rsec_sealed_key *k, enum rsec_aead_alg alg,
					 const uint8_t key[static RSEC_SEALED_KEY_LEN]);
/* Forget the key (the cipher context is cleansed); k is empty after. Safe on an empty one. */
void rsec_sealed_key_free(struct rsec_sealed_key *k);
/* rsec_sealed_seal / rsec_sealed_open under a kept key (k->alg must be p->alg). */
RSEC_MUST_CHECK int rsec_sealed_seal_with(struct rsec_sealed_key *k, const struct rsec_sealed_params *p,
					  uint8_t *buf);
RSEC_MUST_CHECK int rsec_sealed_open_with(struct rsec_sealed_key *k, const struct rsec_sealed_params *p,
					  uint8_t *buf);

/*
 * Seal in place: buf holds rsec_sealed_size(p->plain_len) bytes, the
 * plaintext in the first plain_len. Returns 0, RSEC_E_INVAL, RSEC_E_CRYPTO
 * (buf then holds no plaintext: wiped).
 */
RSEC_MUST_CHECK int rsec_sealed_seal(const uint8_t key[static RSEC_SEALED_KEY_LEN], const struct rsec_sealed_params *p,
				     uint8_t *buf);
/*
 * Open in place: on success the plaintext is buf[0, plain_len) and the tags
 * are wiped. On any failure all rsec_sealed_size(plain_len) bytes are wiped,
 * so nothing unauthenticated is ever left to read. Returns 0, RSEC_E_MAC,
 * RSEC_E_INVAL, RSEC_E_CRYPTO.
 */
RSEC_MUST_CHECK int rsec_sealed_open(const uint8_t key[static RSEC_SEALED_KEY_LEN], const struct rsec_sealed_params *p,
				     uint8_t *buf);

#endif
