/* SPDX-License-Identifier: MIT */
/*
 * Per-source admission (tools/daemon/admission): the cap and the token
 * bucket per source, with time injected; sources independent; IPv6 grouped
 * by /64 and mapped IPv4 as IPv4; malformed addresses refused without a
 * trace; a full table reuses only idle entries; releases never underflow.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "admission.h"

#define T0 1000000u /* a monotonic clock well past 0 */

static struct admission *make(uint32_t per_source, uint32_t rate, uint32_t burst, size_t sources)
{
	struct admission_limits l = { .max_per_source = per_source, .rate_per_sec = rate, .burst = burst,
				      .max_sources = sources };
	struct admission *a = admission_new(&l);
	assert_non_null(a);
	return a;
}

static void try_is(struct admission *a, const char *addr, uint64_t now, enum admission_verdict want)
{
	const char *why = NULL;
	enum admission_verdict v = admission_try(a, addr, now, &why);
	if (v != want)
		fail_msg("%s at %llu: %s (%s), want %s", addr ? addr : "(null)", (unsigned long long)now,
			 admission_verdict_name(v), why ? why : "?", admission_verdict_name(want));
	assert_non_null(why);
}

static void caps_handshakes_per_source(void **state)
{
	(void)state;
	struct admission *a = make(3, 1000000, 1000000, 64);
	/* Another port of the same address is the same source. */
	try_is(a, "10.0.0.1:1000", T0, ADMISSION_ADMIT);
	try_is(a, "10.0.0.1:1001", T0, ADMISSION_ADMIT);
	try_is(a, "10.0.0.1:1002", T0, ADMISSION_ADMIT);
	try_is(a, "10.0.0.1:1003", T0, ADMISSION_REFUSE_CONCURRENT);
	try_is(a, "10.0.0.1:1003", T0 + 60000, ADMISSION_REFUSE_CONCURRENT); /* time alone frees nothing */
	assert_int_equal(admission_in_progress(a, "10.0.0.1:9"), 3);
	assert_true(admission_release(a, "10.0.0.1:1001"));
	assert_int_equal(admission_in_progress(a, "10.0.0.1:9"), 2);
	try_is(a, "10.0.0.1:1004", T0, ADMISSION_ADMIT);
	try_is(a, "10.0.0.1:1005", T0, ADMISSION_REFUSE_CONCURRENT);
	assert_int_equal(admission_sources(a), 1);
	admission_free(a);
}

static void rate_refills_over_time(void **state)
{
	(void)state;
	/* 10 a second, burst 5: 100 ms a token. */
	struct admission *a = make(1000, 10, 5, 64);
	const char *src = "192.0.2.7:5000";
	for (int i = 0; i < 5; i++)
		try_is(a, src, T0, ADMISSION_ADMIT);
	try_is(a, src, T0, ADMISSION_REFUSE_RATE);
	try_is(a, src, T0 + 99, ADMISSION_REFUSE_RATE);
	try_is(a, src, T0 + 100, ADMISSION_ADMIT);
	try_is(a, src, T0 + 100, ADMISSION_REFUSE_RATE);
	/* Refusals cost nothing: 50 ms later half a token is there, 100 ms later a whole one. */
	try_is(a, src, T0 + 150, ADMISSION_REFUSE_RATE);
	try_is(a, src, T0 + 200, ADMISSION_ADMIT);
	/* A long pause fills the bucket to its burst, not beyond. */
	for (int i = 0; i < 5; i++)
		try_is(a, src, T0 + 60000, ADMISSION_ADMIT);
	try_is(a, src, T0 + 60000, ADMISSION_REFUSE_RATE);
	/* A clock that goes back refills nothing, and a huge jump cannot overflow the refill. */
	try_is(a, src, T0, ADMISSION_REFUSE_RATE);
	for (int i = 0; i < 5; i++)
		try_is(a, src, UINT64_MAX - 1, ADMISSION_ADMIT);
	try_is(a, src, UINT64_MAX - 1, ADMISSION_REFUSE_RATE);
	assert_int_equal(admission_in_progress(a, src), 17);
	admission_free(a);

	/* Fast rates refill by the millisecond too: 1000000 a second is 1000 a ms. */
	a = make(1000000, 1000000, 1000, 64);
	for (int i = 0; i < 1000; i++)
		try_is(a, src, T0, ADMISSION_ADMIT);
	try_is(a, src, T0, ADMISSION_REFUSE_RATE);
	for (int i = 0; i < 1000; i++)
		try_is(a, src, T0 + 1, ADMISSION_ADMIT);
	try_is(a, src, T0 + 1, ADMISSION_REFUSE_RATE);
	admission_free(a);
}

