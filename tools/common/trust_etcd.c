/* SPDX-License-Identifier: MIT */
/* Cluster trust through etcd's v3 JSON gateway (trust_etcd.h). */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <json-c/json.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "log.h"
#include "rdmasec.h"
#include "trust_etcd.h"

static const char *const entry_names[] = { "ca", "crl", "allow" };

char **trust_snapshot_slot(struct trust_snapshot *s, size_t i)
{
	return i == 0 ? &s->ca : i == 1 ? &s->crl : &s->allow;
}

/* ---- the option ---- */

/* HOST:PORT, HOST a name, an IPv4 address or a bracketed IPv6 one ([::1]:2379), PORT 1..65535. */
static int endpoint_parse(struct trust_spec *out, const char *ep, size_t len, char *err, size_t errlen)
{
	const char *colon = len ? memrchr(ep, ':', len) : NULL;
	if (len == 0 || len >= sizeof(out->endpoints[0]) || !colon || colon == ep || colon + 1 == ep + len ||
	    (ep[0] == '[' && colon[-1] != ']')) {
		snprintf(err, errlen, "trust-etcd: endpoint '%.*s' is not HOST:PORT", (int)(len > 100 ? 100 : len), ep);
		return -1;
	}
	unsigned long port = 0;
	for (const char *p = colon + 1; p < ep + len; p++) {
		port = port * 10 + (unsigned long)(*p - '0');
		if (*p < '0' || *p > '9' || port > 65535) {
			snprintf(err, errlen, "trust-etcd: endpoint '%.*s': the port is not in 1..65535", (int)len, ep);
			return -1;
		}
	}
	if (port == 0) {
		snprintf(err, errlen, "trust-etcd: endpoint '%.*s': the port is not in 1..65535", (int)len, ep);
		return -1;
	}
	for (const char *p = ep; p < colon; p++)
		if (!(*p == '.' || *p == '-' || *p == '[' || *p == ']' || *p == ':' || (*p >= '0' && *p <= '9') ||
		      (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z'))) {
			snprintf(err, errlen, "trust-etcd: endpoint '%.*s': bad host", (int)len, ep);
			return -1;
		}
	if (out->n_endpoints == TRUST_MAX_ENDPOINTS) {
		snprintf(err, errlen, "trust-etcd: more than %d endpoints", TRUST_MAX_ENDPOINTS);
		return -1;
	}
	memcpy(out->endpoints[out->n_endpoints], ep, len);
	out->endpoints[out->n_endpoints++][len] = '\0';
	return 0;
}

static bool prefix_ok(const char *p)
{
	size_t n = strlen(p);
	if (n < 2 || p[0] != '/' || p[n - 1] == '/')
		return false;
	for (; *p; p++)
		if (*p <= 0x20 || *p >= 0x7f)
			return false;
	return true;
}

int trust_spec_parse(const char *text, struct trust_spec *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	if (strncmp(text, "https://", 8) == 0) {
		out->https = true;
		text += 8;
	} else if (strncmp(text, "http://", 7) == 0) {
		text += 7;
	}
	const char *slash = strchr(text, '/');
	if (!slash) {
		snprintf(err, errlen, "trust-etcd: '%.200s' has no /PREFIX (HOST:PORT[,HOST:PORT...]/PREFIX)", text);
		return -1;
	}
	for (const char *ep = text; ep < slash;) {
		const char *end = memchr(ep, ',', (size_t)(slash - ep));
		if (!end)
			end = slash;
		if (endpoint_parse(out, ep, (size_t)(end - ep), err, errlen) < 0)
			return -1;
		ep = end + 1;
	}
	if (out->n_endpoints == 0 || slash[-1] == ',') {
		snprintf(err, errlen, "trust-etcd: '%.200s' names no endpoint before the prefix", text);
		return -1;
	}
	if (strlen(slash) >= sizeof(out->prefix) || !prefix_ok(slash)) {
		snprintf(err, errlen, "trust-etcd: prefix '%.200s' is not /NAME[/NAME...] (printable, no trailing /)", slash);
		return -1;
	}
	snprintf(out->prefix, sizeof(out->prefix), "%s", slash);
	return 0;
}

/* ---- the range reply ---- */

/* Standard base64 with padding, as etcd's gateway writes bytes; NULL if malformed or over cap. */
static char *b64_decode(const char *in, size_t len, size_t cap, size_t *out_len)
{
	if (len % 4 || len / 4 * 3 > cap + 2)
		return NULL;
	unsigned char *out = malloc(len / 4 * 3 + 1);
	if (!out)
		return NULL;
	int n = len ? EVP_DecodeBlock(out, (const unsigned char *)in, (int)len) : 0;
	if (n < 0) {
		free(out);
		return NULL;
	}
	size_t pad = len >= 2 && in[len - 1] == '=' ? (in[len - 2] == '=' ? 2 : 1) : 0;
	*out_len = (size_t)n - pad;
	out[*out_len] = '\0';
	if (*out_len > cap) {
		free(out);
		return NULL;
	}
	return (char *)out;
}

static char *b64_encode(const char *in, size_t len)
{
	char *out = malloc(4 * ((len + 2) / 3) + 1);
	if (out)
		EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)in, (int)len);
	return out;
}

