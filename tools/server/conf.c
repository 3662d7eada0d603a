/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ini.h>

#include "conf.h"
#include "conf_util.h"

enum conf_kind { KIND_ADDR, KIND_STR, KIND_U32, KIND_U64, KIND_RULE /* repeatable: each adds one */ };

struct conf_key {
	const char *section, *name;
	enum conf_kind kind;
	size_t off, size;       /* the field in struct rsec_conf */
	uint64_t min, max;
	bool zero_ok;           /* 0 is allowed besides min..max ("none") */
	const char *choices;    /* KIND_STR: the allowed values, "a|b|c"; NULL: any */
};

#define KEY_STR(sec, field) { sec, #field, KIND_STR, offsetof(struct rsec_conf, field), \
			      sizeof(((struct rsec_conf *)0)->field), 0, 0, false, NULL }
#define KEY_CHOICE(sec, field, choices) { sec, #field, KIND_STR, offsetof(struct rsec_conf, field), \
					  sizeof(((struct rsec_conf *)0)->field), 0, 0, false, choices }
#define KEY_U32(sec, field, lo, hi, z) { sec, #field, KIND_U32, offsetof(struct rsec_conf, field), \
					 sizeof(uint32_t), lo, hi, z, NULL }
#define KEY_U64(sec, field, lo, hi) { sec, #field, KIND_U64, offsetof(struct rsec_conf, field), \
				      sizeof(uint64_t), lo, hi, false, NULL }

static const struct conf_key conf_keys[] = {
	{ "server", "listen", KIND_ADDR, 0, 0, 0, 0, false, NULL },
	KEY_STR("server", device),
	KEY_U32("server", max_clients, 1, 65536, false),
	KEY_U32("server", max_per_identity, 1, 65536, false),
	KEY_U32("server", handshake_timeout_ms, 100, 600000, false),
	KEY_U32("server", max_handshakes_per_source, 1, 65536, false),
	KEY_U32("server", handshake_rate_per_source, 1, 1000000, false),
	KEY_U32("server", max_handshakes, 1, 65536, false),
	KEY_U32("server", handshake_rate, 1, 1000000, false),
	KEY_U32("server", worker_threads, 1, 64, false), /* OFFLOAD_THREADS_MAX */
	KEY_STR("server", audit_log),
	KEY_STR("server", metrics_file),
	KEY_U32("server", qp_pool, 1, 1024, false),
	KEY_U32("server", resume_grace_ms, 0, 600000, false), /* RSEC_MAX_RESUME_GRACE_MS; 0: off */
	KEY_CHOICE("grants", grant_mode, "auto|mw|mr"),
	KEY_U32("grants", grant_ttl_ms, 100, 3600000, false),
	KEY_U32("grants", verify_timeout_ms, 100, 600000, false),
	KEY_STR("tls", ca),
	KEY_STR("tls", cert),
	KEY_STR("tls", key),
	KEY_STR("tls", crl),
	KEY_STR("tls", psk_file),
	KEY_STR("tls", psk_identity),
	KEY_U32("tls", resume_s, 1, 86400, true), /* RSEC_MAX_RESUME_S */
	KEY_U32("tls", rekey_s, 1, RSEC_MAX_REKEY_S, false),
	KEY_U64("tls", rekey_bytes, 1, RSEC_MAX_REKEY_BYTES),
	KEY_U32("limits", max_msg, 1, 1073741823, false), /* the library's 1 GiB less the opcode byte */
	KEY_U32("limits", recv_slots, 4, 4096, false), /* rsec_ctx_new: RSEC_RECV_SLOTS_MIN */
	KEY_U32("limits", slot_size, 4096, 1048576, false),
	KEY_U32("limits", rebuilds_per_min, 0, 60, false), /* RSEC_MAX_REBUILDS; 0: off */
	{ "authz", "allow", KIND_RULE, 0, 0, 0, 0, false, NULL },
	KEY_STR("trust", etcd),
	KEY_STR("trust", state_dir),
};
#define N_KEYS (sizeof(conf_keys) / sizeof(conf_keys[0]))

/* Where an error is reported: line 0 means "not from a file" (CLI override). */
struct conf_errbuf {
	char *buf;
	size_t len;
	int line;
};

