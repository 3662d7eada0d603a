/* SPDX-License-Identifier: MIT */
/*
 * Control-channel message codec. Connection parameters travel only inside
 * the TLS 1.3 channel, as frames of this one versioned, length-checked,
 * big-endian format (docs/protocol.md); never as raw structs.
 *
 * Frame: u8 version | u8 type | u16 lane | u32 body_len | body.
 * lane names the queue pair of the session a frame is about: 0 the
 * connection's first (and everything about the session itself), 1..
 * RSEC_WIRE_LANE_MAX the further ones of rsec_conn_add_qp (lib/session/lane.c);
 * only sent to a peer whose HELLO offered RSEC_WIRE_FEATURE_LANES.
 * Both directions validate every field against the limits below: the encoder
 * refuses to emit what the decoder would reject, so decode(encode(m)) == m and
 * encode(decode(f)) == f for every accepted frame f.
 */
#ifndef RSEC_WIRE_H
#define RSEC_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "result.h"

#define RSEC_WIRE_VERSION 1
#define RSEC_WIRE_HDR_LEN 8
#define RSEC_WIRE_MAX_BODY 4096
#define RSEC_WIRE_MAX_FRAME (RSEC_WIRE_HDR_LEN + RSEC_WIRE_MAX_BODY)
#define RSEC_WIRE_LANE_MAX 255u

enum rsec_msg_type {
	RSEC_MSG_HELLO = 1,
	RSEC_MSG_QP_INFO = 2,
	RSEC_MSG_READY = 3,
	RSEC_MSG_GRANT = 4,
	RSEC_MSG_REVOKE = 5,
	RSEC_MSG_KEEPALIVE = 6,
	RSEC_MSG_DISCONNECT = 7,
	RSEC_MSG_ERROR = 8,
	RSEC_MSG_VERIFY = 9,
	RSEC_MSG_RESERVED = 10, /* CREDIT once, never sent: refused like an unknown type */
	RSEC_MSG_REBUILD = 11,
	RSEC_MSG_REBUILD_READY = 12,
	RSEC_MSG_SESSION = 13,
	RSEC_MSG_RESUME = 14,
	RSEC_MSG_REKEY = 15,
	RSEC_MSG_REKEY_REPLY = 16,
	RSEC_MSG_REKEY_DONE = 17,
	RSEC_MSG_PATH_CHECK = 18,
};
#define RSEC_MSG_TYPE_MIN RSEC_MSG_HELLO
#define RSEC_MSG_TYPE_MAX RSEC_MSG_PATH_CHECK

/* HELLO */
#define RSEC_WIRE_PROTO_MIN 1                 /* min_version >= 1, min_version <= max_version */
#define RSEC_WIRE_AEAD_AES_256_GCM 1
#define RSEC_WIRE_AEAD_CHACHA20_POLY1305 2
#define RSEC_WIRE_FEATURE_LANES 1u            /* takes frames with lane != 0 */
#define RSEC_WIRE_FEATURE_REBUILD 2u          /* rebuilds a failed data path (REBUILD) */
#define RSEC_WIRE_FEATURE_RESUME 4u           /* resumes a session over a new control channel (SESSION, RESUME) */
#define RSEC_WIRE_FEATURE_RESUME_EPOCH 8u     /* RESUME and its SESSION answer carry the data path's epoch */
#define RSEC_WIRE_FEATURE_REBIND 16u          /* binds its live grants again after a rebuild, and takes such GRANTs */
#define RSEC_WIRE_FEATURE_REKEY 32u           /* renews the data path's keys (REKEY, REKEY_REPLY, REKEY_DONE) */
#define RSEC_WIRE_FEATURE_GRANT_KEYS 64u      /* keys grants from the rekey chain: GRANT names its key id */
#define RSEC_WIRE_FEATURE_PATH_CHECK 128u     /* says what its frames the peer's QP acknowledged (PATH_CHECK) */

