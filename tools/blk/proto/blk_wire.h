/* SPDX-License-Identifier: MIT */
/*
 * rdmasec-blk's protocol (docs/blk.md): the messages between rdmasec-blkd
 * and its clients, each carried as one of librdmasec's sealed messages. Fixed
 * big-endian fields, never raw structs. Both directions check every field
 * against the limits below, and the encoder refuses what the decoder would
 * reject: decode(encode(m)) == m for every message the encoder accepts.
 *
 * Checks that need the session's state (a command id in use, an offset past
 * the export, a length over the negotiated max_transfer) are the caller's:
 * blk_cmd_check() does them against a struct blk_limits.
 */
#ifndef RSEC_BLK_WIRE_H
#define RSEC_BLK_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdmasec.h" /* RSEC_MAX_GRANTS */

/* 2: long-lived pool grants, data MACs in capsules and completions; 3: data key ids; 4: pool windows that
 * rotate, one per direction. A target speaks 3 and 4 (the session speaks the client's). */
#define BLK_VERSION 4
#define BLK_VERSION_MIN 3
#define BLK_DEFAULT_PORT 7472
#define BLK_POOL_TAG 1u /* version 3: the tag of each queue's one pool grant (rsec_grant, rsec_grant_wait) */
#define BLK_WINDOW_MAX 0xffffu /* version 4: pool windows are numbered 1..BLK_WINDOW_MAX, then 1 again */

/* Which way a pool window lets the target move bytes (version 4: one window each, docs/blk.md). */
enum blk_pool_dir {
	BLK_POOL_TARGET_READS = 0,  /* pulled WRITEs: the client grants RSEC_ACCESS_READ only */
	BLK_POOL_TARGET_WRITES = 1, /* READs: the client grants RSEC_ACCESS_WRITE only */
};

enum blk_type {
	BLK_OPEN = 0x01,       /* client -> target, first message of a session's first queue pair */
	BLK_OPEN_REPLY = 0x02, /* target -> client, the answer to BLK_OPEN */
	BLK_CMD = 0x10,        /* client -> target, a command capsule (any queue pair, after OPEN) */
	BLK_CPL = 0x11,        /* target -> client, a command's completion, on the queue pair of its command */
};

enum blk_opcode {
	BLK_OP_READ = 1,
	BLK_OP_WRITE = 2,
	BLK_OP_FLUSH = 3,
};

/* BLK_OPEN flags */
#define BLK_OPEN_WRITE 0x0001u /* the client wants to write */
/* BLK_OPEN_REPLY flags */
#define BLK_EXPORT_READ_ONLY 0x0001u /* this client may not write (the export is read-only, or for this identity) */
#define BLK_EXPORT_FLUSH 0x0002u     /* FLUSH reaches stable storage (fdatasync): every write the export completed, any session's */
#define BLK_EXPORT_FUA 0x0004u       /* a WRITE with BLK_CMD_FUA is on stable storage when completed */
/* BLK_CMD flags */
#define BLK_CMD_FUA 0x0001u    /* WRITE: complete only once the data is on stable storage */
#define BLK_CMD_INLINE 0x0002u /* WRITE: the data follows the capsule's header */

enum blk_status {
	BLK_S_OK = 0,
	BLK_S_INVALID = 1,   /* a field the protocol allows but this export does not (alignment, length) */
	BLK_S_RANGE = 2,     /* offset + length past the end of the export */
	BLK_S_READ_ONLY = 3, /* a WRITE on a session opened read-only */
	BLK_S_IO = 4,        /* the backing store failed the I/O */
	BLK_S_NO_SPACE = 5,  /* the backing store is full */
	BLK_S_DENIED = 6,    /* OPEN: this identity may not use this export */
	BLK_S_TRANSFER = 7,  /* the one-sided transfer failed: grant missing, expired, or its data not authentic */
	BLK_S_NO_EXPORT = 8, /* OPEN: no export of that name */
	BLK_S_LIMIT = 9,     /* OPEN: too many sessions on this export or target */
	BLK_S_VERSION = 10,  /* OPEN: protocol version not spoken */
};
#define BLK_S_MAX BLK_S_VERSION

/* Bounds every message is checked against. */
#define BLK_NAME_MAX 64u          /* export name: 1..64 of [A-Za-z0-9._-] */
#define BLK_QD_MAX 256u           /* commands in flight per queue pair: what an OPEN may ask for */
/* What a target grants at most: one live grant per command, and librdmasec holds RSEC_MAX_GRANTS per
 * connection (rsec_grant and the peer's grant table refuse the next). */
#define BLK_QD_GRANT_MAX RSEC_MAX_GRANTS
#define BLK_QUEUES_MAX 64u        /* queue pairs per session (RSEC_MAX_QPS) */
#define BLK_BLOCK_MIN 512u
#define BLK_BLOCK_MAX 4096u
#define BLK_TRANSFER_MAX (8u << 20) /* max_transfer the target may offer */
#define BLK_INLINE_MAX (60u << 10)  /* max_inline the target may offer: a capsule fits one 64 KiB slot */
#define BLK_SIZE_MAX (UINT64_C(1) << 60)

#define BLK_OPEN_HDR 8u
#define BLK_OPEN_MAX (BLK_OPEN_HDR + BLK_NAME_MAX)
#define BLK_OPEN_REPLY_LEN 32u
#define BLK_MAC_LEN 16u /* a transfer's AES-GCM tag (blk_data.h) */
#define BLK_CMD_HDR 56u
#define BLK_CMD_MAX (BLK_CMD_HDR + BLK_INLINE_MAX)
#define BLK_CPL_LEN 40u

