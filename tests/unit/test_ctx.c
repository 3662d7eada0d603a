/* SPDX-License-Identifier: MIT */
/*
 * rsec_ctx_new's checks of its attributes, on a context without an RDMA
 * device (no device, no local address: TLS credentials only). Every
 * comp_mask bit the header defines is accepted, so a field added to
 * rsec_ctx_attr cannot be unusable for want of its bit.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "conn.h"
#include "rdmasec.h"

static const uint8_t psk[32] = { 1, 2, 3 };

static struct rsec_ctx_attr base(void)
{
	return (struct rsec_ctx_attr){ .psk = psk, .psk_len = sizeof(psk), .psk_identity = "node-a" };
}

static int make(const struct rsec_ctx_attr *a, char *err, size_t cap)
{
	struct rsec_ctx *ctx = NULL;
	err[0] = '\0';
	int rc = rsec_ctx_new(a, &ctx, err, cap);
	assert_true((rc == 0) == (ctx != NULL));
	rsec_ctx_free(ctx);
	return rc;
}

static void every_defined_bit_is_accepted(void **state)
{
	(void)state;
	char err[256];
	struct rsec_ctx_attr a = base();
	a.comp_mask = RSEC_CTX_ATTR_GRANT_MODE | RSEC_CTX_ATTR_QP_POOL | RSEC_CTX_ATTR_DEPTH | RSEC_CTX_ATTR_POLL |
		      RSEC_CTX_ATTR_RESUME | RSEC_CTX_ATTR_QPS | RSEC_CTX_ATTR_CRL | /* crl_file NULL: none */
		      RSEC_CTX_ATTR_ALLOW | /* no rule: anyone authenticated */
		      RSEC_CTX_ATTR_REKEY;
	a.rekey_s = RSEC_MAX_REKEY_S;
	a.rekey_bytes = RSEC_MAX_REKEY_BYTES;
	a.max_qps = RSEC_MAX_QPS;
	a.grant_mode = RSEC_GRANT_MR;
	a.qp_pool = 1;
	a.max_inflight = RSEC_MAX_INFLIGHT;
	a.poll_mode = RSEC_POLL_BUSY;
	a.tls_resume_s = RSEC_MAX_RESUME_S;
	assert_int_equal(make(&a, err, sizeof(err)), 0);
	a.tls_resume_s = 0; /* resumption off */
	assert_int_equal(make(&a, err, sizeof(err)), 0);
}

static void unknown_bits_and_bad_values_are_refused(void **state)
{
	(void)state;
	char err[256];
	struct rsec_ctx_attr a = base();
	a.comp_mask = RSEC_CTX_ATTR_REKEY << 1;
	assert_int_equal(make(&a, err, sizeof(err)), RSEC_E_INVAL);
	assert_non_null(strstr(err, "comp_mask"));

	a = base();
	a.comp_mask = RSEC_CTX_ATTR_CRL;
	a.crl_file = "/etc/rdmasec/crl.pem"; /* revocation is of certificates */
	assert_int_equal(make(&a, err, sizeof(err)), RSEC_E_CONFIG);
	assert_non_null(strstr(err, "CRL"));
	a.comp_mask = 0; /* not read without its bit */
	assert_int_equal(make(&a, err, sizeof(err)), 0);

	a = base();
	a.comp_mask = RSEC_CTX_ATTR_RESUME;
	a.tls_resume_s = RSEC_MAX_RESUME_S + 1;
	assert_int_equal(make(&a, err, sizeof(err)), RSEC_E_RANGE);
	assert_non_null(strstr(err, "tls_resume_s"));
	a.comp_mask = 0; /* not read without its bit */
	assert_int_equal(make(&a, err, sizeof(err)), 0);

	a = base();
	a.comp_mask = RSEC_CTX_ATTR_DEPTH;
	a.max_inflight = RSEC_MAX_INFLIGHT + 1;
	assert_int_equal(make(&a, err, sizeof(err)), RSEC_E_RANGE);

	a = base();
	a.comp_mask = RSEC_CTX_ATTR_QPS;
	a.max_qps = RSEC_MAX_QPS + 1;
	assert_int_equal(make(&a, err, sizeof(err)), RSEC_E_RANGE);
	assert_non_null(strstr(err, "max_qps"));

	a = base();
	a.comp_mask = RSEC_CTX_ATTR_REKEY;
	a.rekey_s = RSEC_MAX_REKEY_S + 1;
	assert_int_equal(make(&a, err, sizeof(err)), RSEC_E_RANGE);
	assert_non_null(strstr(err, "rekey_s"));
	a.rekey_s = 0; /* not by time */
	a.rekey_bytes = RSEC_MAX_REKEY_BYTES + 1;
	assert_int_equal(make(&a, err, sizeof(err)), RSEC_E_RANGE);
	assert_non_null(strstr(err, "rekey_bytes"));
	a.comp_mask = 0; /* not read without its bit */
	assert_int_equal(make(&a, err, sizeof(err)), 0);

	a = base();
	a.comp_mask = RSEC_CTX_ATTR_POLL;
	a.poll_mode = (enum rsec_poll_mode)7;
	assert_int_equal(make(&a, err, sizeof(err)), RSEC_E_INVAL);
}

