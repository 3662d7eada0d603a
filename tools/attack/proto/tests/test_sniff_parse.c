/* SPDX-License-Identifier: MIT */
/*
 * sniff's bounded decoders against frames captured on the fabric's bridge
 * (tests/fabric/attack_sniff.sh's set-up): ibv_rc_pingpong's, perftest's and
 * the naive victim's plaintext exchanges in real Ethernet/IPv4/TCP frames,
 * an rdmasec RDMA WRITE; the same packets under other link layers; and every
 * way a header or a message can be cut short or bent.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "proto/sniff_parse.h"

/* Host 2 -> host 1:18515, ibv_rc_pingpong's message: QPN 0x11, PSN 0x5b2ff1. */
static const char frame_pingpong[] =
	"1ed2cf6b292f3a2b824bfcde080045000068d7e2400040064e110a4d00020a4d0001cb544853f27d7763"
	"6caa8195801801f614f700000101080a8089aaebe6e6961e303030303a3030303031313a356232666631"
	"3a303030303030303030303030303030303030303066666666306134643030303200";

/* Host 1:18515 -> host 2, ib_write_bw: QPN 0x12, PSN 0xf45ffd, rkey 0x3b7, VA 0x561836bd2000. */
static const char frame_perftest[] =
	"3a2b824bfcde1ed2cf6b292f0800450000a0861e400040069f9d0a4d00010a4d00024853b5f06c2c4d38"
	"4aadf50e801801fd152f00000101080a2db239afef36cabe303030303a303030313a3030303031323a66"
	"34356666643a30303030303362373a303030303536313833366264323030303a30303a30303a30303a30"
	"303a30303a30303a30303a30303a30303a30303a66663a66663a30613a34643a30303a30313a30303030"
	"303030303a00";

/* Host 3 -> host 2:18516, the naive victim's client line. */
static const char frame_naive[] =
	"3a2b824bfcdef22438794f200800450000a2184e400040060d6a0a4d00030a4d00029ca94854967c5fa6"
	"93cb05f5801801f6153300000101080ace48f1cfc557f6594e414956452071706e3d3030303033662070"
	"736e3d303030303030206769643d30303030303030303030303030303030303030306666666630613464"
	"3030303320726b65793d303030303038653920616464723d30303030353539323837623534346430206c"
	"656e3d343039360a";

/* Host 3 -> host 1, rdmasec-client's RDMA WRITE Only of "abc" through a grant. */
static const char frame_roce_write[] =
	"1ed2cf6b292ff22438794f200800450000402f5440004011f6bb0a4d00030a4d0001c3c912b7002c0000"
	"0a10ffff0000001380ddc86d000010428e3f3000080001e900000003616263005b1debf5";

static const char pingpong_msg[] = "0000:000011:5b2ff1:00000000000000000000ffff0a4d0002"; /* + NUL */
static const char naive_msg[] = "NAIVE qpn=00003f psn=000000 gid=00000000000000000000ffff0a4d0003 "
				"rkey=000008e9 addr=0000559287b544d0 len=4096\n";

static size_t unhex(const char *hex, uint8_t *out, size_t cap)
{
	size_t n = strlen(hex) / 2;

	assert_true(n <= cap);
	for (size_t i = 0; i < n; i++) {
		unsigned b;
		assert_int_equal(sscanf(hex + 2 * i, "%2x", &b), 1);
		out[i] = (uint8_t)b;
	}
	return n;
}

/* An Ethernet frame from the capture that must decode as TCP; returns its length. */
static size_t tcp_frame(const char *hex, uint8_t buf[256], struct sniff_frame *f)
{
	size_t n = unhex(hex, buf, 256);

	assert_int_equal(sniff_frame_parse(SNIFF_LINK_ETHERNET, buf, n, f), 0);
	assert_int_equal(f->kind, SNIFF_TCP);
	return n;
}

/*
 * The segment's payload is one whole message of len bytes, of format fmt,
 * whose GID is host 10.77.0.<host>'s IPv4-mapped address.
 */
