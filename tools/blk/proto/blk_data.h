/* SPDX-License-Identifier: MIT */
/*
 * rdmasec-blk's sealed data transfers (docs/blk.md, "Data transfers"): the
 * bytes a READ or pulled WRITE moves through the queue's long-lived grant
 * are AES-256-GCM ciphertext under one of the queue's data keys, the one of
 * the queue pair's key id (rsec_conn_key_id) when the sender sealed: each
 * rekey of the queue pair gives the data fresh keys too. The key id and the
 * 16-byte tag travel in the sealed capsule (WRITE) or completion (READ);
 * keys are never sent. Nonce: direction, queue, the command's
 * sequence number (unique per queue and direction: the target takes each
 * sequence number once). Associated data: the command (opcode, cid, offset,
 * length, sequence), so bytes of one command never open as another's.
 */
#ifndef RSEC_BLK_DATA_H
#define RSEC_BLK_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BLK_DATA_KEY_LEN 32u
#define BLK_DATA_TAG_LEN 16u
#define BLK_DATA_LABEL "blk-v3-data" /* rsec_conn_derive_key label; context: u16 queue */
#define BLK_DATA_KEYS 4u /* data keys a queue keeps at once: the newest key ids' */

enum blk_data_dir { BLK_DATA_TO_TARGET = 1, BLK_DATA_TO_CLIENT = 2 };

/* What a transfer is bound to. */
struct blk_data_ctx {
	enum blk_data_dir dir;
	uint16_t queue, cid;
	uint8_t opcode;
	uint64_t offset, seq;
	uint32_t length;
};

struct blk_data_key;  /* one key, kept ready (a keyed cipher context) */
struct blk_data_keys; /* a queue's keys by key id */
struct rsec_conn;

/* The keys of queue `queue` on conn, made when first asked for. NULL if out of memory. */
struct blk_data_keys *blk_data_keys_new(struct rsec_conn *conn, uint16_t queue);
void blk_data_keys_free(struct blk_data_keys *ks);
/*
 * The key of key id `id` (rsec_conn_derive_key, BLK_DATA_LABEL), the same
 * on both sides; valid until the next call. A new id replaces the lowest
 * one kept. 0 and *out set, or an RSEC_E_* code: RSEC_E_RANGE names an id
 * the library no longer holds (or never did: the peer's mistake).
 */
int blk_data_keys_get(struct blk_data_keys *ks, uint64_t id, struct blk_data_key **out);

/* NULL on failure. key is copied into the cipher context; the caller wipes its copy. */
struct blk_data_key *blk_data_key_new(const uint8_t key[BLK_DATA_KEY_LEN]);
void blk_data_key_free(struct blk_data_key *k);
/* Encrypt x->length bytes from in to out (may be equal), the tag into tag. false: out wiped. */
bool blk_data_seal(struct blk_data_key *k, const struct blk_data_ctx *x, const uint8_t *in, uint8_t *out,
		   uint8_t tag[BLK_DATA_TAG_LEN]);
/* Decrypt and authenticate x->length bytes from in to out (may be equal). false: not authentic, out wiped. */
bool blk_data_open(struct blk_data_key *k, const struct blk_data_ctx *x, const uint8_t *in, uint8_t *out,
		   const uint8_t tag[BLK_DATA_TAG_LEN]);

#endif
