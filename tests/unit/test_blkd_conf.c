/* SPDX-License-Identifier: MIT */
/* rdmasec-blkd's configuration: the INI file, the CLI's export form, the cross checks. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "blkd_conf.h"
#include "rdmasec.h"

static const char full[] =
	"; rdmasec-blkd\n"
	"[target]\n"
	"listen = [fd00::1]:9000\n"
	"audit_log = /var/log/blkd.audit   ; inline comment\n"
	"queue_depth = 64\n"
	"queues = 8\n"
	"max_transfer = 2M\n"
	"max_inline = 60K\n"
	"memory_limit = 4G\n"
	"busy_poll_us = 0\n"
	"[tls]\n"
	"ca = /etc/ca.pem\n"
	"cert = /etc/server.pem\n"
	"key = /etc/server.key\n"
	"[export disk0]\n"
	"path = /srv/disk0.img\n"
	"size = 64G\n"
	"block_size = 512\n"
	"rw = CN=db1,O=example\n"
	"rw = CN=db2,O=example\n"
	"ro = *\n"
	"[export ro.img]\n"
	"path = /dev/sdb\n"
	"read_only = yes\n"
	"direct = no\n"
	"nowait = no\n"
	"ro = CN=backup\n";

static struct blkd_conf *parse(const char *text, int *rc, char *err, size_t errlen)
{
	struct blkd_conf *c = blkd_conf_new();
	assert_non_null(c);
	*rc = blkd_conf_parse_string(c, text, err, errlen);
	return c;
}

static void full_file(void **state)
{
	(void)state;
	char err[256] = "";
	int rc;
	struct blkd_conf *c = parse(full, &rc, err, sizeof(err));
	assert_int_equal(rc, 0);
	assert_string_equal(c->listen_addr, "fd00::1");
	assert_int_equal(c->listen_port, 9000);
	assert_int_equal(c->queue_depth, 64);
	assert_int_equal(c->max_transfer, 2u << 20);
	assert_int_equal(c->max_inline, 60u << 10);
	assert_true(c->memory_limit == (UINT64_C(4) << 30));
	assert_int_equal(c->busy_poll_us, 0);
	assert_string_equal(c->audit_log, "/var/log/blkd.audit");
	assert_int_equal(c->n_exports, 2);
	const struct blkd_export_conf *x = &c->exports[0];
	assert_string_equal(x->name, "disk0");
	assert_true(x->size == (UINT64_C(64) << 30));
	assert_int_equal(x->block_size, 512);
	assert_int_equal(x->n_rw, 2);
	assert_string_equal(x->rw_ids[1], "CN=db2,O=example");
	assert_string_equal(x->ro_ids[0], "*");
	assert_false(x->read_only);
	assert_true(x->direct);
	assert_true(x->nowait);
	assert_true(c->exports[1].read_only);
	assert_false(c->exports[1].direct);
	assert_false(c->exports[1].nowait);
	assert_int_equal(blkd_conf_check(c, err, sizeof(err)), 0);
	free(c);
}

static void defaults(void **state)
{
	(void)state;
	struct blkd_conf *c = blkd_conf_new();
	assert_non_null(c);
	assert_int_equal(c->listen_port, BLK_DEFAULT_PORT);
	assert_int_equal(c->queue_depth, 32);
	assert_int_equal(c->max_transfer, 1u << 20);
	assert_int_equal(c->rekey_s, RSEC_DEFAULT_REKEY_S);
	assert_true(c->rekey_bytes == RSEC_DEFAULT_REKEY_BYTES);
	assert_int_equal(c->busy_poll_us, 2000);
	char err[256];
	/* No credentials, no export. */
	assert_int_equal(blkd_conf_check(c, err, sizeof(err)), -1);
	free(c);
}