static void sources_are_independent(void **state)
{
	(void)state;
	struct admission *a = make(2, 10, 2, 64);
	try_is(a, "10.0.0.1:1", T0, ADMISSION_ADMIT);
	try_is(a, "10.0.0.1:2", T0, ADMISSION_ADMIT);
	try_is(a, "10.0.0.1:3", T0, ADMISSION_REFUSE_CONCURRENT);
	try_is(a, "10.0.0.2:1", T0, ADMISSION_ADMIT);
	try_is(a, "[2001:db8::1]:1", T0, ADMISSION_ADMIT);
	assert_true(admission_release(a, "10.0.0.1:1"));
	assert_true(admission_release(a, "10.0.0.1:2"));
	try_is(a, "10.0.0.1:4", T0, ADMISSION_REFUSE_RATE); /* its bucket is empty; the others' are not */
	try_is(a, "10.0.0.2:2", T0, ADMISSION_ADMIT);
	try_is(a, "10.0.0.2:3", T0, ADMISSION_REFUSE_CONCURRENT);
	assert_int_equal(admission_in_progress(a, "10.0.0.1:0"), 0);
	assert_int_equal(admission_in_progress(a, "10.0.0.2:0"), 2);
	assert_int_equal(admission_in_progress(a, "[2001:db8::2]:0"), 1);
	assert_int_equal(admission_sources(a), 3);
	admission_free(a);
}

static void ipv6_is_grouped_by_64(void **state)
{
	(void)state;
	struct admission *a = make(2, 1000, 1000, 64);
	try_is(a, "[2001:db8:1:2::1]:40000", T0, ADMISSION_ADMIT);
	try_is(a, "[2001:db8:1:2:ffff:ffff:ffff:ffff]:40001", T0, ADMISSION_ADMIT);
	try_is(a, "[2001:db8:1:2:1234::9]:40002", T0, ADMISSION_REFUSE_CONCURRENT);
	try_is(a, "[2001:db8:1:3::1]:40000", T0, ADMISSION_ADMIT); /* the next /64 */
	try_is(a, "[2001:0DB8:0001:0002:0:0:0:5]:1", T0, ADMISSION_REFUSE_CONCURRENT);
	assert_int_equal(admission_in_progress(a, "[2001:db8:1:2::]:1"), 2);

	/* A mapped IPv4 address is that IPv4 address, not the ::ffff:0:0/64 everyone maps into. */
	try_is(a, "[::ffff:10.1.1.1]:1", T0, ADMISSION_ADMIT);
	try_is(a, "10.1.1.1:2", T0, ADMISSION_ADMIT);
	try_is(a, "[::ffff:10.1.1.1]:3", T0, ADMISSION_REFUSE_CONCURRENT);
	try_is(a, "[::ffff:10.1.1.2]:1", T0, ADMISSION_ADMIT);
	assert_int_equal(admission_sources(a), 4);

	char s[ADMISSION_SOURCE_MAX];
	assert_true(admission_source("[2001:db8:1:2:ffff::1]:7", s));
	assert_string_equal(s, "2001:db8:1:2::/64");
	assert_true(admission_source("[::ffff:10.1.1.1]:7", s));
	assert_string_equal(s, "10.1.1.1");
	assert_true(admission_source("10.1.1.1:7", s));
	assert_string_equal(s, "10.1.1.1");
	assert_true(admission_source("[::1]:7", s));
	assert_string_equal(s, "::/64");
	assert_true(admission_source("[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535", s));
	assert_string_equal(s, "ffff:ffff:ffff:ffff::/64");
	admission_free(a);
}

