/* SPDX-License-Identifier: MIT */
/*
 * The control channel's TLS: version 1.3 only, both peers authenticated,
 * either by X.509 certificates (chain and name verified) or by an external
 * pre-shared key with (EC)DHE for forward secrecy. Certificate mode may
 * resume sessions from tickets (tls_resume.c); PSK mode never does.
 * Handshakes are driven step by step so a server can run many on
 * non-blocking sockets.
 * Certificates (identity, CRLs) are in tls_cert.c.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "tls.h"
#include "tls_cert.h"
#include "tls_resume.h"

#define TLS_CIPHERS "TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256"
/* TLS 1.3 external PSKs are bound to one hash; this suite fixes it to SHA-384. */
#define TLS_PSK_CIPHER "TLS_AES_256_GCM_SHA384"

/* The PSK and its identity live in the SSL_CTX's ex_data, as a copy we wipe. */
struct tls_psk {
	uint8_t key[64];
	size_t key_len;
	char identity[128];
};

static int psk_index = -1;

static void psk_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl, void *argp)
{
	(void)parent, (void)ad, (void)idx, (void)argl, (void)argp;
	if (ptr) {
		OPENSSL_cleanse(ptr, sizeof(struct tls_psk));
		OPENSSL_free(ptr);
	}
}

static void set_err(char *err, size_t errlen, const char *what, const char *path)
{
	if (!err || !errlen)
		return;
	unsigned long e = ERR_peek_last_error();
	char why[160] = "";
	if (e)
		ERR_error_string_n(e, why, sizeof(why));
	snprintf(err, errlen, "%s%s%s%s%s", what, path ? " " : "", path ? path : "", e ? ": " : "", why);
	ERR_clear_error();
}

static const struct tls_psk *ctx_psk(const SSL *ssl)
{
	return psk_index < 0 ? NULL : SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), psk_index);
}

bool rsec_tls_psk_mode(const SSL *ssl)
{
	return ctx_psk(ssl) != NULL;
}

static SSL_SESSION *psk_session(const SSL *ssl, const struct tls_psk *psk)
{
	const SSL_CIPHER *cipher = SSL_CIPHER_find((SSL *)ssl, (const unsigned char[]){ 0x13, 0x02 });
	SSL_SESSION *sess = SSL_SESSION_new();
	if (!cipher || !sess || !SSL_SESSION_set1_master_key(sess, psk->key, psk->key_len) ||
	    !SSL_SESSION_set_cipher(sess, cipher) || !SSL_SESSION_set_protocol_version(sess, TLS1_3_VERSION)) {
		SSL_SESSION_free(sess);
		return NULL;
	}
	return sess;
}

static int psk_use_cb(SSL *ssl, const EVP_MD *md, const unsigned char **id, size_t *idlen, SSL_SESSION **sess)
{
	(void)md;
	const struct tls_psk *psk = ctx_psk(ssl);
	*sess = psk ? psk_session(ssl, psk) : NULL;
	if (!*sess)
		return 0;
	*id = (const unsigned char *)psk->identity;
	*idlen = strlen(psk->identity);
	return 1;
}

static int psk_find_cb(SSL *ssl, const unsigned char *id, size_t idlen, SSL_SESSION **sess)
{
	const struct tls_psk *psk = ctx_psk(ssl);
	*sess = NULL;
	if (!psk)
		return 0;
	size_t want = strlen(psk->identity);
	/* Same length, then a constant-time compare: an unknown identity just
	 * gets no session, and the handshake fails. */
	if (idlen != want || CRYPTO_memcmp(id, psk->identity, want) != 0)
		return 1;
	*sess = psk_session(ssl, psk);
	return *sess ? 1 : 0;
}

