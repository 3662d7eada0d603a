/* SPDX-License-Identifier: MIT */
/* rdmasec-blk: the direct client of rdmasec-blkd (docs/blk.md). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "blk_cli.h"
#include "busy_poll.h"
#include "cli.h"

static const struct command {
	const char *name;
	int (*fn)(struct blk_cli *c);
	bool writes;
	const char *what;
} commands[] = {
	{ "bench", blk_bench_main, false, "load the export like fio and report IOPS, bandwidth, latency, CPU" },
	{ "info", blk_info_main, false, "print what the target answered to OPEN" },
	{ "read", blk_read_main, false, "--offset O --length L: the export's bytes to standard output" },
	{ "write", blk_write_main, true, "--offset O [--length L]: standard input to the export, then FLUSH" },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: rdmasec-blk COMMAND --server HOST[:PORT] --certs DIR --export NAME [OPTIONS]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-6s %s\n", commands[i].name, commands[i].what);
	fprintf(f,
		"\nconnection:\n"
		"  -S, --server HOST[:PORT]   the target (port default %u; [IPv6]:PORT)\n"
		"  -C, --certs DIR            ca.pem, client.pem, client.key (rdmasec-keygen)\n"
		"  -e, --export NAME          the export to open\n"
		"      --server-name NAME     name the target's certificate must carry (default: HOST)\n"
		"  -s, --source ADDR          leave from this local address (its RDMA device is used)\n"
		"  -d, --device NAME          RDMA device\n"
		"  -t, --timeout MS           set-up, and the longest a command may take (default 30000)\n"
		"      --busy-poll            spin on completions (lowest latency, a core while waiting)\n"
		"      --busy-poll-us US      while 1..4 commands are in flight, poll completions up to\n"
		"                             US before sleeping (adaptive; default %u, 0: never, ..%u)\n"
		"      --rekey-s SECONDS      renew the keys at least this often (default 3600, 1..604800)\n"
		"      --rekey-bytes BYTES    ... and every BYTES sent and received (K/M/G; default 64G,\n"
		"                             1..128G)\n"
		"      --pool-window-s S      grant each queue's I/O slots to the target under new keys\n"
		"                             every S seconds (default 10, 1..%u)\n"
		"      --queue-depth N        commands in flight per queue, 1..%u (default 1; the target\n"
		"                             may grant fewer, and bench says so; --iodepth: deprecated)\n"
		"      --queues N             I/O queues (queue pairs), 1..%u (default 1)\n"
		"bench (fio's knobs):\n"
		"      --rw read|write|randread|randwrite|randrw   (default randread; randrw: 50%% reads)\n"
		"      --bs SIZE              bytes per I/O, K/M suffixes (default 4K)\n"
		"      --runtime S            seconds (default 10; --verify runs end after one pass instead)\n"
		"      --ramp-time S          run S seconds first without counting them (fio's ramp_time;\n"
		"                             default 0, at most 3600; not with --verify)\n"
		"      --size SIZE            bytes of the export used, from offset 0 (default: all)\n"
		"      --verify               write a pattern of each block's offset and --seed; check every\n"
		"                             read (writes: one pass, then a read-back pass)\n"
		"      --seed N               the pattern's seed (default 1)\n"
		"      --json                 one JSON object instead of text\n"
		"read / write:\n"
		"      --offset O --length L  bytes, multiples of the block size\n"
		"      --reconnect MS         a session that ends is replaced within MS and what was in\n"
		"                             flight sent again (default 30000; 0: fail at once)\n"
		"      --fua                  write: each command on stable storage when it completes\n"
		"  -h, --help\n",
		BLK_DEFAULT_PORT, BLK_CLIENT_BUSY_POLL_US, BUSY_POLL_MAX_US, BLK_POOL_WINDOW_S_MAX, BLK_QD_MAX, BLK_QUEUES_MAX);
}

enum { OPT_SERVER_NAME = 256, OPT_BUSY, OPT_RW, OPT_BS, OPT_DEPTH, OPT_QUEUES, OPT_RUNTIME, OPT_SIZE, OPT_VERIFY,
       OPT_SEED, OPT_JSON, OPT_OFFSET, OPT_LENGTH, OPT_FUA, OPT_REKEY_S, OPT_REKEY_BYTES,
       OPT_POOL_WINDOW, OPT_RECONNECT, OPT_BUSY_US, OPT_RAMP, OPT_IODEPTH };

static bool parse_u16(const char *what, const char *s, uint64_t max, uint16_t *out)
{
	uint64_t v;
	if (!cli_parse_u64(what, s, 1, max, false, &v))
		return false;
	*out = (uint16_t)v;
	return true;
}

static bool parse_u32(const char *what, const char *s, uint64_t min, uint64_t max, uint32_t *out)
{
	uint64_t v;
	if (!cli_parse_u64(what, s, min, max, false, &v))
		return false;
	*out = (uint32_t)v;
	return true;
}

static bool parse_server(struct blk_cli *c, const char *s)
{
	uint16_t port = BLK_DEFAULT_PORT;
	if (!cli_parse_listen(s, c->host, sizeof(c->host), &port) || !c->host[0]) {
		fprintf(stderr, "rdmasec-blk: --server: \"%s\" is not HOST, HOST:PORT or [IPv6]:PORT\n", s);
		return false;
	}
	c->conn.host = c->host;
	c->conn.port = port;
	return true;
}

static bool parse_option(struct blk_cli *c, int opt)
{
	uint64_t ms;
	switch (opt) {
	case 'S': return parse_server(c, optarg);
	case 'C': c->conn.certs_dir = optarg; return true;
	case 'e': c->conn.export_name = optarg; return true;
	case OPT_SERVER_NAME: c->conn.server_name = optarg; return true;
	case 's': c->conn.source = optarg; return true;
	case 'd': c->conn.device = optarg; return true;
	case 't':
		if (!cli_parse_u64("--timeout", optarg, 1, 3600000, false, &ms))
			return false;
		c->conn.timeout_ms = (int)ms;
		return true;
	case OPT_BUSY: c->conn.busy_poll = true; return true;
	case OPT_BUSY_US: return parse_u32("--busy-poll-us", optarg, 0, BUSY_POLL_MAX_US, &c->conn.busy_poll_us);
	case OPT_REKEY_S: return parse_u32("--rekey-s", optarg, 1, RSEC_MAX_REKEY_S, &c->conn.rekey_s);
	case OPT_REKEY_BYTES:
		return cli_parse_u64("--rekey-bytes", optarg, 1, RSEC_MAX_REKEY_BYTES, true, &c->conn.rekey_bytes);
	case OPT_POOL_WINDOW:
		return parse_u32("--pool-window-s", optarg, 1, BLK_POOL_WINDOW_S_MAX, &c->conn.pool_window_s);
	case OPT_RECONNECT: return parse_u32("--reconnect", optarg, 0, 3600000, &c->conn.reconnect_ms);
	case OPT_RW: c->rw = optarg; return true;
	case OPT_BS: return cli_parse_u64("--bs", optarg, 512, BLK_TRANSFER_MAX, true, &c->bs);
	case OPT_DEPTH: return parse_u16("--queue-depth", optarg, BLK_QD_MAX, &c->conn.queue_depth);
	case OPT_IODEPTH:
		fprintf(stderr, "rdmasec-blk: --iodepth is deprecated: it is --queue-depth now\n");
		return parse_u16("--iodepth", optarg, BLK_QD_MAX, &c->conn.queue_depth);
	case OPT_QUEUES: return parse_u16("--queues", optarg, BLK_QUEUES_MAX, &c->conn.queues);
	case OPT_RUNTIME: return cli_parse_u64("--runtime", optarg, 1, 86400, false, &c->runtime_s);
	case OPT_RAMP: return cli_parse_u64("--ramp-time", optarg, 0, 3600, false, &c->ramp_s);
	case OPT_SIZE: return cli_parse_u64("--size", optarg, 512, BLK_SIZE_MAX, true, &c->size);
	case OPT_VERIFY: c->verify = true; return true;
	case OPT_SEED: return cli_parse_u64("--seed", optarg, 0, UINT64_MAX, false, &c->seed);
	case OPT_JSON: c->json = true; return true;
	case OPT_OFFSET: return cli_parse_u64("--offset", optarg, 0, BLK_SIZE_MAX, true, &c->offset);
	case OPT_LENGTH:
		c->length_set = true;
		return cli_parse_u64("--length", optarg, 1, BLK_SIZE_MAX, true, &c->length);
	case OPT_FUA: c->fua = true; return true;
	default: return false;
	}
}

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

static const struct option long_opts[] = {
	{ "server", required_argument, NULL, 'S' },   { "certs", required_argument, NULL, 'C' },
	{ "export", required_argument, NULL, 'e' },   { "server-name", required_argument, NULL, OPT_SERVER_NAME },
	{ "source", required_argument, NULL, 's' },   { "device", required_argument, NULL, 'd' },
	{ "timeout", required_argument, NULL, 't' },  { "busy-poll", no_argument, NULL, OPT_BUSY },
	{ "rw", required_argument, NULL, OPT_RW },    { "bs", required_argument, NULL, OPT_BS },
	{ "queue-depth", required_argument, NULL, OPT_DEPTH }, { "queues", required_argument, NULL, OPT_QUEUES },
	{ "iodepth", required_argument, NULL, OPT_IODEPTH },
	{ "runtime", required_argument, NULL, OPT_RUNTIME }, { "size", required_argument, NULL, OPT_SIZE },
	{ "verify", no_argument, NULL, OPT_VERIFY },  { "seed", required_argument, NULL, OPT_SEED },
	{ "json", no_argument, NULL, OPT_JSON },      { "offset", required_argument, NULL, OPT_OFFSET },
	{ "length", required_argument, NULL, OPT_LENGTH }, { "fua", no_argument, NULL, OPT_FUA },
	{ "rekey-s", required_argument, NULL, OPT_REKEY_S },
	{ "rekey-bytes", required_argument, NULL, OPT_REKEY_BYTES },
	{ "pool-window-s", required_argument, NULL, OPT_POOL_WINDOW },
	{ "reconnect", required_argument, NULL, OPT_RECONNECT },
	{ "busy-poll-us", required_argument, NULL, OPT_BUSY_US },
	{ "ramp-time", required_argument, NULL, OPT_RAMP },
	{ "help", no_argument, NULL, 'h' },           { 0 },
};

int main(int argc, char **argv)
{
	if (argc >= 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
		usage(stdout);
		return 0;
	}
	const struct command *cmd = argc >= 2 ? find_command(argv[1]) : NULL;
	if (!cmd) {
		if (argc >= 2)
			fprintf(stderr, "rdmasec-blk: unknown command \"%s\"\n", argv[1]);
		usage(stderr);
		return 2;
	}
	struct blk_cli c = { .rw = "randread", .bs = 4096, .runtime_s = 10, .seed = 1 };
	c.conn.queue_depth = 1;
	c.conn.queues = 1;
	c.conn.reconnect_ms = 30000; /* read, write (blk_sync); bench measures one session */
	c.conn.busy_poll_us = BLK_CLIENT_BUSY_POLL_US;
	c.conn.write = cmd->writes;
	int opt;
	optind = 2;
	while ((opt = getopt_long(argc, argv, "S:C:e:s:d:t:h", long_opts, NULL)) != -1) {
		if (opt == 'h') {
			usage(stdout);
			return 0;
		}
		if (!parse_option(&c, opt)) {
			if (opt == '?' || opt == ':')
				usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "rdmasec-blk: unexpected argument \"%s\"\n", argv[optind]);
		return 2;
	}
	if (!c.conn.host || !c.conn.certs_dir || !c.conn.export_name) {
		fprintf(stderr, "rdmasec-blk: give --server, --certs and --export\n");
		return 2;
	}
	return cmd->fn(&c);
}