__attribute__((format(printf, 2, 3))) static int conf_fail(const struct conf_errbuf *e, const char *fmt, ...)
{
	if (!e->buf || e->len == 0)
		return RSEC_E_CONFIG;
	size_t used = 0;
	if (e->line > 0) {
		int n = snprintf(e->buf, e->len, "line %d: ", e->line);
		used = n > 0 && (size_t)n < e->len ? (size_t)n : e->len - 1;
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->buf + used, e->len - used, fmt, ap);
	va_end(ap);
	return RSEC_E_CONFIG;
}

static const struct conf_key *find_key(const char *section, const char *name)
{
	for (size_t i = 0; i < N_KEYS; i++)
		if (strcmp(conf_keys[i].section, section) == 0 && strcmp(conf_keys[i].name, name) == 0)
			return &conf_keys[i];
	return NULL;
}

static bool section_known(const char *section)
{
	for (size_t i = 0; i < N_KEYS; i++)
		if (strcmp(conf_keys[i].section, section) == 0)
			return true;
	return false;
}

/* Decimal digits only: strtoul alone would take " +5", "-1" (wrapped) and "0x10". */
static bool parse_u64(const char *s, uint64_t lo, uint64_t hi, bool zero_ok, uint64_t *out)
{
	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	char *end = NULL;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0')
		return false;
	if (!(v >= lo && v <= hi) && !(zero_ok && v == 0))
		return false;
	*out = v;
	return true;
}

static bool parse_u32(const char *s, uint32_t lo, uint32_t hi, bool zero_ok, uint32_t *out)
{
	uint64_t v;
	if (!parse_u64(s, lo, hi, zero_ok, &v))
		return false;
	*out = (uint32_t)v;
	return true;
}

RSEC_MUST_CHECK static int parse_listen(struct rsec_conf *c, const char *v, const struct conf_errbuf *e)
{
	char q[80], host[sizeof(c->listen_addr)];
	const char *orig = v, *port_str;
	size_t hlen;
	int family;
	uint32_t port;
	if (v[0] == '[') {
		const char *close = strchr(v, ']');
		if (!close || close[1] != ':')
			goto bad;
		hlen = (size_t)(close - (v + 1));
		port_str = close + 2;
		family = AF_INET6;
		v++;
	} else {
		const char *colon = strrchr(v, ':');
		if (!colon)
			goto bad;
		hlen = (size_t)(colon - v);
		port_str = colon + 1;
		family = AF_INET;
	}
	if (hlen == 0 || hlen >= sizeof(host))
		goto bad;
	memcpy(host, v, hlen);
	host[hlen] = '\0';
	unsigned char a[sizeof(struct in6_addr)];
	if (inet_pton(family, host, a) != 1 || !parse_u32(port_str, 1, 65535, false, &port))
		goto bad;
	memcpy(c->listen_addr, host, hlen + 1);
	c->listen_port = (uint16_t)port;
	return 0;
bad:
	return conf_fail(e, "listen: '%s' is not ADDR:PORT (a.b.c.d:PORT or [IPv6]:PORT, PORT 1..65535)",
			 conf_quote(q, orig));
}

/* Is value one of the '|'-separated words in choices? */
static bool one_of(const char *value, const char *choices)
{
	size_t n = strlen(value);
	for (const char *p = choices; *p;) {
		const char *end = strchr(p, '|');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len == n && strncmp(p, value, n) == 0)
			return true;
		p += len + (end ? 1 : 0);
	}
	return false;
}

/* One more authorization rule (the library's syntax and bounds). */
RSEC_MUST_CHECK static int add_rule(struct rsec_conf *c, const char *value, const struct conf_errbuf *e)
{
	char msg[160];
	if (rsec_authz_rule_check(value, msg, sizeof(msg)) < 0)
		return conf_fail(e, "allow: %s", msg);
	if (c->n_allow == RSEC_AUTHZ_RULES_MAX)
		return conf_fail(e, "allow: at most %u rules", RSEC_AUTHZ_RULES_MAX);
	memcpy(c->allow[c->n_allow++], value, strlen(value) + 1);
	return 0;
}