static RSEC_MUST_CHECK int setup_psk(SSL_CTX *ctx, const struct rsec_tls_opts *o, char *err, size_t errlen)
{
	if (o->psk_len < 32 || o->psk_len > 64 || !o->psk_identity || !*o->psk_identity ||
	    strlen(o->psk_identity) >= sizeof(((struct tls_psk *)0)->identity)) {
		set_err(err, errlen, "PSK mode needs a 32..64 byte key and an identity of 1..127 bytes", NULL);
		return RSEC_E_CONFIG;
	}
	if (psk_index < 0)
		psk_index = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, psk_free);
	struct tls_psk *psk = OPENSSL_zalloc(sizeof(*psk));
	if (psk_index < 0 || !psk || !SSL_CTX_set_ex_data(ctx, psk_index, psk)) {
		OPENSSL_free(psk);
		return RSEC_E_NOMEM;
	}
	memcpy(psk->key, o->psk, o->psk_len);
	psk->key_len = o->psk_len;
	snprintf(psk->identity, sizeof(psk->identity), "%s", o->psk_identity);
	if (!SSL_CTX_set_ciphersuites(ctx, TLS_PSK_CIPHER)) {
		set_err(err, errlen, "cannot set the PSK cipher suite", NULL);
		return RSEC_E_TLS;
	}
	if (o->is_server)
		SSL_CTX_set_psk_find_session_callback(ctx, psk_find_cb);
	else
		SSL_CTX_set_psk_use_session_callback(ctx, psk_use_cb);
	/* No certificates: the PSK authenticates both sides. */
	SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
	return 0;
}

/* ---- why a peer was refused, where OpenSSL has no words for it ---- */

static CRYPTO_ONCE note_once = CRYPTO_ONCE_STATIC_INIT;
static int note_index = -1;

static void make_note_index(void)
{
	note_index = SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL);
}

void rsec_tls_note(SSL *ssl, const char *why)
{
	if (ssl && CRYPTO_THREAD_run_once(&note_once, make_note_index) && note_index >= 0)
		(void)SSL_set_ex_data(ssl, note_index, (void *)(uintptr_t)why);
}

static const char *tls_note(SSL *ssl)
{
	if (!ssl || !CRYPTO_THREAD_run_once(&note_once, make_note_index) || note_index < 0)
		return NULL;
	return SSL_get_ex_data(ssl, note_index);
}

void rsec_tls_keep_tickets(SSL_CTX *from, SSL_CTX *to)
{
	/* Tickets are sealed under keys OpenSSL draws per context: carry them over so
	 * tickets issued before a reload still resume. */
	unsigned char keys[80];
	if (SSL_CTX_get_tlsext_ticket_keys(from, keys, sizeof(keys)) == 1)
		(void)SSL_CTX_set_tlsext_ticket_keys(to, keys, sizeof(keys));
	OPENSSL_cleanse(keys, sizeof(keys));
}

static RSEC_MUST_CHECK int setup_certs(SSL_CTX *ctx, const struct rsec_tls_opts *o, char *err, size_t errlen)
{
	if (!o->ca_file || !o->cert_file || !o->key_file) {
		set_err(err, errlen, "certificate mode needs a CA, a certificate and a key", NULL);
		return RSEC_E_CONFIG;
	}
	if (SSL_CTX_load_verify_locations(ctx, o->ca_file, NULL) != 1) {
		set_err(err, errlen, "cannot load CA", o->ca_file);
		return RSEC_E_CONFIG;
	}
	struct tls_crl *crl = NULL;
	if (o->crl_file)
		RSEC_GUARD(rsec_tls_crl_setup(ctx, o->crl_file, &crl, err, errlen));
	SSL_CTX_set_cert_verify_callback(ctx, rsec_tls_verify_cert, crl);
	if (SSL_CTX_use_certificate_chain_file(ctx, o->cert_file) != 1) {
		set_err(err, errlen, "cannot load certificate", o->cert_file);
		return RSEC_E_CONFIG;
	}
	if (SSL_CTX_use_PrivateKey_file(ctx, o->key_file, SSL_FILETYPE_PEM) != 1) {
		set_err(err, errlen, "cannot load key", o->key_file);
		return RSEC_E_CONFIG;
	}
	if (SSL_CTX_check_private_key(ctx) != 1) {
		set_err(err, errlen, "key does not match certificate", o->key_file);
		return RSEC_E_CONFIG;
	}
	if (!SSL_CTX_set_ciphersuites(ctx, TLS_CIPHERS)) {
		set_err(err, errlen, "cannot set cipher suites", NULL);
		return RSEC_E_TLS;
	}
	int mode = SSL_VERIFY_PEER;
	if (o->is_server)
		mode |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
	SSL_CTX_set_verify(ctx, mode, NULL);
	return 0;
}

