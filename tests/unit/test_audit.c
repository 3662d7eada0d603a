/* SPDX-License-Identifier: MIT */
/*
 * Audit records (lib/audit): every event encodes to one JSON object that
 * parses back with the fields docs/audit.md promises; hostile peer names
 * stay inside their string; short buffers are refused, not cut; the file is
 * created 0600 and appended one line per record; records of unauthenticated
 * peers are rate limited, every one held back is counted in a "suppressed"
 * record, and authenticated ones always get through, from any thread.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#include <cmocka.h>

#include <json-c/json.h>

#include "audit.h"
#include "conn.h"
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

/* The number at key, which must be there and be one. */
static uint64_t uint_field(json_object *o, const char *key)
{
	json_object *v;
	assert_true(json_object_object_get_ex(o, key, &v));
	assert_true(json_object_is_type(v, json_type_int));
	return json_object_get_uint64(v);
}

static void every_event_encodes(void **state)
{
	(void)state;
	for (int ev = RSEC_AUDIT_ACCEPT; ev <= RSEC_AUDIT_EVENT_LAST; ev++) {
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
		assert_int_equal(uint_field(o, "conn"), 42);
		assert_int_equal(uint_field(o, "local_qpn"), 0x11);
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
	json_object *peer, *region;
	assert_true(json_object_object_get_ex(o, "peer", &peer));
	assert_null(peer); /* not authenticated: an explicit null */
	assert_true(json_object_object_get_ex(o, "region", &region));
	assert_string_equal(str_field(region, "grant_id"), "0x8000000000000003");
	assert_string_equal(str_field(region, "addr"), "0x7f12a000");
	assert_string_equal(str_field(region, "rkey"), "0x80001a5");
	assert_string_equal(str_field(region, "rights"), "read,write");
	assert_string_equal(str_field(region, "mechanism"), "mw2");
	assert_int_equal(uint_field(region, "span"), 100);
	assert_int_equal(uint_field(region, "offset"), 16);
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

	/* What strict decoders reject: surrogates, overlong forms, beyond U+10FFFF, cut sequences. */
	static const char *const bad[] = {
		"\xed\xa0\x80",     /* U+D800 */
		"\xed\xbf\xbf",     /* U+DFFF */
		"\xe0\x80\xaf",     /* overlong '/' */
		"\xf0\x80\x80\xaf", /* overlong '/' */
		"\xf4\x90\x80\x80", /* U+110000 */
		"\xf5\x80\x80\x80",
		"\xe2\x82",         /* truncated at the end */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		r.peer = bad[i];
		o = encode_parse(&r);
		const char *p = str_field(o, "peer");
		assert_non_null(p);
		assert_int_equal(strlen(p), 3 * strlen(bad[i])); /* one U+FFFD per byte */
		for (size_t k = 0; p[k]; k += 3)
			assert_memory_equal(p + k, "\xef\xbf\xbd", 3);
		json_object_put(o);
	}
	/* The extremes that are valid stay. */
	r.peer = "\xed\x9f\xbf \xee\x80\x80 \xf0\x90\x80\x80 \xf4\x8f\xbf\xbf";
	o = encode_parse(&r);
	assert_string_equal(str_field(o, "peer"), r.peer);
	json_object_put(o);
}

static void short_buffers_are_refused(void **state)
{
	(void)state;
	/* A fixed time: "now" may tick between the two encodings compared below. */
	struct rsec_audit_record r = { .event = RSEC_AUDIT_ACCEPT, .peer = "CN=client", .time_ms = 1795370462123ull };
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

/* A fresh directory from the template dir, and path = dir/audit.jsonl in it. */
static void temp_log(char *dir, char *path, size_t cap)
{
	assert_non_null(mkdtemp(dir));
	snprintf(path, cap, "%s/audit.jsonl", dir);
}

static void file_is_private_and_appended(void **state)
{
	(void)state;
	char dir[] = "/tmp/rsec-audit-XXXXXX", path[128];
	temp_log(dir, path, sizeof(path));
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

	/* Not a regular file, or nothing at all: refused, a FIFO without blocking. */
	assert_int_equal(rsec_audit_open(dir, &a), RSEC_E_IO);
	char fifo[160];
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(rsec_audit_open(fifo, &a), RSEC_E_IO);
	unlink(fifo);
	assert_int_equal(rsec_audit_open("/dev/null", &a), RSEC_E_IO);
	assert_int_equal(rsec_audit_open("", &a), RSEC_E_INVAL);
	assert_int_equal(rsec_audit_open(NULL, &a), RSEC_E_INVAL);
	unlink(path);
	rmdir(dir);
}

/* Reads path's records; returns how many (at most max), each parsed into recs. */
static int read_records(const char *path, json_object **recs, int max)
{
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	static char line[65536];
	int n = 0;
	while (fgets(line, sizeof(line), f)) {
		assert_true(n < max);
		size_t len = strlen(line);
		assert_true(len > 0 && line[len - 1] == '\n'); /* whole lines only */
		recs[n] = json_tokener_parse(line);
		assert_non_null(recs[n]);
		n++;
	}
	fclose(f);
	return n;
}

static void long_hostile_records_are_written_whole(void **state)
{
	(void)state;
	char dir[] = "/tmp/rsec-audit-XXXXXX", path[128];
	temp_log(dir, path, sizeof(path));
	/* Control bytes escape to six characters each: far beyond any fixed line buffer. */
	static char peer[1000], reason[1000];
	memset(peer, 0x01, sizeof(peer) - 1);
	memset(reason, '"', sizeof(reason) - 1);
	struct rsec_audit *a;
	assert_int_equal(rsec_audit_open(path, &a), 0);
	struct rsec_audit_record r = { .event = RSEC_AUDIT_CLOSE, .peer = peer, .reason = reason };
	assert_int_equal(rsec_audit_write(a, &r), 0);
	rsec_audit_close(a);
	json_object *recs[2];
	assert_int_equal(read_records(path, recs, 2), 1);
	assert_string_equal(str_field(recs[0], "peer"), peer);
	assert_string_equal(str_field(recs[0], "reason"), reason);
	json_object_put(recs[0]);
	unlink(path);
	rmdir(dir);
}

/* A connection with its own channel and no socket yet; no path hooks: it never holds a grant. */
static void no_channel(struct rsec_conn *c)
{
	rsec_chan_init(&c->own_chan, -1, NULL, NULL);
	c->path.chan = &c->own_chan;
	c->epfd = -1;
}

/* rsec_conn_fail's records: the handshake's outcome, or a close; wired to the connection's fields. */
static void connection_failures_are_classified(void **state)
{
	(void)state;
	char dir[] = "/tmp/rsec-audit-XXXXXX", path[128];
	temp_log(dir, path, sizeof(path));
	struct rsec_ctx ctx = { .is_server = true };
	assert_int_equal(rsec_audit_open(path, &ctx.audit), 0);

	/* No identity yet: whatever ended the handshake is an authentication failure. */
	struct rsec_conn c = { .ctx = &ctx, .is_server = true, .id = 7, .path.phase = PHASE_TLS };
	no_channel(&c);
	snprintf(c.peer_addr, sizeof(c.peer_addr), "10.77.0.2:4000");
	assert_int_equal(rsec_conn_fail(&c, RSEC_E_TIMEOUT, "set-up did not finish"), RSEC_E_TIMEOUT);
	/* An identity, but the admission hook said no to its HELLO. */
	struct rsec_conn d = { .ctx = &ctx, .is_server = true, .id = 8, .path.phase = PHASE_HELLO, .admit_refused = true };
	no_channel(&d);
	snprintf(d.peer, sizeof(d.peer), "CN=client1");
	assert_int_equal(rsec_conn_fail(&d, RSEC_E_LIMIT, "peer refused"), RSEC_E_LIMIT);
	/* Closed by us before authentication (a server at max_clients): a close, nobody named. */
	struct rsec_conn f = { .ctx = &ctx, .is_server = true, .id = 10, .path.phase = PHASE_TLS };
	no_channel(&f);
	assert_int_equal(rsec_conn_close(&f, "max_clients reached"), 0);
	/* Established: the end is a close, with the QPNs. */
	struct rsec_conn e = { .ctx = &ctx, .is_server = true, .id = 9, .path.phase = PHASE_ESTABLISHED };
	no_channel(&e);
	snprintf(e.peer, sizeof(e.peer), "CN=client2");
	e.path.stats.local_qpn = 17;
	e.path.stats.remote_qpn = 18;
	rsec_conn_audit(&e, RSEC_AUDIT_MAC_FAILURE, "x", NULL, NULL);
	assert_int_equal(rsec_conn_fail(&e, RSEC_E_CLOSED, "peer disconnected: bye"), RSEC_E_CLOSED);
	/* Closed already: no second record. */
	assert_int_equal(rsec_conn_fail(&e, RSEC_E_IO, "again"), RSEC_E_CLOSED);
	rsec_audit_close(ctx.audit);
	assert_int_equal(ctx.audit_errors, 0);

	json_object *recs[8];
	assert_int_equal(read_records(path, recs, 8), 5);
	static const struct {
		const char *event, *peer, *reason;
		uint64_t conn;
	} want[] = {
		{ "auth_failure", NULL, "set-up did not finish", 7 },
		{ "refuse", "CN=client1", "peer refused", 8 },
		{ "close", NULL, "closed locally: max_clients reached", 10 },
		{ "mac_failure", "CN=client2", NULL, 9 },
		{ "close", "CN=client2", "peer disconnected: bye", 9 },
	};
	for (int i = 0; i < 5; i++) {
		json_object *v;
		assert_string_equal(str_field(recs[i], "event"), want[i].event);
		assert_true(json_object_object_get_ex(recs[i], "peer", &v));
		if (want[i].peer)
			assert_string_equal(json_object_get_string(v), want[i].peer);
		else
			assert_null(v);
		if (want[i].reason)
			assert_string_equal(str_field(recs[i], "reason"), want[i].reason);
		assert_int_equal(uint_field(recs[i], "conn"), want[i].conn);
		assert_string_equal(str_field(recs[i], "role"), "server");
		assert_int_equal(json_object_object_get_ex(recs[i], "local_qpn", &v), i >= 3);
		json_object_put(recs[i]);
	}
	unlink(path);
	rmdir(dir);
}

static void summaries_encode(void **state)
{
	(void)state;
	struct rsec_audit_summary sum = { .event = RSEC_AUDIT_AUTH_FAILURE, .count = 1234,
					  .first_ms = 1795370462123ull, .last_ms = 1795370463001ull };
	struct rsec_audit_record r = { .event = RSEC_AUDIT_SUPPRESSED, .is_server = true, .result = "rate limited",
				       .summary = &sum };
	json_object *o = encode_parse(&r), *v, *peer;
	assert_string_equal(str_field(o, "event"), "suppressed");
	assert_true(json_object_object_get_ex(o, "peer", &peer));
	assert_null(peer);
	assert_false(json_object_object_get_ex(o, "conn", NULL));
	assert_true(json_object_object_get_ex(o, "suppressed", &v));
	assert_string_equal(str_field(v, "event"), "auth_failure");
	assert_string_equal(str_field(v, "first"), "2026-11-22T18:01:02.123Z");
	assert_string_equal(str_field(v, "last"), "2026-11-22T18:01:03.001Z");
	assert_int_equal(uint_field(v, "count"), 1234);
	json_object_put(o);
	sum.event = (enum rsec_audit_event)99;
	char buf[256];
	assert_int_equal(rsec_audit_encode(&r, buf, sizeof(buf)), RSEC_E_INVAL);
}

static uint64_t fake_ms;
static uint64_t fake_clock(void)
{
	return __atomic_load_n(&fake_ms, __ATOMIC_RELAXED);
}

/* Per event name: records written, and records a "suppressed" record accounts for. */
struct tally {
	int written[RSEC_AUDIT_SUPPRESSED + 1];
	uint64_t suppressed[RSEC_AUDIT_SUPPRESSED + 1];
	int summaries;
};

static int event_of(const char *name)
{
	for (int ev = RSEC_AUDIT_ACCEPT; ev <= RSEC_AUDIT_SUPPRESSED; ev++)
		if (strcmp(rsec_audit_event_name((enum rsec_audit_event)ev), name) == 0)
			return ev;
	fail_msg("unknown event '%s'", name);
	return 0;
}

static void tally_file(const char *path, struct tally *t)
{
	static json_object *recs[20000];
	int n = read_records(path, recs, 20000);
	memset(t, 0, sizeof(*t));
	for (int i = 0; i < n; i++) {
		int ev = event_of(str_field(recs[i], "event"));
		t->written[ev]++;
		json_object *sum;
		if (ev == RSEC_AUDIT_SUPPRESSED) {
			assert_true(json_object_object_get_ex(recs[i], "suppressed", &sum));
			uint64_t count = uint_field(sum, "count");
			assert_true(count > 0);
			t->suppressed[event_of(str_field(sum, "event"))] += count;
			t->summaries++;
		}
		json_object_put(recs[i]);
	}
}

/* A new log in dir whose rate limit reads fake_ms, set to start_ms. */
static struct rsec_audit *open_on_fake_clock(char *dir, char *path, size_t cap, uint64_t start_ms)
{
	temp_log(dir, path, cap);
	struct rsec_audit *a;
	assert_int_equal(rsec_audit_open(path, &a), 0);
	fake_ms = start_ms;
	rsec_audit_set_clock(a, fake_clock);
	return a;
}

static void unauthenticated_records_are_rate_limited(void **state)
{
	(void)state;
	char dir[] = "/tmp/rsec-audit-XXXXXX", path[128];
	struct rsec_audit *a = open_on_fake_clock(dir, path, sizeof(path), 1000000);

	/* A flood: the burst gets through, the rest is counted. */
	struct rsec_audit_record unauth = { .event = RSEC_AUDIT_AUTH_FAILURE, .is_server = true,
					    .peer_addr = "10.0.0.66:4000", .time_ms = 1795370462000ull };
	for (int i = 0; i < RSEC_AUDIT_UNAUTH_BURST + 50; i++)
		assert_int_equal(rsec_audit_write(a, &unauth), 0);
	struct rsec_audit_record closed = { .event = RSEC_AUDIT_CLOSE, .is_server = true,
					    .time_ms = 1795370462500ull, .reason = "max_clients reached" };
	for (int i = 0; i < 10; i++)
		assert_int_equal(rsec_audit_write(a, &closed), 0);
	assert_int_equal(rsec_audit_suppressed(a), 60);

	/* Authenticated peers' records are never held back, refusals and closes included. */
	static const enum rsec_audit_event authed[] = { RSEC_AUDIT_ACCEPT, RSEC_AUDIT_REFUSE, RSEC_AUDIT_CLOSE,
							RSEC_AUDIT_MAC_FAILURE };
	for (size_t i = 0; i < sizeof(authed) / sizeof(authed[0]); i++) {
		struct rsec_audit_record r = { .event = authed[i], .is_server = true, .peer = "CN=client1" };
		assert_int_equal(rsec_audit_write(a, &r), 0);
	}
	assert_int_equal(rsec_audit_suppressed(a), 60);

	/* 20 a second: 49 ms is not one record's worth, 50 ms is. */
	fake_ms += 49;
	assert_int_equal(rsec_audit_write(a, &unauth), 0);
	assert_int_equal(rsec_audit_suppressed(a), 61);
	fake_ms += 1;
	assert_int_equal(rsec_audit_write(a, &unauth), 0);
	assert_int_equal(rsec_audit_write(a, &unauth), 0);
	assert_int_equal(rsec_audit_suppressed(a), 62);
	/* A quiet hour refills the burst, not more. */
	fake_ms += 3600000;
	for (int i = 0; i < RSEC_AUDIT_UNAUTH_BURST + 1; i++)
		assert_int_equal(rsec_audit_write(a, &unauth), 0);
	assert_int_equal(rsec_audit_suppressed(a), 63);
	rsec_audit_close(a); /* writes the last summary */

	struct tally t;
	tally_file(path, &t);
	assert_int_equal(t.written[RSEC_AUDIT_AUTH_FAILURE], RSEC_AUDIT_UNAUTH_BURST + 1 + RSEC_AUDIT_UNAUTH_BURST);
	assert_int_equal(t.suppressed[RSEC_AUDIT_AUTH_FAILURE], 50 + 1 + 1 + 1);
	assert_int_equal(t.written[RSEC_AUDIT_CLOSE], 1);
	assert_int_equal(t.suppressed[RSEC_AUDIT_CLOSE], 10);
	assert_int_equal(t.written[RSEC_AUDIT_ACCEPT], 1);
	assert_int_equal(t.written[RSEC_AUDIT_REFUSE], 1);
	assert_int_equal(t.written[RSEC_AUDIT_MAC_FAILURE], 1);
	/* Both kinds before the first authenticated record, one per record let through after a miss, one at close. */
	assert_int_equal(t.summaries, 2 + 1 + 1 + 1);

	/* The first summaries come right before the record that got through, with the window held back. */
	static json_object *recs[400];
	int n = read_records(path, recs, 400);
	int at = RSEC_AUDIT_UNAUTH_BURST;
	assert_string_equal(str_field(recs[at], "event"), "suppressed");
	assert_string_equal(str_field(recs[at + 1], "event"), "suppressed");
	assert_string_equal(str_field(recs[at + 2], "event"), "accept");
	json_object *sum;
	assert_true(json_object_object_get_ex(recs[at], "suppressed", &sum));
	assert_string_equal(str_field(sum, "event"), "auth_failure");
	assert_string_equal(str_field(sum, "first"), "2026-11-22T18:01:02.000Z");
	assert_string_equal(str_field(recs[at], "role"), "server");
	assert_true(json_object_object_get_ex(recs[at + 1], "suppressed", &sum));
	assert_string_equal(str_field(sum, "event"), "close");
	assert_string_equal(str_field(sum, "last"), "2026-11-22T18:01:02.500Z");
	assert_string_equal(str_field(recs[n - 1], "event"), "suppressed");
	for (int i = 0; i < n; i++)
		json_object_put(recs[i]);
	unlink(path);
	rmdir(dir);
}

enum { WRITERS = 8, PER_WRITER = 500 };

static void *flood(void *arg)
{
	struct rsec_audit *a = arg;
	for (int i = 0; i < PER_WRITER; i++) {
		struct rsec_audit_record r = { .event = i % 2 ? RSEC_AUDIT_AUTH_FAILURE : RSEC_AUDIT_ACCEPT,
					       .is_server = true, .peer = i % 2 ? NULL : "CN=client" };
		if (rsec_audit_write(a, &r) != 0)
			return arg;
		if (i % 50 == 0)
			__atomic_add_fetch(&fake_ms, 10, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void rate_limit_is_thread_safe(void **state)
{
	(void)state;
	char dir[] = "/tmp/rsec-audit-XXXXXX", path[128];
	struct rsec_audit *a = open_on_fake_clock(dir, path, sizeof(path), 5000000);
	pthread_t th[WRITERS];
	for (int i = 0; i < WRITERS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, flood, a), 0);
	for (int i = 0; i < WRITERS; i++) {
		void *rv;
		assert_int_equal(pthread_join(th[i], &rv), 0);
		assert_null(rv);
	}
	uint64_t held = rsec_audit_suppressed(a);
	rsec_audit_close(a);
	struct tally t;
	tally_file(path, &t);
	const int each = WRITERS * PER_WRITER / 2;
	assert_int_equal(t.written[RSEC_AUDIT_ACCEPT], each);
	assert_int_equal(t.written[RSEC_AUDIT_AUTH_FAILURE] + t.suppressed[RSEC_AUDIT_AUTH_FAILURE], each);
	assert_int_equal(t.suppressed[RSEC_AUDIT_AUTH_FAILURE], held);
	/* 80 clock steps of 10 ms refill 16 records beyond the burst; fewer if a step came late. */
	assert_true(t.written[RSEC_AUDIT_AUTH_FAILURE] >= RSEC_AUDIT_UNAUTH_BURST);
	assert_true(t.written[RSEC_AUDIT_AUTH_FAILURE] <= RSEC_AUDIT_UNAUTH_BURST + 16);
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
		cmocka_unit_test(long_hostile_records_are_written_whole),
		cmocka_unit_test(connection_failures_are_classified),
		cmocka_unit_test(summaries_encode),
		cmocka_unit_test(unauthenticated_records_are_rate_limited),
		cmocka_unit_test(rate_limit_is_thread_safe),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
