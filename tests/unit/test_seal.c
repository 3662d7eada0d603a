/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "seal.h"

static const enum rsec_aead_alg algs[] = { RSEC_AEAD_AES256GCM, RSEC_AEAD_CHACHA20POLY1305 };

static void fill_secret(uint8_t secret[static RSEC_SEAL_SECRET_LEN], uint8_t base)
{
	for (size_t i = 0; i < RSEC_SEAL_SECRET_LEN; i++)
		secret[i] = (uint8_t)(base + i * 7);
}

/* A client and a server end sharing one secret. */
static void pair_new(struct rsec_seal *cli, struct rsec_seal *srv, enum rsec_aead_alg alg)
{
	uint8_t secret[RSEC_SEAL_SECRET_LEN];
	fill_secret(secret, 1);
	memset(cli, 0, sizeof(*cli));
	memset(srv, 0, sizeof(*srv));
	assert_int_equal(rsec_seal_from_secret(cli, secret, false, alg), 0);
	assert_int_equal(rsec_seal_from_secret(srv, secret, true, alg), 0);
}

static void pair_free(struct rsec_seal *cli, struct rsec_seal *srv)
{
	rsec_seal_free(cli);
	rsec_seal_free(srv);
	assert_null(cli->tx);
	assert_null(srv->rx);
}

static void check_roundtrip(struct rsec_seal_dir *tx, struct rsec_seal_dir *rx, uint32_t len, uint8_t flags)
{
	uint8_t *pt = malloc(len + 1), *frame = malloc((size_t)len + RSEC_SEAL_OVERHEAD), *out = malloc(len + 1);
	assert_non_null(pt);
	assert_non_null(frame);
	assert_non_null(out);
	for (uint32_t i = 0; i < len; i++)
		pt[i] = (uint8_t)(i * 31 + 5);
	size_t flen = 0;
	assert_int_equal(rsec_seal_frame(tx, 77, flags, pt, len, frame, (size_t)len + RSEC_SEAL_OVERHEAD, &flen), 0);
	assert_int_equal(flen, (size_t)len + RSEC_SEAL_OVERHEAD);
	if (len >= 16)
		assert_memory_not_equal(frame + RSEC_SEAL_HDR_LEN, pt, 16); /* really encrypted */
	struct rsec_seal_hdr h;
	assert_int_equal(rsec_open_frame(rx, frame, flen, &h, out, len), 0);
	assert_int_equal(h.len, len);
	assert_int_equal(h.credits, 77);
	assert_int_equal(h.flags, flags);
	if (len)
		assert_memory_equal(out, pt, len);
	free(pt);
	free(frame);
	free(out);
}

static void roundtrip_both_algs_all_sizes(void **state)
{
	(void)state;
	for (size_t a = 0; a < 2; a++) {
		struct rsec_seal cli, srv;
		pair_new(&cli, &srv, algs[a]);
		const uint32_t sizes[] = { 0, 1, 15, 16, 17, 4096, 1u << 20 };
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			check_roundtrip(cli.tx, srv.rx, sizes[i], RSEC_SEAL_FLAG_FIRST | RSEC_SEAL_FLAG_LAST);
			check_roundtrip(srv.tx, cli.rx, sizes[i], 0);
		}
		check_roundtrip(cli.tx, srv.rx, 0, RSEC_SEAL_FLAG_CREDIT_ONLY);
		struct rsec_seal_stats st;
		rsec_seal_stats(cli.tx, &st);
		assert_int_equal(st.sealed, 8);
		rsec_seal_stats(srv.rx, &st);
		assert_int_equal(st.opened, 8);
		assert_int_equal(st.mac_failures + st.seq_violations + st.malformed, 0);
		pair_free(&cli, &srv);
	}
}

/* Independent check of the frame against raw EVP: key/IV layout, nonce, AAD. */
static void frame_matches_spec(void **state)
{
	(void)state;
	struct rsec_seal cli, srv;
	pair_new(&cli, &srv, RSEC_AEAD_AES256GCM);
	uint8_t secret[RSEC_SEAL_SECRET_LEN], frame[64], pt[5] = "hello", nonce[12], ct[5], tag[16];
	fill_secret(secret, 1);
	size_t flen;
	rsec_seal_dir_set_next_seq(srv.tx, 0x0102030405060708ull);
	assert_int_equal(rsec_seal_frame(srv.tx, 0xbeef, RSEC_SEAL_FLAG_LAST, pt, sizeof(pt), frame, sizeof(frame),
					 &flen), 0);
	static const uint8_t hdr[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 5, 0xbe, 0xef, 2, 0 };
	assert_memory_equal(frame, hdr, 16);
	/* server->client key at 44, IV at 76; the seq XORs into the last 8 IV bytes. */
	memcpy(nonce, secret + 76, 12);
	for (int i = 0; i < 8; i++)
		nonce[4 + i] ^= (uint8_t)(i + 1);
	EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
	int outl;
	assert_int_equal(EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, secret + 44, nonce), 1);
	assert_int_equal(EVP_EncryptUpdate(ctx, NULL, &outl, hdr, 16), 1);
	assert_int_equal(EVP_EncryptUpdate(ctx, ct, &outl, pt, 5), 1);
	assert_int_equal(EVP_EncryptFinal_ex(ctx, tag, &outl), 1);
	assert_int_equal(EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, 16, tag), 1);
	EVP_CIPHER_CTX_free(ctx);
	assert_memory_equal(frame + 16, ct, 5);
	assert_memory_equal(frame + 21, tag, 16);
	pair_free(&cli, &srv);
}

