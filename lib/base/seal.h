/* SPDX-License-Identifier: MIT */
/*
 * Per-message authenticated encryption for two-sided RDMA messages, with
 * strict in-order replay rejection. Keys come from the TLS 1.3 exporter
 * (RFC 8446 section 7.5); docs/crypto.md has the key schedule and the frame.
 *
 * Frame: 16-byte header | ciphertext (len bytes) | 16-byte tag. Header, all
 * big-endian, and the AEAD's associated data:
 *   u64 seq | u32 len | u16 credits | u8 flags | u8 phase
 * phase: the low byte of the key generation that sealed it (0 until the
 * first rekey, rekey.h); it picks the receiver's key, the tag decides.
 * Nonce: the direction's 96-bit IV XOR the 64-bit seq, right-aligned.
 */
#ifndef RSEC_SEAL_H
#define RSEC_SEAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <openssl/ssl.h>

#include "result.h"

enum rsec_aead_alg { RSEC_AEAD_AES256GCM = 1, RSEC_AEAD_CHACHA20POLY1305 = 2 };

#define RSEC_SEAL_HDR_LEN 16
#define RSEC_SEAL_TAG_LEN 16
#define RSEC_SEAL_OVERHEAD (RSEC_SEAL_HDR_LEN + RSEC_SEAL_TAG_LEN)
#define RSEC_SEAL_FLAG_FIRST 1u
#define RSEC_SEAL_FLAG_LAST 2u
#define RSEC_SEAL_FLAG_CREDIT_ONLY 4u
#define RSEC_SEAL_FLAGS_KNOWN (RSEC_SEAL_FLAG_FIRST | RSEC_SEAL_FLAG_LAST | RSEC_SEAL_FLAG_CREDIT_ONLY)

#define RSEC_SEAL_KEY_LEN 32
#define RSEC_SEAL_IV_LEN 12
#define RSEC_SEAL_DATAMAC_KEY_LEN 32
#define RSEC_SEAL_DATAMAC_LEN 32

/* Exporter labels; the context is empty for both. */
#define RSEC_SEAL_LABEL_DATA "EXPORTER-rdmasec-v1-data"
#define RSEC_SEAL_LABEL_DATAMAC "EXPORTER-rdmasec-v1-datamac"

/*
 * Secret layout (152 bytes):
 *   [0, 88)    exporter(LABEL_DATA, 88):
 *              client->server key (32) | c->s IV (12) | server->client key (32) | s->c IV (12)
 *   [88, 152)  exporter(LABEL_DATAMAC, 64):
 *              client's data-MAC key (32) | server's data-MAC key (32)
 */
#define RSEC_SEAL_DATA_SECRET_LEN (2 * (RSEC_SEAL_KEY_LEN + RSEC_SEAL_IV_LEN))
#define RSEC_SEAL_DATAMAC_SECRET_LEN (2 * RSEC_SEAL_DATAMAC_KEY_LEN)
#define RSEC_SEAL_SECRET_LEN (RSEC_SEAL_DATA_SECRET_LEN + RSEC_SEAL_DATAMAC_SECRET_LEN)

struct rsec_seal_hdr {
	uint64_t seq;
	uint32_t len;
	uint16_t credits;
	uint8_t flags;
	uint8_t phase;
};

struct rsec_seal_dir; /* opaque: cipher context, IV, next seq, counters */

/*
 * A queue pair's keys. After a rekey, tx_old stays until every frame it
 * sealed is acknowledged (a rebuild may have to recover them), rx_old until
 * the first frame under the new key opens (frames arrive in order).
 */
struct rsec_seal {
	struct rsec_seal_dir *tx, *rx;
	struct rsec_seal_dir *tx_old, *rx_old;
};

