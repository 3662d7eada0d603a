/* SPDX-License-Identifier: MIT */
/*
 * Target function: rsec_open_frame, under a fixed key, both algorithms.
 * Oracle: opening may succeed only for a frame that sealing the recovered
 * plaintext reproduces byte for byte (a seed made by sealing, replayed
 * intact); anything else that opens is a forgery and aborts. A failed open
 * must leave no plaintext behind, and a frame that opened once must not open
 * again. The expected sequence number is set to the frame's own, so the tag
 * check is reached for every seq the fuzzer invents.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "seal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The seeds in corpus/seal/ were sealed under this secret (client to server). */
static void fuzz_secret(uint8_t secret[static RSEC_SEAL_SECRET_LEN])
{
	for (size_t i = 0; i < RSEC_SEAL_SECRET_LEN; i++)
		secret[i] = (uint8_t)(i * 13 + 7);
}

static struct rsec_seal cli[2], srv[2];

static void setup(void)
{
	static const enum rsec_aead_alg algs[2] = { RSEC_AEAD_AES256GCM, RSEC_AEAD_CHACHA20POLY1305 };
	uint8_t secret[RSEC_SEAL_SECRET_LEN];
	fuzz_secret(secret);
	for (int a = 0; a < 2; a++)
		if (rsec_seal_from_secret(&cli[a], secret, false, algs[a]) < 0 ||
		    rsec_seal_from_secret(&srv[a], secret, true, algs[a]) < 0)
			abort();
}

static void check_one(int a, const uint8_t *data, size_t size, uint8_t *pt, uint8_t *again)
{
	uint64_t seq = 0;
	for (size_t i = 0; i < 8 && i < size; i++)
		seq = seq << 8 | data[i];
	rsec_seal_dir_set_next_seq(srv[a].rx, seq);
	memset(pt, 0xcc, size);
	struct rsec_seal_hdr h;
	int rc = rsec_open_frame(srv[a].rx, data, size, &h, pt, size);
	if (rc < 0) {
		for (size_t i = 0; i < size; i++)
			if (pt[i] != 0xcc && pt[i] != 0)
				abort(); /* plaintext (or garbage) left behind */
		if (rc != RSEC_E_PROTO && rc != RSEC_E_MAC)
			abort();
		return;
	}
	/* Opened: it must be exactly what sealing produces. */
	size_t out_len = 0;
	rsec_seal_dir_set_next_seq(cli[a].tx, h.seq);
	if (h.seq != seq || h.len + (size_t)RSEC_SEAL_OVERHEAD != size ||
	    rsec_seal_frame(cli[a].tx, h.credits, h.flags, pt, h.len, again, size, &out_len) < 0 || out_len != size ||
	    memcmp(again, data, size) != 0)
		abort();
	/* A replay of it is refused after the tag checks out. */
	if (rsec_open_frame(srv[a].rx, data, size, &h, pt, size) != RSEC_E_SEQ)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	if (!ready) {
		setup();
		ready = 1;
	}
	uint8_t *pt = malloc(size + 1), *again = malloc(size + 1);
	if (!pt || !again)
		abort();
	for (int a = 0; a < 2; a++)
		check_one(a, data, size, pt, again);
	free(pt);
	free(again);
	return 0;
}
