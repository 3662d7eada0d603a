/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sniff_track.h"

enum {
	CONN_SLOTS = 2 * SNIFF_MAX_CONNS, /* powers of two, at most half full */
	STREAM_SLOTS = 2 * SNIFF_MAX_STREAMS,
	PSN_MASK = 0xffffff,
};

bool sniff_psn_after(uint32_t a, uint32_t b)
{
	uint32_t d = (a - b) & PSN_MASK;
	return d != 0 && d < 0x800000;
}

/* b lies in [lo, hi] going forward from lo (24-bit serial). */
static bool psn_within(uint32_t b, uint32_t lo, uint32_t hi)
{
	return ((b - lo) & PSN_MASK) <= ((hi - lo) & PSN_MASK);
}

static void psns_add(struct sniff_psns *p, uint32_t psn)
{
	if (p->count++ == 0) {
		p->first = p->max = psn;
		return;
	}
	if (sniff_psn_after(psn, p->max))
		p->max = psn;
}

static uint32_t mix(uint32_t h, uint32_t v)
{
	h ^= v;
	h *= 0x9e3779b1u;
	return h ^ (h >> 15);
}

int sniff_state_init(struct sniff_state *s)
{
	memset(s, 0, sizeof(*s));
	s->conn_index = calloc(CONN_SLOTS, sizeof(*s->conn_index));
	s->stream_index = calloc(STREAM_SLOTS, sizeof(*s->stream_index));
	if (!s->conn_index || !s->stream_index) {
		sniff_state_free(s);
		return RSEC_E_NOMEM;
	}
	return 0;
}

void sniff_state_free(struct sniff_state *s)
{
	for (size_t i = 0; i < s->nstreams; i++)
		free(s->streams[i].kept);
	free(s->conns);
	free(s->streams);
	free(s->ex);
	free(s->conn_index);
	free(s->stream_index);
	memset(s, 0, sizeof(*s));
}

/* Grow *arr (of n used, *cap allocated) to hold one more, up to max elements. */
static RSEC_MUST_CHECK int grow(void **arr, size_t *cap, size_t n, size_t max, size_t size)
{
	size_t want;
	void *p;

	if (n < *cap)
		return 0;
	RSEC_ENSURE(n < max, RSEC_E_LIMIT);
	want = *cap ? *cap * 2 : 16;
	if (want > max)
		want = max;
	p = realloc(*arr, want * size);
	RSEC_ENSURE(p != NULL, RSEC_E_NOMEM);
	memset((uint8_t *)p + *cap * size, 0, (want - *cap) * size);
	*arr = p;
	*cap = want;
	return 0;
}

/* The connection (src, dst, dqpn), created on first sight; NULL and *rc when it cannot be. */
static struct sniff_conn *conn_get(struct sniff_state *s, uint32_t src, uint32_t dst, uint32_t dqpn, int *rc)
{
	uint32_t h = mix(mix(mix(0, src), dst), dqpn) & (CONN_SLOTS - 1);
	struct sniff_conn *c;

	for (;; h = (h + 1) & (CONN_SLOTS - 1)) {
		uint32_t slot = s->conn_index[h];
		if (slot == 0)
			break;
		c = &s->conns[slot - 1];
		if (c->src == src && c->dst == dst && c->dqpn == dqpn)
			return c;
	}
	*rc = grow((void **)&s->conns, &s->conns_cap, s->nconns, SNIFF_MAX_CONNS, sizeof(*s->conns));
	if (*rc)
		return NULL;
	c = &s->conns[s->nconns++];
	c->src = src;
	c->dst = dst;
	c->dqpn = dqpn;
	s->conn_index[h] = (uint32_t)s->nconns;
	return c;
}

static struct sniff_stream *stream_get(struct sniff_state *s, const struct sniff_frame *f, int *rc)
{
	uint32_t h = mix(mix(mix(0, f->src), f->dst), (uint32_t)f->sport << 16 | f->dport) & (STREAM_SLOTS - 1);
	struct sniff_stream *t;

