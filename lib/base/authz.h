/* SPDX-License-Identifier: MIT */
/* Authorization rules (rsec_authz_* in rdmasec.h, api/rules.c): a rule's check and match, and a context's own copy of its allow rules. */
#ifndef RSEC_AUTHZ_H
#define RSEC_AUTHZ_H

#include <stddef.h>
#include <stdint.h>

#include "result.h"

/* rsec_authz_rule_check, rsec_authz_match, rsec_authz_allows (rdmasec.h). */
int rsec_rule_check(const char *rule, char *err, size_t errlen);
int rsec_rule_match(const char *rule, const char *identity);
int rsec_rules_allow(const char *const *rules, size_t n, const char *identity);

struct rsec_authz_set {
	char **rules;
	uint32_t n;   /* 0: no rule, every authenticated peer is allowed */
};

/* Check every rule, then replace set's rules by copies; set untouched on error. 0, RSEC_E_CONFIG, RSEC_E_NOMEM. */
RSEC_MUST_CHECK int rsec_authz_set_load(struct rsec_authz_set *set, const char *const *rules, uint32_t n,
					char *err, size_t errlen);
void rsec_authz_set_free(struct rsec_authz_set *set);
/* 1 if identity may connect: no rule, or one that matches. */
int rsec_authz_set_allows(const struct rsec_authz_set *set, const char *identity);
/* "N allow rules: R1 R2 ..." for an audit record, "..." at the end if cut short. */
void rsec_authz_set_describe(const struct rsec_authz_set *set, char *out, size_t cap);
/* s for a message: at most cap - 1 characters, anything but printable ASCII as '?', "..." if cut. */
void rsec_authz_quote(char *out, size_t cap, const char *s);

#endif
