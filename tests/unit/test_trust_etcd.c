/* SPDX-License-Identifier: MIT */
/*
 * --trust-etcd's checks without etcd (tools/common/trust_etcd.c): the option,
 * the /v3/kv/range reply, the one check every snapshot passes before it is
 * applied, the last good copy on disk, and the start-up choice between etcd
 * and that copy when no endpoint answers; a daemon's share of it
 * (trust_conf.c: rdmasec-server's and rdmasec-blkd's).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include <openssl/evp.h>

#include "pki.h"
#include "rdmasec.h"
#include "trust_conf.h"
#include "trust_etcd.h"

static char root[64];
/* Two CAs' PEM files: a (the trusted one) and b (another cluster's). */
static char *ca_a, *crl_a, *ca_b, *crl_b, *client_a;

static char *slurp(const char *dir, const char *name)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s/%s", root, dir, name);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	char *buf = calloc(1, 65536);
	assert_non_null(buf);
	assert_true(fread(buf, 1, 65535, f) > 0);
	fclose(f);
	return buf;
}

static void make_pki(const char *name)
{
	char dir[256], err[256];
	snprintf(dir, sizeof(dir), "%s/%s", root, name);
	struct rsec_pki_opts o = { .dir = dir, .clients = 2 };
	assert_int_equal(rsec_pki_generate(&o, err, sizeof(err)), 0);
	assert_int_equal(rsec_pki_write_crl(dir, "client2", 0, err, sizeof(err)), 0);
}

static int setup(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/rsec-trust-XXXXXX");
	assert_non_null(mkdtemp(root));
	make_pki("a");
	make_pki("b");
	ca_a = slurp("a", "ca.pem");
	crl_a = slurp("a", "crl.pem");
	ca_b = slurp("b", "ca.pem");
	crl_b = slurp("b", "crl.pem");
	client_a = slurp("a", "client.pem");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	free(ca_a);
	free(crl_a);
	free(ca_b);
	free(crl_b);
	free(client_a);
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_spec(void **state)
{
	(void)state;
	struct trust_spec s;
	char err[256];
	assert_int_equal(trust_spec_parse("10.0.0.1:2379,etcd-2:2379/rdmasec/trust", &s, err, sizeof(err)), 0);
	assert_int_equal(s.n_endpoints, 2);
	assert_string_equal(s.endpoints[1], "etcd-2:2379");
	assert_string_equal(s.prefix, "/rdmasec/trust");
	assert_false(s.https);
	assert_int_equal(trust_spec_parse("https://[fd00::1]:2379/p", &s, err, sizeof(err)), 0);
	assert_true(s.https);
	assert_string_equal(s.endpoints[0], "[fd00::1]:2379");
	static const char *const bad[] = {
		"h:2379",        "h:2379/",   "/p",          "h:2379,/p",        ",h:1/p", "h/p",
		"h:/p",          "h:x/p",     "h:1/p/",      "h:1/p q",          "h;x:1/p",
		"h:0/p",         "h:65536/p", "[::1/p",      "[::1]x:1/p",
		"a:1,b:1,c:1,d:1,e:1,f:1,g:1,h:1,i:1/p",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_int_equal(trust_spec_parse(bad[i], &s, err, sizeof(err)), -1);
		assert_non_null(strstr(err, "trust-etcd"));
	}
}

static char *b64(const char *s)
{
	size_t n = strlen(s);
	char *out = malloc(4 * ((n + 2) / 3) + 1);
	assert_non_null(out);
	EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)s, (int)n);
	return out;
}

/* A range reply holding keys[i] = values[i] (values NULL: the member left out, as etcd does for ""). */
static char *reply(size_t n, const char *const *keys, const char *const *values)
{
	size_t cap = 1 << 20, used = 0;
	char *out = malloc(cap);
	assert_non_null(out);
	used += (size_t)snprintf(out, cap, "{\"header\":{\"revision\":\"7\"},\"kvs\":[");
	for (size_t i = 0; i < n; i++) {
		char *k = b64(keys[i]), *v = values[i] ? b64(values[i]) : NULL;
		used += (size_t)snprintf(out + used, cap - used, "%s{\"key\":\"%s\",\"mod_revision\":\"3\"%s%s%s}",
					 i ? "," : "", k, v ? ",\"value\":\"" : "", v ? v : "", v ? "\"" : "");
		free(k);
		free(v);
	}
	snprintf(out + used, cap - used, "],\"count\":\"%zu\"}", n);
	return out;
}

