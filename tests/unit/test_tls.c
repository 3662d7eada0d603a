/* SPDX-License-Identifier: MIT */
/*
 * TLS control channel: real handshakes between two SSL objects over a
 * non-blocking socketpair, stepped alternately in one thread, with
 * credentials from rsec_pki_generate().
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <signal.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "pki.h"
#include "tls.h"
#include "tls_resume.h"
#include "sealed.h"

static char root[64];

/* Moves exactly n bytes one way over rsec_tls_*_some, waiting on the socket up to timeout_ms in all. */
static int tls_all(SSL *ssl, void *buf, size_t n, int timeout_ms, bool write)
{
	uint8_t *p = buf;
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (n > 0) {
		size_t done = 0;
		int rc = write ? rsec_tls_write_some(ssl, p, n, &done) : rsec_tls_read_some(ssl, p, n, &done);
		if (rc == 0) {
			p += done;
			n -= done;
			continue;
		}
		if (rc != RSEC_E_AGAIN)
			return rc;
		clock_gettime(CLOCK_MONOTONIC, &t);
		long left = timeout_ms - ((t.tv_sec - t0.tv_sec) * 1000L + (t.tv_nsec - t0.tv_nsec) / 1000000L);
		if (left <= 0)
			return RSEC_E_TIMEOUT;
		struct pollfd pfd = { .fd = SSL_get_fd(ssl), .events = write ? POLLOUT : POLLIN };
		(void)poll(&pfd, 1, (int)left);
	}
	return 0;
}

static int tls_write_all(SSL *ssl, const void *buf, size_t n, int timeout_ms)
{
	return tls_all(ssl, (void *)(uintptr_t)buf, n, timeout_ms, true);
}

static int tls_read_all(SSL *ssl, void *buf, size_t n, int timeout_ms)
{
	return tls_all(ssl, buf, n, timeout_ms, false);
}

static void path(char *out, const char *dir, const char *file)
{
	snprintf(out, 512, "%s/%s/%s", root, dir, file);
}

static int setup_pki(void **state)
{
	(void)state;
	char err[256], dir[512];
	snprintf(root, sizeof(root), "/tmp/rsec-tls-XXXXXX");
	if (!mkdtemp(root))
		return -1;
	snprintf(dir, sizeof(dir), "%s/main", root);
	struct rsec_pki_opts o = { .dir = dir };
	if (rsec_pki_generate(&o, err, sizeof(err)) < 0)
		return -1;
	const char *const spiffe[] = { "URI:spiffe://example.org/ns/app/sa/one", "DNS:one.example.org", NULL };
	if (rsec_pki_issue_client(dir, "spiffe", spiffe, 0, err, sizeof(err)) < 0)
		return -1;
	/* Revocation: a CA of its own, two clients, a CRL listing nobody yet. */
	snprintf(dir, sizeof(dir), "%s/crl", root);
	o = (struct rsec_pki_opts){ .dir = dir, .clients = 4, .ca_name = "crl" };
	if (rsec_pki_generate(&o, err, sizeof(err)) < 0 || rsec_pki_write_crl(dir, NULL, 0, err, sizeof(err)) < 0)
		return -1;
	snprintf(dir, sizeof(dir), "%s/other", root);
	o = (struct rsec_pki_opts){ .dir = dir, .ca_name = "other" };
	if (rsec_pki_generate(&o, err, sizeof(err)) < 0)
		return -1;
	/* An expired client from the main CA. */
	snprintf(dir, sizeof(dir), "%s/expired", root);
	char cmd[1200];
	snprintf(cmd, sizeof(cmd), "mkdir -p %s && cp %s/main/ca.pem %s/main/ca.key %s/", dir, root, root, dir);
	if (system(cmd) != 0)
		return -1;
	o = (struct rsec_pki_opts){ .dir = dir, .reuse_ca = true, .expired_clients = true };
	return rsec_pki_generate(&o, err, sizeof(err)) < 0 ? -1 : 0;
}

static int teardown_pki(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	return system(cmd) == 0 ? 0 : -1;
}

struct side {
	char ca[512], cert[512], key[512];
	struct rsec_tls_opts o;
	SSL_CTX *ctx;
	SSL *ssl;
	int rc;
};

static void certs(struct side *s, bool server, const char *ca_dir, const char *dir, const char *base)
{
	char f[64];
	memset(s, 0, sizeof(*s));
	path(s->ca, ca_dir, "ca.pem");
	snprintf(f, sizeof(f), "%s.pem", base);
	path(s->cert, dir, f);
	snprintf(f, sizeof(f), "%s.key", base);
	path(s->key, dir, f);
	s->o = (struct rsec_tls_opts){ .is_server = server, .ca_file = s->ca, .cert_file = s->cert, .key_file = s->key };
}

static const uint8_t psk_a[32] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20 };
static const uint8_t psk_b[32] = { 9 };

static void psk(struct side *s, bool server, const uint8_t *key, const char *id)
{
	memset(s, 0, sizeof(*s));
	s->o = (struct rsec_tls_opts){ .is_server = server, .psk = key, .psk_len = 32, .psk_identity = id };
}

/* New SSLs of both contexts over a new socketpair, both handshakes run to completion or failure. */
static void connect_pair(struct side *c, struct side *s)
{
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	assert_int_equal(rsec_tls_new(c->ctx, sv[0], &c->o, &c->ssl), 0);
	assert_int_equal(rsec_tls_new(s->ctx, sv[1], &s->o, &s->ssl), 0);
	c->rc = s->rc = RSEC_E_AGAIN;
	for (int i = 0; i < 100 && (c->rc == RSEC_E_AGAIN || s->rc == RSEC_E_AGAIN); i++) {
		bool ww;
		if (c->rc == RSEC_E_AGAIN)
			c->rc = rsec_tls_handshake_step(c->ssl, &ww);
		if (s->rc == RSEC_E_AGAIN)
			s->rc = rsec_tls_handshake_step(s->ssl, &ww);
	}
}