static void directions_are_distinct(void **state)
{
	(void)state;
	struct rsec_seal cli, srv;
	pair_new(&cli, &srv, RSEC_AEAD_AES256GCM);
	uint8_t pt[8] = "reflect", frame[64], out[8];
	size_t flen;
	struct rsec_seal_hdr h;
	assert_int_equal(rsec_seal_frame(cli.tx, 0, 0, pt, sizeof(pt), frame, sizeof(frame), &flen), 0);
	/* Reflected back at its sender, a frame must not open: per-direction keys. */
	assert_int_equal(rsec_open_frame(cli.rx, frame, flen, &h, out, sizeof(out)), RSEC_E_MAC);
	assert_int_equal(rsec_open_frame(srv.rx, frame, flen, &h, out, sizeof(out)), 0);
	/* A direction does only its own job. */
	assert_int_equal(rsec_open_frame(srv.tx, frame, flen, &h, out, sizeof(out)), RSEC_E_INVAL);
	assert_int_equal(rsec_seal_frame(srv.rx, 0, 0, pt, sizeof(pt), frame, sizeof(frame), &flen), RSEC_E_INVAL);
	pair_free(&cli, &srv);
}

static void tampering_any_byte_is_mac_failure(void **state)
{
	(void)state;
	for (size_t a = 0; a < 2; a++) {
		struct rsec_seal cli, srv;
		pair_new(&cli, &srv, algs[a]);
		uint8_t pt[40], frame[40 + RSEC_SEAL_OVERHEAD], bad[sizeof(frame)], out[40];
		memset(pt, 0xa5, sizeof(pt));
		size_t flen;
		struct rsec_seal_hdr h;
		uint64_t expect_fail = 0;
		for (size_t i = 0; i < sizeof(frame); i++) {
			assert_int_equal(rsec_seal_frame(cli.tx, 3, RSEC_SEAL_FLAG_LAST, pt, sizeof(pt), frame,
							 sizeof(frame), &flen), 0);
			for (unsigned bit = 0; bit < 8; bit += 7) {
				memcpy(bad, frame, flen);
				bad[i] ^= (uint8_t)(1u << bit);
				memset(out, 0x11, sizeof(out));
				int rc = rsec_open_frame(srv.rx, bad, flen, &h, out, sizeof(out));
				/* Bytes 8..11 are len and 14..15 flags/reserved: a flip there is malformed. */
				if ((i >= 8 && i < 12) || i == 15 || (i == 14 && bit == 7) ||
				    (i == 14 && bit == 0)) {
					assert_true(rc == RSEC_E_PROTO || rc == RSEC_E_MAC);
				} else {
					assert_int_equal(rc, RSEC_E_MAC);
				}
				expect_fail += rc == RSEC_E_MAC;
				/* Nothing delivered: out holds no plaintext. */
				for (size_t j = 0; j < sizeof(out); j++)
					assert_int_not_equal(out[j], 0xa5);
				assert_int_equal(h.len, 0);
			}
			/* The genuine frame still opens afterwards. */
			assert_int_equal(rsec_open_frame(srv.rx, frame, flen, &h, out, sizeof(out)), 0);
			assert_memory_equal(out, pt, sizeof(pt));
		}
		struct rsec_seal_stats st;
		rsec_seal_stats(srv.rx, &st);
		assert_int_equal(st.mac_failures, expect_fail);
		assert_int_equal(st.opened, sizeof(frame));
		assert_true(st.malformed > 0);
		pair_free(&cli, &srv);
	}
}

static void replay_and_reorder_are_seq_errors(void **state)
{
	(void)state;
	for (size_t a = 0; a < 2; a++) {
		struct rsec_seal cli, srv;
		pair_new(&cli, &srv, algs[a]);
		uint8_t f[3][64], out[32];
		size_t fl[3];
		struct rsec_seal_hdr h;
		for (int i = 0; i < 3; i++) {
			uint8_t pt[8] = { (uint8_t)i };
			assert_int_equal(rsec_seal_frame(cli.tx, 0, 0, pt, sizeof(pt), f[i], sizeof(f[i]), &fl[i]), 0);
		}
		/* Reorder: frame 1 before frame 0. */
		memset(out, 0x5a, sizeof(out));
		assert_int_equal(rsec_open_frame(srv.rx, f[1], fl[1], &h, out, sizeof(out)), RSEC_E_SEQ);
		assert_int_equal(out[0], 0); /* wiped, not delivered */
		assert_int_equal(rsec_open_frame(srv.rx, f[0], fl[0], &h, out, sizeof(out)), 0);
		assert_int_equal(h.seq, 0);
		/* Replay of frame 0. */
		assert_int_equal(rsec_open_frame(srv.rx, f[0], fl[0], &h, out, sizeof(out)), RSEC_E_SEQ);
		assert_int_equal(rsec_open_frame(srv.rx, f[1], fl[1], &h, out, sizeof(out)), 0);
		assert_int_equal(out[0], 1);
		/* Loss: skipping frame 2 makes frame 3 unacceptable. */
		uint8_t f3[64];
		size_t fl3;
		assert_int_equal(rsec_seal_frame(cli.tx, 0, 0, out, 8, f3, sizeof(f3), &fl3), 0);
		assert_int_equal(rsec_open_frame(srv.rx, f3, fl3, &h, out, sizeof(out)), RSEC_E_SEQ);
		assert_int_equal(rsec_open_frame(srv.rx, f[2], fl[2], &h, out, sizeof(out)), 0);
		assert_int_equal(rsec_open_frame(srv.rx, f3, fl3, &h, out, sizeof(out)), 0);
		struct rsec_seal_stats st;
		rsec_seal_stats(srv.rx, &st);
		assert_int_equal(st.seq_violations, 3);
		assert_int_equal(st.opened, 4);
		assert_int_equal(st.mac_failures, 0);
		pair_free(&cli, &srv);
	}
}

