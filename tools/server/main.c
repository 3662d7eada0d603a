/* SPDX-License-Identifier: MIT */
/* rdmasec-server: options and configuration, then the event loop. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "cli.h"
#include "conf.h"
#include "daemon_cli.h"
#include "log.h"
#include "psk.h"
#include "server.h"
#include "trust_conf.h"

static const char usage_text[] =
	"usage: rdmasec-server [OPTIONS]\n"
	"\n"
	"Serves secure RDMA connections: TLS 1.3 with mutual authentication carries every\n"
	"connection parameter; messages are sealed; one-sided access only through grants.\n"
	"Clients' messages are echoed; 'write' and 'read' go through short-lived grants.\n"
	"\n"
	"  -f, --config FILE           INI configuration (see rdmasec-server(8)); flags override it\n"
	"  -C, --certs DIR             ca.pem, server.pem, server.key from DIR (rdmasec-keygen)\n"
	"      --ca FILE --cert FILE --key FILE   the same, one by one\n"
	"      --crl FILE              refuse certificates revoked in FILE (PEM CRLs; read at start and SIGHUP)\n"
	"      --psk-file FILE         external-PSK mode instead of certificates (hex, mode 0600)\n"
	"      --psk-identity NAME     the identity clients must present with the PSK\n"
	"      --tls-resume SECONDS    certificate mode: let clients resume their TLS session for\n"
	"                              SECONDS after their certificate was checked (default 600,\n"
	"                              at most 86400); 0: a full handshake every time\n"
	"      --rekey-s SECONDS       renew each queue pair's keys at least this often (default 3600,\n"
	"                              1..604800)\n"
	"      --rekey-bytes BYTES     ... and every BYTES sent and received (default 2^36, 1..2^37)\n"
	"  -l, --listen ADDR[:PORT]    default 0.0.0.0:7471\n"
	"  -d, --device NAME           RDMA device (default: the one owning each connection's address)\n"
	"      --max-clients N         connections at once, handshakes included (default 1024)\n"
	"      --max-per-identity N    connections per authenticated identity (default 16)\n"
	"      --handshake-timeout MS  set-up deadline per connection (default 5000)\n"
	"      --max-handshakes-per-source N   handshakes in progress at once from one source\n"
	"                              (an IPv4 address or an IPv6 /64; default 256)\n"
	"      --handshake-rate N      new handshakes a second per source, and the burst\n"
	"                              allowed after a quiet second (default 200)\n"
	"      --max-handshakes N      handshakes in progress at once, all sources (default 1024);\n"
	"                              at the limit a source over its fair share gives way\n"
	"      --handshake-rate-total N   new handshakes a second, all sources (default 1000);\n"
	"                              a source with none in progress is never refused by it\n"
	"      --worker-threads N      threads that run TLS handshakes and other heavy work, off\n"
	"                              the thread serving established sessions (default 2)\n"
	"      --max-msg BYTES         largest message and grant (default 16M)\n"
	"      --recv-slots N --slot-size BYTES   receive buffers per connection\n"
	"      --rebuilds-per-min N    self-healing: how often a minute a connection's data path\n"
	"                              may be rebuilt when a forged packet or a QP error breaks\n"
	"                              it (default 6, at most 60); 0: close the connection\n"
	"      --resume-grace MS       how long a session whose TLS connection was lost (client\n"
	"                              crash, network cut, forged reset) waits for its client to\n"
	"                              resume it (default 10000, at most 600000; 0: close it).\n"
	"                              Only clients that offer it are kept\n"
	"      --grant-mode MODE       auto (default), mw (type-2 windows only) or mr (a fresh\n"
	"                              registration per grant, for devices without type-2 windows)\n"
	"      --grant-ttl MS          a write/read grant's lifetime if unused (default 30000)\n"
	"      --verify-timeout MS     how long to wait for a client's data MAC (VERIFY) after\n"
	"                              it reports a write done (default 5000)\n"
	"      --audit FILE            append JSON-lines audit records to FILE (created 0600)\n"
	"      --qp-pool N             QPs kept ready per device, each connection draws one at\n"
	"                              random so QPNs are not sequential (default 32; 1: off)\n"
	"      --metrics FILE          per-peer and server counters in Prometheus text format,\n"
	"                              rewritten atomically each second after a change\n"
	"      --allow RULE            only identities RULE takes may connect: an identity, a\n"
	"                              prefix ending in /* (spiffe://prod.example/storage/*)\n"
	"                              or *; repeat for more (added to the file's [authz] allow).\n"
	"                              None: every authenticated identity\n"
	"      --trust-etcd [http[s]://]HOST:PORT[,HOST:PORT...]/PREFIX\n"
	"                              cluster trust: the CA bundle, CRL and extra allow rules\n"
	"                              from etcd keys PREFIX/ca, PREFIX/crl, PREFIX/allow, read\n"
	"                              each second and applied live as a reload; replaces --ca\n"
	"                              and --crl. A malformed entry: refused at start, kept out\n"
	"                              at run time. etcd unreachable: the last good copy\n"
	"      --trust-state-dir DIR   where that last good copy lives (default\n"
	"                              /var/lib/rdmasec/trust)\n"
	"  -v, --verbose               debug events in the log\n"
	"  -h, --help\n"
	"\n"
	"Logs one logfmt line per event on stderr. SIGINT/SIGTERM: tell every client, then exit.\n"
	"SIGUSR1: log the counters and rewrite the metrics file. SIGHUP: reload the configuration,\n"
	"CA, certificate, key and CRL (all or nothing), close clients revoked since.\n";

static void usage(FILE *f)
{
	fputs(usage_text, f);
}

static bool set(void *c, const char *section, const char *key, const char *value)
{
	char err[256];
	if (rsec_conf_set(c, section, key, value, err, sizeof(err)) < 0) {
		fprintf(stderr, "rdmasec-server: %s\n", err);
		return false;
	}
	return true;
}

/* The server's own long options. */
enum { OPT_PSK_FILE = DAEMON_OPT_OWN, OPT_PSK_ID, OPT_MAX_CLIENTS, OPT_MAX_PER_ID, OPT_HS_TIMEOUT, OPT_MAX_MSG,
       OPT_RECV_SLOTS, OPT_SLOT_SIZE, OPT_GRANT_MODE, OPT_GRANT_TTL, OPT_QP_POOL, OPT_HS_PER_SOURCE, OPT_HS_RATE,
       OPT_VERIFY_TIMEOUT, OPT_TLS_RESUME, OPT_REBUILDS, OPT_GRACE, OPT_MAX_HS, OPT_HS_RATE_TOTAL, OPT_WORKERS,
       OPT_ALLOW };