static void one_message(const struct sniff_frame *f, size_t len, enum sniff_format fmt, uint8_t host,
			struct sniff_params *p)
{
	const uint8_t gid[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 77, 0, host };

	assert_int_equal(f->payload_len, len);
	assert_int_equal(sniff_exchange_parse(f->payload, f->payload_len, p), (int)len);
	assert_int_equal(p->format, fmt);
	assert_memory_equal(p->gid, gid, 16);
}

static void ethernet_tcp_pingpong(void **state)
{
	uint8_t buf[256];
	struct sniff_frame f;
	struct sniff_params p;
	size_t n = tcp_frame(frame_pingpong, buf, &f);

	(void)state;
	assert_int_equal(f.src, 0x0a4d0002);
	assert_int_equal(f.dst, 0x0a4d0001);
	assert_int_equal(f.sport, 52052);
	assert_int_equal(f.dport, 18515);
	assert_int_equal(f.seq, 0xf27d7763);
	assert_int_equal(f.tcp_flags, 0);
	assert_memory_equal(f.payload, pingpong_msg, sizeof(pingpong_msg));
	assert_int_equal(f.ip_len, n - 14);

	one_message(&f, sizeof(pingpong_msg), SNIFF_FMT_PINGPONG, 2, &p);
	assert_int_equal(p.lid, 0);
	assert_int_equal(p.qpn, 0x11);
	assert_int_equal(p.psn, 0x5b2ff1);
	assert_false(p.has_rkey);
	assert_string_equal(sniff_format_name(p.format), "ibv_rc_pingpong");
}

static void ethernet_tcp_perftest(void **state)
{
	uint8_t buf[256];
	struct sniff_frame f;
	struct sniff_params p;

	(void)state;
	tcp_frame(frame_perftest, buf, &f);
	assert_int_equal(f.sport, 18515);
	one_message(&f, 108, SNIFF_FMT_PERFTEST, 1, &p);
	assert_int_equal(p.qpn, 0x12);
	assert_int_equal(p.psn, 0xf45ffd);
	assert_true(p.has_rkey);
	assert_int_equal(p.rkey, 0x3b7);
	assert_int_equal(p.va, 0x561836bd2000ull);
	assert_false(p.has_len);
}

static void ethernet_tcp_naive(void **state)
{
	uint8_t buf[256];
	struct sniff_frame f;
	struct sniff_params p;

	(void)state;
	tcp_frame(frame_naive, buf, &f);
	assert_int_equal(f.dport, 18516);
	one_message(&f, strlen(naive_msg), SNIFF_FMT_NAIVE, 3, &p);
	assert_int_equal(p.qpn, 0x3f);
	assert_int_equal(p.psn, 0);
	assert_int_equal(p.rkey, 0x8e9);
	assert_int_equal(p.va, 0x559287b544d0ull);
	assert_true(p.has_len);
	assert_int_equal(p.len, 4096);
}

static void ethernet_udp_roce(void **state)
{
	uint8_t buf[128];
	size_t n = unhex(frame_roce_write, buf, sizeof(buf));
	struct sniff_frame f;

	(void)state;
	assert_int_equal(sniff_frame_parse(SNIFF_LINK_ETHERNET, buf, n, &f), 0);
	assert_int_equal(f.kind, SNIFF_UDP);
	assert_int_equal(f.dport, 4791);
	assert_int_equal(f.src, 0x0a4d0003);
	assert_int_equal(f.ip_len, 64);
	assert_ptr_equal(f.ip, buf + 14);
	assert_int_equal(f.payload_len, 64 - 28);
}

