/* SPDX-License-Identifier: MIT */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>

#include "seal.h"

/* EVP takes int lengths: feed large messages in pieces (a multiple of 16). */
#define SEAL_CHUNK (1u << 30)

/*
 * AES-GCM usage limit per key, in 16-byte blocks. RFC 8446 section 5.5 allows
 * 2^24.5 full-size records (2^34.5 blocks) for a 2^-57 margin; we stop at
 * 2^34 blocks (256 GiB). ChaCha20-Poly1305's limit is beyond reach.
 */
#define SEAL_AES_GCM_MAX_BLOCKS (UINT64_C(1) << 34)

struct rsec_seal_dir {
	EVP_CIPHER_CTX *ctx;       /* keyed once; the nonce is set per frame */
	EVP_MAC *hmac;
	bool encrypt;
	bool sender_is_server;     /* whose messages travel this way */
	uint8_t phase;             /* the key generation's low byte, in every frame's header */
	uint64_t first_seq;        /* the first sequence number under this key */
	uint8_t iv[RSEC_SEAL_IV_LEN];
	uint8_t mac_key[RSEC_SEAL_DATAMAC_KEY_LEN]; /* the sender's data-MAC key */
	uint64_t next_seq;
	uint64_t blocks_left;      /* of the key's usage limit */
	struct rsec_seal_stats stats;
};

