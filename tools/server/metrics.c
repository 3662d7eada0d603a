/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "prom_file.h"
#include "utf8.h"

#define METRICS_PEERS_LIMIT (1u << 20)

struct metrics_entry {
	char key[METRICS_KEY_MAX];
	struct peer_counters c;
};

struct metrics {
	size_t max_peers, npeers;
	size_t naddrs;                /* entries keyed by address (unauthenticated): at most half */
	size_t mask;                  /* slots - 1; slots is a power of two >= 2 * max_peers */
	struct metrics_entry **slots; /* open addressing, linear probing; entries never leave */
	struct metrics_entry other;
	uint64_t folded, generation;
};

struct metrics *metrics_new(size_t max_peers)
{
	if (max_peers == 0 || max_peers > METRICS_PEERS_LIMIT)
		return NULL;
	struct metrics *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	size_t slots = 2;
	while (slots < 2 * max_peers)
		slots *= 2;
	m->slots = calloc(slots, sizeof(*m->slots));
	if (!m->slots) {
		free(m);
		return NULL;
	}
	m->max_peers = max_peers;
	m->mask = slots - 1;
	snprintf(m->other.key, sizeof(m->other.key), "%s", METRICS_OTHER);
	return m;
}

void metrics_free(struct metrics *m)
{
	if (!m)
		return;
	for (size_t i = 0; i <= m->mask; i++)
		free(m->slots[i]);
	free(m->slots);
	free(m);
}

/* FNV-1a: keys are identities vouched for by the CA, or addresses; the table is at most half full. */
static size_t key_hash(const char *key)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (const unsigned char *p = (const unsigned char *)key; *p; p++)
		h = (h ^ *p) * 0x100000001b3ull;
	return (size_t)h;
}

/* The slot holding key, or the empty slot where it would go. */
static size_t find_slot(const struct metrics *m, const char *key)
{
	size_t i = key_hash(key) & m->mask;
	while (m->slots[i] && strcmp(m->slots[i]->key, key) != 0)
		i = (i + 1) & m->mask;
	return i;
}

static void cut_key(char out[static METRICS_KEY_MAX], const char *key)
{
	size_t n = strnlen(key, METRICS_KEY_MAX - 1);
	memcpy(out, key, n);
	out[n] = '\0';
}

static bool counters_zero(const struct peer_counters *d)
{
	return !(d->connections | d->mac_failures | d->seq_violations | d->qp_errors | d->refused_handshakes |
		 d->protocol_violations | d->malformed | d->rebuilds | d->resumes);
}

void metrics_add(struct metrics *m, const char *key, const struct peer_counters *d)
{
	if (!m || !key || counters_zero(d))
		return;
	char k[METRICS_KEY_MAX];
	cut_key(k, key);
	size_t i = find_slot(m, k);
	struct metrics_entry *e = m->slots[i];
	/* Anyone can connect from many addresses: they must not crowd out the identities. */
	bool by_addr = strncmp(k, "addr:", 5) == 0;
	bool room = m->npeers < m->max_peers && (!by_addr || m->naddrs < (m->max_peers + 1) / 2);
	if (!e && room && (e = calloc(1, sizeof(*e))) != NULL) {
		memcpy(e->key, k, sizeof(k));
		m->slots[i] = e;
		m->npeers++;
		m->naddrs += by_addr;
	}
	if (!e) {
		e = &m->other;
		m->folded++;
	}
	e->c.connections += d->connections;
	e->c.mac_failures += d->mac_failures;
	e->c.seq_violations += d->seq_violations;
	e->c.qp_errors += d->qp_errors;
	e->c.refused_handshakes += d->refused_handshakes;
	e->c.protocol_violations += d->protocol_violations;
	e->c.malformed += d->malformed;
	e->c.rebuilds += d->rebuilds;
	e->c.resumes += d->resumes;
	m->generation++;
}

