/* SPDX-License-Identifier: MIT */
/*
 * Certificates, for the control channel's TLS (tls.c): the one identity
 * rule, the CRLs a context reads once and checks in every handshake, on
 * resumption tickets and in rechecks of established peers, and the facts
 * of our own certificate (its end, a description for the audit log).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "tls.h"
#include "tls_cert.h"

/* ---- identity: URI SAN, then DNS SAN, then the subject DN ---- */

/* A URI or DNS name we will print and match: 1.. bytes of visible ASCII (IA5, no space). */
static bool san_text_ok(const ASN1_IA5STRING *s)
{
	const unsigned char *p = ASN1_STRING_get0_data(s);
	int n = ASN1_STRING_length(s);
	if (!p || n <= 0)
		return false;
	for (int i = 0; i < n; i++)
		if (p[i] < 0x21 || p[i] > 0x7e)
			return false;
	return true;
}

static int copy_name(const ASN1_IA5STRING *s, char *out, size_t cap)
{
	size_t n = (size_t)ASN1_STRING_length(s);
	if (n >= cap)
		return RSEC_E_RANGE;
	memcpy(out, ASN1_STRING_get0_data(s), n);
	out[n] = '\0';
	return 0;
}

/* 1: *out is the first URI, else first DNS name; 0: neither; < 0: refused (*why). */
static int san_identity(X509 *cert, char *out, size_t cap, const char **why)
{
	int crit = -1;
	GENERAL_NAMES *names = X509_get_ext_d2i(cert, NID_subject_alt_name, &crit, NULL);
	if (!names) {
		if (crit == -1)
			return 0;
		*why = "unreadable or repeated subjectAltName extension";
		return RSEC_E_AUTH;
	}
	const ASN1_IA5STRING *uri = NULL, *dns = NULL;
	int rc = 1;
	for (int i = 0; i < sk_GENERAL_NAME_num(names); i++) {
		const GENERAL_NAME *g = sk_GENERAL_NAME_value(names, i);
		if (g->type != GEN_URI && g->type != GEN_DNS)
			continue;
		const ASN1_IA5STRING *s = g->type == GEN_URI ? g->d.uniformResourceIdentifier : g->d.dNSName;
		if (!san_text_ok(s)) {
			*why = "a URI or DNS subjectAltName is empty or holds a NUL, control, space or non-ASCII byte";
			rc = RSEC_E_AUTH;
			break;
		}
		if (g->type == GEN_URI && !uri)
			uri = s;
		if (g->type == GEN_DNS && !dns)
			dns = s;
	}
	if (rc == 1 && !uri && !dns)
		rc = 0;
	if (rc == 1 && copy_name(uri ? uri : dns, out, cap) < 0) {
		*why = "the subjectAltName naming the peer is longer than the identity limit";
		rc = RSEC_E_RANGE;
	}
	GENERAL_NAMES_free(names);
	return rc;
}

static int dn_identity(X509 *cert, char *out, size_t cap, const char **why)
{
	BIO *b = BIO_new(BIO_s_mem());
	RSEC_ENSURE(b, RSEC_E_NOMEM);
	int rc = RSEC_E_TLS;
	if (X509_NAME_print_ex(b, X509_get_subject_name(cert), 0, XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB) >= 0) {
		size_t n = BIO_pending(b);
		if (n >= cap)
			rc = RSEC_E_RANGE;
		else if (BIO_read(b, out, (int)n) == (int)n)
			rc = 0;
		out[rc == 0 ? n : 0] = '\0';
	}
	BIO_free(b);
	if (rc < 0)
		*why = rc == RSEC_E_RANGE ? "the subject name is longer than the identity limit"
					  : "cannot print the subject name";
	return rc;
}

int rsec_tls_cert_identity(X509 *cert, char *out, size_t cap, const char **why)
{
	const char *unused;
	if (!why)
		why = &unused;
	*why = NULL;
	RSEC_ENSURE(cert && out && cap, RSEC_E_INVAL);
	out[0] = '\0';
	int rc = san_identity(cert, out, cap, why);
	if (rc == 0)
		rc = dn_identity(cert, out, cap, why);
	else if (rc == 1)
		rc = 0;
	if (rc < 0)
		out[0] = '\0';
	return rc;
}

