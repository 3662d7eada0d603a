/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <ini.h>

#include "blkd_conf.h"
#include "busy_poll.h"
#include "conf_util.h"
#include "rdmasec.h"

#define CONF_MAX_FILE (1u << 20)

enum key_kind { KIND_LISTEN, KIND_STR, KIND_U32, KIND_SIZE32, KIND_SIZE64 };

struct key {
	const char *section, *name;
	enum key_kind kind;
	size_t off, size;
	uint64_t min, max;
};

#define FIELD(f) offsetof(struct blkd_conf, f), sizeof(((struct blkd_conf *)0)->f)
static const struct key target_keys[] = {
	{ "target", "listen", KIND_LISTEN, 0, 0, 0, 0 },
	{ "target", "device", KIND_STR, FIELD(device), 0, 0 },
	{ "target", "audit_log", KIND_STR, FIELD(audit_log), 0, 0 },
	{ "target", "metrics_file", KIND_STR, FIELD(metrics_file), 0, 0 },
	{ "target", "queue_depth", KIND_U32, FIELD(queue_depth), 1, BLK_QD_GRANT_MAX },
	{ "target", "queues", KIND_U32, FIELD(queues), 1, BLK_QUEUES_MAX },
	{ "target", "max_transfer", KIND_SIZE32, FIELD(max_transfer), BLK_BLOCK_MAX, BLK_TRANSFER_MAX },
	{ "target", "max_inline", KIND_SIZE32, FIELD(max_inline), 0, BLK_INLINE_MAX },
	{ "target", "max_sessions", KIND_U32, FIELD(max_sessions), 1, 4096 },
	{ "target", "max_sessions_per_identity", KIND_U32, FIELD(max_sessions_per_identity), 0, 4096 },
	{ "target", "max_handshakes", KIND_U32, FIELD(max_handshakes), 1, 65536 },
	{ "target", "max_handshakes_per_source", KIND_U32, FIELD(max_handshakes_per_source), 1, 65536 },
	{ "target", "handshake_rate_per_source", KIND_U32, FIELD(handshake_rate_per_source), 1, 1000000 },
	{ "target", "memory_limit", KIND_SIZE64, FIELD(memory_limit), 1u << 20, UINT64_C(1) << 40 },
	{ "target", "memory_per_identity", KIND_SIZE64, FIELD(memory_per_identity), 0, UINT64_C(1) << 40 },
	{ "target", "open_timeout_ms", KIND_U32, FIELD(open_timeout_ms), 100, 600000 },
	{ "target", "grant_timeout_ms", KIND_U32, FIELD(grant_timeout_ms), 100, 600000 },
	{ "target", "rebuilds_per_min", KIND_U32, FIELD(rebuilds_per_min), 0, 60 },
	{ "target", "store_threads", KIND_U32, FIELD(store_threads), 1, BLKD_STORE_THREADS_MAX },
	{ "target", "busy_poll_us", KIND_U32, FIELD(busy_poll_us), 0, BUSY_POLL_MAX_US },
	{ "tls", "ca", KIND_STR, FIELD(ca), 0, 0 },
	{ "tls", "cert", KIND_STR, FIELD(cert), 0, 0 },
	{ "tls", "key", KIND_STR, FIELD(key), 0, 0 },
	{ "tls", "crl", KIND_STR, FIELD(crl), 0, 0 },
	{ "tls", "rekey_s", KIND_U32, FIELD(rekey_s), 1, RSEC_MAX_REKEY_S },
	{ "tls", "rekey_bytes", KIND_SIZE64, FIELD(rekey_bytes), 1, RSEC_MAX_REKEY_BYTES },
	{ "trust", "etcd", KIND_STR, FIELD(etcd), 0, 0 },
	{ "trust", "state_dir", KIND_STR, FIELD(state_dir), 0, 0 },
};
#define N_TARGET_KEYS (sizeof(target_keys) / sizeof(target_keys[0]))

__attribute__((format(printf, 3, 4))) static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

bool blkd_parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	char *end = NULL;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno != 0)
		return false;
	unsigned shift = 0;
	switch (*end) {
	case '\0': break;
	case 'K': case 'k': shift = 10; break;
	case 'M': case 'm': shift = 20; break;
	case 'G': case 'g': shift = 30; break;
	case 'T': case 't': shift = 40; break;
	default: return false;
	}
	if (shift && end[1] != '\0')
		return false;
	if (shift && v > (UINT64_MAX >> shift))
		return false;
	v <<= shift;
	if (v < min || v > max)
		return false;
	*out = v;
	return true;
}

