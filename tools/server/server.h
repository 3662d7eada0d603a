/* SPDX-License-Identifier: MIT */
#ifndef RSEC_SERVER_H
#define RSEC_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "conf.h"
#include "reload.h"

struct trust_watch;

/* All uint64_t: server.c adds two of them up field by field (the acceptor's gauges stay 0). */
struct server_counters {
	uint64_t accepted;          /* TCP connections taken */
	uint64_t refused_capacity;  /* closed at accept: max_clients reached (no TLS, no RDMA) */
	uint64_t refused_source_concurrent; /* closed at accept: max_handshakes_per_source reached */
	uint64_t refused_source_rate;       /* closed at accept: handshake_rate_per_source exceeded */
	uint64_t refused_source_table;      /* closed at accept: source table full, or no usable address */
	uint64_t refused_handshakes;        /* closed at accept: max_handshakes reached, no source over its share */
	uint64_t refused_handshake_rate;    /* closed at accept: handshake_rate exceeded, its source busy */
	uint64_t handshakes_evicted;        /* closed in TLS: gave way at max_handshakes (its source had most) */
	uint64_t accept_paused;     /* times accepting paused to keep the fd reserve (or after EMFILE/ENFILE) */
	uint64_t log_suppressed;    /* pre-authentication log lines left out (counted in event=suppressed) */
	uint64_t refused_auth;      /* failed TLS authentication (no RDMA) */
	uint64_t refused_identity;  /* authenticated but over max_per_identity (no RDMA) */
	uint64_t handshake_failed;  /* other set-up failures, timeouts included */
	uint64_t established;       /* connections that got a QP */
	uint64_t closed;
	uint64_t messages, rdma_writes, rdma_reads;
	uint64_t verify_failed;     /* verified writes whose data MAC did not match (or never came) */
	uint64_t mac_failures, seq_violations, qp_errors;
	uint64_t protocol_violations; /* peers closed for completions rdmasec never asks for */
	uint64_t malformed;         /* of mac_failures: data frames whose header did not parse */
	uint64_t rebuilds, resumes; /* self-healing: data paths rebuilt, sessions resumed */
	uint64_t audit_errors;      /* audit records lost (the library could not write them) */
	struct daemon_reload_counts reload; /* reloads, failed ones, the certificate's days left */
	uint64_t closed_revoked;    /* established connections closed: their peer is revoked, expired or no longer allowed now */
	uint64_t refused_authz;     /* authenticated but matched no [authz] allow rule (no RDMA) */
};

/* Reads the configuration again (file and command line) at SIGHUP: 0, or < 0 with err. */
typedef int (*server_conf_reader)(void *arg, struct rsec_conf *out, char *err, size_t errlen);

/*
 * Serves until SIGINT/SIGTERM; returns the exit status. psk_len 0:
 * certificate mode. SIGHUP: reread (NULL: none), credentials reloaded.
 * trust (NULL: none): --trust-etcd's watcher; each new copy it writes is
 * applied by the same reload, each it refuses is logged and audited.
 */
int server_run(const struct rsec_conf *conf, uint8_t *psk, size_t psk_len, server_conf_reader reread, void *arg,
	       struct trust_watch *trust);

#endif