static void wrong_key_or_alg_is_mac_failure(void **state)
{
	(void)state;
	uint8_t s1[RSEC_SEAL_SECRET_LEN], s2[RSEC_SEAL_SECRET_LEN];
	fill_secret(s1, 1);
	fill_secret(s2, 1);
	s2[0] ^= 1; /* client->server key */
	struct rsec_seal cli = { 0 }, srv = { 0 }, chacha = { 0 };
	assert_int_equal(rsec_seal_from_secret(&cli, s1, false, RSEC_AEAD_AES256GCM), 0);
	assert_int_equal(rsec_seal_from_secret(&srv, s2, true, RSEC_AEAD_AES256GCM), 0);
	assert_int_equal(rsec_seal_from_secret(&chacha, s1, true, RSEC_AEAD_CHACHA20POLY1305), 0);
	uint8_t pt[4] = "abc", frame[64], out[4];
	size_t flen;
	struct rsec_seal_hdr h;
	assert_int_equal(rsec_seal_frame(cli.tx, 0, 0, pt, sizeof(pt), frame, sizeof(frame), &flen), 0);
	assert_int_equal(rsec_open_frame(srv.rx, frame, flen, &h, out, sizeof(out)), RSEC_E_MAC);
	assert_int_equal(rsec_open_frame(chacha.rx, frame, flen, &h, out, sizeof(out)), RSEC_E_MAC);
	/* A different IV alone also fails. */
	rsec_seal_free(&srv);
	fill_secret(s2, 1);
	s2[RSEC_SEAL_KEY_LEN] ^= 0x80;
	assert_int_equal(rsec_seal_from_secret(&srv, s2, true, RSEC_AEAD_AES256GCM), 0);
	assert_int_equal(rsec_open_frame(srv.rx, frame, flen, &h, out, sizeof(out)), RSEC_E_MAC);
	rsec_seal_free(&cli);
	rsec_seal_free(&srv);
	rsec_seal_free(&chacha);
}

static void truncated_and_malformed_are_proto(void **state)
{
	(void)state;
	struct rsec_seal cli, srv;
	pair_new(&cli, &srv, RSEC_AEAD_CHACHA20POLY1305);
	uint8_t pt[100] = { 0 }, frame[100 + RSEC_SEAL_OVERHEAD], bad[sizeof(frame) + 1], out[100];
	size_t flen;
	struct rsec_seal_hdr h;
	assert_int_equal(rsec_seal_frame(cli.tx, 0, 0, pt, sizeof(pt), frame, sizeof(frame), &flen), 0);
	for (size_t n = 0; n < flen; n++)
		assert_int_equal(rsec_open_frame(srv.rx, n ? frame : NULL, n, &h, out, sizeof(out)), RSEC_E_PROTO);
	/* One byte too many. */
	memcpy(bad, frame, flen);
	bad[flen] = 0;
	assert_int_equal(rsec_open_frame(srv.rx, bad, flen + 1, &h, out, sizeof(out)), RSEC_E_PROTO);
	/* Another key's phase byte, unknown flag. */
	memcpy(bad, frame, flen);
	bad[15] = 1;
	assert_int_equal(rsec_open_frame(srv.rx, bad, flen, &h, out, sizeof(out)), RSEC_E_PROTO);
	memcpy(bad, frame, flen);
	bad[14] = 8;
	assert_int_equal(rsec_open_frame(srv.rx, bad, flen, &h, out, sizeof(out)), RSEC_E_PROTO);
	/* CREDIT_ONLY carrying data. */
	memcpy(bad, frame, flen);
	bad[14] = RSEC_SEAL_FLAG_CREDIT_ONLY;
	assert_int_equal(rsec_open_frame(srv.rx, bad, flen, &h, out, sizeof(out)), RSEC_E_PROTO);
	struct rsec_seal_stats st;
	rsec_seal_stats(srv.rx, &st);
	assert_int_equal(st.malformed, flen + 4);
	/* Too small a buffer: refused before decrypting, and the frame stays openable. */
	assert_int_equal(rsec_open_frame(srv.rx, frame, flen, &h, out, sizeof(out) - 1), RSEC_E_RANGE);
	assert_int_equal(rsec_open_frame(srv.rx, frame, flen, &h, out, sizeof(out)), 0);
	/* The sealing side refuses the same mistakes. */
	assert_int_equal(rsec_seal_frame(cli.tx, 0, RSEC_SEAL_FLAG_CREDIT_ONLY, pt, 1, frame, sizeof(frame), &flen),
			 RSEC_E_INVAL);
	assert_int_equal(rsec_seal_frame(cli.tx, 0, 0x80, pt, 1, frame, sizeof(frame), &flen), RSEC_E_INVAL);
	assert_int_equal(rsec_seal_frame(cli.tx, 0, 0, pt, sizeof(pt), frame, sizeof(frame) - 1, &flen),
			 RSEC_E_RANGE);
	assert_int_equal(rsec_seal_frame(cli.tx, 0, 0, NULL, 1, frame, sizeof(frame), &flen), RSEC_E_INVAL);
	pair_free(&cli, &srv);
}

