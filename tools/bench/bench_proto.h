/* SPDX-License-Identifier: MIT */
/*
 * rdmasec-bench's protocol between its two sides, carried in librdmasec's
 * sealed messages (rsec_send/rsec_recv). One type byte, then fixed
 * big-endian fields; DATA carries its payload, ERROR printable text.
 *
 *   client                                   server
 *   [further queue pairs: rsec_conn_add_qp, before the first PARAMS that has lanes]
 *   PARAMS (op, size, iterations, ...)  ->
 *                                       <-   READY (grant tag for write/read,
 *                                              on every queue pair)
 *   DATA ... (send: measured traffic)  <->
 *   END (iterations done)               ->
 *                                       <-   RESULT (the server's CPU time)
 *   ... next size, or close
 *
 * --op connect opens one connection per iteration; each carries one PARAMS
 * (round k of n) and gets READY, the last one RESULT. --op qp: after READY
 * the client opens and closes ITERS further queue pairs, the server takes
 * and frees them until END.
 */
#ifndef RSEC_BENCH_PROTO_H
#define RSEC_BENCH_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BENCH_PROTO_VERSION 4 /* 2: PARAMS carries sealed; 3: write --lat is a ping-pong; 4: lanes */
#define BENCH_LANES_MAX 63u /* further queue pairs (-q QPS: QPS - 1), librdmasec's RSEC_MAX_QPS - 1 */
#define BENCH_SIZE_MAX (16u << 20)         /* librdmasec's default max_msg */
#define BENCH_ITERS_MAX 10000000u          /* latency keeps one sample each */
#define BENCH_DURATION_MS_MAX 3600000u
#define BENCH_COUNT_MAX (1ull << 48)       /* iterations done, microseconds: far above any run */
#define BENCH_TEXT_MAX 200

enum bench_op { BENCH_OP_SEND = 1, BENCH_OP_WRITE = 2, BENCH_OP_READ = 3, BENCH_OP_CONNECT = 4, BENCH_OP_QP = 5 };
/* --op qp: further queue pairs opened one after another on one connection, within its lane indices */
#define BENCH_QP_ITERS_MAX 250u
enum bench_poll { BENCH_POLL_EVENT = 0, BENCH_POLL_BUSY = 1 };

enum bench_type {
	BENCH_MSG_PARAMS = 'P',
	BENCH_MSG_READY = 'R',
	BENCH_MSG_DATA = 'D',
	BENCH_MSG_END = 'E',
	BENCH_MSG_RESULT = 'S',
	BENCH_MSG_ERROR = 'X',
};

struct bench_params {
	uint8_t version;
	uint8_t op;          /* enum bench_op */
	uint8_t lat;         /* 0: bandwidth, 1: latency */
	uint8_t poll;        /* enum bench_poll */
	uint8_t sealed;      /* 1: through sealed grants (rsec_read_sealed; rsec_write_sealed, a grant each) */
	uint8_t lanes;       /* further queue pairs of the connection (rsec_conn_add_qp), each with a grant
			      * under READY's tag: write and read bandwidth only */
	uint64_t size;       /* bytes per operation; 0 for connect */
	uint64_t iters;      /* 0 with a duration */
	uint32_t duration_ms; /* 0 with iterations; never for connect */
	uint64_t round;      /* connect: this connection is round of iters (1-based); else 0 */
};

/* CPU time one side spent on one test (getrusage: user + system). */
struct bench_cpu {
	uint64_t user_us, sys_us;
};

struct bench_result {
	uint64_t iters;      /* what the server counted */
	uint64_t elapsed_ns; /* the server's measured window */
	struct bench_cpu cpu;
};

struct bench_msg {
	uint8_t type; /* enum bench_type */
	struct bench_params params;      /* PARAMS */
	uint64_t tag;                    /* READY: the grant's tag (0: none) */
	uint64_t iters;                  /* END */
	struct bench_result result;      /* RESULT */
	const uint8_t *payload;          /* DATA: points into the decoded bytes */
	size_t payload_len;
	char text[BENCH_TEXT_MAX + 1];   /* ERROR */
};

/* The longest encoded message without a DATA payload. */
#define BENCH_MSG_FIXED_MAX (1 + BENCH_TEXT_MAX)

/*
 * Encodes m (for DATA, only the type byte: the payload follows it in the
 * caller's buffer) into out. Returns the length, or 0 if cap is too small or
 * m breaks a limit (the same limits bench_decode enforces).
 */
size_t bench_encode(const struct bench_msg *m, uint8_t *out, size_t cap);
/* Decodes one message; false with *why (a static string) if malformed or out of range. */
bool bench_decode(const uint8_t *in, size_t len, struct bench_msg *m, const char **why);
/* The limits of PARAMS; NULL if p is valid, else why not. */
const char *bench_params_check(const struct bench_params *p);
const char *bench_op_name(uint8_t op);

#endif