const char *metrics_lookup(const struct metrics *m, const char *key, struct peer_counters *out)
{
	char k[METRICS_KEY_MAX];
	cut_key(k, key);
	const struct metrics_entry *e = m->slots[find_slot(m, k)];
	if (e) {
		*out = e->c;
		return e->key;
	}
	if (m->npeers < m->max_peers) {
		*out = (struct peer_counters){ 0 };
		return key;
	}
	*out = m->other.c;
	return METRICS_OTHER;
}

size_t metrics_peers(const struct metrics *m)
{
	return m->npeers;
}

uint64_t metrics_folded(const struct metrics *m)
{
	return m->folded;
}

uint64_t metrics_generation(const struct metrics *m)
{
	return m->generation;
}

void metrics_peer_key(char out[static METRICS_KEY_MAX], const char *identity, const char *peer_addr)
{
	if (identity && *identity) {
		cut_key(out, identity);
		return;
	}
	const char *ip = peer_addr ? peer_addr : "";
	size_t len;
	if (ip[0] == '[') {
		ip++;
		len = strcspn(ip, "]");
	} else {
		const char *colon = strrchr(ip, ':');
		len = colon ? (size_t)(colon - ip) : strlen(ip);
	}
	if (len == 0)
		snprintf(out, METRICS_KEY_MAX, "addr:unknown");
	else
		snprintf(out, METRICS_KEY_MAX, "addr:%.*s", (int)len, ip);
}

/*
 * A label value as the format wants it: backslash, double quote and newline
 * escaped. Other control bytes and bytes that are not UTF-8 become '?', so
 * the output always parses.
 */
static int put_label(FILE *out, const char *value)
{
	for (const unsigned char *p = (const unsigned char *)value; *p;) {
		size_t n = utf8_seq_len(p);
		int rc;
		if (*p == '\\')
			rc = fputs("\\\\", out);
		else if (*p == '"')
			rc = fputs("\\\"", out);
		else if (*p == '\n')
			rc = fputs("\\n", out);
		else if (n == 0 || *p < 0x20 || *p == 0x7f)
			rc = fputc('?', out);
		else
			rc = fwrite(p, 1, n, out) == n ? 0 : EOF;
		if (rc == EOF)
			return -1;
		p += n ? n : 1;
	}
	return 0;
}

static int compare_entries(const void *a, const void *b)
{
	const struct metrics_entry *const *x = a, *const *y = b;
	return strcmp((*x)->key, (*y)->key);
}

static int put_header(FILE *out, const char *name, const char *type, const char *help)
{
	return fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type) < 0 ? -1 : 0;
}

static const struct peer_family {
	const char *name, *help;
	size_t off;
} peer_families[] = {
	{ "rdmasec_server_connections_total", "Connections that got a queue pair, counted when they end.",
	  offsetof(struct peer_counters, connections) },
	{ "rdmasec_server_mac_failures_total",
	  "Messages and verified transfers that failed authentication, malformed frames included.",
	  offsetof(struct peer_counters, mac_failures) },
	{ "rdmasec_server_malformed_total", "Of those, data frames whose header did not parse (forged or corrupt).",
	  offsetof(struct peer_counters, malformed) },
	{ "rdmasec_server_seq_violations_total", "Messages replayed or out of sequence.",
	  offsetof(struct peer_counters, seq_violations) },
	{ "rdmasec_server_qp_errors_total", "Queue pairs that went to the error state.",
	  offsetof(struct peer_counters, qp_errors) },
	{ "rdmasec_server_protocol_violations_total",
	  "Connections closed for a completion rdmasec never asks for: a WRITE WITH IMMEDIATE, a SEND_WITH_INV, "
	  "an oversized frame.",
	  offsetof(struct peer_counters, protocol_violations) },
	{ "rdmasec_server_rebuilds_total", "Data paths rebuilt under the same session (self-healing).",
	  offsetof(struct peer_counters, rebuilds) },
	{ "rdmasec_server_resumes_total", "Sessions that went on over a new control channel.",
	  offsetof(struct peer_counters, resumes) },
	{ "rdmasec_server_refused_handshakes_total",
	  "Connections refused before any RDMA resource: failed authentication, max_per_identity, max_clients.",
	  offsetof(struct peer_counters, refused_handshakes) },
};