struct blk_open {
	uint16_t flags;       /* BLK_OPEN_* */
	uint16_t queue_depth; /* asked for, per queue pair: 1..BLK_QD_MAX */
	uint16_t queues;      /* queue pairs the client will open, the first included: 1..BLK_QUEUES_MAX */
	char name[BLK_NAME_MAX + 1];
	uint8_t version;      /* BLK_VERSION_MIN..BLK_VERSION; 0 encodes BLK_VERSION */
};

struct blk_open_reply {
	uint8_t version;      /* the OPEN's; 0 encodes BLK_VERSION */
	uint16_t status;      /* enum blk_status; anything else than OK: the target closes */
	uint16_t flags;       /* BLK_EXPORT_* */
	uint16_t queue_depth; /* granted: 1..the asked depth */
	uint16_t queues;      /* granted: 1..the asked number */
	uint32_t block_size;  /* 512 or 4096 */
	uint32_t max_transfer; /* bytes per command: a multiple of block_size, up to BLK_TRANSFER_MAX */
	uint32_t max_inline;  /* in-capsule write bytes: 0 or a multiple of block_size, up to BLK_INLINE_MAX */
	uint64_t size;        /* the export's bytes: a multiple of block_size */
};

struct blk_cmd {
	uint8_t opcode;    /* enum blk_opcode */
	uint16_t flags;    /* BLK_CMD_* */
	uint16_t cid;      /* command id: < the session's queue depth, unique among this queue pair's commands in flight */
	uint16_t window;   /* READ, pulled WRITE of version 4: the pool window the transfer goes through; else 0 */
	uint64_t offset;   /* bytes */
	uint32_t length;   /* bytes; 0 for FLUSH */
	uint32_t pool_off; /* READ, pulled WRITE: where the transfer's bytes are in the queue's pool grant */
	uint64_t seq;      /* >= 1, increasing on the queue: the transfer's nonce */
	uint64_t key_id;   /* pulled WRITE: the key id its data is sealed under (blk_data.h); else 0 */
	uint8_t mac[BLK_MAC_LEN]; /* pulled WRITE: its data's tag; else zero */
	const uint8_t *data; /* INLINE: length bytes, pointing into the decoded buffer */
};

struct blk_cpl {
	uint16_t cid;
	uint16_t status; /* enum blk_status */
	uint32_t length; /* bytes transferred (0 on error) */
	uint64_t key_id; /* an OK READ: the key id its data is sealed under (blk_data.h); else 0 */
	uint8_t mac[BLK_MAC_LEN]; /* an OK READ: its data's tag; else zero */
};

/* What a session negotiated: the bounds blk_cmd_check applies. */
struct blk_limits {
	uint8_t version; /* the session's: from 4 on, READs and pulled WRITEs name a pool window */
	uint64_t size;
	uint32_t block_size, max_transfer, max_inline;
	uint16_t queue_depth;
};

/* The tag a client grants pool window w (>= 1) under, for one direction (rsec_grant, rsec_grant_wait). */
uint64_t blk_window_tag(uint16_t window, enum blk_pool_dir dir);
/* The window after w: 1..BLK_WINDOW_MAX, then 1 again (0 names version 3's one pool). */
uint16_t blk_window_next(uint16_t window);
/* A command's pool transfer: the direction it needs (false for FLUSH and in-capsule WRITEs). */
bool blk_cmd_pool_dir(const struct blk_cmd *m, enum blk_pool_dir *dir);

/* The message type of an encoded message, or 0 if it is empty. */
uint8_t blk_type_of(const uint8_t *in, size_t len);

/* Encoders: bytes written, or 0 if m breaks a bound or cap is short. */
size_t blk_open_encode(const struct blk_open *m, uint8_t *out, size_t cap);
size_t blk_open_reply_encode(const struct blk_open_reply *m, uint8_t *out, size_t cap);
/* The header only; an INLINE command's length bytes of data follow it in the same message. */
size_t blk_cmd_encode_hdr(const struct blk_cmd *m, uint8_t *out, size_t cap);
size_t blk_cpl_encode(const struct blk_cpl *m, uint8_t *out, size_t cap);

/* Decoders: false (and *why, a constant string) if malformed. */
bool blk_open_decode(const uint8_t *in, size_t len, struct blk_open *m, const char **why);
bool blk_open_reply_decode(const uint8_t *in, size_t len, struct blk_open_reply *m, const char **why);
bool blk_cmd_decode(const uint8_t *in, size_t len, struct blk_cmd *m, const char **why);
bool blk_cpl_decode(const uint8_t *in, size_t len, struct blk_cpl *m, const char **why);

/*
 * A decoded command against the session's limits: BLK_S_OK, or the status of
 * its error completion (BLK_S_INVALID, BLK_S_RANGE). cid >= queue_depth is
 * BLK_S_INVALID here, and so is a pool transfer that names no window in
 * version 4, or one in version 3; a cid already in flight is the caller's
 * to find (it is a protocol violation, not a command error).
 */
enum blk_status blk_cmd_check(const struct blk_cmd *m, const struct blk_limits *l);

const char *blk_status_name(uint16_t status);
const char *blk_opcode_name(uint8_t opcode);
/* 1..BLK_NAME_MAX bytes of [A-Za-z0-9._-], NUL-terminated within BLK_NAME_MAX + 1. */
bool blk_name_valid(const char *name);

#endif
