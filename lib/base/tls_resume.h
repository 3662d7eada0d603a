/* SPDX-License-Identifier: MIT */
/*
 * TLS 1.3 session resumption for reconnects (certificate mode only).
 *
 * Server: stateless tickets (RFC 8446 §4.6.1) sealed under a key OpenSSL
 * draws per SSL_CTX, so they die with the process. Client: a bounded cache of
 * tickets in the SSL_CTX, one per destination, each used at most once.
 * Resumption always runs (EC)DHE (psk_dhe_ke; OpenSSL never offers or
 * accepts psk_ke unless SSL_OP_ALLOW_NO_DHE_KEX is set, which we never do),
 * so a resumed session keeps forward secrecy; what it skips is the
 * certificate exchange, whose result the ticket carries.
 */
#ifndef RSEC_TLS_RESUME_H
#define RSEC_TLS_RESUME_H

#include <stdbool.h>
#include <stdint.h>

#include <openssl/ssl.h>

#include "result.h"

/* Destinations a client remembers; the oldest ticket goes first. */
#define RSEC_TLS_RESUME_SLOTS 64u
/* A destination is "host:port/name"; longer ones are never resumed. */
#define RSEC_TLS_RESUME_DEST_MAX 320u
/* Server: issue one ticket per handshake, valid lifetime_s (1..RSEC_MAX_RESUME_S,
 * a day; RFC 8446 §4.6.1 allows 7). */
RSEC_MUST_CHECK int rsec_tls_resume_server(SSL_CTX *ctx, uint32_t lifetime_s);
/* Client: keep tickets in ctx, used for at most lifetime_s after they arrive. */
RSEC_MUST_CHECK int rsec_tls_resume_client(SSL_CTX *ctx, uint32_t lifetime_s);
/*
 * Client, before the handshake: remember ssl's destination (so its tickets
 * are filed under it) and offer the destination's ticket if one is fresh.
 * The ticket leaves the cache either way: a ticket is offered once.
 * A context without resumption, or a dest too long, is left alone (0).
 */
RSEC_MUST_CHECK int rsec_tls_resume_prepare(SSL *ssl, const char *dest);
/* Whether ssl's context resumes sessions at all (a resumed handshake is refused otherwise). */
bool rsec_tls_resume_enabled(const SSL *ssl);

#endif