static int put_peer_families(FILE *out, const struct metrics_entry **entries, size_t count)
{
	for (size_t f = 0; f < sizeof(peer_families) / sizeof(peer_families[0]); f++) {
		const struct peer_family *pf = &peer_families[f];
		if (put_header(out, pf->name, "counter", pf->help) < 0)
			return -1;
		for (size_t i = 0; i < count; i++) {
			uint64_t v;
			memcpy(&v, (const char *)&entries[i]->c + pf->off, sizeof(v));
			if (fprintf(out, "%s{peer=\"", pf->name) < 0 || put_label(out, entries[i]->key) < 0 ||
			    fprintf(out, "\"} %llu\n", (unsigned long long)v) < 0)
				return -1;
		}
	}
	return 0;
}

static int put_total(FILE *out, const char *name, const char *type, const char *help, uint64_t v)
{
	if (put_header(out, name, type, help) < 0)
		return -1;
	return fprintf(out, "%s %llu\n", name, (unsigned long long)v) < 0 ? -1 : 0;
}

/* One server-wide counter or gauge. */
struct total {
	const char *name, *type, *help;
	uint64_t v;
};

static int put_table(FILE *out, const struct total *t, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (put_total(out, t[i].name, t[i].type, t[i].help, t[i].v) < 0)
			return -1;
	return 0;
}

/* What happened before authentication: accepted, refused at the front door, paused. */
static int put_door_totals(FILE *out, const struct server_counters *n)
{
	const struct total t[] = {
		{ "rdmasec_server_accepted_total", "counter", "TCP connections accepted.", n->accepted },
		{ "rdmasec_server_refused_capacity_total", "counter",
		  "Connections closed at accept: max_clients reached.", n->refused_capacity },
		{ "rdmasec_server_refused_source_concurrent_total", "counter",
		  "Connections closed at accept: max_handshakes_per_source in progress.", n->refused_source_concurrent },
		{ "rdmasec_server_refused_source_rate_total", "counter",
		  "Connections closed at accept: handshake_rate_per_source exceeded.", n->refused_source_rate },
		{ "rdmasec_server_refused_source_table_total", "counter",
		  "Connections closed at accept: the source table was full or the address unusable.",
		  n->refused_source_table },
		{ "rdmasec_server_refused_max_handshakes_total", "counter",
		  "Connections closed at accept: max_handshakes in progress, no source over its share.",
		  n->refused_handshakes },
		{ "rdmasec_server_refused_handshake_rate_total", "counter",
		  "Connections closed at accept: handshake_rate exceeded and their source had one in progress.",
		  n->refused_handshake_rate },
		{ "rdmasec_server_handshakes_evicted_total", "counter",
		  "Handshakes closed at max_handshakes to make room for a source with fewer.", n->handshakes_evicted },
		{ "rdmasec_server_accept_paused_total", "counter",
		  "Times accepting paused to keep a file-descriptor reserve.", n->accept_paused },
		{ "rdmasec_server_log_suppressed_total", "counter",
		  "Log lines about unauthenticated peers left out by the rate limit (summarised).", n->log_suppressed },
	};
	return put_table(out, t, sizeof(t) / sizeof(t[0]));
}

/* The server-wide counters after authentication; MAC failures, sequence violations and QP errors are the sums
 * over peers. */