/* The same IPv4 packet behind each link layer; Ethernet padding is trimmed. */
static void other_link_layers(void **state)
{
	uint8_t eth[128], frame[160];
	size_t n = unhex(frame_roce_write, eth, sizeof(eth)), ip = n - 14;
	struct sniff_frame f;

	(void)state;
	/* 802.1Q tag, then Q-in-Q */
	memcpy(frame, eth, 12);
	memcpy(frame + 12, "\x81\x00\x00\x05", 4);
	memcpy(frame + 16, eth + 12, n - 12);
	assert_int_equal(sniff_frame_parse(SNIFF_LINK_ETHERNET, frame, n + 4, &f), 0);
	assert_int_equal(f.kind, SNIFF_UDP);
	assert_int_equal(f.ip_len, ip);
	memcpy(frame, eth, 12);
	memcpy(frame + 12, "\x88\xa8\x00\x05\x81\x00\x00\x06", 8);
	memcpy(frame + 20, eth + 12, n - 12);
	assert_int_equal(sniff_frame_parse(SNIFF_LINK_ETHERNET, frame, n + 8, &f), 0);
	assert_int_equal(f.kind, SNIFF_UDP);

	/* Linux cooked v1: protocol at offset 14 */
	memset(frame, 0, 16);
	frame[14] = 0x08;
	memcpy(frame + 16, eth + 14, ip);
	assert_int_equal(sniff_frame_parse(SNIFF_LINK_SLL, frame, 16 + ip, &f), 0);
	assert_int_equal(f.kind, SNIFF_UDP);
	assert_int_equal(f.ip_len, ip);
	/* Linux cooked v2: protocol first */
	memset(frame, 0, 20);
	frame[0] = 0x08;
	memcpy(frame + 20, eth + 14, ip);
	assert_int_equal(sniff_frame_parse(SNIFF_LINK_SLL2, frame, 20 + ip, &f), 0);
	assert_int_equal(f.kind, SNIFF_UDP);
	/* raw IP */
	assert_int_equal(sniff_frame_parse(SNIFF_LINK_RAW, eth + 14, ip, &f), 0);
	assert_int_equal(f.kind, SNIFF_UDP);
	assert_int_equal(f.dport, 4791);

	/* Trailing link padding is not part of the packet. */
	memcpy(frame, eth, n);
	memset(frame + n, 0xee, 10);
	assert_int_equal(sniff_frame_parse(SNIFF_LINK_ETHERNET, frame, n + 10, &f), 0);
	assert_int_equal(f.ip_len, ip);
}

static void not_ipv4_or_fragment(void **state)
{
	uint8_t eth[128];
	size_t n = unhex(frame_roce_write, eth, sizeof(eth));
	static const uint8_t ipv6[40] = { 0x60 };
	struct sniff_frame f;

	(void)state;
	eth[12] = 0x08, eth[13] = 0x06; /* ARP */
	assert_int_equal(sniff_frame_parse(SNIFF_LINK_ETHERNET, eth, n, &f), 0);
	assert_int_equal(f.kind, SNIFF_OTHER);
	eth[12] = 0x08, eth[13] = 0x00;
	eth[14 + 9] = 1; /* ICMP */
	assert_int_equal(sniff_frame_parse(SNIFF_LINK_ETHERNET, eth, n, &f), 0);
	assert_int_equal(f.kind, SNIFF_OTHER);
	assert_int_equal(f.src, 0x0a4d0003);
	eth[14 + 9] = 17;
	eth[14 + 6] = 0x20; /* MF */
	assert_int_equal(sniff_frame_parse(SNIFF_LINK_ETHERNET, eth, n, &f), 0);
	assert_int_equal(f.kind, SNIFF_FRAGMENT);
	eth[14 + 6] = 0x40, eth[14 + 7] = 0x01; /* DF and an offset */
	assert_int_equal(sniff_frame_parse(SNIFF_LINK_ETHERNET, eth, n, &f), 0);
	assert_int_equal(f.kind, SNIFF_FRAGMENT);
	assert_int_equal(sniff_frame_parse(SNIFF_LINK_RAW, ipv6, sizeof(ipv6), &f), 0);
	assert_int_equal(f.kind, SNIFF_OTHER);
}