/* The flags that set one key of the configuration file (which they override). */
static const struct cli_conf_flag conf_flags[] = {
	DAEMON_CONF_FLAGS("server"),
	{ OPT_PSK_FILE, "tls", "psk_file" },
	{ OPT_PSK_ID, "tls", "psk_identity" },
	{ OPT_TLS_RESUME, "tls", "resume_s" },
	{ OPT_MAX_CLIENTS, "server", "max_clients" },
	{ OPT_MAX_PER_ID, "server", "max_per_identity" },
	{ OPT_HS_TIMEOUT, "server", "handshake_timeout_ms" },
	{ OPT_HS_PER_SOURCE, "server", "max_handshakes_per_source" },
	{ OPT_HS_RATE, "server", "handshake_rate_per_source" },
	{ OPT_MAX_HS, "server", "max_handshakes" },
	{ OPT_HS_RATE_TOTAL, "server", "handshake_rate" },
	{ OPT_WORKERS, "server", "worker_threads" },
	{ OPT_VERIFY_TIMEOUT, "grants", "verify_timeout_ms" },
	{ OPT_MAX_MSG, "limits", "max_msg" },
	{ OPT_RECV_SLOTS, "limits", "recv_slots" },
	{ OPT_SLOT_SIZE, "limits", "slot_size" },
	{ OPT_REBUILDS, "limits", "rebuilds_per_min" },
	{ OPT_GRACE, "server", "resume_grace_ms" },
	{ OPT_GRANT_MODE, "grants", "grant_mode" },
	{ OPT_GRANT_TTL, "grants", "grant_ttl_ms" },
	{ OPT_QP_POOL, "server", "qp_pool" },
	{ OPT_ALLOW, "authz", "allow" },
	{ 0 },
};

static const struct option long_opts[] = {
	DAEMON_LONG_OPTS,
	{ "psk-file", required_argument, NULL, OPT_PSK_FILE },
	{ "psk-identity", required_argument, NULL, OPT_PSK_ID },
	{ "tls-resume", required_argument, NULL, OPT_TLS_RESUME },
	{ "max-clients", required_argument, NULL, OPT_MAX_CLIENTS },
	{ "max-per-identity", required_argument, NULL, OPT_MAX_PER_ID },
	{ "handshake-timeout", required_argument, NULL, OPT_HS_TIMEOUT },
	{ "max-handshakes-per-source", required_argument, NULL, OPT_HS_PER_SOURCE },
	{ "handshake-rate", required_argument, NULL, OPT_HS_RATE },
	{ "max-handshakes", required_argument, NULL, OPT_MAX_HS },
	{ "handshake-rate-total", required_argument, NULL, OPT_HS_RATE_TOTAL },
	{ "worker-threads", required_argument, NULL, OPT_WORKERS },
	{ "verify-timeout", required_argument, NULL, OPT_VERIFY_TIMEOUT },
	{ "max-msg", required_argument, NULL, OPT_MAX_MSG },
	{ "recv-slots", required_argument, NULL, OPT_RECV_SLOTS },
	{ "slot-size", required_argument, NULL, OPT_SLOT_SIZE },
	{ "rebuilds-per-min", required_argument, NULL, OPT_REBUILDS },
	{ "resume-grace", required_argument, NULL, OPT_GRACE },
	{ "grant-mode", required_argument, NULL, OPT_GRANT_MODE },
	{ "grant-ttl", required_argument, NULL, OPT_GRANT_TTL },
	{ "qp-pool", required_argument, NULL, OPT_QP_POOL },
	{ "allow", required_argument, NULL, OPT_ALLOW },
	{ 0 },
};

