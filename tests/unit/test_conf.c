/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "conf.h"

static const char full[] =
	"; rdmasec server\n"
	"# another comment style\n"
	"[server]\n"
	"listen = 10.77.0.1:9000\n"
	"device = rxe1\n"
	"max_clients = 65536\n"
	"max_per_identity = 1\n"
	"handshake_timeout_ms = 100   ; inline comment\n"
	"audit_log = /var/log/rdmasec/audit.log\n"
	"metrics_file = /var/lib/node_exporter/rdmasec.prom\n"
	"max_handshakes_per_source = 65536\n"
	"handshake_rate_per_source = 1000000\n"
	"\n"
	"[tls]\n"
	"ca = /etc/rdmasec/ca.pem\n"
	"cert=/etc/rdmasec/server.pem\n"
	"key : /etc/rdmasec/server.key\n"
	"[limits]\r\n"
	"max_msg = 1073741823\r\n"
	"recv_slots = 4096\n"
	"slot_size = 4096";

/* The [server] section's listener and its client limits, as both the defaults and the full file set them. */
static void assert_server(const struct rsec_conf *c, const char *addr, uint16_t port, const char *device,
			  uint32_t max_clients, uint32_t max_per_identity, uint32_t handshake_timeout_ms)
{
	assert_string_equal(c->listen_addr, addr);
	assert_int_equal(c->listen_port, port);
	assert_string_equal(c->device, device);
	assert_int_equal(c->max_clients, max_clients);
	assert_int_equal(c->max_per_identity, max_per_identity);
	assert_int_equal(c->handshake_timeout_ms, handshake_timeout_ms);
}

/* The [limits] section: message size and the receive ring. */
static void assert_limits(const struct rsec_conf *c, uint32_t max_msg, uint32_t recv_slots, uint32_t slot_size)
{
	assert_int_equal(c->max_msg, max_msg);
	assert_int_equal(c->recv_slots, recv_slots);
	assert_int_equal(c->slot_size, slot_size);
}

static void defaults(void **state)
{
	(void)state;
	struct rsec_conf c;
	rsec_conf_defaults(&c);
	assert_server(&c, "0.0.0.0", 7471, "", 1024, 16, 5000);
	assert_int_equal(c.qp_pool, 32); /* RSEC_QPOOL_DEFAULT */
	assert_string_equal(c.audit_log, "");
	assert_string_equal(c.metrics_file, "");
	assert_string_equal(c.ca, "");
	assert_string_equal(c.psk_file, "");
	assert_limits(&c, 16777216, 64, 65536);
	assert_string_equal(c.grant_mode, "auto");
	assert_int_equal(c.grant_ttl_ms, 30000);
	assert_int_equal(c.max_handshakes_per_source, 256);
	assert_int_equal(c.handshake_rate_per_source, 200);
	assert_int_equal(c.verify_timeout_ms, 5000);
	/* An empty file changes nothing. */
	struct rsec_conf d = c;
	char err[256];
	assert_int_equal(rsec_conf_parse_string(&d, "", err, sizeof(err)), 0);
	assert_int_equal(rsec_conf_parse_string(&d, "\n; only a comment\n\n", err, sizeof(err)), 0);
	assert_memory_equal(&c, &d, sizeof(c));
}

