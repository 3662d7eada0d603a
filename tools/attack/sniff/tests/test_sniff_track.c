/* SPDX-License-Identifier: MIT */
/*
 * sniff's tracker on synthetic captures: RoCEv2 frames made by the packet
 * builder (checked byte for byte against rxe in test_roce_packet) and TCP
 * segments carrying plaintext exchanges. Connections, PSN bookkeeping across
 * READs and wrap-around, RETH ranges, peer linking, exchange matching, the
 * rkey plaintext search, TCP reassembly and the tables' ceilings.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "sniff/sniff_track.h"

enum { A = 0x0a4d0002, B = 0x0a4d0001, QA = 0x11, QB = 0x22 };

static uint8_t frame[ROCE_MAX_PACKET + 64];

static void eth_header(uint8_t *f)
{
	memset(f, 0x02, 12);
	f[12] = 0x08;
	f[13] = 0x00;
}

static void feed_roce(struct sniff_state *s, uint32_t src, uint32_t dst, uint32_t dqpn, uint8_t opcode,
		      uint32_t psn, uint32_t rkey, uint64_t va, uint32_t len, size_t payload, bool corrupt)
{
	static const uint8_t data[ROCE_MAX_PAYLOAD];
	struct roce_pkt p = { .src_ip = src, .dst_ip = dst, .ttl = 64, .ip_id = 1, .frag_off = 0x4000,
			      .udp_sport = 49152, .opcode = opcode, .pkey = 0xffff, .dest_qp = dqpn,
			      .psn = psn, .reth_rkey = rkey, .reth_va = va, .reth_len = len,
			      .aeth = 0x1f000000, .payload = payload ? data : NULL, .payload_len = payload };
	size_t n;

	eth_header(frame);
	assert_int_equal(roce_pkt_build(&p, frame + 14, sizeof(frame) - 14, &n), 0);
	if (corrupt)
		frame[14 + n - 1] ^= 1;
	assert_int_equal(sniff_state_frame(s, SNIFF_LINK_ETHERNET, frame, 14 + n), 0);
}

static void feed_tcp(struct sniff_state *s, uint32_t src, uint16_t sport, uint32_t dst, uint16_t dport,
		     uint32_t seq, uint8_t flags, const void *payload, size_t len)
{
	uint8_t *ip = frame + 14, *tcp = ip + 20;
	size_t total = 20 + 20 + len;

	eth_header(frame);
	memset(ip, 0, 40);
	ip[0] = 0x45;
	ip[2] = (uint8_t)(total >> 8), ip[3] = (uint8_t)total;
	ip[8] = 64;
	ip[9] = 6;
	for (int i = 0; i < 4; i++) {
		ip[12 + i] = (uint8_t)(src >> (24 - 8 * i));
		ip[16 + i] = (uint8_t)(dst >> (24 - 8 * i));
	}
	tcp[0] = (uint8_t)(sport >> 8), tcp[1] = (uint8_t)sport;
	tcp[2] = (uint8_t)(dport >> 8), tcp[3] = (uint8_t)dport;
	for (int i = 0; i < 4; i++)
		tcp[4 + i] = (uint8_t)(seq >> (24 - 8 * i));
	tcp[12] = 0x50;
	tcp[13] = flags;
	if (len)
		memcpy(tcp + 20, payload, len);
	assert_int_equal(sniff_state_frame(s, SNIFF_LINK_ETHERNET, frame, 14 + total), 0);
}

static const struct sniff_conn *find_conn(const struct sniff_state *s, uint32_t src, uint32_t dst, uint32_t dqpn)
{
	for (size_t i = 0; i < s->nconns; i++)
		if (s->conns[i].src == src && s->conns[i].dst == dst && s->conns[i].dqpn == dqpn)
			return &s->conns[i];
	return NULL;
}

/* ibv_rc_pingpong's shape: a plaintext exchange, then SENDs and ACKs both ways. */
static void pingpong_exchange_matches_traffic(void **state)
{
	static const char from_a[] = "0000:000011:abcdef:00000000000000000000ffff0a4d0002";
	static const char from_b[] = "0000:000022:fffffe:00000000000000000000ffff0a4d0001";
	struct sniff_state s;
	const struct sniff_conn *ab, *ba;

	(void)state;
	assert_int_equal(sniff_state_init(&s), 0);
	feed_tcp(&s, A, 40000, B, 18515, 1000, SNIFF_TCP_SYN, NULL, 0);
	feed_tcp(&s, A, 40000, B, 18515, 1001, 0, from_a, sizeof(from_a));
	feed_tcp(&s, B, 18515, A, 40000, 5000, 0, from_b, sizeof(from_b));
	for (uint32_t i = 0; i < 3; i++) {
		feed_roce(&s, A, B, QB, ROCE_RC_SEND_ONLY, 0xabcdef + i, 0, 0, 0, 64, false);
		feed_roce(&s, B, A, QA, ROCE_RC_ACK, 0xabcdef + i, 0, 0, 0, 0, false);
		/* B's PSNs wrap: 0xfffffe, 0xffffff, 0 */
		feed_roce(&s, B, A, QA, ROCE_RC_SEND_ONLY, (0xfffffe + i) & 0xffffff, 0, 0, 0, 64, false);
		feed_roce(&s, A, B, QB, ROCE_RC_ACK, (0xfffffe + i) & 0xffffff, 0, 0, 0, 0, false);
	}
	feed_roce(&s, A, B, QB, ROCE_RC_SEND_ONLY, 0x123456, 0, 0, 0, 8, true); /* bad ICRC */
	sniff_state_finish(&s);

	assert_int_equal(s.st.roce, 13);
	assert_int_equal(s.st.icrc_bad, 1);
	assert_int_equal(s.nconns, 2);
	ab = find_conn(&s, A, B, QB);
	ba = find_conn(&s, B, A, QA);
	assert_non_null(ab);
	assert_non_null(ba);
	assert_int_equal(ab->packets, 6);
	assert_int_equal(ab->req.count, 3);
	assert_int_equal(ab->resp.count, 3);
	assert_int_equal(ab->opcodes[ROCE_RC_SEND_ONLY], 3);
	assert_int_equal(ab->opcodes[ROCE_RC_ACK], 3);
	assert_int_equal(ab->req.first, 0xabcdef);
	assert_int_equal(ab->req.max, 0xabcdf1);
	assert_int_equal(ab->next_psn, 0xabcdf2);
	assert_true(ab->has_peer);
	assert_int_equal(ab->peer_qpn, QA);
	assert_int_equal(ba->req.first, 0xfffffe);
	assert_int_equal(ba->req.max, 0);
	assert_int_equal(ba->next_psn, 1);
	assert_int_equal(ba->peer_qpn, QB);

	/* Each side's QPN was told in clear, by the side that owns it. */
	assert_int_equal(s.nex, 2);
	assert_true(ab->plaintext);
	assert_int_equal(s.ex[ab->exchange].src, B);
	assert_true(ba->plaintext);
	assert_int_equal(s.ex[ba->exchange].src, A);
	for (size_t i = 0; i < 2; i++) {
		assert_int_equal(s.ex[i].p.format, SNIFF_FMT_PINGPONG);
		assert_true(s.ex[i].qpn_seen);
		assert_true(s.ex[i].psn_seen);
		assert_true(s.ex[i].gid_is_src);
		assert_false(s.ex[i].rkey_seen);
	}
	assert_int_equal(s.streams[0].messages, 1);
	assert_false(s.streams[0].tls);
	sniff_state_free(&s);
}

