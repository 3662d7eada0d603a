/* SPDX-License-Identifier: MIT */
/* rdmasec-client: connect, then run commands from -c or from standard input. */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "cli.h"
#include "client.h"
#include "psk.h"

#define DEFAULT_PORT 7471
#define MAX_MSG ((16u << 20) + 1)

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rdmasec-client [OPTIONS] HOST\n"
		"\n"
		"Connects to rdmasec-server over TLS 1.3 (mutual authentication), brings up an RDMA\n"
		"queue pair with parameters exchanged only inside TLS, and runs commands:\n"
		"  send TEXT | send -s SIZE    sealed two-sided message; the server echoes it\n"
		"  write TEXT | write -s SIZE  RDMA WRITE through a short-lived grant; server checks SHA-256\n"
		"  read                        RDMA READ of what was written; checked\n"
		"  write --sealed ..., read --sealed   the same through a sealed grant: the bytes cross\n"
		"                              the wire encrypted (AEAD), opened at the other end\n"
		"  stats                       counters;  quit  authenticated disconnect;  help\n"
		"\n"
		"  -c, --commands 'CMD; CMD'   run these and exit (0 only if every command succeeded);\n"
		"                              otherwise read commands from standard input\n"
		"  -C, --certs DIR             ca.pem, client.pem, client.key from DIR (rdmasec-keygen)\n"
		"      --ca FILE --cert FILE --key FILE   the same, one by one\n"
		"      --crl FILE              refuse a server certificate revoked in FILE (PEM CRLs)\n"
		"      --psk-file FILE --psk-identity NAME   external-PSK mode instead\n"
		"  -p, --port PORT             default 7471\n"
		"      --server-name NAME      name the server certificate must carry (default: HOST)\n"
		"  -s, --source ADDR           leave from this local address; its RDMA device is used\n"
		"  -d, --device NAME           RDMA device (default: the one owning the local address)\n"
		"      --aead aes-256-gcm|chacha20-poly1305   message protection (default aes-256-gcm)\n"
		"  -t, --timeout MS            per operation and for set-up (default 30000)\n"
		"      --audit FILE            append JSON-lines audit records to FILE (created 0600)\n"
		"      --resume-grace MS       when the TLS connection is lost (server crash, cut, forged\n"
		"                              reset), reconnect and resume the session for up to MS\n"
		"                              (the server must allow it too); default 0: fail at once\n"
		"      --rekey-s SECONDS       renew the keys at least this often (default 3600, 1..604800)\n"
		"      --rekey-bytes BYTES     ... and every BYTES sent and received (K/M/G; default 64G,\n"
		"                              1..128G)\n"
		"  -h, --help\n");
}

static int run_script(struct client *cl, char *script)
{
	int failed = 0;
	for (char *save = NULL, *cmd = strtok_r(script, ";", &save); cmd && !cl->closed;
	     cmd = strtok_r(NULL, ";", &save))
		if (client_command(cl, cmd) < 0)
			failed = 1;
	return failed;
}

/* Interactive: keep the connection serviced (keepalives, a server's
 * disconnect) while waiting for the next line. */
static int run_stdin(struct client *cl)
{
	bool tty = isatty(STDIN_FILENO);
	char *line = NULL;
	size_t cap = 0;
	int failed = 0;
	while (!cl->closed) {
		if (tty) {
			printf("rdmasec> ");
			fflush(stdout);
			for (;;) {
				struct pollfd p[2] = { { .fd = STDIN_FILENO, .events = POLLIN },
						       { .fd = rsec_conn_fd(cl->conn), .events = POLLIN } };
				if (poll(p, 2, 1000) < 0 && errno != EINTR)
					break;
				int rc = rsec_conn_process(cl->conn);
				if (rc < 0) {
					fprintf(stderr, "\nconnection closed: %s\n", rsec_conn_error(cl->conn));
					cl->closed = true;
					free(line);
					return 1;
				}
				if (p[0].revents)
					break;
			}
		}
		if (getline(&line, &cap, stdin) < 0)
			break;
		if (client_command(cl, line) < 0)
			failed = 1;
	}
	free(line);
	return failed;
}

