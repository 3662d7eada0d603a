/* SPDX-License-Identifier: MIT */
/* rdmasec-keygen: credentials for a test cluster. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pki.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rdmasec-keygen [OPTIONS] DIR\n"
		"       rdmasec-keygen issue [--days N] [--san SAN]... DIR NAME\n"
		"       rdmasec-keygen crl [--days N] DIR\n"
		"       rdmasec-keygen revoke [--days N] DIR NAME\n"
		"       rdmasec-keygen --psk FILE\n"
		"\n"
		"Writes a test CA and credentials for rdmasec-server and rdmasec-client into DIR:\n"
		"ca.pem ca.key server.pem server.key client.pem client.key [client2.pem ...].\n"
		"Keys are EC P-256, mode 0600. For tests and small clusters, not a production PKI.\n"
		"\n"
		"  --days N            validity (default 365)\n"
		"  --clients N         client certificates, 1..%d (default 1): client, client2, ...\n"
		"  --ca-name NAME      the CA's name (default rdmasec-test)\n"
		"  --san SAN           server name, DNS:NAME or IP:ADDR; repeat; replaces the defaults\n"
		"                      (localhost, rdmasec-server, 127.0.0.1, ::1, 10.77.0.1-16)\n"
		"  --reuse-ca          issue from DIR's existing ca.pem and ca.key\n"
		"  --expired-client    the client certificates expired yesterday (for tests)\n"
		"  --psk FILE          instead: write a random 32-byte pre-shared key (hex) to FILE\n"
		"  -h, --help\n"
		"\n"
		"issue: one more client certificate NAME.pem/NAME.key from DIR's CA; with --san\n"
		"  URI:NAME (a SPIFFE ID such as URI:spiffe://example.org/app) or DNS:NAME, repeated,\n"
		"  its name is only in subjectAltName (an empty subject); without, CN=NAME.\n"
		"  --days N is its validity (default 365).\n"
		"crl: write DIR/crl.pem, signed by DIR's CA, keeping the entries of the current one;\n"
		"  --days N until its next update (default 30): reissue it before then.\n"
		"revoke: add DIR/NAME.pem to DIR/crl.pem (written as by crl).\n",
		RSEC_PKI_MAX_CLIENTS);
}

/* One more --san into sans (NULL-terminated, RSEC_PKI_MAX_SANS at most); false, said, when full. */
static bool push_san(const char **sans, unsigned *n, const char *san)
{
	if (*n == RSEC_PKI_MAX_SANS) {
		fprintf(stderr, "--san: at most %d\n", RSEC_PKI_MAX_SANS);
		return false;
	}
	sans[(*n)++] = san;
	return true;
}

/* The subcommands' options: --days N, and --san for issue. */
static int sub_options(int argc, char **argv, bool sans_ok, unsigned *days, const char **sans)
{
	enum { OPT_DAYS = 256, OPT_SAN };
	static const struct option opts[] = {
		{ "days", required_argument, NULL, OPT_DAYS },
		{ "san", required_argument, NULL, OPT_SAN },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	unsigned nsans = 0;
	uint64_t v;
	int c;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case OPT_DAYS:
			if (!cli_parse_u64("--days", optarg, 1, 36500, false, &v))
				return 2;
			*days = (unsigned)v;
			break;
		case OPT_SAN:
			if (!sans_ok || (strncmp(optarg, "URI:", 4) != 0 && strncmp(optarg, "DNS:", 4) != 0) ||
			    !optarg[4]) {
				fprintf(stderr, "--san: '%s' is not URI:NAME or DNS:NAME (issue only)\n", optarg);
				return 2;
			}
			if (!push_san(sans, &nsans, optarg))
				return 2;
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	return -1;
}

/* issue, crl, revoke: DIR, then NAME unless crl. */
static int subcommand(int argc, char **argv)
{
	const char *cmd = argv[0];
	bool is_issue = strcmp(cmd, "issue") == 0, is_crl = strcmp(cmd, "crl") == 0;
	const char *sans[RSEC_PKI_MAX_SANS + 1] = { 0 };
	unsigned days = 0;
	int status = sub_options(argc, argv, is_issue, &days, sans);
	if (status >= 0)
		return status;
	int want = is_crl ? 1 : 2;
	if (argc - optind != want) {
		fprintf(stderr, "rdmasec-keygen %s: give %s\n", cmd, is_crl ? "exactly one DIR" : "DIR and NAME");
		return 2;
	}
	const char *dir = argv[optind], *name = is_crl ? NULL : argv[optind + 1];
	char err[512] = "";
	int rc = is_issue ? rsec_pki_issue_client(dir, name, sans[0] ? sans : NULL, days, err, sizeof(err))
			  : rsec_pki_write_crl(dir, name, days, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "rdmasec-keygen %s: %s\n", cmd, err);
		return 1;
	}
	if (is_issue)
		printf("rdmasec-keygen: wrote %s/%s.pem and %s.key\n", dir, name, name);
	else
		printf("rdmasec-keygen: wrote %s/crl.pem%s%s%s\n", dir, name ? " (" : "", name ? name : "",
		       name ? " revoked)" : "");
	return 0;
}