/* RETH ranges per rkey, a READ's PSN span, and the rkey search in TCP payload. */
static void reth_ranges_and_reads(void **state)
{
	const uint32_t rk1 = 0x080001e9, rk2 = 0x000003b7, rk3 = 0x00000249;
	const uint64_t va = 0x10428e3f3000ull;
	char line[160];
	struct sniff_state s;
	const struct sniff_conn *ab;

	(void)state;
	assert_int_equal(sniff_state_init(&s), 0);
	/* rk1: a 3000-byte WRITE (First/Middle/Last), then a WRITE Only right after it. */
	feed_roce(&s, A, B, QB, ROCE_RC_WRITE_FIRST, 100, rk1, va, 3000, 1024, false);
	feed_roce(&s, A, B, QB, ROCE_RC_WRITE_MIDDLE, 101, 0, 0, 0, 1024, false);
	feed_roce(&s, A, B, QB, ROCE_RC_WRITE_LAST, 102, 0, 0, 0, 952, false);
	feed_roce(&s, A, B, QB, ROCE_RC_WRITE_ONLY, 103, rk1, va + 3000, 16, 16, false);
	/* rk2: a READ of 4000 bytes at another address; four responses use PSNs 104..107. */
	feed_roce(&s, A, B, QB, ROCE_RC_READ_REQUEST, 104, rk2, 0x7000, 4000, 0, false);
	feed_roce(&s, B, A, QA, ROCE_RC_READ_RESP_FIRST, 104, 0, 0, 0, 1024, false);
	feed_roce(&s, B, A, QA, ROCE_RC_READ_RESP_MIDDLE, 105, 0, 0, 0, 1024, false);
	feed_roce(&s, B, A, QA, ROCE_RC_READ_RESP_MIDDLE, 106, 0, 0, 0, 1024, false);
	feed_roce(&s, B, A, QA, ROCE_RC_READ_RESP_LAST, 107, 0, 0, 0, 928, false);
	/* rk3 and rk2 are told in plaintext (8 hex digits, and big-endian bytes); rk1 never. */
	snprintf(line, sizeof(line), "rkey=%08x", rk3);
	feed_tcp(&s, B, 7000, A, 7001, 1, 0, line, strlen(line));
	feed_tcp(&s, B, 7000, A, 7001, 1 + (uint32_t)strlen(line), 0, "\x00\x00\x03\xb7", 4);
	feed_roce(&s, A, B, QB, ROCE_RC_WRITE_ONLY, 108, rk3, 0x1000, 8, 8, false);
	sniff_state_finish(&s);

	ab = find_conn(&s, A, B, QB);
	assert_non_null(ab);
	assert_int_equal(ab->nranges, 3);
	assert_int_equal(ab->ranges[0].rkey, rk1);
	assert_int_equal(ab->ranges[0].va, va);
	assert_int_equal(ab->ranges[0].end, va + 3016);
	assert_int_equal(ab->ranges[0].reths, 2);
	assert_false(ab->ranges[0].in_plaintext);
	assert_int_equal(ab->ranges[1].rkey, rk2);
	assert_int_equal(ab->ranges[1].end - ab->ranges[1].va, 4000);
	assert_true(ab->ranges[1].in_plaintext);
	assert_true(ab->ranges[2].in_plaintext);
	assert_int_equal(ab->req.max, 108);
	assert_int_equal(ab->next_psn, 109);
	assert_false(ab->plaintext);
	assert_int_equal(s.nex, 0);
	sniff_state_free(&s);

	/* Without the trailing WRITE, the READ's responses set the next PSN. */
	assert_int_equal(sniff_state_init(&s), 0);
	feed_roce(&s, A, B, QB, ROCE_RC_READ_REQUEST, 0xfffffe, rk2, 0x7000, 4000, 0, false);
	for (uint32_t i = 0; i < 4; i++)
		feed_roce(&s, B, A, QA, i == 0 ? ROCE_RC_READ_RESP_FIRST : i == 3 ? ROCE_RC_READ_RESP_LAST
						     : ROCE_RC_READ_RESP_MIDDLE,
			  (0xfffffe + i) & 0xffffff, 0, 0, 0, i == 3 ? 928 : 1024, false);
	sniff_state_finish(&s);
	ab = find_conn(&s, A, B, QB);
	assert_non_null(ab);
	assert_true(ab->has_peer);
	assert_int_equal(ab->next_psn, 2);
	sniff_state_free(&s);
}

