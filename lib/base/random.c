/* SPDX-License-Identifier: MIT */
#include <openssl/rand.h>

#include "random.h"

/* A bad draw has probability below n / 2^32; this many in a row means the RNG is broken. */
#define RANDOM_INDEX_TRIES 64

bool rsec_uniform_accept(uint64_t r, uint64_t range, uint32_t n, uint32_t *idx)
{
	if (n == 0 || range < n || r >= range - range % n)
		return false;
	*idx = (uint32_t)(r % n);
	return true;
}

int rsec_random_index(uint32_t n, uint32_t *idx)
{
	RSEC_ENSURE(n > 0 && idx != NULL, RSEC_E_INVAL);
	for (int i = 0; i < RANDOM_INDEX_TRIES; i++) {
		uint8_t b[4];

		RSEC_ENSURE(RAND_bytes(b, sizeof(b)) == 1, RSEC_E_CRYPTO);
		uint32_t r = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
		if (rsec_uniform_accept(r, UINT64_C(1) << 32, n, idx))
			return 0;
	}
	return RSEC_E_CRYPTO;
}
