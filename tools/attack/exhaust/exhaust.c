/* SPDX-License-Identifier: MIT */
/*
 * exhaust: resource exhaustion, locally (NeVerMore §4.4: verbs objects until
 * the device or the kernel refuses, the rdma cgroup being the remedy) or
 * through a service (ReDMArk A4: unauthenticated connections that cost it a
 * QP each, or hold its only slot). Option parsing; the work is in
 * exhaust_local.c and exhaust_remote.c.
 */
#include <getopt.h>
#include <string.h>

#include "common/attack.h"
#include "exhaust.h"

enum {
	OPT_LOCAL = OPT_FIRST_PRIVATE, OPT_REMOTE, OPT_OBJECTS, OPT_MAX, OPT_HOLD, OPT_NO_VICTIM, OPT_PORT,
	OPT_PROTO, OPT_CONNS, OPT_SOURCE, OPT_TIMEOUT, OPT_NO_EXCHANGE, OPT_NO_PROBE, OPT_CERTS, OPT_IDENTITY,
	OPT_ONE_QP,
};

static void help(FILE *f)
{
	fprintf(f, "Usage: %s exhaust --local [-d DEV] [--objects KINDS] [--max N] [--hold S]\n"
		"       %s exhaust --one-qp [-d DEV]\n"
		"       %s exhaust --remote --dst IP --port P --proto naive|rdmasec|rdma_cm|tcp [options]\n"
		"Resource exhaustion.\n\n"
		"--local (NeVerMore 4.4): as any user, create verbs objects on one device until the\n"
		"driver, the kernel or this process's rdma cgroup (rdma.max) refuses, hold them, and\n"
		"let another process try to create a QP meanwhile.\n"
		"  -d, --device DEV        the device (default: the first)\n"
		"  --objects KINDS         qp, cq, mr, pd, a comma list, or all (default qp); \"all\"\n"
		"                          floods each kind in turn: qp, cq, mr, pd\n"
		"  --max N                 at most N objects per kind (1..%u, default %u)\n"
		"  --hold S                keep them S seconds after the flood (default 0)\n"
		"  --no-victim             skip the other process's QP attempt (exhaust --one-qp,\n"
		"                          run while we hold; its own process, our user and cgroup)\n\n"
		"--one-qp: open the device, create a PD, a CQ and one RC QP, release them and print\n"
		"\"one-qp: created\" (exit 0) or \"one-qp: refused at open|pd|cq|qp: ERRNO\" (exit 3).\n\n"
		"--remote (ReDMArk A4): open many connections to a service without authenticating,\n"
		"count the QPs it shows it spent on them, probe once as a legitimate client.\n"
		"  --dst IP                the service; loopback or 10.77.0.0/24\n"
		"  --port N                its TCP (or rdma_cm) port\n"
		"  --proto P               naive: rdmasec-naive-victim's plaintext exchange (we send\n"
		"                          our half, with a QPN we never created; it answers with the\n"
		"                          QP it made for us); rdmasec: TCP connections that never\n"
		"                          start TLS; rdma_cm: connection requests with no QP behind\n"
		"                          them, never completed (rping -s, ucmatose); tcp: connect\n"
		"                          and stay silent (services that serve one client at a time,\n"
		"                          as ibv_rc_pingpong and perftest; no probe: run their client)\n"
		"  --connections N         how many (1..%u, default 16)\n"
		"  --hold S                keep them open S seconds after the probe (default 5)\n"
		"  --source IP             our address (on the fabric: our host's)\n"
		"  --timeout-ms N          per step: connect, answer, CM event (default 3000)\n"
		"  --no-exchange           naive: connect and stay silent instead\n"
		"  --no-probe              no legitimate client probe\n"
		"  --certs DIR             rdmasec: the probe's ca.pem and NAME.pem/NAME.key (without\n"
		"                          it the probe is not tried)\n"
		"  --identity NAME         rdmasec: the probe's credential (default client)\n"
		"  --allow-any-target      allow a --dst outside loopback and 10.77.0.0/24\n\n"
		"  --json                  print one JSON result line on stdout\n"
		"  -h, --help\n\n"
		"Exit status: 0 the run completed (its findings are in the output), 1 an error, 2 bad usage\n"
		"(--one-qp: 3 refused).\n",
		PROG, PROG, PROG, EXH_MAX_MAX, EXH_DEFAULT_MAX, EXH_CONN_MAX);
}

