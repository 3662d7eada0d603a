/* SPDX-License-Identifier: MIT */
/* rdmasec-blkd: options and configuration, then the event loop (target.c). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blkd_conf.h"
#include "daemon_cli.h"
#include "target.h"
#include "trust_conf.h"

#define SHORT_OPTS DAEMON_SHORT_OPTS "e:"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rdmasec-blkd [OPTIONS]\n"
		"\n"
		"Serves block devices (exports: files or block devices) over librdmasec to authenticated\n"
		"identities, with NVMe-oF's flow: sealed command capsules and completions, data moved by\n"
		"sealed one-sided RDMA (docs/blk.md). Every OPEN, READ, WRITE and FLUSH is audited.\n"
		"\n"
		"  -f, --config FILE           INI configuration (see rdmasec-blkd(8)); flags override it\n"
		"  -C, --certs DIR             ca.pem, server.pem, server.key from DIR (rdmasec-keygen)\n"
		"      --ca FILE --cert FILE --key FILE   the same, one by one\n"
		"      --crl FILE              refuse certificates revoked in FILE (PEM CRLs; read at start and SIGHUP)\n"
		"      --rekey-s SECONDS       renew each queue pair's keys at least this often (default 3600,\n"
		"                              1..604800)\n"
		"      --rekey-bytes BYTES     ... and every BYTES sent and received (default 64G, 1..128G)\n"
		"  -l, --listen ADDR[:PORT]    default 0.0.0.0:%u\n"
		"  -d, --device NAME           RDMA device (default: the one owning each connection's address)\n"
		"  -e, --export NAME=PATH[,size=SIZE][,bs=512|4096][,ro][,buffered][,max-sessions=N]\n"
		"                              serve PATH (a file, created at SIZE if missing, or a block\n"
		"                              device) as NAME; ro: nobody writes; buffered: no O_DIRECT\n"
		"      --rw RULE               identity (as the audit log shows it, such as\n"
		"                              'CN=client,O=rdmasec-test'), prefix ending in /* (such as\n"
		"                              'spiffe://prod.example/db/*') or '*' (any) that may read\n"
		"                              and write the last --export; repeat for more\n"
		"      --ro RULE               the same, for identities that may only read; repeat\n"
		"      --audit FILE            append JSON-lines audit records to FILE (created 0600)\n"
		"      --metrics FILE          per-export counters in Prometheus text format, rewritten\n"
		"                              atomically at most once a second after a change\n"
		"      --queue-depth N         commands in flight per queue pair, at most (default 32, 1..64)\n"
		"      --queues N              queue pairs per session, at most (default 4, 1..64)\n"
		"      --max-transfer BYTES    bytes per command (default 1M, a multiple of 4K up to 8M)\n"
		"      --max-inline BYTES      in-capsule write bytes (default 32K, a multiple of 4K up to 60K)\n"
		"      --max-sessions N        connections at once, all exports (default 64)\n"
		"      --max-sessions-per-identity N\n"
		"                              ... of one identity (default: half of --max-sessions)\n"
		"      --memory-limit BYTES    command buffers of all sessions (default 1G)\n"
		"      --memory-per-identity BYTES\n"
		"                              ... of one identity's sessions (default: half of --memory-limit)\n"
		"      --rebuilds-per-min N    self-healing of a queue pair's data path (default 6; 0: close)\n"
		"      --store-threads N       worker threads for the backing stores' I/O (default 4)\n"
		"      --busy-poll-us N        poll completions up to N us before sleeping, adapted to\n"
		"                              how soon events come (default 2000; 0: never; at most 10000)\n"
		"      --trust-etcd [http[s]://]HOST:PORT[,HOST:PORT...]/PREFIX\n"
		"                              cluster trust: the CA bundle, CRL and allow rules (who may\n"
		"                              connect at all) from etcd keys PREFIX/ca, PREFIX/crl,\n"
		"                              PREFIX/allow, read each second and applied live as a reload;\n"
		"                              replaces --ca and --crl; --rw and --ro stay local. A\n"
		"                              malformed entry: refused at start, kept out at run time.\n"
		"                              etcd unreachable: the last good copy on disk\n"
		"      --trust-state-dir DIR   where that last good copy lives (default\n"
		"                              /var/lib/rdmasec/blkd-trust)\n"
		"  -v, --verbose               debug events in the log\n"
		"  -h, --help\n"
		"\n"
		"Logs one logfmt line per event on stderr. SIGINT/SIGTERM: close every session, exit.\n"
		"SIGHUP: reload the configuration, CA, certificate, key and CRL (all or nothing), close\n"
		"clients revoked since; --trust-etcd's changes are applied the same way.\n",
		BLK_DEFAULT_PORT);
}

struct args {
	struct blkd_conf *conf;
	const char *last_export; /* the export --rw and --ro apply to */
	char err[600];
};