static void sequence_space_never_wraps(void **state)
{
	(void)state;
	struct rsec_seal cli, srv;
	pair_new(&cli, &srv, RSEC_AEAD_AES256GCM);
	uint8_t frame[RSEC_SEAL_OVERHEAD], out[1];
	size_t flen;
	struct rsec_seal_hdr h;
	rsec_seal_dir_set_next_seq(cli.tx, UINT64_MAX - 1);
	rsec_seal_dir_set_next_seq(srv.rx, UINT64_MAX - 1);
	assert_int_equal(rsec_seal_frame(cli.tx, 0, 0, NULL, 0, frame, sizeof(frame), &flen), 0);
	assert_int_equal(rsec_open_frame(srv.rx, frame, flen, &h, out, 0), 0);
	assert_true(h.seq == UINT64_MAX - 1);
	assert_int_equal(rsec_seal_frame(cli.tx, 0, 0, NULL, 0, frame, sizeof(frame), &flen), RSEC_E_RANGE);
	assert_int_equal(rsec_seal_frame(cli.tx, 0, 0, NULL, 0, frame, sizeof(frame), &flen), RSEC_E_RANGE);
	struct rsec_seal_stats st;
	rsec_seal_stats(cli.tx, &st);
	assert_int_equal(st.sealed, 1);
	pair_free(&cli, &srv);
}

static void aes_gcm_usage_limit(void **state)
{
	(void)state;
	struct rsec_seal cli, srv;
	pair_new(&cli, &srv, RSEC_AEAD_AES256GCM);
	uint8_t pt[32] = { 0 }, frame[64];
	size_t flen;
	/* 32 bytes cost 2 blocks plus 1 for the tag. */
	rsec_seal_dir_set_blocks_left(cli.tx, 5);
	assert_int_equal(rsec_seal_frame(cli.tx, 0, 0, pt, sizeof(pt), frame, sizeof(frame), &flen), 0);
	assert_int_equal(rsec_seal_frame(cli.tx, 0, 0, pt, sizeof(pt), frame, sizeof(frame), &flen), RSEC_E_RANGE);
	assert_int_equal(rsec_seal_frame(cli.tx, 0, 0, pt, 16, frame, sizeof(frame), &flen), 0);
	assert_int_equal(rsec_seal_frame(cli.tx, 0, RSEC_SEAL_FLAG_CREDIT_ONLY, NULL, 0, frame, sizeof(frame), &flen),
			 RSEC_E_RANGE);
	pair_free(&cli, &srv);
}

static void bad_arguments(void **state)
{
	(void)state;
	uint8_t secret[RSEC_SEAL_SECRET_LEN] = { 0 };
	struct rsec_seal s = { 0 };
	assert_int_equal(rsec_seal_from_secret(&s, secret, false, (enum rsec_aead_alg)3), RSEC_E_INVAL);
	assert_int_equal(rsec_seal_from_secret(&s, secret, false, (enum rsec_aead_alg)0), RSEC_E_INVAL);
	assert_null(s.tx);
	assert_int_equal(rsec_seal_from_secret(&s, secret, false, RSEC_AEAD_AES256GCM), 0);
	/* Refuses to overwrite (and leak) live state. */
	assert_int_equal(rsec_seal_from_secret(&s, secret, false, RSEC_AEAD_AES256GCM), RSEC_E_INVAL);
	rsec_seal_free(&s);
	rsec_seal_free(&s);
	rsec_seal_free(NULL);
	struct rsec_seal_stats st;
	rsec_seal_stats(NULL, &st);
	assert_int_equal(st.sealed, 0);
}