static void test_parse_range(void **state)
{
	(void)state;
	struct trust_snapshot s;
	char err[256];
	const char *keys[] = { "/t/allow", "/t/ca", "/t/crl", "/t/cax", "/tt/ca" };
	const char *vals[] = { "CN=a", "CA-PEM", "CRL-PEM", "other", "other" };
	char *j = reply(5, keys, vals);
	assert_int_equal(trust_parse_range(j, strlen(j), "/t", &s, err, sizeof(err)), 0);
	assert_string_equal(s.ca, "CA-PEM");
	assert_string_equal(s.crl, "CRL-PEM");
	assert_string_equal(s.allow, "CN=a");
	trust_snapshot_clear(&s);
	/* Cut anywhere, the reply is refused, never half taken. */
	for (size_t cut = 0; cut < strlen(j); cut += 7) {
		assert_int_equal(trust_parse_range(j, cut, "/t", &s, err, sizeof(err)), -1);
		assert_null(s.ca);
	}
	free(j);
	/* An empty value (etcd leaves "value" out) is "", a key twice is refused. */
	const char *dup_keys[] = { "/t/allow", "/t/ca", "/t/ca" };
	const char *dup_vals[] = { NULL, "x", "y" };
	j = reply(2, dup_keys, dup_vals);
	assert_int_equal(trust_parse_range(j, strlen(j), "/t", &s, err, sizeof(err)), 0);
	assert_string_equal(s.allow, "");
	trust_snapshot_clear(&s);
	free(j);
	j = reply(3, dup_keys, dup_vals);
	assert_int_equal(trust_parse_range(j, strlen(j), "/t", &s, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "twice"));
	free(j);
	static const char *const bad[] = {
		"[]", "{}", "nothing", "{\"header\":{},\"kvs\":{}}", "{\"header\":{},\"kvs\":[{\"value\":\"eA==\"}]}",
		"{\"header\":{},\"kvs\":[{\"key\":\"L3QvY2E=\",\"value\":\"not base64!\"}]}",
		"{\"header\":{},\"kvs\":[{\"key\":\"L3QvY2E=\",\"value\":\"eABi\"}]}", /* "x\0b" */
		"{\"error\":\"etcdserver: no leader\",\"code\":14,\"message\":\"etcdserver: no leader\"}",
		"{\"header\":{}} trailing",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_int_equal(trust_parse_range(bad[i], strlen(bad[i]), "/t", &s, err, sizeof(err)), -1);
		assert_true(err[0] != '\0');
	}
	/* No kvs: the prefix is empty, which the check refuses (ca missing). */
	const char *empty = "{\"header\":{\"revision\":\"1\"}}";
	assert_int_equal(trust_parse_range(empty, strlen(empty), "/t", &s, err, sizeof(err)), 0);
	assert_int_equal(trust_snapshot_check(&s, err, sizeof(err)), -1);
	assert_string_equal(err, "ca: missing");
}

/* check's verdict on (ca, crl, allow), and its reason contains want ("" when it passes). */
static void check_is(const char *ca, const char *crl, const char *allow, const char *want)
{
	struct trust_snapshot s = { .ca = (char *)ca, .crl = (char *)crl, .allow = (char *)allow };
	char err[512] = "";
	int rc = trust_snapshot_check(&s, err, sizeof(err));
	if (!*want) {
		if (rc != 0)
			fail_msg("refused: %s", err);
		return;
	}
	assert_int_equal(rc, -1);
	if (!strstr(err, want))
		fail_msg("'%s' does not say '%s'", err, want);
}