/* Contexts from each side's options, then one connection; leaves each side's result in rc. */
static void handshake(struct side *c, struct side *s)
{
	char err[256];
	assert_int_equal(rsec_tls_ctx_new(&c->o, &c->ctx, err, sizeof(err)), 0);
	assert_int_equal(rsec_tls_ctx_new(&s->o, &s->ctx, err, sizeof(err)), 0);
	connect_pair(c, s);
}

/* Another handshake over a new socketpair with the same contexts. */
static void again(struct side *c, struct side *s)
{
	int fds[2] = { SSL_get_fd(c->ssl), SSL_get_fd(s->ssl) };
	/* No close_notify: the ticket must survive a connection that just ends. */
	SSL_free(c->ssl);
	SSL_free(s->ssl);
	close(fds[0]);
	close(fds[1]);
	connect_pair(c, s);
}

static void done(struct side *c, struct side *s)
{
	int fds[2] = { c->ssl ? SSL_get_fd(c->ssl) : -1, s->ssl ? SSL_get_fd(s->ssl) : -1 };
	SSL_free(c->ssl);
	SSL_free(s->ssl);
	SSL_CTX_free(c->ctx);
	SSL_CTX_free(s->ctx);
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/* A plain OpenSSL client, configured by tweak, against our server; returns the server's result. */
static int raw_client_vs_server(void (*tweak)(SSL_CTX *ctx, const char *ca))
{
	struct side c, s;
	certs(&c, false, "main", "main", "client");
	certs(&s, true, "main", "main", "server");
	char err[256];
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	c.ctx = SSL_CTX_new(TLS_client_method());
	assert_non_null(c.ctx);
	tweak(c.ctx, c.ca);
	assert_int_equal(rsec_tls_ctx_new(&s.o, &s.ctx, err, sizeof(err)), 0);
	c.ssl = SSL_new(c.ctx);
	SSL_set_fd(c.ssl, sv[0]);
	SSL_set_connect_state(c.ssl);
	assert_int_equal(rsec_tls_new(s.ctx, sv[1], &s.o, &s.ssl), 0);
	s.rc = RSEC_E_AGAIN;
	for (int i = 0; i < 100 && s.rc == RSEC_E_AGAIN; i++) {
		bool ww;
		(void)SSL_do_handshake(c.ssl);
		s.rc = rsec_tls_handshake_step(s.ssl, &ww);
	}
	int rc = s.rc;
	done(&c, &s);
	return rc;
}

static void certificates_authenticate_both_ways(void **state)
{
	(void)state;
	struct side c, s;
	certs(&c, false, "main", "main", "client");
	certs(&s, true, "main", "main", "server");
	c.o.peer_name = "10.77.0.1";
	handshake(&c, &s);
	assert_int_equal(c.rc, 0);
	assert_int_equal(s.rc, 0);
	assert_int_equal(SSL_version(c.ssl), TLS1_3_VERSION);
	char id[256];
	assert_int_equal(rsec_tls_peer_identity(s.ssl, id, sizeof(id)), 0);
	assert_string_equal(id, "CN=client1,O=rdmasec-test"); /* no SAN: the DN */
	assert_int_equal(rsec_tls_peer_identity(c.ssl, id, sizeof(id)), 0);
	assert_string_equal(id, "rdmasec-server"); /* its first DNS name */
	/* Records flow, and both ends export the same keying material. */
	assert_int_equal(tls_write_all(c.ssl, "ping", 4, 1000), 0);
	char buf[4];
	assert_int_equal(tls_read_all(s.ssl, buf, 4, 1000), 0);
	assert_memory_equal(buf, "ping", 4);
	uint8_t a[32], b[32];
	assert_int_equal(SSL_export_keying_material(c.ssl, a, 32, "x", 1, NULL, 0, 0), 1);
	assert_int_equal(SSL_export_keying_material(s.ssl, b, 32, "x", 1, NULL, 0, 0), 1);
	assert_memory_equal(a, b, 32);
	/* Sealed grants: both ends derive a grant's key alike, and each grant has its own. */
	uint8_t kc[RSEC_SEALED_KEY_LEN], ks[RSEC_SEALED_KEY_LEN], kother[RSEC_SEALED_KEY_LEN];
	assert_int_equal(rsec_sealed_key(c.ssl, 5, kc), 0);
	assert_int_equal(rsec_sealed_key(s.ssl, 5, ks), 0);
	assert_memory_equal(kc, ks, sizeof(kc));
	assert_int_equal(rsec_sealed_key(s.ssl, 5 | (UINT64_C(1) << 63), kother), 0);
	assert_memory_not_equal(kc, kother, sizeof(kc));
	assert_int_equal(rsec_sealed_key(s.ssl, 6, kother), 0);
	assert_memory_not_equal(kc, kother, sizeof(kc));
	done(&c, &s);
}

static void refused(const char *ca_dir, const char *dir, const char *base, const char *name, bool client_fails)
{
	struct side c, s;
	certs(&c, false, ca_dir, dir, base);
	certs(&s, true, "main", "main", "server");
	c.o.peer_name = name;
	handshake(&c, &s);
	/* The side that checks reports an authentication failure; neither succeeds. */
	assert_int_equal(client_fails ? c.rc : s.rc, RSEC_E_AUTH);
	assert_true(c.rc < 0 || s.rc < 0);
	assert_int_not_equal(s.rc, 0);
	done(&c, &s);
}

/* A peer that has gone makes writes fail; it must not end the process (SIGPIPE's default). */
static void a_vanished_peer_does_not_kill_the_writer(void **state)
{
	(void)state;
	struct side c, s;
	certs(&c, false, "main", "main", "client");
	certs(&s, true, "main", "main", "server");
	handshake(&c, &s);
	assert_int_equal(c.rc, 0);
	assert_int_equal(s.rc, 0);
	assert_true(signal(SIGPIPE, SIG_DFL) != SIG_ERR);
	close(SSL_get_fd(s.ssl)); /* gone, without a word */
	char block[4096] = { 0 };
	int rc = 0;
	for (int i = 0; i < 64 && rc == 0; i++)
		rc = tls_write_all(c.ssl, block, sizeof(block), 1000);
	assert_true(rc < 0);
	sigset_t pending;
	assert_int_equal(sigpending(&pending), 0);
	assert_int_equal(sigismember(&pending, SIGPIPE), 0); /* taken back, not left for the caller */
	(void)!rsec_tls_shutdown(c.ssl); /* writes too */
	SSL_free(s.ssl);
	s.ssl = NULL;
	int fd = SSL_get_fd(c.ssl);
	SSL_free(c.ssl);
	close(fd);
	SSL_CTX_free(c.ctx);
	SSL_CTX_free(s.ctx);
}

static void client_from_another_ca_is_refused(void **state)
{
	(void)state;
	/* The client trusts the main CA but presents other's certificate. */
	refused("main", "other", "client", NULL, false);
}

static void expired_client_is_refused(void **state)
{
	(void)state;
	refused("main", "expired", "client", NULL, false);
}

/* Trusts our CA but has no certificate of its own. */
static void no_certificate(SSL_CTX *ctx, const char *ca)
{
	SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
	SSL_CTX_load_verify_locations(ctx, ca, NULL);
}

static void client_without_certificate_is_refused(void **state)
{
	(void)state;
	assert_int_equal(raw_client_vs_server(no_certificate), RSEC_E_AUTH);
}

static void wrong_server_name_is_refused(void **state)
{
	(void)state;
	refused("main", "main", "client", "10.99.0.1", true);
	refused("main", "main", "client", "evil.example", true);
}

static void server_from_another_ca_is_refused(void **state)
{
	(void)state;
	struct side c, s;
	certs(&c, false, "main", "main", "client");
	certs(&s, true, "other", "other", "server");
	handshake(&c, &s);
	assert_int_equal(c.rc, RSEC_E_AUTH);
	done(&c, &s);
}

static void psk_mode(void **state)
{
	(void)state;
	struct side c, s;
	psk(&c, false, psk_a, "node-a");
	psk(&s, true, psk_a, "node-a");
	handshake(&c, &s);
	assert_int_equal(c.rc, 0);
	assert_int_equal(s.rc, 0);
	char id[64];
	assert_int_equal(rsec_tls_peer_identity(s.ssl, id, sizeof(id)), 0);
	assert_string_equal(id, "psk:node-a");
	done(&c, &s);

	psk(&c, false, psk_b, "node-a"); /* wrong key */
	psk(&s, true, psk_a, "node-a");
	handshake(&c, &s);
	assert_true(c.rc < 0 && s.rc < 0);
	done(&c, &s);

	psk(&c, false, psk_a, "node-b"); /* unknown identity */
	psk(&s, true, psk_a, "node-a");
	handshake(&c, &s);
	assert_true(c.rc < 0 && s.rc < 0);
	done(&c, &s);
}

/* The client reads the server's ticket, which TLS 1.3 sends after the handshake. */
static void take_ticket(struct side *c, struct side *s)
{
	assert_int_equal(tls_write_all(s->ssl, "t", 1, 1000), 0);
	char b;
	assert_int_equal(tls_read_all(c->ssl, &b, 1, 1000), 0);
}

static void resuming_pair(struct side *c, struct side *s, uint32_t client_s, uint32_t server_s)
{
	certs(c, false, "main", "main", "client");
	certs(s, true, "main", "main", "server");
	c->o.peer_name = "10.77.0.1";
	c->o.resume_dest = "10.77.0.1:7471/10.77.0.1";
	c->o.resume_s = client_s;
	s->o.resume_s = server_s;
}

/* A full handshake between a resuming pair, and the client holding the server's ticket. */
static void ticketed(struct side *c, struct side *s, uint32_t client_s, uint32_t server_s)
{
	resuming_pair(c, s, client_s, server_s);
	handshake(c, s);
	assert_int_equal(c->rc, 0);
	assert_int_equal(s->rc, 0);
	take_ticket(c, s);
}

/* Both sides done, certificates exchanged: no resumption. */
static void expect_full(const struct side *c, const struct side *s)
{
	assert_int_equal(c->rc, 0);
	assert_int_equal(s->rc, 0);
	assert_false(rsec_tls_resumed(c->ssl));
	assert_false(rsec_tls_resumed(s->ssl));
}

static void reconnect_resumes_with_both_identities(void **state)
{
	(void)state;
	struct side c, s;
	resuming_pair(&c, &s, 600, 600);
	handshake(&c, &s);
	assert_int_equal(c.rc, 0);
	assert_int_equal(s.rc, 0);
	assert_false(rsec_tls_resumed(c.ssl));
	uint8_t last[32];
	assert_int_equal(SSL_export_keying_material(c.ssl, last, 32, "x", 1, NULL, 0, 0), 1);
	take_ticket(&c, &s);
	for (int round = 0; round < 3; round++) {
		again(&c, &s);
		assert_int_equal(c.rc, 0);
		assert_int_equal(s.rc, 0);
		assert_true(rsec_tls_resumed(c.ssl));
		assert_true(rsec_tls_resumed(s.ssl));
		/* Both still know who the other is, from the ticket. */
		char id[256];
		assert_int_equal(rsec_tls_peer_identity(s.ssl, id, sizeof(id)), 0);
		assert_non_null(strstr(id, "CN=client1"));
		assert_int_equal(rsec_tls_peer_identity(c.ssl, id, sizeof(id)), 0);
		assert_string_equal(id, "rdmasec-server");
		/* psk_dhe_ke: the client sent a key share, and the keys are new. */
		EVP_PKEY *share = NULL;
		assert_int_equal(SSL_get_peer_tmp_key(s.ssl, &share), 1);
		EVP_PKEY_free(share);
		uint8_t a[32], b[32];
		assert_int_equal(SSL_export_keying_material(c.ssl, a, 32, "x", 1, NULL, 0, 0), 1);
		assert_int_equal(SSL_export_keying_material(s.ssl, b, 32, "x", 1, NULL, 0, 0), 1);
		assert_memory_equal(a, b, 32);
		assert_memory_not_equal(a, last, 32);
		memcpy(last, a, 32);
		take_ticket(&c, &s); /* each round's ticket pays for the next */
	}
	/* A ticket is offered once: the client that never reads this round's
	 * ticket has none left for the next. */
	again(&c, &s);
	assert_true(rsec_tls_resumed(c.ssl));
	again(&c, &s);
	assert_int_equal(c.rc, 0);
	assert_int_equal(s.rc, 0);
	assert_false(rsec_tls_resumed(c.ssl));
	done(&c, &s);
}

static void resumption_is_refused_where_it_does_not_belong(void **state)
{
	(void)state;
	struct side c, s;
	/* Another destination name: the ticket is not offered. */
	ticketed(&c, &s, 600, 600);
	c.o.resume_dest = "10.77.0.9:7471/10.77.0.9";
	again(&c, &s);
	expect_full(&c, &s);
	done(&c, &s);

	/* A server without resumption, then a restarted one (new ticket keys):
	 * the offered ticket ends in a full handshake. */
	for (uint32_t server_s = 0; server_s <= 600; server_s += 600) {
		ticketed(&c, &s, 600, 600);
		SSL_CTX *resuming = s.ctx;
		char err[256];
		s.o.resume_s = server_s;
		assert_int_equal(rsec_tls_ctx_new(&s.o, &s.ctx, err, sizeof(err)), 0);
		again(&c, &s);
		expect_full(&c, &s);
		SSL_CTX_free(resuming);
		done(&c, &s);
	}

	/* A client without resumption keeps no ticket. */
	ticketed(&c, &s, 0, 600);
	again(&c, &s);
	expect_full(&c, &s);
	done(&c, &s);

	/* PSK mode never calls itself resumed. */
	psk(&c, false, psk_a, "node-a");
	psk(&s, true, psk_a, "node-a");
	c.o.resume_s = s.o.resume_s = 600;
	handshake(&c, &s);
	assert_int_equal(c.rc, 0);
	assert_false(rsec_tls_resumed(c.ssl));
	assert_false(rsec_tls_resumed(s.ssl));
	done(&c, &s);
}

/* The raw client's newest ticket (OpenSSL hands TLS 1.3 tickets to the new-session callback). */
static SSL_SESSION *raw_last_ticket;

static int raw_keep_ticket(SSL *ssl, SSL_SESSION *sess)
{
	(void)ssl;
	SSL_SESSION_free(raw_last_ticket);
	/* A copy: OpenSSL spoils the connection's own session when it ends without close_notify. */
	raw_last_ticket = SSL_SESSION_dup(sess);
	return 0;
}

/* A plain OpenSSL client with the main client's certificate: unlike ours, it offers any session it is given. */
static SSL_CTX *raw_client_ctx(void)
{
	struct side c;
	certs(&c, false, "main", "main", "client");
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	assert_non_null(ctx);
	assert_int_equal(SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION), 1);
	assert_int_equal(SSL_CTX_load_verify_locations(ctx, c.ca, NULL), 1);
	assert_int_equal(SSL_CTX_use_certificate_chain_file(ctx, c.cert), 1);
	assert_int_equal(SSL_CTX_use_PrivateKey_file(ctx, c.key, SSL_FILETYPE_PEM), 1);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
	SSL_CTX_sess_set_new_cb(ctx, raw_keep_ticket);
	return ctx;
}

