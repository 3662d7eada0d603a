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

#include <stdbool.h>
#include <stdint.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>

#include "result.h"
#include "seal.h"

#define RSEC_REKEY_SECRET_LEN 32
#define RSEC_REKEY_PUB_LEN 32 /* an X25519 public key */
#define RSEC_REKEY_LABEL "EXPORTER-rdmasec-v1-rekey"

/*
 * A queue pair's key renewal (lib/session/rekey_exchange.c; docs/protocol.md, "Rekeying"): the
 * offerer sends REKEY, the other side answers REKEY_REPLY and takes the
 * offerer's new keys for receiving; the offerer then seals under the new
 * keys and says REKEY_DONE, upon which the other side does too.
 */
enum rsec_rekey_state {
	REKEY_IDLE = 0,
	REKEY_OFFERED,  /* our REKEY is out: waiting for REKEY_REPLY */
	REKEY_ANSWERED, /* our REKEY_REPLY is out, receiving under the new keys: waiting for REKEY_DONE */
};

/* Secrets a later key id superseded, kept for work begun under them (rsec_conn_derive_key). */
#define RSEC_REKEY_KEPT 3
struct rsec_rekey_kept {
	bool used;
	uint32_t epoch, gen;
	uint8_t secret[RSEC_REKEY_SECRET_LEN];
};

struct rsec_rekey {
	enum rsec_rekey_state state;
	uint32_t epoch;           /* the data-path epoch (rb.epoch) the chain below belongs to */
	uint32_t gen;             /* generation of the secret below and of the keys we seal under */
	bool have_secret;         /* secret holds S_gen (made when the epoch's message keys are) */
	uint8_t secret[RSEC_REKEY_SECRET_LEN];
	uint8_t next[RSEC_REKEY_SECRET_LEN]; /* ANSWERED: S_{gen+1} */
	EVP_PKEY *priv;           /* OFFERED: our ephemeral key */
	uint64_t since_ms;        /* when the keys in use were made */
	uint64_t bytes_at;        /* bytes sent and received by then */
	uint64_t count;           /* rekeys done over the connection's life */
	const char *why;          /* OFFERED: what made us offer, for the audit record */
	struct rsec_rekey_kept kept[RSEC_REKEY_KEPT]; /* newest first */
};

/*
 * A grant's secret and its keys (RSEC_WIRE_FEATURE_GRANT_KEYS; docs/crypto.md,
 * "Grant keys"), from S of the key id the grant was made under:
 *   G          = rsec_rekey_export(S, "rdmasec-v1 grant", u64 grant id, 32)
 *   sealed key = rsec_rekey_export(G, "rdmasec-v1 grant sealed", -, 32)
 *   MAC key    = rsec_rekey_export(G, "rdmasec-v1 grant mac", u8 1 (the server MACs) or 0, 32)
 * Return 0, RSEC_E_INVAL, RSEC_E_CRYPTO (out wiped).
 */
RSEC_MUST_CHECK int rsec_rekey_grant_secret(const uint8_t chain[static RSEC_REKEY_SECRET_LEN], uint64_t grant_id,
					    uint8_t out[static RSEC_REKEY_SECRET_LEN]);
RSEC_MUST_CHECK int rsec_rekey_grant_sealed_key(const uint8_t grant[static RSEC_REKEY_SECRET_LEN],
						uint8_t out[static RSEC_REKEY_SECRET_LEN]);
RSEC_MUST_CHECK int rsec_rekey_grant_mac_key(const uint8_t grant[static RSEC_REKEY_SECRET_LEN], bool server,
					     uint8_t out[static RSEC_REKEY_SECRET_LEN]);

/* The key id in use (rsec_conn_key_id): epoch << 32 | generation. */
uint64_t rsec_rekey_id(const struct rsec_rekey *rk);
/* The secret of key id id if rk still holds it (in use, being agreed, kept), else NULL. */
const uint8_t *rsec_rekey_secret_of(const struct rsec_rekey *rk, uint64_t id);

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