static bool set(void *arg, const char *section, const char *key, const char *value)
{
	struct args *a = arg;
	if (blkd_conf_set(a->conf, section, key, value, a->err, sizeof(a->err)) == 0)
		return true;
	fprintf(stderr, "rdmasec-blkd: %s\n", a->err);
	return false;
}

static bool add_export(struct args *a, const char *spec)
{
	if (blkd_conf_export_spec(a->conf, spec, a->err, sizeof(a->err)) < 0) {
		fprintf(stderr, "rdmasec-blkd: %s\n", a->err);
		return false;
	}
	a->last_export = a->conf->exports[a->conf->n_exports - 1].name;
	return true;
}

static bool add_id(struct args *a, const char *key, const char *id)
{
	if (!a->last_export) {
		fprintf(stderr, "rdmasec-blkd: --%s must follow the --export it applies to\n", key);
		return false;
	}
	char section[BLK_NAME_MAX + 16];
	snprintf(section, sizeof(section), "export %s", a->last_export);
	return set(a, section, key, id);
}

/* rdmasec-blkd's own long options. */
enum { OPT_RW = DAEMON_OPT_OWN, OPT_RO, OPT_QD, OPT_QUEUES, OPT_MAX_TRANSFER, OPT_MAX_INLINE, OPT_MAX_SESSIONS,
       OPT_MAX_SESSIONS_ID, OPT_MEMORY, OPT_MEMORY_ID, OPT_REBUILDS, OPT_STORE_THREADS, OPT_BUSY_POLL };

/* The flags that set one key of the configuration file (which they override). */
static const struct cli_conf_flag conf_flags[] = {
	DAEMON_CONF_FLAGS("target"),
	{ OPT_QD, "target", "queue_depth" },
	{ OPT_QUEUES, "target", "queues" },
	{ OPT_MAX_TRANSFER, "target", "max_transfer" },
	{ OPT_MAX_INLINE, "target", "max_inline" },
	{ OPT_MAX_SESSIONS, "target", "max_sessions" },
	{ OPT_MAX_SESSIONS_ID, "target", "max_sessions_per_identity" },
	{ OPT_MEMORY, "target", "memory_limit" },
	{ OPT_MEMORY_ID, "target", "memory_per_identity" },
	{ OPT_REBUILDS, "target", "rebuilds_per_min" },
	{ OPT_STORE_THREADS, "target", "store_threads" },
	{ OPT_BUSY_POLL, "target", "busy_poll_us" },
	{ 0 },
};

static const struct option long_opts[] = {
	DAEMON_LONG_OPTS,
	{ "export", required_argument, NULL, 'e' },
	{ "rw", required_argument, NULL, OPT_RW },
	{ "ro", required_argument, NULL, OPT_RO },
	{ "queue-depth", required_argument, NULL, OPT_QD },
	{ "queues", required_argument, NULL, OPT_QUEUES },
	{ "max-transfer", required_argument, NULL, OPT_MAX_TRANSFER },
	{ "max-inline", required_argument, NULL, OPT_MAX_INLINE },
	{ "max-sessions", required_argument, NULL, OPT_MAX_SESSIONS },
	{ "max-sessions-per-identity", required_argument, NULL, OPT_MAX_SESSIONS_ID },
	{ "memory-limit", required_argument, NULL, OPT_MEMORY },
	{ "memory-per-identity", required_argument, NULL, OPT_MEMORY_ID },
	{ "rebuilds-per-min", required_argument, NULL, OPT_REBUILDS },
	{ "store-threads", required_argument, NULL, OPT_STORE_THREADS },
	{ "busy-poll-us", required_argument, NULL, OPT_BUSY_POLL },
	{ 0 },
};