/*
 * Derive both directions from an established TLS 1.3 session through the
 * exporter; the client's tx is the server's rx. is_server must match the
 * SSL object's role. Each queue pair of a session (lane, wire.h) and each
 * rebuild of its data path (epoch, rebuild.c) gets keys of its own, so no
 * two share a nonce space: lane 0 of epoch 0 exports with an empty context,
 * lane n of epoch 0 with n as a big-endian u16, epoch e > 0 with the lane's
 * u16 then e as a big-endian u32. s must
 * be zeroed (or freed). Returns 0, RSEC_E_INVAL (not TLS 1.3, handshake
 * unfinished, role mismatch, bad alg), RSEC_E_TLS (exporter failed),
 * RSEC_E_NOMEM, RSEC_E_CRYPTO.
 */
RSEC_MUST_CHECK int rsec_seal_from_tls(struct rsec_seal *s, SSL *ssl, bool is_server, enum rsec_aead_alg alg,
				       uint16_t lane, uint32_t epoch);

/*
 * Rekey one direction of s to the keys of secret (laid out as above, of a
 * later generation) whose frames say phase (!= the current key's). Sequence
 * numbers and counters go on; the data-MAC keys stay. The current key
 * becomes the old one; an older one is wiped (the caller knows none of its
 * frames is still to come). Returns 0, RSEC_E_INVAL, RSEC_E_NOMEM, RSEC_E_CRYPTO.
 */
RSEC_MUST_CHECK int rsec_seal_next_tx(struct rsec_seal *s, const uint8_t secret[static RSEC_SEAL_SECRET_LEN],
				      enum rsec_aead_alg alg, uint8_t phase);
RSEC_MUST_CHECK int rsec_seal_next_rx(struct rsec_seal *s, const uint8_t secret[static RSEC_SEAL_SECRET_LEN],
				      enum rsec_aead_alg alg, uint8_t phase);
/* The peer acknowledged our frames before sequence number acked: an old tx key none of them needs is wiped. */
void rsec_seal_retire_tx(struct rsec_seal *s, uint64_t acked);
/* rsec_open_frame under the rx key the frame's phase names (the old one, until the new one opened a frame). */
RSEC_MUST_CHECK int rsec_seal_open(struct rsec_seal *s, const uint8_t *in, size_t in_len, struct rsec_seal_hdr *hdr,
				   uint8_t *pt, size_t cap);
/*
 * The receiving direction whose counters and next sequence number are
 * current: the old key's until the first frame under the new one opened.
 */
const struct rsec_seal_dir *rsec_seal_rx_now(const struct rsec_seal *s);
/* rsec_seal_recover under the tx key that sealed the frame. */
RSEC_MUST_CHECK int rsec_seal_recover_sent(struct rsec_seal *s, const uint8_t *frame, size_t frame_len,
					   struct rsec_seal_hdr *hdr, uint8_t *pt, size_t cap);

/* Same from the raw secret laid out as above (tests; the exporter path uses it too). */
RSEC_MUST_CHECK int rsec_seal_from_secret(struct rsec_seal *s, const uint8_t secret[static RSEC_SEAL_SECRET_LEN],
					  bool is_server, enum rsec_aead_alg alg);

/* The OpenSSL cipher of an AEAD choice (32-byte key, 12-byte nonce, 16-byte tag), or NULL. */
const EVP_CIPHER *rsec_seal_cipher(enum rsec_aead_alg alg);

/* Wipe keys, free contexts, zero s. Safe on a zeroed struct. */
void rsec_seal_free(struct rsec_seal *s);

/*
 * Seal len bytes of pt into out (cap >= len + RSEC_SEAL_OVERHEAD) under the
 * next tx sequence number. pt may be out + RSEC_SEAL_HDR_LEN (in place) but
 * must not overlap out otherwise. Returns 0, RSEC_E_INVAL (unknown flags,
 * CREDIT_ONLY with len > 0, not a tx direction), RSEC_E_RANGE (cap too small,
 * sequence space exhausted: it never wraps, or the AES-GCM key's usage limit
 * of 2^34 blocks reached: reconnect for fresh keys), RSEC_E_CRYPTO.
 */