static void rejects_bad_headers(void **state)
{
	uint8_t eth[256], bad[256];
	size_t n = unhex(frame_roce_write, eth, sizeof(eth)), t = unhex(frame_pingpong, bad, sizeof(bad));
	uint8_t tcp[256];
	struct sniff_frame f;

	(void)state;
	memcpy(tcp, bad, t);
	/* Every truncation of a whole frame is malformed. */
	for (size_t len = 0; len < n; len++)
		assert_int_equal(sniff_frame_parse(SNIFF_LINK_ETHERNET, eth, len, &f), RSEC_E_PROTO);
	for (size_t len = 0; len < t; len++)
		assert_int_equal(sniff_frame_parse(SNIFF_LINK_ETHERNET, tcp, len, &f), RSEC_E_PROTO);
	assert_int_equal(sniff_frame_parse(SNIFF_LINK_SLL, eth, 15, &f), RSEC_E_PROTO);
	assert_int_equal(sniff_frame_parse(SNIFF_LINK_SLL2, eth, 19, &f), RSEC_E_PROTO);
	assert_int_equal(sniff_frame_parse(SNIFF_LINK_RAW, eth, 0, &f), RSEC_E_PROTO);
	assert_int_equal(sniff_frame_parse((enum sniff_link)99, eth, n, &f), RSEC_E_PROTO);
	assert_int_equal(sniff_frame_parse(SNIFF_LINK_ETHERNET, NULL, n, &f), RSEC_E_PROTO);

	memcpy(bad, eth, n);
	bad[14] = 0x44; /* IHL 4 */
	assert_int_equal(sniff_frame_parse(SNIFF_LINK_ETHERNET, bad, n, &f), RSEC_E_PROTO);
	bad[14] = 0x55; /* version 5 */
	assert_int_equal(sniff_frame_parse(SNIFF_LINK_ETHERNET, bad, n, &f), RSEC_E_PROTO);
	bad[14] = 0x4f; /* IHL 15: 60 bytes of header in a 64-byte packet leaves no UDP header */
	assert_int_equal(sniff_frame_parse(SNIFF_LINK_ETHERNET, bad, n, &f), RSEC_E_PROTO);
	memcpy(bad, eth, n);
	bad[14 + 3] = 0x41; /* total length one beyond the frame */
	assert_int_equal(sniff_frame_parse(SNIFF_LINK_ETHERNET, bad, n, &f), RSEC_E_PROTO);
	bad[14 + 2] = 0, bad[14 + 3] = 19; /* shorter than its header */
	assert_int_equal(sniff_frame_parse(SNIFF_LINK_ETHERNET, bad, n, &f), RSEC_E_PROTO);
	memcpy(bad, eth, n);
	bad[14 + 20 + 5] = 0x2d; /* UDP length beyond the IP packet */
	assert_int_equal(sniff_frame_parse(SNIFF_LINK_ETHERNET, bad, n, &f), RSEC_E_PROTO);
	bad[14 + 20 + 5] = 7; /* shorter than its header */
	assert_int_equal(sniff_frame_parse(SNIFF_LINK_ETHERNET, bad, n, &f), RSEC_E_PROTO);

	memcpy(bad, tcp, t);
	bad[14 + 20 + 12] = 0x40; /* TCP data offset 4 */
	assert_int_equal(sniff_frame_parse(SNIFF_LINK_ETHERNET, bad, t, &f), RSEC_E_PROTO);
	bad[14 + 20 + 12] = 0xf0; /* 60 bytes of header: fits (84 bytes of TCP) */
	assert_int_equal(sniff_frame_parse(SNIFF_LINK_ETHERNET, bad, t, &f), 0);
	assert_int_equal(f.payload_len, t - 14 - 20 - 60);
	bad[14 + 2] = 0, bad[14 + 3] = 20 + 40; /* ... but not in 40 */
	assert_int_equal(sniff_frame_parse(SNIFF_LINK_ETHERNET, bad, t, &f), RSEC_E_PROTO);
}