/* REKEY / REKEY_REPLY / REKEY_DONE */
#define RSEC_WIRE_REKEY_PUB_LEN 32            /* an X25519 public key */
#define RSEC_WIRE_REKEY_GEN_MIN 1u

/* SESSION / RESUME */
#define RSEC_WIRE_TOKEN_LEN 32

/* QP_INFO */
#define RSEC_WIRE_QPN_MAX 0xffffffu           /* QPN and PSN are 24-bit */
#define RSEC_WIRE_PSN_MAX 0xffffffu
#define RSEC_WIRE_GID_LEN 16
#define RSEC_WIRE_MTU_MIN 1                   /* IBV_MTU_256 */
#define RSEC_WIRE_MTU_MAX 5                   /* IBV_MTU_4096 */
#define RSEC_WIRE_LINK_IB 1
#define RSEC_WIRE_LINK_ETHERNET 2             /* RoCE */
#define RSEC_WIRE_RECV_SLOTS_MIN 1u
#define RSEC_WIRE_RECV_SLOTS_MAX 4096u
#define RSEC_WIRE_SLOT_SIZE_MIN 64u
#define RSEC_WIRE_SLOT_SIZE_MAX 1048576u
#define RSEC_WIRE_MAX_MSG_MIN 1u
#define RSEC_WIRE_MAX_MSG_MAX (1u << 30)

/* GRANT / VERIFY */
#define RSEC_WIRE_GRANT_LEN_MIN 1u
#define RSEC_WIRE_GRANT_LEN_MAX (UINT64_C(1) << 40)
#define RSEC_WIRE_ACCESS_READ 1u
#define RSEC_WIRE_ACCESS_WRITE 2u
#define RSEC_WIRE_ACCESS_SEALED 4u           /* with exactly one of READ, WRITE */
#define RSEC_WIRE_ACCESS_MASK (RSEC_WIRE_ACCESS_READ | RSEC_WIRE_ACCESS_WRITE | RSEC_WIRE_ACCESS_SEALED)
#define RSEC_WIRE_MAC_HMAC_SHA256 1
/* VERIFY of a sealed transfer: len is the plaintext length, the range holds
 * its sealed form (lib/base/sealed.h); mac = the 8-byte nonce prefix, then zeros. */
#define RSEC_WIRE_MAC_SEALED 2
#define RSEC_WIRE_SEALED_PREFIX_LEN 8
#define RSEC_WIRE_MAC_LEN 32

/* DISCONNECT / ERROR */
#define RSEC_WIRE_MAX_TEXT 256                /* printable ASCII 0x20..0x7e only */
#define RSEC_WIRE_TEXT_MIN_CHAR 0x20
#define RSEC_WIRE_TEXT_MAX_CHAR 0x7e
#define RSEC_WIRE_ERROR_CODE_MIN 1u           /* -RSEC_E_* */
#define RSEC_WIRE_ERROR_CODE_MAX 255u

/* Why a side disconnects; any other value is rejected. */
enum rsec_disconnect_reason {
	RSEC_DISC_NORMAL = 0,    /* the application closed the connection */
	RSEC_DISC_SHUTDOWN = 1,  /* the process or context is going away */
	RSEC_DISC_PROTOCOL = 2,  /* the peer sent a malformed or unexpected message */
	RSEC_DISC_REFUSED = 3,   /* admission refused (server's admit hook, limits) */
	RSEC_DISC_TIMEOUT = 4,   /* handshake or keepalive deadline passed */
	RSEC_DISC_QP_ERROR = 5,  /* the local QP entered the error state */
	RSEC_DISC_INTEGRITY = 6, /* a message failed authentication or sequencing */
};
#define RSEC_DISC_MAX RSEC_DISC_INTEGRITY

