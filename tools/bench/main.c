/* SPDX-License-Identifier: MIT */
/*
 * rdmasec-bench: perftest for rdmasec. Without HOST it serves one client
 * (every size that client asks for), with HOST it connects, measures and
 * prints perftest's result rows, so one script reads both tools' output.
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "cli.h"

static void usage_more(FILE *f);

/* The synopsis and the options of the test. */
static void usage(FILE *f)
{
	fprintf(f,
		"usage: " PROG " --certs DIR [--op send|write|read|connect|qp] [--lat] [-s SIZE | -a]\n"
		"                     [-n ITERS | -D SECS] [-t TX_DEPTH] [-Q CQ_MOD] [-q QPS] [--poll busy|event]\n"
		"                     [--sealed | --blocking] [--no-resume] [--source ADDR] [--port P]\n"
		"                     [--json FILE] [HOST]\n"
		"\n"
		"perftest for rdmasec: without HOST, serve one client; with HOST, connect to it, run the\n"
		"test and print perftest's result rows (ib_send_bw, ib_send_lat, ... column layout), then\n"
		"the CPU time (user + system) per operation of both sides.\n"
		"\n"
		"  -C, --certs DIR        ca.pem and server.pem/.key (serving) or client.pem/.key (rdmasec-keygen)\n"
		"      --op OP            send: sealed two-sided messages (default); write, read: one-sided\n"
		"                         through one grant of SIZE bytes, from or into one registered region\n"
		"                         (rsec_post, rsec_poll); connect: ITERS sequential connections (TCP,\n"
		"                         TLS 1.3, QP bring-up), each one timed; from the second on, TLS\n"
		"                         resumes the previous connection's session (no certificates); qp:\n"
		"                         ITERS (1..250) further queue pairs of one connection opened one after\n"
		"                         another, each timed (rsec_conn_add_qp: no handshake), then closed\n"
		"      --lat              latency instead of bandwidth (send, write: ping-pong, half the\n"
		"                         round trip; read: each READ's completion time, one in flight)\n"
		"  -s, --size SIZE        bytes per operation, 1..16M (K, M suffixes); default 65536, 2 with --lat;\n"
		"                         SIZE,SIZE,... runs each in turn on one connection\n"
		"  -a, --all              every size from 2 to 8M, powers of two\n"
		"  -n, --iters N          operations per size, 1..%u (default %u); N,N,...: one per -s size\n"
		"  -D, --duration SECS    run each size for SECS seconds (1..3600) instead\n"
		"  -t, --tx-depth N       write, read bandwidth: operations in flight, 1..%u (default %u)\n"
		"  -Q, --cq-mod N         write, read bandwidth: ask for a completion for one operation in N\n"
		"                         at most, and for the last of each batch posted (default %u, at\n"
		"                         most TX_DEPTH)\n"
		"  -q, --qps N            write, read bandwidth: N queue pairs (1..64) under the one\n"
		"                         authenticated connection, the first and N-1 more opened without a\n"
		"                         handshake (rsec_conn_add_qp), each with its own grant and region;\n"
		"                         operations go round robin, TX_DEPTH in flight on each (as perftest)\n",
		BENCH_ITERS_MAX, BENCH_DEFAULT_ITERS, RSEC_MAX_INFLIGHT, BENCH_DEFAULT_TX_DEPTH, BENCH_DEFAULT_CQ_MOD);
	usage_more(f);
}

