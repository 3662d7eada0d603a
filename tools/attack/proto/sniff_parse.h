/* SPDX-License-Identifier: MIT */
/*
 * What an on-path observer decodes from one captured frame: the link layer
 * (Ethernet, Linux cooked v1/v2, raw IP) down to IPv4 and its UDP or TCP
 * payload, and the plaintext formats RDMA programs swap connection
 * parameters in over TCP. Every parser reads only inside the bytes it is
 * given and rejects anything that does not fit its format exactly.
 */
#ifndef RSEC_SNIFF_PARSE_H
#define RSEC_SNIFF_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "result.h"

/* Link layers a capture may use (mapped from pcap's DLT_* by the caller). */
enum sniff_link {
	SNIFF_LINK_ETHERNET, /* DLT_EN10MB, with up to two 802.1Q/802.1ad tags */
	SNIFF_LINK_SLL,      /* DLT_LINUX_SLL: 16-byte Linux cooked header */
	SNIFF_LINK_SLL2,     /* DLT_LINUX_SLL2: 20-byte Linux cooked header */
	SNIFF_LINK_RAW,      /* DLT_RAW / DLT_IPV4: the frame is the IP packet */
};

enum sniff_kind {
	SNIFF_OTHER,    /* not IPv4, or neither UDP nor TCP */
	SNIFF_FRAGMENT, /* an IPv4 fragment (not reassembled) */
	SNIFF_UDP,
	SNIFF_TCP,
};

enum {
	SNIFF_TCP_FIN = 0x01,
	SNIFF_TCP_SYN = 0x02,
	SNIFF_TCP_RST = 0x04,
};

struct sniff_frame {
	enum sniff_kind kind;
	uint32_t src, dst;     /* IPv4, host order */
	const uint8_t *ip;     /* the IPv4 packet, trimmed to its total length (link padding dropped) */
	size_t ip_len;
	uint16_t sport, dport; /* UDP or TCP */
	uint32_t seq;          /* TCP */
	uint8_t tcp_flags;     /* SNIFF_TCP_* */
	const uint8_t *payload;
	size_t payload_len;
};

/*
 * sniff_frame_parse - decode one captured frame of len bytes (what was
 * captured: a truncated frame is malformed). Pointers in *f point into buf.
 * Returns 0 (f->kind says what it is) or RSEC_E_PROTO (truncated or
 * inconsistent headers).
 */
RSEC_MUST_CHECK int sniff_frame_parse(enum sniff_link link, const uint8_t *buf, size_t len,
				      struct sniff_frame *f);

/* Plaintext exchange formats, as seen on the wire (docs/attack.md). */
enum sniff_format {
	SNIFF_FMT_PINGPONG = 1, /* ibv_rc_pingpong: "LLLL:QQQQQQ:PPPPPP:<32 hex GID>\0" */
	SNIFF_FMT_PERFTEST,     /* perftest: "LLLL:xxxx:QQQQQQ:PPPPPP:RRRRRRRR:<16 hex VA>:<16 x 'hh:'>ssssssss:\0" */
	SNIFF_FMT_NAIVE,        /* rdmasec-naive-victim: "NAIVE qpn=... psn=... gid=... rkey=... addr=... len=N\n" */
};

enum { SNIFF_MSG_MAX = 128 }; /* longest message of any format, with room to spare */

/* Parameters one side told the other. */
struct sniff_params {
	enum sniff_format format;
	uint16_t lid;
	uint32_t qpn, psn;
	uint8_t gid[16];
	bool has_rkey; /* perftest and the naive victim tell an rkey and a VA */
	uint32_t rkey;
	uint64_t va;
	bool has_len;  /* the naive victim also tells the buffer length */
	uint32_t len;
};

const char *sniff_format_name(enum sniff_format f);

/*
 * sniff_exchange_parse - one message of any known format at the start of buf.
 * Returns its length in bytes (> 0) and fills *out; 0 when buf is a proper
 * prefix of a message (more bytes could complete it); RSEC_E_PROTO when buf
 * does not start a message.
 */
RSEC_MUST_CHECK int sniff_exchange_parse(const uint8_t *buf, size_t len, struct sniff_params *out);

/*
 * Finds messages in one direction of a TCP stream, fed in order in pieces of
 * any size. Only the tail that could still start a message is kept, so the
 * state is bounded whatever the stream carries.
 */
struct sniff_scanner {
	uint8_t buf[2 * SNIFF_MSG_MAX];
	size_t len;
};

typedef void (*sniff_found_fn)(void *arg, const struct sniff_params *p);

/* Forget any partial message (after a gap in the stream). */
void sniff_scanner_reset(struct sniff_scanner *s);
/* Feed n bytes; found(arg, params) for each complete message. Returns how many. */
size_t sniff_scanner_feed(struct sniff_scanner *s, const uint8_t *data, size_t n, sniff_found_fn found,
			  void *arg);

#endif /* RSEC_SNIFF_PARSE_H */
