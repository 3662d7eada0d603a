/* SPDX-License-Identifier: MIT */
/* One rdmasec connection as both sides of the bench use it: protocol messages and measured traffic. */
#ifndef RSEC_BENCH_BCONN_H
#define RSEC_BENCH_BCONN_H

#include <stddef.h>
#include <stdint.h>

#include "bench.h"

struct bench_conn {
	struct rsec_conn *c;
	int timeout_ms;
	uint8_t *buf;  /* receive buffer */
	size_t cap;
	size_t len;    /* bytes of the last message received */
};

/* A receive buffer for messages up to max_payload bytes. Returns 0 or RSEC_E_NOMEM. */
int bconn_init(struct bench_conn *b, struct rsec_conn *c, int timeout_ms, size_t max_payload);
void bconn_free(struct bench_conn *b);
/* Grow the receive buffer for messages up to max_payload bytes. Returns 0 or RSEC_E_NOMEM. */
int bconn_reserve(struct bench_conn *b, size_t max_payload);

/*
 * Send len bytes as one message; prints why on failure. Every wait, here and
 * in bconn_recv, is the library's: busy or event as the context's poll_mode
 * (bench_ctx_new, --poll).
 */
int bconn_send(struct bench_conn *b, const void *p, size_t len, const char *what);
int bconn_send_msg(struct bench_conn *b, const struct bench_msg *m, const char *what);
/* Receive one message into b->buf (b->len). */
int bconn_recv(struct bench_conn *b, const char *what);
/*
 * Receive and decode one message of type want (0: any). The peer's ERROR is
 * printed and fails; so does a malformed or unexpected message.
 */
int bconn_recv_msg(struct bench_conn *b, uint8_t want, struct bench_msg *m, const char *what);
/*
 * bconn_recv_msg while driving n further queue pairs of the connection
 * (their grants' binds complete and are announced only when they are
 * driven), waiting on all of their descriptors.
 */
int bconn_recv_msg_driving(struct bench_conn *b, struct rsec_conn *const *more, unsigned n, uint8_t want,
			   struct bench_msg *m, const char *what);
/* Tell the peer why we stop (best effort). */
void bconn_send_error(struct bench_conn *b, const char *text);

#endif
