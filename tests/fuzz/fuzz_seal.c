/* SPDX-License-Identifier: MIT */
/*
 * Target functions: rsec_open_frame, under a fixed key, both algorithms; and
 * rsec_seal_open across a rekey (the fixed key as the old one, phase 0, and
 * a second as the new, phase 1): the phase byte picks the key, and what
 * opens must again be exactly what sealing under that key produces.
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

static struct rsec_seal cli[2], srv[2], cli_next[2];
static const enum rsec_aead_alg fuzz_algs[2] = { RSEC_AEAD_AES256GCM, RSEC_AEAD_CHACHA20POLY1305 };

/* The second generation's keys of the rekeyed pair. */
static void fuzz_next_secret(uint8_t secret[static RSEC_SEAL_SECRET_LEN])
{
	for (size_t i = 0; i < RSEC_SEAL_SECRET_LEN; i++)
		secret[i] = (uint8_t)(i * 29 + 3);
}

static void setup(void)
{
	static const enum rsec_aead_alg algs[2] = { RSEC_AEAD_AES256GCM, RSEC_AEAD_CHACHA20POLY1305 };
	uint8_t secret[RSEC_SEAL_SECRET_LEN];
	fuzz_secret(secret);
	uint8_t next[RSEC_SEAL_SECRET_LEN];
	fuzz_next_secret(next);
	for (int a = 0; a < 2; a++)
		if (rsec_seal_from_secret(&cli[a], secret, false, algs[a]) < 0 ||
		    rsec_seal_from_secret(&srv[a], secret, true, algs[a]) < 0 ||
		    rsec_seal_from_secret(&cli_next[a], secret, false, algs[a]) < 0 ||
		    rsec_seal_next_tx(&cli_next[a], next, algs[a], 1) < 0)
			abort();
}

/* The server's keys right after a rekey: both kept, each expecting seq. */
static void rekeyed_server(int a, struct rsec_seal *s, uint64_t seq)
{
	uint8_t secret[RSEC_SEAL_SECRET_LEN], next[RSEC_SEAL_SECRET_LEN];
	fuzz_secret(secret);
	fuzz_next_secret(next);
	if (rsec_seal_from_secret(s, secret, true, fuzz_algs[a]) < 0 || rsec_seal_next_rx(s, next, fuzz_algs[a], 1) < 0)
		abort();
	rsec_seal_dir_set_next_seq(s->rx_old, seq);
	rsec_seal_dir_set_next_seq(s->rx, seq);
}

static void check_rekeyed(int a, const uint8_t *data, size_t size, uint64_t seq, uint8_t *pt, uint8_t *again)
{
	struct rsec_seal s = { 0 };
	rekeyed_server(a, &s, seq);
	memset(pt, 0xcc, size);
	struct rsec_seal_hdr h;
	int rc = rsec_seal_open(&s, data, size, &h, pt, size);
	if (rc < 0) {
		for (size_t i = 0; i < size; i++)
			if (pt[i] != 0xcc && pt[i] != 0)
				abort();
		if ((rc != RSEC_E_PROTO && rc != RSEC_E_MAC) || !s.rx_old)
			abort(); /* a failure retires no key */
		rsec_seal_free(&s);
		return;
	}
	/* Opened under the key its phase names: sealing it again under that key gives the same bytes. */
	struct rsec_seal_dir *tx = h.phase == 1 ? cli_next[a].tx : cli[a].tx;
	size_t out_len = 0;
	rsec_seal_dir_set_next_seq(tx, h.seq);
	if (h.phase > 1 || (h.phase == 1) != (s.rx_old == NULL) ||
	    rsec_seal_frame(tx, h.credits, h.flags, pt, h.len, again, size, &out_len) < 0 || out_len != size ||
	    memcmp(again, data, size) != 0)
		abort();
	rsec_seal_free(&s);
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
	uint64_t seq = 0;
	for (size_t i = 0; i < 8 && i < size; i++)
		seq = seq << 8 | data[i];
	for (int a = 0; a < 2; a++) {
		check_one(a, data, size, pt, again);
		check_rekeyed(a, data, size, seq, pt, again);
	}
	free(pt);
	free(again);
	return 0;
}