static void data_mac(void **state)
{
	(void)state;
	struct rsec_seal cli, srv;
	pair_new(&cli, &srv, RSEC_AEAD_AES256GCM);
	uint8_t data[300], m1[32], m2[32], m3[32];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)i;
	/* Both ends compute the same MAC for the same author. */
	for (int author = 0; author < 2; author++) {
		assert_int_equal(rsec_seal_data_mac(&cli, author, 7, 4096, data, sizeof(data), m1), 0);
		assert_int_equal(rsec_seal_data_mac(&srv, author, 7, 4096, data, sizeof(data), m2), 0);
		assert_true(rsec_seal_mac_equal(m1, m2));
	}
	/* The two authors' keys differ; every field is covered. */
	assert_int_equal(rsec_seal_data_mac(&cli, false, 7, 4096, data, sizeof(data), m1), 0);
	assert_int_equal(rsec_seal_data_mac(&cli, true, 7, 4096, data, sizeof(data), m2), 0);
	assert_false(rsec_seal_mac_equal(m1, m2));
	assert_int_equal(rsec_seal_data_mac(&cli, false, 8, 4096, data, sizeof(data), m2), 0);
	assert_false(rsec_seal_mac_equal(m1, m2));
	assert_int_equal(rsec_seal_data_mac(&cli, false, 7, 4097, data, sizeof(data), m2), 0);
	assert_false(rsec_seal_mac_equal(m1, m2));
	assert_int_equal(rsec_seal_data_mac(&cli, false, 7, 4096, data, sizeof(data) - 1, m2), 0);
	assert_false(rsec_seal_mac_equal(m1, m2));
	data[299] ^= 1;
	assert_int_equal(rsec_seal_data_mac(&cli, false, 7, 4096, data, sizeof(data), m2), 0);
	assert_false(rsec_seal_mac_equal(m1, m2));
	/* Known answer: HMAC-SHA256(client key = secret[88..120), grant|off|len) computed independently. */
	uint8_t secret[RSEC_SEAL_SECRET_LEN], msg[24] = { 0 };
	fill_secret(secret, 1);
	msg[7] = 1;  /* grant 1 */
	msg[14] = 1; /* offset 256 */
	unsigned int ml = 0;
	assert_non_null(HMAC(EVP_sha256(), secret + 88, 32, msg, sizeof(msg), m3, &ml));
	assert_int_equal(rsec_seal_data_mac(&srv, false, 1, 256, NULL, 0, m1), 0);
	assert_memory_equal(m1, m3, 32);
	assert_int_equal(rsec_seal_data_mac(&cli, false, 1, 256, NULL, 1, m1), RSEC_E_INVAL);
	pair_free(&cli, &srv);
}

/* ---- A real TLS 1.3 session over a memory BIO pair. ---- */

/* A frame we sealed gives its plaintext back (to send it again after a rebuild), in any order, both AEADs. */
static void recover_own_frames(void **state)
{
	(void)state;
	for (size_t a = 0; a < 2; a++) {
		struct rsec_seal cli, srv;
		pair_new(&cli, &srv, algs[a]);
		uint8_t pt[3][300], frames[3][300 + RSEC_SEAL_OVERHEAD], back[300];
		size_t flen[3];
		for (int i = 0; i < 3; i++) {
			memset(pt[i], 'a' + i, sizeof(pt[i]));
			assert_int_equal(rsec_seal_frame(cli.tx, (uint16_t)i, i == 2 ? RSEC_SEAL_FLAG_LAST : 0, pt[i],
							 (uint32_t)(100 * (i + 1)), frames[i], sizeof(frames[i]), &flen[i]),
					 0);
		}
		assert_int_equal(rsec_seal_dir_next_seq(cli.tx), 3);
		for (int i = 2; i >= 0; i--) {
			struct rsec_seal_hdr h;
			memset(back, 0, sizeof(back));
			assert_int_equal(rsec_seal_recover(cli.tx, frames[i], flen[i], &h, back, sizeof(back)), 0);
			assert_int_equal(h.seq, (uint64_t)i);
			assert_int_equal(h.len, 100 * (i + 1));
			assert_int_equal(h.credits, i);
			assert_int_equal(h.flags, i == 2 ? RSEC_SEAL_FLAG_LAST : 0);
			assert_memory_equal(back, pt[i], h.len);
		}
		/* Recovering changes nothing: the peer opens the frames as sealed, the next seal follows on. */
		struct rsec_seal_hdr h;
		assert_int_equal(rsec_open_frame(srv.rx, frames[0], flen[0], &h, back, sizeof(back)), 0);
		assert_int_equal(rsec_seal_dir_next_seq(srv.rx), 1);
		/* Not a frame of ours, too small a buffer, the peer's direction. */
		uint8_t forged[sizeof(frames[0])];
		memcpy(forged, frames[0], flen[0]);
		forged[7] = 9; /* seq 9: never sealed */
		assert_int_equal(rsec_seal_recover(cli.tx, forged, flen[0], &h, back, sizeof(back)), RSEC_E_PROTO);
		assert_int_equal(rsec_seal_recover(cli.tx, frames[1], flen[1], &h, back, 10), RSEC_E_RANGE);
		assert_int_equal(rsec_seal_recover(srv.rx, frames[1], flen[1], &h, back, sizeof(back)), RSEC_E_INVAL);
		assert_int_equal(rsec_seal_recover(cli.tx, frames[1], 5, &h, back, sizeof(back)), RSEC_E_PROTO);
		assert_int_equal(rsec_seal_recover(cli.tx, frames[1], flen[1] - 1, &h, back, sizeof(back)), RSEC_E_PROTO);
		/* In a slot larger than the frame, as in the send ring. */
		assert_int_equal(rsec_seal_recover(cli.tx, frames[0], sizeof(frames[0]), &h, back, sizeof(back)), 0);
		assert_memory_equal(back, pt[0], 100);
		pair_free(&cli, &srv);
	}
}

