/* SPDX-License-Identifier: MIT */
/*
 * The JSON result writer: UTF-8 text comes back byte for byte from a JSON
 * parser (the hand-made writer it replaces escaped each byte >= 0x7f as
 * \u00XX, turning "é" into "Ã©"), bytes that are not UTF-8 become U+FFFD so
 * the line stays JSON, and the line keeps the tools' layout: one line, keys
 * in insertion order, no spaces, "/" unescaped, numbers with 3 decimals.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/json_out.h"

/* What json_write prints for o (o is freed). */
static char *written(struct json_object *o)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	json_write(o, f);
	assert_int_equal(fclose(f), 0);
	return text;
}

/* The string member "s" after writing {"s": in} and parsing the line back. */
static void assert_round_trip(const char *in, const char *expect)
{
	struct json_object *o = json_new_object(), *back, *s;
	char *text;

	json_add_str(o, "s", in);
	text = written(o);
	back = json_tokener_parse(text);
	assert_non_null(back);
	assert_true(json_object_object_get_ex(back, "s", &s));
	assert_string_equal(json_object_get_string(s), expect);
	json_object_put(back);
	free(text);
}

static void test_utf8_survives(void **state)
{
	(void)state;
	assert_round_trip("caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9d\x84\x9e", "caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9d\x84\x9e");
	assert_round_trip("line\nbreak \"quoted\" back\\slash \x01 \x7f", "line\nbreak \"quoted\" back\\slash \x01 \x7f");
	assert_round_trip("", "");
}

static void test_bad_utf8_replaced(void **state)
{
	(void)state;
	/* A stray byte, a cut sequence, an overlong '/', a surrogate, above U+10FFFF. */
	assert_round_trip("a\xff" "b", "a\xef\xbf\xbd" "b");
	assert_round_trip("cut \xe2\x9c", "cut \xef\xbf\xbd\xef\xbf\xbd");
	assert_round_trip("\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd");
	assert_round_trip("\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
	assert_round_trip("\xf4\x90\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
}

static void test_layout(void **state)
{
	const uint64_t v[] = { 1, 0x2f };
	struct json_object *o = json_new_object(), *a;
	char *text;

	(void)state;
	json_add_str(o, "cmd", "probe/x");
	json_add_u64(o, "n", UINT64_MAX);
	json_add_hex(o, "qpn", 0x11);
	json_add_num(o, "rate", 1.5);
	json_add_bool(o, "ok", true);
	json_add_null(o, "rkey");
	json_add_u64_array(o, "hex", v, 2, true);
	json_add_u64_array(o, "dec", v, 2, false);
	a = json_add_array(o, "list");
	json_add_bool(json_append_object(a), "in", false);
	json_add_object(o, "empty");
	text = written(o);
	assert_string_equal(text, "{\"cmd\":\"probe/x\",\"n\":18446744073709551615,\"qpn\":\"0x11\",\"rate\":1.500,"
				  "\"ok\":true,\"rkey\":null,\"hex\":[\"0x1\",\"0x2f\"],\"dec\":[1,47],"
				  "\"list\":[{\"in\":false}],\"empty\":{}}\n");
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_utf8_survives),
		cmocka_unit_test(test_bad_utf8_replaced),
		cmocka_unit_test(test_layout),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