/* REBUILD: why the sender rebuilds its data path; epoch >= 1 */
#define RSEC_WIRE_REBUILD_ANSWER 0            /* the peer asked */
#define RSEC_WIRE_REBUILD_AUTH 1              /* a frame failed authentication or sequencing */
#define RSEC_WIRE_REBUILD_QP 2                /* the queue pair failed */
#define RSEC_WIRE_REBUILD_VIOLATION 3         /* a completion rdmasec never asks for */
#define RSEC_WIRE_REBUILD_CHANNEL 4           /* the session resumed over a new control channel */
#define RSEC_WIRE_REBUILD_SILENT 5            /* our QP acknowledged frames it never delivered (PATH_CHECK) */
#define RSEC_WIRE_REBUILD_REASON_MAX RSEC_WIRE_REBUILD_SILENT
#define RSEC_WIRE_EPOCH_MIN 1u

/* Text carried by DISCONNECT and ERROR; s[len] is always NUL after decode. */
struct rsec_wire_text {
	uint16_t len;
	char s[RSEC_WIRE_MAX_TEXT + 1];
};

struct rsec_msg_hello {
	uint16_t min_version, max_version;
	uint32_t features;          /* bit flags; unknown bits are kept, and ignored by the reader */
	uint8_t aead;               /* RSEC_WIRE_AEAD_* */
};

struct rsec_msg_qp_info {
	uint32_t qpn;
	uint32_t psn;
	uint16_t lid;
	uint8_t gid[RSEC_WIRE_GID_LEN];
	uint8_t mtu;                /* enum ibv_mtu value */
	uint8_t link;               /* RSEC_WIRE_LINK_* */
	uint32_t recv_slots;
	uint32_t slot_size;
	uint32_t max_msg;
};

struct rsec_msg_grant {
	uint64_t grant_id;
	uint64_t addr;              /* addr + len must not wrap */
	uint32_t rkey;
	uint64_t len;
	uint32_t access;            /* RSEC_WIRE_ACCESS_*, nonzero */
	uint32_t ttl_ms;            /* 0: until revoked */
	uint64_t tag;               /* the application's label */
	/* RSEC_WIRE_FEATURE_GRANT_KEYS: the key id the grant's keys come from follows the tag (8 bytes more). */
	bool has_key_id;
	uint64_t key_id;
};

struct rsec_msg_revoke {
	uint64_t grant_id;
};

struct rsec_msg_keepalive {
	uint64_t nonce;
	uint8_t is_reply;           /* 0 or 1 */
};

struct rsec_msg_disconnect {
	uint32_t reason;            /* enum rsec_disconnect_reason */
	struct rsec_wire_text text;
};

struct rsec_msg_error {
	uint32_t code;              /* -RSEC_E_*, i.e. a positive 1..255 */
	struct rsec_wire_text text;
};

struct rsec_msg_verify {
	uint64_t grant_id;
	uint64_t offset;            /* len >= 1, offset + len <= RSEC_WIRE_GRANT_LEN_MAX */
	uint64_t len;
	uint8_t mac_alg;            /* RSEC_WIRE_MAC_* */
	uint8_t mac[RSEC_WIRE_MAC_LEN];
};

/* One side's half of a rebuild (lib/session/rebuild.c): its new QP and what it opened of the old epoch. */
struct rsec_msg_rebuild {
	uint32_t epoch;               /* the epoch being built, >= 1 */
	uint8_t reason;               /* RSEC_WIRE_REBUILD_* */
	uint64_t opened;              /* the peer's frames of the previous epoch the sender opened */
	struct rsec_msg_qp_info qp;   /* buffers as at set-up */
};

struct rsec_msg_rebuild_ready {
	uint32_t epoch;
};

/*
 * A queue pair's rekey (lib/session/rekey_exchange.c): REKEY offers the sender's
 * ephemeral key for generation gen of the keys of data-path epoch epoch,
 * REKEY_REPLY answers with the other's; REKEY_DONE (no key) says the offerer
 * seals under the new keys.
 */
