/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include "pki.h"

#define DAY (24L * 3600L)

/* The names and addresses a test server answers to: loopback and the fabric's hosts.
 * The first DNS name is the server's identity (rsec_conn_peer on a client). */
static const char *const default_sans[] = {
	"DNS:rdmasec-server", "DNS:localhost", "IP:127.0.0.1", "IP:::1",
	"IP:10.77.0.1", "IP:10.77.0.2", "IP:10.77.0.3", "IP:10.77.0.4",
	"IP:10.77.0.5", "IP:10.77.0.6", "IP:10.77.0.7", "IP:10.77.0.8",
	"IP:10.77.0.9", "IP:10.77.0.10", "IP:10.77.0.11", "IP:10.77.0.12",
	"IP:10.77.0.13", "IP:10.77.0.14", "IP:10.77.0.15", "IP:10.77.0.16",
	NULL,
};

static int fail(char *err, size_t errlen, const char *what, const char *detail)
{
	unsigned long e = ERR_peek_last_error();
	char why[160] = "";
	if (e)
		ERR_error_string_n(e, why, sizeof(why));
	ERR_clear_error();
	snprintf(err, errlen, "%s%s%s%s%s", what, detail ? " " : "", detail ? detail : "", e ? ": " : "", why);
	return RSEC_E_CRYPTO;
}

static RSEC_MUST_CHECK int add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
	X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	if (!ext)
		return RSEC_E_CRYPTO;
	int ok = X509_add_ext(cert, ext, -1);
	X509_EXTENSION_free(ext);
	return ok ? 0 : RSEC_E_CRYPTO;
}

static RSEC_MUST_CHECK int set_serial(X509 *cert)
{
	BIGNUM *bn = BN_new();
	int rc = RSEC_E_CRYPTO;
	/* 127 random bits: positive, unique in practice. */
	if (bn && BN_rand(bn, 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) &&
	    BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert)))
		rc = 0;
	BN_free(bn);
	return rc;
}

struct cert_spec {
	const char *cn;  /* NULL with org: an empty subject (the name is in san) */
	const char *org;
	bool is_ca, is_server;
	long not_before, not_after; /* seconds from now */
	const char *san;            /* comma-separated, or NULL */
};

static X509 *make_cert(const struct cert_spec *s, EVP_PKEY *key, X509 *issuer, EVP_PKEY *issuer_key)
{
	X509 *cert = X509_new();
	X509_NAME *name = cert ? X509_get_subject_name(cert) : NULL;
	if (!name || !X509_set_version(cert, X509_VERSION_3) || set_serial(cert) < 0 ||
	    !X509_gmtime_adj(X509_getm_notBefore(cert), s->not_before) ||
	    !X509_gmtime_adj(X509_getm_notAfter(cert), s->not_after) ||
	    (s->org && !X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8, (const unsigned char *)s->org, -1, -1, 0)) ||
	    (s->cn && !X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)s->cn, -1, -1, 0)) ||
	    !X509_set_pubkey(cert, key))
		goto err;
	X509 *iss = issuer ? issuer : cert;
	if (!X509_set_issuer_name(cert, X509_get_subject_name(iss)))
		goto err;
	if (add_ext(cert, iss, NID_basic_constraints, s->is_ca ? "critical,CA:TRUE" : "critical,CA:FALSE") < 0 ||
	    add_ext(cert, iss, NID_key_usage, s->is_ca ? "critical,keyCertSign,cRLSign" : "critical,digitalSignature") < 0 ||
	    add_ext(cert, iss, NID_subject_key_identifier, "hash") < 0)
		goto err;
	if (!s->is_ca && (add_ext(cert, iss, NID_authority_key_identifier, "keyid:always") < 0 ||
			  add_ext(cert, iss, NID_ext_key_usage, s->is_server ? "serverAuth" : "clientAuth") < 0))
		goto err;
	if (s->san && add_ext(cert, iss, NID_subject_alt_name, s->san) < 0)
		goto err;
	if (!X509_sign(cert, issuer_key ? issuer_key : key, EVP_sha256()))
		goto err;
	return cert;
err:
	X509_free(cert);
	return NULL;
}

static RSEC_MUST_CHECK int open_out(const char *dir, const char *name, mode_t mode, FILE **out)
{
	char path[4096];
	int n = snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (n < 0 || (size_t)n >= sizeof(path))
		return RSEC_E_RANGE;
	/* Replace, never write through: a link planted in dir gets unlinked, not followed. */
	if (unlink(path) < 0 && errno != ENOENT)
		return RSEC_E_IO;
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		return RSEC_E_IO;
	*out = fdopen(fd, "w");
	if (!*out) {
		close(fd);
		return RSEC_E_IO;
	}
	return 0;
}