static void full_valid_file(void **state)
{
	(void)state;
	struct rsec_conf c;
	char err[256] = "";
	rsec_conf_defaults(&c);
	assert_int_equal(rsec_conf_parse_string(&c, full, err, sizeof(err)), 0);
	assert_string_equal(err, "");
	assert_server(&c, "10.77.0.1", 9000, "rxe1", 65536, 1, 100);
	assert_string_equal(c.audit_log, "/var/log/rdmasec/audit.log");
	assert_string_equal(c.metrics_file, "/var/lib/node_exporter/rdmasec.prom");
	assert_int_equal(c.max_handshakes_per_source, 65536);
	assert_int_equal(c.handshake_rate_per_source, 1000000);
	assert_string_equal(c.ca, "/etc/rdmasec/ca.pem");
	assert_string_equal(c.cert, "/etc/rdmasec/server.pem");
	assert_string_equal(c.key, "/etc/rdmasec/server.key");
	assert_limits(&c, 1073741823, 4096, 4096);
	assert_int_equal(rsec_conf_check(&c, err, sizeof(err)), 0);

	/* IPv6 listen address. */
	assert_int_equal(rsec_conf_parse_string(&c, "[server]\nlisten = [::1]:1\n", err, sizeof(err)), 0);
	assert_string_equal(c.listen_addr, "::1");
	assert_int_equal(c.listen_port, 1);
	assert_int_equal(rsec_conf_parse_string(&c, "[server]\nlisten=[fe80::1:2]:65535", err, sizeof(err)), 0);
	assert_string_equal(c.listen_addr, "fe80::1:2");
	assert_int_equal(c.listen_port, 65535);
	/* QP pool: its bounds, 1 being "off". */
	assert_int_equal(rsec_conf_parse_string(&c, "[server]\nqp_pool = 1\n", err, sizeof(err)), 0);
	assert_int_equal(c.qp_pool, 1);
	assert_int_equal(rsec_conf_parse_string(&c, "[server]\nqp_pool = 1024\n", err, sizeof(err)), 0);
	assert_int_equal(c.qp_pool, 1024);
	/* TLS resumption: 600 s unless set, 0 turns it off, a day at most. */
	assert_int_equal(c.resume_s, 600);
	assert_int_equal(rsec_conf_parse_string(&c, "[tls]\nresume_s = 0\n", err, sizeof(err)), 0);
	assert_int_equal(c.resume_s, 0);
	assert_int_equal(rsec_conf_parse_string(&c, "[tls]\nresume_s = 86400\n", err, sizeof(err)), 0);
	assert_int_equal(c.resume_s, 86400);
	assert_int_equal(rsec_conf_parse_string(&c, "[tls]\nresume_s = 86401\n", err, sizeof(err)), RSEC_E_CONFIG);
	assert_non_null(strstr(err, "resume_s"));
	assert_int_equal(c.resume_s, 86400);
	/* Rekeying: the library's defaults unless set; its maxima. */
	assert_int_equal(c.rekey_s, RSEC_DEFAULT_REKEY_S);
	assert_true(c.rekey_bytes == RSEC_DEFAULT_REKEY_BYTES);
	assert_int_equal(rsec_conf_parse_string(&c, "[tls]\nrekey_s = 604800\nrekey_bytes = 137438953472\n", err,
						sizeof(err)), 0);
	assert_int_equal(c.rekey_s, 604800);
	assert_true(c.rekey_bytes == RSEC_MAX_REKEY_BYTES);
	assert_int_equal(rsec_conf_parse_string(&c, "[tls]\nrekey_s = 1\nrekey_bytes = 1\n", err, sizeof(err)), 0);
	assert_int_equal(c.rekey_s, 1);
	assert_true(c.rekey_bytes == 1);
	/* Each grant mode, and the grant lifetime. */
	static const char *const modes[] = { "mr", "mw", "auto" };
	for (size_t i = 0; i < 3; i++) {
		char text[64];
		snprintf(text, sizeof(text), "[grants]\ngrant_mode = %s\ngrant_ttl_ms = 100\n", modes[i]);
		assert_int_equal(rsec_conf_parse_string(&c, text, err, sizeof(err)), 0);
		assert_string_equal(c.grant_mode, modes[i]);
		assert_int_equal(c.grant_ttl_ms, 100);
	}
	/* The lower bounds of the pre-authentication limits, and the VERIFY wait's range. */
	assert_int_equal(rsec_conf_parse_string(&c, "[server]\nmax_handshakes_per_source = 1\n"
						"handshake_rate_per_source = 1\n[grants]\nverify_timeout_ms = 100\n",
						err, sizeof(err)), 0);
	assert_int_equal(c.max_handshakes_per_source, 1);
	assert_int_equal(c.handshake_rate_per_source, 1);
	assert_int_equal(c.verify_timeout_ms, 100);
	assert_int_equal(rsec_conf_parse_string(&c, "[grants]\nverify_timeout_ms = 600000\n", err, sizeof(err)), 0);
	assert_int_equal(c.verify_timeout_ms, 600000);
}

