/* SPDX-License-Identifier: MIT */
/* What tls.c and tls_cert.c share; the rest of lib/ uses tls.h. */
#ifndef RSEC_TLS_CERT_H
#define RSEC_TLS_CERT_H

#include <stdbool.h>
#include <stddef.h>

#include <openssl/ssl.h>

#include "result.h"

/* A context's CRLs, read once when it is made; the SSL_CTX owns them. */
struct tls_crl;

/* Read the CRL file at path into ctx (signed by its trusted CAs). *err names the file on failure. (tls_cert.c) */
RSEC_MUST_CHECK int rsec_tls_crl_setup(SSL_CTX *ctx, const char *path, struct tls_crl **out, char *err,
				       size_t errlen);
/* The certificate verify callback: the chain with arg's CRLs (may be NULL), then the identity rule. (tls_cert.c) */
int rsec_tls_verify_cert(X509_STORE_CTX *sctx, void *arg);
/* Whether ssl's context authenticates by an external PSK. (tls.c) */
bool rsec_tls_psk_mode(const SSL *ssl);

#endif
