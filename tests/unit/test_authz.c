/* SPDX-License-Identifier: MIT */
/* Authorization rules (lib/base/authz.c): the syntax, its bounds, the matcher, a context's rule set. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "rdmasec.h"
#include "authz.h"

static void exact_rules_take_only_that_identity(void **state)
{
	(void)state;
	const char *dn = "CN=client one,O=rdmasec test";
	assert_int_equal(rsec_authz_rule_check(dn, NULL, 0), 0);
	assert_true(rsec_authz_match(dn, dn));
	assert_false(rsec_authz_match(dn, "CN=client one,O=rdmasec test2"));
	assert_false(rsec_authz_match(dn, "CN=client one"));
	assert_false(rsec_authz_match(dn, ""));
	assert_true(rsec_authz_match("client.example", "client.example"));
	assert_false(rsec_authz_match("client.example", "Client.example")); /* byte for byte */
}

static void spiffe_prefixes_stop_at_a_slash(void **state)
{
	(void)state;
	const char *rule = "spiffe://prod.example/storage/*";
	assert_int_equal(rsec_authz_rule_check(rule, NULL, 0), 0);
	assert_true(rsec_authz_match(rule, "spiffe://prod.example/storage/node-1"));
	assert_true(rsec_authz_match(rule, "spiffe://prod.example/storage/a/b/c"));
	assert_false(rsec_authz_match(rule, "spiffe://prod.example/storage/"));    /* the star is one or more */
	assert_false(rsec_authz_match(rule, "spiffe://prod.example/storage"));
	assert_false(rsec_authz_match(rule, "spiffe://prod.example/storage-evil/x"));
	assert_false(rsec_authz_match(rule, "spiffe://prod.example.evil/storage/x"));
	assert_false(rsec_authz_match(rule, "spiffe://dev.example/storage/node-1"));
	assert_true(rsec_authz_match("spiffe://prod.example/*", "spiffe://prod.example/compute/x"));
	assert_false(rsec_authz_match("spiffe://prod.example/*", "spiffe://prod.example.com/x"));
}

static void a_star_alone_takes_every_identity(void **state)
{
	(void)state;
	assert_int_equal(rsec_authz_rule_check("*", NULL, 0), 0);
	assert_true(rsec_authz_match("*", "spiffe://any/thing"));
	assert_true(rsec_authz_match("*", "CN=x"));
	assert_false(rsec_authz_match("*", ""));
	assert_false(rsec_authz_match(NULL, "CN=x"));
	assert_false(rsec_authz_match("*", NULL));
}