static RSEC_MUST_CHECK int write_pair(const char *dir, const char *base, X509 *cert, EVP_PKEY *key, char *err,
				      size_t errlen)
{
	char name[64];
	FILE *f;
	snprintf(name, sizeof(name), "%s.pem", base);
	if (open_out(dir, name, 0644, &f) < 0)
		return fail(err, errlen, "cannot create", name);
	int ok = PEM_write_X509(f, cert);
	ok = fclose(f) == 0 && ok;
	if (!ok)
		return fail(err, errlen, "cannot write", name);
	if (!key)
		return 0;
	snprintf(name, sizeof(name), "%s.key", base);
	if (open_out(dir, name, 0600, &f) < 0)
		return fail(err, errlen, "cannot create", name);
	ok = PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL);
	ok = fclose(f) == 0 && ok;
	return ok ? 0 : fail(err, errlen, "cannot write", name);
}

static RSEC_MUST_CHECK int load_ca(const char *dir, X509 **cert, EVP_PKEY **key, char *err, size_t errlen)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/ca.pem", dir);
	FILE *f = fopen(path, "r");
	if (!f)
		return fail(err, errlen, "cannot open", path);
	*cert = PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	snprintf(path, sizeof(path), "%s/ca.key", dir);
	f = fopen(path, "r");
	if (!f)
		return fail(err, errlen, "cannot open", path);
	*key = PEM_read_PrivateKey(f, NULL, NULL, NULL);
	fclose(f);
	if (!*cert || !*key || X509_check_private_key(*cert, *key) != 1)
		return fail(err, errlen, "not a CA certificate and its key in", dir);
	return 0;
}

static RSEC_MUST_CHECK int join_sans(const char *const *sans, char *out, size_t cap)
{
	size_t n = 0;
	out[0] = '\0';
	for (unsigned i = 0; sans[i]; i++) {
		if (i >= RSEC_PKI_MAX_SANS)
			return RSEC_E_RANGE;
		int w = snprintf(out + n, cap - n, "%s%s", i ? "," : "", sans[i]);
		if (w < 0 || (size_t)w >= cap - n)
			return RSEC_E_RANGE;
		n += (size_t)w;
	}
	return 0;
}

/* Issue one leaf under the CA and write it as base.pem/base.key. */
static RSEC_MUST_CHECK int issue(const struct cert_spec *s, const char *dir, const char *base, X509 *ca,
				 EVP_PKEY *ca_key, char *err, size_t errlen)
{
	EVP_PKEY *key = EVP_EC_gen("P-256");
	if (!key)
		return fail(err, errlen, "cannot generate a key for", base);
	X509 *cert = make_cert(s, key, ca, ca_key);
	int rc = cert ? write_pair(dir, base, cert, key, err, errlen) : fail(err, errlen, "cannot issue", base);
	X509_free(cert);
	EVP_PKEY_free(key);
	return rc;
}

int rsec_pki_generate(const struct rsec_pki_opts *o, char *err, size_t errlen)
{
	RSEC_ENSURE(o && o->dir && err, RSEC_E_INVAL);
	unsigned clients = o->clients ? o->clients : 1;
	long days = o->days ? (long)o->days : 365;
	RSEC_ENSURE(clients <= RSEC_PKI_MAX_CLIENTS && days <= 36500, RSEC_E_RANGE);
	char san[2048];
	if (join_sans(o->sans ? o->sans : default_sans, san, sizeof(san)) < 0) {
		snprintf(err, errlen, "too many or too long subject alternative names");
		return RSEC_E_RANGE;
	}
	if (mkdir(o->dir, 0700) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "cannot create %s: %s", o->dir, strerror(errno));
		return RSEC_E_IO;
	}
	X509 *ca = NULL;
	EVP_PKEY *ca_key = NULL;
	int rc;
	if (o->reuse_ca) {
		rc = load_ca(o->dir, &ca, &ca_key, err, errlen);
	} else {
		char cn[160];
		snprintf(cn, sizeof(cn), "%s CA", o->ca_name ? o->ca_name : "rdmasec-test");
		struct cert_spec s = { .cn = cn, .org = "rdmasec-test", .is_ca = true, .not_after = days * DAY };
		ca_key = EVP_EC_gen("P-256");
		ca = ca_key ? make_cert(&s, ca_key, NULL, NULL) : NULL;
		rc = ca ? write_pair(o->dir, "ca", ca, ca_key, err, errlen) : fail(err, errlen, "cannot make the CA", NULL);
	}
	if (rc == 0) {
		struct cert_spec s = { .cn = "rdmasec-server", .org = "rdmasec-test", .is_server = true,
				       .not_after = days * DAY, .san = san };
		rc = issue(&s, o->dir, "server", ca, ca_key, err, errlen);
	}
	for (unsigned i = 1; rc == 0 && i <= clients; i++) {
		char cn[32], base[32];
		snprintf(cn, sizeof(cn), "client%u", i);
		snprintf(base, sizeof(base), i == 1 ? "client" : "client%u", i);
		struct cert_spec s = { .cn = cn, .org = "rdmasec-test", .not_after = days * DAY };
		if (o->expired_clients) {
			s.not_before = -2 * DAY;
			s.not_after = -DAY;
		}
		rc = issue(&s, o->dir, base, ca, ca_key, err, errlen);
	}
	X509_free(ca);
	EVP_PKEY_free(ca_key);
	return rc;
}

