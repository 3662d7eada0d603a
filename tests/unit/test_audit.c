/* SPDX-License-Identifier: MIT */
/*
 * Audit records (lib/audit): every event encodes to one JSON object that
 * parses back with the fields docs/audit.md promises; hostile peer names
 * stay inside their string; short buffers are refused, not cut; the file is
 * created 0600 and appended one line per record.
 */
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

#include <json-c/json.h>

#include "audit.h"
#include "rdmasec.h"

static json_object *encode_parse(const struct rsec_audit_record *r)
{
	char buf[4096];
	int n = rsec_audit_encode(r, buf, sizeof(buf));
	assert_true(n > 0);
	assert_int_equal((size_t)n, strlen(buf));
	assert_null(strchr(buf, '\n')); /* one record, one line */
	json_object *o = json_tokener_parse(buf);
	assert_non_null(o);
	assert_true(json_object_is_type(o, json_type_object));
	return o;
}

static const char *str_field(json_object *o, const char *key)
{
	json_object *v;
	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static void every_event_encodes(void **state)
{
	(void)state;
	for (int ev = RSEC_AUDIT_ACCEPT; ev <= RSEC_AUDIT_QP_ERROR; ev++) {
		const char *name = rsec_audit_event_name((enum rsec_audit_event)ev);
		assert_non_null(name);
		struct rsec_audit_record r = {
			.event = (enum rsec_audit_event)ev, .time_ms = 1795370462123ull, .is_server = true,
			.conn_id = 42, .peer = "CN=client1,O=rdmasec-test", .peer_addr = "10.77.0.2:40000",
			.result = "ok", .local_qpn = 0x11, .remote_qpn = 0x12,
		};
		json_object *o = encode_parse(&r);
		assert_string_equal(str_field(o, "event"), name);
		assert_string_equal(str_field(o, "time"), "2026-11-22T18:01:02.123Z");
		assert_string_equal(str_field(o, "role"), "server");
		assert_string_equal(str_field(o, "peer"), "CN=client1,O=rdmasec-test");
		assert_string_equal(str_field(o, "peer_addr"), "10.77.0.2:40000");
		json_object *v;
		assert_true(json_object_object_get_ex(o, "conn", &v));
		assert_int_equal(json_object_get_uint64(v), 42);
		assert_true(json_object_object_get_ex(o, "local_qpn", &v));
		assert_int_equal(json_object_get_uint64(v), 0x11);
		assert_false(json_object_object_get_ex(o, "region", NULL));
		assert_false(json_object_object_get_ex(o, "reason", NULL));
		json_object_put(o);
	}
	assert_null(rsec_audit_event_name((enum rsec_audit_event)0));
	assert_null(rsec_audit_event_name((enum rsec_audit_event)99));
	struct rsec_audit_record bad = { .event = (enum rsec_audit_event)99 };
	char buf[64];
	assert_int_equal(rsec_audit_encode(&bad, buf, sizeof(buf)), RSEC_E_INVAL);
}

static void grant_records_carry_the_region(void **state)
{
	(void)state;
	struct rsec_audit_region reg = {
		.grant_id = 0x8000000000000003ull, .addr = 0x7f12a000, .len = 4096, .offset = 16, .span = 100,
		.access = RSEC_ACCESS_READ | RSEC_ACCESS_WRITE, .rkey = 0x80001a5, .ttl_ms = 30000,
		.mechanism = "mw2",
	};
	struct rsec_audit_record r = { .event = RSEC_AUDIT_VERIFIED_WRITE, .result = "mismatch",
				       .reason = "bytes differ", .region = &reg };
	json_object *o = encode_parse(&r);
	assert_string_equal(str_field(o, "result"), "mismatch");
	assert_string_equal(str_field(o, "role"), "client");
	json_object *peer, *region, *v;
	assert_true(json_object_object_get_ex(o, "peer", &peer));
	assert_null(peer); /* not authenticated: an explicit null */
	assert_true(json_object_object_get_ex(o, "region", &region));
	assert_string_equal(str_field(region, "grant_id"), "0x8000000000000003");
	assert_string_equal(str_field(region, "addr"), "0x7f12a000");
	assert_string_equal(str_field(region, "rkey"), "0x80001a5");
	assert_string_equal(str_field(region, "rights"), "read,write");
	assert_string_equal(str_field(region, "mechanism"), "mw2");
	assert_true(json_object_object_get_ex(region, "span", &v));
	assert_int_equal(json_object_get_uint64(v), 100);
	assert_true(json_object_object_get_ex(region, "offset", &v));
	assert_int_equal(json_object_get_uint64(v), 16);
	json_object_put(o);

	reg.span = 0;
	reg.access = RSEC_ACCESS_WRITE;
	reg.mechanism = NULL;
	r.event = RSEC_AUDIT_GRANT;
	o = encode_parse(&r);
	assert_true(json_object_object_get_ex(o, "region", &region));
	assert_string_equal(str_field(region, "rights"), "write");
	assert_false(json_object_object_get_ex(region, "span", NULL));
	assert_false(json_object_object_get_ex(region, "mechanism", NULL));
	json_object_put(o);
}

static void hostile_names_stay_strings(void **state)
{
	(void)state;
	static const char *const names[] = {
		"CN=\"x\",\"event\":\"accept\"",
		"CN=a\nb\r\n{\"event\":\"fake\"}",
		"CN=\x01\x02\x1f\x7f",
		"CN=back\\slash\\",
		"CN=caf\xc3\xa9 \xe2\x82\xac", /* valid UTF-8 is kept */
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct rsec_audit_record r = { .event = RSEC_AUDIT_AUTH_FAILURE, .peer = names[i],
					       .reason = names[i] };
		json_object *o = encode_parse(&r);
		assert_string_equal(str_field(o, "event"), "auth_failure");
		assert_string_equal(str_field(o, "peer"), names[i]);
		assert_string_equal(str_field(o, "reason"), names[i]);
		json_object_put(o);
	}
}

static void invalid_utf8_is_replaced(void **state)
{
	(void)state;
	struct rsec_audit_record r = { .event = RSEC_AUDIT_AUTH_FAILURE, .peer = "CN=\xff\xfe!\xc3\x28\xc0\xaf" };
	json_object *o = encode_parse(&r);
	/* Each bad byte becomes U+FFFD; "(" survives. */
	assert_string_equal(str_field(o, "peer"),
			    "CN=\xef\xbf\xbd\xef\xbf\xbd!\xef\xbf\xbd(\xef\xbf\xbd\xef\xbf\xbd");
	json_object_put(o);
}

static void short_buffers_are_refused(void **state)
{
	(void)state;
	struct rsec_audit_record r = { .event = RSEC_AUDIT_ACCEPT, .peer = "CN=client" };
	char buf[4096];
	int n = rsec_audit_encode(&r, buf, sizeof(buf));
	assert_true(n > 0);
	char small[4096];
	assert_int_equal(rsec_audit_encode(&r, small, (size_t)n), RSEC_E_RANGE);
	assert_string_equal(small, "");
	assert_int_equal(rsec_audit_encode(&r, small, (size_t)n + 1), n);
	assert_string_equal(small, buf);
	assert_int_equal(rsec_audit_encode(NULL, small, sizeof(small)), RSEC_E_INVAL);
	assert_int_equal(rsec_audit_encode(&r, small, 0), RSEC_E_INVAL);
}

static void file_is_private_and_appended(void **state)
{
	(void)state;
	char dir[] = "/tmp/rsec-audit-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[128];
	snprintf(path, sizeof(path), "%s/audit.jsonl", dir);
	struct rsec_audit *a;
	assert_int_equal(rsec_audit_open(path, &a), 0);
	struct rsec_audit_record r = { .event = RSEC_AUDIT_ACCEPT, .peer = "CN=one" };
	assert_int_equal(rsec_audit_write(a, &r), 0);
	rsec_audit_close(a);
	assert_int_equal(rsec_audit_open(path, &a), 0); /* reopening appends */
	r.peer = "CN=two";
	r.event = RSEC_AUDIT_CLOSE;
	assert_int_equal(rsec_audit_write(a, &r), 0);
	rsec_audit_close(a);
	assert_int_equal(rsec_audit_write(NULL, &r), 0);

	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	char line[4096];
	const char *want[] = { "CN=one", "CN=two" };
	for (int i = 0; i < 2; i++) {
		assert_non_null(fgets(line, sizeof(line), f));
		json_object *o = json_tokener_parse(line);
		assert_non_null(o);
		assert_string_equal(str_field(o, "peer"), want[i]);
		json_object_put(o);
	}
	assert_null(fgets(line, sizeof(line), f));
	fclose(f);

	/* Not a regular file, or nothing at all: refused. */
	assert_int_equal(rsec_audit_open(dir, &a), RSEC_E_IO);
	assert_int_equal(rsec_audit_open("", &a), RSEC_E_INVAL);
	assert_int_equal(rsec_audit_open(NULL, &a), RSEC_E_INVAL);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_event_encodes),
		cmocka_unit_test(grant_records_carry_the_region),
		cmocka_unit_test(hostile_names_stay_strings),
		cmocka_unit_test(invalid_utf8_is_replaced),
		cmocka_unit_test(short_buffers_are_refused),
		cmocka_unit_test(file_is_private_and_appended),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
