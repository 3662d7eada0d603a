/* SPDX-License-Identifier: MIT */
/*
 * rsec_ctx_reload, rsec_ctx_cert_expiry and rsec_conn_check_peer (lib/session/ctx.c)
 * without a device: a server context in certificate mode with a CRL and an audit
 * log, one connection established over a socketpair (TLS 1.3, the client's side
 * driven here), then the files replaced as an operator rotating them would.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include <openssl/x509.h>

#include "conn.h"
#include "pki.h"
#include "tls.h"

static char root[64];

static void file_in(char *out, const char *dir, const char *name)
{
	snprintf(out, 512, "%s/%s/%s", root, dir, name);
}

struct fixture {
	char ca[512], cert[512], key[512], crl[512], audit[512];
	struct rsec_ctx *ctx;
	SSL_CTX *cctx; /* the client's */
	SSL *client;
	int fds[2];
	struct rsec_conn *conn; /* the server's: owns its SSL and socket */
};

static int setup(void **state)
{
	snprintf(root, sizeof(root), "/tmp/rsec-reload-XXXXXX");
	assert_non_null(mkdtemp(root));
	char dir[512], err[256];
	snprintf(dir, sizeof(dir), "%s/pki", root);
	struct rsec_pki_opts o = { .dir = dir, .clients = 2 };
	assert_int_equal(rsec_pki_generate(&o, err, sizeof(err)), 0);
	assert_int_equal(rsec_pki_write_crl(dir, NULL, 0, err, sizeof(err)), 0);
	/* The next server certificate, from the same CA, valid for 30 days. */
	snprintf(dir, sizeof(dir), "%s/next", root);
	char cmd[1200];
	snprintf(cmd, sizeof(cmd), "mkdir -p %s && cp %s/pki/ca.pem %s/pki/ca.key %s/", dir, root, root, dir);
	assert_int_equal(system(cmd), 0);
	o = (struct rsec_pki_opts){ .dir = dir, .reuse_ca = true, .days = 30 };
	assert_int_equal(rsec_pki_generate(&o, err, sizeof(err)), 0);

	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	file_in(f->ca, "pki", "ca.pem");
	file_in(f->cert, "pki", "server.pem");
	file_in(f->key, "pki", "server.key");
	file_in(f->crl, "pki", "crl.pem");
	file_in(f->audit, "", "audit.jsonl");
	struct rsec_ctx_attr a = { .is_server = 1, .ca_file = f->ca, .cert_file = f->cert, .key_file = f->key,
				   .comp_mask = RSEC_CTX_ATTR_CRL | RSEC_CTX_ATTR_AUDIT, .crl_file = f->crl,
				   .audit_path = f->audit };
	assert_int_equal(rsec_ctx_new(&a, &f->ctx, err, sizeof(err)), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	rsec_conn_free(f->conn);
	SSL_free(f->client);
	SSL_CTX_free(f->cctx);
	if (f->fds[0] > 0)
		close(f->fds[0]);
	rsec_ctx_free(f->ctx);
	free(f);
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	return system(cmd) == 0 ? 0 : -1;
}

/* A client named base handshakes with the context's current credentials; the server's result. */
static int connect_client(struct fixture *f, const char *base, SSL_CTX **cctx, SSL **client, int fds[2],
			  struct rsec_conn **conn)
{
	char cert[512], key[512], name[64], err[256];
	snprintf(name, sizeof(name), "%s.pem", base);
	file_in(cert, "pki", name);
	snprintf(name, sizeof(name), "%s.key", base);
	file_in(key, "pki", name);
	struct rsec_tls_opts co = { .ca_file = f->ca, .cert_file = cert, .key_file = key, .peer_name = "rdmasec-server" };
	assert_int_equal(rsec_tls_ctx_new(&co, cctx, err, sizeof(err)), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds), 0);
	assert_int_equal(rsec_tls_new(*cctx, fds[0], &co, client), 0);
	*conn = rsec_conn_alloc(f->ctx, fds[1]);
	assert_non_null(*conn);
	(*conn)->path.chan->sock = fds[1];
	assert_int_equal(rsec_ctx_tls_new(f->ctx, fds[1], &f->ctx->tls_opts, &(*conn)->path.chan->ssl), 0);
	int rc = RSEC_E_AGAIN, rs = RSEC_E_AGAIN;
	for (int i = 0; i < 100 && (rc == RSEC_E_AGAIN || rs == RSEC_E_AGAIN); i++) {
		bool ww;
		if (rc == RSEC_E_AGAIN)
			rc = rsec_tls_handshake_step(*client, &ww);
		if (rs == RSEC_E_AGAIN)
			rs = rsec_tls_handshake_step((*conn)->path.chan->ssl, &ww);
	}
	if (rs == 0) {
		(*conn)->path.phase = PHASE_ESTABLISHED;
		assert_int_equal(rsec_tls_peer_identity((*conn)->path.chan->ssl, (*conn)->peer, sizeof((*conn)->peer)), 0);
	}
	return rs;
}

