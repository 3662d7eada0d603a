/* SPDX-License-Identifier: MIT */
/* Small helpers shared by the unit tests. */
#ifndef RSEC_TEST_UTIL_H
#define RSEC_TEST_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whether n bytes at p are all zero: what a wipe must leave behind. */
static inline bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

#endif