static void exchange_prefixes_need_more(void **state)
{
	uint8_t buf[256];
	size_t n = unhex(frame_perftest, buf, sizeof(buf));
	const uint8_t *perftest = buf + n - 108;
	struct sniff_params p;

	(void)state;
	for (size_t len = 0; len < sizeof(pingpong_msg); len++)
		assert_int_equal(sniff_exchange_parse((const uint8_t *)pingpong_msg, len, &p), 0);
	for (size_t len = 0; len < 108; len++)
		assert_int_equal(sniff_exchange_parse(perftest, len, &p), 0);
	for (size_t len = 0; len < strlen(naive_msg); len++)
		assert_int_equal(sniff_exchange_parse((const uint8_t *)naive_msg, len, &p), 0);
	/* Trailing bytes are not consumed. */
	memcpy(buf, pingpong_msg, sizeof(pingpong_msg));
	memcpy(buf + sizeof(pingpong_msg), "done", 5);
	assert_int_equal(sniff_exchange_parse(buf, sizeof(pingpong_msg) + 5, &p), (int)sizeof(pingpong_msg));
}

static int parse_edited(const char *msg, size_t len, size_t at, char c)
{
	uint8_t buf[SNIFF_MSG_MAX * 2];
	struct sniff_params p;

	memcpy(buf, msg, len);
	buf[at] = (uint8_t)c;
	return sniff_exchange_parse(buf, len, &p);
}

static void exchange_rejects_bent_messages(void **state)
{
	size_t pp = sizeof(pingpong_msg), nv = strlen(naive_msg);
	uint8_t perftest[256];
	size_t n = unhex(frame_perftest, perftest, sizeof(perftest));
	const char *pt = (const char *)perftest + n - 108;
	struct sniff_params p;

	(void)state;
	/* Every byte of each message matters: any other value breaks it. */
	for (size_t i = 0; i < pp; i++)
		assert_int_equal(parse_edited(pingpong_msg, pp, i, 'x'), RSEC_E_PROTO);
	for (size_t i = 0; i < 108; i++)
		assert_int_equal(parse_edited(pt, 108, i, 'x'), RSEC_E_PROTO);
	for (size_t i = 0; i < nv; i++)
		assert_int_equal(parse_edited(naive_msg, nv, i, 'x'), RSEC_E_PROTO);
	/* printf's %x is lower case */
	assert_int_equal(parse_edited(pingpong_msg, pp, 17, 'F'), RSEC_E_PROTO);
	assert_int_equal(parse_edited(pingpong_msg, pp, 17, 'f'), (int)pp);

	/* The naive victim's length: 1..10 digits, at most UINT32_MAX. */
	static const char *const lens[] = { "4294967295\n", "0\n", "4294967296\n", "12345678901\n", "\n", "-1\n" };
	static const int ok[] = { 1, 1, 0, 0, 0, 0 };
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		char line[SNIFF_MSG_MAX + 16];
		size_t head = strlen(naive_msg) - strlen("4096\n");
		memcpy(line, naive_msg, head);
		strcpy(line + head, lens[i]);
		int rc = sniff_exchange_parse((const uint8_t *)line, strlen(line), &p);
		if (ok[i])
			assert_int_equal(rc, (int)strlen(line));
		else
			assert_int_equal(rc, RSEC_E_PROTO);
	}
	assert_int_equal(p.len, 0);
	assert_int_equal(sniff_exchange_parse(NULL, 4, &p), RSEC_E_PROTO);
}

