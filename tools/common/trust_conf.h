/* SPDX-License-Identifier: MIT */
/*
 * --trust-etcd in a daemon (rdmasec-server, rdmasec-blkd): the start-up
 * (etcd's copy or the last good one, then the watcher) and how a
 * configuration takes the last good copy, at start and at every reload.
 * The daemon's loop then reloads as on SIGHUP when the watcher says so
 * (trust_conf_take).
 */
#ifndef RSEC_TRUST_CONF_H
#define RSEC_TRUST_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdmasec.h"
#include "trust_etcd.h"

/* Where a configuration takes the last good copy: the paths its context reads the CA and CRL from,
 * and its allow rules (etcd's join those already there, RSEC_AUTHZ_RULES_MAX in all). */
struct trust_conf_slots {
	char *ca, *crl;
	size_t ca_cap, crl_cap;
	char (*allow)[RSEC_AUTHZ_RULE_MAX + 1];
	uint32_t *n_allow;
};

/* Reads and checks the last good copy in state_dir and fills to. 0, or -1 with err (to's rules unchanged). */
int trust_conf_apply(const char *state_dir, const struct trust_conf_slots *to, char *err, size_t errlen);

/*
 * At start: parse etcd (the option's text), take etcd's copy (a bad one
 * refuses the start) or, when no endpoint answers, the last good copy in
 * state_dir; log which; fill to; start the watcher (*watch). 0, or the exit
 * status (2: a bad option, 1: no usable copy) with the reason on stderr
 * after "prog: ".
 */
int trust_conf_start(const char *prog, const char *etcd, const char *state_dir, const struct trust_conf_slots *to,
		     struct trust_watch **watch);

/*
 * The loop's side, when the watcher's fd is readable: true if a new good copy
 * is in the state directory (logged as trust_etcd_changed; reload it as
 * SIGHUP would). rejected gets "trust-etcd: " and the reason of a copy the
 * watcher refused (the loop logs and audits it as a failed reload), or "".
 */
bool trust_conf_take(struct trust_watch *w, char *rejected, size_t cap);

/* A configuration's allow rules: n of them in a table as conf.h and blkd_conf.h keep them. */
struct trust_rules {
	const char (*allow)[RSEC_AUTHZ_RULE_MAX + 1];
	uint32_t n;
};

/* ctx's allow rules become rules (rsec_ctx_set_allow). 0, or its code with err. */
int trust_conf_set_allow(struct rsec_ctx *ctx, struct trust_rules rules, char *err, size_t errlen);

/*
 * A reload's trust, all or nothing: the new allow rules, then (files) the
 * context's CA, certificate, key and CRL (rsec_ctx_reload, which audits its
 * own failure). When the files fail, the old rules are put back. 0, or -1
 * with *what ("authz" or "credentials") and err.
 */
int trust_conf_reload(struct rsec_ctx *ctx, bool files, struct trust_rules fresh, struct trust_rules old,
		      const char **what, char *err, size_t errlen);

#endif