static void malformed_addresses_are_refused(void **state)
{
	(void)state;
	static char too_long[300];
	memset(too_long, '1', sizeof(too_long) - 1);
	memcpy(too_long, "[::", 3);
	memcpy(too_long + sizeof(too_long) - 5, "]:80", 4);
	static const char *const bad[] = {
		"", "10.0.0.1", "10.0.0.1:", ":80", "10.0.0.1:0x50", "10.0.0.1:65536", "10.0.0.1:123456",
		"10.0.0.1:-1", "10.0.0.1:+1", "10.0.0.1: 80", "10.0.0.1:80 ", " 10.0.0.1:80", "10.0.0.256:80",
		"10.0.0:80", "10.0.0.1.2:80", "10.0.0.1:80:80", "abc:80", "::1:80", "[::1]80", "[::1:80",
		"[::1]:", "[]:80", "[10.0.0.1]:80", "[fe80::1%eth0]:80", "[::1]:80x", "[::1]]:80", "[:::1]:80",
		"[2001:db8::1::2]:80", "10.0.0.1:80\n", "[::1]:00000080", too_long,
	};
	struct admission *a = make(8, 100, 100, 64);
	char s[ADMISSION_SOURCE_MAX];
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		try_is(a, bad[i], T0, ADMISSION_REFUSE_BAD_ADDR);
		assert_false(admission_release(a, bad[i]));
		assert_int_equal(admission_in_progress(a, bad[i]), 0);
		if (admission_source(bad[i], s))
			fail_msg("'%s' parsed as %s", bad[i], s);
		assert_string_equal(s, "");
	}
	try_is(a, NULL, T0, ADMISSION_REFUSE_BAD_ADDR);
	assert_false(admission_release(a, NULL));
	assert_int_equal(admission_sources(a), 0);
	/* The edges that are fine. */
	try_is(a, "0.0.0.0:1", T0, ADMISSION_ADMIT);
	try_is(a, "255.255.255.255:65535", T0, ADMISSION_ADMIT);
	try_is(a, "[::]:0", T0, ADMISSION_ADMIT);
	try_is(a, "[ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255]:65535", T0, ADMISSION_ADMIT);
	admission_free(a);
}

static void full_table_reuses_only_idle_entries(void **state)
{
	(void)state;
	/* 10 a second, burst 2: a source that took one token is full again 100 ms later. */
	struct admission *a = make(2, 10, 2, 4);
	char addr[32];
	for (int i = 1; i <= 4; i++) {
		snprintf(addr, sizeof(addr), "10.0.1.%d:7", i);
		try_is(a, addr, T0, ADMISSION_ADMIT);
	}
	/* Every entry has a handshake in progress: nothing may go. */
	try_is(a, "10.0.1.5:7", T0, ADMISSION_REFUSE_TABLE_FULL);
	try_is(a, "10.0.1.5:7", T0 + 60000, ADMISSION_REFUSE_TABLE_FULL);
	/* Released, but their buckets are not full yet: forgetting them would hand out fresh bursts. */
	for (int i = 1; i <= 4; i++) {
		snprintf(addr, sizeof(addr), "10.0.1.%d:7", i);
		assert_true(admission_release(a, addr));
	}
	try_is(a, "10.0.1.5:7", T0 + 50, ADMISSION_REFUSE_TABLE_FULL);
	assert_int_equal(admission_sources(a), 4);
	/* Full again: the entry idle longest (10.0.1.1) makes room. */
	try_is(a, "10.0.1.5:7", T0 + 100, ADMISSION_ADMIT);
	assert_int_equal(admission_sources(a), 4);
	assert_int_equal(admission_in_progress(a, "10.0.1.5:8"), 1);
	/* 10.0.1.1 returns as a new source; 10.0.1.2 goes; 10.0.1.5's handshake stays counted. */
	try_is(a, "10.0.1.1:7", T0 + 100, ADMISSION_ADMIT);
	try_is(a, "10.0.1.1:8", T0 + 100, ADMISSION_ADMIT);
	try_is(a, "10.0.1.1:9", T0 + 100, ADMISSION_REFUSE_CONCURRENT);
	try_is(a, "10.0.1.6:7", T0 + 100, ADMISSION_ADMIT);
	try_is(a, "10.0.1.7:7", T0 + 100, ADMISSION_ADMIT);
	try_is(a, "10.0.1.8:7", T0 + 100, ADMISSION_REFUSE_TABLE_FULL);
	assert_int_equal(admission_in_progress(a, "10.0.1.5:8"), 1);
	assert_int_equal(admission_in_progress(a, "10.0.1.1:8"), 2);
	assert_int_equal(admission_sources(a), 4);
	assert_true(admission_release(a, "10.0.1.5:7"));
	assert_false(admission_release(a, "10.0.1.5:7"));
	admission_free(a);
}

