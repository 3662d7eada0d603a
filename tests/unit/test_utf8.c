/* SPDX-License-Identifier: MIT */
/* util/utf8.h: which sequences count as well-formed UTF-8 (RFC 3629), at each boundary. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "utf8.h"

static size_t len_of(const char *s)
{
	return utf8_seq_len((const unsigned char *)s);
}

static void well_formed(void **state)
{
	(void)state;
	assert_int_equal(len_of("a"), 1);
	assert_int_equal(len_of("\x7f"), 1);
	assert_int_equal(len_of("\xc2\x80"), 2);         /* U+0080 */
	assert_int_equal(len_of("\xdf\xbf"), 2);         /* U+07FF */
	assert_int_equal(len_of("\xe0\xa0\x80"), 3);     /* U+0800 */
	assert_int_equal(len_of("\xed\x9f\xbf"), 3);     /* U+D7FF, below the surrogates */
	assert_int_equal(len_of("\xee\x80\x80"), 3);     /* U+E000, above them */
	assert_int_equal(len_of("\xef\xbf\xbd"), 3);     /* U+FFFD */
	assert_int_equal(len_of("\xf0\x90\x80\x80"), 4); /* U+10000 */
	assert_int_equal(len_of("\xf4\x8f\xbf\xbf"), 4); /* U+10FFFF */
}

static void ill_formed(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"\x80",             /* a continuation byte alone */
		"\xc0\xaf",         /* overlong '/' */
		"\xc1\xbf",         /* overlong */
		"\xe0\x9f\xbf",     /* overlong U+07FF */
		"\xed\xa0\x80",     /* U+D800, a surrogate */
		"\xf0\x8f\xbf\xbf", /* overlong U+FFFF */
		"\xf4\x90\x80\x80", /* U+110000 */
		"\xf5\x80\x80\x80", /* no such lead byte */
		"\xff",
		"\xc3",             /* cut by the terminating NUL */
		"\xe2\x82",
		"\xf0\x9f\x98",
		"\xe2\x28\xa1",     /* second byte no continuation */
		"\xe2\x82\x28",     /* third byte no continuation */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(len_of(bad[i]), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(well_formed),
		cmocka_unit_test(ill_formed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