/* ---- certificate revocation lists ---- */

#define CRL_FILE_MAX (64u << 20)
#define CRLS_MAX 64

/*
 * The CRLs of a context, read once when the context is made: a handshake never
 * reads a file. A changed CRL file takes effect with a new context
 * (rsec_ctx_reload). The SSL_CTX owns it; nothing changes it afterwards.
 */
struct tls_crl {
	STACK_OF(X509_CRL) *crls;
};

static CRYPTO_ONCE crl_once = CRYPTO_ONCE_STATIC_INIT;
static int crl_index = -1;

static void crl_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl, void *argp);

static void make_crl_index(void)
{
	crl_index = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, crl_free);
}

static void crl_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl, void *argp)
{
	(void)parent, (void)ad, (void)idx, (void)argl, (void)argp;
	struct tls_crl *c = ptr;
	if (!c)
		return;
	sk_X509_CRL_pop_free(c->crls, X509_CRL_free);
	OPENSSL_free(c);
}

static struct tls_crl *ctx_crl(SSL_CTX *ctx)
{
	return crl_index < 0 ? NULL : SSL_CTX_get_ex_data(ctx, crl_index);
}

/* Whether one of the trusted CAs issued and signed crl. */
static bool crl_signed_by_ca(X509_STORE *trust, X509_CRL *crl)
{
	STACK_OF(X509_OBJECT) *objs = X509_STORE_get0_objects(trust);
	for (int i = 0; i < sk_X509_OBJECT_num(objs); i++) {
		X509 *ca = X509_OBJECT_get0_X509(sk_X509_OBJECT_value(objs, i));
		if (ca && X509_NAME_cmp(X509_get_subject_name(ca), X509_CRL_get_issuer(crl)) == 0 &&
		    X509_CRL_verify(crl, X509_get0_pubkey(ca)) == 1)
			return true;
	}
	ERR_clear_error();
	return false;
}

/* Every CRL of an open PEM file, each signed by a trusted CA; *why on failure. */
static STACK_OF(X509_CRL) *crl_read(BIO *in, X509_STORE *trust, const char **why)
{
	STACK_OF(X509_CRL) *crls = sk_X509_CRL_new_null();
	X509_CRL *crl;
	*why = "out of memory";
	while (crls && (crl = PEM_read_bio_X509_CRL(in, NULL, NULL, NULL))) {
		*why = sk_X509_CRL_num(crls) >= CRLS_MAX ? "more than 64 CRLs" :
		       !crl_signed_by_ca(trust, crl) ? "a CRL not signed by one of the trusted CAs" : NULL;
		if (*why || !sk_X509_CRL_push(crls, crl)) {
			X509_CRL_free(crl);
			goto fail;
		}
	}
	unsigned long e = ERR_peek_last_error();
	if (!crls || (e && ERR_GET_REASON(e) != PEM_R_NO_START_LINE)) {
		*why = crls ? "not a PEM CRL" : "out of memory";
		goto fail;
	}
	ERR_clear_error();
	if (sk_X509_CRL_num(crls) == 0) {
		*why = "no CRL in it";
		goto fail;
	}
	*why = NULL;
	return crls;
fail:
	ERR_clear_error();
	sk_X509_CRL_pop_free(crls, X509_CRL_free);
	return NULL;
}

/* The CRLs of the file at path, signed by trust's CAs; NULL and *why when it cannot be used. */
static STACK_OF(X509_CRL) *crl_load(const char *path, X509_STORE *trust, const char **why)
{
	struct stat st;
	BIO *in = NULL;
	*why = NULL;
	if (stat(path, &st) != 0)
		*why = strerror(errno);
	else if (!S_ISREG(st.st_mode) || st.st_size > (off_t)CRL_FILE_MAX)
		*why = "not a regular file of at most 64 MiB";
	else if (!(in = BIO_new_file(path, "r")))
		*why = "cannot open it";
	STACK_OF(X509_CRL) *crls = *why ? NULL : crl_read(in, trust, why);
	BIO_free(in);
	ERR_clear_error();
	return crls;
}