int rsec_pki_write_psk(const char *path, char *err, size_t errlen)
{
	uint8_t key[32];
	char hex[2 * sizeof(key) + 2];
	if (RAND_bytes(key, sizeof(key)) != 1)
		return fail(err, errlen, "cannot draw a key", NULL);
	for (size_t i = 0; i < sizeof(key); i++)
		snprintf(hex + 2 * i, 3, "%02x", key[i]);
	hex[2 * sizeof(key)] = '\n';
	OPENSSL_cleanse(key, sizeof(key));
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		OPENSSL_cleanse(hex, sizeof(hex));
		snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
		return RSEC_E_IO;
	}
	ssize_t n = write(fd, hex, 2 * sizeof(key) + 1);
	OPENSSL_cleanse(hex, sizeof(hex));
	if (close(fd) < 0 || n != (ssize_t)(2 * sizeof(key) + 1)) {
		snprintf(err, errlen, "cannot write %s", path);
		return RSEC_E_IO;
	}
	return 0;
}

bool rsec_pki_name_ok(const char *name)
{
	size_t n = name ? strlen(name) : 0;
	if (n == 0 || n > 32)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(name[i] >= 'a' && name[i] <= 'z') && !(name[i] >= 'A' && name[i] <= 'Z') &&
		    !(name[i] >= '0' && name[i] <= '9') && name[i] != '-' && name[i] != '_')
			return false;
	return true;
}

int rsec_pki_issue_client(const char *dir, const char *name, const char *const *sans, unsigned days, char *err,
			  size_t errlen)
{
	RSEC_ENSURE(dir && err, RSEC_E_INVAL);
	if (!rsec_pki_name_ok(name) || strcmp(name, "ca") == 0 || strcmp(name, "crl") == 0) {
		snprintf(err, errlen, "'%s' is not a certificate name (1..32 of A-Z a-z 0-9 - _, not ca or crl)",
			 name ? name : "");
		return RSEC_E_INVAL;
	}
	char san[2048] = "critical,";
	if (sans && join_sans(sans, san + strlen(san), sizeof(san) - strlen(san)) < 0) {
		snprintf(err, errlen, "too many or too long subject alternative names");
		return RSEC_E_RANGE;
	}
	X509 *ca = NULL;
	EVP_PKEY *ca_key = NULL;
	int rc = load_ca(dir, &ca, &ca_key, err, errlen);
	if (rc == 0) {
		struct cert_spec s = { .cn = sans ? NULL : name, .org = sans ? NULL : "rdmasec-test",
				       .not_after = (days ? (long)days : 365) * DAY, .san = sans ? san : NULL };
		rc = issue(&s, dir, name, ca, ca_key, err, errlen);
	}
	X509_free(ca);
	EVP_PKEY_free(ca_key);
	return rc;
}

/* dir/name.pem's certificate, which dir's CA must have signed. */
static X509 *load_issued(const char *dir, const char *name, X509 *ca, char *err, size_t errlen)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s.pem", dir, name);
	FILE *f = fopen(path, "r");
	X509 *cert = f ? PEM_read_X509(f, NULL, NULL, NULL) : NULL;
	if (f)
		fclose(f);
	if (!cert || X509_verify(cert, X509_get0_pubkey(ca)) != 1) {
		fail(err, errlen, "not a certificate of this CA:", path);
		X509_free(cert);
		return NULL;
	}
	return cert;
}