/* A string member of obj, or NULL. */
static const char *member_str(struct json_object *obj, const char *name, size_t *len)
{
	struct json_object *v;
	if (!json_object_object_get_ex(obj, name, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	*len = (size_t)json_object_get_string_len(v);
	return json_object_get_string(v);
}

/* One kvs element: fills the slot its key names (others ignored). 0 or -1. */
static int take_kv(struct json_object *kv, const char *prefix, struct trust_snapshot *out, char *err, size_t errlen)
{
	size_t klen = 0, vlen = 0, key_len = 0;
	const char *k64 = member_str(kv, "key", &klen), *v64 = member_str(kv, "value", &vlen);
	if (!json_object_is_type(kv, json_type_object) || !k64) {
		snprintf(err, errlen, "etcd reply: a kv without a key");
		return -1;
	}
	char *key = b64_decode(k64, klen, 1024, &key_len);
	if (!key) {
		snprintf(err, errlen, "etcd reply: a key is not base64 (or too long)");
		return -1;
	}
	size_t plen = strlen(prefix);
	int rc = 0;
	for (size_t i = 0; i < 3; i++) {
		const char *name = entry_names[i];
		if (key_len != plen + 1 + strlen(name) || memcmp(key, prefix, plen) || key[plen] != '/' ||
		    strcmp(key + plen + 1, name))
			continue;
		char **slot = trust_snapshot_slot(out, i);
		size_t len;
		char *value = *slot ? NULL : b64_decode(v64 ? v64 : "", vlen, TRUST_MAX_ENTRY, &len);
		if (!value) {
			snprintf(err, errlen, "etcd: %s/%s: %s", prefix, name,
				 *slot ? "twice in one reply" : "not base64, or over the size limit");
			rc = -1;
		} else if (strlen(value) != len) {
			snprintf(err, errlen, "etcd: %s/%s: holds a NUL byte", prefix, name);
			free(value);
			rc = -1;
		} else {
			*slot = value;
		}
		break;
	}
	free(key);
	return rc;
}

int trust_parse_range(const char *json, size_t len, const char *prefix, struct trust_snapshot *out, char *err,
		      size_t errlen)
{
	memset(out, 0, sizeof(*out));
	if (len > TRUST_MAX_RESPONSE || len > INT_MAX) {
		snprintf(err, errlen, "etcd reply: over %u bytes", TRUST_MAX_RESPONSE);
		return -1;
	}
	struct json_tokener *tok = json_tokener_new_ex(16);
	if (!tok) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	struct json_object *root = json_tokener_parse_ex(tok, json, (int)len);
	bool complete = json_tokener_get_error(tok) == json_tokener_success;
	for (size_t end = json_tokener_get_parse_end(tok); complete && end < len; end++)
		complete = json[end] == ' ' || json[end] == '\n' || json[end] == '\r' || json[end] == '\t';
	json_tokener_free(tok);
	struct json_object *kvs = NULL;
	int rc = -1;
	if (!root || !complete || !json_object_is_type(root, json_type_object)) {
		snprintf(err, errlen, "etcd reply: not a JSON object");
	} else if (json_object_object_get_ex(root, "error", NULL) || json_object_object_get_ex(root, "code", NULL)) {
		size_t mlen;
		const char *m = member_str(root, "message", &mlen);
		snprintf(err, errlen, "etcd reply: error '%.200s'", m ? m : "?");
	} else if (!json_object_object_get_ex(root, "header", NULL)) {
		snprintf(err, errlen, "etcd reply: no header");
	} else if (json_object_object_get_ex(root, "kvs", &kvs) && !json_object_is_type(kvs, json_type_array)) {
		snprintf(err, errlen, "etcd reply: kvs is not an array");
	} else {
		rc = 0;
		size_t n = kvs ? json_object_array_length(kvs) : 0;
		for (size_t i = 0; i < n && rc == 0; i++)
			rc = take_kv(json_object_array_get_idx(kvs, i), prefix, out, err, errlen);
	}
	json_object_put(root);
	if (rc < 0)
		trust_snapshot_clear(out);
	return rc;
}

/* ---- the check ---- */

static STACK_OF(X509) *ca_bundle_parse(const char *pem, char *err, size_t errlen)
{
	STACK_OF(X509) *certs = sk_X509_new_null();
	BIO *bio = BIO_new_mem_buf(pem, -1);
	if (!certs || !bio) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	X509 *x;
	while ((x = PEM_read_bio_X509(bio, NULL, NULL, NULL))) {
		if (X509_check_ca(x) < 1 || !sk_X509_push(certs, x)) {
			X509_free(x);
			snprintf(err, errlen, "ca: certificate %d is not a CA", sk_X509_num(certs) + 1);
			goto fail;
		}
	}
	/* The loop ends at the first thing that is not a certificate: it must be the end. */
	unsigned long e = ERR_peek_last_error();
	ERR_clear_error();
	if (sk_X509_num(certs) == 0 || ERR_GET_REASON(e) != PEM_R_NO_START_LINE) {
		snprintf(err, errlen, "ca: %s", sk_X509_num(certs) ? "a PEM block is not a certificate" : "no PEM certificate");
		goto fail;
	}
	BIO_free(bio);
	return certs;
fail:
	BIO_free(bio);
	sk_X509_pop_free(certs, X509_free);
	return NULL;
}

/* CRL number n (from 1): in date and signed by a CA of the bundle. 0, or -1 with err. */
static int crl_one_check(X509_CRL *crl, int n, STACK_OF(X509) *cas, char *err, size_t errlen)
{
	const ASN1_TIME *next = X509_CRL_get0_nextUpdate(crl);
	if (next && X509_cmp_current_time(next) <= 0) {
		snprintf(err, errlen, "crl: CRL %d: its next update is past (expired)", n);
		return -1;
	}
	for (int i = 0; i < sk_X509_num(cas); i++) {
		X509 *ca = sk_X509_value(cas, i);
		if (X509_NAME_cmp(X509_get_subject_name(ca), X509_CRL_get_issuer(crl)) == 0 &&
		    X509_CRL_verify(crl, X509_get0_pubkey(ca)) == 1)
			return 0;
	}
	ERR_clear_error();
	snprintf(err, errlen, "crl: CRL %d: not signed by a CA of the bundle", n);
	return -1;
}

/* One or more PEM CRLs (one per CA while a bundle changes CA), each checked; nothing else. */
static int crl_check(const char *pem, STACK_OF(X509) *cas, char *err, size_t errlen)
{
	BIO *bio = BIO_new_mem_buf(pem, -1);
	if (!bio) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	int n = 0, rc = 0;
	X509_CRL *crl;
	while (rc == 0 && (crl = PEM_read_bio_X509_CRL(bio, NULL, NULL, NULL))) {
		if (++n > TRUST_MAX_CRLS) {
			snprintf(err, errlen, "crl: more than %d CRLs", TRUST_MAX_CRLS);
			rc = -1;
		} else {
			rc = crl_one_check(crl, n, cas, err, errlen);
		}
		X509_CRL_free(crl);
	}
	unsigned long e = ERR_peek_last_error();
	ERR_clear_error();
	BIO_free(bio);
	if (rc == 0 && (n == 0 || ERR_GET_REASON(e) != PEM_R_NO_START_LINE)) {
		snprintf(err, errlen, "crl: %s", n ? "a PEM block is not a CRL" : "not a PEM CRL");
		rc = -1;
	}
	return rc;
}

int trust_allow_split(const char *allow, char (*rules)[256], size_t max, char *err, size_t errlen)
{
	size_t n = 0;
	for (const char *line = allow; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		if (len && line[len - 1] == '\r')
			len--;
		if (len && line[0] != '#') {
			char rule[300];
			if (len >= sizeof(rule)) {
				snprintf(err, errlen, "allow: a rule of %zu bytes (at most %u)", len, RSEC_AUTHZ_RULE_MAX);
				return -1;
			}
			memcpy(rule, line, len);
			rule[len] = '\0';
			char why[256];
			if (rsec_authz_rule_check(rule, why, sizeof(why)) < 0) {
				snprintf(err, errlen, "allow: %s", why);
				return -1;
			}
			if (n == max) {
				snprintf(err, errlen, "allow: more than %zu rules", max);
				return -1;
			}
			if (rules)
				memcpy(rules[n], rule, len + 1);
			n++;
		}
		line = end ? end + 1 : NULL;
	}
	return (int)n;
}

int trust_snapshot_check(const struct trust_snapshot *s, char *err, size_t errlen)
{
	for (size_t i = 0; i < 3; i++) {
		const char *v = *trust_snapshot_slot((struct trust_snapshot *)s, i);
		if (!v && i < 2) {
			snprintf(err, errlen, "%s: missing", entry_names[i]);
			return -1;
		}
		if (v && strlen(v) > TRUST_MAX_ENTRY) {
			snprintf(err, errlen, "%s: over %u bytes", entry_names[i], TRUST_MAX_ENTRY);
			return -1;
		}
	}
	if (trust_allow_split(s->allow, NULL, RSEC_AUTHZ_RULES_MAX, err, errlen) < 0)
		return -1;
	STACK_OF(X509) *cas = ca_bundle_parse(s->ca, err, errlen);
	if (!cas)
		return -1;
	int rc = crl_check(s->crl, cas, err, errlen);
	sk_X509_pop_free(cas, X509_free);
	return rc;
}

static bool same_text(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0) || (!a && b && !*b) || (!b && a && !*a);
}

bool trust_snapshot_equal(const struct trust_snapshot *a, const struct trust_snapshot *b)
{
	return same_text(a->ca, b->ca) && same_text(a->crl, b->crl) && same_text(a->allow, b->allow);
}

void trust_snapshot_clear(struct trust_snapshot *s)
{
	free(s->ca);
	free(s->crl);
	free(s->allow);
	memset(s, 0, sizeof(*s));
}

/* ---- the gateway ---- */

struct reply {
	char *data;
	size_t len;
	bool over;
};

static size_t reply_take(char *ptr, size_t size, size_t nmemb, void *arg)
{
	struct reply *r = arg;
	size_t n = size * nmemb;
	if (r->len + n > TRUST_MAX_RESPONSE) {
		r->over = true;
		return 0; /* curl stops: a reply this big is not ours */
	}
	char *grown = realloc(r->data, r->len + n + 1);
	if (!grown)
		return 0;
	memcpy(grown + r->len, ptr, n);
	r->data = grown;
	r->len += n;
	return n;
}

/* {"key": b64(PREFIX/), "range_end": b64(PREFIX0)}: every key under PREFIX/ ('0' follows '/'). */
static char *range_request(const char *prefix)
{
	char from[300], to[300];
	snprintf(from, sizeof(from), "%s/", prefix);
	snprintf(to, sizeof(to), "%s0", prefix);
	char *k = b64_encode(from, strlen(from)), *e = b64_encode(to, strlen(to));
	char *body = k && e ? malloc(strlen(k) + strlen(e) + 40) : NULL;
	if (body)
		sprintf(body, "{\"key\":\"%s\",\"range_end\":\"%s\"}", k, e);
	free(k);
	free(e);
	return body;
}

/* curl asks between reads: a server shutting down does not wait out a slow etcd. */
static int fetch_abort(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
	(void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
	const atomic_bool *stop = arg;
	return stop && atomic_load(stop);
}

static int fetch_one(const struct trust_spec *spec, const char *ep, const char *body, const atomic_bool *stop,
		     struct trust_snapshot *out, char *err, size_t errlen)
{
	char url[200];
	snprintf(url, sizeof(url), "%s://%s/v3/kv/range", spec->https ? "https" : "http", ep);
	CURL *c = curl_easy_init();
	struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");
	struct reply r = { 0 };
	if (!c || !hdr) {
		snprintf(err, errlen, "out of memory");
		curl_slist_free_all(hdr);
		curl_easy_cleanup(c);
		return -1;
	}
	(void)curl_easy_setopt(c, CURLOPT_URL, url);
	(void)curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	(void)curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	(void)curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 1000L);
	(void)curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 3000L);
	(void)curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
	(void)curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	(void)curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, reply_take);
	(void)curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
	(void)curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	(void)curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, fetch_abort);
	(void)curl_easy_setopt(c, CURLOPT_XFERINFODATA, (void *)stop);
	CURLcode cc = curl_easy_perform(c);
	long status = 0;
	(void)curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	int rc = -1;
	if (cc != CURLE_OK)
		snprintf(err, errlen, "%s: %s", ep, r.over ? "reply too big" : curl_easy_strerror(cc));
	else if (status != 200)
		snprintf(err, errlen, "%s: HTTP status %ld", ep, status);
	else
		rc = trust_parse_range(r.data ? r.data : "", r.len, spec->prefix, out, err, errlen);
	free(r.data);
	curl_slist_free_all(hdr);
	curl_easy_cleanup(c);
	return rc;
}