static bool parse_bool(const char *s, bool *out)
{
	if (!strcmp(s, "yes") || !strcmp(s, "true") || !strcmp(s, "1")) {
		*out = true;
		return true;
	}
	if (!strcmp(s, "no") || !strcmp(s, "false") || !strcmp(s, "0")) {
		*out = false;
		return true;
	}
	return false;
}

static int copy_str(char *dst, size_t cap, const char *what, const char *v, char *err, size_t errlen)
{
	if (conf_check_str(what, v, cap, err, errlen) < 0)
		return -1;
	memcpy(dst, v, strlen(v) + 1);
	return 0;
}

static int set_listen(struct blkd_conf *c, const char *v, char *err, size_t errlen)
{
	char q[80], host[sizeof(c->listen_addr)];
	const char *port_str = NULL;
	size_t hlen;
	if (v[0] == '[') {
		const char *close = strchr(v, ']');
		if (!close || (close[1] && close[1] != ':'))
			return fail(err, errlen, "listen: '%s' is not ADDR[:PORT] or [IPV6][:PORT]", conf_quote(q, v));
		hlen = (size_t)(close - v - 1);
		v++;
		port_str = close[1] ? close + 2 : NULL;
	} else {
		const char *colon = strchr(v, ':');
		if (colon && strchr(colon + 1, ':'))
			return fail(err, errlen, "listen: '%s': put an IPv6 address in brackets", conf_quote(q, v));
		hlen = colon ? (size_t)(colon - v) : strlen(v);
		port_str = colon ? colon + 1 : NULL;
	}
	if (hlen == 0 || hlen >= sizeof(host))
		return fail(err, errlen, "listen: '%s' has no usable address", conf_quote(q, v));
	memcpy(host, v, hlen);
	host[hlen] = '\0';
	unsigned char bin[16];
	if (inet_pton(AF_INET, host, bin) != 1 && inet_pton(AF_INET6, host, bin) != 1)
		return fail(err, errlen, "listen: '%s' is not an IP address", conf_quote(q, host));
	uint64_t port = c->listen_port;
	if (port_str && !blkd_parse_size(port_str, 1, 65535, &port))
		return fail(err, errlen, "listen: port '%s' is not in 1..65535", conf_quote(q, port_str));
	memcpy(c->listen_addr, host, hlen + 1);
	c->listen_port = (uint16_t)port;
	return 0;
}

static int set_target_key(struct blkd_conf *c, const struct key *k, const char *v, char *err, size_t errlen)
{
	char q[80];
	uint64_t n;
	switch (k->kind) {
	case KIND_LISTEN:
		return set_listen(c, v, err, errlen);
	case KIND_STR:
		return copy_str((char *)c + k->off, k->size, k->name, v, err, errlen);
	case KIND_U32:
	case KIND_SIZE32:
	case KIND_SIZE64:
		/* A plain count takes no suffix. */
		if ((k->kind == KIND_U32 && strspn(v, "0123456789") != strlen(v)) ||
		    !blkd_parse_size(v, k->min, k->max, &n))
			return fail(err, errlen, "%s: '%s' is not %s in %llu..%llu", k->name, conf_quote(q, v),
				    k->kind == KIND_U32 ? "a number" : "a size", (unsigned long long)k->min,
				    (unsigned long long)k->max);
		if (k->kind == KIND_SIZE64)
			memcpy((char *)c + k->off, &n, sizeof(n));
		else {
			uint32_t n32 = (uint32_t)n;
			memcpy((char *)c + k->off, &n32, sizeof(n32));
		}
		return 0;
	}
	return -1;
}

static struct blkd_export_conf *find_export(struct blkd_conf *c, const char *name)
{
	for (unsigned i = 0; i < c->n_exports; i++)
		if (strcmp(c->exports[i].name, name) == 0)
			return &c->exports[i];
	return NULL;
}

/* The export named name, added with its defaults if new. */
static struct blkd_export_conf *export_for(struct blkd_conf *c, const char *name, char *err, size_t errlen)
{
	char q[80];
	if (!blk_name_valid(name)) {
		fail(err, errlen, "export name '%s' is not 1..%u of [A-Za-z0-9._-]", conf_quote(q, name), BLK_NAME_MAX);
		return NULL;
	}
	struct blkd_export_conf *x = find_export(c, name);
	if (x)
		return x;
	if (c->n_exports == BLKD_EXPORTS_MAX) {
		fail(err, errlen, "export '%s': at most %u exports", conf_quote(q, name), BLKD_EXPORTS_MAX);
		return NULL;
	}
	x = &c->exports[c->n_exports++];
	memset(x, 0, sizeof(*x));
	memcpy(x->name, name, strlen(name) + 1);
	x->block_size = 4096;
	x->direct = true;
	x->nowait = true;
	x->max_sessions = 64;
	return x;
}

