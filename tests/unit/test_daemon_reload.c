/* SPDX-License-Identifier: MIT */
/*
 * The daemons' reload (tools/daemon/reload.c) without a device: a server
 * context in certificate mode and a service of the test's own whose
 * configuration is one allow rule. A reload goes live only when the
 * configuration and the credentials both load; whatever fails changes nothing
 * and is counted; the etcd watcher's refusal is a failed reload.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "conn.h"
#include "pki.h"
#include "reload.h"

/* The service: its live configuration, what the next reread returns, what it was asked to do. */
struct conf {
	char allow[1][RSEC_AUTHZ_RULE_MAX + 1];
	uint32_t n_allow;
	unsigned restart_key; /* needs a restart: a reload keeps the running value */
};

struct svc {
	struct conf live;
	bool reread_fails;
	struct conf next;
	unsigned applied, rechecked;
	bool recheck_saw_new; /* the sessions were rechecked under the configuration that went live */
};

static void *reread(void *arg, char *err, size_t errlen)
{
	struct svc *s = arg;
	if (s->reread_fails) {
		snprintf(err, errlen, "line 3: no such key");
		return NULL;
	}
	struct conf *c = malloc(sizeof(*c));
	if (c)
		*c = s->next;
	return c;
}

static struct trust_rules rules(void *arg, const void *conf)
{
	const struct conf *c = conf ? conf : &((struct svc *)arg)->live;
	return (struct trust_rules){ c->allow, c->n_allow };
}

static void apply(void *arg, void *fresh, char *pinned, size_t cap)
{
	struct svc *s = arg;
	struct conf *c = fresh;
	snprintf(pinned, cap, "%s", c->restart_key != s->live.restart_key ? "restart_key" : "");
	c->restart_key = s->live.restart_key;
	s->live = *c;
	s->applied++;
	free(fresh);
}

static void recheck(void *arg)
{
	struct svc *s = arg;
	s->rechecked++;
	s->recheck_saw_new = strcmp(s->live.allow[0], s->next.allow[0]) == 0;
}

static size_t sessions(void *arg)
{
	(void)arg;
	return 0;
}

static const struct daemon_reload_ops ops = { reread, rules, apply, recheck, sessions };

struct fixture {
	char dir[64], cert[512];
	struct rsec_ctx *ctx;
	struct svc svc;
	struct daemon_reload_counts n;
	struct daemon_reload r;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/rsec-dreload-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	char err[256], ca[512], key[512];
	struct rsec_pki_opts o = { .dir = f->dir, .clients = 1 };
	assert_int_equal(rsec_pki_generate(&o, err, sizeof(err)), 0);
	snprintf(ca, sizeof(ca), "%s/ca.pem", f->dir);
	snprintf(f->cert, sizeof(f->cert), "%s/server.pem", f->dir);
	snprintf(key, sizeof(key), "%s/server.key", f->dir);
	struct rsec_ctx_attr a = { .is_server = 1, .ca_file = ca, .cert_file = f->cert, .key_file = key };
	assert_int_equal(rsec_ctx_new(&a, &f->ctx, err, sizeof(err)), 0);
	snprintf(f->svc.live.allow[0], sizeof(f->svc.live.allow[0]), "CN=client1,O=rdmasec-test");
	f->svc.live.n_allow = 1;
	f->svc.live.restart_key = 7;
	f->svc.next = f->svc.live;
	assert_int_equal(trust_conf_set_allow(f->ctx, rules(&f->svc, NULL), err, sizeof(err)), 0);
	f->r = (struct daemon_reload){ .ops = &ops, .svc = &f->svc, .ctx = f->ctx, .certificates = true, .n = &f->n };
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	rsec_ctx_free(f->ctx);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	int rc = system(cmd);
	free(f);
	return rc == 0 ? 0 : -1;
}