	for (;; h = (h + 1) & (STREAM_SLOTS - 1)) {
		uint32_t slot = s->stream_index[h];
		if (slot == 0)
			break;
		t = &s->streams[slot - 1];
		if (t->src == f->src && t->dst == f->dst && t->sport == f->sport && t->dport == f->dport)
			return t;
	}
	*rc = grow((void **)&s->streams, &s->streams_cap, s->nstreams, SNIFF_MAX_STREAMS, sizeof(*s->streams));
	if (*rc)
		return NULL;
	t = &s->streams[s->nstreams++];
	t->src = f->src;
	t->dst = f->dst;
	t->sport = f->sport;
	t->dport = f->dport;
	s->stream_index[h] = (uint32_t)s->nstreams;
	return t;
}

/* Merge [va, va+len) into the connection's ranges for rkey, or add one. */
static void range_add(struct sniff_conn *c, uint32_t rkey, uint64_t va, uint32_t len)
{
	uint64_t end = va > UINT64_MAX - len ? UINT64_MAX : va + len;

	for (size_t i = 0; i < c->nranges; i++) {
		struct sniff_range *r = &c->ranges[i];
		if (r->rkey != rkey || va > r->end || end < r->va)
			continue;
		if (va < r->va)
			r->va = va;
		if (end > r->end)
			r->end = end;
		r->reths++;
		return;
	}
	if (c->nranges == SNIFF_MAX_RANGES) {
		c->ranges_dropped++;
		return;
	}
	c->ranges[c->nranges++] = (struct sniff_range){ .rkey = rkey, .va = va, .end = end, .reths = 1 };
}

static bool is_response(uint8_t opcode)
{
	return opcode >= ROCE_RC_READ_RESP_FIRST && opcode <= ROCE_RC_ATOMIC_ACK;
}

static bool is_read_response(uint8_t opcode)
{
	return opcode >= ROCE_RC_READ_RESP_FIRST && opcode <= ROCE_RC_READ_RESP_ONLY;
}

int sniff_state_roce(struct sniff_state *s, const struct roce_pkt *p)
{
	struct sniff_conn *c;
	unsigned hdrs;
	int rc = 0;

	s->st.roce++;
	/* The receiver drops a packet with a wrong ICRC: it is not part of any connection. */
	if (!p->icrc_ok) {
		s->st.icrc_bad++;
		return 0;
	}
	if (roce_opcode_info(p->opcode, &hdrs, NULL) != 0 || p->opcode >= SNIFF_OPCODES) {
		s->st.roce_malformed++;
		return 0;
	}
	c = conn_get(s, p->src_ip, p->dst_ip, p->dest_qp, &rc);
	if (!c) {
		s->st.untracked++;
		return rc == RSEC_E_NOMEM ? rc : 0;
	}
	c->packets++;
	c->payload_bytes += p->payload_len;
	c->opcodes[p->opcode]++;
	if (is_response(p->opcode)) {
		psns_add(&c->resp, p->psn);
		if (is_read_response(p->opcode))
			psns_add(&c->read_resp, p->psn);
		return 0;
	}
	psns_add(&c->req, p->psn);
	if (hdrs & ROCE_HDR_RETH)
		range_add(c, p->reth_rkey, p->reth_va, p->reth_len);
	return 0;
}

static bool params_equal(const struct sniff_params *a, const struct sniff_params *b)
{
	return a->format == b->format && a->lid == b->lid && a->qpn == b->qpn && a->psn == b->psn &&
	       !memcmp(a->gid, b->gid, sizeof(a->gid)) && a->has_rkey == b->has_rkey && a->rkey == b->rkey &&
	       a->va == b->va && a->has_len == b->has_len && a->len == b->len;
}

struct found_ctx {
	struct sniff_state *s;
	struct sniff_stream *t;
	int rc;
};

static void on_exchange(void *arg, const struct sniff_params *p)
{
	struct found_ctx *ctx = arg;
	struct sniff_state *s = ctx->s;
	struct sniff_stream *t = ctx->t;
	struct sniff_exchange *e;
	int rc;

	t->messages++;
	for (size_t i = 0; i < s->nex; i++) {
		e = &s->ex[i];
		if (e->src == t->src && e->dst == t->dst && e->sport == t->sport && e->dport == t->dport &&
		    params_equal(&e->p, p)) {
			e->count++;
			return;
		}
	}
	rc = grow((void **)&s->ex, &s->ex_cap, s->nex, SNIFF_MAX_EXCHANGES, sizeof(*s->ex));
	if (rc) {
		if (rc == RSEC_E_NOMEM)
			ctx->rc = rc;
		s->st.untracked++;
		return;
	}
	e = &s->ex[s->nex++];
	*e = (struct sniff_exchange){ .src = t->src, .dst = t->dst, .sport = t->sport, .dport = t->dport,
				      .p = *p, .count = 1 };
}