int rsec_tls_ctx_new(const struct rsec_tls_opts *o, SSL_CTX **out, char *err, size_t errlen)
{
	RSEC_ENSURE(o && out, RSEC_E_INVAL);
	*out = NULL;
	SSL_CTX *ctx = SSL_CTX_new(o->is_server ? TLS_server_method() : TLS_client_method());
	if (!ctx) {
		set_err(err, errlen, "cannot create a TLS context", NULL);
		return RSEC_E_NOMEM;
	}
	int rc = RSEC_E_TLS;
	if (!SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) || !SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION)) {
		set_err(err, errlen, "cannot restrict TLS to 1.3", NULL);
		goto fail;
	}
	SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET | SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_num_tickets(ctx, 0);
	rc = o->psk ? setup_psk(ctx, o, err, errlen) : setup_certs(ctx, o, err, errlen);
	if (rc < 0)
		goto fail;
	if (!o->psk && o->resume_s) {
		rc = o->is_server ? rsec_tls_resume_server(ctx, o->resume_s) : rsec_tls_resume_client(ctx, o->resume_s);
		if (rc < 0) {
			set_err(err, errlen, "cannot set up TLS session resumption", NULL);
			goto fail;
		}
	}
	*out = ctx;
	return 0;
fail:
	SSL_CTX_free(ctx);
	return rc;
}

static bool is_ip_literal(const char *s)
{
	ASN1_OCTET_STRING *ip = a2i_IPADDRESS(s);
	if (!ip)
		return false;
	ASN1_OCTET_STRING_free(ip);
	return true;
}

