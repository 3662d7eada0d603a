/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "roce_packet.h"

struct opcode_desc {
	const char *name;
	unsigned hdrs;
};

#define P ROCE_HDR_PAYLOAD
static const struct opcode_desc opcodes[] = {
	[ROCE_RC_SEND_FIRST] = { "RC SEND First", P },
	[ROCE_RC_SEND_MIDDLE] = { "RC SEND Middle", P },
	[ROCE_RC_SEND_LAST] = { "RC SEND Last", P },
	[ROCE_RC_SEND_LAST_IMM] = { "RC SEND Last with Immediate", ROCE_HDR_IMM | P },
	[ROCE_RC_SEND_ONLY] = { "RC SEND Only", P },
	[ROCE_RC_SEND_ONLY_IMM] = { "RC SEND Only with Immediate", ROCE_HDR_IMM | P },
	[ROCE_RC_WRITE_FIRST] = { "RC RDMA WRITE First", ROCE_HDR_RETH | P },
	[ROCE_RC_WRITE_MIDDLE] = { "RC RDMA WRITE Middle", P },
	[ROCE_RC_WRITE_LAST] = { "RC RDMA WRITE Last", P },
	[ROCE_RC_WRITE_LAST_IMM] = { "RC RDMA WRITE Last with Immediate", ROCE_HDR_IMM | P },
	[ROCE_RC_WRITE_ONLY] = { "RC RDMA WRITE Only", ROCE_HDR_RETH | P },
	[ROCE_RC_WRITE_ONLY_IMM] = { "RC RDMA WRITE Only with Immediate", ROCE_HDR_RETH | ROCE_HDR_IMM | P },
	[ROCE_RC_READ_REQUEST] = { "RC RDMA READ Request", ROCE_HDR_RETH },
	[ROCE_RC_READ_RESP_FIRST] = { "RC RDMA READ Response First", ROCE_HDR_AETH | P },
	[ROCE_RC_READ_RESP_MIDDLE] = { "RC RDMA READ Response Middle", P },
	[ROCE_RC_READ_RESP_LAST] = { "RC RDMA READ Response Last", ROCE_HDR_AETH | P },
	[ROCE_RC_READ_RESP_ONLY] = { "RC RDMA READ Response Only", ROCE_HDR_AETH | P },
	[ROCE_RC_ACK] = { "RC Acknowledge", ROCE_HDR_AETH },
	[ROCE_RC_ATOMIC_ACK] = { "RC ATOMIC Acknowledge", ROCE_HDR_AETH | ROCE_HDR_ATOMACK },
	[ROCE_RC_CMP_SWAP] = { "RC CmpSwap", ROCE_HDR_ATOMETH },
	[ROCE_RC_FETCH_ADD] = { "RC FetchAdd", ROCE_HDR_ATOMETH },
	[ROCE_RC_SEND_LAST_INV] = { "RC SEND Last with Invalidate", ROCE_HDR_IETH | P },
	[ROCE_RC_SEND_ONLY_INV] = { "RC SEND Only with Invalidate", ROCE_HDR_IETH | P },
	[ROCE_UD_SEND_ONLY] = { "UD SEND Only", ROCE_HDR_DETH | P },
	[ROCE_UD_SEND_ONLY_IMM] = { "UD SEND Only with Immediate", ROCE_HDR_DETH | ROCE_HDR_IMM | P },
	/* Its 16 reserved bytes travel as the payload. */
	[ROCE_CNP] = { "CNP", P },
};
#undef P

int roce_opcode_info(uint8_t opcode, unsigned *hdrs, const char **name)
{
	RSEC_ENSURE(opcode < sizeof(opcodes) / sizeof(opcodes[0]), RSEC_E_PROTO);
	RSEC_ENSURE(opcodes[opcode].name != NULL, RSEC_E_PROTO);
	if (hdrs)
		*hdrs = opcodes[opcode].hdrs;
	if (name)
		*name = opcodes[opcode].name;
	return 0;
}

static size_t ext_len(unsigned hdrs)
{
	size_t n = 0;

	if (hdrs & ROCE_HDR_RETH)
		n += ROCE_RETH_LEN;
	if (hdrs & ROCE_HDR_AETH)
		n += ROCE_AETH_LEN;
	if (hdrs & ROCE_HDR_DETH)
		n += ROCE_DETH_LEN;
	if (hdrs & (ROCE_HDR_IMM | ROCE_HDR_IETH))
		n += ROCE_IMM_LEN;
	if (hdrs & ROCE_HDR_ATOMETH)
		n += ROCE_ATOMETH_LEN;
	if (hdrs & ROCE_HDR_ATOMACK)
		n += ROCE_ATOMACK_LEN;
	return n;
}