static void test_check(void **state)
{
	(void)state;
	check_is(ca_a, crl_a, NULL, "");
	check_is(ca_a, crl_a, "# storage\n\nCN=client1,O=rdmasec-test\r\nspiffe://x/ns/*\n*", "");
	char both[131072];
	snprintf(both, sizeof(both), "%s%s", ca_b, ca_a);
	check_is(both, crl_a, "", ""); /* a bundle: the CRL's issuer is its second CA */
	check_is(NULL, crl_a, NULL, "ca: missing");
	check_is(ca_a, NULL, NULL, "crl: missing");
	check_is("junk", crl_a, NULL, "ca: no PEM certificate");
	check_is(client_a, crl_a, NULL, "not a CA");
	char broken[65536];
	snprintf(broken, sizeof(broken), "%s", ca_a);
	memmove(broken + 100, broken + 110, strlen(broken + 110) + 1); /* ten base64 characters gone */
	check_is(broken, crl_a, NULL, "ca:");
	check_is(ca_a, "junk", NULL, "crl: not a PEM CRL");
	check_is(ca_a, crl_b, NULL, "not signed by a CA of the bundle");
	char crls[131072];
	snprintf(crls, sizeof(crls), "%s%s", crl_a, crl_b); /* a CA changing: one CRL per CA */
	check_is(both, crls, NULL, "");
	check_is(ca_a, crls, NULL, "crl: CRL 2: not signed");
	check_is(ca_a, crl_a, "CN=ok\nbad*rule", "allow:");
	check_is(ca_a, crl_a, "spiffe://x/ \n", "allow:");
	char many[8192] = "";
	for (int i = 0; i <= (int)RSEC_AUTHZ_RULES_MAX; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many), "CN=c%d\n", i);
	check_is(ca_a, crl_a, many, "more than");
	char *huge = malloc(TRUST_MAX_ENTRY + 2);
	assert_non_null(huge);
	memset(huge, '#', TRUST_MAX_ENTRY + 1);
	huge[TRUST_MAX_ENTRY + 1] = '\0';
	check_is(ca_a, crl_a, huge, "allow: over");
	free(huge);
}

static void test_allow_split(void **state)
{
	(void)state;
	char rules[4][256], err[256];
	assert_int_equal(trust_allow_split("# c\nCN=a\n\nspiffe://d/*\n", rules, 4, err, sizeof(err)), 2);
	assert_string_equal(rules[0], "CN=a");
	assert_string_equal(rules[1], "spiffe://d/*");
	assert_int_equal(trust_allow_split("a\nb\nc", rules, 2, err, sizeof(err)), -1);
	assert_int_equal(trust_allow_split(NULL, rules, 2, err, sizeof(err)), 0);
}