/* The current dir/crl.pem (none: an empty one), which dir's CA must have signed. */
static X509_CRL *load_crl(const char *dir, X509 *ca, char *err, size_t errlen)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/crl.pem", dir);
	FILE *f = fopen(path, "r");
	if (!f && errno == ENOENT)
		return X509_CRL_new();
	X509_CRL *crl = f ? PEM_read_X509_CRL(f, NULL, NULL, NULL) : NULL;
	if (f)
		fclose(f);
	if (!crl || X509_CRL_verify(crl, X509_get0_pubkey(ca)) != 1) {
		fail(err, errlen, "not a CRL of this CA:", path);
		X509_CRL_free(crl);
		return NULL;
	}
	return crl;
}

static RSEC_MUST_CHECK int crl_add(X509_CRL *crl, const X509 *cert)
{
	X509_REVOKED *r = X509_REVOKED_new();
	ASN1_TIME *now = X509_gmtime_adj(NULL, 0);
	int ok = r && now && X509_REVOKED_set_serialNumber(r, (ASN1_INTEGER *)X509_get0_serialNumber(cert)) &&
		 X509_REVOKED_set_revocationDate(r, now) && X509_CRL_add0_revoked(crl, r);
	ASN1_TIME_free(now);
	if (!ok)
		X509_REVOKED_free(r);
	return ok ? 0 : RSEC_E_CRYPTO;
}

/* Fresh dates, the CA as issuer, sorted and signed. */
static RSEC_MUST_CHECK int crl_sign(X509_CRL *crl, X509 *ca, EVP_PKEY *ca_key, long days)
{
	ASN1_TIME *last = X509_gmtime_adj(NULL, 0), *next = X509_gmtime_adj(NULL, days * DAY);
	int ok = last && next && X509_CRL_set_version(crl, X509_CRL_VERSION_2) &&
		 X509_CRL_set_issuer_name(crl, X509_get_subject_name(ca)) && X509_CRL_set1_lastUpdate(crl, last) &&
		 X509_CRL_set1_nextUpdate(crl, next) && X509_CRL_sort(crl) && X509_CRL_sign(crl, ca_key, EVP_sha256());
	ASN1_TIME_free(last);
	ASN1_TIME_free(next);
	return ok ? 0 : RSEC_E_CRYPTO;
}

static RSEC_MUST_CHECK int write_crl_file(const char *dir, X509_CRL *crl, char *err, size_t errlen)
{
	FILE *f;
	if (open_out(dir, "crl.pem.new", 0644, &f) < 0)
		return fail(err, errlen, "cannot create", "crl.pem.new");
	int ok = PEM_write_X509_CRL(f, crl);
	ok = fclose(f) == 0 && ok;
	char from[4096], to[4096];
	snprintf(from, sizeof(from), "%s/crl.pem.new", dir);
	snprintf(to, sizeof(to), "%s/crl.pem", dir);
	if (!ok || rename(from, to) < 0)
		return fail(err, errlen, "cannot write", to);
	return 0;
}

int rsec_pki_write_crl(const char *dir, const char *revoke, unsigned days, char *err, size_t errlen)
{
	RSEC_ENSURE(dir && err, RSEC_E_INVAL);
	if (revoke && !rsec_pki_name_ok(revoke)) {
		snprintf(err, errlen, "'%s' is not a certificate name (1..32 of A-Z a-z 0-9 - _)", revoke);
		return RSEC_E_INVAL;
	}
	X509 *ca = NULL, *cert = NULL;
	EVP_PKEY *ca_key = NULL;
	X509_CRL *crl = NULL;
	int rc = load_ca(dir, &ca, &ca_key, err, errlen);
	if (rc == 0 && !(crl = load_crl(dir, ca, err, errlen)))
		rc = RSEC_E_CRYPTO;
	if (rc == 0 && revoke && !(cert = load_issued(dir, revoke, ca, err, errlen)))
		rc = RSEC_E_CRYPTO;
	X509_REVOKED *seen = NULL;
	if (rc == 0 && cert && X509_CRL_get0_by_serial(crl, &seen, X509_get0_serialNumber(cert)) != 1 &&
	    crl_add(crl, cert) < 0)
		rc = fail(err, errlen, "cannot add to the CRL:", revoke);
	if (rc == 0 && crl_sign(crl, ca, ca_key, days ? (long)days : 30) < 0)
		rc = fail(err, errlen, "cannot sign the CRL", NULL);
	if (rc == 0)
		rc = write_crl_file(dir, crl, err, errlen);
	X509_CRL_free(crl);
	X509_free(cert);
	X509_free(ca);
	EVP_PKEY_free(ca_key);
	return rc;
}