static RSEC_MUST_CHECK int stream_keep(struct sniff_stream *t, const uint8_t *data, size_t n)
{
	size_t room = SNIFF_STREAM_KEEP - t->kept_len;

	if (n > room)
		n = room;
	if (n == 0)
		return 0;
	if (!t->kept) {
		t->kept = malloc(SNIFF_STREAM_KEEP);
		RSEC_ENSURE(t->kept != NULL, RSEC_E_NOMEM);
	}
	memcpy(t->kept + t->kept_len, data, n);
	t->kept_len += n;
	return 0;
}

/*
 * In-order bytes of one direction. The capture may start mid-stream, miss a
 * segment or repeat one: overlaps are trimmed, a gap drops any partial
 * message.
 */
static RSEC_MUST_CHECK int stream_segment(struct sniff_state *s, struct sniff_stream *t,
					  const struct sniff_frame *f)
{
	struct found_ctx ctx = { .s = s, .t = t };
	const uint8_t *data = f->payload;
	size_t n = f->payload_len;
	uint32_t seq = f->seq;
	int32_t d;

	if (f->tcp_flags & SNIFF_TCP_SYN) {
		seq++;
		t->synced = true;
		t->next_seq = seq;
		sniff_scanner_reset(&t->scan);
	}
	if (n == 0)
		return 0;
	if (!t->synced) {
		t->synced = true;
		t->next_seq = seq;
	}
	d = (int32_t)(seq - t->next_seq);
	if (d > 0) {
		t->gaps++;
		sniff_scanner_reset(&t->scan);
	} else if (d < 0) {
		uint32_t old = (uint32_t)-(int64_t)d;
		if (old >= n)
			return 0; /* a retransmission */
		data += old;
		n -= old;
	}
	t->next_seq = seq + (uint32_t)(f->payload_len);
	if (!t->started) {
		t->started = true;
		/* TLS record: handshake (22), version 3.x */
		t->tls = n >= 3 && data[0] == 0x16 && data[1] == 0x03 && data[2] <= 0x04;
	}
	t->bytes += n;
	s->st.tcp_payload += n;
	RSEC_GUARD(stream_keep(t, data, n));
	sniff_scanner_feed(&t->scan, data, n, on_exchange, &ctx);
	return ctx.rc;
}

int sniff_state_frame(struct sniff_state *s, enum sniff_link link, const uint8_t *buf, size_t len)
{
	struct sniff_frame f;
	struct roce_pkt p;
	int rc = 0;

	s->st.frames++;
	s->st.bytes += len;
	if (sniff_frame_parse(link, buf, len, &f) != 0) {
		s->st.malformed++;
		return 0;
	}
	switch (f.kind) {
	case SNIFF_UDP:
		if (f.dport != ROCE_UDP_DPORT) {
			s->st.not_ip++;
			return 0;
		}
		if (roce_pkt_parse(f.ip, f.ip_len, &p) != 0) {
			s->st.roce++;
			s->st.roce_malformed++;
			return 0;
		}
		return sniff_state_roce(s, &p);
	case SNIFF_TCP: {
		struct sniff_stream *t;

		s->st.tcp_segments++;
		t = stream_get(s, &f, &rc);
		if (!t) {
			s->st.untracked++;
			return rc == RSEC_E_NOMEM ? rc : 0;
		}
		return stream_segment(s, t, &f);
	}
	case SNIFF_FRAGMENT:
		s->st.fragments++;
		return 0;
	default:
		s->st.not_ip++;
		return 0;
	}
}