/* Days from now until the certificate the client saw expires. */
static long peer_days_left(SSL *client)
{
	struct tm tm;
	assert_int_equal(ASN1_TIME_to_tm(X509_get0_notAfter(SSL_get0_peer_certificate(client)), &tm), 1);
	return (long)((timegm(&tm) - time(NULL)) / 86400);
}

static long ctx_days_left(struct rsec_ctx *ctx)
{
	int64_t until = 0;
	assert_int_equal(rsec_ctx_cert_expiry(ctx, &until), 0);
	return (long)((until - (int64_t)time(NULL)) / 86400);
}

/* Whether the audit log has a line holding all of the strings (NULL-terminated). */
static bool audited(const struct fixture *f, ...)
{
	FILE *in = fopen(f->audit, "r");
	assert_non_null(in);
	char line[2048];
	bool found = false;
	while (!found && fgets(line, sizeof(line), in)) {
		va_list ap;
		va_start(ap, f);
		found = true;
		for (const char *s; (s = va_arg(ap, const char *));)
			found = found && strstr(line, s);
		va_end(ap);
	}
	fclose(in);
	return found;
}

/* The established connection still carries data both ways. */
static void still_talks(struct fixture *f)
{
	char buf[8] = "";
	size_t done = 0;
	assert_int_equal(rsec_tls_write_some(f->client, "ping", 4, &done), 0);
	assert_int_equal(done, 4);
	int rc = RSEC_E_AGAIN;
	for (int i = 0; i < 100 && rc == RSEC_E_AGAIN; i++)
		rc = rsec_tls_read_some(f->conn->path.chan->ssl, buf, 4, &done);
	assert_int_equal(rc, 0);
	assert_memory_equal(buf, "ping", 4);
}

static void rename_into_pki(const char *from_dir, const char *name)
{
	char from[512], to[512];
	file_in(from, from_dir, name);
	file_in(to, "pki", name);
	assert_int_equal(rename(from, to), 0);
}

/*
 * A bad certificate: the reload fails naming the file, is audited, and
 * changes nothing. Then a good one and a revoked client: new handshakes get
 * the new certificate, the established connection goes on, and
 * rsec_conn_check_peer finds its peer revoked.
 */
