/* SPDX-License-Identifier: MIT */
/*
 * rsec_conn_handshake (lib/conn.c), the TLS part of accepting that a server
 * runs on worker threads: it completes TLS and stops there, reading no
 * message and calling no admission hook (those belong to the thread that
 * serves the session), and it ends a connection past its set-up deadline
 * without any TLS work. A real TLS 1.3 session (PSK) over a socketpair.
 * On the session's thread, a HELLO from an identity no allow rule takes is
 * refused before the admission hook.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "conn.h"
#include "test_frames.h"
#include "tls.h"

static const uint8_t psk[32] = { 2, 7, 1, 8, 2, 8, 1, 8, 2, 8, 4, 5, 9, 0, 4, 5 };

struct fixture {
	SSL_CTX *cctx, *sctx;
	SSL *client;
	int client_fd;
	struct rsec_ctx ctx;
	struct rsec_conn *server; /* accepted: owns the server's SSL and socket */
	int admitted;             /* calls of the admission hook */
};

static int count_admit(void *arg, const char *peer)
{
	(void)peer;
	struct fixture *f = arg;
	f->admitted++;
	return 0;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	char err[256];
	struct rsec_tls_opts co = { .psk = psk, .psk_len = sizeof(psk), .psk_identity = "node-a" };
	struct rsec_tls_opts so = co;
	so.is_server = true;
	int fds[2];
	assert_int_equal(rsec_tls_ctx_new(&co, &f->cctx, err, sizeof(err)), 0);
	assert_int_equal(rsec_tls_ctx_new(&so, &f->sctx, err, sizeof(err)), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds), 0);
	f->client_fd = fds[0];
	assert_int_equal(rsec_tls_new(f->cctx, fds[0], &co, &f->client), 0);
	f->ctx = (struct rsec_ctx){ .is_server = true, .handshake_timeout_ms = 10000, .aead = RSEC_AEAD_AES256GCM,
				    .admit = count_admit, .admit_arg = f };
	f->server = rsec_conn_alloc(&f->ctx, fds[1]);
	assert_non_null(f->server);
	assert_int_equal(rsec_tls_new(f->sctx, fds[1], &so, &f->server->path.chan->ssl), 0);
	f->server->path.chan->sock = fds[1];
	f->server->path.phase = PHASE_TLS;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	rsec_conn_free(f->server);
	rsec_authz_set_free(&f->ctx.allow);
	SSL_free(f->client);
	SSL_CTX_free(f->cctx);
	SSL_CTX_free(f->sctx);
	close(f->client_fd);
	free(f);
	return 0;
}

/* Both sides step until the server's TLS is complete; the server's last result. */
static int handshake(struct fixture *f)
{
	int rc = RSEC_E_AGAIN, rs = RSEC_E_AGAIN;
	for (int i = 0; i < 100 && rs == RSEC_E_AGAIN; i++) {
		bool ww;
		if (rc == RSEC_E_AGAIN)
			rc = rsec_tls_handshake_step(f->client, &ww);
		rs = rsec_conn_handshake(f->server);
	}
	assert_int_equal(rc, 0);
	return rs;
}

static void test_stops_after_tls(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(rsec_conn_handshake(f->server), RSEC_E_AGAIN); /* nothing from the client yet */
	assert_int_equal(handshake(f), 0);
	assert_string_equal(f->server->peer, "psk:node-a");
	/* The client's HELLO is there: it waits for rsec_conn_process, on the session's own thread. */
	struct rsec_msg m = { .type = RSEC_MSG_HELLO };
	m.u.hello = (struct rsec_msg_hello){ .min_version = RSEC_WIRE_VERSION, .max_version = RSEC_WIRE_VERSION,
					     .aead = RSEC_AEAD_AES256GCM };
	uint8_t frame[RSEC_WIRE_MAX_FRAME];
	size_t len = 0, done = 0;
	assert_int_equal(rsec_wire_encode(&m, frame, sizeof(frame), &len), 0);
	assert_int_equal(rsec_tls_write_some(f->client, frame, len, &done), 0);
	assert_int_equal(rsec_conn_handshake(f->server), 0);
	assert_int_equal(rsec_conn_handshake(f->server), 0);
	assert_int_equal(f->admitted, 0);
	assert_int_equal(f->server->path.phase, PHASE_HELLO);
	struct rsec_msg reply;
	assert_false(test_read_frame(f->client, &reply, false)); /* no HELLO came back */
}

/* Authenticated as psk:node-a, which neither rule takes: told why, closed, never admitted. */
static void test_unauthorized_hello_is_refused(void **state)
{
	struct fixture *f = *state;
	const char *rules[] = { "psk:node-b", "spiffe://example.org/ns/storage/*" };
	assert_int_equal(rsec_authz_set_load(&f->ctx.allow, rules, 2, NULL, 0), 0);
	assert_int_equal(handshake(f), 0);
	struct rsec_msg m = { .type = RSEC_MSG_HELLO };
	m.u.hello = (struct rsec_msg_hello){ .min_version = RSEC_WIRE_VERSION, .max_version = RSEC_WIRE_VERSION,
					     .aead = RSEC_AEAD_AES256GCM };
	uint8_t frame[RSEC_WIRE_MAX_FRAME];
	size_t len = 0, done = 0;
	assert_int_equal(rsec_wire_encode(&m, frame, sizeof(frame), &len), 0);
	assert_int_equal(rsec_tls_write_some(f->client, frame, len, &done), 0);
	int rc = RSEC_E_AGAIN;
	for (int i = 0; i < 10 && rc == RSEC_E_AGAIN; i++)
		rc = rsec_conn_process(f->server);
	assert_int_equal(rc, RSEC_E_DENIED);
	assert_int_equal(f->admitted, 0);
	assert_non_null(strstr(rsec_conn_error(f->server), "peer psk:node-a refused: identity not authorized "
							   "(2 allow rules: psk:node-b spiffe://example.org/ns/storage/*)"));
	struct rsec_msg reply;
	assert_true(test_read_frame(f->client, &reply, true));
	assert_int_equal(reply.type, RSEC_MSG_DISCONNECT);
	assert_int_equal(reply.u.disconnect.reason, RSEC_DISC_REFUSED);
	assert_string_equal(reply.u.disconnect.text.s, "refused: identity not authorized");

}

static void test_deadline_ends_it_without_tls(void **state)
{
	struct fixture *f = *state;
	bool ww;
	assert_int_equal(rsec_tls_handshake_step(f->client, &ww), RSEC_E_AGAIN); /* its ClientHello is there */
	f->server->deadline_ms = rsec_now_ms() - 1;
	assert_int_equal(rsec_conn_handshake(f->server), RSEC_E_TIMEOUT);
	assert_non_null(strstr(rsec_conn_error(f->server), "set-up did not finish"));
	assert_int_equal(rsec_conn_handshake(f->server), RSEC_E_TIMEOUT); /* closed stays closed */
	/* No ServerHello was computed: the client has nothing to read. */
	char b;
	assert_int_equal(recv(f->client_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT), -1);
}

static void test_bad_arguments(void **state)
{
	(void)state;
	assert_int_equal(rsec_conn_handshake(NULL), RSEC_E_INVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_stops_after_tls, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unauthorized_hello_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_deadline_ends_it_without_tls, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_arguments, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