/* The options of the library and the connection. */
static void usage_more(FILE *f)
{
	fprintf(f,
		"      --recv-slots N     this side's receive buffers (the library's recv_slots, 4..4096;\n"
		"                         default 16): the window of messages the peer may send ahead\n"
		"      --slot-size BYTES  size of each (slot_size, 4K..1M; default 64K); a sender keeps at\n"
		"                         most 1 MiB of its peer's slots in flight, so small slots make a\n"
		"                         deeper window for small messages\n"
		"      --poll MODE        how this side waits (the library's poll_mode): busy: spin on the\n"
		"                         completion queues (default for send, write and read, as perftest;\n"
		"                         a server of write or read has no completions and defaults to event);\n"
		"                         event: sleep on the completion channel (default for connect)\n"
		"      --sealed           through sealed grants (RSEC_GRANT_SEALED). read: READs of the whole\n"
		"                         sealed grant posted as without it (-t, -Q), each into its own part of\n"
		"                         the region, opened in place (rsec_region_open) once done. write: a\n"
		"                         sealed WRITE grant carries one transfer, so each is a grant from the\n"
		"                         server, rsec_write_sealed (seal, WRITE, claim) and the server's\n"
		"                         rsec_grant_open, one at a time (no -t, -Q); needs -n\n"
		"      --blocking         write and read: the client's operations are the blocking\n"
		"                         rsec_write/rsec_read from a buffer the library never registered,\n"
		"                         one at a time (no -t, -Q; --lat for read only); the server serves\n"
		"                         as without it\n"
		"      --no-resume        full TLS handshakes only, certificates every time (the library's\n"
		"                         tls_resume_s = 0)\n"
		"      --source ADDR      client: leave from ADDR (its RDMA device is used);\n"
		"                         server: listen on ADDR (default: every IPv4 address)\n"
		"  -p, --port P           default %u\n"
		"  -d, --device NAME      RDMA device (default: the one owning the address in use)\n"
		"      --aead NAME        aes-256-gcm (default) or chacha20-poly1305\n"
		"      --timeout MS       per operation and for set-up (default 60000)\n"
		"      --json FILE        also write the results, with both sides' CPU time, as JSON\n"
		"  -h, --help\n"
		"\n"
		"A server given test options (--op, --lat, -s, -n, -D, -q) refuses a client asking for others.\n",
		BENCH_DEFAULT_PORT);
}

/* ---- one small parser per option ---- */

static bool opt_certs(struct bench_opts *o, const char *a)
{
	if (snprintf(o->certs, sizeof(o->certs), "%s", a) >= (int)sizeof(o->certs)) {
		fprintf(stderr, "--certs: '%s' is too long\n", a);
		return false;
	}
	return true;
}

static bool opt_op(struct bench_opts *o, const char *a)
{
	static const struct { const char *name; enum bench_op op; } ops[] = {
		{ "send", BENCH_OP_SEND }, { "write", BENCH_OP_WRITE },
		{ "read", BENCH_OP_READ }, { "connect", BENCH_OP_CONNECT }, { "qp", BENCH_OP_QP },
	};
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		if (strcmp(a, ops[i].name) == 0) {
			o->op = ops[i].op;
			o->set |= BENCH_SET_OP;
			return true;
		}
	}
	fprintf(stderr, "--op: '%s' is not send, write, read, connect or qp\n", a);
	return false;
}

static bool opt_lat(struct bench_opts *o, const char *a)
{
	(void)a;
	o->lat = true;
	o->set |= BENCH_SET_LAT;
	return true;
}

/* "V[,V...]": up to BENCH_LIST_MAX numbers in [min, max]. */
static bool parse_list(const char *what, const char *arg, uint64_t min, uint64_t max, bool sizes,
		       uint64_t out[static BENCH_LIST_MAX], size_t *n)
{
	char copy[512];
	if (snprintf(copy, sizeof(copy), "%s", arg) >= (int)sizeof(copy)) {
		fprintf(stderr, "%s: '%s' is too long\n", what, arg);
		return false;
	}
	*n = 0;
	for (char *tok = copy, *comma; tok; tok = comma ? comma + 1 : NULL) {
		comma = strchr(tok, ',');
		if (comma)
			*comma = '\0';
		if (*n == BENCH_LIST_MAX) {
			fprintf(stderr, "%s: at most %d values\n", what, BENCH_LIST_MAX);
			return false;
		}
		if (!cli_parse_u64(what, tok, min, max, sizes, &out[(*n)++]))
			return false;
	}
	return true;
}

static bool opt_size(struct bench_opts *o, const char *a)
{
	o->set |= BENCH_SET_SIZE;
	return parse_list("-s/--size", a, 1, BENCH_SIZE_MAX, true, o->sizes, &o->nsizes);
}

static bool opt_all(struct bench_opts *o, const char *a)
{
	(void)a;
	o->all_sizes = true;
	o->set |= BENCH_SET_SIZE;
	return true;
}

static bool opt_iters(struct bench_opts *o, const char *a)
{
	o->set |= BENCH_SET_ITERS;
	return parse_list("-n/--iters", a, 1, BENCH_ITERS_MAX, false, o->iters, &o->niters);
}

