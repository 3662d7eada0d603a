/* SPDX-License-Identifier: MIT */
/*
 * FI_RDMASEC_* parameters (fi_param_define, so `fi_info -e` lists them) and
 * the rdmasec contexts made from them. Each value is checked once here, with
 * a message naming the variable; none is a secret (paths and names only).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rsfi.h"

#define RSFI_TIMEOUT_DEFAULT_MS 10000
#define RSFI_TIMEOUT_MAX_MS 600000

struct param {
	const char *name;
	enum fi_param_type type;
	const char *help;
};

static const struct param params[] = {
	{ "creds", FI_PARAM_STRING,
	  "Directory of credentials as rdmasec-keygen writes it: ca.pem, server.pem/.key (listening "
	  "endpoints), client.pem/.key (connecting ones), crl.pem if present" },
	{ "ca", FI_PARAM_STRING, "CA certificate(s), PEM (default: CREDS/ca.pem)" },
	{ "cert", FI_PARAM_STRING, "Our certificate, PEM, for both roles (default: CREDS/server.pem or client.pem)" },
	{ "key", FI_PARAM_STRING, "Our private key, PEM (default: CREDS/server.key or client.key)" },
	{ "crl", FI_PARAM_STRING, "Certificate revocation lists, PEM (default: CREDS/crl.pem when it exists)" },
	{ "allow", FI_PARAM_STRING,
	  "Listening endpoints: comma-separated identity rules a peer must match (rsec_authz_rule_check; "
	  "default: every authenticated peer)" },
	{ "server_name", FI_PARAM_STRING,
	  "Connecting endpoints: the name the server's certificate must carry (default: the address connected to)" },
	{ "addr", FI_PARAM_STRING,
	  "Local IPv4 address to use when the application names none (default: the first address of a netdev "
	  "under an RDMA device)" },
	{ "audit", FI_PARAM_STRING, "JSON-lines audit log of the rdmasec contexts (default: none)" },
	{ "timeout_ms", FI_PARAM_INT, "Connection set-up deadline in ms, 100..600000 (default: 10000)" },
};

void rsfi_conf_define(void)
{
	for (size_t i = 0; i < sizeof(params) / sizeof(params[0]); i++)
		(void)fi_param_define(&rsfi_prov, params[i].name, params[i].type, "%s", params[i].help);
}

/* One string parameter into dst (cap bytes): 0, or -FI_EINVAL when too long. */
static int read_str(const char *name, char *dst, size_t cap)
{
	char *v = NULL;

	dst[0] = '\0';
	if (fi_param_get_str(&rsfi_prov, name, &v) != FI_SUCCESS || !v)
		return 0;
	if (strlen(v) >= cap) {
		RSFI_WARN(FI_LOG_CORE, "FI_RDMASEC_%s: longer than %zu bytes\n", name, cap - 1);
		return -FI_EINVAL;
	}
	memcpy(dst, v, strlen(v) + 1);
	return 0;
}

/* Splits conf->allow_text at commas into conf->allow[], each rule checked. */
static int split_allow(struct rsfi_conf *conf)
{
	char err[256];
	char *save = NULL;

	conf->n_allow = 0;
	for (char *r = strtok_r(conf->allow_text, ",", &save); r; r = strtok_r(NULL, ",", &save)) {
		if (conf->n_allow == RSFI_ALLOW_MAX) {
			RSFI_WARN(FI_LOG_CORE, "FI_RDMASEC_ALLOW: more than %u rules\n", RSFI_ALLOW_MAX);
			return -FI_EINVAL;
		}
		if (rsec_authz_rule_check(r, err, sizeof(err)) != 0) {
			RSFI_WARN(FI_LOG_CORE, "FI_RDMASEC_ALLOW: %s\n", err);
			return -FI_EINVAL;
		}
		conf->allow[conf->n_allow++] = r;
	}
	return 0;
}

int rsfi_conf_read(struct rsfi_conf *conf)
{
	struct {
		const char *name;
		char *dst;
		size_t cap;
	} strs[] = {
		{ "creds", conf->creds, sizeof(conf->creds) },       { "ca", conf->ca, sizeof(conf->ca) },
		{ "cert", conf->cert, sizeof(conf->cert) },          { "key", conf->key, sizeof(conf->key) },
		{ "crl", conf->crl, sizeof(conf->crl) },             { "allow", conf->allow_text, sizeof(conf->allow_text) },
		{ "server_name", conf->server_name, sizeof(conf->server_name) },
		{ "addr", conf->addr, sizeof(conf->addr) },          { "audit", conf->audit, sizeof(conf->audit) },
	};
	struct in_addr ignored;
	int timeout = RSFI_TIMEOUT_DEFAULT_MS;

	memset(conf, 0, sizeof(*conf));
	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
		int rc = read_str(strs[i].name, strs[i].dst, strs[i].cap);
		if (rc)
			return rc;
	}
	if (conf->addr[0] && inet_pton(AF_INET, conf->addr, &ignored) != 1) {
		RSFI_WARN(FI_LOG_CORE, "FI_RDMASEC_ADDR: \"%s\" is not an IPv4 address\n", conf->addr);
		return -FI_EINVAL;
	}
	if (fi_param_get_int(&rsfi_prov, "timeout_ms", &timeout) == FI_SUCCESS &&
	    (timeout < 100 || timeout > RSFI_TIMEOUT_MAX_MS)) {
		RSFI_WARN(FI_LOG_CORE, "FI_RDMASEC_TIMEOUT_MS: %d is outside 100..%d\n", timeout, RSFI_TIMEOUT_MAX_MS);
		return -FI_EINVAL;
	}
	conf->timeout_ms = timeout;
	return split_allow(conf);
}