/*
 * A server accepts further queue pairs (rsec_conn_add_qp) only when its
 * application asked for them with RSEC_CTX_ATTR_QPS: one that never calls
 * rsec_conn_add_qp (rdmasec-server) must not hold, per connection, queue
 * pairs and rings its peer asked for and nobody uses. A client opens only
 * the ones it asks for, so its default stays RSEC_DEFAULT_QPS.
 */
/* Authorization rules are checked whole at rsec_ctx_new and at rsec_ctx_set_allow; a bad set changes nothing. */
static void allow_rules_are_checked(void **state)
{
	(void)state;
	char err[256];
	const char *good[] = { "spiffe://prod.example/storage/*", "psk:node-a" };
	const char *bad[] = { "psk:node-a", "spiffe://prod.example/storage*" };
	struct rsec_ctx_attr a = base();
	a.is_server = 1;
	a.comp_mask = RSEC_CTX_ATTR_ALLOW;
	a.allow = bad;
	a.n_allow = 2;
	assert_int_equal(make(&a, err, sizeof(err)), RSEC_E_CONFIG);
	assert_non_null(strstr(err, "authorization rule 'spiffe://prod.example/storage*'"));
	a.n_allow = RSEC_AUTHZ_RULES_MAX + 1;
	a.allow = NULL;
	assert_int_equal(make(&a, err, sizeof(err)), RSEC_E_INVAL); /* rules NULL with n > 0 */
	a.allow = good;
	a.n_allow = 2;
	struct rsec_ctx *ctx = NULL;
	assert_int_equal(rsec_ctx_new(&a, &ctx, err, sizeof(err)), 0);
	char why[128] = "";
	assert_true(rsec_ctx_authorized(ctx, "spiffe://prod.example/storage/n1", why, sizeof(why)));
	assert_false(rsec_ctx_authorized(ctx, "spiffe://prod.example/compute/n1", why, sizeof(why)));
	assert_string_equal(why, "2 allow rules: spiffe://prod.example/storage/* psk:node-a");
	assert_int_equal(rsec_ctx_set_allow(ctx, bad, 2, err, sizeof(err)), RSEC_E_CONFIG);
	assert_true(rsec_ctx_authorized(ctx, "spiffe://prod.example/storage/n1", why, sizeof(why)));
	assert_int_equal(rsec_ctx_set_allow(ctx, good + 1, 1, err, sizeof(err)), 0);
	assert_false(rsec_ctx_authorized(ctx, "spiffe://prod.example/storage/n1", why, sizeof(why)));
	assert_int_equal(rsec_ctx_set_allow(ctx, NULL, 0, err, sizeof(err)), 0);
	assert_true(rsec_ctx_authorized(ctx, "anyone", why, sizeof(why)));
	assert_int_equal(rsec_ctx_set_allow(NULL, NULL, 0, err, sizeof(err)), RSEC_E_INVAL);
	rsec_ctx_free(ctx);
}

static void a_server_takes_further_queue_pairs_only_when_asked(void **state)
{
	(void)state;
	char err[256];
	struct rsec_ctx *ctx;
	struct rsec_ctx_attr a = base();
	a.is_server = 1;
	assert_int_equal(rsec_ctx_new(&a, &ctx, err, sizeof(err)), 0);
	assert_int_equal(ctx->max_qps, 1);
	rsec_ctx_free(ctx);
	a.comp_mask = RSEC_CTX_ATTR_QPS; /* max_qps 0: the default */
	assert_int_equal(rsec_ctx_new(&a, &ctx, err, sizeof(err)), 0);
	assert_int_equal(ctx->max_qps, RSEC_DEFAULT_QPS);
	rsec_ctx_free(ctx);
	a = base();
	assert_int_equal(rsec_ctx_new(&a, &ctx, err, sizeof(err)), 0);
	assert_int_equal(ctx->max_qps, RSEC_DEFAULT_QPS);
	rsec_ctx_free(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_defined_bit_is_accepted),
		cmocka_unit_test(unknown_bits_and_bad_values_are_refused),
		cmocka_unit_test(a_server_takes_further_queue_pairs_only_when_asked),
		cmocka_unit_test(allow_rules_are_checked),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
