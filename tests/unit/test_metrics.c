/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include <regex.h>

#include "metrics.h"

static const struct peer_counters one_conn = { .connections = 1 };
static const struct peer_counters one_refusal = { .refused_handshakes = 1 };

/* The exposition of m as a NUL-terminated string (caller frees). */
static char *render(const struct metrics *m, const struct server_counters *n, size_t clients)
{
	/* A temporary file, not open_memstream: GCC 12 at -O2 takes the memstream's buffer for render's local. */
	FILE *f = tmpfile();
	assert_non_null(f);
	assert_int_equal(metrics_render(m, n, clients, f), 0);
	long len = ftell(f);
	assert_true(len >= 0);
	char *text = calloc(1, (size_t)len + 1);
	assert_non_null(text);
	rewind(f);
	assert_int_equal(fread(text, 1, (size_t)len, f), (size_t)len);
	assert_int_equal(fclose(f), 0);
	return text;
}

/* Every line is a comment or "name{labels} value", and every family has HELP and TYPE before its samples. */
static void assert_parses(const char *text)
{
	regex_t sample, header;
	const char *sample_re = "^[a-zA-Z_:][a-zA-Z0-9_:]*(\\{.*\\})? [0-9.eE+-]+$";
	assert_int_equal(regcomp(&sample, sample_re, REG_EXTENDED | REG_NOSUB), 0);
	assert_int_equal(regcomp(&header, "^# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* .+$", REG_EXTENDED | REG_NOSUB), 0);
	char *copy = strdup(text), *save = NULL;
	assert_non_null(copy);
	assert_true(text[0] && text[strlen(text) - 1] == '\n');
	char family[128] = "";
	for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#') {
			assert_int_equal(regexec(&header, line, 0, NULL, 0), 0);
			if (strncmp(line, "# TYPE ", 7) == 0)
				snprintf(family, sizeof(family), "%.*s", (int)strcspn(line + 7, " "), line + 7);
			continue;
		}
		if (regexec(&sample, line, 0, NULL, 0) != 0)
			fail_msg("not a sample line: '%s'", line);
		size_t n = strcspn(line, "{ ");
		assert_int_equal(n, strlen(family));
		assert_memory_equal(line, family, n);
	}
	free(copy);
	regfree(&sample);
	regfree(&header);
}

/* m rendered with no server-wide counts parses and holds every line of want (NULL-terminated). */
static void assert_renders(const struct metrics *m, const char *const want[])
{
	struct server_counters n = { 0 };
	char *text = render(m, &n, 0);
	assert_parses(text);
	for (size_t i = 0; want[i]; i++)
		if (!strstr(text, want[i]))
			fail_msg("no '%s' in:\n%s", want[i], text);
	free(text);
}

static void counts_per_peer(void **state)
{
	(void)state;
	struct metrics *m = metrics_new(16);
	assert_non_null(m);
	struct peer_counters d = { .connections = 1, .mac_failures = 2, .seq_violations = 3, .qp_errors = 4,
				   .protocol_violations = 5 };
	metrics_add(m, "CN=a", &d);
	metrics_add(m, "CN=a", &one_refusal);
	metrics_add(m, "CN=b", &one_conn);
	struct peer_counters got;
	assert_string_equal(metrics_lookup(m, "CN=a", &got), "CN=a");
	assert_int_equal(got.connections, 1);
	assert_int_equal(got.mac_failures, 2);
	assert_int_equal(got.seq_violations, 3);
	assert_int_equal(got.qp_errors, 4);
	assert_int_equal(got.protocol_violations, 5);
	assert_int_equal(got.refused_handshakes, 1);
	/* A session whose only trouble was forgeries that did not parse, healed: still counted. */
	metrics_add(m, "CN=forged", &(struct peer_counters){ .malformed = 7, .rebuilds = 6, .resumes = 1 });
	assert_string_equal(metrics_lookup(m, "CN=forged", &got), "CN=forged");
	assert_int_equal(got.malformed, 7);
	assert_int_equal(got.rebuilds, 6);
	assert_int_equal(got.resumes, 1);
	assert_string_equal(metrics_lookup(m, "CN=b", &got), "CN=b");
	assert_int_equal(got.connections, 1);
	assert_int_equal(got.mac_failures, 0);
	/* Unknown while there is room: zero, under its own name. */
	assert_string_equal(metrics_lookup(m, "CN=c", &got), "CN=c");
	assert_int_equal(got.connections + got.refused_handshakes, 0);
	assert_int_equal(metrics_peers(m), 3);
	/* Zero updates change nothing and take no slot. */
	uint64_t gen = metrics_generation(m);
	metrics_add(m, "CN=zero", &(struct peer_counters){ 0 });
	assert_int_equal(metrics_peers(m), 3);
	assert_int_equal(metrics_generation(m), gen);
	metrics_free(m);
}