uint32_t roce_crc32_update(uint32_t state, const uint8_t *p, size_t n)
{
	static uint32_t table[256];
	static int ready;

	if (!ready) {
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t c = i;
			for (int k = 0; k < 8; k++)
				c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
			table[i] = c;
		}
		ready = 1;
	}
	for (size_t i = 0; i < n; i++)
		state = table[(state ^ p[i]) & 0xff] ^ (state >> 8);
	return state;
}

int roce_icrc(const uint8_t *pkt, size_t len, uint32_t *icrc)
{
	enum { MASKED = ROCE_IPV4_LEN + ROCE_UDP_LEN + ROCE_BTH_LEN };
	static const uint8_t ones[8] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	uint8_t hdr[MASKED];
	uint32_t crc;

	RSEC_ENSURE_REF(pkt);
	RSEC_ENSURE_REF(icrc);
	RSEC_ENSURE(len >= MASKED, RSEC_E_INVAL);
	memcpy(hdr, pkt, MASKED);
	hdr[1] = 0xff;                            /* IPv4 TOS */
	hdr[8] = 0xff;                            /* TTL */
	hdr[10] = hdr[11] = 0xff;                 /* header checksum */
	hdr[ROCE_IPV4_LEN + 6] = 0xff;            /* UDP checksum */
	hdr[ROCE_IPV4_LEN + 7] = 0xff;
	hdr[ROCE_IPV4_LEN + ROCE_UDP_LEN + 4] = 0xff; /* BTH resv8a (FECN/BECN) */
	crc = roce_crc32_update(0xffffffffu, ones, sizeof(ones));
	crc = roce_crc32_update(crc, hdr, sizeof(hdr));
	crc = roce_crc32_update(crc, pkt + MASKED, len - MASKED);
	*icrc = ~crc;
	return 0;
}

/* A bounded big-endian writer: every put checks the room left. */
struct cursor {
	uint8_t *buf;
	const uint8_t *rbuf;
	size_t len;
	size_t pos;
};

static RSEC_MUST_CHECK int put_bytes(struct cursor *c, const void *p, size_t n)
{
	RSEC_ENSURE(n <= c->len - c->pos, RSEC_E_RANGE);
	if (n)
		memcpy(c->buf + c->pos, p, n);
	c->pos += n;
	return 0;
}

static RSEC_MUST_CHECK int put_u8(struct cursor *c, uint8_t v)
{
	return put_bytes(c, &v, 1);
}

static RSEC_MUST_CHECK int put_u16(struct cursor *c, uint16_t v)
{
	uint8_t b[2] = { (uint8_t)(v >> 8), (uint8_t)v };
	return put_bytes(c, b, sizeof(b));
}