static bool opt_duration(struct bench_opts *o, const char *a)
{
	uint64_t s;
	if (!cli_parse_u64("-D/--duration", a, 1, BENCH_DURATION_MS_MAX / 1000, false, &s))
		return false;
	o->duration_ms = (uint32_t)(s * 1000);
	o->set |= BENCH_SET_DURATION;
	return true;
}

static bool opt_tx_depth(struct bench_opts *o, const char *a)
{
	return cli_parse_u64("-t/--tx-depth", a, 1, RSEC_MAX_INFLIGHT, false, &o->tx_depth);
}

static bool opt_cq_mod(struct bench_opts *o, const char *a)
{
	return cli_parse_u64("-Q/--cq-mod", a, 1, RSEC_MAX_INFLIGHT, false, &o->cq_mod);
}

static bool opt_qps(struct bench_opts *o, const char *a)
{
	o->set |= BENCH_SET_QPS;
	return cli_parse_u64("-q/--qps", a, 1, BENCH_LANES_MAX + 1, false, &o->qps);
}

/* The library checks the combination (rsec_ctx_new); these are its ranges. */
static bool opt_recv_slots(struct bench_opts *o, const char *a)
{
	uint64_t n;
	if (!cli_parse_u64("--recv-slots", a, 4, 4096, false, &n))
		return false;
	o->recv_slots = (uint32_t)n;
	return true;
}

static bool opt_slot_size(struct bench_opts *o, const char *a)
{
	uint64_t n;
	if (!cli_parse_u64("--slot-size", a, 4096, 1u << 20, true, &n))
		return false;
	o->slot_size = (uint32_t)n;
	return true;
}

static bool opt_poll(struct bench_opts *o, const char *a)
{
	o->set |= BENCH_SET_POLL;
	if (strcmp(a, "event") == 0 || strcmp(a, "busy") == 0) {
		o->poll = a[0] == 'b' ? BENCH_POLL_BUSY : BENCH_POLL_EVENT;
		return true;
	}
	fprintf(stderr, "--poll: '%s' is not event or busy\n", a);
	return false;
}

static bool opt_source(struct bench_opts *o, const char *a)
{
	uint8_t addr[16];
	if (inet_pton(AF_INET, a, addr) != 1 && inet_pton(AF_INET6, a, addr) != 1) {
		fprintf(stderr, "--source: '%s' is not an IPv4 or IPv6 address\n", a);
		return false;
	}
	o->source = a;
	return true;
}

static bool opt_sealed(struct bench_opts *o, const char *a)
{
	(void)a;
	o->sealed = true;
	o->set |= BENCH_SET_SEALED;
	return true;
}

static bool opt_blocking(struct bench_opts *o, const char *a)
{
	(void)a;
	o->blocking = true;
	return true;
}

static bool opt_no_resume(struct bench_opts *o, const char *a)
{
	(void)a;
	o->no_resume = true;
	return true;
}

static bool opt_port(struct bench_opts *o, const char *a)
{
	uint64_t p;
	if (!cli_parse_u64("-p/--port", a, 1, 65535, false, &p))
		return false;
	o->port = (uint16_t)p;
	return true;
}

static bool opt_device(struct bench_opts *o, const char *a)
{
	o->device = a;
	return true;
}

static bool opt_aead(struct bench_opts *o, const char *a)
{
	return cli_parse_aead(a, &o->aead);
}

static bool opt_timeout(struct bench_opts *o, const char *a)
{
	uint64_t ms;
	if (!cli_parse_u64("--timeout", a, 1, 3600000, false, &ms))
		return false;
	o->timeout_ms = (int)ms;
	return true;
}

static bool opt_json(struct bench_opts *o, const char *a)
{
	/* Fail now, not after a long run: the file's directory must be writable. */
	char dir[BENCH_PATH_MAX];
	const char *slash = strrchr(a, '/');
	int n = slash ? snprintf(dir, sizeof(dir), "%.*s", (int)(slash - a), a) : snprintf(dir, sizeof(dir), ".");
	if (n < 0 || (size_t)n >= sizeof(dir) || !*a || (slash && !slash[1])) {
		fprintf(stderr, "--json: '%s' is not a file name\n", a);
		return false;
	}
	if (access(dir[0] ? dir : "/", W_OK) != 0) {
		fprintf(stderr, "--json: cannot write into '%s'\n", dir[0] ? dir : "/");
		return false;
	}
	o->json_path = a;
	return true;
}