struct rsec_msg_rekey {
	uint32_t epoch;
	uint32_t gen;                 /* >= 1 */
	uint8_t pub[RSEC_WIRE_REKEY_PUB_LEN];
};

/*
 * PATH_CHECK (lib/path/data.c, "Silent data paths" in docs/protocol.md): the
 * sender's frames [0, delivered) of data-path epoch epoch completed on its
 * send queue, so the receiver's queue pair acknowledged every one of them.
 * A receiver that has reaped every completion and opened fewer knows its
 * queue pair took forged packets in their place, and rebuilds.
 */
struct rsec_msg_path_check {
	uint32_t epoch;
	uint64_t delivered;
};

/* SESSION (server: the session's token, on set-up and when it resumed), RESUME (client: resume it). */
struct rsec_msg_session {
	uint8_t token[RSEC_WIRE_TOKEN_LEN];
	/* RSEC_WIRE_FEATURE_RESUME_EPOCH: the sender's data-path epoch follows the token (4 bytes more). */
	bool has_epoch;
	uint32_t epoch;
};

/* One decoded control message; type selects the member of u (READY has none). */
struct rsec_msg {
	uint8_t type;               /* enum rsec_msg_type */
	uint16_t lane;              /* 0..RSEC_WIRE_LANE_MAX */
	union {
		struct rsec_msg_hello hello;
		struct rsec_msg_qp_info qp_info;
		struct rsec_msg_grant grant;
		struct rsec_msg_revoke revoke;
		struct rsec_msg_keepalive keepalive;
		struct rsec_msg_disconnect disconnect;
		struct rsec_msg_error error;
		struct rsec_msg_verify verify;
		struct rsec_msg_rebuild rebuild;
		struct rsec_msg_rebuild_ready rebuild_ready;
		struct rsec_msg_session session; /* SESSION and RESUME */
		struct rsec_msg_rekey rekey;     /* REKEY, REKEY_REPLY, REKEY_DONE (pub unused) */
		struct rsec_msg_path_check path_check;
	} u;
};

/*
 * Encode m as one frame into out[0..cap). On success *out_len is the frame
 * length (at most RSEC_WIRE_MAX_FRAME). Returns 0, RSEC_E_INVAL (NULL
 * argument), RSEC_E_RANGE (unknown type, a field out of range, or cap too
 * small); on error out's contents are unspecified and *out_len is untouched.
 */
RSEC_MUST_CHECK int rsec_wire_encode(const struct rsec_msg *m, uint8_t *out, size_t cap, size_t *out_len);

/*
 * Validate the first RSEC_WIRE_HDR_LEN bytes of a frame (n must be >= that;
 * extra bytes are ignored) and return its type and body length, so a stream
 * reader knows how much more to read. Returns 0, RSEC_E_INVAL (NULL),
 * RSEC_E_PROTO (short, wrong version, unknown type, lane >
 * RSEC_WIRE_LANE_MAX, body_len > RSEC_WIRE_MAX_BODY).
 */
RSEC_MUST_CHECK int rsec_wire_decode_header(const uint8_t *hdr, size_t n, uint8_t *type, uint32_t *body_len);

/*
 * Decode exactly one whole frame of len bytes into *m. Returns 0,
 * RSEC_E_INVAL (NULL), RSEC_E_PROTO (bad header, body_len != len - 8,
 * truncated body, trailing bytes, a field out of range). On error *m is zeroed.
 */
RSEC_MUST_CHECK int rsec_wire_decode(const uint8_t *frame, size_t len, struct rsec_msg *m);

/* Static name of a message type ("HELLO"), or "UNKNOWN". */
const char *rsec_wire_type_name(uint8_t type);

/*
 * Fill t from a C string for sending: truncated to RSEC_WIRE_MAX_TEXT, each
 * byte outside 0x20..0x7e replaced by '?'. s NULL gives empty text.
 */
void rsec_wire_text_set(struct rsec_wire_text *t, const char *s);

#endif /* RSEC_WIRE_H */
