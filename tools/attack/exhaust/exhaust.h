/* SPDX-License-Identifier: MIT */
/* exhaust's two halves: the local flood (exhaust_local.c) and the remote one (exhaust_remote.c). */
#ifndef RSEC_EXHAUST_H
#define RSEC_EXHAUST_H

#include <stdbool.h>
#include <stdint.h>

#include "exhaust_parse.h"

#define EXH_DEFAULT_MAX 65536u    /* per kind: rxe allows ~1M QPs, more than the guest's memory holds */
#define EXH_MAX_MAX 4194304u
#define EXH_CONN_MAX 1024u

struct exh_local_cfg {
	const char *dev;      /* NULL: the first device */
	unsigned kinds;       /* bit set of enum exh_kind */
	uint32_t max;         /* objects per kind at most */
	double hold_s;        /* keep everything this long after the flood */
	bool victim_check;    /* another process (exhaust --one-qp) tries one QP while we hold */
	bool json;
};

enum exh_proto { EXH_NAIVE, EXH_RDMASEC, EXH_RDMA_CM, EXH_TCP };

struct exh_remote_cfg {
	uint32_t dst;         /* host order */
	uint16_t port;
	const char *source;   /* our address (NULL: the kernel's choice) */
	enum exh_proto proto;
	uint32_t connections;
	double hold_s;        /* hold the connections this long after the legitimate probe */
	int timeout_ms;       /* for each step (connect, reply, CM event) */
	bool exchange;        /* naive: send our half of the exchange (the service then spends a QP) */
	bool probe;           /* try one legitimate client while holding */
	const char *certs;    /* rdmasec: the legitimate probe's credentials */
	const char *identity; /* ... their name in certs */
	const char *dev;      /* naive probe / rdma_cm probe device */
	int gid_index;
	bool json;
};

int exhaust_local(const struct exh_local_cfg *cfg);
/* Try one context, PD, CQ and QP on dev, print the outcome line; 0 created, 3 refused. */
int exhaust_one_qp(const char *dev, bool json);
int exhaust_remote(const struct exh_remote_cfg *cfg);

/* Read a whole small file (/proc, /sys) into buf, NUL-terminated; its length or -1. */
long exh_read_file(const char *path, char *buf, size_t cap);

#endif /* RSEC_EXHAUST_H */