static void full_table_folds_into_other(void **state)
{
	(void)state;
	struct metrics *m = metrics_new(3);
	assert_non_null(m);
	char key[32];
	for (int i = 0; i < 1000; i++) {
		snprintf(key, sizeof(key), "addr:10.0.%d.%d", i / 256, i % 256);
		metrics_add(m, key, &one_refusal);
	}
	/* Addresses (unauthenticated peers) take at most half the table: two of three. */
	assert_int_equal(metrics_peers(m), 2);
	assert_int_equal(metrics_folded(m), 998);
	struct peer_counters got;
	/* Known peers keep counting on their own; new addresses land in "other". */
	metrics_add(m, "addr:10.0.0.1", &one_refusal);
	assert_string_equal(metrics_lookup(m, "addr:10.0.0.1", &got), "addr:10.0.0.1");
	assert_int_equal(got.refused_handshakes, 2);
	/* An identity still gets the place the addresses could not take. */
	metrics_add(m, "CN=late", &one_conn);
	assert_string_equal(metrics_lookup(m, "CN=late", &got), "CN=late");
	assert_int_equal(got.connections, 1);
	assert_string_equal(metrics_lookup(m, "CN=later", &got), METRICS_OTHER);
	assert_int_equal(got.refused_handshakes, 998);

	assert_renders(m, (const char *const[]){ "rdmasec_server_refused_handshakes_total{peer=\"other\"} 998\n",
						 "rdmasec_server_metrics_folded_total 998\n",
						 "rdmasec_server_metrics_peers 3\n",
						 "rdmasec_server_metrics_peers_max 3\n", NULL });
	metrics_free(m);
	assert_null(metrics_new(0));
}

static void long_keys_are_cut(void **state)
{
	(void)state;
	struct metrics *m = metrics_new(4);
	assert_non_null(m);
	char big[1000];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	metrics_add(m, big, &one_conn);
	big[METRICS_KEY_MAX + 10] = '\0'; /* same first 255 bytes: the same peer */
	metrics_add(m, big, &one_conn);
	struct peer_counters got;
	const char *key = metrics_lookup(m, big, &got);
	assert_int_equal(strlen(key), METRICS_KEY_MAX - 1);
	assert_int_equal(got.connections, 2);
	assert_int_equal(metrics_peers(m), 1);
	metrics_free(m);
}