static const struct handler {
	struct option opt;
	bool (*fn)(struct bench_opts *o, const char *arg);
} handlers[] = {
	{ { "certs", required_argument, NULL, 'C' }, opt_certs },
	{ { "op", required_argument, NULL, 'O' }, opt_op },
	{ { "lat", no_argument, NULL, 'L' }, opt_lat },
	{ { "size", required_argument, NULL, 's' }, opt_size },
	{ { "all", no_argument, NULL, 'a' }, opt_all },
	{ { "iters", required_argument, NULL, 'n' }, opt_iters },
	{ { "duration", required_argument, NULL, 'D' }, opt_duration },
	{ { "tx-depth", required_argument, NULL, 't' }, opt_tx_depth },
	{ { "cq-mod", required_argument, NULL, 'Q' }, opt_cq_mod },
	{ { "qps", required_argument, NULL, 'q' }, opt_qps },
	{ { "poll", required_argument, NULL, 'P' }, opt_poll },
	{ { "recv-slots", required_argument, NULL, 'r' }, opt_recv_slots },
	{ { "slot-size", required_argument, NULL, 'z' }, opt_slot_size },
	{ { "sealed", no_argument, NULL, 'E' }, opt_sealed },
	{ { "blocking", no_argument, NULL, 'B' }, opt_blocking },
	{ { "no-resume", no_argument, NULL, 'R' }, opt_no_resume },
	{ { "source", required_argument, NULL, 'S' }, opt_source },
	{ { "port", required_argument, NULL, 'p' }, opt_port },
	{ { "device", required_argument, NULL, 'd' }, opt_device },
	{ { "aead", required_argument, NULL, 'A' }, opt_aead },
	{ { "timeout", required_argument, NULL, 'T' }, opt_timeout },
	{ { "json", required_argument, NULL, 'J' }, opt_json },
};
#define NHANDLERS (sizeof(handlers) / sizeof(handlers[0]))

/* ---- combinations ---- */

static bool fail_combo(const char *msg)
{
	fprintf(stderr, PROG ": %s\n", msg);
	return false;
}

static bool one_sided(const struct bench_opts *o)
{
	return o->op == BENCH_OP_WRITE || o->op == BENCH_OP_READ;
}

/* What rdmasec-bench cannot do is refused, never silently ignored. */
static bool check_depth(const struct bench_opts *o)
{
	if (o->qps > 1 && (!one_sided(o) || o->lat || o->sealed || o->blocking))
		return fail_combo("-q > 1 is for write and read bandwidth through posted operations (not --lat, "
				  "--sealed or --blocking)");
	if ((o->tx_depth || o->cq_mod) && !one_sided(o))
		return fail_combo("-t and -Q are for write and read: rsec_send's window is the receiver's "
				  "flow-control credits (its recv_slots), and connect has none");
	if (o->tx_depth > 1 && o->lat)
		return fail_combo("-t > 1 is for bandwidth: a latency test keeps one operation in flight, as "
				  "perftest's");
	if (o->cq_mod && o->lat)
		return fail_combo("-Q is for bandwidth: a latency test asks for every completion");
	if (o->poll == BENCH_POLL_BUSY && o->op == BENCH_OP_CONNECT)
		return fail_combo("--poll busy is not for --op connect: set-up sleeps on its sockets");
	if (o->sealed && !one_sided(o))
		return fail_combo("--sealed is for --op write and read: messages are always sealed");
	if (o->sealed && o->op == BENCH_OP_WRITE && (o->tx_depth > 1 || o->cq_mod > 1))
		return fail_combo("--sealed write runs one transfer at a time (each its own grant): no -t or -Q");
	if (o->op == BENCH_OP_WRITE && o->lat && !o->sealed && o->duration_ms)
		return fail_combo("--op write --lat is a ping-pong of counted writes (as ib_write_lat): needs -n");
	if (o->blocking && (!one_sided(o) || o->sealed))
		return fail_combo("--blocking is for --op write and read, not sealed: rsec_write and rsec_read "
				  "from a plain buffer");
	if (o->blocking && (o->tx_depth > 1 || o->cq_mod > 1))
		return fail_combo("--blocking waits for each operation: no -t or -Q");
	if (o->blocking && o->lat && o->op == BENCH_OP_WRITE)
		return fail_combo("--blocking --lat is for read: write latency is a ping-pong of posted writes");
	if (o->sealed && o->op == BENCH_OP_WRITE && o->duration_ms)
		return fail_combo("--sealed write needs -n: each write gets its own grant, counted in advance");
	return true;
}