/* Validate value for k, then store it; c is untouched on error. */
RSEC_MUST_CHECK static int set_value(struct rsec_conf *c, const struct conf_key *k, const char *value,
				     const struct conf_errbuf *e)
{
	char q[80], msg[256];
	uint32_t n;
	uint64_t n64;
	size_t len;
	switch (k->kind) {
	case KIND_ADDR:
		return parse_listen(c, value, e);
	case KIND_U32:
		if (!parse_u32(value, (uint32_t)k->min, (uint32_t)k->max, k->zero_ok, &n)) {
			if (k->zero_ok)
				return conf_fail(e, "%s: '%s' is not 0 or in %u..%u", k->name, conf_quote(q, value),
						 (unsigned)k->min, (unsigned)k->max);
			return conf_fail(e, "%s: '%s' is not in %u..%u", k->name, conf_quote(q, value), (unsigned)k->min,
					 (unsigned)k->max);
		}
		memcpy((char *)c + k->off, &n, sizeof(n));
		return 0;
	case KIND_U64:
		if (!parse_u64(value, k->min, k->max, false, &n64))
			return conf_fail(e, "%s: '%s' is not in %llu..%llu", k->name, conf_quote(q, value),
					 (unsigned long long)k->min, (unsigned long long)k->max);
		memcpy((char *)c + k->off, &n64, sizeof(n64));
		return 0;
	case KIND_RULE:
		return add_rule(c, value, e);
	case KIND_STR:
		if (conf_check_str(k->name, value, k->size, msg, sizeof(msg)) < 0)
			return conf_fail(e, "%s", msg);
		len = strlen(value);
		if (k->choices && !one_of(value, k->choices))
			return conf_fail(e, "%s: '%s' is not one of %s", k->name, conf_quote(q, value), k->choices);
		memcpy((char *)c + k->off, value, len + 1);
		return 0;
	default:
		return RSEC_E_INVAL;
	}
}

RSEC_MUST_CHECK static const struct conf_key *lookup(const char *section, const char *name,
						     const struct conf_errbuf *e, int *rc)
{
	char q1[80], q2[80];
	const struct conf_key *k = find_key(section, name);
	if (k)
		return k;
	if (!section_known(section))
		*rc = conf_fail(e, "unknown section '[%s]'", conf_quote(q1, section));
	else
		*rc = conf_fail(e, "unknown key '%s' in [%s]", conf_quote(q1, name), conf_quote(q2, section));
	return NULL;
}

void rsec_conf_defaults(struct rsec_conf *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->listen_addr, sizeof(c->listen_addr), "0.0.0.0");
	c->listen_port = RSEC_CONF_DEFAULT_PORT;
	c->max_clients = 1024;
	c->max_per_identity = 16;
	c->handshake_timeout_ms = 5000;
	c->max_handshakes_per_source = 256;
	c->handshake_rate_per_source = 200;
	c->max_handshakes = 1024;
	c->handshake_rate = 1000;
	c->worker_threads = 2;
	c->qp_pool = 32;
	c->resume_s = RSEC_DEFAULT_RESUME_S;
	c->rekey_s = RSEC_DEFAULT_REKEY_S;
	c->rekey_bytes = RSEC_DEFAULT_REKEY_BYTES;
	c->max_msg = 16777216;
	c->recv_slots = 64;
	c->slot_size = 65536;
	c->rebuilds_per_min = RSEC_DEFAULT_REBUILDS;
	c->resume_grace_ms = 10000;
	snprintf(c->grant_mode, sizeof(c->grant_mode), "auto");
	c->grant_ttl_ms = 30000;
	c->verify_timeout_ms = 5000;
	snprintf(c->state_dir, sizeof(c->state_dir), "/var/lib/rdmasec/trust");
}

int rsec_conf_set(struct rsec_conf *c, const char *section, const char *key, const char *value, char *err,
		  size_t errlen)
{
	RSEC_ENSURE(c && section && key && value, RSEC_E_INVAL);
	struct conf_errbuf e = { err, errlen, 0 };
	int rc = RSEC_E_CONFIG;
	const struct conf_key *k = lookup(section, key, &e, &rc);
	if (!k)
		return rc;
	return set_value(c, k, value, &e);
}

struct conf_parse {
	struct rsec_conf *c;
	char *err;
	size_t errlen;
	struct conf_text in;
	int err_line;           /* first error a key gave, 0: none */
	int rc;
	bool seen[N_KEYS];
};

static int conf_handler(void *user, const char *section, const char *name, const char *value)
{
	struct conf_parse *p = user;
	if (p->err_line || p->in.long_line)
		return 0; /* keep the first error */
	struct conf_errbuf e = { p->err, p->errlen, p->in.line };
	int rc = RSEC_E_CONFIG;
	char q1[80], q2[80];
	const struct conf_key *k = lookup(section, name, &e, &rc);
	if (k && p->seen[k - conf_keys] && k->kind != KIND_RULE)
		/* inih also reports indented lines as continuations of the previous key. */
		rc = conf_fail(&e, "duplicate key '%s' in [%s]", conf_quote(q1, name), conf_quote(q2, section));
	else if (k)
		rc = set_value(p->c, k, value, &e);
	if (rc < 0) {
		p->rc = rc;
		p->err_line = p->in.line;
		return 0;
	}
	p->seen[k - conf_keys] = true;
	return 1;
}