static int add_id(char list[][BLKD_ID_LEN], unsigned *n, const char *what, const char *v, char *err, size_t errlen)
{
	char q[80];
	if (!v[0])
		return fail(err, errlen, "%s: an empty identity", what);
	if (*n == BLKD_IDS_MAX)
		return fail(err, errlen, "%s: '%s': at most %u identities", what, conf_quote(q, v), BLKD_IDS_MAX);
	if (strlen(v) > BLKD_ID_MAX)
		return fail(err, errlen, "%s: '%s' is %zu characters long, over %u (longer identities reach the target cut short)",
			    what, conf_quote(q, v), strlen(v), BLKD_ID_MAX);
	char why[160];
	if (rsec_authz_rule_check(v, why, sizeof(why)) < 0)
		return fail(err, errlen, "%s: %s", what, why);
	if (copy_str(list[*n], BLKD_ID_LEN, what, v, err, errlen) < 0)
		return -1;
	(*n)++;
	return 0;
}

static int set_export_key(struct blkd_export_conf *x, const char *key, const char *v, char *err, size_t errlen)
{
	char q[80];
	uint64_t n;
	if (!strcmp(key, "path"))
		return copy_str(x->path, sizeof(x->path), key, v, err, errlen);
	if (!strcmp(key, "size")) {
		if (!blkd_parse_size(v, BLK_BLOCK_MIN, BLK_SIZE_MAX, &n))
			return fail(err, errlen, "size: '%s' is not a size in 512..2^60", conf_quote(q, v));
		x->size = n;
		return 0;
	}
	if (!strcmp(key, "block_size")) {
		if (!blkd_parse_size(v, 512, 4096, &n) || (n != 512 && n != 4096))
			return fail(err, errlen, "block_size: '%s' is not 512 or 4096", conf_quote(q, v));
		x->block_size = (uint32_t)n;
		return 0;
	}
	if (!strcmp(key, "max_sessions")) {
		if (strspn(v, "0123456789") != strlen(v) || !blkd_parse_size(v, 1, 4096, &n))
			return fail(err, errlen, "max_sessions: '%s' is not a number in 1..4096", conf_quote(q, v));
		x->max_sessions = (uint32_t)n;
		return 0;
	}
	bool *flag = !strcmp(key, "read_only") ? &x->read_only
		     : !strcmp(key, "direct")  ? &x->direct
		     : !strcmp(key, "nowait")  ? &x->nowait
					       : NULL;
	if (flag) {
		if (!parse_bool(v, flag))
			return fail(err, errlen, "%s: '%s' is not yes or no", key, conf_quote(q, v));
		return 0;
	}
	if (!strcmp(key, "rw"))
		return add_id(x->rw_ids, &x->n_rw, key, v, err, errlen);
	if (!strcmp(key, "ro"))
		return add_id(x->ro_ids, &x->n_ro, key, v, err, errlen);
	return fail(err, errlen, "unknown key '%s' in [export %s]", conf_quote(q, key), x->name);
}

int blkd_conf_set(struct blkd_conf *c, const char *section, const char *key, const char *value, char *err,
		  size_t errlen)
{
	char q1[80], q2[80];
	if (!strncmp(section, "export ", 7)) {
		struct blkd_export_conf *x = export_for(c, section + 7, err, errlen);
		return x ? set_export_key(x, key, value, err, errlen) : -1;
	}
	bool known = false;
	for (size_t i = 0; i < N_TARGET_KEYS; i++) {
		if (strcmp(target_keys[i].section, section) != 0)
			continue;
		known = true;
		if (strcmp(target_keys[i].name, key) == 0)
			return set_target_key(c, &target_keys[i], value, err, errlen);
	}
	if (!known)
		return fail(err, errlen, "unknown section '[%s]' (expected [target], [tls], [trust] or [export NAME])",
			    conf_quote(q1, section));
	return fail(err, errlen, "unknown key '%s' in [%s]", conf_quote(q1, key), conf_quote(q2, section));
}

