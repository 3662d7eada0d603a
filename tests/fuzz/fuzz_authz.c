/* SPDX-License-Identifier: MIT */
/*
 * Target functions: rsec_authz_rule_check, rsec_authz_match,
 * rsec_authz_set_load, rsec_authz_set_describe. The input is newline-separated
 * rules; the last line is also the identity each is matched against. Must
 * never crash; a rule refused explains itself; a set loads only if every rule
 * passes; a match of a rule without a star is equality, with one a prefix.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rdmasec.h"
#include "authz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* One rule against identity: what the syntax promises. */
static void check_rule(const char *rule, const char *identity)
{
	char err[96] = "";
	int rc = rsec_authz_rule_check(rule, err, sizeof(err));
	if (rc != 0 && (rc != RSEC_E_CONFIG || err[0] == '\0'))
		abort();
	if (rc != 0 || !rsec_authz_match(rule, identity))
		return;
	size_t len = strlen(rule);
	if (rule[len - 1] != '*' && strcmp(rule, identity) != 0)
		abort();
	if (rule[len - 1] == '*' && (strncmp(rule, identity, len - 1) != 0 || strlen(identity) < len))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	const char **rules = calloc(size + 1, sizeof(*rules));
	if (!text || !rules)
		abort();
	memcpy(text, data, size);
	text[size] = '\0';
	uint32_t n = 0;
	for (char *line = text, *nl; line; line = nl) {
		nl = strchr(line, '\n');
		if (nl)
			*nl++ = '\0';
		rules[n++] = line;
	}
	const char *identity = rules[n - 1];
	int all_good = 1;
	for (uint32_t i = 0; i < n; i++) {
		check_rule(rules[i], identity);
		all_good &= rsec_authz_rule_check(rules[i], NULL, 0) == 0;
	}
	struct rsec_authz_set set = { 0 };
	char err[96] = "", said[128];
	int rc = rsec_authz_set_load(&set, rules, n, err, sizeof(err));
	if ((rc == 0) != (all_good && n <= RSEC_AUTHZ_RULES_MAX) || (rc < 0 && err[0] == '\0'))
		abort();
	if (rc == 0 && rsec_authz_set_allows(&set, identity) != rsec_authz_allows(rules, n, identity))
		abort();
	rsec_authz_set_describe(&set, said, sizeof(said));
	if (strlen(said) >= sizeof(said))
		abort();
	rsec_authz_set_free(&set);
	free(rules);
	free(text);
	return 0;
}