/* path = the explicit value, else CREDS/file (only if it exists when optional): 0 or -FI_EINVAL. */
static int cred_path(const struct rsfi_conf *conf, const char *explicit, const char *file, bool optional,
		     char out[static RSFI_PATH_MAX])
{
	out[0] = '\0';
	if (explicit[0]) {
		memcpy(out, explicit, strlen(explicit) + 1);
		return 0;
	}
	if (!conf->creds[0])
		return optional ? 0 : -FI_EINVAL;
	int n = snprintf(out, RSFI_PATH_MAX, "%s/%s", conf->creds, file);
	if (n < 0 || n >= (int)RSFI_PATH_MAX)
		return -FI_EINVAL;
	if (optional && access(out, F_OK) != 0)
		out[0] = '\0';
	return 0;
}

int rsfi_conf_ctx(const struct rsfi_conf *conf, int is_server, const char *local_addr, struct rsec_ctx **out)
{
	char ca[RSFI_PATH_MAX], cert[RSFI_PATH_MAX], key[RSFI_PATH_MAX], crl[RSFI_PATH_MAX], err[256] = "";
	const char *role = is_server ? "server" : "client";
	char certf[16], keyf[16];

	snprintf(certf, sizeof(certf), "%s.pem", role);
	snprintf(keyf, sizeof(keyf), "%s.key", role);
	if (cred_path(conf, conf->ca, "ca.pem", false, ca) || cred_path(conf, conf->cert, certf, false, cert) ||
	    cred_path(conf, conf->key, keyf, false, key) || cred_path(conf, conf->crl, "crl.pem", true, crl)) {
		RSFI_WARN(FI_LOG_CORE, "no credentials: set FI_RDMASEC_CREDS (or FI_RDMASEC_CA, _CERT and _KEY)\n");
		return -FI_EINVAL;
	}
	struct rsec_ctx_attr attr = {
		.is_server = is_server,
		.local_addr = local_addr && local_addr[0] ? local_addr : NULL,
		.ca_file = ca,
		.cert_file = cert,
		.key_file = key,
		.max_msg = (uint32_t)RSFI_MAX_MSG,
		.handshake_timeout_ms = conf->timeout_ms,
	};
	if (crl[0]) {
		attr.comp_mask |= RSEC_CTX_ATTR_CRL;
		attr.crl_file = crl;
	}
	if (is_server && conf->n_allow) {
		attr.comp_mask |= RSEC_CTX_ATTR_ALLOW;
		attr.allow = conf->allow;
		attr.n_allow = conf->n_allow;
	}
	if (conf->audit[0]) {
		attr.comp_mask |= RSEC_CTX_ATTR_AUDIT;
		attr.audit_path = conf->audit;
	}
	int rc = rsec_ctx_new(&attr, out, err, sizeof(err));
	if (rc) {
		RSFI_WARN(FI_LOG_CORE, "rdmasec %s context: %s (%s)\n", role, rsec_strerror(rc), err);
		return -rsfi_errno(rc);
	}
	return 0;
}

int rsfi_errno(int rsec_code)
{
	switch (rsec_code) {
	case RSEC_OK: return 0;
	case RSEC_E_INVAL: return FI_EINVAL;
	case RSEC_E_NOMEM: return FI_ENOMEM;
	case RSEC_E_AGAIN: return FI_EAGAIN;
	case RSEC_E_TIMEOUT: return FI_ETIMEDOUT;
	case RSEC_E_CLOSED: return FI_ECONNRESET;
	case RSEC_E_AUTH:
	case RSEC_E_TLS:
	case RSEC_E_DENIED: return FI_EACCES;
	case RSEC_E_RANGE: return FI_EMSGSIZE;
	case RSEC_E_NODEV: return FI_ENODEV;
	case RSEC_E_CONFIG: return FI_EINVAL;
	case RSEC_E_IO: return FI_ECONNREFUSED;
	default: return FI_EIO;
	}
}