static int put_totals(FILE *out, const struct metrics *m, const struct server_counters *n, size_t clients)
{
	const struct total t[] = {
		{ "rdmasec_server_refused_auth_total", "counter", "Connections that failed TLS authentication.",
		  n->refused_auth },
		{ "rdmasec_server_refused_identity_total", "counter",
		  "Authenticated connections refused over max_per_identity.", n->refused_identity },
		{ "rdmasec_server_refused_authz_total", "counter",
		  "Authenticated connections refused: their identity matched no allow rule.", n->refused_authz },
		{ "rdmasec_server_handshake_failed_total", "counter", "Other set-up failures, timeouts included.",
		  n->handshake_failed },
		{ "rdmasec_server_established_total", "counter", "Connections that got a queue pair.", n->established },
		{ "rdmasec_server_closed_total", "counter", "Established connections that ended.", n->closed },
		{ "rdmasec_server_messages_total", "counter", "Application messages received.", n->messages },
		{ "rdmasec_server_rdma_writes_total", "counter", "Verified one-sided writes.", n->rdma_writes },
		{ "rdmasec_server_rdma_reads_total", "counter", "Verified one-sided reads.", n->rdma_reads },
		{ "rdmasec_server_verify_failed_total", "counter", "Writes whose data MAC did not match or never came.",
		  n->verify_failed },
		{ "rdmasec_server_audit_errors_total", "counter", "Audit records that could not be written.",
		  n->audit_errors },
		{ "rdmasec_server_reloads_total", "counter", "Reloads (SIGHUP, a new etcd copy) of the configuration and credentials.",
		  n->reload.reloads },
		{ "rdmasec_server_reload_failures_total", "counter",
		  "Reloads (SIGHUP, a new etcd copy) that failed or were refused; the old configuration and credentials kept.", n->reload.reload_failures },
		{ "rdmasec_server_closed_revoked_total", "counter",
		  "Established connections closed after a reload: their peer's certificate is revoked or expired, or the allow rules no longer name it.",
		  n->closed_revoked },
		{ "rdmasec_server_cert_expiry_days", "gauge",
		  "Whole days until the server's own certificate expires (0: expired, or PSK mode).",
		  n->reload.cert_expiry_days },
		{ "rdmasec_server_clients", "gauge", "Connections now, handshakes included.", clients },
		{ "rdmasec_server_metrics_peers", "gauge", "Peers in the per-peer table.", m->npeers },
		{ "rdmasec_server_metrics_peers_max", "gauge", "The per-peer table's capacity.", m->max_peers },
		{ "rdmasec_server_metrics_folded_total", "counter",
		  "Updates counted under peer=\"other\" because the per-peer table was full.", m->folded },
	};
	return put_door_totals(out, n) < 0 ? -1 : put_table(out, t, sizeof(t) / sizeof(t[0]));
}

int metrics_render(const struct metrics *m, const struct server_counters *n, size_t clients, FILE *out)
{
	const struct metrics_entry **entries = malloc((m->npeers + 1) * sizeof(*entries));
	if (!entries)
		return -1;
	size_t count = 0;
	for (size_t i = 0; i <= m->mask; i++)
		if (m->slots[i])
			entries[count++] = m->slots[i];
	qsort(entries, count, sizeof(*entries), compare_entries);
	if (m->folded)
		entries[count++] = &m->other;
	int rc = put_peer_families(out, entries, count);
	free(entries);
	if (rc < 0)
		return -1;
	return put_totals(out, m, n, clients);
}

struct render_args {
	const struct metrics *m;
	const struct server_counters *n;
	size_t clients;
};

static int render_file(FILE *out, const void *arg)
{
	const struct render_args *a = arg;
	return metrics_render(a->m, a->n, a->clients, out);
}

int metrics_write_file(const char *path, const struct metrics *m, const struct server_counters *n, size_t clients,
		       char *err, size_t errlen)
{
	const struct render_args a = { m, n, clients };
	return prom_file_write(path, render_file, &a, err, errlen);
}

int metrics_export_tick(struct metrics_export *x, const struct metrics *m, const struct server_counters *n,
			size_t clients, uint64_t now_ms, bool force, char *err, size_t errlen)
{
	if (!x->path || !x->path[0])
		return 0;
	if (!force) {
		if (x->attempted && now_ms - x->last_ms < METRICS_INTERVAL_MS)
			return 0;
		bool changed = !x->written || x->generation != m->generation || x->clients != clients ||
			       memcmp(&x->n, n, sizeof(*n)) != 0;
		if (!changed)
			return 0;
	}
	x->attempted = true;
	x->last_ms = now_ms;
	int rc = metrics_write_file(x->path, m, n, clients, err, errlen);
	x->failing = rc < 0;
	/* After a failure the file is stale: try again next interval, changes or not. */
	x->written = rc == 0;
	if (rc < 0)
		return rc;
	x->generation = m->generation;
	x->n = *n;
	x->clients = clients;
	return 1;
}
