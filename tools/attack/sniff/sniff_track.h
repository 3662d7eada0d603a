/* SPDX-License-Identifier: MIT */
/*
 * The observer's memory: RC connections seen in RoCEv2 traffic (keyed by
 * source IP, destination IP and destination QPN), TCP streams and the
 * plaintext exchanges found in them, and how the two agree. Fed one captured
 * frame at a time; every table has a fixed ceiling, and what does not fit is
 * counted, not stored.
 */
#ifndef RSEC_SNIFF_TRACK_H
#define RSEC_SNIFF_TRACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/roce_packet.h"
#include "proto/sniff_parse.h"

enum {
	SNIFF_MAX_CONNS = 4096,
	SNIFF_MAX_STREAMS = 1024,
	SNIFF_MAX_EXCHANGES = 1024,
	SNIFF_MAX_RANGES = 32,            /* distinct (rkey, VA range) per connection */
	SNIFF_STREAM_KEEP = 64 * 1024,    /* TCP payload bytes kept per direction for the rkey search */
	SNIFF_OPCODES = 0x18,
};

/* PSNs of one kind of packet; max is the latest in 24-bit serial order. */
struct sniff_psns {
	uint64_t count;
	uint32_t first, max;
};

/* One rkey and the VA range its RETHs covered (contiguous or overlapping ones merged). */
struct sniff_range {
	uint32_t rkey;
	uint64_t va, end; /* [va, end) */
	uint64_t reths;
	bool in_plaintext; /* set by sniff_state_finish */
};

struct sniff_conn {
	uint32_t src, dst, dqpn;
	uint64_t packets, payload_bytes;
	uint64_t opcodes[SNIFF_OPCODES];
	struct sniff_psns req;       /* requests: the sender's PSNs, what dqpn expects */
	struct sniff_psns resp;      /* ACKs and READ responses: the PSNs of dqpn's own requests */
	struct sniff_psns read_resp; /* READ responses only */
	struct sniff_range ranges[SNIFF_MAX_RANGES];
	size_t nranges;
	uint64_t ranges_dropped;
	/* Set by sniff_state_finish. */
	bool has_peer;               /* the reverse connection whose responses answer our requests */
	uint32_t peer_qpn;           /* ... its destination: the sender's own QPN */
	bool has_next;
	uint32_t next_psn;           /* what dqpn expects next */
	bool plaintext;              /* dst told dqpn over plaintext TCP */
	size_t exchange;             /* ... in this exchange (index), if plaintext */
};

struct sniff_stream {
	uint32_t src, dst;
	uint16_t sport, dport;
	bool synced;
	uint32_t next_seq;
	uint64_t bytes, gaps, messages;
	bool started, tls;           /* the first payload is a TLS handshake record */
	struct sniff_scanner scan;
	uint8_t *kept;
	size_t kept_len;
};

struct sniff_exchange {
	uint32_t src, dst;
	uint16_t sport, dport;
	struct sniff_params p;
	uint64_t count;               /* identical repeats */
	/* Set by sniff_state_finish. */
	bool gid_is_src;              /* the GID is the sender's IPv4-mapped address */
	bool qpn_seen;                /* RoCE traffic to (src, qpn) */
	bool psn_seen;                /* a connection src -> dst whose first request PSN is psn */
	bool rkey_seen, va_seen;      /* a RETH to src with rkey; its VA inside the told range */
};

struct sniff_stats {
	uint64_t frames, bytes;
	uint64_t malformed;           /* link/IP/UDP/TCP headers that do not parse */
	uint64_t not_ip;              /* not IPv4 (ARP, IPv6, ...) or other IP protocols */
	uint64_t fragments;
	uint64_t roce, roce_malformed, icrc_bad;
	uint64_t tcp_segments, tcp_payload;
	uint64_t untracked;           /* packets beyond a table's ceiling */
};

struct sniff_state {
	struct sniff_stats st;
	struct sniff_conn *conns;
	size_t nconns, conns_cap;
	struct sniff_stream *streams;
	size_t nstreams, streams_cap;
	struct sniff_exchange *ex;
	size_t nex, ex_cap;
	uint32_t *conn_index, *stream_index; /* open addressing: 1 + position, 0 empty */
};

RSEC_MUST_CHECK int sniff_state_init(struct sniff_state *s);
void sniff_state_free(struct sniff_state *s);

/* Account for one captured frame. Returns 0 or RSEC_E_NOMEM. */
RSEC_MUST_CHECK int sniff_state_frame(struct sniff_state *s, enum sniff_link link, const uint8_t *buf,
				      size_t len);
/* A parsed RoCEv2 packet (sniff_state_frame calls this; tests may too). */
RSEC_MUST_CHECK int sniff_state_roce(struct sniff_state *s, const struct roce_pkt *p);

/* After the last frame: link peers, next PSNs, plaintext matches, rkey search. */
void sniff_state_finish(struct sniff_state *s);

/* psn_after(a, b): a comes after b in 24-bit serial order. */
bool sniff_psn_after(uint32_t a, uint32_t b);

#endif /* RSEC_SNIFF_TRACK_H */
