/* SPDX-License-Identifier: MIT */
/* A test cluster's PKI: a CA, a server and clients (rdmasec-keygen, tests). */
#ifndef RSEC_PKI_H
#define RSEC_PKI_H

#include <stdbool.h>
#include <stddef.h>

#include "result.h"

#define RSEC_PKI_MAX_CLIENTS 1000
#define RSEC_PKI_MAX_SANS 64

struct rsec_pki_opts {
	const char *dir;
	const char *ca_name;     /* NULL: "rdmasec-test" */
	unsigned days;           /* 0: 365 */
	unsigned clients;        /* client.pem, then client2.pem .. clientN.pem; 0: 1 */
	const char *const *sans; /* NULL-terminated "DNS:x" / "IP:y"; NULL: the defaults */
	bool reuse_ca;           /* issue from dir's existing ca.pem/ca.key */
	bool expired_clients;    /* clients valid from 2 days ago to 1 day ago */
};

/*
 * Writes ca.pem, ca.key (unless reuse_ca), server.pem, server.key and the
 * clients' .pem/.key into dir, keys with mode 0600. EC P-256, SHA-256.
 */
RSEC_MUST_CHECK int rsec_pki_generate(const struct rsec_pki_opts *o, char *err, size_t errlen);
/* A certificate's base name in DIR: 1..32 of [A-Za-z0-9_-]. */
bool rsec_pki_name_ok(const char *name);
/*
 * Issues one client certificate NAME.pem/NAME.key from dir's CA. With sans
 * (NULL-terminated "URI:x" / "DNS:y"), its name is only in subjectAltName
 * (an empty subject, the extension critical, RFC 5280 4.2.1.6), as SPIFFE and
 * most modern PKIs issue; without, CN=NAME,O=rdmasec-test.
 */
RSEC_MUST_CHECK int rsec_pki_issue_client(const char *dir, const char *name, const char *const *sans, unsigned days,
					  char *err, size_t errlen);
/*
 * Writes dir/crl.pem, signed by dir's CA, valid days (0: 30): the entries of
 * the current crl.pem, if any, plus NAME.pem's serial when revoke is a name.
 * Replaced by rename, so a reader sees the old file or the new one.
 */
RSEC_MUST_CHECK int rsec_pki_write_crl(const char *dir, const char *revoke, unsigned days, char *err, size_t errlen);
/* Writes a random 32-byte PSK as hex to path, mode 0600, refusing to overwrite. */
RSEC_MUST_CHECK int rsec_pki_write_psk(const char *path, char *err, size_t errlen);

#endif
