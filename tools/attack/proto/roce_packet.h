/* SPDX-License-Identifier: MIT */
/*
 * RoCEv2 packets as rxe puts them on the wire: IPv4 (no options) + UDP 4791 +
 * IBA BTH + the opcode's extension headers + payload + pad + ICRC. Builds
 * forged packets and parses captured ones; every length is bounded.
 */
#ifndef RSEC_ROCE_PACKET_H
#define RSEC_ROCE_PACKET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "result.h"

enum {
	ROCE_UDP_DPORT = 4791,
	ROCE_IPV4_LEN = 20,
	ROCE_UDP_LEN = 8,
	ROCE_BTH_LEN = 12,
	ROCE_RETH_LEN = 16,
	ROCE_AETH_LEN = 4,
	ROCE_IMM_LEN = 4,
	ROCE_DETH_LEN = 8,
	ROCE_ATOMETH_LEN = 28,
	ROCE_ATOMACK_LEN = 8,
	ROCE_ICRC_LEN = 4,
	ROCE_MAX_PAYLOAD = 4096,
	/* Largest packet either direction: all headers + payload + pad + ICRC. */
	ROCE_MAX_PACKET = ROCE_IPV4_LEN + ROCE_UDP_LEN + ROCE_BTH_LEN + ROCE_ATOMETH_LEN +
			  ROCE_MAX_PAYLOAD + 3 + ROCE_ICRC_LEN,
	ROCE_PSN_MAX = 0xffffff,
	ROCE_QPN_MAX = 0xffffff,
	ROCE_DEFAULT_PKEY = 0xffff,
	ROCE_GSI_QPN = 1,
};

/* The Q_Key every GSI (QP1) datagram carries (IBA 10.2.5). */
#define ROCE_GSI_QKEY 0x80010000u

/* IBA reliable-connection opcodes (transport 000b). */
enum roce_opcode {
	ROCE_RC_SEND_FIRST = 0x00,
	ROCE_RC_SEND_MIDDLE = 0x01,
	ROCE_RC_SEND_LAST = 0x02,
	ROCE_RC_SEND_LAST_IMM = 0x03,
	ROCE_RC_SEND_ONLY = 0x04,
	ROCE_RC_SEND_ONLY_IMM = 0x05,
	ROCE_RC_WRITE_FIRST = 0x06,
	ROCE_RC_WRITE_MIDDLE = 0x07,
	ROCE_RC_WRITE_LAST = 0x08,
	ROCE_RC_WRITE_LAST_IMM = 0x09,
	ROCE_RC_WRITE_ONLY = 0x0a,
	ROCE_RC_WRITE_ONLY_IMM = 0x0b,
	ROCE_RC_READ_REQUEST = 0x0c,
	ROCE_RC_READ_RESP_FIRST = 0x0d,
	ROCE_RC_READ_RESP_MIDDLE = 0x0e,
	ROCE_RC_READ_RESP_LAST = 0x0f,
	ROCE_RC_READ_RESP_ONLY = 0x10,
	ROCE_RC_ACK = 0x11,
	ROCE_RC_ATOMIC_ACK = 0x12,
	ROCE_RC_CMP_SWAP = 0x13,
	ROCE_RC_FETCH_ADD = 0x14,
	ROCE_RC_SEND_LAST_INV = 0x16,
	ROCE_RC_SEND_ONLY_INV = 0x17,
	/* Unreliable datagram (transport 011b): what carries CM MADs to QP1. */
	ROCE_UD_SEND_ONLY = 0x64,
	ROCE_UD_SEND_ONLY_IMM = 0x65,
	/* RoCEv2 Congestion Notification Packet (transport 100b): BTH, 16 reserved bytes, ICRC. */
	ROCE_CNP = 0x81,
};

enum {
	ROCE_CNP_RESERVED_LEN = 16,
	ROCE_BTH_BECN = 0x40, /* BTH byte 4 (resv8a): a CNP sets BECN */
};

