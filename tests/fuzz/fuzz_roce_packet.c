/* SPDX-License-Identifier: MIT */
/*
 * Target Functions: roce_pkt_parse, roce_pkt_build, roce_icrc
 * (tools/attack/proto/roce_packet.c). Whatever parses must rebuild into a packet
 * that parses to the same fields with a valid ICRC.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../tools/attack/proto/roce_packet.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t out[ROCE_MAX_PACKET];
	struct roce_pkt p, q;
	size_t n;

	if (roce_pkt_parse(data, size, &p) != 0)
		return 0;
	if (roce_pkt_build(&p, out, sizeof(out), &n) != 0)
		return 0; /* atomics: parse-only */
	if (roce_pkt_parse(out, n, &q) != 0 || !q.icrc_ok)
		abort();
	if (q.opcode != p.opcode || q.dest_qp != p.dest_qp || q.psn != p.psn ||
	    q.payload_len != p.payload_len || q.reth_rkey != p.reth_rkey || q.reth_va != p.reth_va ||
	    (p.payload_len && memcmp(q.payload, p.payload, p.payload_len) != 0))
		abort();
	return 0;
}
