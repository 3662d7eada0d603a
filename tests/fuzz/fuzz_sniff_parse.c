/* SPDX-License-Identifier: MIT */
/*
 * Target Functions: sniff_frame_parse, sniff_exchange_parse,
 * sniff_scanner_feed (tools/attack/proto/sniff_parse.c) and the tracker that
 * feeds them (tools/attack/sniff/sniff_track.c, with roce_pkt_parse).
 * Input: byte 0 picks the link type, byte 1 a split point, the rest is the
 * frame. Decoded pointers must stay inside the frame; a message's proper
 * prefixes must ask for more bytes; sniff_exchange_parse, which looks at a
 * message's opening first, must answer as every format tried in turn does;
 * the scanner, which skips offsets, must find the same messages as parsing at
 * every offset, and the same however the stream is cut.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../tools/attack/proto/roce_packet.c"
#include "../../tools/attack/proto/sniff_parse.c"
#include "../../tools/attack/sniff/sniff_track.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_frame(enum sniff_link link, const uint8_t *buf, size_t len)
{
	const uint8_t *end = buf + len;
	struct sniff_frame f;

	if (sniff_frame_parse(link, buf, len, &f) != 0)
		return;
	if (f.ip && (f.ip < buf || f.ip_len > (size_t)(end - f.ip)))
		abort();
	if (f.kind == SNIFF_UDP || f.kind == SNIFF_TCP) {
		if (!f.ip || f.payload < f.ip || f.payload_len > (size_t)(f.ip + f.ip_len - f.payload))
			abort();
	}
}

/* How many messages, and a hash of what they said, in order. */
struct tally {
	size_t n;
	uint64_t hash;
};

static void count_found(void *arg, const struct sniff_params *p)
{
	struct tally *t = arg;
	const uint64_t v[] = { p->format, p->lid, p->qpn, p->psn, p->has_rkey, p->rkey, p->va, p->has_len,
			       p->len };

	t->n++;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		t->hash = (t->hash ^ v[i]) * 0x100000001b3u; /* FNV-1a's prime, a word at a time */
	for (size_t i = 0; i < sizeof(p->gid); i++)
		t->hash = (t->hash ^ p->gid[i]) * 0x100000001b3u;
}

/* The scanner before it skipped offsets: sniff_exchange_parse at each in turn. */
static void tally_every_offset(const uint8_t *buf, size_t len, struct tally *t)
{
	size_t pos = 0;

	while (pos < len) {
		struct sniff_params p;
		int n = sniff_exchange_parse(buf + pos, len - pos, &p);

		if (n > 0) {
			count_found(t, &p);
			pos += (size_t)n;
		} else if (n == 0) {
			break;
		} else {
			pos++;
		}
	}
}

static void check_exchange(const uint8_t *buf, size_t len, size_t split)
{
	static const parse_fn each[] = { parse_pingpong, parse_perftest, parse_naive };
	struct sniff_scanner *s = calloc(1, sizeof(*s));
	struct sniff_params p, q;
	struct tally whole = { 0 }, cut = { 0 }, head = { 0 }, every = { 0 };
	int n = sniff_exchange_parse(buf, len, &p);
	size_t head_len;

	if (!s)
		abort();
	if (parse_first(each, 3, buf, len, &q) != n || (n > 0 && !params_equal(&p, &q)))
		abort();
	if (n > 0 && ((size_t)n > len || sniff_exchange_parse(buf, (size_t)n - 1, &p) != 0))
		abort();
	if (split > len)
		split = len;
	sniff_scanner_feed(s, buf, len, count_found, &whole);
	if (s->len >= SNIFF_MSG_MAX)
		abort();
	sniff_scanner_reset(s);
	sniff_scanner_feed(s, buf, split, count_found, &cut);
	sniff_scanner_feed(s, buf + split, len - split, count_found, &cut);
	if (whole.n != cut.n || whole.hash != cut.hash)
		abort();
	/*
	 * Parsing at every offset costs what skipping saves, so it is checked on
	 * the first two scanner buffers' worth only: each case of the skipping
	 * (in the middle, at the end of a buffer, across two) arises there.
	 */
	head_len = len < 2 * sizeof(s->buf) ? len : 2 * sizeof(s->buf);
	sniff_scanner_reset(s);
	sniff_scanner_feed(s, buf, head_len, count_found, &head);
	tally_every_offset(buf, head_len, &every);
	if (head.n != every.n || head.hash != every.hash)
		abort();
	free(s);
}

static void check_tracker(enum sniff_link link, const uint8_t *buf, size_t len)
{
	struct sniff_state s;

	if (sniff_state_init(&s) != 0)
		return;
	/* Twice: the second pass finds what the first one created. */
	if (sniff_state_frame(&s, link, buf, len) == 0 && sniff_state_frame(&s, link, buf, len) == 0)
		sniff_state_finish(&s);
	sniff_state_free(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum sniff_link link;
	size_t split;

	if (size < 2)
		return 0;
	link = (enum sniff_link)(data[0] & 3);
	split = data[1];
	data += 2;
	size -= 2;
	check_frame(link, data, size);
	check_exchange(data, size, split);
	check_tracker(link, data, size);
	return 0;
}
