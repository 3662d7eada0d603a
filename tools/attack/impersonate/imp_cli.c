/* SPDX-License-Identifier: MIT */
/* impersonate's command line (imp_cli.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/attack.h"
#include "imp_cli.h"

enum {
	OPT_QPN_SWEEP = OPT_FIRST_PRIVATE, OPT_QPS, OPT_WINDOW, OPT_OP, OPT_RKEY, OPT_VA, OPT_PASSES,
	OPT_MAX_TIME, OPT_NO_WATCH, OPT_PROGRESS,
};

static void help(FILE *f)
{
	fprintf(f, "Usage: %s impersonate --dst IP (--qpn N | --qpn-sweep F:C) [options]\n"
		"Inject into a victim's RC connection through plain verbs, without privilege:\n"
		"connect many QPs of the victim's peer's device to the victim's QPN, each from\n"
		"a different PSN, and sweep the PSN space with bogus-rkey RDMA WRITEs.\n\n"
		"  -d, --device DEV      attacker's RDMA device: the legitimate peer's (default: first)\n"
		"  -g, --gid-index N     source GID (default: DEV's first RoCE v2 IPv4 GID)\n"
		"  --dst IP              victim's address (its GID); loopback or 10.77.0.0/24\n"
		"  --qpn N               victim's QP number (0..0xFFFFFF)\n"
		"  --qpn-sweep F:C       instead, try the C QPNs F, F+1, ... in turn\n"
		"  --psn-sweep S:C       PSNs to cover, wrapping (default 0:16777216, all of them)\n"
		"  --qps M               attacker QPs, 1..%u (default 64)\n"
		"  --window W            PSNs per QP per round, 1..%u (default: the most, 128)\n"
		"  --op write|send       write: RDMA WRITE with a bogus rkey, breaks the victim QP\n"
		"                        (default); send: SEND, lands in the victim's receive buffers\n"
		"  --rkey N, --va N      rkey and address of the WRITEs (default 0, 0)\n"
		"  --passes N            sweep the range N times, 0: until stopped (default 1)\n"
		"  --max-time S          stop after S seconds (default: no limit)\n"
		"  --no-watch            do not probe the victim nor watch the peer's QP; always\n"
		"                        finish the sweep\n"
		"  --progress            draw the progress bar even if stderr is not a terminal\n"
		"  --allow-any-target    allow a --dst outside loopback and 10.77.0.0/24\n"
		"  --json                print one JSON result line on stdout\n"
		"  -h, --help\n\n"
		"The sweep stops early when the victim stops acknowledging duplicate probes (its\n"
		"ACKs reach DEV, whose receive counter anyone can read; --qpn only) or when the\n"
		"peer's QP on DEV, read from RDMA netlink like `rdma res show qp', fails or goes.\n"
		"Rate and projected time of a full 2^24 sweep are reported.\n"
		"Exit status: 0 swept (see victim_broken), 1 failed, 2 bad usage.\n",
		PROG, IMP_MAX_QPS, IMP_MAX_WINDOW);
}

static bool parse_qpn_sweep(const char *s, uint32_t *first, uint32_t *count)
{
	const char *colon = strchr(s, ':');
	char head[32];
	size_t n;

	if (!colon || (n = (size_t)(colon - s)) == 0 || n >= sizeof(head)) {
		fprintf(stderr, "%s: invalid --qpn-sweep: `%s' (expected FIRST:COUNT)\n", PROG, s);
		return false;
	}
	memcpy(head, s, n);
	head[n] = '\0';
	if (!parse_u32(head, ROCE_QPN_MAX, first, "first QPN") ||
	    !parse_u32(colon + 1, ROCE_QPN_MAX + 1u, count, "QPN count"))
		return false;
	if (*count == 0 || *count - 1 > ROCE_QPN_MAX - *first) {
		fprintf(stderr, "%s: invalid --qpn-sweep: the range must hold 1 QPN and end by 0xffffff\n", PROG);
		return false;
	}
	return true;
}

static bool parse_seconds(const char *s, double *out)
{
	char *end = NULL;
	double v = -1.0;

	errno = 0;
	if (s && s[0] >= '0' && s[0] <= '9')
		v = strtod(s, &end);
	if (!end || *end || errno || !(v >= 0.0 && v <= 86400.0)) {
		fprintf(stderr, "%s: invalid --max-time: `%s' (expected 0..86400 seconds)\n", PROG, s ? s : "");
		return false;
	}
	*out = v;
	return true;
}

static const struct option imp_long_opts[] = {
	{ "device", required_argument, NULL, 'd' },
	{ "gid-index", required_argument, NULL, 'g' },
	{ "dst", required_argument, NULL, OPT_DST },
	{ "qpn", required_argument, NULL, OPT_QPN },
	{ "qpn-sweep", required_argument, NULL, OPT_QPN_SWEEP },
	{ "psn-sweep", required_argument, NULL, OPT_SWEEP },
	{ "qps", required_argument, NULL, OPT_QPS },
	{ "window", required_argument, NULL, OPT_WINDOW },
	{ "op", required_argument, NULL, OPT_OP },
	{ "rkey", required_argument, NULL, OPT_RKEY },
	{ "va", required_argument, NULL, OPT_VA },
	{ "passes", required_argument, NULL, OPT_PASSES },
	{ "max-time", required_argument, NULL, OPT_MAX_TIME },
	{ "no-watch", no_argument, NULL, OPT_NO_WATCH },
	{ "progress", no_argument, NULL, OPT_PROGRESS },
	{ "allow-any-target", no_argument, NULL, OPT_ALLOW_ANY },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

/* --qpn N or --qpn-sweep F:C, once; false if bad. */
static bool parse_target_qpn(struct imp_opts *o, int opt, const char *arg)
{
	bool ok = true;

	if (o->have_qpn) {
		fprintf(stderr, "%s: give --qpn or --qpn-sweep once\n", PROG);
		ok = false;
	}
	o->have_qpn = true;
	o->qpn_count = 1;
	if (opt == OPT_QPN)
		return parse_u32(arg, ROCE_QPN_MAX, &o->qpn_first, "--qpn") && ok;
	return parse_qpn_sweep(arg, &o->qpn_first, &o->qpn_count) && ok;
}