/* The command line, kept for SIGHUP: the file is read again and the flags override it again. */
struct cmdline {
	int argc;
	char **argv;
};

static int parse_file(void *conf, const char *path, char *err, size_t errlen)
{
	return rsec_conf_parse_file(conf, path, err, errlen);
}

static const struct daemon_cli cli = {
	.name = "rdmasec-server", .short_opts = DAEMON_SHORT_OPTS, .long_opts = long_opts, .conf_flags = conf_flags,
	.usage = usage, .parse_file = parse_file, .set = set,
};

/* Defaults, then the configuration file and the flags over it (daemon_cli_read's 0, 1, 2 or -1). */
static int conf_read(const struct cmdline *cl, struct rsec_conf *conf, char *err, size_t errlen)
{
	rsec_conf_defaults(conf);
	return daemon_cli_read(&cli, cl->argc, cl->argv, conf, err, errlen);
}

/* --trust-etcd: the context reads the CA and CRL of the last good copy, and its allow rules join the file's and
 * the flags'. */
static struct trust_conf_slots trust_slots(struct rsec_conf *conf)
{
	return (struct trust_conf_slots){ .ca = conf->ca, .ca_cap = sizeof(conf->ca), .crl = conf->crl,
					  .crl_cap = sizeof(conf->crl), .allow = conf->allow, .n_allow = &conf->n_allow };
}

/* server_run's reader at a reload: the same command line, the file (and the trust copy) as they are now. */
static int conf_reread(void *arg, struct rsec_conf *conf, char *err, size_t errlen)
{
	int rc = conf_read(arg, conf, err, errlen);
	if (rc == 0) {
		struct trust_conf_slots to = trust_slots(conf);
		return conf->etcd[0] && trust_conf_apply(conf->state_dir, &to, err, errlen) < 0 ? RSEC_E_CONFIG : 0;
	}
	if (rc != 1)
		snprintf(err, errlen, "the command line no longer parses");
	return RSEC_E_CONFIG;
}

/* --trust-etcd at start (trust_conf_start), in certificate mode only. 0, or the exit status. */
static int trust_start(struct rsec_conf *conf, struct trust_watch **watch)
{
	if (conf->psk_file[0]) {
		fprintf(stderr, "rdmasec-server: --trust-etcd needs certificate mode (--cert and --key), not a PSK\n");
		return 2;
	}
	struct trust_conf_slots to = trust_slots(conf);
	return trust_conf_start("rdmasec-server", conf->etcd, conf->state_dir, &to, watch);
}

int main(int argc, char **argv)
{
	struct cmdline cl = { argc, argv };
	struct rsec_conf conf;
	char err[600] = "";
	int read_rc = conf_read(&cl, &conf, err, sizeof(err));
	if (read_rc == 1)
		fprintf(stderr, "rdmasec-server: %s\n", err);
	if (read_rc)
		return read_rc < 0 ? 0 : read_rc;
	struct trust_watch *watch = NULL;
	if (conf.etcd[0] && (read_rc = trust_start(&conf, &watch)) != 0)
		return read_rc;
	uint8_t psk[PSK_MAX_LEN];
	size_t psk_len = 0;
	if (conf.psk_file[0]) {
		int status = psk_load_option("rdmasec-server", conf.psk_file, conf.psk_identity[0] ? conf.psk_identity : NULL,
					     psk, &psk_len);
		if (status)
			return status;
	} else if (!conf.ca[0] || !conf.cert[0] || !conf.key[0]) {
		fprintf(stderr, "rdmasec-server: no credentials: give --certs DIR, --ca/--cert/--key, or --psk-file\n");
		trust_watch_stop(watch);
		return 2;
	}
	int status = server_run(&conf, psk, psk_len, conf_reread, &cl, watch);
	trust_watch_stop(watch);
	OPENSSL_cleanse(psk, sizeof(psk));
	return status;
}