/* A good reload goes live (the key that needs a restart kept), counts, and rechecks the sessions. */
static void test_good_reload_goes_live(void **state)
{
	struct fixture *f = *state;
	daemon_reload_cert_expiry(&f->r);
	assert_true(f->n.cert_expiry_days > 300); /* rdmasec-keygen's certificates: a year and more */
	f->n.changed = 0;
	snprintf(f->svc.next.allow[0], sizeof(f->svc.next.allow[0]), "spiffe://example.org/*");
	f->svc.next.restart_key = 9;
	daemon_reload_run(&f->r);
	assert_int_equal(f->svc.applied, 1);
	assert_int_equal(f->svc.rechecked, 1);
	assert_true(f->svc.recheck_saw_new);
	assert_string_equal(f->svc.live.allow[0], "spiffe://example.org/*");
	char why[160];
	assert_true(rsec_ctx_authorized(f->ctx, "spiffe://example.org/db", why, sizeof(why)));
	assert_false(rsec_ctx_authorized(f->ctx, "CN=client1,O=rdmasec-test", why, sizeof(why)));
	assert_int_equal(f->svc.live.restart_key, 7);
	assert_int_equal(f->n.reloads, 1);
	assert_int_equal(f->n.reload_failures, 0);
	assert_true(f->n.changed);
}

/* A configuration that does not read, a bad allow rule, credentials that do not load: nothing changes. */
static void test_failures_change_nothing(void **state)
{
	struct fixture *f = *state;
	f->svc.reread_fails = true;
	daemon_reload_run(&f->r);
	f->svc.reread_fails = false;
	snprintf(f->svc.next.allow[0], sizeof(f->svc.next.allow[0]), "not*a rule");
	daemon_reload_run(&f->r);
	assert_int_equal(f->n.reload_failures, 2);
	snprintf(f->svc.next.allow[0], sizeof(f->svc.next.allow[0]), "*");
	FILE *pem = fopen(f->cert, "w"); /* the operator's copy went wrong */
	assert_non_null(pem);
	fputs("-----BEGIN CERTIFICATE-----\nnot one\n-----END CERTIFICATE-----\n", pem);
	assert_int_equal(fclose(pem), 0);
	daemon_reload_run(&f->r);
	assert_int_equal(f->n.reload_failures, 3);
	assert_int_equal(f->n.reloads, 0);
	assert_int_equal(f->svc.applied, 0);
	assert_int_equal(f->svc.rechecked, 0);
	assert_string_equal(f->svc.live.allow[0], "CN=client1,O=rdmasec-test");
	assert_true(f->n.changed);
	f->n.cert_expiry_days = 0;
	daemon_reload_cert_expiry(&f->r); /* the context still holds the certificate it had */
	assert_true(f->n.cert_expiry_days > 300);
	char why[160]; /* and the allow rules it had: "*" was put back when the certificate failed */
	assert_true(rsec_ctx_authorized(f->ctx, "CN=client1,O=rdmasec-test", why, sizeof(why)));
	assert_false(rsec_ctx_authorized(f->ctx, "CN=client2,O=rdmasec-test", why, sizeof(why)));
}

/* A reload answers the SIGHUP that came in the same turn: one reload, not two. */
static void test_reload_clears_pending(void **state)
{
	struct fixture *f = *state;
	bool pending = true;
	f->r.pending = &pending;
	daemon_reload_run(&f->r);
	assert_false(pending);
	assert_int_equal(f->n.reloads, 1);
}

/* PSK mode reads no credential files, and has no certificate to count days of. */
static void test_psk_mode(void **state)
{
	struct fixture *f = *state;
	f->r.certificates = false;
	daemon_reload_cert_expiry(&f->r);
	assert_int_equal(f->n.cert_expiry_days, 0);
	FILE *pem = fopen(f->cert, "w");
	assert_non_null(pem);
	assert_int_equal(fclose(pem), 0);
	daemon_reload_run(&f->r); /* an empty certificate file, never read */
	assert_int_equal(f->n.reloads, 1);
	assert_int_equal(f->n.reload_failures, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_good_reload_goes_live, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failures_change_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reload_clears_pending, setup, teardown),
		cmocka_unit_test_setup_teardown(test_psk_mode, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