/* Decoded fields; addresses and numbers in host byte order. */
struct roce_pkt {
	/* IPv4 */
	uint32_t src_ip;
	uint32_t dst_ip;
	uint8_t tos;
	uint8_t ttl;
	uint16_t ip_id;    /* must be non-zero when sent through IP_HDRINCL: the ICRC covers it */
	uint16_t frag_off; /* flags + offset field as on the wire, e.g. 0x4000 (DF) */
	/* UDP */
	uint16_t udp_sport;
	uint16_t udp_check; /* rxe sends 0 */
	/* BTH */
	uint8_t opcode;
	bool solicited;
	bool migreq;
	uint8_t tver;
	uint16_t pkey;
	uint8_t bth_resv8a; /* byte 4: FECN/BECN; masked out of the ICRC */
	uint32_t dest_qp;   /* 24 bits */
	bool ack_req;
	uint32_t psn;       /* 24 bits */
	/* Extension headers, as the opcode requires. */
	uint64_t reth_va;
	uint32_t reth_rkey;
	uint32_t reth_len;
	uint32_t aeth;      /* syndrome << 24 | MSN */
	uint32_t imm;       /* ImmDt or IETH (invalidated rkey) */
	uint32_t deth_qkey; /* UD: Q_Key */
	uint32_t deth_src_qp; /* UD: the sender's QPN, 24 bits */
	/* Payload (not including pad). */
	const uint8_t *payload;
	size_t payload_len;
	/* Set by roce_pkt_parse only. */
	uint8_t pad;
	uint32_t icrc;      /* as stored (little-endian value) */
	bool icrc_ok;
};

/* Extension header flags of an opcode (what follows the BTH). */
enum {
	ROCE_HDR_RETH = 1U << 0,
	ROCE_HDR_AETH = 1U << 1,
	ROCE_HDR_IMM = 1U << 2,
	ROCE_HDR_IETH = 1U << 3,
	ROCE_HDR_ATOMETH = 1U << 4,
	ROCE_HDR_ATOMACK = 1U << 5,
	ROCE_HDR_PAYLOAD = 1U << 6,
	ROCE_HDR_DETH = 1U << 7,
};

/*
 * roce_opcode_info - extension headers (ROCE_HDR_*) of an RC or UD opcode and its
 * name. Returns 0, or RSEC_E_PROTO for an opcode this module does not know.
 */
RSEC_MUST_CHECK int roce_opcode_info(uint8_t opcode, unsigned *hdrs, const char **name);

/* Raw reflected CRC-32 (poly 0xEDB88320) update, no pre/post inversion. */
uint32_t roce_crc32_update(uint32_t state, const uint8_t *p, size_t n);

/*
 * roce_icrc - the ICRC of an IPv4 RoCEv2 packet: pkt holds the IP header
 * through the pad (len bytes, the ICRC itself excluded). IBA 17.3.3 / rxe:
 * CRC-32 over 8 bytes of 0xFF then the packet with the variant fields (IP TOS,
 * TTL, checksum; UDP checksum; BTH byte 4) set to all ones; the result is
 * the complement. Returns 0 or RSEC_E_INVAL.
 */
RSEC_MUST_CHECK int roce_icrc(const uint8_t *pkt, size_t len, uint32_t *icrc);

/*
 * roce_pkt_build - serialise p into buf (cap bytes), computing IP total length
 * and checksum, UDP length, BTH pad count and the ICRC. *len gets the size.
 * Returns 0, RSEC_E_INVAL (bad field, unknown or unsupported opcode) or
 * RSEC_E_RANGE (payload too large for cap or ROCE_MAX_PAYLOAD).
 */
RSEC_MUST_CHECK int roce_pkt_build(const struct roce_pkt *p, uint8_t *buf, size_t cap, size_t *len);

/*
 * roce_pkt_parse - decode an IPv4 RoCEv2 packet of len bytes. p->payload
 * points into buf. A wrong ICRC is reported in p->icrc_ok, not as an error.
 * Returns 0 or RSEC_E_PROTO (malformed: truncated, wrong lengths, not UDP
 * 4791, IP options or fragments, unknown opcode).
 */
RSEC_MUST_CHECK int roce_pkt_parse(const uint8_t *buf, size_t len, struct roce_pkt *p);

#endif /* RSEC_ROCE_PACKET_H */