static int fetch_all(const struct trust_spec *spec, const atomic_bool *stop, struct trust_snapshot *out, char *err,
		     size_t errlen)
{
	memset(out, 0, sizeof(*out));
	char *body = range_request(spec->prefix);
	if (!body) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	int rc = -1;
	for (size_t i = 0; i < spec->n_endpoints && rc < 0 && !(stop && atomic_load(stop)); i++)
		rc = fetch_one(spec, spec->endpoints[i], body, stop, out, err, errlen);
	free(body);
	return rc;
}

int trust_fetch(const struct trust_spec *spec, struct trust_snapshot *out, char *err, size_t errlen)
{
	return fetch_all(spec, NULL, out, err, errlen);
}

int trust_bootstrap(const struct trust_spec *spec, const char *dir, struct trust_snapshot *applied, bool *from_etcd,
		    char *err, size_t errlen)
{
	char why[512];
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		snprintf(err, errlen, "cannot initialize libcurl");
		return -1;
	}
	*from_etcd = trust_fetch(spec, applied, why, sizeof(why)) == 0;
	if (!*from_etcd) {
		if (trust_state_read(dir, applied, err, errlen) < 0) {
			char disk[512];
			snprintf(disk, sizeof(disk), "%s", err);
			snprintf(err, errlen, "etcd unreachable (%s) and no good copy on disk (%s)", why, disk);
			return -1;
		}
		snprintf(err, errlen, "%s", why); /* the caller logs why it is running on the disk's copy */
		return 0;
	}
	if (trust_snapshot_check(applied, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "etcd %s: %s", spec->prefix, why);
		trust_snapshot_clear(applied);
		return -1;
	}
	if (trust_state_write(dir, applied, err, errlen) < 0) {
		trust_snapshot_clear(applied);
		return -1;
	}
	return 0;
}