static void renders_prometheus_text(void **state)
{
	(void)state;
	struct metrics *m = metrics_new(8);
	assert_non_null(m);
	metrics_add(m, "CN=client1,O=rdmasec-test",
		    &(struct peer_counters){ .connections = 3, .mac_failures = 7, .malformed = 6, .rebuilds = 6,
					     .resumes = 2, .protocol_violations = 1 });
	metrics_add(m, "addr:10.77.0.3", &one_refusal);
	metrics_add(m, "psk:a\"b\\c\nd", &one_conn);
	struct server_counters n = { .accepted = 5, .established = 4, .refused_auth = 1, .messages = 12,
				     .audit_errors = 7 };
	char *text = render(m, &n, 2);
	assert_parses(text);
	assert_non_null(strstr(text, "# HELP rdmasec_server_mac_failures_total "));
	assert_non_null(strstr(text, "# TYPE rdmasec_server_mac_failures_total counter\n"));
	assert_non_null(strstr(text, "rdmasec_server_connections_total{peer=\"CN=client1,O=rdmasec-test\"} 3\n"));
	assert_non_null(strstr(text, "rdmasec_server_mac_failures_total{peer=\"CN=client1,O=rdmasec-test\"} 7\n"));
	/* Every counter the library keeps about a peer's forgeries and healing is exported. */
	assert_non_null(strstr(text, "# TYPE rdmasec_server_malformed_total counter\n"));
	assert_non_null(strstr(text, "rdmasec_server_malformed_total{peer=\"CN=client1,O=rdmasec-test\"} 6\n"));
	assert_non_null(strstr(text, "rdmasec_server_rebuilds_total{peer=\"CN=client1,O=rdmasec-test\"} 6\n"));
	assert_non_null(strstr(text, "rdmasec_server_resumes_total{peer=\"CN=client1,O=rdmasec-test\"} 2\n"));
	assert_non_null(
		strstr(text, "rdmasec_server_protocol_violations_total{peer=\"CN=client1,O=rdmasec-test\"} 1\n"));
	assert_non_null(strstr(text, "rdmasec_server_refused_handshakes_total{peer=\"addr:10.77.0.3\"} 1\n"));
	/* Backslash, double quote and newline escaped as the format says. */
	assert_non_null(strstr(text, "rdmasec_server_connections_total{peer=\"psk:a\\\"b\\\\c\\nd\"} 1\n"));
	assert_non_null(strstr(text, "rdmasec_server_accepted_total 5\n"));
	assert_non_null(strstr(text, "rdmasec_server_established_total 4\n"));
	assert_non_null(strstr(text, "rdmasec_server_refused_auth_total 1\n"));
	assert_non_null(strstr(text, "# TYPE rdmasec_server_audit_errors_total counter\n"));
	assert_non_null(strstr(text, "rdmasec_server_audit_errors_total 7\n"));
	assert_non_null(strstr(text, "rdmasec_server_messages_total 12\n"));
	assert_non_null(strstr(text, "# TYPE rdmasec_server_clients gauge\nrdmasec_server_clients 2\n"));
	/* "other" appears only once something was folded into it. */
	assert_null(strstr(text, "{peer=\"other\"}"));
	/* Peers in a stable order: sorted by key. */
	const char *a = strstr(text, "rdmasec_server_qp_errors_total{peer=\"CN=client1");
	const char *b = strstr(text, "rdmasec_server_qp_errors_total{peer=\"addr:10.77.0.3");
	const char *c = strstr(text, "rdmasec_server_qp_errors_total{peer=\"psk:");
	assert_true(a && b && c && a < b && b < c);
	free(text);
	metrics_free(m);
}

static void label_values_stay_valid_utf8(void **state)
{
	(void)state;
	struct metrics *m = metrics_new(8);
	assert_non_null(m);
	metrics_add(m, "CN=J\xc3\xbcrgen", &one_conn);          /* valid: kept */
	metrics_add(m, "CN=bad\xff\xc0\x80\xed\xa0\x80", &one_conn); /* invalid, overlong, surrogate */
	metrics_add(m, "CN=tab\there\x7f", &one_conn);
	metrics_add(m, "CN=cut\xe2\x82", &one_conn);             /* truncated sequence */
	assert_renders(m, (const char *const[]){ "{peer=\"CN=J\xc3\xbcrgen\"} 1\n", "{peer=\"CN=bad??????\"} 1\n",
						 "{peer=\"CN=tab?here?\"} 1\n", "{peer=\"CN=cut??\"} 1\n", NULL });
	metrics_free(m);
}

