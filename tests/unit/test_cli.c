/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cli.h"

static void numbers(void **state)
{
	(void)state;
	uint64_t v;
	assert_true(cli_parse_u64("n", "42", 1, 100, false, &v));
	assert_int_equal(v, 42);
	assert_true(cli_parse_u64("n", "0x10", 1, 100, false, &v));
	assert_int_equal(v, 16);
	assert_true(cli_parse_u64("n", "16M", 1, 1u << 30, true, &v));
	assert_int_equal(v, 16u << 20);
	assert_true(cli_parse_u64("n", "4k", 1, 1u << 30, true, &v));
	assert_int_equal(v, 4096);
	const char *bad[] = { "", "-1", " 5", "5 ", "abc", "101", "0", "1x", "18446744073709551616", "16M" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_false(cli_parse_u64("n", bad[i], 1, 100, i == sizeof(bad) / sizeof(bad[0]) - 1, &v));
	assert_false(cli_parse_u64("n", "17179869184G", 1, UINT64_MAX, true, &v));
	assert_false(cli_parse_u64("n", "+5", 1, 100, false, &v));
}

/* The scanner under every parser: where the number ends, what it refuses. */
static void scanner(void **state)
{
	(void)state;
	uint64_t v = 7;
	const char *end = NULL;
	assert_true(cli_scan_u64("0x1fG", &v, &end));
	assert_int_equal(v, 0x1f);
	assert_string_equal(end, "G");
	assert_true(cli_scan_u64("18446744073709551615", &v, &end));
	assert_int_equal(v, UINT64_MAX);
	assert_string_equal(end, "");
	const char *bad[] = { "", " 1", "+1", "-1", "x1", "18446744073709551616" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 7;
		assert_false(cli_scan_u64(bad[i], &v, &end));
		assert_int_equal(v, 7); /* untouched */
	}
	assert_false(cli_scan_u64(NULL, &v, &end));
}

/* The constant-time digit agrees with the obvious one on every byte. */
static void hex_digits(void **state)
{
	(void)state;
	for (unsigned c = 0; c < 256; c++) {
		unsigned bad = 0;
		uint8_t d = cli_hex_digit((uint8_t)c, &bad);
		int want = c >= '0' && c <= '9' ? (int)c - '0'
			   : c >= 'a' && c <= 'f' ? (int)c - 'a' + 10
			   : c >= 'A' && c <= 'F' ? (int)c - 'A' + 10
						  : -1;
		assert_int_equal(bad, want < 0);
		assert_int_equal(d, want < 0 ? 0 : want);
	}
	unsigned bad = 1; /* sticky: a good digit never clears it */
	(void)cli_hex_digit('a', &bad);
	assert_int_equal(bad, 1);
}

static void listen_addresses(void **state)
{
	(void)state;
	char addr[64];
	uint16_t port = 7471;
	assert_true(cli_parse_listen("10.0.0.1:99", addr, sizeof(addr), &port));
	assert_string_equal(addr, "10.0.0.1");
	assert_int_equal(port, 99);
	assert_true(cli_parse_listen("[fe80::1]:7", addr, sizeof(addr), &port));
	assert_string_equal(addr, "fe80::1");
	assert_int_equal(port, 7);
	port = 5;
	assert_true(cli_parse_listen("0.0.0.0", addr, sizeof(addr), &port));
	assert_int_equal(port, 5);
	assert_false(cli_parse_listen("fe80::1", addr, sizeof(addr), &port));
	assert_false(cli_parse_listen("1.2.3.4:0", addr, sizeof(addr), &port));
	assert_false(cli_parse_listen("1.2.3.4:65536", addr, sizeof(addr), &port));
	assert_false(cli_parse_listen(":80", addr, sizeof(addr), &port));
	assert_false(cli_parse_listen("[::1", addr, sizeof(addr), &port));
}

static void aead_names(void **state)
{
	(void)state;
	enum rsec_aead_choice a = RSEC_AEAD_DEFAULT;
	assert_true(cli_parse_aead("chacha20-poly1305", &a));
	assert_int_equal(a, RSEC_AEAD_CHACHA20_POLY1305);
	assert_true(cli_parse_aead("aes-256-gcm", &a));
	assert_int_equal(a, RSEC_AEAD_AES_256_GCM);
	assert_false(cli_parse_aead("AES-256-GCM", &a));
	assert_false(cli_parse_aead("", &a));
	assert_int_equal(a, RSEC_AEAD_AES_256_GCM); /* unchanged by a refusal */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(numbers),
		cmocka_unit_test(scanner),
		cmocka_unit_test(hex_digits),
		cmocka_unit_test(listen_addresses),
		cmocka_unit_test(aead_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