/* ---- the watcher ---- */

struct trust_watch {
	struct trust_spec spec;
	char dir[4096];
	struct trust_snapshot applied, rejected; /* the thread's */
	bool reachable;
	bool write_failing; /* the state directory refused the last copy: said once, retried each poll */
	int efd;
	pthread_t thread;
	pthread_mutex_t lock; /* events, why, stop */
	pthread_cond_t wake;
	unsigned events;
	char why[512];
	bool stop;
	atomic_bool stopping; /* stop, for curl's callback without the lock */
};

static void watch_post(struct trust_watch *w, unsigned ev, const char *why)
{
	pthread_mutex_lock(&w->lock);
	w->events |= ev;
	if (why)
		snprintf(w->why, sizeof(w->why), "%s", why);
	pthread_mutex_unlock(&w->lock);
	uint64_t one = 1;
	(void)!write(w->efd, &one, sizeof(one));
}

/* Logged once per change of state, not once a second. */
static void watch_reachable(struct trust_watch *w, bool now, const char *why)
{
	if (now == w->reachable)
		return;
	w->reachable = now;
	if (now)
		log_event("info", "trust_etcd_reachable", "prefix=%s", log_q(w->spec.prefix));
	else
		log_event("warn", "trust_etcd_unreachable", "prefix=%s reason=%s kept=last_good", log_q(w->spec.prefix),
			  log_q(why));
}

