/* SPDX-License-Identifier: MIT */
/*
 * Cluster trust through etcd (docs/operations.md, "Cluster trust (etcd)"):
 * the CA bundle, the CRL and the authorization rules under one key prefix
 * (PREFIX/ca, PREFIX/crl, PREFIX/allow), read through etcd's v3 JSON gateway
 * (POST /v3/kv/range), checked as a whole, and kept on disk (the state
 * directory) as the last good copy the server's context reads.
 *
 * A watcher thread reads the prefix once a second and hands a checked,
 * written snapshot to the event loop through an eventfd: the loop only ever
 * runs its usual reload.
 */
#ifndef RSEC_TRUST_ETCD_H
#define RSEC_TRUST_ETCD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TRUST_MAX_ENDPOINTS 8
#define TRUST_MAX_ENTRY (256u * 1024u)     /* one value (ca, crl, allow), decoded */
#define TRUST_MAX_RESPONSE (2u * 1024u * 1024u) /* one range reply: three base64 values and JSON */
#define TRUST_POLL_MS 1000
#define TRUST_MAX_CRLS 64 /* as many as the library loads from a CRL file */

/* --trust-etcd [http://|https://]HOST:PORT[,HOST:PORT...]/PREFIX */
struct trust_spec {
	bool https;
	size_t n_endpoints;
	char endpoints[TRUST_MAX_ENDPOINTS][128]; /* HOST:PORT */
	char prefix[256];                         /* "/rdmasec/trust": no trailing '/' */
};

/* What the prefix holds; each NUL-terminated (NULL: the key is absent). */
struct trust_snapshot {
	char *ca, *crl, *allow;
};

/* 0, or -1 with err quoting what is wrong. */
int trust_spec_parse(const char *text, struct trust_spec *out, char *err, size_t errlen);

/*
 * A /v3/kv/range reply (len bytes, need not be NUL-terminated) for prefix:
 * the values of PREFIX/ca, PREFIX/crl, PREFIX/allow (other keys ignored).
 * 0, or -1 with err (out empty).
 */
int trust_parse_range(const char *json, size_t len, const char *prefix, struct trust_snapshot *out, char *err,
		      size_t errlen);

/*
 * The one check before anything is applied: ca present, PEM certificates
 * only, each a CA; crl present, PEM CRLs (at most TRUST_MAX_CRLS), each in
 * date and signed by a certificate of the bundle; allow absent or rules (rsec_authz_rule_check) one a line, '#'
 * comments and blank lines skipped, at most RSEC_AUTHZ_RULES_MAX; each value
 * at most TRUST_MAX_ENTRY bytes. 0, or -1 with err.
 */
int trust_snapshot_check(const struct trust_snapshot *s, char *err, size_t errlen);

bool trust_snapshot_equal(const struct trust_snapshot *a, const struct trust_snapshot *b);
void trust_snapshot_clear(struct trust_snapshot *s);

/* Entry i of s (0 ca, 1 crl, 2 allow): where its text lives. */
char **trust_snapshot_slot(struct trust_snapshot *s, size_t i);

/* dir/ca.pem, dir/crl.pem, dir/allow: the paths the server's context and configuration read. */
void trust_state_path(char *out, size_t cap, const char *dir, const char *name);

/* Writes the three files atomically each (tmp, fsync, rename, fsync dir); allow "" when absent. 0 or -1. */
int trust_state_write(const char *dir, const struct trust_snapshot *s, char *err, size_t errlen);
/* Reads them back (the last good copy) and checks them: 0, or -1 with err. */
int trust_state_read(const char *dir, struct trust_snapshot *out, char *err, size_t errlen);

/* One range read of spec's prefix, each endpoint in turn until one answers. 0, or -1 with err. */
int trust_fetch(const struct trust_spec *spec, struct trust_snapshot *out, char *err, size_t errlen);

/*
 * At start: etcd's copy if an endpoint answers (a bad one is an error: the
 * server refuses to start), else the last good copy in dir; written to dir.
 * from_etcd says which. 0, or -1 with err.
 */
int trust_bootstrap(const struct trust_spec *spec, const char *dir, struct trust_snapshot *applied, bool *from_etcd,
		    char *err, size_t errlen);

/* The rules of an allow value, one a line, into rules (each cap bytes); how many, or -1 with err. */
int trust_allow_split(const char *allow, char (*rules)[256], size_t max, char *err, size_t errlen);

struct trust_watch;
/*
 * Starts the thread; applied is what dir holds now (taken over); reachable:
 * whether etcd answered at start (its going away or coming back is logged).
 * NULL with err on failure.
 */
struct trust_watch *trust_watch_start(const struct trust_spec *spec, const char *dir, struct trust_snapshot *applied,
				      bool reachable, char *err, size_t errlen);
int trust_watch_fd(const struct trust_watch *w);
/* What the loop must act on (the thread itself logs etcd going away and coming back). */
enum { TRUST_EV_CHANGED = 1, TRUST_EV_REJECTED = 2 };
/* Drains the eventfd: TRUST_EV_* bits since the last call; why: the last rejection's reason. */
unsigned trust_watch_take(struct trust_watch *w, char *why, size_t cap);
void trust_watch_stop(struct trust_watch *w);

#endif