int rsec_tls_crl_setup(SSL_CTX *ctx, const char *path, struct tls_crl **out, char *err, size_t errlen)
{
	*out = NULL;
	struct tls_crl *c = OPENSSL_zalloc(sizeof(*c));
	if (!CRYPTO_THREAD_run_once(&crl_once, make_crl_index) || crl_index < 0 || !c) {
		OPENSSL_free(c);
		return RSEC_E_NOMEM;
	}
	const char *why = NULL;
	c->crls = crl_load(path, SSL_CTX_get_cert_store(ctx), &why);
	if (!c->crls) {
		if (err && errlen)
			snprintf(err, errlen, "CRL %s: %s", path, why);
		crl_free(NULL, c, NULL, 0, 0, NULL);
		return RSEC_E_CONFIG;
	}
	if (!SSL_CTX_set_ex_data(ctx, crl_index, c)) {
		crl_free(NULL, c, NULL, 0, 0, NULL);
		return RSEC_E_NOMEM;
	}
	*out = c;
	return 0;
}

/*
 * OpenSSL's chain check, with the current CRLs for every certificate of the
 * chain when there is a CRL file, then the identity rule: a certificate
 * whose identity we could not name exactly is refused here, in the handshake.
 */
int rsec_tls_verify_cert(X509_STORE_CTX *sctx, void *arg)
{
	struct tls_crl *c = arg;
	SSL *ssl = X509_STORE_CTX_get_ex_data(sctx, SSL_get_ex_data_X509_STORE_CTX_idx());
	if (c) {
		/* The context's own, never changed while it lives (the SSL holds the context). */
		X509_STORE_CTX_set0_crls(sctx, c->crls);
		X509_STORE_CTX_set_flags(sctx, X509_V_FLAG_CRL_CHECK | X509_V_FLAG_CRL_CHECK_ALL);
	}
	int ok = X509_verify_cert(sctx);
	X509_STORE_CTX_set0_crls(sctx, NULL);
	if (ok != 1)
		return ok;
	char id[RSEC_TLS_IDENTITY_MAX];
	const char *why = NULL;
	if (rsec_tls_cert_identity(X509_STORE_CTX_get0_cert(sctx), id, sizeof(id), &why) < 0) {
		rsec_tls_note(ssl, why);
		X509_STORE_CTX_set_error(sctx, X509_V_ERR_APPLICATION_VERIFICATION);
		return 0;
	}
	return 1;
}

/* Whether crl, from cert's issuer, lists cert or is out of date; *why when so. */
static bool crl_refuses(X509_CRL *crl, X509 *cert, const char **why)
{
	X509_REVOKED *entry = NULL;
	const ASN1_TIME *next = X509_CRL_get0_nextUpdate(crl);
	if (X509_CRL_get0_by_cert(crl, &entry, cert) == 1)
		*why = "certificate revoked";
	else if (!next || X509_cmp_current_time(next) <= 0)
		*why = "CRL has expired";
	else if (X509_cmp_current_time(X509_CRL_get0_lastUpdate(crl)) > 0)
		*why = "CRL is not yet valid";
	return *why != NULL;
}

/* A static sentence for rsec_tls_note (notes are never freed). */
static const char *ticket_declined(const char *why)
{
	static const char *const said[][2] = {
		{ "certificate revoked", "resumption ticket declined: its certificate is revoked" },
		{ "CRL has expired", "resumption ticket declined: the CRL has expired" },
		{ "CRL is not yet valid", "resumption ticket declined: the CRL is not yet valid" },
	};
	for (size_t i = 0; i < sizeof(said) / sizeof(said[0]); i++)
		if (strcmp(why, said[i][0]) == 0)
			return said[i][1];
	return "resumption ticket declined: no CRL from its certificate's issuer";
}