/* One poll: a new, good copy is written and handed over; a bad one is reported once. */
static void watch_poll(struct trust_watch *w)
{
	struct trust_snapshot got;
	char why[512];
	if (fetch_all(&w->spec, &w->stopping, &got, why, sizeof(why)) < 0) {
		if (atomic_load(&w->stopping))
			return;
		/* An endpoint that answers garbage is reachable, but what it says is not applied. */
		watch_reachable(w, false, why);
		return;
	}
	watch_reachable(w, true, NULL);
	if (trust_snapshot_equal(&got, &w->applied) || trust_snapshot_equal(&got, &w->rejected)) {
		trust_snapshot_clear(&got);
		return;
	}
	if (trust_snapshot_check(&got, why, sizeof(why)) < 0) {
		trust_snapshot_clear(&w->rejected);
		w->rejected = got;
		watch_post(w, TRUST_EV_REJECTED, why);
		return;
	}
	if (trust_state_write(w->dir, &got, why, sizeof(why)) < 0) {
		trust_snapshot_clear(&got);
		if (!w->write_failing)
			watch_post(w, TRUST_EV_REJECTED, why);
		w->write_failing = true;
		return;
	}
	w->write_failing = false;
	trust_snapshot_clear(&w->applied);
	trust_snapshot_clear(&w->rejected);
	w->applied = got;
	watch_post(w, TRUST_EV_CHANGED, NULL);
}

