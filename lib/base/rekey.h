/* SPDX-License-Identifier: MIT */
/*
 * Key material of long sessions (docs/crypto.md, "Rekeying"). Each queue
 * pair of a session keeps a chain of generation secrets: generation 0 comes
 * from the TLS exporter, generation g + 1 from an X25519 exchange over the
 * control channel mixed into generation g with HKDF (RFC 5869):
 *   S_0     = exporter(RSEC_REKEY_LABEL, lane as u16 | epoch as u32, 32)
 *   S_{g+1} = HKDF(salt = S_g, ikm = X25519(ours, theirs), info = "rdmasec-v1 rekey" | u32 g + 1)
 * and the message keys of generation g >= 1 are
 *   HKDF-Expand(S_g, "rdmasec-v1 data", RSEC_SEAL_SECRET_LEN)
 * laid out as seal.h's secret. Generation 0's message keys stay the
 * exporter's (seal.c), so a peer that never rekeys sees no change.
 */
#ifndef RSEC_REKEY_H
#define RSEC_REKEY_H

#include <stdint.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>

#include "result.h"
#include "seal.h"

#define RSEC_REKEY_SECRET_LEN 32
#define RSEC_REKEY_PUB_LEN 32 /* an X25519 public key */
#define RSEC_REKEY_LABEL "EXPORTER-rdmasec-v1-rekey"

/* S_0 of lane's chain after the data path's epoch-th rebuild. Returns 0, RSEC_E_INVAL, RSEC_E_TLS. */
RSEC_MUST_CHECK int rsec_rekey_first(SSL *ssl, uint16_t lane, uint32_t epoch,
				     uint8_t secret[static RSEC_REKEY_SECRET_LEN]);

/* A fresh ephemeral X25519 key and its public half. Returns 0 or RSEC_E_CRYPTO (*priv NULL). */
RSEC_MUST_CHECK int rsec_rekey_keypair(EVP_PKEY **priv, uint8_t pub[static RSEC_REKEY_PUB_LEN]);

/*
 * S_{gen} from S_{gen-1} (cur), our ephemeral key and the peer's public key.
 * Returns 0, RSEC_E_INVAL, RSEC_E_CRYPTO (a peer key X25519 refuses, such as
 * one of small order: the shared secret would be all zeros). next is wiped
 * on failure.
 */
RSEC_MUST_CHECK int rsec_rekey_next(const uint8_t cur[static RSEC_REKEY_SECRET_LEN], EVP_PKEY *priv,
				    const uint8_t peer_pub[static RSEC_REKEY_PUB_LEN], uint32_t gen,
				    uint8_t next[static RSEC_REKEY_SECRET_LEN]);

/* The message keys of a generation >= 1 (seal.h's layout). Returns 0 or RSEC_E_CRYPTO. */
RSEC_MUST_CHECK int rsec_rekey_data_secret(const uint8_t secret[static RSEC_REKEY_SECRET_LEN],
					   uint8_t out[static RSEC_SEAL_SECRET_LEN]);

/*
 * An application's key of a generation (rsec_conn_derive_key):
 *   HKDF-Expand(S_g, "rdmasec-v1 export" | u8 label length | label | context, out_len)
 * label 1..RSEC_REKEY_LABEL_MAX bytes, context 0..RSEC_REKEY_CONTEXT_MAX,
 * out_len 16..64. Returns 0, RSEC_E_INVAL, RSEC_E_CRYPTO (out wiped).
 */
#define RSEC_REKEY_LABEL_MAX 64
#define RSEC_REKEY_CONTEXT_MAX 64
RSEC_MUST_CHECK int rsec_rekey_export(const uint8_t secret[static RSEC_REKEY_SECRET_LEN], const char *label,
				      const void *context, size_t context_len, void *out, size_t out_len);

#endif /* RSEC_REKEY_H */
