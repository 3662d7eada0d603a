/* SPDX-License-Identifier: MIT */
/*
 * Target function: rsec_sealed_open, the granter's and the reader's view of
 * bytes a peer (or an attacker with the window's key) put in a sealed grant.
 * Input: u8 flags (bit 0: ChaCha20-Poly1305) | 8-byte prefix | u64 grant_id |
 * u32 offset | the sealed bytes, whose length fixes the plaintext length
 * (a length no plaintext seals to: nothing to open).
 * Oracle: what opens must seal back to the same bytes under the same
 * parameters (the seeds: sealed under the fixed key below); anything else
 * that opens is a forgery and aborts. A failed open leaves only zeros.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sealed.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HDR (1 + RSEC_SEALED_PREFIX_LEN + 8 + 4)

static const uint8_t key[RSEC_SEALED_KEY_LEN] = { 0x42, 0x13, 0x37 };

static uint64_t be(const uint8_t *p, size_t n)
{
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t plain;
	if (size < HDR || !rsec_sealed_plain_len(size - HDR, &plain))
		return 0;
	struct rsec_sealed_params p = {
		.alg = (data[0] & 1) ? RSEC_AEAD_CHACHA20POLY1305 : RSEC_AEAD_AES256GCM,
		.grant_id = be(data + 1 + RSEC_SEALED_PREFIX_LEN, 8),
		.offset = be(data + 1 + RSEC_SEALED_PREFIX_LEN + 8, 4),
		.plain_len = plain,
	};
	memcpy(p.prefix, data + 1, RSEC_SEALED_PREFIX_LEN);
	size_t n = size - HDR;
	uint8_t *buf = malloc(n), *again = malloc(n);
	if (!buf || !again)
		abort();
	memcpy(buf, data + HDR, n);
	int rc = rsec_sealed_open(key, &p, buf);
	if (rc < 0) {
		for (size_t i = 0; i < n; i++)
			if (buf[i])
				abort(); /* unauthenticated bytes left behind */
		if (rc != RSEC_E_MAC)
			abort();
	} else {
		memcpy(again, buf, plain);
		if (rsec_sealed_seal(key, &p, again) < 0 || memcmp(again, data + HDR, n) != 0)
			abort(); /* opened, but not what sealing makes: a forgery */
	}
	free(buf);
	free(again);
	return 0;
}