/* The raw client, offering sess (or nothing), against our server s; s->rc says how it went. */
static SSL *raw_connect(SSL_CTX *cctx, SSL_SESSION *sess, struct side *s)
{
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	SSL *r = SSL_new(cctx);
	assert_non_null(r);
	assert_int_equal(SSL_set_fd(r, sv[0]), 1);
	SSL_set_connect_state(r);
	if (sess)
		assert_int_equal(SSL_set_session(r, sess), 1);
	assert_int_equal(rsec_tls_new(s->ctx, sv[1], &s->o, &s->ssl), 0);
	s->rc = RSEC_E_AGAIN;
	for (int i = 0; i < 100 && s->rc == RSEC_E_AGAIN; i++) {
		bool ww;
		(void)SSL_do_handshake(r);
		s->rc = rsec_tls_handshake_step(s->ssl, &ww);
	}
	(void)SSL_do_handshake(r); /* the server's last flight */
	return r;
}

/* The session holding the ticket our server sends after the handshake. */
static SSL_SESSION *raw_ticket(SSL *r, struct side *s)
{
	assert_int_equal(tls_write_all(s->ssl, "t", 1, 1000), 0);
	char b;
	int n = 0;
	for (int i = 0; i < 100 && n != 1; i++)
		n = SSL_read(r, &b, 1);
	assert_int_equal(n, 1);
	SSL_SESSION *sess = raw_last_ticket;
	raw_last_ticket = NULL;
	assert_non_null(sess);
	return sess;
}