/* Why cert is refused by the CRLs of c (its issuer's), or NULL when it is not. */
static const char *crl_verdict(const struct tls_crl *c, X509 *cert)
{
	const char *why = "unable to get certificate CRL";
	for (int i = 0; i < sk_X509_CRL_num(c->crls); i++) {
		X509_CRL *crl = sk_X509_CRL_value(c->crls, i);
		if (X509_NAME_cmp(X509_CRL_get_issuer(crl), X509_get_issuer_name(cert)) != 0)
			continue;
		why = NULL;
		if (crl_refuses(crl, cert, &why))
			break;
	}
	return why;
}

int rsec_tls_crl_check(SSL *ssl, X509 *cert)
{
	RSEC_ENSURE(ssl && cert, RSEC_E_INVAL);
	struct tls_crl *c = ctx_crl(SSL_get_SSL_CTX(ssl));
	const char *why = c ? crl_verdict(c, cert) : NULL;
	if (why)
		rsec_tls_note(ssl, ticket_declined(why));
	return why ? RSEC_E_AUTH : 0;
}

/* Whether cert is its own issuer: a trust anchor, which no CRL of ours lists. */
static bool self_issued(X509 *cert)
{
	return X509_NAME_cmp(X509_get_subject_name(cert), X509_get_issuer_name(cert)) == 0;
}

int rsec_tls_peer_recheck(SSL_CTX *now, SSL *ssl, const char **why)
{
	RSEC_ENSURE(now && ssl && why, RSEC_E_INVAL);
	*why = NULL;
	X509 *leaf = SSL_get0_peer_certificate(ssl);
	if (rsec_tls_psk_mode(ssl) || !leaf)
		return 0;
	/* The chain verified at the full handshake; a resumed session has only the leaf. */
	STACK_OF(X509) *chain = SSL_get0_verified_chain(ssl);
	struct tls_crl *c = ctx_crl(now);
	int n = chain ? sk_X509_num(chain) : 0;
	for (int i = -1; i < n && !*why; i++) {
		X509 *cert = i < 0 ? leaf : sk_X509_value(chain, i);
		if (i >= 0 && X509_cmp(cert, leaf) == 0)
			continue;
		if (X509_cmp_current_time(X509_get0_notAfter(cert)) <= 0)
			*why = "certificate has expired";
		else if (c && !self_issued(cert))
			*why = crl_verdict(c, cert);
	}
	return *why ? RSEC_E_AUTH : 0;
}

int rsec_tls_own_not_after(SSL_CTX *ctx, int64_t *unix_s)
{
	RSEC_ENSURE(ctx && unix_s, RSEC_E_INVAL);
	X509 *cert = SSL_CTX_get0_certificate(ctx);
	struct tm tm;
	RSEC_ENSURE(cert && ASN1_TIME_to_tm(X509_get0_notAfter(cert), &tm) == 1, RSEC_E_CONFIG);
	*unix_s = (int64_t)timegm(&tm);
	return 0;
}

int rsec_tls_own_cert_desc(SSL_CTX *ctx, char *out, size_t cap)
{
	RSEC_ENSURE(ctx && out && cap, RSEC_E_INVAL);
	X509 *cert = SSL_CTX_get0_certificate(ctx);
	char id[RSEC_TLS_IDENTITY_MAX], *serial = NULL;
	int64_t until = 0;
	BIGNUM *bn = cert ? ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), NULL) : NULL;
	if (bn)
		serial = BN_bn2hex(bn);
	BN_free(bn);
	int rc = cert && serial && rsec_tls_cert_identity(cert, id, sizeof(id), NULL) == 0 &&
			 rsec_tls_own_not_after(ctx, &until) == 0
		 ? 0 : RSEC_E_CONFIG;
	if (rc == 0) {
		int len = snprintf(out, cap, "certificate identity=%s serial=%s not_after=%lld", id, serial, (long long)until);
		rc = len > 0 && (size_t)len < cap ? 0 : RSEC_E_RANGE;
	}
	OPENSSL_free(serial);
	ERR_clear_error();
	return rc;
}