struct bad_case {
	const char *text;
	const char *err;  /* the exact message */
};

/* A u32 key of section at offset off: def by default, 0 and max taken, max + 1 refused by name. */
static void zero_to_max(const char *section, const char *key, size_t off, uint32_t def, uint32_t max)
{
	struct rsec_conf c;
	char err[256], text[128], want[128];
	rsec_conf_defaults(&c);
	const uint32_t *v = (const uint32_t *)((const char *)&c + off);
	assert_int_equal(*v, def);
	const uint32_t ok[] = { 0, max };
	for (size_t i = 0; i < 2; i++) {
		snprintf(text, sizeof(text), "[%s]\n%s = %u\n", section, key, ok[i]);
		assert_int_equal(rsec_conf_parse_string(&c, text, err, sizeof(err)), 0);
		assert_int_equal(*v, ok[i]);
	}
	snprintf(text, sizeof(text), "[%s]\n%s = %u\n", section, key, max + 1);
	assert_int_equal(rsec_conf_parse_string(&c, text, err, sizeof(err)), RSEC_E_CONFIG);
	snprintf(want, sizeof(want), "%s: '%u' is not in 0..%u", key, max + 1, max);
	assert_non_null(strstr(err, want));
	assert_int_equal(*v, max);
}

/* Self-healing: how long a lost client's session waits (10 s by default, up to 10 min), how often a data
 * path may be rebuilt (6 a minute by default, up to 60); 0 turns either off. */
static void healing_limits(void **state)
{
	(void)state;
	zero_to_max("server", "resume_grace_ms", offsetof(struct rsec_conf, resume_grace_ms), 10000, 600000);
	zero_to_max("limits", "rebuilds_per_min", offsetof(struct rsec_conf, rebuilds_per_min), 6, 60);
}

