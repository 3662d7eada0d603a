/* SPDX-License-Identifier: MIT */
/* fio's verify idea: what a block holds is a function of where it is and a
 * seed, so any reader can check it without remembering what was written. */
#include <string.h>

#include "blk_client.h"

static uint64_t word_at(uint64_t offset, uint64_t seed)
{
	/* splitmix64 of the word's byte offset, keyed by the seed */
	uint64_t z = offset + seed * 0x9e3779b97f4a7c15u + 0x9e3779b97f4a7c15u;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

void blk_pattern_fill(void *buf, size_t len, uint64_t offset, uint64_t seed)
{
	uint8_t *p = buf;
	for (size_t i = 0; i + 8 <= len; i += 8) {
		uint64_t w = word_at(offset + i, seed);
		memcpy(p + i, &w, 8);
	}
}

size_t blk_pattern_check(const void *buf, size_t len, uint64_t offset, uint64_t seed)
{
	const uint8_t *p = buf;
	for (size_t i = 0; i + 8 <= len; i += 8) {
		uint64_t w = word_at(offset + i, seed);
		if (memcmp(p + i, &w, 8) != 0)
			return i;
	}
	return len;
}