/* The opening decides which parsers run; each byte of it either fits a format or fails them all. */
static void exchange_openings(void **state)
{
	struct sniff_params p;

	(void)state;
	for (unsigned c = 0; c < 256; c++) {
		uint8_t one = (uint8_t)c;
		uint8_t lid[5] = { '0', 'a', '9', 'f', (uint8_t)c };
		uint8_t mid[5] = { 'b', '0', (uint8_t)c, '1', ':' };
		bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');

		assert_int_equal(sniff_exchange_parse(&one, 1, &p), hex || c == 'N' ? 0 : RSEC_E_PROTO);
		assert_int_equal(sniff_exchange_parse(lid, 4, &p), 0);
		assert_int_equal(sniff_exchange_parse(lid, 5, &p), c == ':' ? 0 : RSEC_E_PROTO);
		assert_int_equal(sniff_exchange_parse(mid, 5, &p), hex ? 0 : RSEC_E_PROTO);
	}
	assert_int_equal(sniff_exchange_parse((const uint8_t *)"", 0, &p), 0);
	assert_int_equal(sniff_exchange_parse((const uint8_t *)"NAIVE", 5, &p), 0);
	assert_int_equal(sniff_exchange_parse((const uint8_t *)"NAIVE:", 6, &p), RSEC_E_PROTO);
}

struct found {
	size_t n;
	struct sniff_params p[32];
};

static void collect(void *arg, const struct sniff_params *p)
{
	struct found *f = arg;

	if (f->n < sizeof(f->p) / sizeof(f->p[0]))
		f->p[f->n] = *p;
	f->n++;
}

static void scanner_finds_split_messages(void **state)
{
	uint8_t stream[512], perftest[256];
	size_t n = unhex(frame_perftest, perftest, sizeof(perftest)), len = 0;
	struct sniff_scanner s = { .len = 0 };
	struct found got = { 0 };

	(void)state;
	/* perftest's preamble (version string, binary words), two messages, junk, a pingpong message */
	memcpy(stream, "6.06\0\0\0\0\0\0\0\0\0\0\0\0\0\0\x10\0\0\0\0\x40" "3", 25);
	len = 25;
	memcpy(stream + len, perftest + n - 108, 108);
	len += 108;
	memcpy(stream + len, perftest + n - 108, 108);
	len += 108;
	memcpy(stream + len, "\x16\x03\x01\x02\x00garbage:00ab:", 18);
	len += 18;
	memcpy(stream + len, pingpong_msg, sizeof(pingpong_msg));
	len += sizeof(pingpong_msg);

	/* Byte by byte ... */
	for (size_t i = 0; i < len; i++)
		sniff_scanner_feed(&s, stream + i, 1, collect, &got);
	assert_int_equal(got.n, 3);
	assert_int_equal(got.p[0].format, SNIFF_FMT_PERFTEST);
	assert_int_equal(got.p[1].format, SNIFF_FMT_PERFTEST);
	assert_int_equal(got.p[2].format, SNIFF_FMT_PINGPONG);
	assert_int_equal(got.p[2].psn, 0x5b2ff1);
	assert_true(s.len < SNIFF_MSG_MAX);

	/* ... in one piece, and split at every offset. */
	for (size_t cut = 0; cut <= len; cut++) {
		memset(&got, 0, sizeof(got));
		sniff_scanner_reset(&s);
		assert_int_equal(sniff_scanner_feed(&s, stream, cut, collect, &got) +
				 sniff_scanner_feed(&s, stream + cut, len - cut, collect, &got), 3);
		assert_int_equal(got.n, 3);
	}

	/* A reset (a gap in the stream) drops the partial message. */
	memset(&got, 0, sizeof(got));
	sniff_scanner_reset(&s);
	sniff_scanner_feed(&s, (const uint8_t *)naive_msg, 40, collect, &got);
	sniff_scanner_reset(&s);
	sniff_scanner_feed(&s, (const uint8_t *)naive_msg + 40, strlen(naive_msg) - 40, collect, &got);
	assert_int_equal(got.n, 0);
}

static void scanner_stays_bounded(void **state)
{
	uint8_t noise[4096];
	struct sniff_scanner s = { .len = 0 };
	struct found got = { 0 };
	uint32_t x = 12345;

	(void)state;
	/* Hex digits and colons: the bytes most likely to look like a message start. */
	for (size_t i = 0; i < sizeof(noise); i++) {
		x = x * 1103515245u + 12345u;
		noise[i] = (uint8_t)"0123456789abcdef:"[(x >> 16) % 17];
	}
	sniff_scanner_feed(&s, noise, sizeof(noise), collect, &got);
	assert_true(s.len < SNIFF_MSG_MAX);
	assert_int_equal(got.n, 0);
}