static void test_state(void **state)
{
	(void)state;
	char dir[256], err[512], path[512];
	snprintf(dir, sizeof(dir), "%s/state", root);
	struct trust_snapshot good = { .ca = ca_a, .crl = crl_a, .allow = (char *)"CN=x" }, back;
	assert_int_equal(trust_state_read(dir, &back, err, sizeof(err)), -1); /* nothing yet */
	assert_int_equal(trust_state_write(dir, &good, err, sizeof(err)), 0);
	assert_int_equal(trust_state_read(dir, &back, err, sizeof(err)), 0);
	assert_true(trust_snapshot_equal(&good, &back));
	trust_snapshot_clear(&back);
	snprintf(path, sizeof(path), "%s/ca.pem.tmp", dir);
	assert_int_equal(access(path, F_OK), -1); /* renamed, not left behind */
	/* No allow rules: an empty file, equal to an absent key. */
	struct trust_snapshot none = { .ca = ca_a, .crl = crl_a };
	assert_int_equal(trust_state_write(dir, &none, err, sizeof(err)), 0);
	assert_int_equal(trust_state_read(dir, &back, err, sizeof(err)), 0);
	assert_true(trust_snapshot_equal(&none, &back));
	assert_false(trust_snapshot_equal(&good, &back));
	trust_snapshot_clear(&back);
	/* A copy damaged on disk is no last good copy. */
	snprintf(path, sizeof(path), "%s/crl.pem", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(crl_b, f);
	fclose(f);
	assert_int_equal(trust_state_read(dir, &back, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not signed"));
	assert_null(back.ca);
}

/* No endpoint answers: the last good copy, if there is one; otherwise no start. */
static void test_bootstrap_offline(void **state)
{
	(void)state;
	struct trust_spec spec;
	struct trust_snapshot got;
	char dir[256], err[1024];
	bool from_etcd = true;
	assert_int_equal(trust_spec_parse("127.0.0.1:1/t", &spec, err, sizeof(err)), 0);
	snprintf(dir, sizeof(dir), "%s/offline", root);
	assert_int_equal(trust_bootstrap(&spec, dir, &got, &from_etcd, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "no good copy on disk"));
	struct trust_snapshot good = { .ca = ca_a, .crl = crl_a, .allow = (char *)"CN=y" };
	assert_int_equal(trust_state_write(dir, &good, err, sizeof(err)), 0);
	assert_int_equal(trust_bootstrap(&spec, dir, &got, &from_etcd, err, sizeof(err)), 0);
	assert_false(from_etcd);
	assert_true(trust_snapshot_equal(&good, &got));
	trust_snapshot_clear(&got);
}

/* A configuration takes the copy's CA and CRL paths, and its rules after its own (64 in all). */
static void test_conf_apply(void **state)
{
	(void)state;
	static char allow[RSEC_AUTHZ_RULES_MAX][RSEC_AUTHZ_RULE_MAX + 1];
	char dir[256], err[1024], ca[512] = "", crl[512] = "", want[512];
	uint32_t n = 1;
	snprintf(allow[0], sizeof(allow[0]), "CN=local");
	struct trust_conf_slots to = { .ca = ca, .ca_cap = sizeof(ca), .crl = crl, .crl_cap = sizeof(crl),
				       .allow = allow, .n_allow = &n };
	snprintf(dir, sizeof(dir), "%s/conf", root);
	assert_int_equal(trust_conf_apply(dir, &to, err, sizeof(err)), -1); /* no copy yet */
	assert_non_null(strstr(err, "last good copy"));
	struct trust_snapshot good = { .ca = ca_a, .crl = crl_a, .allow = (char *)"CN=a\n# c\nspiffe://x/y/*\n" };
	assert_int_equal(trust_state_write(dir, &good, err, sizeof(err)), 0);
	assert_int_equal(trust_conf_apply(dir, &to, err, sizeof(err)), 0);
	assert_int_equal(n, 3);
	assert_string_equal(allow[0], "CN=local");
	assert_string_equal(allow[1], "CN=a");
	assert_string_equal(allow[2], "spiffe://x/y/*");
	snprintf(want, sizeof(want), "%s/ca.pem", dir);
	assert_string_equal(ca, want);
	snprintf(want, sizeof(want), "%s/crl.pem", dir);
	assert_string_equal(crl, want);
	/* With the configuration's own rules the copy's would pass 64: refused, the count unchanged. */
	n = RSEC_AUTHZ_RULES_MAX - 1;
	assert_int_equal(trust_conf_apply(dir, &to, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "the file's and the flags' rules"));
	assert_int_equal(n, RSEC_AUTHZ_RULES_MAX - 1);
}

/* The start a daemon makes: a bad option is bad usage (2), no copy at all is 1, the last good copy starts it. */
static void test_conf_start(void **state)
{
	(void)state;
	static char allow[RSEC_AUTHZ_RULES_MAX][RSEC_AUTHZ_RULE_MAX + 1];
	char dir[256], err[1024], ca[512] = "", crl[512] = "";
	uint32_t n = 0;
	struct trust_conf_slots to = { .ca = ca, .ca_cap = sizeof(ca), .crl = crl, .crl_cap = sizeof(crl),
				       .allow = allow, .n_allow = &n };
	struct trust_watch *w = NULL;
	snprintf(dir, sizeof(dir), "%s/start", root);
	assert_int_equal(trust_conf_start("test", "127.0.0.1:1", dir, &to, &w), 2);
	assert_int_equal(trust_conf_start("test", "127.0.0.1:1/t", dir, &to, &w), 1);
	assert_null(w);
	struct trust_snapshot good = { .ca = ca_a, .crl = crl_a, .allow = (char *)"CN=z" };
	assert_int_equal(trust_state_write(dir, &good, err, sizeof(err)), 0);
	assert_int_equal(trust_conf_start("test", "127.0.0.1:1/t", dir, &to, &w), 0);
	assert_non_null(w);
	assert_true(trust_watch_fd(w) >= 0);
	assert_int_equal(n, 1);
	assert_string_equal(allow[0], "CN=z");
	assert_non_null(strstr(ca, "/start/ca.pem"));
	/* Nothing from etcd yet: nothing to reload, nothing refused. */
	char rejected[600] = "x";
	assert_false(trust_conf_take(w, rejected, sizeof(rejected)));
	assert_string_equal(rejected, "");
	trust_watch_stop(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spec),
		cmocka_unit_test(test_parse_range),
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_allow_split),
		cmocka_unit_test(test_state),
		cmocka_unit_test(test_bootstrap_offline),
		cmocka_unit_test(test_conf_apply),
		cmocka_unit_test(test_conf_start),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