/* One option into o (*bad collects the bad ones); false if opt is not one (--help, unknown). */
static bool parse_opt(struct imp_opts *o, int opt, const char *arg, bool *bad)
{
	switch (opt) {
	case 'd': o->device = arg; break;
	case 'g': *bad |= !parse_u32(arg, 255, &o->gid_index, "--gid-index"); o->have_gid = true; break;
	case OPT_DST: *bad |= !parse_ipv4(arg, &o->dst_ip, "--dst"); o->have_dst = true; break;
	case OPT_QPN:
	case OPT_QPN_SWEEP: *bad |= !parse_target_qpn(o, opt, arg); break;
	case OPT_SWEEP: *bad |= !parse_sweep(arg, &o->psn_start, &o->psn_count); break;
	case OPT_QPS:
		*bad |= !parse_u32(arg, IMP_MAX_QPS, &o->qps, "--qps");
		if (o->qps == 0)
			*bad = true, fprintf(stderr, "%s: --qps must be at least 1\n", PROG);
		break;
	case OPT_WINDOW:
		*bad |= !parse_u32(arg, IMP_MAX_WINDOW, &o->window, "--window");
		if (o->window == 0)
			*bad = true, fprintf(stderr, "%s: --window must be at least 1\n", PROG);
		break;
	case OPT_OP:
		if (!strcmp(arg, "send")) {
			o->send = true;
		} else if (strcmp(arg, "write") != 0) {
			fprintf(stderr, "%s impersonate: --op must be write or send, not `%s'\n", PROG, arg);
			*bad = true;
		}
		break;
	case OPT_RKEY: *bad |= !parse_u32(arg, UINT32_MAX, &o->rkey, "--rkey"); break;
	case OPT_VA: *bad |= !parse_u64(arg, UINT64_MAX, &o->va, "--va"); break;
	case OPT_PASSES: *bad |= !parse_u32(arg, 1000000, &o->passes, "--passes"); break;
	case OPT_MAX_TIME: *bad |= !parse_seconds(arg, &o->max_time); break;
	case OPT_NO_WATCH: o->watch = false; break;
	case OPT_PROGRESS: o->progress = true; break;
	case OPT_ALLOW_ANY: o->allow_any = true; break;
	case OPT_JSON: o->json = true; break;
	default: return false;
	}
	return true;
}

int imp_parse_args(int argc, char *argv[], struct imp_opts *o)
{
	bool bad = false;
	int opt;

	while ((opt = getopt_long(argc, argv, "d:g:h", imp_long_opts, NULL)) != -1) {
		if (parse_opt(o, opt, optarg, &bad))
			continue;
		if (opt == 'h') {
			help(stdout);
			return 0;
		}
		help(stderr);
		return 2;
	}
	if (optind != argc) {
		fprintf(stderr, "%s impersonate: unexpected argument `%s'\n", PROG, argv[optind]);
		return 2;
	}
	if (bad)
		return 2;
	if (!o->have_dst || !o->have_qpn) {
		fprintf(stderr, "%s impersonate: missing %s (see --help)\n", PROG,
			!o->have_dst ? "--dst" : "--qpn or --qpn-sweep");
		return 2;
	}
	return target_allowed(o->dst_ip, o->allow_any) ? -1 : 2;
}