static RSEC_MUST_CHECK int put_u32(struct cursor *c, uint32_t v)
{
	uint8_t b[4] = { (uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v };
	return put_bytes(c, b, sizeof(b));
}

static RSEC_MUST_CHECK int put_u64(struct cursor *c, uint64_t v)
{
	RSEC_GUARD(put_u32(c, (uint32_t)(v >> 32)));
	return put_u32(c, (uint32_t)v);
}

static RSEC_MUST_CHECK int get_bytes(struct cursor *c, const uint8_t **p, size_t n)
{
	RSEC_ENSURE(n <= c->len - c->pos, RSEC_E_PROTO);
	*p = c->rbuf + c->pos;
	c->pos += n;
	return 0;
}

static RSEC_MUST_CHECK int get_u8(struct cursor *c, uint8_t *v)
{
	const uint8_t *p;
	RSEC_GUARD(get_bytes(c, &p, 1));
	*v = p[0];
	return 0;
}

static RSEC_MUST_CHECK int get_u16(struct cursor *c, uint16_t *v)
{
	const uint8_t *p;
	RSEC_GUARD(get_bytes(c, &p, 2));
	*v = (uint16_t)(p[0] << 8 | p[1]);
	return 0;
}

static RSEC_MUST_CHECK int get_u32(struct cursor *c, uint32_t *v)
{
	const uint8_t *p;
	RSEC_GUARD(get_bytes(c, &p, 4));
	*v = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
	return 0;
}

static RSEC_MUST_CHECK int get_u64(struct cursor *c, uint64_t *v)
{
	uint32_t hi, lo;
	RSEC_GUARD(get_u32(c, &hi));
	RSEC_GUARD(get_u32(c, &lo));
	*v = (uint64_t)hi << 32 | lo;
	return 0;
}

static uint16_t ip_checksum(const uint8_t *h, size_t n)
{
	uint32_t sum = 0;

	for (size_t i = 0; i + 1 < n; i += 2)
		sum += (uint32_t)(h[i] << 8 | h[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* IPv4 (no options, checksum computed) and UDP headers at the start of c. */
static RSEC_MUST_CHECK int put_ip_udp(struct cursor *c, const struct roce_pkt *p, size_t total, size_t udp_len)
{
	uint16_t csum;

	RSEC_GUARD(put_u8(c, 0x45));
	RSEC_GUARD(put_u8(c, p->tos));
	RSEC_GUARD(put_u16(c, (uint16_t)total));
	RSEC_GUARD(put_u16(c, p->ip_id));
	RSEC_GUARD(put_u16(c, p->frag_off));
	RSEC_GUARD(put_u8(c, p->ttl));
	RSEC_GUARD(put_u8(c, 17));
	RSEC_GUARD(put_u16(c, 0));
	RSEC_GUARD(put_u32(c, p->src_ip));
	RSEC_GUARD(put_u32(c, p->dst_ip));
	csum = ip_checksum(c->buf, ROCE_IPV4_LEN);
	c->buf[10] = (uint8_t)(csum >> 8);
	c->buf[11] = (uint8_t)csum;
	RSEC_GUARD(put_u16(c, p->udp_sport));
	RSEC_GUARD(put_u16(c, ROCE_UDP_DPORT));
	RSEC_GUARD(put_u16(c, (uint16_t)udp_len));
	RSEC_GUARD(put_u16(c, p->udp_check));
	return 0;
}

/* BTH: opcode | SE M Pad TVer | P_Key | resv8a | DestQP | A resv7 PSN */
static RSEC_MUST_CHECK int put_bth(struct cursor *c, const struct roce_pkt *p, size_t pad)
{
	RSEC_GUARD(put_u8(c, p->opcode));
	RSEC_GUARD(put_u8(c, (uint8_t)((p->solicited ? 0x80 : 0) | (p->migreq ? 0x40 : 0) | (pad << 4) | p->tver)));
	RSEC_GUARD(put_u16(c, p->pkey));
	RSEC_GUARD(put_u32(c, (uint32_t)p->bth_resv8a << 24 | p->dest_qp));
	RSEC_GUARD(put_u32(c, (p->ack_req ? 0x80000000u : 0) | p->psn));
	return 0;
}

/* The extension headers the opcode calls for (hdrs), in IBA order. */
static RSEC_MUST_CHECK int put_ext_headers(struct cursor *c, const struct roce_pkt *p, unsigned hdrs)
{
	if (hdrs & ROCE_HDR_RETH) {
		RSEC_GUARD(put_u64(c, p->reth_va));
		RSEC_GUARD(put_u32(c, p->reth_rkey));
		RSEC_GUARD(put_u32(c, p->reth_len));
	}
	if (hdrs & ROCE_HDR_AETH)
		RSEC_GUARD(put_u32(c, p->aeth));
	/* IBA 9.2: the DETH comes before a UD ImmDt. */
	if (hdrs & ROCE_HDR_DETH) {
		RSEC_GUARD(put_u32(c, p->deth_qkey));
		RSEC_GUARD(put_u32(c, p->deth_src_qp));
	}
	if (hdrs & (ROCE_HDR_IMM | ROCE_HDR_IETH))
		RSEC_GUARD(put_u32(c, p->imm));
	return 0;
}

int roce_pkt_build(const struct roce_pkt *p, uint8_t *buf, size_t cap, size_t *len)
{
	static const uint8_t zeros[4];
	struct cursor c = { .buf = buf, .len = cap };
	unsigned hdrs;
	size_t pad, total, udp_len;
	uint32_t icrc;

	RSEC_ENSURE_REF(p);
	RSEC_ENSURE_REF(buf);
	RSEC_ENSURE_REF(len);
	RSEC_ENSURE(roce_opcode_info(p->opcode, &hdrs, NULL) == 0, RSEC_E_INVAL);
	/* Atomic headers carry fields this builder does not model. */
	RSEC_ENSURE(!(hdrs & (ROCE_HDR_ATOMETH | ROCE_HDR_ATOMACK)), RSEC_E_INVAL);
	RSEC_ENSURE(p->dest_qp <= ROCE_QPN_MAX && p->psn <= ROCE_PSN_MAX, RSEC_E_INVAL);
	RSEC_ENSURE(p->tver <= 0xf, RSEC_E_INVAL);
	RSEC_ENSURE(p->deth_src_qp <= ROCE_QPN_MAX, RSEC_E_INVAL);
	RSEC_ENSURE(p->payload_len == 0 || p->payload != NULL, RSEC_E_INVAL);
	RSEC_ENSURE(p->payload_len == 0 || (hdrs & ROCE_HDR_PAYLOAD), RSEC_E_INVAL);
	RSEC_ENSURE(p->payload_len <= ROCE_MAX_PAYLOAD, RSEC_E_RANGE);

	pad = (4 - (p->payload_len & 3)) & 3;
	udp_len = ROCE_UDP_LEN + ROCE_BTH_LEN + ext_len(hdrs) + p->payload_len + pad + ROCE_ICRC_LEN;
	total = ROCE_IPV4_LEN + udp_len;
	RSEC_ENSURE(total <= cap, RSEC_E_RANGE);

	RSEC_GUARD(put_ip_udp(&c, p, total, udp_len));
	RSEC_GUARD(put_bth(&c, p, pad));
	RSEC_GUARD(put_ext_headers(&c, p, hdrs));
	RSEC_GUARD(put_bytes(&c, p->payload, p->payload_len));
	RSEC_GUARD(put_bytes(&c, zeros, pad));
	RSEC_GUARD(roce_icrc(buf, c.pos, &icrc));
	/* rxe stores the ICRC in CPU order; the wire format is little-endian. */
	RSEC_GUARD(put_u8(&c, (uint8_t)icrc));
	RSEC_GUARD(put_u8(&c, (uint8_t)(icrc >> 8)));
	RSEC_GUARD(put_u8(&c, (uint8_t)(icrc >> 16)));
	RSEC_GUARD(put_u8(&c, (uint8_t)(icrc >> 24)));
	RSEC_ENSURE(c.pos == total, RSEC_E_INVAL);
	*len = total;
	return 0;
}

static RSEC_MUST_CHECK int parse_ip_udp(struct cursor *c, struct roce_pkt *p, size_t *udp_len)
{
	uint8_t vihl, proto;
	uint16_t tot, dport, ulen, check;

	RSEC_GUARD(get_u8(c, &vihl));
	RSEC_ENSURE(vihl == 0x45, RSEC_E_PROTO); /* IPv4 without options: what rxe sends */
	RSEC_GUARD(get_u8(c, &p->tos));
	RSEC_GUARD(get_u16(c, &tot));
	RSEC_ENSURE(tot == c->len, RSEC_E_PROTO);
	RSEC_GUARD(get_u16(c, &p->ip_id));
	RSEC_GUARD(get_u16(c, &p->frag_off));
	RSEC_ENSURE((p->frag_off & 0x3fff) == 0, RSEC_E_PROTO); /* no fragments */
	RSEC_GUARD(get_u8(c, &p->ttl));
	RSEC_GUARD(get_u8(c, &proto));
	RSEC_ENSURE(proto == 17, RSEC_E_PROTO);
	RSEC_GUARD(get_u16(c, &check));
	RSEC_GUARD(get_u32(c, &p->src_ip));
	RSEC_GUARD(get_u32(c, &p->dst_ip));
	RSEC_GUARD(get_u16(c, &p->udp_sport));
	RSEC_GUARD(get_u16(c, &dport));
	RSEC_ENSURE(dport == ROCE_UDP_DPORT, RSEC_E_PROTO);
	RSEC_GUARD(get_u16(c, &ulen));
	RSEC_ENSURE(ulen == tot - ROCE_IPV4_LEN, RSEC_E_PROTO);
	RSEC_GUARD(get_u16(c, &p->udp_check));
	*udp_len = ulen;
	return 0;
}

/* The BTH; *hdrs gets the extension headers its opcode calls for. */
static RSEC_MUST_CHECK int get_bth(struct cursor *c, struct roce_pkt *p, unsigned *hdrs)
{
	uint8_t b1;
	uint32_t w;

	RSEC_GUARD(get_u8(c, &p->opcode));
	RSEC_GUARD(roce_opcode_info(p->opcode, hdrs, NULL));
	RSEC_GUARD(get_u8(c, &b1));
	p->solicited = b1 & 0x80;
	p->migreq = b1 & 0x40;
	p->pad = (b1 >> 4) & 3;
	p->tver = b1 & 0xf;
	RSEC_GUARD(get_u16(c, &p->pkey));
	RSEC_GUARD(get_u32(c, &w));
	p->bth_resv8a = (uint8_t)(w >> 24);
	p->dest_qp = w & 0xffffff;
	RSEC_GUARD(get_u32(c, &w));
	p->ack_req = w >> 31;
	p->psn = w & 0xffffff;
	/* resv7 must be zero (IBA 9.2); rxe does not check, but a forger should not rely on that. */
	RSEC_ENSURE((w & 0x7f000000) == 0, RSEC_E_PROTO);
	return 0;
}

/* The extension headers hdrs names; atomic ones are skipped, not decoded. */
static RSEC_MUST_CHECK int get_ext_headers(struct cursor *c, struct roce_pkt *p, unsigned hdrs)
{
	const uint8_t *ignored;
	uint32_t w;

	if (hdrs & ROCE_HDR_RETH) {
		RSEC_GUARD(get_u64(c, &p->reth_va));
		RSEC_GUARD(get_u32(c, &p->reth_rkey));
		RSEC_GUARD(get_u32(c, &p->reth_len));
	}
	if (hdrs & ROCE_HDR_AETH)
		RSEC_GUARD(get_u32(c, &p->aeth));
	if (hdrs & ROCE_HDR_DETH) {
		RSEC_GUARD(get_u32(c, &p->deth_qkey));
		RSEC_GUARD(get_u32(c, &w));
		RSEC_ENSURE((w >> 24) == 0, RSEC_E_PROTO); /* reserved byte */
		p->deth_src_qp = w;
	}
	if (hdrs & (ROCE_HDR_IMM | ROCE_HDR_IETH))
		RSEC_GUARD(get_u32(c, &p->imm));
	if (hdrs & ROCE_HDR_ATOMETH)
		RSEC_GUARD(get_bytes(c, &ignored, ROCE_ATOMETH_LEN));
	if (hdrs & ROCE_HDR_ATOMACK)
		RSEC_GUARD(get_bytes(c, &ignored, ROCE_ATOMACK_LEN));
	return 0;
}

int roce_pkt_parse(const uint8_t *buf, size_t len, struct roce_pkt *p)
{
	struct cursor c = { .rbuf = buf, .len = len };
	const uint8_t *icrcp, *ignored;
	unsigned hdrs;
	size_t udp_len, body, rest;
	uint32_t calc;

	RSEC_ENSURE(buf != NULL && p != NULL, RSEC_E_PROTO);
	RSEC_ENSURE(len >= ROCE_IPV4_LEN + ROCE_UDP_LEN + ROCE_BTH_LEN + ROCE_ICRC_LEN, RSEC_E_PROTO);
	RSEC_ENSURE(len <= ROCE_MAX_PACKET, RSEC_E_PROTO);
	memset(p, 0, sizeof(*p));
	RSEC_GUARD(parse_ip_udp(&c, p, &udp_len));
	RSEC_ENSURE(udp_len >= ROCE_UDP_LEN + ROCE_BTH_LEN + ROCE_ICRC_LEN, RSEC_E_PROTO);

	RSEC_GUARD(get_bth(&c, p, &hdrs));
	RSEC_GUARD(get_ext_headers(&c, p, hdrs));

	RSEC_ENSURE(c.pos + ROCE_ICRC_LEN <= len, RSEC_E_PROTO);
	rest = len - c.pos - ROCE_ICRC_LEN;
	RSEC_ENSURE(rest >= p->pad, RSEC_E_PROTO);
	body = rest - p->pad;
	RSEC_ENSURE(body == 0 || (hdrs & ROCE_HDR_PAYLOAD), RSEC_E_PROTO);
	RSEC_ENSURE(body <= ROCE_MAX_PAYLOAD, RSEC_E_PROTO);
	RSEC_GUARD(get_bytes(&c, &p->payload, body));
	p->payload_len = body;
	RSEC_GUARD(get_bytes(&c, &ignored, p->pad));
	RSEC_GUARD(get_bytes(&c, &icrcp, ROCE_ICRC_LEN));
	RSEC_ENSURE(c.pos == len, RSEC_E_PROTO);
	p->icrc = (uint32_t)icrcp[0] | (uint32_t)icrcp[1] << 8 | (uint32_t)icrcp[2] << 16 |
		  (uint32_t)icrcp[3] << 24;
	RSEC_GUARD(roce_icrc(buf, len - ROCE_ICRC_LEN, &calc) == 0 ? 0 : RSEC_E_PROTO);
	p->icrc_ok = calc == p->icrc;
	if (body == 0)
		p->payload = NULL;
	return 0;
}