int rsec_tls_new(SSL_CTX *ctx, int fd, const struct rsec_tls_opts *o, SSL **out)
{
	RSEC_ENSURE(ctx && o && out && fd >= 0, RSEC_E_INVAL);
	*out = NULL;
	SSL *ssl = SSL_new(ctx);
	RSEC_ENSURE(ssl, RSEC_E_NOMEM);
	int ok = SSL_set_fd(ssl, fd);
	if (ok && !o->psk && o->peer_name) {
		X509_VERIFY_PARAM *p = SSL_get0_param(ssl);
		if (o->is_server) {
			ok = X509_VERIFY_PARAM_set1_host(p, o->peer_name, 0);
		} else if (is_ip_literal(o->peer_name)) {
			ok = X509_VERIFY_PARAM_set1_ip_asc(p, o->peer_name);
		} else {
			X509_VERIFY_PARAM_set_hostflags(p, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
			ok = X509_VERIFY_PARAM_set1_host(p, o->peer_name, 0) &&
			     SSL_set_tlsext_host_name(ssl, o->peer_name);
		}
	}
	if (!ok) {
		SSL_free(ssl);
		return RSEC_E_TLS;
	}
	if (!o->is_server && !o->psk && o->resume_dest) {
		int rc = rsec_tls_resume_prepare(ssl, o->resume_dest);
		if (rc < 0) {
			SSL_free(ssl);
			return rc;
		}
	}
	/* rsec_tls_write_some: report partial writes, and let a queue that moved retry. */
	SSL_set_mode(ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	if (o->is_server)
		SSL_set_accept_state(ssl);
	else
		SSL_set_connect_state(ssl);
	*out = ssl;
	return 0;
}

/*
 * OpenSSL writes to the socket with write(2), so a peer that has gone raises
 * SIGPIPE, whose default action ends the process: a library must not let a
 * peer do that. Every SSL call that may write (handshake steps, reads that
 * answer the peer, writes, shutdown) runs with SIGPIPE blocked in this
 * thread, and a SIGPIPE it raised is taken back before the mask is restored;
 * one that was pending before is left alone. errno survives for
 * SSL_get_error.
 */
struct pipe_guard {
	sigset_t old;
	bool was_pending;
};

static void pipe_block(struct pipe_guard *g)
{
	sigset_t pipe, pending;
	sigemptyset(&pipe);
	sigaddset(&pipe, SIGPIPE);
	g->was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;
	(void)pthread_sigmask(SIG_BLOCK, &pipe, &g->old);
}

static void pipe_restore(struct pipe_guard *g)
{
	int saved = errno;
	sigset_t pipe, pending;
	sigemptyset(&pipe);
	sigaddset(&pipe, SIGPIPE);
	if (!g->was_pending && sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1) {
		static const struct timespec now = { 0, 0 };
		while (sigtimedwait(&pipe, NULL, &now) < 0 && errno == EINTR)
			;
	}
	(void)pthread_sigmask(SIG_SETMASK, &g->old, NULL);
	errno = saved;
}

enum ssl_io { IO_HANDSHAKE, IO_READ, IO_WRITE, IO_SHUTDOWN };

/* One SSL call, SIGPIPE held off (above). */
static int ssl_io(SSL *ssl, enum ssl_io what, void *buf, size_t n, size_t *done)
{
	struct pipe_guard g;
	pipe_block(&g);
	int ret;
	switch (what) {
	case IO_HANDSHAKE: ret = SSL_do_handshake(ssl); break;
	case IO_READ: ret = SSL_read_ex(ssl, buf, n, done); break;
	case IO_WRITE: ret = SSL_write_ex(ssl, buf, n, done); break;
	default: ret = SSL_shutdown(ssl); break;
	}
	pipe_restore(&g);
	return ret;
}

/* Map an SSL_* result to our codes; *want_write says which I/O to wait for. */
static int map_result(SSL *ssl, int ret, bool *want_write)
{
	int e = SSL_get_error(ssl, ret);
	switch (e) {
	case SSL_ERROR_WANT_READ:
		if (want_write)
			*want_write = false;
		return RSEC_E_AGAIN;
	case SSL_ERROR_WANT_WRITE:
		if (want_write)
			*want_write = true;
		return RSEC_E_AGAIN;
	case SSL_ERROR_ZERO_RETURN:
		return RSEC_E_CLOSED;
	case SSL_ERROR_SYSCALL:
		return ERR_peek_error() ? RSEC_E_TLS : RSEC_E_CLOSED;
	default:
		return RSEC_E_TLS;
	}
}

int rsec_tls_handshake_step(SSL *ssl, bool *want_write)
{
	RSEC_ENSURE(ssl, RSEC_E_INVAL);
	ERR_clear_error();
	int ret = ssl_io(ssl, IO_HANDSHAKE, NULL, 0, NULL);
	if (ret == 1) {
		if (SSL_version(ssl) != TLS1_3_VERSION)
			return RSEC_E_TLS;
		if (ctx_psk(ssl))
			/* An external PSK handshake counts as resumption: it must have happened. */
			return SSL_session_reused(ssl) ? 0 : RSEC_E_AUTH;
		/* Certificate mode: a verified peer certificate, from this handshake
		 * or from the one a ticket we accepted stands for. */
		if ((SSL_session_reused(ssl) && !rsec_tls_resume_enabled(ssl)) || !SSL_get0_peer_certificate(ssl) ||
		    SSL_get_verify_result(ssl) != X509_V_OK)
			return RSEC_E_AUTH;
		return 0;
	}
	int rc = map_result(ssl, ret, want_write);
	if (rc != RSEC_E_TLS)
		return rc;
	/* Tell authentication failures apart from other TLS failures. */
	if (SSL_get_verify_result(ssl) != X509_V_OK)
		return RSEC_E_AUTH;
	unsigned long e = ERR_peek_error();
	int reason = ERR_GET_REASON(e);
	if (reason == SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE || reason == SSL_R_CERTIFICATE_VERIFY_FAILED ||
	    reason == SSL_R_TLSV1_ALERT_UNKNOWN_CA || reason == SSL_R_SSLV3_ALERT_BAD_CERTIFICATE ||
	    reason == SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED || reason == SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED ||
	    reason == SSL_R_SSLV3_ALERT_HANDSHAKE_FAILURE || reason == SSL_R_DECRYPTION_FAILED_OR_BAD_RECORD_MAC ||
	    reason == SSL_R_BAD_PSK || reason == SSL_R_BAD_PSK_IDENTITY || reason == SSL_R_TLSV1_ALERT_DECRYPT_ERROR ||
	    reason == SSL_R_NO_SHARED_CIPHER || reason == SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN ||
	    reason == SSL_R_TLSV1_ALERT_ACCESS_DENIED)
		return RSEC_E_AUTH;
	return RSEC_E_TLS;
}

bool rsec_tls_resumed(SSL *ssl)
{
	/* An external-PSK handshake counts as resumed in OpenSSL's terms; not in ours. */
	return ssl && !ctx_psk(ssl) && SSL_session_reused(ssl);
}

int rsec_tls_peer_identity(SSL *ssl, char *out, size_t cap)
{
	RSEC_ENSURE(ssl && out && cap, RSEC_E_INVAL);
	const struct tls_psk *psk = ctx_psk(ssl);
	if (psk) {
		/* Both ends hold the same key under the same identity. */
		int n = snprintf(out, cap, "psk:%s", psk->identity);
		return n > 0 && (size_t)n < cap ? 0 : RSEC_E_RANGE;
	}
	X509 *cert = SSL_get0_peer_certificate(ssl);
	RSEC_ENSURE(cert, RSEC_E_AUTH);
	return rsec_tls_cert_identity(cert, out, cap, NULL);
}

void rsec_tls_last_error(SSL *ssl, char *out, size_t cap)
{
	if (!cap)
		return;
	long v = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;
	unsigned long e = ERR_peek_last_error();
	const char *note = tls_note(ssl);
	if (v == X509_V_ERR_APPLICATION_VERIFICATION && note)
		snprintf(out, cap, "certificate: %s", note);
	else if (v != X509_V_OK)
		snprintf(out, cap, "certificate: %s%s%s%s", X509_verify_cert_error_string(v), note ? " (" : "",
			 note ? note : "", note ? ")" : "");
	else if (e)
		ERR_error_string_n(e, out, cap);
	else
		snprintf(out, cap, "connection closed during the handshake");
	ERR_clear_error();
}

int rsec_tls_write_some(SSL *ssl, const void *buf, size_t n, size_t *done)
{
	*done = 0;
	ERR_clear_error();
	int ret = ssl_io(ssl, IO_WRITE, (void *)(uintptr_t)buf, n, done);
	if (ret == 1)
		return 0;
	return map_result(ssl, ret, NULL);
}

int rsec_tls_read_some(SSL *ssl, void *buf, size_t cap, size_t *got)
{
	*got = 0;
	ERR_clear_error();
	int ret = ssl_io(ssl, IO_READ, buf, cap, got);
	if (ret == 1)
		return 0;
	return map_result(ssl, ret, NULL);
}

int rsec_tls_shutdown(SSL *ssl)
{
	ERR_clear_error();
	int ret = ssl_io(ssl, IO_SHUTDOWN, NULL, 0, NULL);
	return ret >= 0 ? 0 : RSEC_E_TLS;
}