/* The defaults that depend on the test: perftest's, as far as they apply. */
static void set_defaults(struct bench_opts *o)
{
	bool client = o->host != NULL;
	if (!o->qps)
		o->qps = 1;
	if (!(o->set & BENCH_SET_POLL))
		o->poll = o->op == BENCH_OP_SEND || (client && one_sided(o)) ? BENCH_POLL_BUSY : BENCH_POLL_EVENT;
	if (!one_sided(o))
		return;
	if (!o->tx_depth)
		o->tx_depth = o->lat || o->blocking || (o->sealed && o->op == BENCH_OP_WRITE) ? 1 : BENCH_DEFAULT_TX_DEPTH;
	if (!o->cq_mod)
		o->cq_mod = BENCH_DEFAULT_CQ_MOD;
	if (o->cq_mod > o->tx_depth)
		o->cq_mod = o->tx_depth;
}

static bool check_combos(struct bench_opts *o)
{
	if (!o->certs[0])
		return fail_combo("no credentials: give --certs DIR (rdmasec-keygen writes one)");
	if (o->nsizes && o->all_sizes)
		return fail_combo("give -s or -a, not both");
	if (o->niters && o->duration_ms)
		return fail_combo("give -n or -D, not both");
	if (o->niters > 1 && o->niters != o->nsizes)
		return fail_combo("-n with several values needs as many -s sizes (one count per size)");
	if (o->op == BENCH_OP_CONNECT && (o->set & (BENCH_SET_SIZE | BENCH_SET_DURATION)))
		return fail_combo("--op connect takes -n (connections), not -s, -a or -D");
	if (o->op == BENCH_OP_QP && (o->set & (BENCH_SET_SIZE | BENCH_SET_DURATION)))
		return fail_combo("--op qp takes -n (queue pairs), not -s, -a or -D");
	if (o->op == BENCH_OP_QP && o->niters && o->iters[0] > BENCH_QP_ITERS_MAX)
		return fail_combo("--op qp opens at most 250 queue pairs on one connection (-n 1..250)");
	if (!check_depth(o))
		return false;
	set_defaults(o);
	if (o->op == BENCH_OP_CONNECT || o->op == BENCH_OP_QP)
		o->lat = true; /* set-up times are latencies */
	else if (!o->nsizes && !o->all_sizes)
		o->sizes[o->nsizes++] = o->lat ? BENCH_DEFAULT_SIZE_LAT : BENCH_DEFAULT_SIZE_BW;
	if (!o->niters && !o->duration_ms)
		o->iters[o->niters++] = BENCH_DEFAULT_ITERS;
	return true;
}

/* ---- main ---- */

static const struct handler *find_handler(int key)
{
	for (size_t i = 0; i < NHANDLERS; i++)
		if (handlers[i].opt.val == key)
			return &handlers[i];
	return NULL;
}

/* 0: parsed; 1: --help shown; 2: bad usage (said why). */
static int parse_args(int argc, char **argv, struct bench_opts *o)
{
	struct option longopts[NHANDLERS + 2];
	for (size_t i = 0; i < NHANDLERS; i++)
		longopts[i] = handlers[i].opt;
	longopts[NHANDLERS] = (struct option){ "help", no_argument, NULL, 'h' };
	longopts[NHANDLERS + 1] = (struct option){ 0 };
	int c;
	while ((c = getopt_long(argc, argv, "C:s:an:D:t:Q:q:p:d:h", longopts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 1;
		}
		const struct handler *h = find_handler(c);
		if (!h) {
			usage(stderr);
			return 2;
		}
		if (!h->fn(o, optarg))
			return 2;
	}
	if (argc - optind > 1) {
		fail_combo("give at most one HOST (without one, serve)");
		return 2;
	}
	o->host = optind < argc ? argv[optind] : NULL;
	return check_combos(o) ? 0 : 2;
}

int main(int argc, char **argv)
{
	struct bench_opts o = { .op = BENCH_OP_SEND, .port = BENCH_DEFAULT_PORT, .timeout_ms = 60000 };
	int rc = parse_args(argc, argv, &o);
	if (rc)
		return rc == 1 ? 0 : rc;
	setvbuf(stdout, NULL, _IOLBF, 0);
	rc = o.host ? bench_client_run(&o) : bench_server_run(&o);
	return rc < 0 ? 1 : 0;
}
