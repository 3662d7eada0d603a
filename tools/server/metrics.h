/* SPDX-License-Identifier: MIT */
/*
 * rdmasec-server's per-peer counters and their export in the Prometheus text
 * format (0.0.4), for node_exporter's textfile collector. A peer is its
 * authenticated identity, or "addr:IP" when it was refused before
 * authenticating. The table is bounded: once it holds max_peers keys, new
 * keys are counted together under "other", so no peer can grow the server's
 * memory without limit.
 */
#ifndef RSEC_SERVER_METRICS_H
#define RSEC_SERVER_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "server.h"

#define METRICS_MAX_PEERS 4096
#define METRICS_KEY_MAX 256    /* a key's bytes, NUL included; longer keys are cut */
#define METRICS_OTHER "other"  /* the bucket for keys beyond max_peers */
#define METRICS_INTERVAL_MS 1000

struct peer_counters {
	uint64_t connections;        /* connections that got a queue pair, counted when they end */
	uint64_t mac_failures, seq_violations, qp_errors;
	uint64_t refused_handshakes; /* failed authentication, over a limit */
	uint64_t protocol_violations; /* completions rdmasec never asks for (WRITE WITH IMMEDIATE, ...) */
	uint64_t malformed;          /* of mac_failures: data frames whose header did not parse */
	uint64_t rebuilds, resumes;  /* self-healing: data paths rebuilt, sessions resumed */
};

struct metrics;

/* An empty table for up to max_peers keys (1..1<<20); NULL if out of memory or out of range. */
struct metrics *metrics_new(size_t max_peers);
void metrics_free(struct metrics *m);

/* Adds d to key's counters (to "other" when the table is full). */
void metrics_add(struct metrics *m, const char *key, const struct peer_counters *d);
/*
 * The counters a later metrics_add(key) would add to: key's own, zero for a
 * key not seen yet while there is room, else the "other" bucket's. Returns
 * the key they are counted under (key itself or METRICS_OTHER).
 */
const char *metrics_lookup(const struct metrics *m, const char *key, struct peer_counters *out);
size_t metrics_peers(const struct metrics *m);
/* Updates counted under "other" because the table was full. */
uint64_t metrics_folded(const struct metrics *m);
/* Changes with every metrics_add that changed a counter. */
uint64_t metrics_generation(const struct metrics *m);

/*
 * The key for a connection: its authenticated identity if it has one, else
 * "addr:IP" from peer_addr ("IP:PORT" or "[IPv6]:PORT"), else "addr:unknown".
 */
void metrics_peer_key(char out[static METRICS_KEY_MAX], const char *identity, const char *peer_addr);

/* Writes the exposition: per-peer counters, the server-wide totals and gauges. Returns 0 or -1 (I/O). */
int metrics_render(const struct metrics *m, const struct server_counters *n, size_t clients, FILE *out);

/* Renders into path.tmp, fsyncs it, renames it over path. Returns 0 or -errno; err says why. */
int metrics_write_file(const char *path, const struct metrics *m, const struct server_counters *n, size_t clients,
		       char *err, size_t errlen);

/* The export file's state: rewritten at most once per interval, and only when something changed. */
struct metrics_export {
	const char *path;            /* NULL or "": no file */
	uint64_t last_ms;             /* the last attempt */
	bool attempted;
	bool written;                /* the file holds a rendering of the state below */
	uint64_t generation;
	struct server_counters n;
	size_t clients;
	bool failing;                /* the last write failed */
};

/*
 * Rewrites the file when force is set, or when METRICS_INTERVAL_MS passed
 * since the last attempt and a counter changed. Returns 1 (written), 0
 * (nothing to do) or -errno (write failed; err says why; retried next interval).
 */
int metrics_export_tick(struct metrics_export *x, const struct metrics *m, const struct server_counters *n,
			size_t clients, uint64_t now_ms, bool force, char *err, size_t errlen);

#endif