struct blkd_conf *blkd_conf_new(void)
{
	struct blkd_conf *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	snprintf(c->listen_addr, sizeof(c->listen_addr), "0.0.0.0");
	c->listen_port = BLK_DEFAULT_PORT;
	c->queue_depth = 32;
	c->queues = 4;
	c->max_transfer = 1u << 20;
	c->max_inline = 32u << 10;
	c->max_sessions = 64;
	c->max_handshakes = 256;
	c->max_handshakes_per_source = 32;
	c->handshake_rate_per_source = 100;
	c->memory_limit = UINT64_C(1) << 30;
	c->open_timeout_ms = 10000;
	c->grant_timeout_ms = 5000;
	c->rebuilds_per_min = 6;
	c->store_threads = 4;
	c->busy_poll_us = 2000; /* a round trip of the emulated fabric; a real NIC's window adapts far below it */
	c->rekey_s = RSEC_DEFAULT_REKEY_S;
	c->rekey_bytes = RSEC_DEFAULT_REKEY_BYTES;
	snprintf(c->state_dir, sizeof(c->state_dir), "/var/lib/rdmasec/blkd-trust"); /* not the server's: one writer each */
	return c;
}

/* Split "key=value" (or a bare flag) of the export spec at its '='. */
static int spec_option(struct blkd_export_conf *x, char *opt, char *err, size_t errlen)
{
	char q[80];
	char *eq = strchr(opt, '=');
	if (eq)
		*eq = '\0';
	const char *v = eq ? eq + 1 : NULL;
	if (!strcmp(opt, "ro") && !v)
		return set_export_key(x, "read_only", "yes", err, errlen);
	if (!strcmp(opt, "buffered") && !v)
		return set_export_key(x, "direct", "no", err, errlen);
	if (!strcmp(opt, "size") && v)
		return set_export_key(x, "size", v, err, errlen);
	if (!strcmp(opt, "bs") && v)
		return set_export_key(x, "block_size", v, err, errlen);
	if (!strcmp(opt, "max-sessions") && v)
		return set_export_key(x, "max_sessions", v, err, errlen);
	if (!strcmp(opt, "nowait") && v)
		return set_export_key(x, "nowait", v, err, errlen);
	return fail(err, errlen, "--export: unknown option '%s' (size=, bs=, ro, buffered, nowait=, max-sessions=)",
		    conf_quote(q, opt));
}

static int export_spec(struct blkd_conf *c, const char *spec, char *err, size_t errlen)
{
	char q[80];
	char buf[BLK_NAME_MAX + BLKD_PATH_LEN + 256];
	if (strlen(spec) >= sizeof(buf))
		return fail(err, errlen, "--export: '%s' is too long", conf_quote(q, spec));
	memcpy(buf, spec, strlen(spec) + 1);
	char *eq = strchr(buf, '=');
	if (!eq || eq == buf || !eq[1] || eq[1] == ',')
		return fail(err, errlen, "--export: '%s' is not NAME=PATH[,OPTION...]", conf_quote(q, spec));
	*eq = '\0';
	if (find_export(c, buf))
		return fail(err, errlen, "--export: export '%s' given twice", conf_quote(q, buf));
	struct blkd_export_conf *x = export_for(c, buf, err, errlen);
	if (!x)
		return -1;
	char *path = eq + 1, *opts = strchr(path, ',');
	if (opts)
		*opts++ = '\0';
	if (set_export_key(x, "path", path, err, errlen) < 0)
		return -1;
	while (opts && *opts) {
		char *next = strchr(opts, ',');
		if (next)
			*next++ = '\0';
		if (spec_option(x, opts, err, errlen) < 0)
			return -1;
		opts = next;
	}
	return 0;
}

/* All or nothing: a bad option leaves no half-made export behind. */
int blkd_conf_export_spec(struct blkd_conf *c, const char *spec, char *err, size_t errlen)
{
	unsigned before = c->n_exports;
	int rc = export_spec(c, spec, err, errlen);
	if (rc < 0)
		c->n_exports = before;
	return rc;
}

struct parse_state {
	struct blkd_conf *c;
	char *err;
	size_t errlen;
	struct conf_text in;
	bool failed;
	char seen[N_TARGET_KEYS];
};

/* A single-valued key given twice in one file is a mistake; rw and ro repeat. */
static bool duplicate(struct parse_state *p, const char *section, const char *name)
{
	for (size_t i = 0; i < N_TARGET_KEYS; i++)
		if (!strcmp(target_keys[i].section, section) && !strcmp(target_keys[i].name, name)) {
			if (p->seen[i])
				return true;
			p->seen[i] = 1;
		}
	return false;
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
	struct parse_state *p = user;
	if (p->failed || p->in.long_line)
		return 0;
	char msg[512], q[80];
	int rc;
	if (duplicate(p, section, name))
		rc = fail(msg, sizeof(msg), "duplicate key '%s' in [%s]", conf_quote(q, name), section);
	else
		rc = blkd_conf_set(p->c, section, name, value, msg, sizeof(msg));
	if (rc < 0) {
		fail(p->err, p->errlen, "line %d: %s", p->in.line, msg);
		p->failed = true;
		return 0;
	}
	return 1;
}