static bool same_params(const struct sniff_params *a, const struct sniff_params *b)
{
	return a->format == b->format && a->lid == b->lid && a->qpn == b->qpn && a->psn == b->psn &&
	       !memcmp(a->gid, b->gid, sizeof(a->gid)) && a->has_rkey == b->has_rkey && a->rkey == b->rkey &&
	       a->va == b->va && a->has_len == b->has_len && a->len == b->len;
}

/*
 * The scanner parses only where a message can open: it must find exactly
 * what parsing at every offset finds, on streams of message pieces, hex
 * digits, colons and 'N's fed in pieces of any size.
 */
static void scanner_skips_only_what_fails(void **state)
{
	static const char bytes[] = "0123456789abcdef::N \n"; /* and its NUL, which ends two formats */
	uint8_t perftest[256], stream[1024];
	size_t n = unhex(frame_perftest, perftest, sizeof(perftest));
	const struct {
		const void *p;
		size_t len;
	} pieces[] = {
		{ pingpong_msg, sizeof(pingpong_msg) },
		{ perftest + n - 108, 108 },
		{ naive_msg, strlen(naive_msg) },
	};
	uint32_t x = 2026;
	size_t total = 0;

	(void)state;
	for (int round = 0; round < 2000; round++) {
		struct sniff_scanner s = { .len = 0 };
		struct found every = { 0 }, got = { 0 };
		size_t len = 0, pos = 0;

		while (len < sizeof(stream) - 128) {
			x = x * 1103515245u + 12345u;
			if ((x >> 16) % 16 == 0) {
				/* a whole message, or a piece of one */
				size_t k = (x >> 8) % 3;
				size_t cut = (x >> 4) % 4 ? pieces[k].len : (x >> 20) % pieces[k].len;
				memcpy(stream + len, pieces[k].p, cut);
				len += cut;
			} else {
				stream[len++] = (uint8_t)bytes[(x >> 20) % sizeof(bytes)];
			}
		}
		while (pos < len) {
			struct sniff_params p;
			int rc = sniff_exchange_parse(stream + pos, len - pos, &p);
			if (rc > 0) {
				collect(&every, &p);
				pos += (size_t)rc;
			} else if (rc == 0) {
				break;
			} else {
				pos++;
			}
		}
		for (pos = 0; pos < len;) {
			size_t piece;
			x = x * 1103515245u + 12345u;
			piece = 1 + (x >> 16) % 300;
			if (piece > len - pos)
				piece = len - pos;
			sniff_scanner_feed(&s, stream + pos, piece, collect, &got);
			pos += piece;
		}
		assert_int_equal(got.n, every.n);
		for (size_t i = 0; i < got.n && i < sizeof(got.p) / sizeof(got.p[0]); i++)
			assert_true(same_params(&got.p[i], &every.p[i]));
		total += got.n;
	}
	assert_true(total > 2000); /* the streams do carry messages */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ethernet_tcp_pingpong),
		cmocka_unit_test(ethernet_tcp_perftest),
		cmocka_unit_test(ethernet_tcp_naive),
		cmocka_unit_test(ethernet_udp_roce),
		cmocka_unit_test(other_link_layers),
		cmocka_unit_test(not_ipv4_or_fragment),
		cmocka_unit_test(rejects_bad_headers),
		cmocka_unit_test(exchange_prefixes_need_more),
		cmocka_unit_test(exchange_rejects_bent_messages),
		cmocka_unit_test(exchange_openings),
		cmocka_unit_test(scanner_finds_split_messages),
		cmocka_unit_test(scanner_stays_bounded),
		cmocka_unit_test(scanner_skips_only_what_fails),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