/* --export, and --rw and --ro of the last one. */
static int own(void *arg, int opt, const char *value)
{
	switch (opt) {
	case 'e': return add_export(arg, value);
	case OPT_RW: return add_id(arg, "rw", value);
	case OPT_RO: return add_id(arg, "ro", value);
	default: return -1;
	}
}

static int parse_file(void *arg, const char *path, char *err, size_t errlen)
{
	struct args *a = arg;
	return blkd_conf_parse_file(a->conf, path, err, errlen);
}

static const struct daemon_cli cli = {
	.name = "rdmasec-blkd", .short_opts = SHORT_OPTS, .long_opts = long_opts, .conf_flags = conf_flags,
	.usage = usage, .parse_file = parse_file, .set = set, .own = own,
};

/* The command line, kept for SIGHUP: the file is read again and the flags override it again. */
struct cmdline {
	int argc;
	char **argv;
};

/*
 * Defaults, then the configuration file, then the flags over it, then the
 * cross-key checks. 0; 1: the file or the checks failed (err); 2: bad usage
 * (said on stderr); -1: --help was printed.
 */
static int conf_read(const struct cmdline *cl, struct blkd_conf *conf, char *err, size_t errlen)
{
	struct args a = { .conf = conf };
	int rc = daemon_cli_read(&cli, cl->argc, cl->argv, &a, err, errlen);
	if (rc == 0 && blkd_conf_check(a.conf, a.err, sizeof(a.err)) < 0) {
		snprintf(err, errlen, "%s", a.err);
		return 1;
	}
	return rc;
}

/* --trust-etcd: the context reads the CA and CRL of the last good copy and takes its allow rules. */
static struct trust_conf_slots trust_slots(struct blkd_conf *conf)
{
	return (struct trust_conf_slots){ .ca = conf->ca, .ca_cap = sizeof(conf->ca), .crl = conf->crl,
					  .crl_cap = sizeof(conf->crl), .allow = conf->allow, .n_allow = &conf->n_allow };
}

/* target_run's reader at a reload: the same command line, the file (and the trust copy) as they are now. */
static struct blkd_conf *conf_reread(void *arg, char *err, size_t errlen)
{
	struct blkd_conf *conf = blkd_conf_new();
	int rc = conf ? conf_read(arg, conf, err, errlen) : 1;
	if (!conf)
		snprintf(err, errlen, "out of memory");
	else if (rc > 1 || rc < 0)
		snprintf(err, errlen, "the command line no longer parses");
	if (rc == 0 && conf->etcd[0]) {
		struct trust_conf_slots to = trust_slots(conf);
		rc = trust_conf_apply(conf->state_dir, &to, err, errlen) < 0 ? 1 : 0;
	}
	if (rc == 0)
		return conf;
	free(conf);
	return NULL;
}

int main(int argc, char **argv)
{
	struct cmdline cl = { argc, argv };
	struct blkd_conf *conf = blkd_conf_new();
	if (!conf) {
		fprintf(stderr, "rdmasec-blkd: out of memory\n");
		return 1;
	}
	char err[600] = "";
	int rc = conf_read(&cl, conf, err, sizeof(err));
	if (rc == 1)
		fprintf(stderr, "rdmasec-blkd: %s\n", err);
	if (rc != 0) {
		free(conf);
		return rc < 0 ? 0 : 2;
	}
	struct trust_watch *watch = NULL;
	struct trust_conf_slots to = trust_slots(conf);
	int status = conf->etcd[0] ? trust_conf_start("rdmasec-blkd", conf->etcd, conf->state_dir, &to, &watch) : 0;
	if (status == 0)
		status = target_run(conf, conf_reread, &cl, watch);
	trust_watch_stop(watch);
	free(conf);
	return status;
}