static void raw_done(SSL *r, struct side *s)
{
	close(SSL_get_fd(r));
	close(SSL_get_fd(s->ssl));
	SSL_free(r);
	SSL_free(s->ssl);
	s->ssl = NULL;
}

/*
 * The server's lifetime (3 s) counts from the certificate check, whatever
 * the client offers: a resumption at 1.6 s works and brings a new ticket,
 * which is refused at 3.2 s although it is only 1.6 s old. The raw client
 * offers it regardless, so only the server's rule can refuse it. Ages are
 * whole seconds (time()): a gap under 2 s is less than 3 for sure, and a
 * sum over 3 s is at least 3.
 */
static void server_lifetime_counts_from_the_certificate_check(void **state)
{
	(void)state;
	struct side s;
	char err[256];
	certs(&s, true, "main", "main", "server");
	s.o.resume_s = 3;
	assert_int_equal(rsec_tls_ctx_new(&s.o, &s.ctx, err, sizeof(err)), 0);
	SSL_CTX *cctx = raw_client_ctx();
	SSL *r = raw_connect(cctx, NULL, &s);
	assert_int_equal(s.rc, 0);
	assert_false(rsec_tls_resumed(s.ssl));
	SSL_SESSION *ticket = raw_ticket(r, &s);
	raw_done(r, &s);

	struct timespec gap = { 1, 600000000 };
	nanosleep(&gap, NULL);
	r = raw_connect(cctx, ticket, &s);
	assert_int_equal(s.rc, 0);
	assert_true(rsec_tls_resumed(s.ssl));
	SSL_SESSION_free(ticket);
	ticket = raw_ticket(r, &s);
	raw_done(r, &s);

	nanosleep(&gap, NULL);
	r = raw_connect(cctx, ticket, &s);
	assert_int_equal(s.rc, 0);
	assert_false(rsec_tls_resumed(s.ssl));
	SSL_SESSION_free(ticket);
	raw_done(r, &s);
	SSL_CTX_free(cctx);
	SSL_CTX_free(s.ctx);
}