static void peer_keys(void **state)
{
	(void)state;
	char key[METRICS_KEY_MAX];
	metrics_peer_key(key, "CN=client1", "10.77.0.2:4000");
	assert_string_equal(key, "CN=client1");
	metrics_peer_key(key, "", "10.77.0.3:51234");
	assert_string_equal(key, "addr:10.77.0.3");
	metrics_peer_key(key, NULL, "[fe80::1]:7471");
	assert_string_equal(key, "addr:fe80::1");
	metrics_peer_key(key, "", "");
	assert_string_equal(key, "addr:unknown");
	metrics_peer_key(key, NULL, NULL);
	assert_string_equal(key, "addr:unknown");
}

static void file_is_replaced_atomically(void **state)
{
	(void)state;
	char dir[] = "/tmp/test_metrics.XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[64], tmp[80];
	snprintf(path, sizeof(path), "%s/rdmasec.prom", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	struct metrics *m = metrics_new(8);
	assert_non_null(m);
	struct server_counters n = { 0 };
	struct metrics_export x = { .path = path };
	char err[256] = "";

	/* The first tick writes; no change and within the interval: nothing. */
	assert_int_equal(metrics_export_tick(&x, m, &n, 0, 10000, false, err, sizeof(err)), 1);
	assert_int_equal(access(tmp, F_OK), -1);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	/* A change waits for the interval, then is written; no change: nothing, however long. */
	metrics_add(m, "CN=a", &one_conn);
	assert_int_equal(metrics_export_tick(&x, m, &n, 0, 10500, false, err, sizeof(err)), 0);
	assert_int_equal(metrics_export_tick(&x, m, &n, 0, 11000, false, err, sizeof(err)), 1);
	assert_int_equal(metrics_export_tick(&x, m, &n, 0, 13000, false, err, sizeof(err)), 0);
	n.messages++;
	assert_int_equal(metrics_export_tick(&x, m, &n, 0, 14000, false, err, sizeof(err)), 1);
	assert_int_equal(metrics_export_tick(&x, m, &n, 1, 15000, false, err, sizeof(err)), 1);
	/* Forced (SIGUSR1): at once, changed or not. */
	assert_int_equal(metrics_export_tick(&x, m, &n, 1, 15001, true, err, sizeof(err)), 1);

	FILE *f = fopen(path, "r");
	assert_non_null(f);
	char text[16384];
	size_t len = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[len] = '\0';
	assert_parses(text);
	assert_non_null(strstr(text, "rdmasec_server_connections_total{peer=\"CN=a\"} 1\n"));
	assert_non_null(strstr(text, "rdmasec_server_messages_total 1\n"));

	/* A directory that is gone: an error naming the file, retried at the next interval. */
	unlink(path);
	rmdir(dir);
	assert_true(metrics_export_tick(&x, m, &n, 1, 16002, true, err, sizeof(err)) < 0);
	assert_true(x.failing);
	assert_non_null(strstr(err, "rdmasec.prom.tmp"));
	assert_int_equal(metrics_export_tick(&x, m, &n, 1, 16500, false, err, sizeof(err)), 0);
	assert_true(metrics_export_tick(&x, m, &n, 1, 17002, false, err, sizeof(err)) < 0);
	/* No file configured: nothing happens. */
	struct metrics_export none = { 0 };
	assert_int_equal(metrics_export_tick(&none, m, &n, 1, 20000, true, err, sizeof(err)), 0);
	metrics_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(counts_per_peer),
		cmocka_unit_test(full_table_folds_into_other),
		cmocka_unit_test(long_keys_are_cut),
		cmocka_unit_test(renders_prometheus_text),
		cmocka_unit_test(label_values_stay_valid_utf8),
		cmocka_unit_test(peer_keys),
		cmocka_unit_test(file_is_replaced_atomically),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
