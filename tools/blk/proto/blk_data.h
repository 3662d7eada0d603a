/* SPDX-License-Identifier: MIT */
/*
 * rdmasec-blk's sealed data transfers (docs/blk.md, "Data transfers"): the
 * bytes a READ or pulled WRITE moves through the queue's long-lived grant
 * are AES-256-GCM ciphertext under the queue's data key (the session's TLS
 * exporter, never sent); the 16-byte tag travels in the sealed capsule
 * (WRITE) or completion (READ). Nonce: direction, queue, the command's
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
#define BLK_DATA_LABEL "EXPORTER-blk-v2-data" /* rsec_conn_export_key label; context: u16 queue */

enum blk_data_dir { BLK_DATA_TO_TARGET = 1, BLK_DATA_TO_CLIENT = 2 };

/* What a transfer is bound to. */
struct blk_data_ctx {
	enum blk_data_dir dir;
	uint16_t queue, cid;
	uint8_t opcode;
	uint64_t offset, seq;
	uint32_t length;
};

struct blk_data_key; /* the queue's key, kept ready (a keyed cipher context) */
struct rsec_conn;

/* Queue `queue`'s key from the session's TLS exporter (BLK_DATA_LABEL), the same on both sides.
 * 0 and *out set, or an RSEC_E_* code. */
int blk_data_queue_key(struct rsec_conn *conn, uint16_t queue, struct blk_data_key **out);

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