/* Seconds: digits with up to 3 decimals, 0..86400. */
static bool parse_seconds(const char *s, double *out, const char *what)
{
	uint64_t ms = 0;
	int digits = 0, decimals = -1;

	for (const char *p = s; *p; p++) {
		if (*p == '.' && decimals < 0 && digits > 0) {
			decimals = 0;
			continue;
		}
		if (*p < '0' || *p > '9' || digits >= 9 || decimals >= 3)
			goto bad;
		ms = ms * 10 + (uint64_t)(*p - '0');
		digits++;
		if (decimals >= 0)
			decimals++;
	}
	if (digits == 0 || decimals == 0)
		goto bad;
	for (int i = decimals < 0 ? 0 : decimals; i < 3; i++)
		ms *= 10;
	if (ms > 86400000)
		goto bad;
	*out = (double)ms / 1000.0;
	return true;
bad:
	fprintf(stderr, "%s: invalid %s: `%s' (expected seconds, 0..86400, e.g. 5 or 0.5)\n", PROG, what, s);
	return false;
}

static const struct option exhaust_long_opts[] = {
	{ "local", no_argument, NULL, OPT_LOCAL },
	{ "remote", no_argument, NULL, OPT_REMOTE },
	{ "one-qp", no_argument, NULL, OPT_ONE_QP },
	{ "device", required_argument, NULL, 'd' },
	{ "objects", required_argument, NULL, OPT_OBJECTS },
	{ "max", required_argument, NULL, OPT_MAX },
	{ "hold", required_argument, NULL, OPT_HOLD },
	{ "no-victim", no_argument, NULL, OPT_NO_VICTIM },
	{ "dst", required_argument, NULL, OPT_DST },
	{ "port", required_argument, NULL, OPT_PORT },
	{ "proto", required_argument, NULL, OPT_PROTO },
	{ "connections", required_argument, NULL, OPT_CONNS },
	{ "source", required_argument, NULL, OPT_SOURCE },
	{ "timeout-ms", required_argument, NULL, OPT_TIMEOUT },
	{ "no-exchange", no_argument, NULL, OPT_NO_EXCHANGE },
	{ "no-probe", no_argument, NULL, OPT_NO_PROBE },
	{ "certs", required_argument, NULL, OPT_CERTS },
	{ "identity", required_argument, NULL, OPT_IDENTITY },
	{ "allow-any-target", no_argument, NULL, OPT_ALLOW_ANY },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

/* Everything the command line says, for whichever mode it picks. */
struct exhaust_args {
	struct exh_local_cfg lc;
	struct exh_remote_cfg rc;
	bool local, remote, one_qp, have_dst, have_port, have_proto, have_hold, allow_any, json;
	double hold;
};

static bool parse_proto(const char *s, enum exh_proto *out)
{
	if (!strcmp(s, "naive"))
		*out = EXH_NAIVE;
	else if (!strcmp(s, "rdmasec"))
		*out = EXH_RDMASEC;
	else if (!strcmp(s, "rdma_cm") || !strcmp(s, "rdma-cm"))
		*out = EXH_RDMA_CM;
	else if (!strcmp(s, "tcp"))
		*out = EXH_TCP;
	else
		return fprintf(stderr, "%s: invalid --proto: `%s' (naive, rdmasec, rdma_cm or tcp)\n", PROG, s), false;
	return true;
}

/*
 * The mode and --local's options (and those both modes take); true if opt
 * was one of them. *bad collects every bad option so far: a range message
 * is printed only while none was bad, as the options are read in order.
 */
static bool parse_local_opt(int opt, const char *arg, struct exhaust_args *a, bool *bad)
{
	switch (opt) {
	case OPT_LOCAL: a->local = true; return true;
	case OPT_REMOTE: a->remote = true; return true;
	case OPT_ONE_QP: a->one_qp = true; return true;
	case 'd': a->lc.dev = a->rc.dev = arg; return true;
	case OPT_OBJECTS: *bad |= !exh_kinds_parse(arg, &a->lc.kinds); return true;
	case OPT_MAX:
		*bad |= !parse_u32(arg, EXH_MAX_MAX, &a->lc.max, "--max");
		if (!*bad && a->lc.max == 0)
			*bad = true, fprintf(stderr, "%s: --max must be at least 1\n", PROG);
		return true;
	case OPT_HOLD: *bad |= !parse_seconds(arg, &a->hold, "--hold"); a->have_hold = true; return true;
	case OPT_NO_VICTIM: a->lc.victim_check = false; return true;
	case OPT_ALLOW_ANY: a->allow_any = true; return true;
	case OPT_JSON: a->json = true; return true;
	default: return false;
	}
}

/* --remote's options; true if opt was one of them. */
static bool parse_remote_opt(int opt, const char *arg, struct exhaust_args *a, bool *bad)
{
	uint32_t v, src_ip;

	switch (opt) {
	case OPT_DST: *bad |= !parse_ipv4(arg, &a->rc.dst, "--dst"); a->have_dst = true; return true;
	case OPT_PORT:
		*bad |= !parse_u32(arg, 65535, &v, "--port") || v == 0;
		a->rc.port = (uint16_t)v;
		a->have_port = true;
		return true;
	case OPT_PROTO: a->have_proto = true; *bad |= !parse_proto(arg, &a->rc.proto); return true;
	case OPT_CONNS:
		*bad |= !parse_u32(arg, EXH_CONN_MAX, &a->rc.connections, "--connections");
		if (!*bad && a->rc.connections == 0)
			*bad = true, fprintf(stderr, "%s: --connections must be at least 1\n", PROG);
		return true;
	case OPT_SOURCE: *bad |= !parse_ipv4(arg, &src_ip, "--source"); a->rc.source = arg; return true;
	case OPT_TIMEOUT:
		v = 0;
		*bad |= !parse_u32(arg, 600000, &v, "--timeout-ms");
		if (!*bad && v < 10)
			*bad = true, fprintf(stderr, "%s: --timeout-ms must be at least 10\n", PROG);
		a->rc.timeout_ms = (int)v;
		return true;
	case OPT_NO_EXCHANGE: a->rc.exchange = false; return true;
	case OPT_NO_PROBE: a->rc.probe = false; return true;
	case OPT_CERTS: a->rc.certs = arg; return true;
	case OPT_IDENTITY:
		if (!*arg || strchr(arg, '/'))
			*bad = true, fprintf(stderr, "%s: invalid --identity: `%s'\n", PROG, arg);
		a->rc.identity = arg;
		return true;
	default: return false;
	}
}

/* Returns -1 to go on, or the exit status (0 after --help, 2 bad usage). */
static int parse_args(int argc, char *argv[], struct exhaust_args *a)
{
	bool bad = false;
	int opt;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "d:h", exhaust_long_opts, NULL)) != -1) {
		if (parse_local_opt(opt, optarg, a, &bad) || parse_remote_opt(opt, optarg, a, &bad))
			continue;
		if (opt == 'h') {
			help(stdout);
			return 0;
		}
		help(stderr);
		return 2;
	}
	if (bad)
		return 2;
	if (optind != argc || a->local + a->remote + a->one_qp != 1) {
		fprintf(stderr, "%s exhaust: give exactly one of --local, --one-qp and --remote (see --help)\n", PROG);
		return 2;
	}
	return -1;
}

static int run_remote(struct exhaust_args *a)
{
	if (!a->have_dst || !a->have_port || !a->have_proto) {
		fprintf(stderr, "%s exhaust: --remote needs --dst, --port and --proto\n", PROG);
		return 2;
	}
	if (!target_allowed(a->rc.dst, a->allow_any))
		return 2;
	if (a->have_hold)
		a->rc.hold_s = a->hold;
	a->rc.json = a->json;
	return exhaust_remote(&a->rc);
}

int exhaust_main(int argc, char *argv[])
{
	struct exhaust_args a = {
		.lc = { .kinds = 1u << EXH_QP, .max = EXH_DEFAULT_MAX, .victim_check = true },
		.rc = { .connections = 16, .hold_s = 5, .timeout_ms = 3000, .exchange = true, .probe = true,
			.identity = "client", .gid_index = 1 },
	};
	int rc;

	if ((rc = parse_args(argc, argv, &a)) >= 0)
		return rc;
	if (a.one_qp)
		return exhaust_one_qp(a.lc.dev, a.json);
	if (a.local) {
		a.lc.hold_s = a.hold;
		a.lc.json = a.json;
		return exhaust_local(&a.lc);
	}
	return run_remote(&a);
}