static void malformed_rules_are_refused_with_a_reason(void **state)
{
	(void)state;
	static const struct {
		const char *rule, *says;
	} bad[] = {
		{ "", "is empty" },
		{ "spiffe://prod.example/storage*", "'*'" },   /* a prefix must end at '/' */
		{ "spiffe://*/storage/x", "'*'" },
		{ "**", "'*'" },
		{ "/*/*", "'*'" },
		{ "*.example.com", "'*'" },
		{ " CN=x", "space" },
		{ "CN=x ", "space" },
		{ "CN=\tx", "control" },
		{ "CN=\x7fx", "control" },
		{ "CN=\xc3\xa9", "non-ASCII" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char err[200] = "";
		assert_int_equal(rsec_authz_rule_check(bad[i].rule, err, sizeof(err)), RSEC_E_CONFIG);
		assert_non_null(strstr(err, bad[i].says));
		assert_non_null(strstr(err, "authorization rule '"));
	}
	assert_int_equal(rsec_authz_rule_check(NULL, NULL, 0), RSEC_E_INVAL);
}

static void rules_are_bounded_in_length(void **state)
{
	(void)state;
	char rule[RSEC_AUTHZ_RULE_MAX + 2];
	memset(rule, 'a', sizeof(rule) - 1);
	rule[sizeof(rule) - 1] = '\0';
	char err[200] = "";
	assert_int_equal(rsec_authz_rule_check(rule, err, sizeof(err)), RSEC_E_CONFIG);
	assert_non_null(strstr(err, "longer than 255"));
	assert_non_null(strstr(err, "...")); /* the quote is cut, not the whole rule */
	rule[RSEC_AUTHZ_RULE_MAX] = '\0';
	assert_int_equal(rsec_authz_rule_check(rule, err, sizeof(err)), 0);
	/* A tiny error buffer is still terminated. */
	char small[8];
	assert_int_equal(rsec_authz_rule_check("a*", small, sizeof(small)), RSEC_E_CONFIG);
	assert_int_equal(strlen(small), sizeof(small) - 1);
}

static void a_list_allows_if_one_rule_does(void **state)
{
	(void)state;
	const char *rules[] = { "CN=admin", "spiffe://prod.example/storage/*" };
	assert_true(rsec_authz_allows(rules, 2, "CN=admin"));
	assert_true(rsec_authz_allows(rules, 2, "spiffe://prod.example/storage/n1"));
	assert_false(rsec_authz_allows(rules, 2, "spiffe://prod.example/compute/n1"));
	assert_false(rsec_authz_allows(rules, 0, "CN=admin")); /* an empty list allows no one */
}

static void a_set_loads_whole_or_not_at_all(void **state)
{
	(void)state;
	struct rsec_authz_set set = { 0 };
	assert_true(rsec_authz_set_allows(&set, "CN=anyone")); /* no rule: every authenticated peer */
	const char *good[] = { "spiffe://prod.example/storage/*", "CN=admin" };
	assert_int_equal(rsec_authz_set_load(&set, good, 2, NULL, 0), 0);
	assert_true(rsec_authz_set_allows(&set, "CN=admin"));
	assert_false(rsec_authz_set_allows(&set, "CN=anyone"));

	const char *bad[] = { "CN=anyone", "spiffe://x/y*" };
	char err[200] = "";
	assert_int_equal(rsec_authz_set_load(&set, bad, 2, err, sizeof(err)), RSEC_E_CONFIG);
	assert_non_null(strstr(err, "spiffe://x/y*"));
	assert_false(rsec_authz_set_allows(&set, "CN=anyone")); /* the old rules stay */

	const char *many[RSEC_AUTHZ_RULES_MAX + 1];
	for (size_t i = 0; i < RSEC_AUTHZ_RULES_MAX + 1; i++)
		many[i] = "CN=anyone";
	assert_int_equal(rsec_authz_set_load(&set, many, RSEC_AUTHZ_RULES_MAX + 1, err, sizeof(err)), RSEC_E_CONFIG);
	assert_non_null(strstr(err, "over the 64"));
	assert_int_equal(rsec_authz_set_load(&set, many, RSEC_AUTHZ_RULES_MAX, err, sizeof(err)), 0);
	assert_true(rsec_authz_set_allows(&set, "CN=anyone"));

	assert_int_equal(rsec_authz_set_load(&set, NULL, 0, NULL, 0), 0);
	assert_true(rsec_authz_set_allows(&set, "CN=someone")); /* back to none */
	rsec_authz_set_free(&set);
}

static void a_set_describes_itself_for_the_audit(void **state)
{
	(void)state;
	struct rsec_authz_set set = { 0 };
	const char *rules[] = { "spiffe://prod.example/storage/*", "CN=admin" };
	assert_int_equal(rsec_authz_set_load(&set, rules, 2, NULL, 0), 0);
	char out[128];
	rsec_authz_set_describe(&set, out, sizeof(out));
	assert_string_equal(out, "2 allow rules: spiffe://prod.example/storage/* CN=admin");
	char small[24];
	rsec_authz_set_describe(&set, small, sizeof(small));
	assert_int_equal(strlen(small), sizeof(small) - 1);
	assert_string_equal(small + sizeof(small) - 4, "...");
	rsec_authz_set_free(&set);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(exact_rules_take_only_that_identity),
		cmocka_unit_test(spiffe_prefixes_stop_at_a_slash),
		cmocka_unit_test(a_star_alone_takes_every_identity),
		cmocka_unit_test(malformed_rules_are_refused_with_a_reason),
		cmocka_unit_test(rules_are_bounded_in_length),
		cmocka_unit_test(a_list_allows_if_one_rule_does),
		cmocka_unit_test(a_set_loads_whole_or_not_at_all),
		cmocka_unit_test(a_set_describes_itself_for_the_audit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