static void reload_is_atomic_then_rotates(void **state)
{
	struct fixture *f = *state;
	char err[512] = "", why[128] = "";
	assert_int_equal(connect_client(f, "client", &f->cctx, &f->client, f->fds, &f->conn), 0);
	assert_true(ctx_days_left(f->ctx) >= 364);
	assert_int_equal(rsec_conn_check_peer(f->conn, why, sizeof(why)), 0);

	FILE *bad = fopen(f->cert, "w");
	assert_non_null(bad);
	fputs("-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n", bad);
	fclose(bad);
	char dir[512];
	snprintf(dir, sizeof(dir), "%s/pki", root);
	assert_int_equal(rsec_pki_write_crl(dir, "client", 0, err, sizeof(err)), 0);
	assert_int_equal(rsec_ctx_reload(f->ctx, err, sizeof(err)), RSEC_E_CONFIG);
	assert_non_null(strstr(err, f->cert));
	assert_true(audited(f, "\"event\":\"reload\"", "\"result\":\"failed\"", "cannot load certificate", NULL));
	/* Nothing changed: the old certificate, the old CRL. */
	assert_true(ctx_days_left(f->ctx) >= 364);
	assert_int_equal(rsec_conn_check_peer(f->conn, why, sizeof(why)), 0);
	still_talks(f);

	rename_into_pki("next", "server.pem");
	rename_into_pki("next", "server.key");
	assert_int_equal(rsec_ctx_reload(f->ctx, err, sizeof(err)), 0);
	assert_true(audited(f, "\"event\":\"reload\"", "\"result\":\"ok\"", "identity=rdmasec-server serial=", NULL));
	long days = ctx_days_left(f->ctx);
	assert_true(days >= 29 && days <= 30);
	still_talks(f); /* established: its TLS session is the old context's */
	assert_int_equal(rsec_conn_check_peer(f->conn, why, sizeof(why)), RSEC_E_AUTH);
	assert_string_equal(why, "certificate revoked");
	assert_true(audited(f, "\"event\":\"peer_revoked\"", "CN=client1,O=rdmasec-test", "certificate revoked", NULL));

	/* A new handshake: the new certificate; the revoked client is refused, another admitted. */
	SSL_CTX *cctx = NULL;
	SSL *client = NULL;
	int fds[2];
	struct rsec_conn *conn = NULL;
	assert_int_equal(connect_client(f, "client2", &cctx, &client, fds, &conn), 0);
	days = peer_days_left(client);
	assert_true(days >= 29 && days <= 30);
	assert_int_equal(rsec_conn_check_peer(conn, why, sizeof(why)), 0);
	rsec_conn_free(conn);
	SSL_free(client);
	SSL_CTX_free(cctx);
	close(fds[0]);
	assert_int_equal(connect_client(f, "client", &cctx, &client, fds, &conn), RSEC_E_AUTH);
	rsec_conn_free(conn);
	SSL_free(client);
	SSL_CTX_free(cctx);
	close(fds[0]);
}

/*
 * Allow rules replaced under an established connection: while they still name its peer it stays good; once they
 * do not, rsec_conn_check_peer finds it no longer allowed and audits it, as for a revoked certificate.
 */
static void withdrawn_allow_rule_closes(void **state)
{
	struct fixture *f = *state;
	char err[256] = "", why[128] = "";
	static const char *const both[] = { "CN=client1,O=rdmasec-test", "CN=client2,O=rdmasec-test" };
	static const char *const other[] = { "CN=client2,O=rdmasec-test" };
	assert_int_equal(rsec_ctx_set_allow(f->ctx, both, 2, err, sizeof(err)), 0);
	assert_int_equal(connect_client(f, "client", &f->cctx, &f->client, f->fds, &f->conn), 0);
	assert_int_equal(rsec_conn_check_peer(f->conn, why, sizeof(why)), 0);
	assert_int_equal(rsec_ctx_set_allow(f->ctx, other, 1, err, sizeof(err)), 0);
	assert_int_equal(rsec_conn_check_peer(f->conn, why, sizeof(why)), RSEC_E_AUTH);
	assert_string_equal(why, "no longer allowed (1 allow rule: CN=client2,O=rdmasec-test)");
	assert_true(audited(f, "\"event\":\"peer_revoked\"", "CN=client1,O=rdmasec-test", "no longer allowed", NULL));
	/* No rules: everyone authenticated may connect again. */
	assert_int_equal(rsec_ctx_set_allow(f->ctx, NULL, 0, err, sizeof(err)), 0);
	assert_int_equal(rsec_conn_check_peer(f->conn, why, sizeof(why)), 0);
}

/* A PSK context has no files: its reload is refused and says so. */
static void psk_context_has_nothing_to_reload(void **state)
{
	(void)state;
	static const uint8_t psk[32] = { 7 };
	struct rsec_ctx *ctx = NULL;
	char err[256] = "";
	struct rsec_ctx_attr a = { .is_server = 1, .psk = psk, .psk_len = sizeof(psk), .psk_identity = "node" };
	assert_int_equal(rsec_ctx_new(&a, &ctx, err, sizeof(err)), 0);
	assert_int_equal(rsec_ctx_reload(ctx, err, sizeof(err)), RSEC_E_CONFIG);
	assert_non_null(strstr(err, "PSK"));
	int64_t until;
	assert_int_equal(rsec_ctx_cert_expiry(ctx, &until), RSEC_E_CONFIG);
	assert_int_equal(rsec_ctx_reload(NULL, err, sizeof(err)), RSEC_E_INVAL);
	rsec_ctx_free(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(reload_is_atomic_then_rotates, setup, teardown),
		cmocka_unit_test_setup_teardown(withdrawn_allow_rule_closes, setup, teardown),
		cmocka_unit_test(psk_context_has_nothing_to_reload),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
