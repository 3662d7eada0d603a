/* SPDX-License-Identifier: MIT */
/* --trust-etcd's start and the configuration's share of the last good copy (trust_conf.h). */
#include <stdio.h>

#include "log.h"
#include "trust_conf.h"

int trust_conf_apply(const char *state_dir, const struct trust_conf_slots *to, char *err, size_t errlen)
{
	struct trust_snapshot last;
	char why[512];
	if (trust_state_read(state_dir, &last, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "trust-etcd: last good copy: %s", why);
		return -1;
	}
	int n = trust_allow_split(last.allow, to->allow + *to->n_allow, RSEC_AUTHZ_RULES_MAX - *to->n_allow, why,
				  sizeof(why));
	trust_snapshot_clear(&last);
	if (n < 0) {
		snprintf(err, errlen, "trust-etcd: %s (with the file's and the flags' rules)", why);
		return -1;
	}
	*to->n_allow += (uint32_t)n;
	trust_state_path(to->ca, to->ca_cap, state_dir, "ca.pem");
	trust_state_path(to->crl, to->crl_cap, state_dir, "crl.pem");
	return 0;
}

int trust_conf_start(const char *prog, const char *etcd, const char *state_dir, const struct trust_conf_slots *to,
		     struct trust_watch **watch)
{
	struct trust_spec spec;
	struct trust_snapshot applied;
	char err[1200];
	bool from_etcd;
	if (trust_spec_parse(etcd, &spec, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return 2;
	}
	if (trust_bootstrap(&spec, state_dir, &applied, &from_etcd, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: trust-etcd: %s\n", prog, err);
		return 1;
	}
	if (from_etcd)
		log_event("info", "trust_etcd", "prefix=%s source=etcd state_dir=%s", log_q(spec.prefix), log_q(state_dir));
	else
		log_event("warn", "trust_etcd", "prefix=%s source=last_good state_dir=%s reason=%s", log_q(spec.prefix),
			  log_q(state_dir), log_q(err));
	if (trust_conf_apply(state_dir, to, err, sizeof(err)) < 0) {
		trust_snapshot_clear(&applied);
		fprintf(stderr, "%s: %s\n", prog, err);
		return 1;
	}
	*watch = trust_watch_start(&spec, state_dir, &applied, from_etcd, err, sizeof(err));
	if (!*watch) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return 1;
	}
	return 0;
}

bool trust_conf_take(struct trust_watch *w, char *rejected, size_t cap)
{
	char why[512];
	unsigned ev = trust_watch_take(w, why, sizeof(why));
	snprintf(rejected, cap, "%s%s", ev & TRUST_EV_REJECTED ? "trust-etcd: " : "", ev & TRUST_EV_REJECTED ? why : "");
	if (ev & TRUST_EV_CHANGED)
		log_event("info", "trust_etcd_changed", "action=reload");
	return ev & TRUST_EV_CHANGED;
}

int trust_conf_set_allow(struct rsec_ctx *ctx, struct trust_rules rules, char *err, size_t errlen)
{
	const char *list[RSEC_AUTHZ_RULES_MAX];
	if (rules.n > RSEC_AUTHZ_RULES_MAX) {
		snprintf(err, errlen, "%u allow rules, over the %u allowed", rules.n, RSEC_AUTHZ_RULES_MAX);
		return RSEC_E_CONFIG;
	}
	for (uint32_t i = 0; i < rules.n; i++)
		list[i] = rules.allow[i];
	return rsec_ctx_set_allow(ctx, list, rules.n, err, errlen);
}

int trust_conf_reload(struct rsec_ctx *ctx, bool files, struct trust_rules fresh, struct trust_rules old,
		      const char **what, char *err, size_t errlen)
{
	/* The rules were checked when the configuration was read: only memory can fail here. */
	*what = "authz";
	if (trust_conf_set_allow(ctx, fresh, err, errlen) < 0)
		return -1;
	*what = "credentials";
	if (!files || rsec_ctx_reload(ctx, err, errlen) == 0)
		return 0;
	char again[256];
	if (trust_conf_set_allow(ctx, old, again, sizeof(again)) < 0)
		log_event("error", "authz", "reason=%s kept=new", log_q(again));
	return -1;
}