/*
 * A rekey (rsec_seal_next_tx/_rx): frames sealed before the switch open
 * under the old key and say phase 0, later ones under the new and say its
 * phase; numbering goes on; the first new frame retires the old receiving
 * key, the peer's acknowledgement the old sending key; data-MAC keys stay.
 */
static void rekey_switches_without_loss(void **state)
{
	(void)state;
	for (size_t a = 0; a < 2; a++) {
		struct rsec_seal cli, srv;
		pair_new(&cli, &srv, algs[a]);
		uint8_t next[RSEC_SEAL_SECRET_LEN], pt[64] = "across", f[2][64 + RSEC_SEAL_OVERHEAD], out[64];
		uint8_t mac[RSEC_SEAL_DATAMAC_LEN], mac_after[RSEC_SEAL_DATAMAC_LEN];
		size_t n[2];
		struct rsec_seal_hdr h;
		fill_secret(next, 99);
		assert_int_equal(rsec_seal_data_mac(&cli, false, 1, 0, pt, 6, mac), 0);
		assert_int_equal(rsec_seal_frame(cli.tx, 0, 0, pt, 6, f[0], sizeof(f[0]), &n[0]), 0);
		assert_int_equal(rsec_seal_next_tx(&cli, next, algs[a], 0), RSEC_E_INVAL); /* the phase must change */
		assert_int_equal(rsec_seal_next_tx(&cli, next, algs[a], 1), 0);
		assert_int_equal(rsec_seal_next_rx(&srv, next, algs[a], 1), 0);
		assert_int_equal(rsec_seal_frame(cli.tx, 0, 0, pt, 6, f[1], sizeof(f[1]), &n[1]), 0);
		assert_int_equal(f[0][15], 0);
		assert_int_equal(f[1][15], 1);
		/* The new key's frame is no old key's, and the old key's no new key's. */
		assert_int_equal(rsec_open_frame(srv.rx_old, f[1], n[1], &h, out, sizeof(out)), RSEC_E_PROTO);
		f[1][15] = 0;
		assert_int_equal(rsec_open_frame(srv.rx_old, f[1], n[1], &h, out, sizeof(out)), RSEC_E_MAC);
		f[1][15] = 1;
		/* In order only: the new frame first is out of sequence, and retires nothing. */
		assert_int_equal(rsec_seal_open(&srv, f[1], n[1], &h, out, sizeof(out)), RSEC_E_SEQ);
		assert_non_null(srv.rx_old);
		struct rsec_seal_stats seq_st;
		rsec_seal_stats(rsec_seal_rx_now(&srv), &seq_st);
		assert_int_equal(seq_st.seq_violations, 1);
		assert_int_equal(rsec_seal_open(&srv, f[0], n[0], &h, out, sizeof(out)), 0);
		assert_int_equal(h.seq, 0);
		assert_int_equal(rsec_seal_open(&srv, f[1], n[1], &h, out, sizeof(out)), 0);
		assert_int_equal(h.seq, 1);
		assert_memory_equal(out, "across", 6);
		assert_null(srv.rx_old);
		assert_int_equal(rsec_seal_open(&srv, f[0], n[0], &h, out, sizeof(out)), RSEC_E_PROTO); /* gone */
		/* A rebuild recovers each frame under the key that sealed it, until the peer acknowledged them. */
		assert_int_equal(rsec_seal_recover_sent(&cli, f[0], n[0], &h, out, sizeof(out)), 0);
		assert_memory_equal(out, "across", 6);
		assert_int_equal(rsec_seal_recover_sent(&cli, f[1], n[1], &h, out, sizeof(out)), 0);
		assert_int_equal(h.seq, 1);
		rsec_seal_retire_tx(&cli, 0);
		assert_non_null(cli.tx_old);
		rsec_seal_retire_tx(&cli, 1);
		assert_null(cli.tx_old);
		assert_int_equal(rsec_seal_recover_sent(&cli, f[0], n[0], &h, out, sizeof(out)), RSEC_E_PROTO);
		assert_int_equal(rsec_seal_data_mac(&cli, false, 1, 0, pt, 6, mac_after), 0);
		assert_memory_equal(mac, mac_after, sizeof(mac));
		struct rsec_seal_stats st;
		rsec_seal_stats(srv.rx, &st);
		assert_int_equal(st.opened, 2);
		/*
		 * A second rekey before any frame came under the first: the old key
		 * opened one more meanwhile, and the count goes on from it.
		 */
		uint8_t third[RSEC_SEAL_SECRET_LEN];
		fill_secret(third, 150);
		assert_int_equal(rsec_seal_next_rx(&srv, next, algs[a], 2), 0);
		assert_int_equal(rsec_seal_frame(cli.tx, 0, 0, pt, 6, f[0], sizeof(f[0]), &n[0]), 0);
		assert_int_equal(rsec_seal_open(&srv, f[0], n[0], &h, out, sizeof(out)), 0); /* under phase 1 */
		assert_int_equal(rsec_seal_next_rx(&srv, third, algs[a], 3), 0);
		assert_int_equal(rsec_seal_dir_next_seq(rsec_seal_rx_now(&srv)), 3);
		assert_int_equal(rsec_seal_next_tx(&cli, third, algs[a], 3), 0);
		assert_int_equal(rsec_seal_frame(cli.tx, 0, 0, pt, 6, f[0], sizeof(f[0]), &n[0]), 0);
		assert_int_equal(rsec_seal_open(&srv, f[0], n[0], &h, out, sizeof(out)), 0);
		assert_int_equal(h.seq, 3);
		rsec_seal_stats(srv.rx, &st);
		assert_int_equal(st.opened, 4);
		pair_free(&cli, &srv);
	}
}