/* The client's own lifetime counts from its last check of the server's certificate too. */
static void client_lifetime_counts_from_the_certificate_check(void **state)
{
	(void)state;
	struct side c, s;
	/* A ticket from a full handshake, past the client's 1 s: not even offered. */
	ticketed(&c, &s, 1, 600);
	struct timespec past = { 2, 100000000 };
	nanosleep(&past, NULL);
	again(&c, &s);
	expect_full(&c, &s);
	done(&c, &s);

	/* 3 s: resumed at 1.6 s, whose new ticket is not offered at 3.2 s (1.6 s old). */
	ticketed(&c, &s, 3, 600);
	struct timespec gap = { 1, 600000000 };
	nanosleep(&gap, NULL);
	again(&c, &s);
	assert_true(rsec_tls_resumed(c.ssl));
	take_ticket(&c, &s);
	nanosleep(&gap, NULL);
	again(&c, &s);
	expect_full(&c, &s);
	done(&c, &s);
}

static void tls12_only(SSL_CTX *ctx, const char *ca)
{
	(void)ca;
	SSL_CTX_set_max_proto_version(ctx, TLS1_2_VERSION);
}

static void tls12_peer_is_refused(void **state)
{
	(void)state;
	assert_true(raw_client_vs_server(tls12_only) < 0);
}

static void bad_credentials_are_named(void **state)
{
	(void)state;
	struct side s;
	certs(&s, true, "main", "main", "server");
	s.o.cert_file = "/nonexistent/server.pem";
	char err[256] = "";
	assert_int_equal(rsec_tls_ctx_new(&s.o, &s.ctx, err, sizeof(err)), RSEC_E_CONFIG);
	assert_non_null(strstr(err, "/nonexistent/server.pem"));
	struct side p;
	psk(&p, true, psk_a, "node-a");
	p.o.psk_len = 16;
	assert_int_equal(rsec_tls_ctx_new(&p.o, &p.ctx, err, sizeof(err)), RSEC_E_CONFIG);
}

