/* SPDX-License-Identifier: MIT */
/*
 * A daemon's reload, in one order for every service (on SIGHUP, or when the
 * etcd watcher has a new good copy): the configuration read again (file and
 * flags, as at start), then the allow rules and, in certificate mode, the
 * credentials through the library (trust_conf_reload); only when all of it
 * worked does the new configuration go live, keys that need a restart keeping
 * their running values (logged reload_not_live); then the live sessions are
 * checked again under the trust now in force. A failure in any part changes
 * nothing: it is logged (reload_failed what=...), counted and audited.
 */
#ifndef RSEC_DAEMON_RELOAD_H
#define RSEC_DAEMON_RELOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdmasec.h"
#include "trust_conf.h"

/* What a service plugs in; svc is its own state. */
struct daemon_reload_ops {
	/* The configuration read again: a copy of the service's own, malloc'd, or NULL with err. */
	void *(*reread)(void *svc, char *err, size_t errlen);
	/* A configuration's allow rules; conf NULL: the live one's. */
	struct trust_rules (*rules)(void *svc, const void *conf);
	/* fresh passed every check: make it live and free it; pinned gets the keys that kept their
	 * running values because they need a restart ("" if none). */
	void (*apply)(void *svc, void *fresh, char *pinned, size_t cap);
	/* Close the sessions the trust now in force no longer takes (the service logs and counts them). */
	void (*recheck)(void *svc);
	/* Sessions now, for the log line. */
	size_t (*sessions)(void *svc);
};

/* For the metrics. */
struct daemon_reload_counts {
	uint64_t reloads, reload_failures; /* reloads that went live, and that kept the old material */
	uint64_t cert_expiry_days;         /* whole days our certificate has left (0: expired, or PSK mode) */
	uint64_t changed;                  /* 1 at any change above, for a writer that rewrites only then */
};

struct daemon_reload {
	const struct daemon_reload_ops *ops;
	void *svc;
	struct rsec_ctx *ctx;
	bool certificates; /* certificate mode: the credentials' files are read again too (false: PSK) */
	struct daemon_reload_counts *n;
	bool *pending;     /* the service's "SIGHUP came" flag: a reload, whatever started it, answers it too */
};

/* A reload now; *pending is cleared first (a SIGHUP and an etcd copy of one turn make one reload). */
void daemon_reload_run(const struct daemon_reload *r);

/* The etcd watcher's news: a new good copy is reloaded; one it refused is a failed reload. */
void daemon_reload_trust(const struct daemon_reload *r, struct trust_watch *w);

/* A reload that failed (what: config, authz, credentials, trust_etcd): logged, counted and, with audit,
 * audited (rsec_ctx_reload_failed; the library audits its own files' failures). */
void daemon_reload_failed(const struct daemon_reload *r, const char *what, const char *why, bool audit);

/* n->cert_expiry_days from the context's certificate now (at start, after a reload, once a tick). */
void daemon_reload_cert_expiry(const struct daemon_reload *r);

#endif