static void make_cert(EVP_PKEY **pkey, X509 **cert)
{
	*pkey = EVP_EC_gen("P-256");
	assert_non_null(*pkey);
	X509 *x = X509_new();
	assert_non_null(x);
	assert_int_equal(X509_set_version(x, 2), 1);
	assert_int_equal(ASN1_INTEGER_set(X509_get_serialNumber(x), 1), 1);
	assert_non_null(X509_gmtime_adj(X509_getm_notBefore(x), -60));
	assert_non_null(X509_gmtime_adj(X509_getm_notAfter(x), 3600));
	X509_NAME *name = X509_get_subject_name(x);
	assert_int_equal(X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"seal-test", -1,
						    -1, 0), 1);
	assert_int_equal(X509_set_issuer_name(x, name), 1);
	assert_int_equal(X509_set_pubkey(x, *pkey), 1);
	assert_true(X509_sign(x, *pkey, EVP_sha256()) > 0);
	*cert = x;
}

static void tls_pair(SSL **cli, SSL **srv, int max_version)
{
	EVP_PKEY *pkey;
	X509 *cert;
	make_cert(&pkey, &cert);
	SSL_CTX *sctx = SSL_CTX_new(TLS_server_method()), *cctx = SSL_CTX_new(TLS_client_method());
	assert_non_null(sctx);
	assert_non_null(cctx);
	assert_int_equal(SSL_CTX_use_certificate(sctx, cert), 1);
	assert_int_equal(SSL_CTX_use_PrivateKey(sctx, pkey), 1);
	assert_int_equal(SSL_CTX_set_max_proto_version(sctx, max_version), 1);
	/* The client trusts exactly this self-signed certificate. */
	assert_int_equal(X509_STORE_add_cert(SSL_CTX_get_cert_store(cctx), cert), 1);
	SSL_CTX_set_verify(cctx, SSL_VERIFY_PEER, NULL);
	*cli = SSL_new(cctx);
	*srv = SSL_new(sctx);
	assert_non_null(*cli);
	assert_non_null(*srv);
	SSL_CTX_free(sctx);
	SSL_CTX_free(cctx);
	X509_free(cert);
	EVP_PKEY_free(pkey);
	BIO *bc, *bs;
	assert_int_equal(BIO_new_bio_pair(&bc, 0, &bs, 0), 1);
	SSL_set_bio(*cli, bc, bc);
	SSL_set_bio(*srv, bs, bs);
	SSL_set_connect_state(*cli);
	SSL_set_accept_state(*srv);
	int done_c = 0, done_s = 0;
	for (int round = 0; round < 100 && !(done_c && done_s); round++) {
		if (!done_c) {
			int r = SSL_do_handshake(*cli);
			done_c = r == 1;
			assert_true(done_c || SSL_get_error(*cli, r) == SSL_ERROR_WANT_READ);
		}
		if (!done_s) {
			int r = SSL_do_handshake(*srv);
			done_s = r == 1;
			assert_true(done_s || SSL_get_error(*srv, r) == SSL_ERROR_WANT_READ);
		}
	}
	assert_true(done_c && done_s);
	assert_int_equal(SSL_get_verify_result(*cli), X509_V_OK);
}

/* A frame sealed by tx does not open at rx: their keys differ. */
static void expect_foreign(struct rsec_seal_dir *tx, struct rsec_seal_dir *rx)
{
	uint8_t frame[RSEC_SEAL_OVERHEAD + 1], out[1];
	size_t flen;
	struct rsec_seal_hdr h;
	assert_int_equal(rsec_seal_frame(tx, 0, 0, (const uint8_t *)"z", 1, frame, sizeof(frame), &flen), 0);
	assert_int_equal(rsec_open_frame(rx, frame, flen, &h, out, sizeof(out)), RSEC_E_MAC);
}