int blkd_conf_parse_string(struct blkd_conf *c, const char *text, char *err, size_t errlen)
{
	struct parse_state *p = calloc(1, sizeof(*p));
	if (!p)
		return fail(err, errlen, "out of memory");
	*p = (struct parse_state){ .c = c, .err = err, .errlen = errlen };
	conf_text_init(&p->in, text);
	int line = ini_parse_stream(conf_text_reader, &p->in, handler, p);
	int rc = 0;
	if (p->failed)
		rc = -1;
	else if (p->in.long_line)
		rc = fail(err, errlen, "line %d: line too long (max %d characters)", p->in.long_line, p->in.long_max);
	else if (line > 0)
		rc = fail(err, errlen, "line %d: expected '[section]' or 'key = value'", line);
	else if (line < 0)
		rc = fail(err, errlen, "out of memory");
	free(p);
	return rc;
}

int blkd_conf_parse_file(struct blkd_conf *c, const char *path, char *err, size_t errlen)
{
	char *text = NULL;
	if (conf_read_text(path, CONF_MAX_FILE, &text, err, errlen) < 0)
		return -1;
	int rc = blkd_conf_parse_string(c, text, err, errlen);
	free(text);
	return rc;
}

static unsigned lowest(unsigned a, unsigned b)
{
	return a < b ? a : b;
}

uint32_t blkd_identity_sessions(const struct blkd_conf *c)
{
	return c->max_sessions_per_identity ? c->max_sessions_per_identity : (c->max_sessions + 1) / 2;
}

uint64_t blkd_identity_memory(const struct blkd_conf *c)
{
	return c->memory_per_identity ? c->memory_per_identity : c->memory_limit / 2;
}

static uint64_t room(uint64_t limit, uint64_t held)
{
	return held < limit ? limit - held : 0;
}

bool blkd_open_budget(const struct blkd_conf *c, unsigned asked_qd, unsigned asked_queues, size_t slot_len,
		      const struct blkd_reserved *held, struct blkd_open_budget *out)
{
	unsigned qd = lowest(lowest(asked_qd, c->queue_depth), BLK_QD_GRANT_MAX);
	unsigned queues = lowest(asked_queues, c->queues);
	uint64_t per_queue = (uint64_t)slot_len * qd;
	uint64_t all = room(c->memory_limit, held->all), mine = room(blkd_identity_memory(c), held->identity);
	out->identity_bound = mine < all;
	uint64_t left = out->identity_bound ? mine : all;
	if (qd == 0 || per_queue == 0)
		return false;
	if (queues > left / per_queue)
		queues = (unsigned)(left / per_queue);
	if (queues == 0)
		return false;
	out->queue_depth = qd;
	out->queues = queues;
	out->bytes = per_queue * queues;
	return true;
}

int blkd_conf_check(const struct blkd_conf *c, char *err, size_t errlen)
{
	if ((!c->ca[0] && !c->etcd[0]) || !c->cert[0] || !c->key[0])
		return fail(err, errlen, "no credentials: give --certs DIR, --ca/--cert/--key, or ca, cert and key in [tls]"
				 " (ca: or --trust-etcd)");
	if (c->n_exports == 0)
		return fail(err, errlen, "no export: give --export NAME=PATH or an [export NAME] section");
	if (c->max_transfer % BLK_BLOCK_MAX)
		return fail(err, errlen, "max_transfer: %u is not a multiple of 4096", c->max_transfer);
	if (c->max_inline % BLK_BLOCK_MAX || c->max_inline > c->max_transfer)
		return fail(err, errlen, "max_inline: %u is not a multiple of 4096 up to max_transfer", c->max_inline);
	for (unsigned i = 0; i < c->n_exports; i++) {
		const struct blkd_export_conf *x = &c->exports[i];
		if (!x->path[0])
			return fail(err, errlen, "export '%s' has no path", x->name);
		if (x->size % x->block_size)
			return fail(err, errlen, "export '%s': size %llu is not a multiple of its block size %u", x->name,
				    (unsigned long long)x->size, x->block_size);
		if (x->n_rw + x->n_ro == 0)
			return fail(err, errlen, "export '%s': no identity may use it (add rw or ro, '*' for any)",
				    x->name);
	}
	return 0;
}