/* The text of line lineno (1-based), for quoting a syntax error. */
static const char *line_text(char dst[static 80], const char *text, int lineno)
{
	char buf[80];
	for (int l = 1; l < lineno && *text; l++) {
		const char *nl = strchr(text, '\n');
		text = nl ? nl + 1 : text + strlen(text);
	}
	size_t n = strcspn(text, "\r\n");
	if (n > 70)
		n = 70;
	memcpy(buf, text, n);
	buf[n] = '\0';
	return conf_quote(dst, buf);
}

int rsec_conf_parse_string(struct rsec_conf *c, const char *text, char *err, size_t errlen)
{
	RSEC_ENSURE(c && text, RSEC_E_INVAL);
	if (err && errlen)
		err[0] = '\0';
	struct conf_parse *p = calloc(1, sizeof(*p));
	struct rsec_conf *tmp = malloc(sizeof(*tmp));
	if (!p || !tmp) {
		free(p);
		free(tmp);
		return RSEC_E_NOMEM;
	}
	*tmp = *c; /* commit only a fully valid file */
	*p = (struct conf_parse){ .c = tmp, .err = err, .errlen = errlen };
	conf_text_init(&p->in, text);

	int line = ini_parse_stream(conf_text_reader, &p->in, conf_handler, p), rc = 0;
	if (!p->err_line && p->in.long_line) {
		struct conf_errbuf e = { err, errlen, p->in.long_line };
		p->rc = conf_fail(&e, "line too long (max %d characters)", p->in.long_max);
		p->err_line = p->in.long_line;
	}
	if (p->err_line && (line <= 0 || p->err_line <= line)) {
		rc = p->rc;
	} else if (line > 0) {
		char q[80];
		struct conf_errbuf e = { err, errlen, line };
		rc = conf_fail(&e, "expected '[section]' or 'key = value', got '%s'", line_text(q, text, line));
	} else if (line < 0) {
		rc = RSEC_E_NOMEM;
	}
	if (rc == 0)
		*c = *tmp;
	free(tmp);
	free(p);
	return rc;
}

int rsec_conf_parse_file(struct rsec_conf *c, const char *path, char *err, size_t errlen)
{
	RSEC_ENSURE(c && path, RSEC_E_INVAL);
	char *text = NULL;
	switch (conf_read_text(path, RSEC_CONF_MAX_FILE, &text, err, errlen)) {
	case 0: break;
	case CONF_READ_IO: return RSEC_E_IO;
	case CONF_READ_NOMEM: return RSEC_E_NOMEM;
	default: return RSEC_E_CONFIG;
	}
	int rc = rsec_conf_parse_string(c, text, err, errlen);
	free(text);
	return rc;
}

int rsec_conf_check(const struct rsec_conf *c, char *err, size_t errlen)
{
	RSEC_ENSURE_REF(c);
	struct conf_errbuf e = { err, errlen, 0 };
	bool cert_mode = c->ca[0] || c->cert[0] || c->key[0];
	bool psk_mode = c->psk_file[0] || c->psk_identity[0];
	if (cert_mode && psk_mode)
		return conf_fail(&e, "[tls]: set either ca, cert and key, or psk_file and psk_identity, not both");
	if (!cert_mode && !psk_mode)
		return conf_fail(&e, "[tls]: no credentials: set ca, cert and key (or psk_file and psk_identity)");
	if (cert_mode && !(c->ca[0] && c->cert[0] && c->key[0]))
		return conf_fail(&e, "[tls]: certificate mode needs ca, cert and key; '%s' is missing",
				 !c->ca[0] ? "ca" : !c->cert[0] ? "cert" : "key");
	if (psk_mode && c->crl[0])
		return conf_fail(&e, "[tls]: crl needs certificate mode (ca, cert and key)");
	if (psk_mode && !(c->psk_file[0] && c->psk_identity[0]))
		return conf_fail(&e, "[tls]: PSK mode needs psk_file and psk_identity; '%s' is missing",
				 !c->psk_file[0] ? "psk_file" : "psk_identity");
	return 0;
}
