/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "rdmasec.h"

static void every_code_has_its_own_message(void **state)
{
	(void)state;
	const char *unknown = rsec_strerror(-1000);
	for (int code = RSEC_E_DENIED; code <= RSEC_OK; code++) {
		const char *msg = rsec_strerror(code);
		assert_non_null(msg);
		assert_string_not_equal(msg, unknown);
		for (int other = code + 1; other <= RSEC_OK; other++)
			assert_string_not_equal(msg, rsec_strerror(other));
	}
	assert_string_equal(rsec_strerror(1), unknown);
}

static void version_is_semantic(void **state)
{
	(void)state;
	unsigned major, minor, patch;
	char tail;
	assert_int_equal(sscanf(rsec_version(), "%u.%u.%u%c", &major, &minor, &patch, &tail), 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_code_has_its_own_message),
		cmocka_unit_test(version_is_semantic),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