static void releases_never_underflow(void **state)
{
	(void)state;
	struct admission *a = make(2, 1, 1, 8);
	assert_false(admission_release(a, "10.0.0.9:1")); /* never seen */
	try_is(a, "10.0.0.9:1", T0, ADMISSION_ADMIT);
	try_is(a, "10.0.0.9:2", T0 + 1, ADMISSION_REFUSE_RATE);
	assert_int_equal(admission_in_progress(a, "10.0.0.9:1"), 1); /* a refusal adds nothing */
	assert_true(admission_release(a, "10.0.0.9:1"));
	assert_false(admission_release(a, "10.0.0.9:1"));
	assert_false(admission_release(a, "10.0.0.9:2"));
	assert_int_equal(admission_in_progress(a, "10.0.0.9:1"), 0);
	/* The count is still right afterwards. */
	try_is(a, "10.0.0.9:3", T0 + 1000, ADMISSION_ADMIT);
	assert_int_equal(admission_in_progress(a, "10.0.0.9:1"), 1);
	assert_false(admission_release(NULL, "10.0.0.9:1"));
	assert_int_equal(admission_try(NULL, "10.0.0.9:1", T0, NULL), ADMISSION_REFUSE_BAD_ADDR);
	admission_free(a);
	admission_free(NULL);
}

/* Random traffic over more sources than entries: the counts always add up, the table never grows. */
static void random_traffic_keeps_the_books(void **state)
{
	(void)state;
	enum { SOURCES = 40, ENTRIES = 16 };
	struct admission *a = make(3, 50, 4, ENTRIES);
	uint32_t held[SOURCES] = { 0 };
	uint64_t now = T0;
	srandom(7);
	for (int step = 0; step < 200000; step++) {
		int s = (int)(random() % SOURCES);
		char addr[48];
		if (s % 2)
			snprintf(addr, sizeof(addr), "10.9.0.%d:%d", s, step % 60000 + 1);
		else
			snprintf(addr, sizeof(addr), "[2001:db8:0:%x::%x]:%d", s, step % 0xffff, step % 60000 + 1);
		now += (uint64_t)(random() % 3);
		if (random() % 2) {
			if (admission_try(a, addr, now, NULL) == ADMISSION_ADMIT)
				held[s]++;
		} else {
			assert_int_equal(admission_release(a, addr), held[s] > 0);
			if (held[s])
				held[s]--;
		}
		assert_true(admission_sources(a) <= ENTRIES);
		assert_int_equal(admission_in_progress(a, addr), held[s]);
		assert_true(held[s] <= 3);
	}
	admission_free(a);
}

static void limits_are_checked(void **state)
{
	(void)state;
	const struct admission_limits ok = { 1, 1, 1, 1 };
	struct admission *a = admission_new(&ok);
	assert_non_null(a);
	admission_free(a);
	struct admission_limits l = ok;
	assert_null(admission_new(NULL));
	l.max_per_source = 0;
	assert_null(admission_new(&l));
	l = ok;
	l.rate_per_sec = 0;
	assert_null(admission_new(&l));
	l.rate_per_sec = 1000001;
	assert_null(admission_new(&l));
	l = ok;
	l.burst = 0;
	assert_null(admission_new(&l));
	l = ok;
	l.max_sources = 0;
	assert_null(admission_new(&l));
	l.max_sources = ADMISSION_SOURCES_LIMIT + 1;
	assert_null(admission_new(&l));

	admission_limits_for(&l, 1024, 256, 200);
	assert_int_equal(l.max_per_source, 256);
	assert_int_equal(l.rate_per_sec, 200);
	assert_int_equal(l.burst, 200);
	assert_int_equal(l.max_sources, ADMISSION_SOURCES_MIN);
	admission_limits_for(&l, 65536, 256, 200);
	assert_int_equal(l.max_sources, 131072);
	a = admission_new(&l);
	assert_non_null(a);
	admission_free(a);
	assert_string_equal(admission_verdict_name(ADMISSION_REFUSE_RATE), "per_source_rate");
	assert_string_equal(admission_verdict_name((enum admission_verdict)99), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(caps_handshakes_per_source),
		cmocka_unit_test(rate_refills_over_time),
		cmocka_unit_test(sources_are_independent),
		cmocka_unit_test(ipv6_is_grouped_by_64),
		cmocka_unit_test(malformed_addresses_are_refused),
		cmocka_unit_test(full_table_reuses_only_idle_entries),
		cmocka_unit_test(releases_never_underflow),
		cmocka_unit_test(random_traffic_keeps_the_books),
		cmocka_unit_test(limits_are_checked),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