/* Tie each connection to the reverse one whose ACKs / READ responses carry its request PSNs. */
static void link_peers(struct sniff_state *s)
{
	for (size_t i = 0; i < s->nconns; i++) {
		struct sniff_conn *c = &s->conns[i];
		uint32_t last;

		if (c->req.count == 0)
			continue;
		for (size_t j = 0; j < s->nconns && !c->has_peer; j++) {
			const struct sniff_conn *r = &s->conns[j];
			if (r->src != c->dst || r->dst != c->src || r->resp.count == 0)
				continue;
			if (psn_within(r->resp.first, c->req.first, c->req.max) ||
			    psn_within(c->req.first, r->resp.first, r->resp.max)) {
				c->has_peer = true;
				c->peer_qpn = r->dqpn;
			}
		}
		/* A READ uses one PSN per response packet: its responses show how far it reached. */
		last = c->req.max;
		if (c->has_peer) {
			const struct sniff_conn *r = NULL;
			for (size_t j = 0; j < s->nconns && !r; j++)
				if (s->conns[j].src == c->dst && s->conns[j].dst == c->src &&
				    s->conns[j].dqpn == c->peer_qpn)
					r = &s->conns[j];
			if (r && r->read_resp.count && sniff_psn_after(r->read_resp.max, last))
				last = r->read_resp.max;
		}
		c->has_next = true;
		c->next_psn = (last + 1) & PSN_MASK;
	}
}

static bool gid_is_ipv4(const uint8_t gid[16], uint32_t ip)
{
	static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return !memcmp(gid, prefix, sizeof(prefix)) && gid[12] == (uint8_t)(ip >> 24) &&
	       gid[13] == (uint8_t)(ip >> 16) && gid[14] == (uint8_t)(ip >> 8) && gid[15] == (uint8_t)ip;
}

static void match_exchange(struct sniff_state *s, struct sniff_exchange *e)
{
	uint64_t span = e->p.has_len ? e->p.len : (uint64_t)1 << 32;
	uint64_t limit = e->p.va > UINT64_MAX - span ? UINT64_MAX : e->p.va + span;

	e->gid_is_src = gid_is_ipv4(e->p.gid, e->src);
	for (size_t i = 0; i < s->nconns; i++) {
		const struct sniff_conn *c = &s->conns[i];

		if (c->dst == e->src && c->dqpn == e->p.qpn)
			e->qpn_seen = true;
		if (c->src == e->src && c->dst == e->dst && c->req.count && c->req.first == e->p.psn)
			e->psn_seen = true;
		if (c->dst != e->src || !e->p.has_rkey)
			continue;
		for (size_t k = 0; k < c->nranges; k++) {
			const struct sniff_range *r = &c->ranges[k];
			if (r->rkey != e->p.rkey)
				continue;
			e->rkey_seen = true;
			if (r->va >= e->p.va && r->end <= limit)
				e->va_seen = true;
		}
	}
}

/* An rkey in any TCP payload kept: 4 bytes either order, or 8 hex digits. */
static bool rkey_in_plaintext(const struct sniff_state *s, uint32_t rkey)
{
	uint8_t be[4] = { (uint8_t)(rkey >> 24), (uint8_t)(rkey >> 16), (uint8_t)(rkey >> 8), (uint8_t)rkey };
	uint8_t le[4] = { be[3], be[2], be[1], be[0] };
	char lo[9], up[9];

	snprintf(lo, sizeof(lo), "%08x", rkey);
	snprintf(up, sizeof(up), "%08X", rkey);
	for (size_t i = 0; i < s->nstreams; i++) {
		const struct sniff_stream *t = &s->streams[i];
		if (!t->kept_len)
			continue;
		if (memmem(t->kept, t->kept_len, be, 4) || memmem(t->kept, t->kept_len, le, 4) ||
		    memmem(t->kept, t->kept_len, lo, 8) || memmem(t->kept, t->kept_len, up, 8))
			return true;
	}
	return false;
}

void sniff_state_finish(struct sniff_state *s)
{
	link_peers(s);
	for (size_t i = 0; i < s->nex; i++)
		match_exchange(s, &s->ex[i]);
	for (size_t i = 0; i < s->nconns; i++) {
		struct sniff_conn *c = &s->conns[i];

		for (size_t k = 0; k < s->nex && !c->plaintext; k++) {
			if (s->ex[k].src == c->dst && s->ex[k].p.qpn == c->dqpn) {
				c->plaintext = true;
				c->exchange = k;
			}
		}
		for (size_t k = 0; k < c->nranges; k++)
			c->ranges[k].in_plaintext = rkey_in_plaintext(s, c->ranges[k].rkey);
	}
}
