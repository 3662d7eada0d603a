/* SPDX-License-Identifier: MIT */
/*
 * rdmasec-blkd's configuration: the INI file (inih, strict: unknown sections
 * and keys, numbers out of range, duplicate single keys and over-long lines
 * are errors naming the line and quoting the input) and the command-line
 * flags, which set the same keys. The format is in rdmasec-blkd(8).
 */
#ifndef RSEC_BLKD_CONF_H
#define RSEC_BLKD_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "blk_wire.h"
#include "rdmasec.h"

#define BLKD_EXPORTS_MAX 64u
#define BLKD_IDS_MAX 32u     /* identities per list (rw, ro) of one export */
#define BLKD_ID_LEN 256u     /* an identity (rsec_conn_peer), NUL included */
/* The longest identity configured or served: librdmasec cuts a peer's identity at 255 characters, so
 * one of 255 may be a longer one cut short, and could equal a configured identity it is not. */
#define BLKD_ID_MAX (BLKD_ID_LEN - 2)
#define BLKD_PATH_LEN 4096u
#define BLKD_ANY_ID "*"      /* any authenticated identity */
#define BLKD_STORE_THREADS_MAX 64u /* OFFLOAD_THREADS_MAX */

struct blkd_export_conf {
	char name[BLK_NAME_MAX + 1];
	char path[BLKD_PATH_LEN];
	uint64_t size;          /* 0: the existing file's or device's size */
	uint32_t block_size;    /* 512 or 4096 */
	bool read_only;
	bool direct;            /* try O_DIRECT */
	bool nowait;            /* reads and non-FUA writes tried on the loop with RWF_NOWAIT first */
	uint32_t max_sessions;
	char rw_ids[BLKD_IDS_MAX][BLKD_ID_LEN];
	char ro_ids[BLKD_IDS_MAX][BLKD_ID_LEN];
	unsigned n_rw, n_ro;
};

struct blkd_conf {
	/* [target] */
	char listen_addr[64];
	uint16_t listen_port;
	char device[64];
	char audit_log[BLKD_PATH_LEN];
	char metrics_file[BLKD_PATH_LEN];
	uint32_t queue_depth;   /* per queue pair, the most granted: 1..BLK_QD_GRANT_MAX */
	uint32_t queues;        /* queue pairs per session, the most granted */
	uint32_t max_transfer;  /* bytes per command */
	uint32_t max_inline;    /* in-capsule write bytes */
	uint32_t max_sessions;  /* authenticated sessions at once, all exports (those before OPEN included) */
	uint32_t max_sessions_per_identity; /* ... of one identity; 0: half of max_sessions (blkd_identity_sessions) */
	/* Before TLS (the daemons' admission, tools/daemon/admission.h): handshakes in progress at
	 * once, all sources and per source, and new handshakes a second per source. */
	uint32_t max_handshakes, max_handshakes_per_source, handshake_rate_per_source;
	uint64_t memory_limit;  /* registered command buffers, all sessions */
	uint64_t memory_per_identity; /* ... of one identity's sessions; 0: half of memory_limit */
	uint32_t open_timeout_ms;  /* a connection without OPEN is closed after this */
	uint32_t grant_timeout_ms; /* a command whose grant has not come fails after this */
	uint32_t rebuilds_per_min;
	uint32_t store_threads; /* worker threads doing the backing stores' I/O */
	uint32_t busy_poll_us;  /* the longest the loop polls completions before sleeping (busy_poll.h); 0: never */
	/* [tls] */
	char ca[BLKD_PATH_LEN], cert[BLKD_PATH_LEN], key[BLKD_PATH_LEN], crl[BLKD_PATH_LEN];
	uint32_t rekey_s;       /* each queue pair's keys renewed at least this often (docs/protocol.md, "Rekeying") */
	uint64_t rekey_bytes;   /* ... and after this many bytes sent and received */
	/* [trust]: cluster trust through etcd (trust_conf.h); "": none. The CA, the CRL and the allow rules
	 * (who may connect at all) then come from state_dir, the last good copy of etcd's; each export's
	 * rw and ro lists stay this file's. */
	char etcd[1200];
	char state_dir[BLKD_PATH_LEN];
	char allow[RSEC_AUTHZ_RULES_MAX][RSEC_AUTHZ_RULE_MAX + 1]; /* etcd's only */
	uint32_t n_allow;
	/* [export NAME] */
	struct blkd_export_conf exports[BLKD_EXPORTS_MAX];
	unsigned n_exports;
};

/* A fresh configuration with the defaults (heap: it is large). NULL if out of memory. */
struct blkd_conf *blkd_conf_new(void);

/* The settings of the INI file at path on top of c; on error c may be half set and err says where. 0 or -1. */
int blkd_conf_parse_file(struct blkd_conf *c, const char *path, char *err, size_t errlen);
int blkd_conf_parse_string(struct blkd_conf *c, const char *text, char *err, size_t errlen);

/* One key (the CLI's flags): section "target", "tls", or "export NAME". 0 or -1. */
int blkd_conf_set(struct blkd_conf *c, const char *section, const char *key, const char *value, char *err,
		  size_t errlen);

/*
 * The CLI's short form of one export: NAME=PATH[,size=SIZE][,bs=512|4096]
 * [,ro][,buffered][,max-sessions=N]. Adds the export; 0 or -1.
 */
int blkd_conf_export_spec(struct blkd_conf *c, const char *spec, char *err, size_t errlen);

/* Cross-key checks once everything is in (credentials, at least one export, inline <= transfer). 0 or -1. */
int blkd_conf_check(const struct blkd_conf *c, char *err, size_t errlen);

/* One identity's share (docs/blk.md, "Shares"): the setting, or half the target's when it is 0. */
uint32_t blkd_identity_sessions(const struct blkd_conf *c);
uint64_t blkd_identity_memory(const struct blkd_conf *c);

/* What an OPEN is granted: its command buffers are reserved whole at OPEN (queue 0's and those of the
 * queue pairs the client adds later), so that sessions together never pass memory_limit, nor one
 * identity's sessions its memory_per_identity. */
struct blkd_open_budget {
	uint32_t queue_depth; /* min(asked, queue_depth, BLK_QD_GRANT_MAX) */
	uint32_t queues;      /* min(asked, queues), fewer if the memory left has room for fewer */
	uint64_t bytes;       /* slot_len * queue_depth * queues: to reserve until the session is freed */
	bool identity_bound;  /* the identity's share, not memory_limit, is what cut it (or refused it) */
};
/* Command buffers held now: by every open session, and by those of the identity that asks. */
struct blkd_reserved {
	uint64_t all, identity;
};
/* false if not even one queue fits (out->identity_bound says which limit). */
bool blkd_open_budget(const struct blkd_conf *c, unsigned asked_qd, unsigned asked_queues, size_t slot_len,
		      const struct blkd_reserved *held, struct blkd_open_budget *out);

/* A byte count with an optional K, M, G or T (binary) suffix, in [min, max]. */
bool blkd_parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *out);

#endif
