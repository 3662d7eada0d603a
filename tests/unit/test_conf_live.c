/* SPDX-License-Identifier: MIT */
/*
 * What a SIGHUP may change: tools/server/conf_live.c and
 * tools/blk/blkd/blkd_conf_live.c keep the running values of the keys that
 * need a restart, name them, and let every other key through.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "blkd_conf_live.h"
#include "conf_live.h"

static void server_conf(struct rsec_conf *c, const char *text)
{
	char err[256];
	rsec_conf_defaults(c);
	assert_int_equal(rsec_conf_parse_string(c, text, err, sizeof(err)), 0);
}

static void server_keeps_restart_keys_and_takes_the_rest(void **state)
{
	(void)state;
	static struct rsec_conf old, fresh;
	char names[256];
	server_conf(&old, "[server]\nlisten = 10.0.0.1:7471\nmax_per_identity = 4\n[tls]\nca = a\ncert = b\nkey = c\n");
	server_conf(&fresh, "[server]\nlisten = 10.0.0.2:7000\nmax_per_identity = 9\n[grants]\ngrant_ttl_ms = 1234\n"
			    "[tls]\nca = a\ncert = b2\nkey = c\n");
	assert_int_equal(conf_pin_fixed(&fresh, &old, names, sizeof(names)), 3); /* address, port, cert */
	assert_string_equal(names, "listen,cert");
	assert_string_equal(fresh.listen_addr, "10.0.0.1");
	assert_int_equal(fresh.listen_port, 7471);
	assert_string_equal(fresh.cert, "b");
	assert_int_equal(fresh.max_per_identity, 9);
	assert_int_equal(fresh.grant_ttl_ms, 1234);
	/* Nothing to keep: nothing named. */
	server_conf(&fresh, "[server]\nlisten = 10.0.0.1:7471\nmax_per_identity = 2\n[tls]\nca = a\ncert = b\nkey = c\n");
	assert_int_equal(conf_pin_fixed(&fresh, &old, names, sizeof(names)), 0);
	assert_string_equal(names, "");
	assert_int_equal(fresh.max_per_identity, 2);
}

static struct blkd_conf *blkd_conf(const char *text)
{
	char err[256];
	struct blkd_conf *c = blkd_conf_new();
	assert_non_null(c);
	assert_int_equal(blkd_conf_parse_string(c, text, err, sizeof(err)), 0);
	return c;
}

static void blkd_keeps_stores_and_takes_access_lists(void **state)
{
	(void)state;
	char names[256];
	struct blkd_conf *old = blkd_conf("[target]\nqueues = 2\n[export d]\npath = /x\nsize = 1M\nrw = CN=a\n");
	struct blkd_conf *fresh = blkd_conf("[target]\nqueues = 4\n[export d]\npath = /y\nsize = 1M\nrw = CN=b\nro = CN=c\n");
	assert_int_equal(blkd_conf_pin_fixed(fresh, old, names, sizeof(names)), 2);
	assert_string_equal(names, "queues,path");
	assert_int_equal(fresh->queues, 2);
	assert_string_equal(fresh->exports[0].path, "/x");
	assert_int_equal(fresh->exports[0].n_rw, 1);
	assert_string_equal(fresh->exports[0].rw_ids[0], "CN=b");
	assert_int_equal(fresh->exports[0].n_ro, 1);
	free(fresh);
	/* Another set of exports: the running one stays whole. */
	fresh = blkd_conf("[target]\nqueues = 2\n[export e]\npath = /x\nsize = 1M\nrw = CN=a\n");
	assert_int_equal(blkd_conf_pin_fixed(fresh, old, names, sizeof(names)), 1);
	assert_string_equal(names, "exports");
	assert_string_equal(fresh->exports[0].name, "d");
	free(fresh);
	/* --trust-etcd's endpoints and state directory need a restart; the copy's allow rules do not. */
	fresh = blkd_conf("[target]\nqueues = 2\n[trust]\netcd = h:1/p\nstate_dir = /s\n"
			  "[export d]\npath = /x\nsize = 1M\nrw = CN=a\n");
	strcpy(fresh->allow[0], "CN=z");
	fresh->n_allow = 1;
	assert_int_equal(blkd_conf_pin_fixed(fresh, old, names, sizeof(names)), 2);
	assert_string_equal(names, "etcd,state_dir");
	assert_string_equal(fresh->etcd, "");
	assert_int_equal(fresh->n_allow, 1);
	free(fresh);
	free(old);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(server_keeps_restart_keys_and_takes_the_rest),
		cmocka_unit_test(blkd_keeps_stores_and_takes_access_lists),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