static void put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put_be32(uint8_t *p, uint32_t v)
{
	for (int i = 3; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static void put_be64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static uint64_t get_be(const uint8_t *p, size_t n)
{
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++)
		v = (v << 8) | p[i];
	return v;
}

static void encode_hdr(uint8_t out[static RSEC_SEAL_HDR_LEN], const struct rsec_seal_hdr *h)
{
	put_be64(out, h->seq);
	put_be32(out + 8, h->len);
	put_be16(out + 12, h->credits);
	out[14] = h->flags;
	out[15] = h->phase;
}

static bool flags_valid(uint8_t flags, uint32_t len)
{
	if (flags & ~RSEC_SEAL_FLAGS_KNOWN)
		return false;
	return !(flags & RSEC_SEAL_FLAG_CREDIT_ONLY) || len == 0;
}

/* RFC 8446 section 5.3: the padded sequence number XORed with the static IV. */
static void make_nonce(uint8_t nonce[static RSEC_SEAL_IV_LEN], const struct rsec_seal_dir *d, uint64_t seq)
{
	uint8_t be[8];
	put_be64(be, seq);
	memcpy(nonce, d->iv, RSEC_SEAL_IV_LEN);
	for (int i = 0; i < 8; i++)
		nonce[RSEC_SEAL_IV_LEN - 8 + i] ^= be[i];
}

const EVP_CIPHER *rsec_seal_cipher(enum rsec_aead_alg alg)
{
	switch (alg) {
	case RSEC_AEAD_AES256GCM:
		return EVP_aes_256_gcm();
	case RSEC_AEAD_CHACHA20POLY1305:
		return EVP_chacha20_poly1305();
	default:
		return NULL;
	}
}

static void dir_free(struct rsec_seal_dir *d)
{
	if (!d)
		return;
	EVP_CIPHER_CTX_free(d->ctx); /* cleanses the key schedule */
	EVP_MAC_free(d->hmac);
	OPENSSL_cleanse(d, sizeof(*d));
	free(d);
}

RSEC_MUST_CHECK static int dir_new(struct rsec_seal_dir **out, const EVP_CIPHER *cipher, bool encrypt,
				   bool sender_is_server, const uint8_t *key, const uint8_t *iv, const uint8_t *mac_key)
{
	struct rsec_seal_dir *d = calloc(1, sizeof(*d));
	RSEC_ENSURE(d != NULL, RSEC_E_NOMEM);
	d->encrypt = encrypt;
	d->blocks_left = cipher == EVP_aes_256_gcm() ? SEAL_AES_GCM_MAX_BLOCKS : UINT64_MAX;
	d->sender_is_server = sender_is_server;
	memcpy(d->iv, iv, RSEC_SEAL_IV_LEN);
	memcpy(d->mac_key, mac_key, RSEC_SEAL_DATAMAC_KEY_LEN);
	d->ctx = EVP_CIPHER_CTX_new();
	d->hmac = EVP_MAC_fetch(NULL, "HMAC", NULL);
	if (!d->ctx || !d->hmac || EVP_CipherInit_ex(d->ctx, cipher, NULL, key, NULL, encrypt ? 1 : 0) != 1 ||
	    EVP_CIPHER_CTX_ctrl(d->ctx, EVP_CTRL_AEAD_SET_IVLEN, RSEC_SEAL_IV_LEN, NULL) != 1) {
		dir_free(d);
		return RSEC_E_CRYPTO;
	}
	*out = d;
	return 0;
}

int rsec_seal_from_secret(struct rsec_seal *s, const uint8_t secret[static RSEC_SEAL_SECRET_LEN], bool is_server,
			  enum rsec_aead_alg alg)
{
	RSEC_ENSURE_REF(s);
	RSEC_ENSURE_REF(secret);
	RSEC_ENSURE(s->tx == NULL && s->rx == NULL, RSEC_E_INVAL);
	const EVP_CIPHER *cipher = rsec_seal_cipher(alg);
	RSEC_ENSURE(cipher != NULL, RSEC_E_INVAL);

	const uint8_t *c2s_key = secret, *c2s_iv = secret + RSEC_SEAL_KEY_LEN;
	const uint8_t *s2c_key = c2s_iv + RSEC_SEAL_IV_LEN, *s2c_iv = s2c_key + RSEC_SEAL_KEY_LEN;
	const uint8_t *client_mac = secret + RSEC_SEAL_DATA_SECRET_LEN;
	const uint8_t *server_mac = client_mac + RSEC_SEAL_DATAMAC_KEY_LEN;
	/* tx carries our own messages, rx the peer's. */
	int rc = dir_new(&s->tx, cipher, true, is_server, is_server ? s2c_key : c2s_key, is_server ? s2c_iv : c2s_iv,
			 is_server ? server_mac : client_mac);
	if (rc == 0)
		rc = dir_new(&s->rx, cipher, false, !is_server, is_server ? c2s_key : s2c_key,
			     is_server ? c2s_iv : s2c_iv, is_server ? client_mac : server_mac);
	if (rc < 0)
		rsec_seal_free(s);
	return rc;
}

int rsec_seal_from_tls(struct rsec_seal *s, SSL *ssl, bool is_server, enum rsec_aead_alg alg, uint16_t lane,
		       uint32_t epoch)
{
	RSEC_ENSURE_REF(s);
	RSEC_ENSURE_REF(ssl);
	RSEC_ENSURE(rsec_seal_cipher(alg) != NULL, RSEC_E_INVAL);
	/* The exporter is only as good as the session: insist on a finished TLS 1.3 handshake. */
	RSEC_ENSURE(SSL_version(ssl) == TLS1_3_VERSION, RSEC_E_INVAL);
	RSEC_ENSURE(SSL_is_init_finished(ssl), RSEC_E_INVAL);
	RSEC_ENSURE((SSL_is_server(ssl) != 0) == is_server, RSEC_E_INVAL);

	uint8_t secret[RSEC_SEAL_SECRET_LEN];
	static const char data_label[] = RSEC_SEAL_LABEL_DATA, mac_label[] = RSEC_SEAL_LABEL_DATAMAC;
	/*
	 *= https://www.rfc-editor.org/rfc/rfc8446#section-7.5
	 *# For TLS 1.3, the context_value may be empty ... If no context is provided,
	 *# the context_value is zero length.
	 * Lane 0 of epoch 0 keeps the empty context of the connection's first
	 * queue pair; a lane alone is its u16; an epoch adds its u32. Each
	 * context has its own length or value, so no two share keys.
	 */
	unsigned char ctx[6] = { (unsigned char)(lane >> 8), (unsigned char)lane };
	size_t ctx_len = epoch ? sizeof(ctx) : lane ? 2 : 0;
	for (int i = 0; i < 4; i++)
		ctx[2 + i] = (unsigned char)(epoch >> (24 - 8 * i));
	int rc = RSEC_E_TLS;
	if (SSL_export_keying_material(ssl, secret, RSEC_SEAL_DATA_SECRET_LEN, data_label, sizeof(data_label) - 1,
				       ctx, ctx_len, 1) == 1 &&
	    SSL_export_keying_material(ssl, secret + RSEC_SEAL_DATA_SECRET_LEN, RSEC_SEAL_DATAMAC_SECRET_LEN,
				       mac_label, sizeof(mac_label) - 1, ctx, ctx_len, 1) == 1)
		rc = rsec_seal_from_secret(s, secret, is_server, alg);
	OPENSSL_cleanse(secret, sizeof(secret));
	return rc;
}

void rsec_seal_free(struct rsec_seal *s)
{
	if (!s)
		return;
	dir_free(s->tx);
	dir_free(s->rx);
	dir_free(s->tx_old);
	dir_free(s->rx_old);
	s->tx = s->rx = s->tx_old = s->rx_old = NULL;
}

/*
 * A direction's next key: the keys of secret for this role, the data-MAC key
 * and counters carried over from old (verified transfers in flight keep
 * theirs), numbering going on where old's left off.
 */
RSEC_MUST_CHECK static int dir_next(struct rsec_seal_dir **out, const struct rsec_seal_dir *old,
				    const uint8_t secret[static RSEC_SEAL_SECRET_LEN], enum rsec_aead_alg alg,
				    uint8_t phase)
{
	const EVP_CIPHER *cipher = rsec_seal_cipher(alg);
	RSEC_ENSURE(cipher != NULL && old != NULL, RSEC_E_INVAL);
	RSEC_ENSURE(phase != old->phase, RSEC_E_INVAL);
	bool c2s = !old->sender_is_server;
	const uint8_t *key = c2s ? secret : secret + RSEC_SEAL_KEY_LEN + RSEC_SEAL_IV_LEN;
	RSEC_GUARD(dir_new(out, cipher, old->encrypt, old->sender_is_server, key, key + RSEC_SEAL_KEY_LEN,
			   old->mac_key));
	(*out)->phase = phase;
	(*out)->first_seq = (*out)->next_seq = old->next_seq;
	(*out)->stats = old->stats;
	return 0;
}

int rsec_seal_next_tx(struct rsec_seal *s, const uint8_t secret[static RSEC_SEAL_SECRET_LEN], enum rsec_aead_alg alg,
		      uint8_t phase)
{
	RSEC_ENSURE(s && s->tx && secret, RSEC_E_INVAL);
	struct rsec_seal_dir *d;
	RSEC_GUARD(dir_next(&d, s->tx, secret, alg, phase));
	dir_free(s->tx_old);
	s->tx_old = s->tx;
	s->tx = d;
	return 0;
}

int rsec_seal_next_rx(struct rsec_seal *s, const uint8_t secret[static RSEC_SEAL_SECRET_LEN], enum rsec_aead_alg alg,
		      uint8_t phase)
{
	RSEC_ENSURE(s && s->rx && secret, RSEC_E_INVAL);
	struct rsec_seal_dir *d;
	RSEC_GUARD(dir_next(&d, s->rx, secret, alg, phase));
	/* The current key opened nothing yet: the count is still the old one's, and goes on in both kept. */
	const struct rsec_seal_dir *now = rsec_seal_rx_now(s);
	d->first_seq = d->next_seq = s->rx->next_seq = now->next_seq;
	d->stats = s->rx->stats = now->stats;
	dir_free(s->rx_old);
	s->rx_old = s->rx;
	s->rx = d;
	return 0;
}

void rsec_seal_retire_tx(struct rsec_seal *s, uint64_t acked)
{
	if (s && s->tx_old && acked >= s->tx->first_seq) {
		dir_free(s->tx_old);
		s->tx_old = NULL;
	}
}

int rsec_seal_open(struct rsec_seal *s, const uint8_t *in, size_t in_len, struct rsec_seal_hdr *hdr, uint8_t *pt,
		   size_t cap)
{
	RSEC_ENSURE(s && s->rx, RSEC_E_INVAL);
	/* The phase byte only picks the key; the tag under that key decides. */
	bool old = s->rx_old && in && in_len >= RSEC_SEAL_HDR_LEN && in[15] == s->rx_old->phase;
	if (old)
		return rsec_open_frame(s->rx_old, in, in_len, hdr, pt, cap);
	if (s->rx_old) { /* the new key's numbering goes on where the old one's stands */
		s->rx->next_seq = s->rx_old->next_seq;
		s->rx->stats = s->rx_old->stats;
	}
	int rc = rsec_open_frame(s->rx, in, in_len, hdr, pt, cap);
	if (rc == 0 && s->rx_old) {
		/* In order: nothing under the old key can follow. */
		dir_free(s->rx_old);
		s->rx_old = NULL;
	} else if (s->rx_old) {
		s->rx_old->stats = s->rx->stats; /* the failure counts where the count still is */
	}
	return rc;
}

const struct rsec_seal_dir *rsec_seal_rx_now(const struct rsec_seal *s)
{
	return s->rx_old ? s->rx_old : s->rx;
}

int rsec_seal_recover_sent(struct rsec_seal *s, const uint8_t *frame, size_t frame_len, struct rsec_seal_hdr *hdr,
			   uint8_t *pt, size_t cap)
{
	RSEC_ENSURE(s && s->tx && frame, RSEC_E_INVAL);
	RSEC_ENSURE(frame_len >= RSEC_SEAL_OVERHEAD, RSEC_E_PROTO);
	bool old = s->tx_old && get_be(frame, 8) < s->tx->first_seq;
	return rsec_seal_recover(old ? s->tx_old : s->tx, frame, frame_len, hdr, pt, cap);
}

/* Feed len bytes through the cipher in int-sized pieces; in may equal out. */
RSEC_MUST_CHECK static int cipher_update(EVP_CIPHER_CTX *ctx, uint8_t *out, const uint8_t *in, size_t len)
{
	while (len > 0) {
		int n = (int)(len < SEAL_CHUNK ? len : SEAL_CHUNK), outl = 0;
		RSEC_ENSURE(EVP_CipherUpdate(ctx, out, &outl, in, n) == 1 && outl == n, RSEC_E_CRYPTO);
		out += n;
		in += n;
		len -= (size_t)n;
	}
	return 0;
}

RSEC_MUST_CHECK static int seal_body(struct rsec_seal_dir *tx, const uint8_t hdr[static RSEC_SEAL_HDR_LEN],
				     uint64_t seq, const uint8_t *pt, uint32_t len, uint8_t *ct, uint8_t *tag)
{
	uint8_t nonce[RSEC_SEAL_IV_LEN], scratch[32];
	int outl = 0;
	make_nonce(nonce, tx, seq);
	RSEC_ENSURE(EVP_EncryptInit_ex(tx->ctx, NULL, NULL, NULL, nonce) == 1, RSEC_E_CRYPTO);
	RSEC_ENSURE(EVP_EncryptUpdate(tx->ctx, NULL, &outl, hdr, RSEC_SEAL_HDR_LEN) == 1, RSEC_E_CRYPTO);
	RSEC_GUARD(cipher_update(tx->ctx, ct, pt, len));
	RSEC_ENSURE(EVP_EncryptFinal_ex(tx->ctx, scratch, &outl) == 1 && outl == 0, RSEC_E_CRYPTO);
	RSEC_ENSURE(EVP_CIPHER_CTX_ctrl(tx->ctx, EVP_CTRL_AEAD_GET_TAG, RSEC_SEAL_TAG_LEN, tag) == 1,
		    RSEC_E_CRYPTO);
	return 0;
}

int rsec_seal_frame(struct rsec_seal_dir *tx, uint16_t credits, uint8_t flags, const uint8_t *pt, uint32_t len,
		    uint8_t *out, size_t cap, size_t *out_len)
{
	RSEC_ENSURE_REF(tx);
	RSEC_ENSURE_REF(out);
	RSEC_ENSURE_REF(out_len);
	RSEC_ENSURE(tx->encrypt, RSEC_E_INVAL);
	RSEC_ENSURE(pt != NULL || len == 0, RSEC_E_INVAL);
	RSEC_ENSURE(flags_valid(flags, len), RSEC_E_INVAL);
	RSEC_ENSURE(cap >= (size_t)len + RSEC_SEAL_OVERHEAD, RSEC_E_RANGE);
	/* Never wrap: a repeated nonce would void both confidentiality and integrity. */
	RSEC_ENSURE(tx->next_seq != UINT64_MAX, RSEC_E_RANGE);
	/* Blocks this frame costs: the payload plus one for the tag computation. */
	uint64_t blocks = ((uint64_t)len + 15) / 16 + 1;
	RSEC_ENSURE(blocks <= tx->blocks_left, RSEC_E_RANGE);

	struct rsec_seal_hdr h = { .seq = tx->next_seq, .len = len, .credits = credits, .flags = flags,
				   .phase = tx->phase };
	uint8_t hdr[RSEC_SEAL_HDR_LEN];
	encode_hdr(hdr, &h);
	int rc = seal_body(tx, hdr, h.seq, pt, len, out + RSEC_SEAL_HDR_LEN, out + RSEC_SEAL_HDR_LEN + len);
	if (rc < 0) {
		OPENSSL_cleanse(out, (size_t)len + RSEC_SEAL_OVERHEAD);
		return rc;
	}
	memcpy(out, hdr, RSEC_SEAL_HDR_LEN);
	tx->next_seq++;
	tx->blocks_left -= blocks;
	tx->stats.sealed++;
	*out_len = (size_t)len + RSEC_SEAL_OVERHEAD;
	return 0;
}

RSEC_MUST_CHECK static int parse_hdr(const uint8_t *in, size_t in_len, struct rsec_seal_hdr *h);

int rsec_seal_recover(struct rsec_seal_dir *tx, const uint8_t *frame, size_t frame_len, struct rsec_seal_hdr *hdr,
		      uint8_t *pt, size_t cap)
{
	RSEC_ENSURE(tx != NULL && frame != NULL && hdr != NULL, RSEC_E_INVAL);
	RSEC_ENSURE(tx->encrypt, RSEC_E_INVAL);
	memset(hdr, 0, sizeof(*hdr));
	/* frame_len bounds the frame, which says its own length (checked by parse_hdr). */
	RSEC_ENSURE(frame_len >= RSEC_SEAL_OVERHEAD, RSEC_E_PROTO);
	uint64_t body = get_be(frame + 8, 4);
	RSEC_ENSURE(body <= frame_len - RSEC_SEAL_OVERHEAD, RSEC_E_PROTO);
	struct rsec_seal_hdr h;
	RSEC_GUARD(parse_hdr(frame, RSEC_SEAL_OVERHEAD + (size_t)body, &h));
	RSEC_ENSURE(h.seq < tx->next_seq && h.seq >= tx->first_seq && h.phase == tx->phase,
		    RSEC_E_PROTO); /* one we sealed under this key */
	RSEC_ENSURE(h.len <= cap && (pt != NULL || h.len == 0), RSEC_E_RANGE);
	/*
	 * Both AEADs encrypt by XOR with a keystream of the nonce (AES-GCM's
	 * GCTR, NIST SP 800-38D section 6.5; ChaCha20, RFC 8439 section 2.4):
	 * running the ciphertext through the same encryption under the same
	 * nonce gives the plaintext back. The tag is not checked: the frame
	 * is our own, in a ring the device only reads.
	 */
	uint8_t nonce[RSEC_SEAL_IV_LEN];
	make_nonce(nonce, tx, h.seq);
	int rc = EVP_EncryptInit_ex(tx->ctx, NULL, NULL, NULL, nonce) == 1 ? 0 : RSEC_E_CRYPTO;
	if (rc == 0)
		rc = cipher_update(tx->ctx, pt, frame + RSEC_SEAL_HDR_LEN, h.len);
	if (rc < 0) {
		if (pt)
			OPENSSL_cleanse(pt, h.len);
		return rc;
	}
	*hdr = h;
	return 0;
}

/* Structural checks only; nothing here is authenticated yet. */
RSEC_MUST_CHECK static int parse_hdr(const uint8_t *in, size_t in_len, struct rsec_seal_hdr *h)
{
	RSEC_ENSURE(in_len >= RSEC_SEAL_OVERHEAD, RSEC_E_PROTO);
	h->seq = get_be(in, 8);
	h->len = (uint32_t)get_be(in + 8, 4);
	h->credits = (uint16_t)get_be(in + 12, 2);
	h->flags = in[14];
	h->phase = in[15];
	RSEC_ENSURE(in_len - RSEC_SEAL_OVERHEAD == h->len, RSEC_E_PROTO);
	RSEC_ENSURE(flags_valid(h->flags, h->len), RSEC_E_PROTO);
	return 0;
}

/* Returns 0 when the tag verifies, RSEC_E_MAC when not; pt is garbage then. */
RSEC_MUST_CHECK static int open_body(struct rsec_seal_dir *rx, const uint8_t *in, const struct rsec_seal_hdr *h,
				     uint8_t *pt)
{
	uint8_t nonce[RSEC_SEAL_IV_LEN], tag[RSEC_SEAL_TAG_LEN], scratch[32];
	int outl = 0;
	make_nonce(nonce, rx, h->seq);
	memcpy(tag, in + RSEC_SEAL_HDR_LEN + h->len, RSEC_SEAL_TAG_LEN);
	RSEC_ENSURE(EVP_DecryptInit_ex(rx->ctx, NULL, NULL, NULL, nonce) == 1, RSEC_E_CRYPTO);
	RSEC_ENSURE(EVP_CIPHER_CTX_ctrl(rx->ctx, EVP_CTRL_AEAD_SET_TAG, RSEC_SEAL_TAG_LEN, tag) == 1, RSEC_E_CRYPTO);
	RSEC_ENSURE(EVP_DecryptUpdate(rx->ctx, NULL, &outl, in, RSEC_SEAL_HDR_LEN) == 1, RSEC_E_CRYPTO);
	RSEC_GUARD(cipher_update(rx->ctx, pt, in + RSEC_SEAL_HDR_LEN, h->len));
	RSEC_ENSURE(EVP_DecryptFinal_ex(rx->ctx, scratch, &outl) == 1, RSEC_E_MAC);
	return 0;
}

int rsec_open_frame(struct rsec_seal_dir *rx, const uint8_t *in, size_t in_len, struct rsec_seal_hdr *hdr,
		    uint8_t *pt, size_t cap)
{
	RSEC_ENSURE_REF(rx);
	RSEC_ENSURE_REF(hdr);
	memset(hdr, 0, sizeof(*hdr));
	RSEC_ENSURE(!rx->encrypt, RSEC_E_INVAL);
	RSEC_ENSURE(in != NULL || in_len == 0, RSEC_E_INVAL);

	struct rsec_seal_hdr h;
	if (parse_hdr(in, in_len, &h) < 0 || h.phase != rx->phase) {
		rx->stats.malformed++;
		return RSEC_E_PROTO;
	}
	RSEC_ENSURE(pt != NULL || h.len == 0, RSEC_E_INVAL);
	RSEC_ENSURE(cap >= h.len, RSEC_E_RANGE);

	int rc = open_body(rx, in, &h, pt);
	/*
	 * The tag covers seq (AAD and nonce), so a frame that verifies was really
	 * sealed by the peer under that number; only then is a mismatch a replay
	 * or reorder rather than a forgery.
	 */
	if (rc == 0 && h.seq != rx->next_seq)
		rc = RSEC_E_SEQ;
	if (rc < 0) {
		if (h.len)
			OPENSSL_cleanse(pt, h.len);
		if (rc == RSEC_E_MAC)
			rx->stats.mac_failures++;
		else if (rc == RSEC_E_SEQ)
			rx->stats.seq_violations++;
		return rc;
	}
	rx->next_seq++;
	rx->stats.opened++;
	*hdr = h;
	return 0;
}

void rsec_seal_stats(const struct rsec_seal_dir *d, struct rsec_seal_stats *out)
{
	if (!out)
		return;
	memset(out, 0, sizeof(*out));
	if (d)
		*out = d->stats;
}

/* HMAC-SHA256 of u64 grant_id | u64 offset | u64 len | data under key (hmac: fetched once by the caller, or NULL). */
static RSEC_MUST_CHECK int data_mac(EVP_MAC *hmac, const uint8_t key[static RSEC_SEAL_DATAMAC_KEY_LEN],
				    uint64_t grant_id, uint64_t offset, const uint8_t *data, size_t len,
				    uint8_t mac[static RSEC_SEAL_DATAMAC_LEN])
{
	uint8_t prefix[24];
	put_be64(prefix, grant_id);
	put_be64(prefix + 8, offset);
	put_be64(prefix + 16, (uint64_t)len);
	char digest[] = "SHA256";
	OSSL_PARAM params[] = {
		OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
		OSSL_PARAM_construct_end(),
	};
	size_t outl = 0;
	int rc = RSEC_E_CRYPTO;
	EVP_MAC *fetched = hmac ? NULL : EVP_MAC_fetch(NULL, "HMAC", NULL);
	EVP_MAC_CTX *ctx = hmac || fetched ? EVP_MAC_CTX_new(hmac ? hmac : fetched) : NULL;
	if (ctx && EVP_MAC_init(ctx, key, RSEC_SEAL_DATAMAC_KEY_LEN, params) == 1 &&
	    EVP_MAC_update(ctx, prefix, sizeof(prefix)) == 1 && (len == 0 || EVP_MAC_update(ctx, data, len) == 1) &&
	    EVP_MAC_final(ctx, mac, &outl, RSEC_SEAL_DATAMAC_LEN) == 1 && outl == RSEC_SEAL_DATAMAC_LEN)
		rc = 0;
	EVP_MAC_CTX_free(ctx);
	EVP_MAC_free(fetched);
	if (rc < 0)
		OPENSSL_cleanse(mac, RSEC_SEAL_DATAMAC_LEN);
	return rc;
}

int rsec_seal_data_mac(const struct rsec_seal *s, bool is_server, uint64_t grant_id, uint64_t offset,
		       const uint8_t *data, size_t len, uint8_t mac[static RSEC_SEAL_DATAMAC_LEN])
{
	RSEC_ENSURE_REF(s);
	RSEC_ENSURE_REF(s->tx);
	RSEC_ENSURE_REF(s->rx);
	RSEC_ENSURE_REF(mac);
	RSEC_ENSURE(data != NULL || len == 0, RSEC_E_INVAL);
	const struct rsec_seal_dir *d = s->tx->sender_is_server == is_server ? s->tx : s->rx;
	return data_mac(d->hmac, d->mac_key, grant_id, offset, data, len, mac);
}

int rsec_seal_data_mac_with(const uint8_t key[static RSEC_SEAL_DATAMAC_KEY_LEN], uint64_t grant_id, uint64_t offset,
			    const uint8_t *data, size_t len, uint8_t mac[static RSEC_SEAL_DATAMAC_LEN])
{
	RSEC_ENSURE(key && mac && (data != NULL || len == 0), RSEC_E_INVAL);
	return data_mac(NULL, key, grant_id, offset, data, len, mac);
}

bool rsec_seal_mac_equal(const uint8_t a[static RSEC_SEAL_DATAMAC_LEN], const uint8_t b[static RSEC_SEAL_DATAMAC_LEN])
{
	return CRYPTO_memcmp(a, b, RSEC_SEAL_DATAMAC_LEN) == 0;
}

uint64_t rsec_seal_dir_next_seq(const struct rsec_seal_dir *d)
{
	return d ? d->next_seq : 0;
}

void rsec_seal_dir_set_next_seq(struct rsec_seal_dir *d, uint64_t seq)
{
	if (d)
		d->next_seq = seq;
}

void rsec_seal_dir_set_blocks_left(struct rsec_seal_dir *d, uint64_t blocks)
{
	if (d)
		d->blocks_left = blocks;
}
