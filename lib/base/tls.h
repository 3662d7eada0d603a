/* SPDX-License-Identifier: MIT */
/* The control channel's TLS 1.3 (OpenSSL 3): contexts, stepwise handshakes, record I/O. */
#ifndef RSEC_TLS_H
#define RSEC_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

#include "result.h"

struct rsec_tls_opts {
	bool is_server;
	/* Certificate mode: all three. */
	const char *ca_file, *cert_file, *key_file;
	/* Certificate mode, optional: PEM CRLs, one for each CA of the peer's chain;
	 * read once, when the context is made (a handshake never reads a file). */
	const char *crl_file;
	/* External-PSK mode instead (32..64 bytes); no certificates. */
	const uint8_t *psk;
	size_t psk_len;
	const char *psk_identity; /* client: the one it presents; server: the one it accepts */
	/* Client: the name or IP the server's certificate must carry. Server: NULL,
	 * or a name the client's certificate must carry. */
	const char *peer_name;
	/* Certificate mode: TLS 1.3 resumption (tls_resume.h), tickets usable for
	 * resume_s seconds after the full handshake; 0: never resume. */
	uint32_t resume_s;
	/* Client: the destination its tickets are filed under ("host:port/name"). */
	const char *resume_dest;
};

/* err gets a reason naming the file that failed. RSEC_E_CONFIG, RSEC_E_TLS, RSEC_E_NOMEM. */
RSEC_MUST_CHECK int rsec_tls_ctx_new(const struct rsec_tls_opts *o, SSL_CTX **out, char *err, size_t errlen);
/* An SSL on a connected socket, with the name checks of o. */
RSEC_MUST_CHECK int rsec_tls_new(SSL_CTX *ctx, int fd, const struct rsec_tls_opts *o, SSL **out);
/*
 * One handshake step. 0: done, TLS 1.3, peer verified. RSEC_E_AGAIN: wait for
 * the fd (*want_write says which way). RSEC_E_AUTH: the peer failed
 * authentication. RSEC_E_CLOSED: the peer went away. RSEC_E_TLS: otherwise.
 */
RSEC_MUST_CHECK int rsec_tls_handshake_step(SSL *ssl, bool *want_write);
/* Whether the handshake resumed a certificate-mode session (no certificates exchanged). */
bool rsec_tls_resumed(SSL *ssl);
/* An identity with its terminating NUL fits in this; a longer one is refused. */
#define RSEC_TLS_IDENTITY_MAX 256u
/*
 * A certificate's identity, the one rule every caller uses: its first URI
 * subjectAltName (a SPIFFE ID, say), else its first DNS subjectAltName, else
 * its subject DN (RFC 2253). 0; RSEC_E_RANGE: longer than cap - 1 bytes;
 * RSEC_E_AUTH: a URI or DNS name that is empty or holds a NUL, a control
 * character, a space or a byte outside ASCII, or an unreadable
 * subjectAltName. *why (may be NULL) says which, for logs.
 */
RSEC_MUST_CHECK int rsec_tls_cert_identity(X509 *cert, char *out, size_t cap, const char **why);
/* The peer's: rsec_tls_cert_identity of its certificate, "psk:<identity>" for PSKs. */
RSEC_MUST_CHECK int rsec_tls_peer_identity(SSL *ssl, char *out, size_t cap);
/*
 * Whether cert, which a resumption ticket offered on ssl stands for, is still
 * good under the CRL of ssl's context: 0, or
 * RSEC_E_AUTH when it is revoked, or its issuer's CRL is missing or out of
 * date (noted on ssl for rsec_tls_last_error). 0 without a CRL.
 */
RSEC_MUST_CHECK int rsec_tls_crl_check(SSL *ssl, X509 *cert);
/*
 * Whether the peer of ssl, an established connection, is still good under
 * the CRLs of now (a context made since, perhaps) and the clock: every
 * certificate of the chain verified at the full handshake (the leaf alone
 * after a resumption) but the trust anchor. 0, or RSEC_E_AUTH with *why
 * ("certificate revoked", "certificate has expired", ...). 0 for PSKs.
 */
RSEC_MUST_CHECK int rsec_tls_peer_recheck(SSL_CTX *now, SSL *ssl, const char **why);
/* Our own certificate's notAfter, Unix seconds. RSEC_E_CONFIG without one (PSK mode). */
RSEC_MUST_CHECK int rsec_tls_own_not_after(SSL_CTX *ctx, int64_t *unix_s);
/* "certificate identity=... serial=HEX not_after=UNIX" of our own certificate, for the audit log. */
RSEC_MUST_CHECK int rsec_tls_own_cert_desc(SSL_CTX *ctx, char *out, size_t cap);
/* Server: let to accept the tickets from (which it replaces) issued. */
void rsec_tls_keep_tickets(SSL_CTX *from, SSL_CTX *to);
/* Remember why ssl's peer was refused where OpenSSL cannot say it (a static string). */
void rsec_tls_note(SSL *ssl, const char *why);
/* Why the handshake failed, for logs: never key material. */
void rsec_tls_last_error(SSL *ssl, char *out, size_t cap);
/*
 * Never blocks: writes up to n bytes, *done says how many. RSEC_E_AGAIN when
 * the socket takes nothing now; retry with the same bytes first (the buffer
 * may move).
 */
RSEC_MUST_CHECK int rsec_tls_write_some(SSL *ssl, const void *buf, size_t n, size_t *done);
/* Never blocks: RSEC_E_AGAIN when nothing is there. */
RSEC_MUST_CHECK int rsec_tls_read_some(SSL *ssl, void *buf, size_t cap, size_t *got);
RSEC_MUST_CHECK int rsec_tls_shutdown(SSL *ssl);

#endif
