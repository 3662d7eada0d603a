/* SPDX-License-Identifier: MIT */
/* AES-256-GCM for rdmasec-blk's one-sided transfers (blk_data.h). */
#include <limits.h>
#include <stdlib.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "blk_data.h"
#include "rdmasec.h"
#include "cursor.h"

#define NONCE_LEN 12u
#define AAD_LEN 26u

struct blk_data_key {
	EVP_CIPHER_CTX *enc, *dec;
};

static EVP_CIPHER_CTX *keyed(const uint8_t *key, bool enc)
{
	EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();
	if (x && EVP_CipherInit_ex(x, EVP_aes_256_gcm(), NULL, key, NULL, enc) == 1)
		return x;
	EVP_CIPHER_CTX_free(x);
	return NULL;
}

struct blk_data_key *blk_data_key_new(const uint8_t key[BLK_DATA_KEY_LEN])
{
	struct blk_data_key *k = calloc(1, sizeof(*k));
	if (!k)
		return NULL;
	k->enc = keyed(key, true);
	k->dec = keyed(key, false);
	if (!k->enc || !k->dec) {
		blk_data_key_free(k);
		return NULL;
	}
	return k;
}

void blk_data_key_free(struct blk_data_key *k)
{
	if (!k)
		return;
	EVP_CIPHER_CTX_free(k->enc); /* cleanses the key schedule */
	EVP_CIPHER_CTX_free(k->dec);
	free(k);
}

struct blk_data_keys {
	struct rsec_conn *conn;
	uint16_t queue;
	struct {
		uint64_t id;
		struct blk_data_key *key; /* NULL: a free place */
	} kept[BLK_DATA_KEYS];
};

struct blk_data_keys *blk_data_keys_new(struct rsec_conn *conn, uint16_t queue)
{
	struct blk_data_keys *ks = calloc(1, sizeof(*ks));
	if (ks) {
		ks->conn = conn;
		ks->queue = queue;
	}
	return ks;
}

void blk_data_keys_free(struct blk_data_keys *ks)
{
	if (!ks)
		return;
	for (unsigned i = 0; i < BLK_DATA_KEYS; i++)
		blk_data_key_free(ks->kept[i].key);
	free(ks);
}

/* Where a new key goes: a free place, else the lowest id's (ids only grow: the oldest). */
static unsigned place_for_new(const struct blk_data_keys *ks)
{
	unsigned at = 0;
	for (unsigned i = 0; i < BLK_DATA_KEYS; i++) {
		if (!ks->kept[i].key)
			return i;
		if (ks->kept[i].id < ks->kept[at].id)
			at = i;
	}
	return at;
}

int blk_data_keys_get(struct blk_data_keys *ks, uint64_t id, struct blk_data_key **out)
{
	for (unsigned i = 0; i < BLK_DATA_KEYS; i++)
		if (ks->kept[i].key && ks->kept[i].id == id) {
			*out = ks->kept[i].key;
			return 0;
		}
	uint8_t key[BLK_DATA_KEY_LEN], ctx[2] = { (uint8_t)(ks->queue >> 8), (uint8_t)ks->queue };
	int rc = rsec_conn_derive_key(ks->conn, id, BLK_DATA_LABEL, ctx, sizeof(ctx), key, sizeof(key));
	struct blk_data_key *k = rc == 0 ? blk_data_key_new(key) : NULL;
	OPENSSL_cleanse(key, sizeof(key));
	if (rc < 0)
		return rc;
	if (!k)
		return RSEC_E_CRYPTO;
	unsigned at = place_for_new(ks);
	blk_data_key_free(ks->kept[at].key);
	ks->kept[at].id = id;
	ks->kept[at].key = k;
	*out = k;
	return 0;
}


/* nonce: u8 dir | u8 0 | u16 queue | u64 seq; aad: u8 dir | u8 opcode | u16 queue | u16 cid | u64 offset | u32 length | u64 seq */
static void nonce_aad(const struct blk_data_ctx *x, uint8_t nonce[NONCE_LEN], uint8_t aad[AAD_LEN])
{
	nonce[0] = (uint8_t)x->dir;
	nonce[1] = 0;
	cur_store_be(nonce + 2, 2, x->queue);
	cur_store_be(nonce + 4, 8, x->seq);
	aad[0] = (uint8_t)x->dir;
	aad[1] = x->opcode;
	cur_store_be(aad + 2, 2, x->queue);
	cur_store_be(aad + 4, 2, x->cid);
	cur_store_be(aad + 6, 8, x->offset);
	cur_store_be(aad + 14, 4, x->length);
	cur_store_be(aad + 18, 8, x->seq);
}

/* One AEAD pass: the nonce, the associated data, the bytes. */
static bool run(EVP_CIPHER_CTX *e, const struct blk_data_ctx *x, const uint8_t *in, uint8_t *out)
{
	uint8_t nonce[NONCE_LEN], aad[AAD_LEN];
	int n = 0;
	nonce_aad(x, nonce, aad);
	if (x->length == 0 || x->length > INT_MAX || EVP_CipherInit_ex(e, NULL, NULL, NULL, nonce, -1) != 1 ||
	    EVP_CipherUpdate(e, NULL, &n, aad, AAD_LEN) != 1)
		return false;
	return EVP_CipherUpdate(e, out, &n, in, (int)x->length) == 1 && n == (int)x->length;
}

bool blk_data_seal(struct blk_data_key *k, const struct blk_data_ctx *x, const uint8_t *in, uint8_t *out,
		   uint8_t tag[BLK_DATA_TAG_LEN])
{
	int n = 0;
	if (run(k->enc, x, in, out) && EVP_CipherFinal_ex(k->enc, out + x->length, &n) == 1 && n == 0 &&
	    EVP_CIPHER_CTX_ctrl(k->enc, EVP_CTRL_GCM_GET_TAG, BLK_DATA_TAG_LEN, tag) == 1)
		return true;
	OPENSSL_cleanse(out, x->length);
	return false;
}

bool blk_data_open(struct blk_data_key *k, const struct blk_data_ctx *x, const uint8_t *in, uint8_t *out,
		   const uint8_t tag[BLK_DATA_TAG_LEN])
{
	uint8_t t[BLK_DATA_TAG_LEN];
	int n = 0;
	for (unsigned i = 0; i < BLK_DATA_TAG_LEN; i++)
		t[i] = tag[i];
	if (run(k->dec, x, in, out) && EVP_CIPHER_CTX_ctrl(k->dec, EVP_CTRL_GCM_SET_TAG, BLK_DATA_TAG_LEN, t) == 1 &&
	    EVP_CipherFinal_ex(k->dec, out + x->length, &n) == 1 && n == 0)
		return true;
	OPENSSL_cleanse(out, x->length); /* nothing unauthenticated stays */
	return false;
}