static void *watch_main(void *arg)
{
	struct trust_watch *w = arg;
	pthread_mutex_lock(&w->lock);
	while (!w->stop) {
		pthread_mutex_unlock(&w->lock);
		watch_poll(w);
		struct timespec until;
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += (long)TRUST_POLL_MS * 1000000L;
		until.tv_sec += until.tv_nsec / 1000000000L;
		until.tv_nsec %= 1000000000L;
		pthread_mutex_lock(&w->lock);
		while (!w->stop && pthread_cond_timedwait(&w->wake, &w->lock, &until) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

struct trust_watch *trust_watch_start(const struct trust_spec *spec, const char *dir, struct trust_snapshot *applied,
				      bool reachable, char *err, size_t errlen)
{
	struct trust_watch *w = calloc(1, sizeof(*w));
	pthread_condattr_t ca;
	if (!w) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	w->spec = *spec;
	snprintf(w->dir, sizeof(w->dir), "%s", dir);
	w->applied = *applied;
	memset(applied, 0, sizeof(*applied));
	w->reachable = reachable;
	w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	pthread_mutex_init(&w->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->wake, &ca);
	pthread_condattr_destroy(&ca);
	/* The thread takes no signal: the server reads them from its signalfd, whenever it blocks them. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int rc = w->efd < 0 ? -1 : pthread_create(&w->thread, NULL, watch_main, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		snprintf(err, errlen, "trust-etcd: cannot start the watcher: %s", strerror(errno));
		if (w->efd >= 0)
			close(w->efd);
		trust_snapshot_clear(&w->applied);
		free(w);
		return NULL;
	}
	return w;
}

int trust_watch_fd(const struct trust_watch *w)
{
	return w->efd;
}

unsigned trust_watch_take(struct trust_watch *w, char *why, size_t cap)
{
	uint64_t n;
	(void)!read(w->efd, &n, sizeof(n));
	pthread_mutex_lock(&w->lock);
	unsigned ev = w->events;
	w->events = 0;
	snprintf(why, cap, "%s", w->why);
	pthread_mutex_unlock(&w->lock);
	return ev;
}

void trust_watch_stop(struct trust_watch *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->stop = true;
	atomic_store(&w->stopping, true);
	pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	close(w->efd);
	trust_snapshot_clear(&w->applied);
	trust_snapshot_clear(&w->rejected);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->wake);
	free(w);
}