static void each_invalid_case(void **state)
{
	(void)state;
	static const struct bad_case cases[] = {
		{ "[server]\nmax_clients = 0\n", "line 2: max_clients: '0' is not in 1..65536" },
		{ "[server]\nmax_clients = 65537\n", "line 2: max_clients: '65537' is not in 1..65536" },
		{ "[server]\nmax_clients = -1\n", "line 2: max_clients: '-1' is not in 1..65536" },
		{ "[server]\nmax_clients = +5\n", "line 2: max_clients: '+5' is not in 1..65536" },
		{ "[server]\nmax_clients = 0x10\n", "line 2: max_clients: '0x10' is not in 1..65536" },
		{ "[server]\nmax_clients = 12abc\n", "line 2: max_clients: '12abc' is not in 1..65536" },
		{ "[server]\nmax_clients =\n", "line 2: max_clients: '' is not in 1..65536" },
		{ "[server]\nmax_clients = 99999999999999999999999\n",
		  "line 2: max_clients: '99999999999999999999999' is not in 1..65536" },
		{ "[server]\nmax_clients = 4294967297\n", "line 2: max_clients: '4294967297' is not in 1..65536" },
		{ "[server]\nmax_per_identity = 0\n", "line 2: max_per_identity: '0' is not in 1..65536" },
		{ "[server]\nhandshake_timeout_ms = 99\n", "line 2: handshake_timeout_ms: '99' is not in 100..600000" },
		{ "[server]\nhandshake_timeout_ms = 600001\n",
		  "line 2: handshake_timeout_ms: '600001' is not in 100..600000" },
		/* Once parsed and never enforced: refused, not silently ignored. */
		{ "[server]\nidle_timeout_ms = 0\n", "line 2: unknown key 'idle_timeout_ms' in [server]" },
		{ "[server]\nqp_pool = 0\n", "line 2: qp_pool: '0' is not in 1..1024" },
		{ "[server]\nqp_pool = 1025\n", "line 2: qp_pool: '1025' is not in 1..1024" },
		{ "[server]\nqp_pool = 32x\n", "line 2: qp_pool: '32x' is not in 1..1024" },
		{ "[tls]\nresume_s = 86401\n", "line 2: resume_s: '86401' is not 0 or in 1..86400" },
		{ "[tls]\nrekey_s = 0\n", "line 2: rekey_s: '0' is not in 1..604800" },
		{ "[tls]\nrekey_s = -5\n", "line 2: rekey_s: '-5' is not in 1..604800" },
		{ "[tls]\nrekey_s = 604801\n", "line 2: rekey_s: '604801' is not in 1..604800" },
		{ "[tls]\nrekey_s = 1h\n", "line 2: rekey_s: '1h' is not in 1..604800" },
		{ "[tls]\nrekey_bytes = 0\n", "line 2: rekey_bytes: '0' is not in 1..137438953472" },
		{ "[tls]\nrekey_bytes = 137438953473\n", "line 2: rekey_bytes: '137438953473' is not in 1..137438953472" },
		{ "[tls]\nrekey_bytes = 18446744073709551616\n",
		  "line 2: rekey_bytes: '18446744073709551616' is not in 1..137438953472" },
		{ "[tls]\nrekey_bytes = 64k\n", "line 2: rekey_bytes: '64k' is not in 1..137438953472" },
		{ "[limits]\nmax_msg = 0\n", "line 2: max_msg: '0' is not in 1..1073741823" },
		{ "[limits]\nmax_msg = 1073741824\n", "line 2: max_msg: '1073741824' is not in 1..1073741823" },
		{ "[limits]\nrecv_slots = 4097\n", "line 2: recv_slots: '4097' is not in 4..4096" },
		{ "[limits]\nrecv_slots = 3\n", "line 2: recv_slots: '3' is not in 4..4096" },
		{ "[limits]\nslot_size = 4095\n", "line 2: slot_size: '4095' is not in 4096..1048576" },
		{ "[grants]\ngrant_mode = windows\n", "line 2: grant_mode: 'windows' is not one of auto|mw|mr" },
		{ "[grants]\ngrant_mode = m\n", "line 2: grant_mode: 'm' is not one of auto|mw|mr" },
		{ "[grants]\ngrant_mode = mrx\n", "line 2: grant_mode: 'mrx' is not one of auto|mw|mr" },
		{ "[grants]\ngrant_mode = autoxxxx\n",
		  "line 2: grant_mode: 'autoxxxx' is too long (8 bytes, max 7)" },
		{ "[grants]\ngrant_ttl_ms = 99\n", "line 2: grant_ttl_ms: '99' is not in 100..3600000" },
		{ "[server]\nmax_handshakes_per_source = 0\n",
		  "line 2: max_handshakes_per_source: '0' is not in 1..65536" },
		{ "[server]\nmax_handshakes_per_source = 65537\n",
		  "line 2: max_handshakes_per_source: '65537' is not in 1..65536" },
		{ "[server]\nhandshake_rate_per_source = 0\n",
		  "line 2: handshake_rate_per_source: '0' is not in 1..1000000" },
		{ "[server]\nhandshake_rate_per_source = 1000001\n",
		  "line 2: handshake_rate_per_source: '1000001' is not in 1..1000000" },
		{ "[server]\nhandshake_rate_per_source = 10/s\n",
		  "line 2: handshake_rate_per_source: '10/s' is not in 1..1000000" },
		{ "[grants]\nverify_timeout_ms = 99\n", "line 2: verify_timeout_ms: '99' is not in 100..600000" },
		{ "[grants]\nverify_timeout_ms = 600001\n",
		  "line 2: verify_timeout_ms: '600001' is not in 100..600000" },
		{ "[server]\nverify_timeout_ms = 5000\n", "line 2: unknown key 'verify_timeout_ms' in [server]" },
		{ "[limits]\nslot_size = 1048577\n", "line 2: slot_size: '1048577' is not in 4096..1048576" },
		{ "\n\n[server]\n\n\n\nmax_clients = 0\n", "line 7: max_clients: '0' is not in 1..65536" },
		{ "[sever]\nlisten = 1.2.3.4:5\n", "line 2: unknown section '[sever]'" },
		{ "max_clients = 5\n", "line 1: unknown section '[]'" },
		{ "[server]\nmax_client = 5\n", "line 2: unknown key 'max_client' in [server]" },
		{ "[tls]\nmax_clients = 5\n", "line 2: unknown key 'max_clients' in [tls]" },
		{ "[server]\nMAX_CLIENTS = 5\n", "line 2: unknown key 'MAX_CLIENTS' in [server]" },
		{ "[server]\nmax_clients = 5\nmax_clients = 6\n", "line 3: duplicate key 'max_clients' in [server]" },
		{ "[server]\nmax_clients = 5\n  6\n", "line 3: duplicate key 'max_clients' in [server]" },
		{ "[server]\nlisten = 1.2.3.4\n", "line 2: listen: '1.2.3.4' is not ADDR:PORT "
						   "(a.b.c.d:PORT or [IPv6]:PORT, PORT 1..65535)" },
		{ "[server]\nlisten = 1.2.3.4:0\n", "line 2: listen: '1.2.3.4:0' is not ADDR:PORT "
						     "(a.b.c.d:PORT or [IPv6]:PORT, PORT 1..65535)" },
		{ "[server]\nlisten = 1.2.3.4:65536\n", "line 2: listen: '1.2.3.4:65536' is not ADDR:PORT "
							 "(a.b.c.d:PORT or [IPv6]:PORT, PORT 1..65535)" },
		{ "[server]\nlisten = 1.2.3:80\n", "line 2: listen: '1.2.3:80' is not ADDR:PORT "
						    "(a.b.c.d:PORT or [IPv6]:PORT, PORT 1..65535)" },
		{ "[server]\nlisten = host.example:80\n", "line 2: listen: 'host.example:80' is not ADDR:PORT "
							   "(a.b.c.d:PORT or [IPv6]:PORT, PORT 1..65535)" },
		{ "[server]\nlisten = ::1:80\n", "line 2: listen: '::1:80' is not ADDR:PORT "
						  "(a.b.c.d:PORT or [IPv6]:PORT, PORT 1..65535)" },
		{ "[server]\nlisten = [::1]80\n", "line 2: listen: '[::1]80' is not ADDR:PORT "
						   "(a.b.c.d:PORT or [IPv6]:PORT, PORT 1..65535)" },
		{ "[server]\nlisten = [1.2.3.4]:80\n", "line 2: listen: '[1.2.3.4]:80' is not ADDR:PORT "
							"(a.b.c.d:PORT or [IPv6]:PORT, PORT 1..65535)" },
		{ "[server]\nlisten = :80\n", "line 2: listen: ':80' is not ADDR:PORT "
					       "(a.b.c.d:PORT or [IPv6]:PORT, PORT 1..65535)" },
		{ "[server]\nlisten = 1.2.3.4: 80\n", "line 2: listen: '1.2.3.4: 80' is not ADDR:PORT "
						       "(a.b.c.d:PORT or [IPv6]:PORT, PORT 1..65535)" },
		{ "[server]\ndevice = rxe0-with-a-name-that-is-far-too-long-for-the-sixty-four-byte-field\n",
		  "line 2: device: 'rxe0-with-a-name-that-is-far-too-long-for-the-sixty-four-byte-fi...' is too long "
		  "(67 bytes, max 63)" },
		{ "[tls]\npsk_identity = \x01x\n", "line 2: psk_identity: '?x' contains a control character" },
		{ "[server\nmax_clients = 5\n", "line 1: expected '[section]' or 'key = value', got '[server'" },
		{ "[server]\njust a word\n", "line 2: expected '[section]' or 'key = value', got 'just a word'" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rsec_conf c, before;
		char err[256] = "";
		rsec_conf_defaults(&c);
		before = c;
		int rc = rsec_conf_parse_string(&c, cases[i].text, err, sizeof(err));
		if (rc != RSEC_E_CONFIG || strcmp(err, cases[i].err) != 0)
			fail_msg("case %zu: rc %d, err \"%s\", want \"%s\"", i, rc, err, cases[i].err);
		/* A failed parse leaves the configuration untouched. */
		assert_memory_equal(&c, &before, sizeof(c));
	}
}

static void first_error_wins(void **state)
{
	(void)state;
	struct rsec_conf c;
	char err[256];
	rsec_conf_defaults(&c);
	assert_int_equal(rsec_conf_parse_string(&c, "[server]\nmax_clients = 5\nbogus\nmax_clients = 0\n", err,
						sizeof(err)), RSEC_E_CONFIG);
	assert_string_equal(err, "line 3: expected '[section]' or 'key = value', got 'bogus'");
	assert_int_equal(rsec_conf_parse_string(&c, "[server]\nmax_clients = 0\nbogus\n", err, sizeof(err)),
			 RSEC_E_CONFIG);
	assert_string_equal(err, "line 2: max_clients: '0' is not in 1..65536");
	assert_int_equal(c.max_clients, 1024); /* the valid line 2 above was not committed either */
	/* Small and absent error buffers are fine. */
	char tiny[8];
	assert_int_equal(rsec_conf_parse_string(&c, "[x]\na=1\n", tiny, sizeof(tiny)), RSEC_E_CONFIG);
	assert_string_equal(tiny, "line 2:");
	assert_int_equal(rsec_conf_parse_string(&c, "[x]\na=1\n", NULL, 0), RSEC_E_CONFIG);
}

static void long_lines_are_refused_not_cut(void **state)
{
	(void)state;
	struct rsec_conf c;
	char err[256], text[1024], path[300];
	rsec_conf_defaults(&c);
	/* The longest line inih takes whole. */
	memset(path, 'p', sizeof(path));
	size_t prefix = strlen("cert = /");
	path[RSEC_CONF_MAX_LINE - prefix] = '\0';
	snprintf(text, sizeof(text), "[tls]\ncert = /%s\nkey = /k\n", path);
	assert_int_equal(rsec_conf_parse_string(&c, text, err, sizeof(err)), 0);
	assert_int_equal(strlen(c.cert), RSEC_CONF_MAX_LINE - strlen("cert = "));
	/* One more byte: an error rather than a silently truncated path. */
	rsec_conf_defaults(&c);
	snprintf(text, sizeof(text), "[tls]\ncert = /%sp\nkey = /k\n", path);
	assert_int_equal(rsec_conf_parse_string(&c, text, err, sizeof(err)), RSEC_E_CONFIG);
	snprintf(path, sizeof(path), "line 2: line too long (max %d characters)", RSEC_CONF_MAX_LINE);
	assert_string_equal(err, path);
	assert_string_equal(c.cert, "");
	/* A long last line without a newline. */
	memset(text, 'x', 600);
	memcpy(text, "[tls]\nca = /", 12);
	text[600] = '\0';
	assert_int_equal(rsec_conf_parse_string(&c, text, err, sizeof(err)), RSEC_E_CONFIG);
	assert_string_equal(err, path);
}

static void override_with_set(void **state)
{
	(void)state;
	struct rsec_conf c;
	char err[256];
	rsec_conf_defaults(&c);
	assert_int_equal(rsec_conf_parse_string(&c, full, err, sizeof(err)), 0);
	assert_int_equal(rsec_conf_set(&c, "server", "max_clients", "7", err, sizeof(err)), 0);
	assert_int_equal(c.max_clients, 7);
	assert_int_equal(rsec_conf_set(&c, "server", "listen", "[2001:db8::5]:443", err, sizeof(err)), 0);
	assert_string_equal(c.listen_addr, "2001:db8::5");
	assert_int_equal(c.listen_port, 443);
	assert_int_equal(rsec_conf_set(&c, "server", "device", "", err, sizeof(err)), 0);
	assert_string_equal(c.device, "");
	assert_int_equal(rsec_conf_set(&c, "server", "max_handshakes_per_source", "3", err, sizeof(err)), 0);
	assert_int_equal(c.max_handshakes_per_source, 3);
	assert_int_equal(rsec_conf_set(&c, "server", "handshake_rate_per_source", "250", err, sizeof(err)), 0);
	assert_int_equal(c.handshake_rate_per_source, 250);
	assert_int_equal(rsec_conf_set(&c, "grants", "verify_timeout_ms", "12000", err, sizeof(err)), 0);
	assert_int_equal(c.verify_timeout_ms, 12000);
	/* Paths longer than a file line can be set here, up to the field. */
	char longpath[4096];
	memset(longpath, 'a', sizeof(longpath));
	longpath[0] = '/';
	longpath[4095] = '\0';
	assert_int_equal(rsec_conf_set(&c, "tls", "cert", longpath, err, sizeof(err)), 0);
	assert_int_equal(strlen(c.cert), 4095);
	longpath[4095] = 'a';
	char *toolong = malloc(4097);
	assert_non_null(toolong);
	memcpy(toolong, longpath, 4096);
	toolong[4096] = '\0';
	struct rsec_conf before = c;
	assert_int_equal(rsec_conf_set(&c, "tls", "cert", toolong, err, sizeof(err)), RSEC_E_CONFIG);
	assert_non_null(strstr(err, "is too long (4096 bytes, max 4095)"));
	assert_int_equal(strncmp(err, "cert: '/aaa", 11), 0);
	free(toolong);
	assert_int_equal(rsec_conf_set(&c, "server", "max_clients", "0", err, sizeof(err)), RSEC_E_CONFIG);
	assert_string_equal(err, "max_clients: '0' is not in 1..65536");
	assert_int_equal(rsec_conf_set(&c, "limits", "nope", "1", err, sizeof(err)), RSEC_E_CONFIG);
	assert_string_equal(err, "unknown key 'nope' in [limits]");
	assert_int_equal(rsec_conf_set(&c, "foo", "nope", "1", err, sizeof(err)), RSEC_E_CONFIG);
	assert_string_equal(err, "unknown section '[foo]'");
	assert_memory_equal(&c, &before, sizeof(c));
	assert_int_equal(rsec_conf_set(NULL, "server", "listen", "1.2.3.4:5", err, sizeof(err)), RSEC_E_INVAL);
	assert_int_equal(rsec_conf_set(&c, "server", "listen", NULL, err, sizeof(err)), RSEC_E_INVAL);
}

static void cross_checks(void **state)
{
	(void)state;
	struct rsec_conf c;
	char err[256];
	rsec_conf_defaults(&c);
	assert_int_equal(rsec_conf_check(&c, err, sizeof(err)), RSEC_E_CONFIG);
	assert_string_equal(err, "[tls]: no credentials: set ca, cert and key (or psk_file and psk_identity)");
	assert_int_equal(rsec_conf_parse_string(&c, "[tls]\nca=/a\ncert=/b\n", err, sizeof(err)), 0);
	assert_int_equal(rsec_conf_check(&c, err, sizeof(err)), RSEC_E_CONFIG);
	assert_string_equal(err, "[tls]: certificate mode needs ca, cert and key; 'key' is missing");
	assert_int_equal(rsec_conf_set(&c, "tls", "key", "/c", err, sizeof(err)), 0);
	assert_int_equal(rsec_conf_check(&c, err, sizeof(err)), 0);
	assert_int_equal(rsec_conf_set(&c, "tls", "psk_identity", "me", err, sizeof(err)), 0);
	assert_int_equal(rsec_conf_check(&c, err, sizeof(err)), RSEC_E_CONFIG);
	assert_string_equal(err, "[tls]: set either ca, cert and key, or psk_file and psk_identity, not both");
	rsec_conf_defaults(&c);
	assert_int_equal(rsec_conf_parse_string(&c, "[tls]\npsk_identity = me\n", err, sizeof(err)), 0);
	assert_int_equal(rsec_conf_check(&c, err, sizeof(err)), RSEC_E_CONFIG);
	assert_string_equal(err, "[tls]: PSK mode needs psk_file and psk_identity; 'psk_file' is missing");
	assert_int_equal(rsec_conf_set(&c, "tls", "psk_file", "/p", err, sizeof(err)), 0);
	assert_int_equal(rsec_conf_check(&c, err, sizeof(err)), 0);
}

static void files(void **state)
{
	(void)state;
	char dir[] = "/tmp/rsec-conf-XXXXXX", path[256], err[256];
	assert_non_null(mkdtemp(dir));
	struct rsec_conf c;
	rsec_conf_defaults(&c);

	snprintf(path, sizeof(path), "%s/server.conf", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fputs(full, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(rsec_conf_parse_file(&c, path, err, sizeof(err)), 0);
	assert_int_equal(c.listen_port, 9000);
	snprintf(path, sizeof(path), "%s/missing.conf", dir);
	assert_int_equal(rsec_conf_parse_file(&c, path, err, sizeof(err)), RSEC_E_IO);
	assert_non_null(strstr(err, "No such file"));
	/* NUL bytes in a file would hide the rest of a line from inih. */
	snprintf(path, sizeof(path), "%s/nul.conf", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite("[server]\nmax_clients = 5\0 junk\n", 1, 31, f), 31);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(rsec_conf_parse_file(&c, path, err, sizeof(err)), RSEC_E_CONFIG);
	assert_non_null(strstr(err, "contains a NUL byte"));

	unlink(path);
	snprintf(path, sizeof(path), "%s/server.conf", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/nul.conf", dir);
	unlink(path);
	assert_int_equal(rmdir(dir), 0);
}

/* [authz] allow: a repeatable key (and --allow through rsec_conf_set) adding one rule each, checked and bounded. */
static void allow_rules(void **state)
{
	(void)state;
	struct rsec_conf c;
	char err[256] = "";
	rsec_conf_defaults(&c);
	assert_int_equal(c.n_allow, 0);
	assert_int_equal(rsec_conf_parse_string(&c,
						"[authz]\nallow = spiffe://prod.example/storage/*\n"
						"allow = CN=admin,O=example\n",
						err, sizeof(err)), 0);
	assert_int_equal(c.n_allow, 2);
	assert_string_equal(c.allow[0], "spiffe://prod.example/storage/*");
	assert_string_equal(c.allow[1], "CN=admin,O=example");
	assert_int_equal(rsec_conf_set(&c, "authz", "allow", "*", err, sizeof(err)), 0);
	assert_int_equal(c.n_allow, 3);

	/* A bad rule names its line and what is wrong, and leaves the configuration as it was. */
	struct rsec_conf before = c;
	assert_int_equal(rsec_conf_parse_string(&c, "[authz]\nallow = CN=a\nallow = spiffe://prod.example/stor*\n", err,
						sizeof(err)), RSEC_E_CONFIG);
	assert_non_null(strstr(err, "line 3: allow: authorization rule 'spiffe://prod.example/stor*'"));
	assert_memory_equal(&c, &before, sizeof(c));
	assert_int_equal(rsec_conf_set(&c, "authz", "allow", "", err, sizeof(err)), RSEC_E_CONFIG);
	assert_non_null(strstr(err, "is empty"));
	assert_memory_equal(&c, &before, sizeof(c));
	assert_int_equal(rsec_conf_set(&c, "authz", "deny", "x", err, sizeof(err)), RSEC_E_CONFIG);
	assert_non_null(strstr(err, "unknown key 'deny' in [authz]"));

	/* At most RSEC_AUTHZ_RULES_MAX. */
	rsec_conf_defaults(&c);
	for (unsigned i = 0; i < RSEC_AUTHZ_RULES_MAX; i++)
		assert_int_equal(rsec_conf_set(&c, "authz", "allow", "CN=x", err, sizeof(err)), 0);
	assert_int_equal(rsec_conf_set(&c, "authz", "allow", "CN=x", err, sizeof(err)), RSEC_E_CONFIG);
	assert_non_null(strstr(err, "allow: at most 64 rules"));
	assert_int_equal(c.n_allow, RSEC_AUTHZ_RULES_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(defaults),
		cmocka_unit_test(full_valid_file),
		cmocka_unit_test(healing_limits),
		cmocka_unit_test(each_invalid_case),
		cmocka_unit_test(first_error_wins),
		cmocka_unit_test(long_lines_are_refused_not_cut),
		cmocka_unit_test(override_with_set),
		cmocka_unit_test(cross_checks),
		cmocka_unit_test(files),
		cmocka_unit_test(allow_rules),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
