/* SPDX-License-Identifier: MIT */
/*
 * Target Functions: sniff_frame_parse, sniff_exchange_parse,
 * sniff_scanner_feed (tools/attack/sniff_parse.c) and the tracker that
 * feeds them (tools/attack/sniff_track.c, with roce_pkt_parse).
 * Input: byte 0 picks the link type, byte 1 a split point, the rest is the
 * frame. Decoded pointers must stay inside the frame; a message's proper
 * prefixes must ask for more bytes; the scanner must find the same messages
 * however the stream is cut.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../tools/attack/roce_packet.c"
#include "../../tools/attack/sniff_parse.c"
#include "../../tools/attack/sniff_track.c"

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

static void count_found(void *arg, const struct sniff_params *p)
{
	(void)p;
	(*(size_t *)arg)++;
}

static void check_exchange(const uint8_t *buf, size_t len, size_t split)
{
	struct sniff_scanner *s = calloc(1, sizeof(*s));
	struct sniff_params p;
	size_t whole = 0, cut = 0;
	int n = sniff_exchange_parse(buf, len, &p);

	if (!s)
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
	if (whole != cut)
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
