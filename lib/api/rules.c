/* SPDX-License-Identifier: MIT */
/* Authorization rules (rdmasec.h, "Authorization"), over base/authz.c. */
#include "base/authz.h"

int rsec_authz_rule_check(const char *rule, char *err, size_t errlen)
{
	return rsec_rule_check(rule, err, errlen);
}

int rsec_authz_match(const char *rule, const char *identity)
{
	return rsec_rule_match(rule, identity);
}

int rsec_authz_allows(const char *const *rules, size_t n, const char *identity)
{
	return rsec_rules_allow(rules, n, identity);
}