RSEC_MUST_CHECK int rsec_seal_frame(struct rsec_seal_dir *tx, uint16_t credits, uint8_t flags, const uint8_t *pt,
				    uint32_t len, uint8_t *out, size_t cap, size_t *out_len);

/*
 * The plaintext of a frame tx sealed (at frame, within frame_len bytes), to send it
 * again under other keys after a rebuild: hdr is filled and hdr->len bytes
 * go to pt. The tag is not checked (our own frame). Returns 0, RSEC_E_INVAL,
 * RSEC_E_PROTO (malformed, or a sequence number tx never sealed),
 * RSEC_E_RANGE (cap < len), RSEC_E_CRYPTO (pt wiped).
 */
RSEC_MUST_CHECK int rsec_seal_recover(struct rsec_seal_dir *tx, const uint8_t *frame, size_t frame_len,
				      struct rsec_seal_hdr *hdr, uint8_t *pt, size_t cap);
/* The sequence number d seals or expects next: frames sealed or opened so far. */
uint64_t rsec_seal_dir_next_seq(const struct rsec_seal_dir *d);

/*
 * Open the in_len-byte frame at in: validate the header, verify the tag, then
 * require seq == the next expected one; on success advance, fill hdr and write
 * hdr->len plaintext bytes to pt (must not overlap in). On any failure pt holds
 * no plaintext (it is wiped) and hdr is zeroed. Returns 0, RSEC_E_PROTO
 * (malformed, or another key's phase), RSEC_E_RANGE (cap < len; nothing consumed), RSEC_E_MAC (bad tag),
 * RSEC_E_SEQ (valid tag, wrong seq: replay, reorder or loss), RSEC_E_INVAL,
 * RSEC_E_CRYPTO.
 */
RSEC_MUST_CHECK int rsec_open_frame(struct rsec_seal_dir *rx, const uint8_t *in, size_t in_len,
				    struct rsec_seal_hdr *hdr, uint8_t *pt, size_t cap);

struct rsec_seal_stats {
	uint64_t sealed, opened, mac_failures, seq_violations, malformed;
};
void rsec_seal_stats(const struct rsec_seal_dir *d, struct rsec_seal_stats *out);

/*
 * Data MAC for verified one-sided transfers: HMAC-SHA256 under the data-MAC
 * key of the client (is_server false) or the server (true), over
 *   u64 grant_id | u64 offset | u64 len | data     (big-endian).
 * Returns 0, RSEC_E_INVAL, RSEC_E_CRYPTO.
 */
RSEC_MUST_CHECK int rsec_seal_data_mac(const struct rsec_seal *s, bool is_server, uint64_t grant_id, uint64_t offset,
				       const uint8_t *data, size_t len, uint8_t mac[static RSEC_SEAL_DATAMAC_LEN]);
/* The same under a key of the caller's (a grant's MAC key, path/grant_keys.h). */
RSEC_MUST_CHECK int rsec_seal_data_mac_with(const uint8_t key[static RSEC_SEAL_DATAMAC_KEY_LEN], uint64_t grant_id,
					    uint64_t offset, const uint8_t *data, size_t len,
					    uint8_t mac[static RSEC_SEAL_DATAMAC_LEN]);
/* Constant-time comparison of two data MACs. */
bool rsec_seal_mac_equal(const uint8_t a[static RSEC_SEAL_DATAMAC_LEN], const uint8_t b[static RSEC_SEAL_DATAMAC_LEN]);

/* Tests and fuzzing only: set the next sequence number to seal or expect. */
void rsec_seal_dir_set_next_seq(struct rsec_seal_dir *d, uint64_t seq);
/* Tests only: set how many 16-byte blocks the tx key may still seal. */
void rsec_seal_dir_set_blocks_left(struct rsec_seal_dir *d, uint64_t blocks);

#endif /* RSEC_SEAL_H */