/* perftest and the naive victim tell an rkey and VA: both are checked against RETHs. */
static void exchange_rkey_and_va(void **state)
{
	static const char naive[] = "NAIVE qpn=000022 psn=000000 gid=00000000000000000000ffff0a4d0001 "
				    "rkey=000008e9 addr=0000559287b544d0 len=4096\n";
	struct sniff_state s;

	(void)state;
	assert_int_equal(sniff_state_init(&s), 0);
	feed_tcp(&s, B, 18516, A, 41000, 77, 0, naive, strlen(naive));
	feed_tcp(&s, B, 18516, A, 41000, 77, 0, naive, strlen(naive)); /* retransmitted: not counted twice */
	feed_roce(&s, A, B, QB, ROCE_RC_WRITE_ONLY, 0, 0x8e9, 0x559287b544d0ull + 100, 16, 16, false);
	feed_roce(&s, A, B, QB, ROCE_RC_WRITE_ONLY, 1, 0x8e9, 0x559287b544d0ull + 4090, 16, 16, false);
	sniff_state_finish(&s);
	assert_int_equal(s.nex, 1);
	assert_int_equal(s.ex[0].count, 1);
	assert_true(s.ex[0].qpn_seen);
	assert_false(s.ex[0].psn_seen); /* B sent no requests */
	assert_true(s.ex[0].rkey_seen);
	/* Two disjoint ranges: one inside the told buffer, one running past its end. */
	assert_true(s.ex[0].va_seen);
	assert_true(find_conn(&s, A, B, QB)->plaintext);
	assert_true(find_conn(&s, A, B, QB)->ranges[0].in_plaintext);
	sniff_state_free(&s);

	assert_int_equal(sniff_state_init(&s), 0);
	feed_tcp(&s, B, 18516, A, 41000, 77, 0, naive, strlen(naive));
	feed_roce(&s, A, B, QB, ROCE_RC_WRITE_ONLY, 0, 0x8e9, 0x559287b544d0ull + 4090, 16, 16, false);
	sniff_state_finish(&s);
	assert_true(s.ex[0].rkey_seen);
	assert_false(s.ex[0].va_seen);
	sniff_state_free(&s);
}