static void pki_files_and_modes(void **state)
{
	(void)state;
	char f[512];
	struct stat st;
	path(f, "main", "client.key");
	assert_int_equal(stat(f, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	path(f, "main", "ca.key");
	assert_int_equal(stat(f, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	char err[256];
	char dir[512];
	snprintf(dir, sizeof(dir), "%s/main", root);
	struct rsec_pki_opts o = { .dir = dir, .clients = RSEC_PKI_MAX_CLIENTS + 1 };
	assert_int_equal(rsec_pki_generate(&o, err, sizeof(err)), RSEC_E_RANGE);
	snprintf(f, sizeof(f), "%s/psk", root);
	assert_int_equal(rsec_pki_write_psk(f, err, sizeof(err)), 0);
	assert_int_equal(stat(f, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(st.st_size, 65);
	assert_int_equal(rsec_pki_write_psk(f, err, sizeof(err)), RSEC_E_IO); /* never overwrites */
}

/* ---- identity: URI SAN, then DNS SAN, then the DN; bounded ---- */

/* A self-signed certificate with subject CN=cn (NULL: empty) and the given SANs (type, bytes, length). */
struct san {
	int type;
	const char *data;
	int len; /* -1: strlen */
};

static X509 *cert_with(const char *cn, const struct san *sans, size_t n)
{
	EVP_PKEY *key = EVP_EC_gen("P-256");
	X509 *x = X509_new();
	assert_non_null(key);
	assert_non_null(x);
	assert_int_equal(X509_set_version(x, X509_VERSION_3), 1);
	if (cn)
		assert_int_equal(X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_UTF8,
							    (const unsigned char *)cn, -1, -1, 0), 1);
	assert_non_null(X509_gmtime_adj(X509_getm_notBefore(x), 0));
	assert_non_null(X509_gmtime_adj(X509_getm_notAfter(x), 3600));
	assert_int_equal(X509_set_pubkey(x, key), 1);
	if (n) {
		GENERAL_NAMES *names = sk_GENERAL_NAME_new_null();
		for (size_t i = 0; i < n; i++) {
			ASN1_IA5STRING *s = ASN1_IA5STRING_new();
			assert_int_equal(ASN1_STRING_set(s, sans[i].data, sans[i].len), 1);
			GENERAL_NAME *g = GENERAL_NAME_new();
			GENERAL_NAME_set0_value(g, sans[i].type, s);
			assert_true(sk_GENERAL_NAME_push(names, g) > 0);
		}
		assert_int_equal(X509_add1_ext_i2d(x, NID_subject_alt_name, names, 0, 0), 1);
		GENERAL_NAMES_free(names);
	}
	assert_true(X509_sign(x, key, EVP_sha256()) > 0);
	EVP_PKEY_free(key);
	return x;
}

/* rsec_tls_cert_identity of such a certificate: its result, the identity in out. */
static int identity_of(const char *cn, const struct san *sans, size_t n, char *out, size_t cap)
{
	X509 *x = cert_with(cn, sans, n);
	const char *why = NULL;
	int rc = rsec_tls_cert_identity(x, out, cap, &why);
	assert_true(rc == 0 ? why == NULL : why != NULL);
	X509_free(x);
	return rc;
}

static void identity_prefers_uri_then_dns_then_dn(void **state)
{
	(void)state;
	char id[RSEC_TLS_IDENTITY_MAX];
	const struct san all[] = { { GEN_DNS, "a.example.org", -1 }, { GEN_URI, "spiffe://example.org/a", -1 },
				   { GEN_DNS, "b.example.org", -1 }, { GEN_URI, "spiffe://example.org/b", -1 } };
	assert_int_equal(identity_of("node", all, 4, id, sizeof(id)), 0);
	assert_string_equal(id, "spiffe://example.org/a");
	assert_int_equal(identity_of("node", all, 1, id, sizeof(id)), 0);
	assert_string_equal(id, "a.example.org");
	const struct san ip[] = { { GEN_IPADD, "\x0a\x4d\x00\x01", 4 } };
	assert_int_equal(identity_of("node", ip, 1, id, sizeof(id)), 0);
	assert_string_equal(id, "CN=node"); /* an address names no identity */
	assert_int_equal(identity_of("node", NULL, 0, id, sizeof(id)), 0);
	assert_string_equal(id, "CN=node");
	assert_int_equal(identity_of(NULL, all + 1, 1, id, sizeof(id)), 0);
	assert_string_equal(id, "spiffe://example.org/a");
}

static void identity_is_refused_not_cut(void **state)
{
	(void)state;
	char id[RSEC_TLS_IDENTITY_MAX], longest[RSEC_TLS_IDENTITY_MAX + 1];
	memset(longest, 'a', sizeof(longest));
	memcpy(longest, "spiffe://", 9);
	/* 255 bytes fit, 256 do not: refused, never truncated. */
	struct san uri = { GEN_URI, longest, RSEC_TLS_IDENTITY_MAX - 1 };
	assert_int_equal(identity_of("node", &uri, 1, id, sizeof(id)), 0);
	assert_int_equal(strlen(id), RSEC_TLS_IDENTITY_MAX - 1);
	uri.len = RSEC_TLS_IDENTITY_MAX;
	assert_int_equal(identity_of("node", &uri, 1, id, sizeof(id)), RSEC_E_RANGE);
	assert_string_equal(id, "");
	/* A subject name too long to print within the limit. */
	X509 *x = cert_with("node", NULL, 0);
	char ou[61];
	memset(ou, 'o', sizeof(ou) - 1);
	ou[sizeof(ou) - 1] = '\0';
	for (int i = 0; i < 5; i++) /* 5 x "OU=<60 bytes>," */
		assert_int_equal(X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "OU", MBSTRING_UTF8,
							    (const unsigned char *)ou, -1, -1, 0), 1);
	assert_int_equal(rsec_tls_cert_identity(x, id, sizeof(id), NULL), RSEC_E_RANGE);
	X509_free(x);
	/* A NUL, a control character, a space, a byte beyond ASCII, nothing: refused,
	 * in any URI or DNS name, even one that would not be the identity. */
	const struct san bad[] = { { GEN_URI, "spiffe://example.org/a\0.evil", 28 }, { GEN_URI, "spiffe://x/\x1b[2J", -1 },
				   { GEN_DNS, "a b", -1 }, { GEN_DNS, "caf\xc3\xa9", -1 }, { GEN_URI, "", 0 },
				   { GEN_DNS, "x\x7f", -1 } };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(identity_of("node", &bad[i], 1, id, sizeof(id)), RSEC_E_AUTH);
		const struct san pair[] = { { GEN_URI, "spiffe://example.org/ok", -1 }, bad[i] };
		assert_int_equal(identity_of("node", pair, 2, id, sizeof(id)), RSEC_E_AUTH);
	}
}

static void san_only_client_authenticates_under_its_uri(void **state)
{
	(void)state;
	struct side c, s;
	certs(&c, false, "main", "main", "spiffe");
	certs(&s, true, "main", "main", "server");
	c.o.peer_name = "rdmasec-server";
	handshake(&c, &s);
	assert_int_equal(c.rc, 0);
	assert_int_equal(s.rc, 0);
	char id[RSEC_TLS_IDENTITY_MAX];
	assert_int_equal(rsec_tls_peer_identity(s.ssl, id, sizeof(id)), 0);
	assert_string_equal(id, "spiffe://example.org/ns/app/sa/one");
	done(&c, &s);
}

/* A client certificate of main's CA whose only URI SAN holds an escape sequence. */
static void write_bad_san_client(void)
{
	char f[512];
	path(f, "main", "ca.pem");
	FILE *in = fopen(f, "r");
	assert_non_null(in);
	X509 *ca = PEM_read_X509(in, NULL, NULL, NULL);
	fclose(in);
	path(f, "main", "ca.key");
	in = fopen(f, "r");
	assert_non_null(in);
	EVP_PKEY *ca_key = PEM_read_PrivateKey(in, NULL, NULL, NULL);
	fclose(in);
	const struct san uri = { GEN_URI, "spiffe://example.org/\x1b[2Jadmin", -1 };
	X509 *x = cert_with("bad", &uri, 1);
	EVP_PKEY *key = EVP_EC_gen("P-256");
	assert_int_equal(X509_set_pubkey(x, key), 1);
	assert_int_equal(X509_set_issuer_name(x, X509_get_subject_name(ca)), 1);
	assert_true(X509_sign(x, ca_key, EVP_sha256()) > 0);
	path(f, "main", "badsan.pem");
	FILE *out = fopen(f, "w");
	assert_int_equal(PEM_write_X509(out, x), 1);
	assert_int_equal(fclose(out), 0);
	path(f, "main", "badsan.key");
	out = fopen(f, "w");
	assert_int_equal(PEM_write_PrivateKey(out, key, NULL, NULL, 0, NULL, NULL), 1);
	assert_int_equal(fclose(out), 0);
	X509_free(x);
	X509_free(ca);
	EVP_PKEY_free(key);
	EVP_PKEY_free(ca_key);
}

static void control_characters_in_a_san_are_refused_at_handshake(void **state)
{
	(void)state;
	write_bad_san_client();
	struct side c, s;
	certs(&c, false, "main", "main", "badsan");
	certs(&s, true, "main", "main", "server");
	handshake(&c, &s);
	assert_int_equal(s.rc, RSEC_E_AUTH); /* the client, done first in TLS 1.3, hears of it later */
	char why[256];
	rsec_tls_last_error(s.ssl, why, sizeof(why));
	assert_non_null(strstr(why, "control"));
	done(&c, &s);
}

/* ---- revocation ---- */

static void crl_side(struct side *x, bool server, const char *base, char *crl)
{
	certs(x, server, "crl", "crl", base);
	path(crl, "crl", "crl.pem");
	x->o.crl_file = crl;
}

static void crl_revoke(const char *name)
{
	char dir[512], err[256];
	snprintf(dir, sizeof(dir), "%s/crl", root);
	assert_int_equal(rsec_pki_write_crl(dir, name, 0, err, sizeof(err)), 0);
}

static void revoked_client_is_refused_at_handshake(void **state)
{
	(void)state;
	struct side c, s;
	char crl[512];
	crl_revoke("client2");
	crl_side(&c, false, "client", crl);
	crl_side(&s, true, "server", crl);
	c.o.peer_name = "rdmasec-server";
	handshake(&c, &s); /* both check the other's chain against the CRL */
	assert_int_equal(c.rc, 0);
	assert_int_equal(s.rc, 0);
	SSL_free(c.ssl);
	c.ssl = NULL;
	SSL_CTX_free(c.ctx);
	crl_side(&c, false, "client2", crl);
	char err[256], why[256];
	assert_int_equal(rsec_tls_ctx_new(&c.o, &c.ctx, err, sizeof(err)), 0);
	close(SSL_get_fd(s.ssl));
	SSL_free(s.ssl);
	connect_pair(&c, &s);
	assert_int_equal(s.rc, RSEC_E_AUTH);
	rsec_tls_last_error(s.ssl, why, sizeof(why));
	assert_string_equal(why, "certificate: certificate revoked");
	done(&c, &s);
	/* The client checks the server's certificate against its CRL too. */
	crl_revoke("server");
	crl_side(&c, false, "client", crl);
	crl_side(&s, true, "server", crl);
	s.o.crl_file = NULL;
	handshake(&c, &s);
	assert_int_equal(c.rc, RSEC_E_AUTH);
	rsec_tls_last_error(c.ssl, why, sizeof(why));
	assert_non_null(strstr(why, "revoked"));
	done(&c, &s);
}

/* What rsec_ctx_reload does to a server's TLS context: a new one from the same files, the tickets kept. */
static void reload(struct side *s)
{
	char err[256];
	SSL_CTX *fresh = NULL;
	assert_int_equal(rsec_tls_ctx_new(&s->o, &fresh, err, sizeof(err)), 0);
	rsec_tls_keep_tickets(s->ctx, fresh);
	SSL_CTX_free(s->ctx); /* s->ssl keeps its own reference */
	s->ctx = fresh;
}

/*
 * A context reads its CRL once: a revocation written later changes nothing
 * for it (no handshake reads a file), and the established connection is
 * found out by rsec_tls_peer_recheck against a context made since.
 */
static void established_peer_is_found_revoked_after_reload(void **state)
{
	(void)state;
	struct side c, s;
	char crl[512];
	const char *why = NULL;
	crl_side(&c, false, "client3", crl);
	crl_side(&s, true, "server", crl);
	c.o.crl_file = NULL;
	handshake(&c, &s);
	assert_int_equal(s.rc, 0);
	assert_int_equal(rsec_tls_peer_recheck(s.ctx, s.ssl, &why), 0);
	crl_revoke("client3");
	assert_int_equal(rsec_tls_peer_recheck(s.ctx, s.ssl, &why), 0);
	again(&c, &s);
	assert_int_equal(s.rc, 0); /* the old context's CRL: admitted */
	reload(&s);
	assert_int_equal(rsec_tls_peer_recheck(s.ctx, s.ssl, &why), RSEC_E_AUTH);
	assert_string_equal(why, "certificate revoked");
	again(&c, &s);
	assert_int_equal(s.rc, RSEC_E_AUTH);
	done(&c, &s);
	/* A peer nobody revoked stays good under the new CRL. */
	crl_side(&c, false, "client4", crl);
	crl_side(&s, true, "server", crl);
	c.o.crl_file = NULL;
	handshake(&c, &s);
	assert_int_equal(s.rc, 0);
	assert_int_equal(rsec_tls_peer_recheck(s.ctx, s.ssl, &why), 0);
	assert_null(why);
	done(&c, &s);
}

static void resumption_is_refused_after_revocation(void **state)
{
	(void)state;
	struct side c, s;
	char crl[512];
	crl_side(&c, false, "client", crl);
	crl_side(&s, true, "server", crl);
	c.o.crl_file = NULL;
	c.o.peer_name = "10.77.0.1";
	c.o.resume_dest = "10.77.0.1:7471/10.77.0.1";
	c.o.resume_s = s.o.resume_s = 600;
	handshake(&c, &s);
	assert_int_equal(s.rc, 0);
	take_ticket(&c, &s);
	again(&c, &s);
	assert_int_equal(s.rc, 0);
	assert_true(rsec_tls_resumed(s.ssl));
	take_ticket(&c, &s);
	/* Revoked while the server runs, which reloads (rsec_ctx_reload's steps):
	 * the ticket, sealed under the keys carried over, is read, but no longer
	 * resumes, and the full handshake it falls back to refuses the certificate. */
	crl_revoke("client");
	reload(&s);
	again(&c, &s);
	assert_int_equal(s.rc, RSEC_E_AUTH);
	char why[256];
	rsec_tls_last_error(s.ssl, why, sizeof(why));
	assert_string_equal(why, "certificate: certificate revoked (resumption ticket declined: its certificate is revoked)");
	done(&c, &s);
}

static void unusable_crl_is_named(void **state)
{
	(void)state;
	struct side s;
	char crl[512], err[256] = "";
	crl_side(&s, true, "server", crl);
	path(crl, "main", "ca.pem"); /* a certificate, no CRL */
	assert_int_equal(rsec_tls_ctx_new(&s.o, &s.ctx, err, sizeof(err)), RSEC_E_CONFIG);
	assert_non_null(strstr(err, "no CRL in it"));
	path(crl, "crl", "crl.pem"); /* signed by a CA this server does not trust */
	certs(&s, true, "main", "main", "server");
	s.o.crl_file = crl;
	assert_int_equal(rsec_tls_ctx_new(&s.o, &s.ctx, err, sizeof(err)), RSEC_E_CONFIG);
	assert_non_null(strstr(err, "not signed by one of the trusted CAs"));
	s.o.crl_file = "/nonexistent/crl.pem";
	assert_int_equal(rsec_tls_ctx_new(&s.o, &s.ctx, err, sizeof(err)), RSEC_E_CONFIG);
	assert_non_null(strstr(err, "/nonexistent/crl.pem"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(certificates_authenticate_both_ways),
		cmocka_unit_test(a_vanished_peer_does_not_kill_the_writer),
		cmocka_unit_test(client_from_another_ca_is_refused),
		cmocka_unit_test(expired_client_is_refused),
		cmocka_unit_test(client_without_certificate_is_refused),
		cmocka_unit_test(wrong_server_name_is_refused),
		cmocka_unit_test(server_from_another_ca_is_refused),
		cmocka_unit_test(psk_mode),
		cmocka_unit_test(reconnect_resumes_with_both_identities),
		cmocka_unit_test(resumption_is_refused_where_it_does_not_belong),
		cmocka_unit_test(server_lifetime_counts_from_the_certificate_check),
		cmocka_unit_test(client_lifetime_counts_from_the_certificate_check),
		cmocka_unit_test(tls12_peer_is_refused),
		cmocka_unit_test(bad_credentials_are_named),
		cmocka_unit_test(pki_files_and_modes),
		cmocka_unit_test(identity_prefers_uri_then_dns_then_dn),
		cmocka_unit_test(identity_is_refused_not_cut),
		cmocka_unit_test(san_only_client_authenticates_under_its_uri),
		cmocka_unit_test(control_characters_in_a_san_are_refused_at_handshake),
		cmocka_unit_test(revoked_client_is_refused_at_handshake),
		cmocka_unit_test(resumption_is_refused_after_revocation),
		cmocka_unit_test(established_peer_is_found_revoked_after_reload),
		cmocka_unit_test(unusable_crl_is_named),
	};
	return cmocka_run_group_tests(tests, setup_pki, teardown_pki);
}
