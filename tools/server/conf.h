/* SPDX-License-Identifier: MIT */
/*
 * The server's configuration file (INI, parsed with inih). Strict: unknown
 * sections and keys, duplicate keys, numbers out of range, values that do not
 * fit and over-long lines are errors naming the line and quoting the input.
 * docs: the format is in conf.c's key table and the server's man page.
 */
#ifndef RSEC_CONF_H
#define RSEC_CONF_H

#include <stddef.h>
#include <stdint.h>

#include "rdmasec.h"
#include "result.h"

#define RSEC_CONF_DEFAULT_PORT 7471
/* inih reads lines into a fixed buffer: longer lines are refused, not cut. */
#define RSEC_CONF_MAX_LINE 198
#define RSEC_CONF_MAX_FILE (1u << 20)

struct rsec_conf {
	/* [server] */
	char listen_addr[64];   /* IPv4 or IPv6 literal, no brackets */
	uint16_t listen_port;
	char device[64];        /* "": the device owning listen_addr */
	uint32_t max_clients, max_per_identity, handshake_timeout_ms;
	/* Before TLS, per source (an IPv4 address or an IPv6 /64): handshakes in progress at once,
	 * and new handshakes a second (the bucket holds as many, so that is also the burst). */
	uint32_t max_handshakes_per_source, handshake_rate_per_source;
	/* All sources together: handshakes in progress at once, and new ones a second (a source
	 * with none in progress is never refused by the rate); worker threads that run them. */
	uint32_t max_handshakes, handshake_rate, worker_threads;
	char audit_log[4096];   /* "": none */
	char metrics_file[4096]; /* Prometheus text export, rewritten atomically; "": none */
	uint32_t qp_pool;       /* QPs kept ready and drawn at random (QPN randomization); 1: off */
	uint32_t resume_grace_ms; /* how long a session whose control channel was lost waits for its client */
	/* [grants] */
	char grant_mode[8];     /* "auto", "mw" (type-2 windows only) or "mr" (per-grant registrations) */
	uint32_t grant_ttl_ms;  /* how long a client's write/read grant lives unused */
	uint32_t verify_timeout_ms; /* how long the server waits for a VERIFY after WRITE_DONE */
	/* [tls] */
	char ca[4096], cert[4096], key[4096], crl[4096], psk_file[4096], psk_identity[128];
	uint32_t resume_s;      /* TLS session tickets good for this long after a certificate check; 0: none */
	uint32_t rekey_s;       /* each queue pair's keys renewed at least this often (docs/protocol.md, "Rekeying") */
	uint64_t rekey_bytes;   /* ... and after this many bytes sent and received */
	/* [limits] */
	uint32_t max_msg, recv_slots, slot_size;
	uint32_t rebuilds_per_min; /* self-healing: data-path rebuilds per connection a minute; 0: close instead */
	/* [authz]: allow, repeated (and --allow): who may connect (rsec_authz_rule_check); none: anyone authenticated */
	char allow[RSEC_AUTHZ_RULES_MAX][RSEC_AUTHZ_RULE_MAX + 1];
	uint32_t n_allow;
	/* [trust]: cluster trust through etcd (trust_etcd.h); "": none. CA, CRL and extra allow rules
	 * then come from state_dir, the last good copy of etcd's. */
	char etcd[1200];
	char state_dir[4096];
};

void rsec_conf_defaults(struct rsec_conf *c);

/*
 * Apply the settings in text (NUL-terminated) / the file at path on top of c.
 * On error c is unchanged and err holds one line such as
 * "line 7: max_clients: '0' is not in 1..65536". Returns 0, RSEC_E_CONFIG,
 * RSEC_E_IO (file unreadable), RSEC_E_NOMEM, RSEC_E_INVAL.
 */
RSEC_MUST_CHECK int rsec_conf_parse_string(struct rsec_conf *c, const char *text, char *err, size_t errlen);
RSEC_MUST_CHECK int rsec_conf_parse_file(struct rsec_conf *c, const char *path, char *err, size_t errlen);

/* Set one key (CLI flags override the file); same checks, no line number. */
RSEC_MUST_CHECK int rsec_conf_set(struct rsec_conf *c, const char *section, const char *key, const char *value,
				  char *err, size_t errlen);

/*
 * Cross-key checks, once the file and the overrides are in: exactly one of
 * certificate mode (ca, cert, key) or PSK mode (psk_file, psk_identity).
 * Returns 0 or RSEC_E_CONFIG.
 */
RSEC_MUST_CHECK int rsec_conf_check(const struct rsec_conf *c, char *err, size_t errlen);

#endif /* RSEC_CONF_H */