static void tls13_exporter_interoperates(void **state)
{
	(void)state;
	SSL *c, *s;
	tls_pair(&c, &s, TLS1_3_VERSION);
	assert_int_equal(SSL_version(c), TLS1_3_VERSION);
	for (size_t a = 0; a < 2; a++) {
		struct rsec_seal cli = { 0 }, srv = { 0 };
		/* Role must match the SSL object. */
		assert_int_equal(rsec_seal_from_tls(&cli, c, true, algs[a], 0, 0), RSEC_E_INVAL);
		assert_int_equal(rsec_seal_from_tls(&cli, c, false, algs[a], 0, 0), 0);
		assert_int_equal(rsec_seal_from_tls(&srv, s, true, algs[a], 0, 0), 0);
		check_roundtrip(cli.tx, srv.rx, 1000, RSEC_SEAL_FLAG_FIRST);
		check_roundtrip(srv.tx, cli.rx, 1000, RSEC_SEAL_FLAG_LAST);
		uint8_t m1[32], m2[32];
		assert_int_equal(rsec_seal_data_mac(&cli, true, 1, 2, (const uint8_t *)"x", 1, m1), 0);
		assert_int_equal(rsec_seal_data_mac(&srv, true, 1, 2, (const uint8_t *)"x", 1, m2), 0);
		assert_true(rsec_seal_mac_equal(m1, m2));
		rsec_seal_free(&cli);
		rsec_seal_free(&srv);
	}
	/* A different session yields different keys. */
	SSL *c2, *s2;
	tls_pair(&c2, &s2, TLS1_3_VERSION);
	struct rsec_seal a = { 0 }, b = { 0 };
	assert_int_equal(rsec_seal_from_tls(&a, c, false, RSEC_AEAD_AES256GCM, 0, 0), 0);
	assert_int_equal(rsec_seal_from_tls(&b, s2, true, RSEC_AEAD_AES256GCM, 0, 0), 0);
	expect_foreign(a.tx, b.rx);
	rsec_seal_free(&a);
	rsec_seal_free(&b);
	/* Each lane of one session has keys of its own; both ends agree on them. */
	struct rsec_seal l0 = { 0 }, l1 = { 0 }, peer1 = { 0 };
	assert_int_equal(rsec_seal_from_tls(&l0, c, false, RSEC_AEAD_AES256GCM, 0, 0), 0);
	assert_int_equal(rsec_seal_from_tls(&l1, c, false, RSEC_AEAD_AES256GCM, 1, 0), 0);
	assert_int_equal(rsec_seal_from_tls(&peer1, s, true, RSEC_AEAD_AES256GCM, 1, 0), 0);
	check_roundtrip(l1.tx, peer1.rx, 100, RSEC_SEAL_FLAG_FIRST);
	expect_foreign(l0.tx, peer1.rx);
	uint8_t k0[32], k1[32];
	assert_int_equal(rsec_seal_data_mac(&l0, true, 1, 2, (const uint8_t *)"x", 1, k0), 0);
	assert_int_equal(rsec_seal_data_mac(&l1, true, 1, 2, (const uint8_t *)"x", 1, k1), 0);
	assert_false(rsec_seal_mac_equal(k0, k1));
	rsec_seal_free(&l0);
	rsec_seal_free(&l1);
	rsec_seal_free(&peer1);
	SSL_free(c);
	SSL_free(s);
	SSL_free(c2);
	SSL_free(s2);
}

/* Each epoch of a lane (a rebuilt data path) has keys of its own; both ends agree on them. */
static void epochs_have_keys_of_their_own(void **state)
{
	(void)state;
	SSL *c, *s;
	tls_pair(&c, &s, TLS1_3_VERSION);
	struct rsec_seal e1 = { 0 }, e1peer = { 0 }, l1e1 = { 0 }, e0 = { 0 };
	assert_int_equal(rsec_seal_from_tls(&e0, s, true, RSEC_AEAD_AES256GCM, 0, 0), 0);
	assert_int_equal(rsec_seal_from_tls(&e1, c, false, RSEC_AEAD_AES256GCM, 0, 1), 0);
	assert_int_equal(rsec_seal_from_tls(&e1peer, s, true, RSEC_AEAD_AES256GCM, 0, 1), 0);
	assert_int_equal(rsec_seal_from_tls(&l1e1, s, true, RSEC_AEAD_AES256GCM, 1, 1), 0);
	check_roundtrip(e1.tx, e1peer.rx, 100, RSEC_SEAL_FLAG_FIRST);
	expect_foreign(e1.tx, e0.rx);
	expect_foreign(e1.tx, l1e1.rx);
	rsec_seal_free(&e0);
	rsec_seal_free(&e1);
	rsec_seal_free(&e1peer);
	rsec_seal_free(&l1e1);
	SSL_free(c);
	SSL_free(s);
}

static void tls12_is_refused(void **state)
{
	(void)state;
	SSL *c, *s;
	tls_pair(&c, &s, TLS1_2_VERSION);
	assert_int_equal(SSL_version(c), TLS1_2_VERSION);
	struct rsec_seal cli = { 0 };
	assert_int_equal(rsec_seal_from_tls(&cli, c, false, RSEC_AEAD_AES256GCM, 0, 0), RSEC_E_INVAL);
	assert_null(cli.tx);
	SSL_free(c);
	SSL_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(roundtrip_both_algs_all_sizes),
		cmocka_unit_test(frame_matches_spec),
		cmocka_unit_test(directions_are_distinct),
		cmocka_unit_test(tampering_any_byte_is_mac_failure),
		cmocka_unit_test(replay_and_reorder_are_seq_errors),
		cmocka_unit_test(wrong_key_or_alg_is_mac_failure),
		cmocka_unit_test(truncated_and_malformed_are_proto),
		cmocka_unit_test(sequence_space_never_wraps),
		cmocka_unit_test(aes_gcm_usage_limit),
		cmocka_unit_test(bad_arguments),
		cmocka_unit_test(data_mac),
		cmocka_unit_test(recover_own_frames),
		cmocka_unit_test(rekey_switches_without_loss),
		cmocka_unit_test(tls13_exporter_interoperates),
		cmocka_unit_test(epochs_have_keys_of_their_own),
		cmocka_unit_test(tls12_is_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
