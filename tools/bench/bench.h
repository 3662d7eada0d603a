/* SPDX-License-Identifier: MIT */
/* rdmasec-bench: the perftest of rdmasec. Shared by its client and server. */
#ifndef RSEC_BENCH_H
#define RSEC_BENCH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "bench_proto.h"
#include "measure.h"
#include "rdmasec.h"

#define PROG "rdmasec-bench"
#define BENCH_DEFAULT_PORT 7472 /* one above rdmasec-server's */
#define BENCH_DEFAULT_ITERS 1000
#define BENCH_DEFAULT_SIZE_BW 65536 /* perftest's defaults */
#define BENCH_DEFAULT_SIZE_LAT 2
#define BENCH_DEFAULT_TX_DEPTH 128  /* write and read bandwidth: operations in flight, as perftest */
#define BENCH_DEFAULT_CQ_MOD 100    /* a completion for one operation in this many, at most (perftest's -Q) */
#define BENCH_ALL_MIN 2             /* -a: 2 B .. 8 MiB, as perftest */
#define BENCH_ALL_MAX (8u << 20)
#define BENCH_PATH_MAX 4096
#define BENCH_LIST_MAX 24           /* -s and -n lists; -a makes 23 sizes */

/* Options given on the command line (BENCH_SET_*: which test parameters were). */
enum bench_set { BENCH_SET_OP = 1, BENCH_SET_LAT = 2, BENCH_SET_SIZE = 4, BENCH_SET_ITERS = 8,
		 BENCH_SET_DURATION = 16, BENCH_SET_POLL = 32, BENCH_SET_SEALED = 64, BENCH_SET_QPS = 128 };

struct bench_opts {
	unsigned set;            /* enum bench_set */
	enum bench_op op;
	bool lat, all_sizes;
	uint64_t sizes[BENCH_LIST_MAX]; /* -s: one or more sizes, in order */
	size_t nsizes;
	uint64_t iters[BENCH_LIST_MAX]; /* -n: one count for every size, or one per size */
	size_t niters;
	uint32_t duration_ms;
	uint64_t tx_depth, cq_mod, qps; /* 0 until set_defaults sets the defaults */
	enum bench_poll poll;           /* this side's waits: the context's poll_mode */
	bool no_resume;                 /* full TLS handshakes only (the context's tls_resume_s 0) */
	bool sealed;                    /* through sealed grants (--sealed) */
	bool blocking;                  /* rsec_write/rsec_read from a plain buffer (--blocking; the client's) */
	uint32_t recv_slots, slot_size; /* the context's receive buffers (0: the library's defaults) */
	const char *host;        /* NULL: serve */
	const char *source, *device, *json_path;
	uint16_t port;
	int timeout_ms;
	enum rsec_aead_choice aead;
	char certs[BENCH_PATH_MAX];
};

/* One result row, either side. */
struct bench_row {
	uint64_t bytes, iters;
	bool lat, duration;       /* latency; -D (perftest's duration layout for latency) */
	bool have_row;            /* false: this side measured nothing to print (server, write/read) */
	struct bench_bw bw;
	struct bench_lat l;
	double elapsed_s;
	struct bench_cpu cpu;      /* this side */
	struct bench_cpu peer_cpu; /* the other side's, from RESULT (client only) */
	bool set_up;               /* a connect row: resumed counts */
	uint64_t resumed;          /* connect: connections whose TLS handshake resumed a session */
	bool have_peer;
};

/* What a run reports about itself. */
struct bench_meta {
	const char *role, *device, *peer, *aead;
	const struct bench_opts *o;
	enum bench_op op;
	bool lat;
};

/* One size of a run and its iterations (0 with -D). */
struct bench_step {
	uint64_t size, iters;
};

/* The sizes a client runs, in order (-s list, -a, or the default); returns how many. */
size_t bench_plan(const struct bench_opts *o, struct bench_step steps[static BENCH_LIST_MAX]);

int bench_client_run(const struct bench_opts *o);
int bench_server_run(const struct bench_opts *o);

/* A context for this side (--certs, --source, --device, --aead). */
int bench_ctx_new(const struct bench_opts *o, bool server, struct rsec_ctx **ctx);

/* perftest's output: the rule, the header and a row for bandwidth or latency. */
void report_rule(FILE *f);
void report_header(FILE *f, bool lat, bool duration);
void report_row(FILE *f, const struct bench_row *r);
/* One "CPU per op" line (starts with text, so no row parser takes it). */
void report_cpu(FILE *f, const char *role, const struct bench_row *r);
/* The whole run as JSON (--json); false with a message on stderr if it cannot be written. */
bool report_json(const char *path, const struct bench_meta *m, const struct bench_row *rows, size_t n);

#endif
