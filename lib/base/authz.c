/* SPDX-License-Identifier: MIT */
/*
 * Authorization by identity: the one rule syntax and matcher of the library,
 * rdmasec-server and rdmasec-blkd (docs/operations.md, "Authorization").
 *
 *   IDENTITY      exactly that identity (as rsec_conn_peer() names it)
 *   PREFIX/ + '*' every identity that starts with "PREFIX/" and goes on
 *   '*' alone     every authenticated identity
 *
 * A prefix ends at a '/', so that the rule for "spiffe://prod.example/storage/"
 * cannot take "spiffe://prod.example/storage-evil/x" or another trust domain.
 */
#include <stdio.h>
#include <string.h>

#include <stdlib.h>

#include "rdmasec.h"
#include "authz.h"
#include "result.h"

/* Printable ASCII and space: what an identity (URI, DNS name, RFC 2253 DN) can hold. */
static const char *rule_flaw(const char *rule, size_t len)
{
	if (len == 0)
		return "is empty";
	if (len > RSEC_AUTHZ_RULE_MAX)
		return "is longer than 255 characters";
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)rule[i] < 0x20 || (unsigned char)rule[i] > 0x7e)
			return "holds a control or non-ASCII byte";
	if (rule[0] == ' ' || rule[len - 1] == ' ')
		return "starts or ends with a space";
	const char *star = strchr(rule, '*');
	if (!star || len == 1)
		return NULL;
	if (star != rule + len - 1 || rule[len - 2] != '/')
		return "has a '*' that is not the whole rule or a final \"/*\"";
	return NULL;
}

int rsec_rule_check(const char *rule, char *err, size_t errlen)
{
	if (err && errlen)
		err[0] = '\0';
	RSEC_ENSURE_REF(rule);
	size_t len = strnlen(rule, RSEC_AUTHZ_RULE_MAX + 1);
	const char *flaw = rule_flaw(rule, len);
	if (!flaw)
		return 0;
	if (err && errlen) {
		char shown[64];
		rsec_authz_quote(shown, sizeof(shown), rule);
		snprintf(err, errlen, "authorization rule '%s' %s (IDENTITY, PREFIX/* or *)", shown, flaw);
	}
	return RSEC_E_CONFIG;
}

int rsec_rule_match(const char *rule, const char *identity)
{
	if (!rule || !identity || !identity[0])
		return 0;
	size_t len = strlen(rule);
	if (len == 0 || rule[len - 1] != '*')
		return strcmp(rule, identity) == 0;
	/* A star alone, or after a prefix ending in '/': it stands for one character or more. */
	return strlen(identity) >= len && strncmp(identity, rule, len - 1) == 0;
}

int rsec_rules_allow(const char *const *rules, size_t n, const char *identity)
{
	for (size_t i = 0; rules && i < n; i++)
		if (rsec_rule_match(rules[i], identity))
			return 1;
	return 0;
}

void rsec_authz_quote(char *out, size_t cap, const char *s)
{
	if (!cap)
		return;
	size_t len = strlen(s), keep = len < cap ? len : (cap > 4 ? cap - 4 : 0);
	size_t o = 0;
	for (; o < keep; o++)
		out[o] = s[o] >= 0x20 && s[o] <= 0x7e && s[o] != '\'' ? s[o] : '?';
	if (keep < len)
		for (; o + 1 < cap && o < keep + 3; o++)
			out[o] = '.';
	out[o] = '\0';
}

void rsec_authz_set_free(struct rsec_authz_set *set)
{
	for (uint32_t i = 0; i < set->n; i++)
		free(set->rules[i]);
	free(set->rules);
	*set = (struct rsec_authz_set){ 0 };
}

int rsec_authz_set_load(struct rsec_authz_set *set, const char *const *rules, uint32_t n, char *err, size_t errlen)
{
	RSEC_ENSURE(set && (rules || n == 0), RSEC_E_INVAL);
	if (n > RSEC_AUTHZ_RULES_MAX) {
		if (err && errlen)
			snprintf(err, errlen, "%u authorization rules, over the %u allowed", n, RSEC_AUTHZ_RULES_MAX);
		return RSEC_E_CONFIG;
	}
	for (uint32_t i = 0; i < n; i++)
		RSEC_GUARD(rsec_rule_check(rules[i], err, errlen));
	struct rsec_authz_set fresh = { .rules = n ? calloc(n, sizeof(char *)) : NULL };
	RSEC_ENSURE(n == 0 || fresh.rules, RSEC_E_NOMEM);
	for (; fresh.n < n; fresh.n++) {
		fresh.rules[fresh.n] = strdup(rules[fresh.n]);
		if (!fresh.rules[fresh.n]) {
			rsec_authz_set_free(&fresh);
			return RSEC_E_NOMEM;
		}
	}
	rsec_authz_set_free(set);
	*set = fresh;
	return 0;
}

int rsec_authz_set_allows(const struct rsec_authz_set *set, const char *identity)
{
	return set->n == 0 || rsec_rules_allow((const char *const *)set->rules, set->n, identity);
}

void rsec_authz_set_describe(const struct rsec_authz_set *set, char *out, size_t cap)
{
	if (!cap)
		return;
	int n = snprintf(out, cap, "%u allow rule%s", set->n, set->n == 1 ? "" : "s");
	for (uint32_t i = 0; i < set->n && n > 0 && (size_t)n < cap; i++) {
		int m = snprintf(out + n, cap - (size_t)n, "%s%s", i ? " " : ": ", set->rules[i]);
		if (m < 0)
			break;
		n += m;
	}
	if (n > 0 && (size_t)n >= cap && cap > 4)
		memcpy(out + cap - 4, "...", 4); /* cut short: say so */
}
