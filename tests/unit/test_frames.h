/* SPDX-License-Identifier: MIT */
/*
 * A TLS 1.3 pair (PSK) over a non-blocking socketpair, and reading control
 * frames off one end (test_lane, test_sealed_post). Include after cmocka.h:
 * it asserts.
 */
#ifndef RSEC_TEST_FRAMES_H
#define RSEC_TEST_FRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tls.h"
#include "wire.h"

/* Contexts, ends and fds (client, server) of a pair whose handshake is done. */
struct test_tls_pair {
	SSL_CTX *cctx, *sctx;
	SSL *client, *server;
	int fds[2];
};

static inline void test_tls_pair(struct test_tls_pair *p, const uint8_t *psk, size_t psk_len)
{
	char err[256];
	struct rsec_tls_opts co = { .psk = psk, .psk_len = psk_len, .psk_identity = "node-a" };
	struct rsec_tls_opts so = co;
	so.is_server = true;
	assert_int_equal(rsec_tls_ctx_new(&co, &p->cctx, err, sizeof(err)), 0);
	assert_int_equal(rsec_tls_ctx_new(&so, &p->sctx, err, sizeof(err)), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, p->fds), 0);
	assert_int_equal(rsec_tls_new(p->cctx, p->fds[0], &co, &p->client), 0);
	assert_int_equal(rsec_tls_new(p->sctx, p->fds[1], &so, &p->server), 0);
	int rc = RSEC_E_AGAIN, rs = RSEC_E_AGAIN;
	for (int i = 0; i < 100 && (rc == RSEC_E_AGAIN || rs == RSEC_E_AGAIN); i++) {
		bool ww;
		if (rc == RSEC_E_AGAIN)
			rc = rsec_tls_handshake_step(p->client, &ww);
		if (rs == RSEC_E_AGAIN)
			rs = rsec_tls_handshake_step(p->server, &ww);
	}
	assert_int_equal(rc, 0);
	assert_int_equal(rs, 0);
}

/* What test_tls_pair made, but the server's SSL and socket (a connection under test owns those). */
static inline void test_tls_pair_free(struct test_tls_pair *p)
{
	SSL_free(p->client);
	SSL_CTX_free(p->cctx);
	SSL_CTX_free(p->sctx);
	close(p->fds[0]);
}

/*
 * The next whole frame on ssl, decoded into m. wait: keep reading (up to
 * 1000 non-blocking reads) until one is there; else false when nothing is.
 */
static inline bool test_read_frame(SSL *ssl, struct rsec_msg *m, bool wait)
{
	uint8_t frame[RSEC_WIRE_MAX_FRAME];
	size_t have = 0, need = RSEC_WIRE_HDR_LEN;
	for (int tries = 0; have < need && tries < 1000; tries++) {
		size_t got = 0;
		int rc = rsec_tls_read_some(ssl, frame + have, need - have, &got);
		if (rc == RSEC_E_AGAIN && have == 0 && !wait)
			return false;
		assert_true(rc == 0 || rc == RSEC_E_AGAIN);
		have += got;
		if (have == RSEC_WIRE_HDR_LEN && need == RSEC_WIRE_HDR_LEN) {
			uint8_t type;
			uint32_t body;
			assert_int_equal(rsec_wire_decode_header(frame, have, &type, &body), 0);
			need += body;
		}
	}
	assert_int_equal(have, need);
	assert_int_equal(rsec_wire_decode(frame, have, m), 0);
	return true;
}

#endif
