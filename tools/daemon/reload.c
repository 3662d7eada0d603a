/* SPDX-License-Identifier: MIT */
/* A daemon's reload (reload.h). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "reload.h"

void daemon_reload_failed(const struct daemon_reload *r, const char *what, const char *why, bool audit)
{
	r->n->reload_failures++;
	r->n->changed = 1;
	log_event("error", "reload_failed", "what=%s reason=%s kept=old", what, log_q(why));
	if (audit)
		rsec_ctx_reload_failed(r->ctx, why);
}

void daemon_reload_cert_expiry(const struct daemon_reload *r)
{
	int64_t until = 0;
	int64_t left = !r->certificates || rsec_ctx_cert_expiry(r->ctx, &until) < 0 ? 0 : until - (int64_t)time(NULL);
	uint64_t days = left > 0 ? (uint64_t)left / 86400u : 0;
	r->n->changed |= days != r->n->cert_expiry_days;
	r->n->cert_expiry_days = days;
}

void daemon_reload_run(const struct daemon_reload *r)
{
	char err[600] = "", pinned[512] = "";
	if (r->pending)
		*r->pending = false;
	void *fresh = r->ops->reread(r->svc, err, sizeof(err));
	if (!fresh) {
		daemon_reload_failed(r, "config", err, true);
		return;
	}
	const char *what;
	struct trust_rules rules = r->ops->rules(r->svc, fresh);
	if (trust_conf_reload(r->ctx, r->certificates, rules, r->ops->rules(r->svc, NULL), &what, err, sizeof(err)) <
	    0) {
		/* The library audited a failure of its files. */
		daemon_reload_failed(r, what, err, strcmp(what, "credentials") != 0);
		free(fresh);
		return;
	}
	if (rules.n)
		log_event("info", "authz", "allow_rules=%u", rules.n);
	r->ops->apply(r->svc, fresh, pinned, sizeof(pinned));
	if (pinned[0])
		log_event("warn", "reload_not_live", "keys=%s reason=%s", log_q(pinned), log_q("they need a restart"));
	r->n->reloads++;
	r->n->changed = 1;
	daemon_reload_cert_expiry(r);
	log_event("info", "reloaded", "credentials=%s cert_expiry_days=%llu sessions=%zu",
		  r->certificates ? "reloaded" : "psk", (unsigned long long)r->n->cert_expiry_days,
		  r->ops->sessions(r->svc));
	r->ops->recheck(r->svc);
}

void daemon_reload_trust(const struct daemon_reload *r, struct trust_watch *w)
{
	char rejected[600];
	bool changed = trust_conf_take(w, rejected, sizeof(rejected));
	if (rejected[0])
		daemon_reload_failed(r, "trust_etcd", rejected, true);
	if (changed)
		daemon_reload_run(r);
}
