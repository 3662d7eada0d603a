/* SPDX-License-Identifier: MIT */
/*
 * The application protocol between rdmasec-server and rdmasec-client,
 * carried in librdmasec's sealed messages (rdmasec-server(8), rdmasec-client(1)). One opcode byte,
 * then fixed big-endian fields, then (for echo) the payload.
 */
#ifndef RSEC_APP_PROTO_H
#define RSEC_APP_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define APP_SHA256_LEN 32
#define APP_ERROR_TEXT_MAX 200

enum app_op {
	APP_ECHO = 'E',          /* payload                 -> APP_ECHO_REPLY, same payload */
	APP_ECHO_REPLY = 'e',
	APP_WRITE_REQ = 'W',     /* len                     -> APP_WRITE_GRANTED */
	APP_WRITE_GRANTED = 'w', /* tag of a WRITE grant of len bytes */
	APP_WRITE_DONE = 'D',    /* tag                     -> APP_WRITE_RESULT */
	APP_WRITE_RESULT = 'd',  /* len, sha256 of what the server received */
	APP_READ_REQ = 'R',      /*                         -> APP_READ_GRANTED */
	APP_READ_GRANTED = 'r',  /* tag, len, sha256 of the READ grant's bytes */
	APP_READ_DONE = 'F',     /* tag                     -> APP_READ_RESULT */
	APP_READ_RESULT = 'f',
	APP_SEALED_WRITE_REQ = 'P', /* len                   -> APP_WRITE_GRANTED (a sealed grant) */
	APP_SEALED_READ_REQ = 'Q',  /*                       -> APP_READ_GRANTED (a sealed grant; len: plaintext) */
	APP_STATS_REQ = 'S',     /*                         -> APP_STATS_REPLY */
	APP_STATS_REPLY = 's',   /* stats, then text: the peer (as the server counts it) they are about */
	APP_ERROR = 'x',         /* text */
};

/* The server's counters about one peer (rdmasec-server(8), METRICS). */
struct app_stats {
	uint64_t connections, mac_failures, seq_violations, qp_errors, refused_handshakes;
};
#define APP_STATS_LEN (5 * 8)
/* The longest encoded message without an echo payload. */
#define APP_MSG_FIXED_MAX (1 + APP_STATS_LEN + APP_ERROR_TEXT_MAX)

struct app_msg {
	uint8_t op;
	uint64_t tag;
	uint64_t len;
	uint8_t sha256[APP_SHA256_LEN];
	const uint8_t *payload; /* APP_ECHO(_REPLY): points into the decoded buffer */
	size_t payload_len;
	struct app_stats stats;              /* APP_STATS_REPLY */
	char text[APP_ERROR_TEXT_MAX + 1];   /* APP_ERROR: the error; APP_STATS_REPLY: the peer */
};

/* Encodes the fixed part of m (not an echo payload) into out; returns bytes or 0 if cap is short. */
size_t app_encode(const struct app_msg *m, uint8_t *out, size_t cap);
/* Decodes one message; false (with *why) if malformed. */
bool app_decode(const uint8_t *in, size_t len, struct app_msg *m, const char **why);
/* The SHA-256 of n bytes at p, as WRITE_RESULT and READ_GRANTED carry it (zeros if OpenSSL fails). */
void app_sha256(const uint8_t *p, size_t n, uint8_t out[APP_SHA256_LEN]);
const char *app_op_name(uint8_t op);

#endif