/* Rekeying's bounds: the library's maxima, sizes with suffixes. */
static void rekey_keys(void **state)
{
	(void)state;
	int rc;
	char err[256] = "";
	struct blkd_conf *c = parse("[tls]\nrekey_s = 604800\nrekey_bytes = 128G\n", &rc, err, sizeof(err));
	assert_int_equal(rc, 0);
	assert_int_equal(c->rekey_s, RSEC_MAX_REKEY_S);
	assert_true(c->rekey_bytes == RSEC_MAX_REKEY_BYTES);
	free(c);
	c = parse("[tls]\nrekey_s = 1\nrekey_bytes = 64K\n", &rc, err, sizeof(err));
	assert_int_equal(rc, 0);
	assert_int_equal(c->rekey_s, 1);
	assert_true(c->rekey_bytes == 65536);
	free(c);
}

/* Each line is refused, naming the line and quoting the input. */
static void invalid(void **state)
{
	(void)state;
	static const struct {
		const char *text, *says;
	} cases[] = {
		{ "[target]\nqueue_depth = 0\n", "line 2: queue_depth: '0' is not a number in 1..64" },
		/* Over librdmasec's 64 live grants per connection: refused, never met at run time. */
		{ "[target]\nqueue_depth = 65\n", "line 2: queue_depth: '65' is not a number in 1..64" },
		{ "[target]\nqueue_depth = 32K\n", "'32K' is not a number" },
		{ "[target]\nmax_transfer = 9M\n", "max_transfer: '9M' is not a size" },
		{ "[target]\nlisten = 1.2.3.4:0\n", "port '0'" },
		{ "[target]\nlisten = nohost\n", "'nohost' is not an IP address" },
		{ "[target]\nqueues = 2\nqueues = 3\n", "line 3: duplicate key 'queues'" },
		{ "[target]\nfoo = 1\n", "unknown key 'foo' in [target]" },
		{ "[nothing]\nfoo = 1\n", "unknown section '[nothing]'" },
		{ "[export bad/name]\npath = x\n", "export name 'bad/name'" },
		{ "[export d]\nblock_size = 1024\n", "block_size: '1024' is not 512 or 4096" },
		{ "[export d]\nsize = 18446744073709551615K\n", "size: '18446744073709551615K'" },
		{ "[export d]\nread_only = maybe\n", "'maybe' is not yes or no" },
		{ "[export d]\nrw =\n", "rw: an empty identity" },
		{ "[export d]\nro = spiffe://prod.example/storage*\n", "ro: authorization rule 'spiffe://prod.example/storage*'" },
		{ "[export d]\nrw = CN=*\n", "rw: authorization rule 'CN=*' has a '*'" },
		{ "[export d]\nwho = x\n", "unknown key 'who' in [export d]" },
		{ "just text\n", "line 1: expected '[section]'" },
		{ "[target]\nbusy_poll_us = 10001\n", "line 2: busy_poll_us: '10001' is not a number in 0..10000" },
		{ "[tls]\nrekey_s = 0\n", "line 2: rekey_s: '0' is not a number in 1..604800" },
		{ "[tls]\nrekey_s = -1\n", "line 2: rekey_s: '-1' is not a number in 1..604800" },
		{ "[tls]\nrekey_s = 604801\n", "line 2: rekey_s: '604801' is not a number in 1..604800" },
		{ "[tls]\nrekey_s = 1h\n", "line 2: rekey_s: '1h' is not a number" },
		{ "[tls]\nrekey_bytes = 0\n", "line 2: rekey_bytes: '0' is not a size in 1..137438953472" },
		{ "[tls]\nrekey_bytes = 129G\n", "line 2: rekey_bytes: '129G' is not a size in 1..137438953472" },
		{ "[tls]\nrekey_bytes = lots\n", "line 2: rekey_bytes: 'lots' is not a size" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char err[256] = "";
		int rc;
		struct blkd_conf *c = parse(cases[i].text, &rc, err, sizeof(err));
		if (rc != -1 || !strstr(err, cases[i].says))
			fail_msg("case %zu: rc %d, '%s' lacks '%s'", i, rc, err, cases[i].says);
		free(c);
	}
}

static void long_line(void **state)
{
	(void)state;
	char text[600];
	snprintf(text, sizeof(text), "[export d]\nrw = CN=%0400d\n", 1);
	char err[256] = "";
	int rc;
	struct blkd_conf *c = parse(text, &rc, err, sizeof(err));
	assert_int_equal(rc, -1);
	assert_non_null(strstr(err, "line 2: line too long"));
	free(c);
}

static void export_spec(void **state)
{
	(void)state;
	struct blkd_conf *c = blkd_conf_new();
	char err[256] = "";
	assert_int_equal(blkd_conf_export_spec(c, "d1=/tmp/x.img,size=64M,bs=512,ro,buffered,max-sessions=3", err,
					       sizeof(err)), 0);
	const struct blkd_export_conf *x = &c->exports[0];
	assert_string_equal(x->path, "/tmp/x.img");
	assert_true(x->size == (UINT64_C(64) << 20));
	assert_int_equal(x->block_size, 512);
	assert_true(x->read_only);
	assert_false(x->direct);
	assert_int_equal(x->max_sessions, 3);
	assert_true(x->nowait);
	assert_int_equal(blkd_conf_export_spec(c, "d2=/dev/sdb,nowait=no", err, sizeof(err)), 0);
	assert_int_equal(c->exports[1].size, 0);
	assert_false(c->exports[1].nowait);
	static const struct {
		const char *spec, *says;
	} bad[] = {
		{ "d1=/tmp/y", "given twice" },
		{ "noequals", "is not NAME=PATH" },
		{ "=path", "is not NAME=PATH" },
		{ "d3=", "is not NAME=PATH" },
		{ "d3=/x,size=12Q", "size: '12Q'" },
		{ "d3=/x,fast", "unknown option 'fast'" },
		{ "d3=/x,ro=1", "unknown option 'ro'" },
		{ "d3=/x,nowait=maybe", "nowait: 'maybe' is not yes or no" },
		{ "d3=/x,nowait", "unknown option 'nowait'" },
		{ "d 3=/x", "export name 'd 3'" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		if (blkd_conf_export_spec(c, bad[i].spec, err, sizeof(err)) != -1 || !strstr(err, bad[i].says))
			fail_msg("spec %zu: '%s' lacks '%s'", i, err, bad[i].says);
	}
	free(c);
}

static void cross_checks(void **state)
{
	(void)state;
	static const struct {
		const char *text, *says;
	} cases[] = {
		{ "[export d]\npath = /x\nrw = *\n", "no credentials" },
		{ "[tls]\nca=a\ncert=b\nkey=c\n", "no export" },
		{ "[tls]\nca=a\ncert=b\nkey=c\n[export d]\npath = /x\n", "no identity may use it" },
		{ "[tls]\nca=a\ncert=b\nkey=c\n[export d]\nrw = *\n", "has no path" },
		{ "[tls]\nca=a\ncert=b\nkey=c\n[export d]\npath=/x\nrw=*\nsize=6144\n", "not a multiple of its block size" },
		{ "[tls]\nca=a\ncert=b\nkey=c\n[target]\nmax_transfer=4K\nmax_inline=8K\n[export d]\npath=/x\nrw=*\n",
		  "max_inline" },
		{ "[tls]\nca=a\ncert=b\nkey=c\n[target]\nmax_transfer=6K\n[export d]\npath=/x\nrw=*\n", "max_transfer" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char err[256] = "";
		int rc;
		struct blkd_conf *c = parse(cases[i].text, &rc, err, sizeof(err));
		assert_int_equal(rc, 0);
		if (blkd_conf_check(c, err, sizeof(err)) != -1 || !strstr(err, cases[i].says))
			fail_msg("case %zu: '%s' lacks '%s'", i, err, cases[i].says);
		free(c);
	}
}

/* [trust] etcd stands in for the CA (the last good copy gives it at start); cert and key stay required. */
static void trust_etcd_keys(void **state)
{
	(void)state;
	char err[256] = "";
	int rc;
	struct blkd_conf *c = parse("[tls]\ncert=b\nkey=c\n[trust]\netcd = 10.0.0.1:2379/rdmasec/trust\n"
				    "state_dir = /tmp/s\n[export d]\npath=/x\nrw=*\n", &rc, err, sizeof(err));
	assert_int_equal(rc, 0);
	assert_string_equal(c->etcd, "10.0.0.1:2379/rdmasec/trust");
	assert_string_equal(c->state_dir, "/tmp/s");
	assert_int_equal(blkd_conf_check(c, err, sizeof(err)), 0);
	free(c);
	c = parse("[trust]\netcd = 10.0.0.1:2379/p\n[export d]\npath=/x\nrw=*\n", &rc, err, sizeof(err));
	assert_int_equal(rc, 0);
	assert_int_equal(blkd_conf_check(c, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "no credentials"));
	free(c);
	c = parse("[trust]\nwatch = yes\n", &rc, err, sizeof(err));
	assert_int_equal(rc, -1);
	assert_non_null(strstr(err, "unknown key 'watch' in [trust]"));
	free(c);
}

/* An identity librdmasec may have cut short (255 characters or more) is refused, never truncated. */
static void identity_length(void **state)
{
	(void)state;
	struct blkd_conf *c = blkd_conf_new();
	assert_non_null(c);
	char id[BLKD_ID_LEN + 8], err[256] = "";
	memset(id, 'a', sizeof(id) - 1);
	id[sizeof(id) - 1] = '\0';
	for (size_t len = BLKD_ID_MAX + 1; len < sizeof(id); len++) {
		id[len] = '\0';
		err[0] = '\0';
		assert_int_equal(blkd_conf_set(c, "export d", "rw", id, err, sizeof(err)), -1);
		assert_non_null(strstr(err, "characters long, over 254"));
		id[len] = 'a';
	}
	id[BLKD_ID_MAX] = '\0';
	assert_int_equal(blkd_conf_set(c, "export d", "ro", id, err, sizeof(err)), 0);
	assert_string_equal(c->exports[0].ro_ids[0], id);
	assert_int_equal(c->exports[0].n_rw, 0);
	free(c);
}

/* Export rules take the library's syntax: SPIFFE prefixes next to exact identities and '*'. */
static void prefix_rules(void **state)
{
	(void)state;
	struct blkd_conf *c = blkd_conf_new();
	assert_non_null(c);
	char err[256] = "";
	assert_int_equal(blkd_conf_set(c, "export d", "rw", "spiffe://prod.example/storage/*", err, sizeof(err)), 0);
	assert_int_equal(blkd_conf_set(c, "export d", "ro", "CN=db1,O=example", err, sizeof(err)), 0);
	assert_string_equal(c->exports[0].rw_ids[0], "spiffe://prod.example/storage/*");
	assert_true(rsec_authz_match(c->exports[0].rw_ids[0], "spiffe://prod.example/storage/n1"));
	assert_false(rsec_authz_match(c->exports[0].rw_ids[0], "spiffe://prod.example/compute/n1"));
	free(c);
}

/* An OPEN's share of memory_limit covers every queue it is granted, and the queue depth the grant table allows. */
static void open_budget(void **state)
{
	(void)state;
	struct blkd_conf *c = blkd_conf_new();
	assert_non_null(c);
	c->queue_depth = 64;
	c->queues = 4;
	c->memory_limit = 10u << 20;
	c->memory_per_identity = 10u << 20; /* one identity may take it all: memory_limit decides here */
	const size_t slot = 64u << 10;
	struct blkd_open_budget b;
	struct blkd_reserved held = { 0, 0 };
	/* Asked for 256: granted the 64 a connection's grants allow; 4 queues of 4 MiB do not fit in 10 MiB. */
	assert_true(blkd_open_budget(c, 256, 8, slot, &held, &b));
	assert_int_equal(b.queue_depth, 64);
	assert_int_equal(b.queues, 2);
	assert_true(b.bytes == (UINT64_C(8) << 20));
	assert_false(b.identity_bound);
	/* With those 8 MiB reserved (another identity's), a second session asking for the same gets nothing. */
	held.all = b.bytes;
	assert_false(blkd_open_budget(c, 256, 8, slot, &held, &b));
	assert_false(b.identity_bound);
	/* A smaller one still fits in the 2 MiB left. */
	assert_true(blkd_open_budget(c, 16, 1, slot, &held, &b));
	assert_int_equal(b.queue_depth, 16);
	assert_int_equal(b.queues, 1);
	assert_true(b.bytes == (UINT64_C(1) << 20));
	/* Reserved past the limit (a configuration lowered under it): nothing, and no wrap-around. */
	held.all = UINT64_C(11) << 20;
	assert_false(blkd_open_budget(c, 1, 1, slot, &held, &b));
	free(c);
}

/* One identity's sessions together stay within memory_per_identity (by default half of memory_limit),
 * while memory_limit still has room for another identity. */
static void open_budget_identity(void **state)
{
	(void)state;
	struct blkd_conf *c = blkd_conf_new();
	assert_non_null(c);
	c->queue_depth = 16;
	c->queues = 4;
	c->memory_limit = 16u << 20;
	assert_true(blkd_identity_memory(c) == (UINT64_C(8) << 20));
	const size_t slot = 128u << 10; /* 2 MiB a queue */
	struct blkd_open_budget b;
	/* Alone: 4 queues asked, the 8 MiB share holds 4. */
	assert_true(blkd_open_budget(c, 16, 4, slot, &(struct blkd_reserved){ 0, 0 }, &b));
	assert_int_equal(b.queues, 4);
	/* Its second session, 6 MiB of its share held: one queue, cut by the share, not memory_limit. */
	assert_true(blkd_open_budget(c, 16, 4, slot, &(struct blkd_reserved){ 6u << 20, 6u << 20 }, &b));
	assert_int_equal(b.queues, 1);
	assert_true(b.identity_bound);
	/* Its share full: refused for the share, while another identity still gets its 4 queues. */
	assert_false(blkd_open_budget(c, 16, 4, slot, &(struct blkd_reserved){ 8u << 20, 8u << 20 }, &b));
	assert_true(b.identity_bound);
	assert_true(blkd_open_budget(c, 16, 4, slot, &(struct blkd_reserved){ 8u << 20, 0 }, &b));
	assert_int_equal(b.queues, 4);
	assert_false(b.identity_bound);
	/* Set explicitly, the share is the setting; sessions: half of max_sessions, rounded up, or the setting. */
	c->memory_per_identity = 2u << 20;
	assert_true(blkd_identity_memory(c) == (UINT64_C(2) << 20));
	c->max_sessions = 7;
	assert_int_equal(blkd_identity_sessions(c), 4);
	c->max_sessions = 1;
	assert_int_equal(blkd_identity_sessions(c), 1);
	c->max_sessions_per_identity = 3;
	assert_int_equal(blkd_identity_sessions(c), 3);
	free(c);
}

static void sizes(void **state)
{
	(void)state;
	uint64_t v = 0;
	assert_true(blkd_parse_size("4K", 0, UINT64_MAX, &v) && v == 4096);
	assert_true(blkd_parse_size("1T", 0, UINT64_MAX, &v) && v == (UINT64_C(1) << 40));
	assert_false(blkd_parse_size("", 0, UINT64_MAX, &v));
	assert_false(blkd_parse_size("-1", 0, UINT64_MAX, &v));
	assert_false(blkd_parse_size(" 1", 0, UINT64_MAX, &v));
	assert_false(blkd_parse_size("1KB", 0, UINT64_MAX, &v));
	assert_false(blkd_parse_size("99999999999999999999", 0, UINT64_MAX, &v));
	assert_false(blkd_parse_size("17179869184G", 0, UINT64_MAX, &v)); /* 2^64: wraps */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(full_file), cmocka_unit_test(defaults),     cmocka_unit_test(invalid), cmocka_unit_test(rekey_keys),
		cmocka_unit_test(long_line), cmocka_unit_test(export_spec), cmocka_unit_test(cross_checks), cmocka_unit_test(trust_etcd_keys),
		cmocka_unit_test(sizes),       cmocka_unit_test(identity_length), cmocka_unit_test(prefix_rules), cmocka_unit_test(open_budget),
		cmocka_unit_test(open_budget_identity),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
