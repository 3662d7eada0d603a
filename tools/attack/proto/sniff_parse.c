/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "sniff_parse.h"

enum {
	ETH_HDR_LEN = 14,
	VLAN_TAG_LEN = 4,
	SLL_HDR_LEN = 16,
	SLL2_HDR_LEN = 20,
	ETHERTYPE_IPV4 = 0x0800,
	ETHERTYPE_VLAN = 0x8100,
	ETHERTYPE_QINQ = 0x88a8,
	IPV4_MIN_HDR = 20,
	UDP_HDR_LEN = 8,
	TCP_MIN_HDR = 20,
	IPPROTO_TCP_NUM = 6,
	IPPROTO_UDP_NUM = 17,
};

/* Callers check the length first. */
static uint16_t be16_at(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t be32_at(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static RSEC_MUST_CHECK int parse_udp(const uint8_t *l4, size_t len, struct sniff_frame *f)
{
	uint16_t ulen;

	RSEC_ENSURE(len >= UDP_HDR_LEN, RSEC_E_PROTO);
	ulen = be16_at(l4 + 4);
	RSEC_ENSURE(ulen >= UDP_HDR_LEN && ulen <= len, RSEC_E_PROTO);
	f->kind = SNIFF_UDP;
	f->sport = be16_at(l4);
	f->dport = be16_at(l4 + 2);
	f->payload = l4 + UDP_HDR_LEN;
	f->payload_len = ulen - UDP_HDR_LEN;
	return 0;
}

static RSEC_MUST_CHECK int parse_tcp(const uint8_t *l4, size_t len, struct sniff_frame *f)
{
	size_t hdr;

	RSEC_ENSURE(len >= TCP_MIN_HDR, RSEC_E_PROTO);
	hdr = (size_t)(l4[12] >> 4) * 4;
	RSEC_ENSURE(hdr >= TCP_MIN_HDR && hdr <= len, RSEC_E_PROTO);
	f->kind = SNIFF_TCP;
	f->sport = be16_at(l4);
	f->dport = be16_at(l4 + 2);
	f->seq = be32_at(l4 + 4);
	f->tcp_flags = l4[13] & (SNIFF_TCP_FIN | SNIFF_TCP_SYN | SNIFF_TCP_RST);
	f->payload = l4 + hdr;
	f->payload_len = len - hdr;
	return 0;
}

static RSEC_MUST_CHECK int parse_ipv4(const uint8_t *p, size_t len, struct sniff_frame *f)
{
	size_t hdr, total;
	uint16_t frag;

	RSEC_ENSURE(len >= IPV4_MIN_HDR, RSEC_E_PROTO);
	RSEC_ENSURE(p[0] >> 4 == 4, RSEC_E_PROTO);
	hdr = (size_t)(p[0] & 0x0f) * 4;
	total = be16_at(p + 2);
	RSEC_ENSURE(hdr >= IPV4_MIN_HDR && total >= hdr && total <= len, RSEC_E_PROTO);
	f->src = be32_at(p + 12);
	f->dst = be32_at(p + 16);
	f->ip = p;
	f->ip_len = total;
	frag = be16_at(p + 6);
	if (frag & 0x3fff) { /* MF or an offset */
		f->kind = SNIFF_FRAGMENT;
		return 0;
	}
	switch (p[9]) {
	case IPPROTO_UDP_NUM:
		return parse_udp(p + hdr, total - hdr, f);
	case IPPROTO_TCP_NUM:
		return parse_tcp(p + hdr, total - hdr, f);
	default:
		f->kind = SNIFF_OTHER;
		return 0;
	}
}

int sniff_frame_parse(enum sniff_link link, const uint8_t *buf, size_t len, struct sniff_frame *f)
{
	size_t off;
	uint16_t type;

	RSEC_ENSURE(buf != NULL && f != NULL, RSEC_E_PROTO);
	memset(f, 0, sizeof(*f));
	f->kind = SNIFF_OTHER;
	switch (link) {
	case SNIFF_LINK_ETHERNET:
		RSEC_ENSURE(len >= ETH_HDR_LEN, RSEC_E_PROTO);
		type = be16_at(buf + 12);
		off = ETH_HDR_LEN;
		for (int tags = 0; tags < 2 && (type == ETHERTYPE_VLAN || type == ETHERTYPE_QINQ); tags++) {
			RSEC_ENSURE(len >= off + VLAN_TAG_LEN, RSEC_E_PROTO);
			type = be16_at(buf + off + 2);
			off += VLAN_TAG_LEN;
		}
		break;
	case SNIFF_LINK_SLL:
		RSEC_ENSURE(len >= SLL_HDR_LEN, RSEC_E_PROTO);
		type = be16_at(buf + 14);
		off = SLL_HDR_LEN;
		break;
	case SNIFF_LINK_SLL2:
		RSEC_ENSURE(len >= SLL2_HDR_LEN, RSEC_E_PROTO);
		type = be16_at(buf);
		off = SLL2_HDR_LEN;
		break;
	case SNIFF_LINK_RAW:
		RSEC_ENSURE(len >= 1, RSEC_E_PROTO);
		if (buf[0] >> 4 == 6)
			return 0; /* IPv6: not decoded */
		type = ETHERTYPE_IPV4;
		off = 0;
		break;
	default:
		return RSEC_E_PROTO;
	}
	if (type != ETHERTYPE_IPV4)
		return 0;
	return parse_ipv4(buf + off, len - off, f);
}

const char *sniff_format_name(enum sniff_format f)
{
	switch (f) {
	case SNIFF_FMT_PINGPONG:
		return "ibv_rc_pingpong";
	case SNIFF_FMT_PERFTEST:
		return "perftest";
	case SNIFF_FMT_NAIVE:
		return "naive-victim";
	default:
		return "unknown";
	}
}

/*
 * A text cursor with a sticky verdict, so that each format reads like its
 * schema: once a field fails (NO) or the bytes run out (MORE), every later
 * take_* does nothing.
 */
enum { TEXT_OK = 0, TEXT_MORE = 1, TEXT_NO = 2 };

struct text {
	const uint8_t *p;
	size_t len, pos;
	int verdict;
};

static void take_lit(struct text *t, const char *lit)
{
	for (; t->verdict == TEXT_OK && *lit; lit++) {
		if (t->pos == t->len)
			t->verdict = TEXT_MORE;
		else if (t->p[t->pos++] != (uint8_t)*lit)
			t->verdict = TEXT_NO;
	}
}

/* The terminating NUL of a C string written with its terminator. */
static void take_nul(struct text *t)
{
	if (t->verdict != TEXT_OK)
		return;
	if (t->pos == t->len)
		t->verdict = TEXT_MORE;
	else if (t->p[t->pos++] != 0)
		t->verdict = TEXT_NO;
}

static int lower_hex(uint8_t c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1; /* printf's %x is lower case: nothing else fits the formats */
}

/* Exactly n (1..16) lower-case hex digits. */
static void take_hex(struct text *t, unsigned n, uint64_t *v)
{
	*v = 0;
	for (unsigned i = 0; i < n && t->verdict == TEXT_OK; i++) {
		int d;
		if (t->pos == t->len) {
			t->verdict = TEXT_MORE;
			break;
		}
		d = lower_hex(t->p[t->pos++]);
		if (d < 0)
			t->verdict = TEXT_NO;
		*v = *v << 4 | (uint64_t)(d & 0xf);
	}
}

/* A GID as 32 hex digits (byte order as stored), or as 16 "hh:" groups. */
static void take_gid(struct text *t, uint8_t gid[static 16], bool colons)
{
	uint64_t b;

	for (int i = 0; i < 16 && t->verdict == TEXT_OK; i++) {
		take_hex(t, 2, &b);
		if (colons)
			take_lit(t, ":");
		gid[i] = (uint8_t)b;
	}
}

/* 1..10 decimal digits up to UINT32_MAX, ended by term (which is consumed). */
static void take_dec_u32(struct text *t, uint8_t term, uint32_t *v)
{
	uint64_t acc = 0;
	unsigned digits = 0;

	*v = 0;
	while (t->verdict == TEXT_OK) {
		uint8_t c;
		if (t->pos == t->len) {
			t->verdict = TEXT_MORE;
			return;
		}
		c = t->p[t->pos++];
		if (c == term && digits > 0)
			break;
		if (c < '0' || c > '9' || ++digits > 10 || (acc = acc * 10 + (c - '0')) > UINT32_MAX)
			t->verdict = TEXT_NO;
	}
	*v = (uint32_t)acc;
}

static int text_result(const struct text *t)
{
	if (t->verdict == TEXT_MORE)
		return 0;
	if (t->verdict == TEXT_NO)
		return RSEC_E_PROTO;
	return (int)t->pos;
}

/* Observed on the fabric: the 51 characters and their NUL, once each way, then "done\0". */
static int parse_pingpong(const uint8_t *buf, size_t len, struct sniff_params *out)
{
	struct text t = { .p = buf, .len = len };
	uint64_t lid, qpn, psn;

	take_hex(&t, 4, &lid);
	take_lit(&t, ":");
	take_hex(&t, 6, &qpn);
	take_lit(&t, ":");
	take_hex(&t, 6, &psn);
	take_lit(&t, ":");
	take_gid(&t, out->gid, false);
	take_nul(&t);
	out->format = SNIFF_FMT_PINGPONG;
	out->lid = (uint16_t)lid;
	out->qpn = (uint32_t)qpn;
	out->psn = (uint32_t)psn;
	return text_result(&t);
}

/*
 * Observed on the fabric (perftest 4.5, ib_write_bw and ib_send_bw): 108 bytes
 * with the NUL, after a version string and a few binary words, repeated at
 * every synchronisation. Fields 2 and 10 (0001 and 00000000 in every run) are
 * read but not interpreted. ib_send_bw sends rkey 0.
 */
static int parse_perftest(const uint8_t *buf, size_t len, struct sniff_params *out)
{
	struct text t = { .p = buf, .len = len };
	uint64_t lid, unused, qpn, psn, rkey;

	take_hex(&t, 4, &lid);
	take_lit(&t, ":");
	take_hex(&t, 4, &unused);
	take_lit(&t, ":");
	take_hex(&t, 6, &qpn);
	take_lit(&t, ":");
	take_hex(&t, 6, &psn);
	take_lit(&t, ":");
	take_hex(&t, 8, &rkey);
	take_lit(&t, ":");
	take_hex(&t, 16, &out->va);
	take_lit(&t, ":");
	take_gid(&t, out->gid, true);
	take_hex(&t, 8, &unused);
	take_lit(&t, ":");
	take_nul(&t);
	out->format = SNIFF_FMT_PERFTEST;
	out->lid = (uint16_t)lid;
	out->qpn = (uint32_t)qpn;
	out->psn = (uint32_t)psn;
	out->has_rkey = true;
	out->rkey = (uint32_t)rkey;
	return text_result(&t);
}

/* tools/attack/naive_victim.c: one line each way. */
static int parse_naive(const uint8_t *buf, size_t len, struct sniff_params *out)
{
	struct text t = { .p = buf, .len = len };
	uint64_t qpn, psn, rkey;

	take_lit(&t, "NAIVE qpn=");
	take_hex(&t, 6, &qpn);
	take_lit(&t, " psn=");
	take_hex(&t, 6, &psn);
	take_lit(&t, " gid=");
	take_gid(&t, out->gid, false);
	take_lit(&t, " rkey=");
	take_hex(&t, 8, &rkey);
	take_lit(&t, " addr=");
	take_hex(&t, 16, &out->va);
	take_lit(&t, " len=");
	take_dec_u32(&t, '\n', &out->len);
	out->format = SNIFF_FMT_NAIVE;
	out->qpn = (uint32_t)qpn;
	out->psn = (uint32_t)psn;
	out->has_rkey = true;
	out->rkey = (uint32_t)rkey;
	out->has_len = true;
	return text_result(&t);
}

enum { LID_HEX = 4 }; /* "LLLL:" opens the pingpong and perftest messages */

typedef int (*parse_fn)(const uint8_t *buf, size_t len, struct sniff_params *out);

/* The first of n parsers to find a message; else 0 if one wants more bytes, else RSEC_E_PROTO. */
static int parse_first(const parse_fn *parsers, size_t n, const uint8_t *buf, size_t len,
		       struct sniff_params *out)
{
	bool more = false;

	for (size_t i = 0; i < n; i++) {
		struct sniff_params p;
		int rc;

		memset(&p, 0, sizeof(p));
		rc = parsers[i](buf, len, &p);
		if (rc > 0) {
			*out = p;
			return rc;
		}
		more |= rc == 0;
	}
	return more ? 0 : RSEC_E_PROTO;
}

/*
 * Called at every offset of a stream, most of which open no message, so the
 * opening picks the parsers: the naive victim's line opens with 'N', the two
 * others with the same "LLLL:" (a LID), and a byte that breaks that opening
 * would break every parser still in the running. The verdict is the one the
 * three parsers in turn would give.
 */
int sniff_exchange_parse(const uint8_t *buf, size_t len, struct sniff_params *out)
{
	static const parse_fn naive[] = { parse_naive };
	static const parse_fn lid_first[] = { parse_pingpong, parse_perftest };
	struct text t;
	uint64_t lid;

	RSEC_ENSURE(buf != NULL && out != NULL, RSEC_E_PROTO);
	if (len > 0 && buf[0] == 'N')
		return parse_first(naive, 1, buf, len, out);
	t = (struct text){ .p = buf, .len = len };
	take_hex(&t, LID_HEX, &lid);
	take_lit(&t, ":");
	if (t.verdict == TEXT_NO)
		return RSEC_E_PROTO;
	return parse_first(lid_first, 2, buf, len, out);
}

void sniff_scanner_reset(struct sniff_scanner *s)
{
	s->len = 0;
}

/* The first c in buf[from, len), or len if none; from itself when from >= len. */
static size_t find_byte(const uint8_t *buf, size_t len, size_t from, uint8_t c)
{
	const uint8_t *p;

	if (from >= len)
		return from;
	p = memchr(buf + from, c, len - from);
	return p ? (size_t)(p - buf) : len;
}

/*
 * Scan s->buf; keep only the tail from the first offset that may still start a message.
 * Messages open with 'N' or "LLLL:", so the offsets worth parsing are an 'N',
 * four bytes before a ':', and the last four bytes (an opening not complete
 * yet): sniff_exchange_parse turns every other one away. memchr finds the
 * next of each, and looks again only once pos has passed it.
 */
static size_t scan(struct sniff_scanner *s, sniff_found_fn found, void *arg)
{
	size_t pos = 0, count = 0, next_n = 0, next_colon = 0;

	while (pos < s->len) {
		struct sniff_params p;
		int n;

		if (next_n < pos)
			next_n = find_byte(s->buf, s->len, pos, 'N');
		if (next_colon < pos + LID_HEX)
			next_colon = find_byte(s->buf, s->len, pos + LID_HEX, ':');
		/* pos + LID_HEX <= next_colon <= max(pos + LID_HEX, s->len), so pos stays below s->len. */
		pos = next_n < next_colon - LID_HEX ? next_n : next_colon - LID_HEX;
		n = sniff_exchange_parse(s->buf + pos, s->len - pos, &p);
		if (n > 0) {
			found(arg, &p);
			count++;
			pos += (size_t)n;
		} else if (n == 0) {
			break;
		} else {
			pos++;
		}
	}
	memmove(s->buf, s->buf + pos, s->len - pos);
	s->len -= pos;
	return count;
}

size_t sniff_scanner_feed(struct sniff_scanner *s, const uint8_t *data, size_t n, sniff_found_fn found,
			  void *arg)
{
	size_t count = 0;

	while (n > 0) {
		size_t room = sizeof(s->buf) - s->len, take = n < room ? n : room;

		memcpy(s->buf + s->len, data, take);
		s->len += take;
		data += take;
		n -= take;
		count += scan(s, found, arg);
		/* A pending prefix is shorter than any message; this only trips on a bug. */
		if (s->len >= SNIFF_MSG_MAX)
			sniff_scanner_reset(s);
	}
	return count;
}