/* Segments out of order, overlapping or missing; TLS recognised by its first record. */
static void tcp_reassembly(void **state)
{
	static const char msg[] = "0000:000011:abcdef:00000000000000000000ffff0a4d0002";
	static const uint8_t hello[] = { 0x16, 0x03, 0x01, 0x00, 0x10 };
	struct sniff_state s;

	(void)state;
	assert_int_equal(sniff_state_init(&s), 0);
	/* Mid-stream start, split in three with an overlapping retransmission. */
	feed_tcp(&s, A, 1, B, 2, 0xfffffff0, 0, msg, 20);
	feed_tcp(&s, A, 1, B, 2, 0xfffffff0 + 10, 0, msg + 10, 20); /* bytes 10..29 */
	feed_tcp(&s, A, 1, B, 2, 0xfffffff0 + 30, 0, msg + 30, sizeof(msg) - 30);
	/* Another stream: a gap in the middle of a message loses it, the next one is found. */
	feed_tcp(&s, B, 2, A, 1, 500, 0, msg, 20);
	feed_tcp(&s, B, 2, A, 1, 530, 0, msg + 30, sizeof(msg) - 30);
	feed_tcp(&s, B, 2, A, 1, 530 + sizeof(msg) - 30, 0, msg, sizeof(msg));
	/* A TLS stream */
	feed_tcp(&s, A, 3, B, 7471, 9, SNIFF_TCP_SYN, NULL, 0);
	feed_tcp(&s, A, 3, B, 7471, 10, 0, hello, sizeof(hello));
	sniff_state_finish(&s);

	assert_int_equal(s.nstreams, 3);
	assert_int_equal(s.streams[0].messages, 1);
	assert_int_equal(s.streams[0].bytes, sizeof(msg));
	assert_int_equal(s.streams[0].gaps, 0);
	assert_int_equal(s.streams[1].messages, 1);
	assert_int_equal(s.streams[1].gaps, 1);
	assert_true(s.streams[2].tls);
	assert_int_equal(s.streams[2].messages, 0);
	assert_int_equal(s.nex, 2);
	sniff_state_free(&s);
}

static void ceilings_and_malformed(void **state)
{
	static uint8_t junk[60];
	struct sniff_state s;

	(void)state;
	assert_int_equal(sniff_state_init(&s), 0);
	for (uint32_t i = 0; i < SNIFF_MAX_RANGES + 5; i++)
		feed_roce(&s, A, B, QB, ROCE_RC_WRITE_ONLY, i, i, 0x100000 * i, 8, 8, false);
	assert_int_equal(s.conns[0].nranges, SNIFF_MAX_RANGES);
	assert_int_equal(s.conns[0].ranges_dropped, 5);
	for (uint32_t q = 1; q <= SNIFF_MAX_CONNS + 1; q++)
		feed_roce(&s, A, B, q, ROCE_RC_SEND_ONLY, 0, 0, 0, 0, 0, false);
	assert_int_equal(s.nconns, SNIFF_MAX_CONNS);
	assert_int_equal(s.st.untracked, 1); /* QB was already there: the last one did not fit */
	feed_roce(&s, A, B, QB, ROCE_RC_SEND_ONLY, 0, 0, 0, 0, 0, false);
	assert_int_equal(s.st.untracked, 1);

	/* A UDP 4791 datagram that is not a RoCEv2 packet; a frame cut short. */
	eth_header(junk);
	memcpy(junk + 14, "\x45\x00\x00\x2e\x00\x01\x00\x00\x40\x11\x00\x00\x0a\x4d\x00\x02\x0a\x4d\x00\x01"
			  "\xc0\x00\x12\xb7\x00\x1a\x00\x00", 28);
	junk[14 + 28] = 0x15; /* a reserved opcode */
	assert_int_equal(sniff_state_frame(&s, SNIFF_LINK_ETHERNET, junk, sizeof(junk)), 0);
	assert_int_equal(s.st.roce_malformed, 1);
	assert_int_equal(sniff_state_frame(&s, SNIFF_LINK_ETHERNET, junk, 20), 0);
	assert_int_equal(s.st.malformed, 1);
	sniff_state_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(pingpong_exchange_matches_traffic),
		cmocka_unit_test(reth_ranges_and_reads),
		cmocka_unit_test(exchange_rkey_and_va),
		cmocka_unit_test(tcp_reassembly),
		cmocka_unit_test(ceilings_and_malformed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