/* One of --ca, --cert, --key into its slot of struct cli_certs; false if it does not fit. */
static bool copy_path(char dst[static CLI_PATH_MAX], const char *path)
{
	return snprintf(dst, CLI_PATH_MAX, "%s", path) < CLI_PATH_MAX;
}

/* The command line. */
struct client_opts {
	struct cli_certs files;
	const char *host, *script, *psk_file, *psk_id, *server_name, *device, *source, *audit, *crl;
	uint64_t port, timeout, grace, rekey_s, rekey_bytes;
	enum rsec_aead_choice aead;
};

enum { OPT_CA = 256, OPT_CERT, OPT_KEY, OPT_CRL, OPT_PSK_FILE, OPT_PSK_ID, OPT_SERVER_NAME, OPT_AEAD, OPT_AUDIT,
       OPT_GRACE, OPT_REKEY_S, OPT_REKEY_BYTES };

static const struct option long_opts[] = {
	{ "commands", required_argument, NULL, 'c' },
	{ "certs", required_argument, NULL, 'C' },
	{ "ca", required_argument, NULL, OPT_CA },
	{ "cert", required_argument, NULL, OPT_CERT },
	{ "key", required_argument, NULL, OPT_KEY },
	{ "crl", required_argument, NULL, OPT_CRL },
	{ "psk-file", required_argument, NULL, OPT_PSK_FILE },
	{ "psk-identity", required_argument, NULL, OPT_PSK_ID },
	{ "port", required_argument, NULL, 'p' },
	{ "server-name", required_argument, NULL, OPT_SERVER_NAME },
	{ "source", required_argument, NULL, 's' },
	{ "device", required_argument, NULL, 'd' },
	{ "aead", required_argument, NULL, OPT_AEAD },
	{ "timeout", required_argument, NULL, 't' },
	{ "audit", required_argument, NULL, OPT_AUDIT },
	{ "resume-grace", required_argument, NULL, OPT_GRACE },
	{ "rekey-s", required_argument, NULL, OPT_REKEY_S },
	{ "rekey-bytes", required_argument, NULL, OPT_REKEY_BYTES },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

/* One option into o: true, or false if its value is bad. */
static bool take_opt(struct client_opts *o, int c, const char *v)
{
	switch (c) {
	case 'c': o->script = v; return true;
	case 'C': return cli_certs_paths(&o->files, v, "client");
	case OPT_CA: return copy_path(o->files.ca, v);
	case OPT_CERT: return copy_path(o->files.cert, v);
	case OPT_KEY: return copy_path(o->files.key, v);
	case OPT_CRL: o->crl = v; return true;
	case OPT_PSK_FILE: o->psk_file = v; return true;
	case OPT_PSK_ID: o->psk_id = v; return true;
	case 'p': return cli_parse_u64("--port", v, 1, 65535, false, &o->port);
	case OPT_SERVER_NAME: o->server_name = v; return true;
	case 's': o->source = v; return true;
	case 'd': o->device = v; return true;
	case OPT_AEAD: return cli_parse_aead(v, &o->aead);
	case 't': return cli_parse_u64("--timeout", v, 1, 3600000, false, &o->timeout);
	case OPT_AUDIT: o->audit = v; return true;
	case OPT_GRACE: return cli_parse_u64("--resume-grace", v, 0, RSEC_MAX_RESUME_GRACE_MS, false, &o->grace);
	case OPT_REKEY_S: return cli_parse_u64("--rekey-s", v, 1, RSEC_MAX_REKEY_S, false, &o->rekey_s);
	case OPT_REKEY_BYTES: return cli_parse_u64("--rekey-bytes", v, 1, RSEC_MAX_REKEY_BYTES, true, &o->rekey_bytes);
	default: return false; /* getopt's '?' and ':' never come here */
	}
}

/* 0: o is filled; -1: --help was printed; 2: bad usage (said). */
static int parse_args(int argc, char **argv, struct client_opts *o)
{
	*o = (struct client_opts){ .port = DEFAULT_PORT, .timeout = 30000, .rekey_s = RSEC_DEFAULT_REKEY_S,
				   .rekey_bytes = RSEC_DEFAULT_REKEY_BYTES, .aead = RSEC_AEAD_DEFAULT };
	int c;
	while ((c = getopt_long(argc, argv, "c:C:p:s:d:t:h", long_opts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return -1;
		}
		if (c == '?' || c == ':') {
			usage(stderr);
			return 2;
		}
		if (!take_opt(o, c, optarg)) {
			fprintf(stderr, "rdmasec-client: bad value for an option (a path too long?)\n");
			return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "rdmasec-client: give exactly one HOST\n");
		usage(stderr);
		return 2;
	}
	o->host = argv[optind];
	return 0;
}

/* The context the options ask for: 0, or the exit status (said). */
static int open_ctx(const struct client_opts *o, struct rsec_ctx **ctx)
{
	uint8_t psk[PSK_MAX_LEN];
	size_t psk_len = 0;
	struct rsec_ctx_attr attr = { .device = o->device, .local_addr = o->source, .aead = o->aead, .max_msg = MAX_MSG,
				      .handshake_timeout_ms = (int)o->timeout,
				      .comp_mask = RSEC_CTX_ATTR_GRACE | RSEC_CTX_ATTR_REKEY,
				      .resume_grace_ms = (uint32_t)o->grace, .rekey_s = (uint32_t)o->rekey_s,
				      .rekey_bytes = o->rekey_bytes };
	if (o->audit) {
		attr.comp_mask |= RSEC_CTX_ATTR_AUDIT;
		attr.audit_path = o->audit;
	}
	if (o->psk_file && o->crl) {
		fprintf(stderr, "rdmasec-client: --crl needs certificates, not --psk-file\n");
		return 2;
	}
	if (o->psk_file) {
		int status = psk_load_option("rdmasec-client", o->psk_file, o->psk_id, psk, &psk_len);
		if (status)
			return status;
		attr.psk = psk;
		attr.psk_len = psk_len;
		attr.psk_identity = o->psk_id;
	} else if (o->files.ca[0] && o->files.cert[0] && o->files.key[0]) {
		attr.ca_file = o->files.ca;
		attr.cert_file = o->files.cert;
		attr.key_file = o->files.key;
		attr.comp_mask |= o->crl ? RSEC_CTX_ATTR_CRL : 0;
		attr.crl_file = o->crl;
	} else {
		fprintf(stderr, "rdmasec-client: no credentials: give --certs DIR, --ca/--cert/--key, or --psk-file\n");
		return 2;
	}
	char err[256] = "";
	int rc = rsec_ctx_new(&attr, ctx, err, sizeof(err));
	OPENSSL_cleanse(psk, sizeof(psk));
	if (rc < 0) {
		fprintf(stderr, "rdmasec-client: %s (%s)\n", err[0] ? err : "cannot set up", rsec_strerror(rc));
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct client_opts o;
	int rc = parse_args(argc, argv, &o);
	if (rc)
		return rc < 0 ? 0 : rc;
	struct rsec_ctx *ctx;
	if ((rc = open_ctx(&o, &ctx)) != 0)
		return rc;
	struct client cl = { .timeout_ms = (int)o.timeout, .buf_cap = MAX_MSG };
	cl.buf = malloc(cl.buf_cap);
	rc = cl.buf ? rsec_connect(ctx, o.host, (uint16_t)o.port, o.server_name, (int)o.timeout, &cl.conn) : RSEC_E_NOMEM;
	if (rc < 0) {
		const char *why = cl.conn && *rsec_conn_error(cl.conn) ? rsec_conn_error(cl.conn) : rsec_strerror(rc);
		fprintf(stderr, "rdmasec-client: cannot connect to %s:%llu: %s\n", o.host, (unsigned long long)o.port, why);
		rsec_conn_free(cl.conn);
		rsec_ctx_free(ctx);
		free(cl.buf);
		return 1;
	}
	fprintf(stderr, "connected to %s:%llu, server identity %s\n", o.host, (unsigned long long)o.port,
		rsec_conn_peer(cl.conn));
	char *copy = o.script ? strdup(o.script) : NULL;
	int failed = o.script ? (copy ? run_script(&cl, copy) : 1) : run_stdin(&cl);
	free(copy);
	if (!cl.closed)
		(void)rsec_conn_close(cl.conn, "client done");
	rsec_conn_free(cl.conn);
	rsec_ctx_free(ctx);
	free(cl.last);
	free(cl.buf);
	return failed;
}
