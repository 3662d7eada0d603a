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
/* "CN=...,O=..." for certificates, "psk:<identity>" for PSKs. */
RSEC_MUST_CHECK int rsec_tls_peer_identity(SSL *ssl, char *out, size_t cap);
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