enum { OPT_DAYS = 256, OPT_CLIENTS, OPT_CA_NAME, OPT_SAN, OPT_REUSE_CA, OPT_EXPIRED, OPT_PSK };

static const struct option long_opts[] = {
	{ "days", required_argument, NULL, OPT_DAYS },
	{ "clients", required_argument, NULL, OPT_CLIENTS },
	{ "ca-name", required_argument, NULL, OPT_CA_NAME },
	{ "san", required_argument, NULL, OPT_SAN },
	{ "reuse-ca", no_argument, NULL, OPT_REUSE_CA },
	{ "expired-client", no_argument, NULL, OPT_EXPIRED },
	{ "psk", required_argument, NULL, OPT_PSK },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

/* The generation's options and --psk's file. */
struct keygen_args {
	struct rsec_pki_opts o;
	const char *sans[RSEC_PKI_MAX_SANS + 1];
	unsigned nsans;
	const char *psk;
};

/* One option into k: true, or false once the reason is said. */
static bool take_opt(struct keygen_args *k, int c, const char *v)
{
	uint64_t n;
	switch (c) {
	case OPT_DAYS:
		if (!cli_parse_u64("--days", v, 1, 36500, false, &n))
			return false;
		k->o.days = (unsigned)n;
		return true;
	case OPT_CLIENTS:
		if (!cli_parse_u64("--clients", v, 1, RSEC_PKI_MAX_CLIENTS, false, &n))
			return false;
		k->o.clients = (unsigned)n;
		return true;
	case OPT_CA_NAME:
		if (!*v || strlen(v) > 64) {
			fprintf(stderr, "--ca-name: '%s' must be 1..64 characters\n", v);
			return false;
		}
		k->o.ca_name = v;
		return true;
	case OPT_SAN:
		if (strncmp(v, "DNS:", 4) != 0 && strncmp(v, "IP:", 3) != 0) {
			fprintf(stderr, "--san: '%s' is not DNS:NAME or IP:ADDRESS\n", v);
			return false;
		}
		return push_san(k->sans, &k->nsans, v);
	case OPT_REUSE_CA: k->o.reuse_ca = true; return true;
	case OPT_EXPIRED: k->o.expired_clients = true; return true;
	case OPT_PSK: k->psk = v; return true;
	default: return false; /* getopt's '?' and ':' never come here */
	}
}

/* --psk FILE: a fresh key, and no directory. */
static int write_psk(const char *path, int extra_args)
{
	char err[512] = "";
	if (extra_args) {
		fprintf(stderr, "rdmasec-keygen: --psk takes no DIR\n");
		return 2;
	}
	if (rsec_pki_write_psk(path, err, sizeof(err)) < 0) {
		fprintf(stderr, "rdmasec-keygen: %s\n", err);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && (strcmp(argv[1], "issue") == 0 || strcmp(argv[1], "crl") == 0 || strcmp(argv[1], "revoke") == 0))
		return subcommand(argc - 1, argv + 1);
	struct keygen_args k = { 0 };
	int c;
	while ((c = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 0;
		}
		if (c == '?' || c == ':') {
			usage(stderr);
			return 2;
		}
		if (!take_opt(&k, c, optarg))
			return 2;
	}
	if (k.psk)
		return write_psk(k.psk, argc - optind);
	if (optind != argc - 1) {
		fprintf(stderr, "rdmasec-keygen: give exactly one DIR\n");
		usage(stderr);
		return 2;
	}
	char err[512] = "";
	k.o.dir = argv[optind];
	k.o.sans = k.nsans ? k.sans : NULL;
	if (rsec_pki_generate(&k.o, err, sizeof(err)) < 0) {
		fprintf(stderr, "rdmasec-keygen: %s\n", err);
		return 1;
	}
	printf("rdmasec-keygen: wrote %s/{%sserver,client%s}.pem and keys\n", k.o.dir, k.o.reuse_ca ? "" : "ca,",
	       k.o.clients > 1 ? ",client2.." : "");
	return 0;
}
