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
		"  -h, --help\n",
		RSEC_PKI_MAX_CLIENTS);
}

int main(int argc, char **argv)
{
	enum { OPT_DAYS = 256, OPT_CLIENTS, OPT_CA_NAME, OPT_SAN, OPT_REUSE_CA, OPT_EXPIRED, OPT_PSK };
	static const struct option opts[] = {
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
	struct rsec_pki_opts o = { 0 };
	const char *sans[RSEC_PKI_MAX_SANS + 1] = { 0 };
	unsigned nsans = 0;
	const char *psk = NULL;
	uint64_t v;
	int c;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case OPT_DAYS:
			if (!cli_parse_u64("--days", optarg, 1, 36500, false, &v))
				return 2;
			o.days = (unsigned)v;
			break;
		case OPT_CLIENTS:
			if (!cli_parse_u64("--clients", optarg, 1, RSEC_PKI_MAX_CLIENTS, false, &v))
				return 2;
			o.clients = (unsigned)v;
			break;
		case OPT_CA_NAME:
			if (!*optarg || strlen(optarg) > 64) {
				fprintf(stderr, "--ca-name: '%s' must be 1..64 characters\n", optarg);
				return 2;
			}
			o.ca_name = optarg;
			break;
		case OPT_SAN:
			if (strncmp(optarg, "DNS:", 4) != 0 && strncmp(optarg, "IP:", 3) != 0) {
				fprintf(stderr, "--san: '%s' is not DNS:NAME or IP:ADDRESS\n", optarg);
				return 2;
			}
			if (nsans == RSEC_PKI_MAX_SANS) {
				fprintf(stderr, "--san: at most %d\n", RSEC_PKI_MAX_SANS);
				return 2;
			}
			sans[nsans++] = optarg;
			break;
		case OPT_REUSE_CA: o.reuse_ca = true; break;
		case OPT_EXPIRED: o.expired_clients = true; break;
		case OPT_PSK: psk = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	char err[512] = "";
	if (psk) {
		if (optind != argc) {
			fprintf(stderr, "rdmasec-keygen: --psk takes no DIR\n");
			return 2;
		}
		if (rsec_pki_write_psk(psk, err, sizeof(err)) < 0) {
			fprintf(stderr, "rdmasec-keygen: %s\n", err);
			return 1;
		}
		return 0;
	}
	if (optind != argc - 1) {
		fprintf(stderr, "rdmasec-keygen: give exactly one DIR\n");
		usage(stderr);
		return 2;
	}
	o.dir = argv[optind];
	o.sans = nsans ? sans : NULL;
	if (rsec_pki_generate(&o, err, sizeof(err)) < 0) {
		fprintf(stderr, "rdmasec-keygen: %s\n", err);
		return 1;
	}
	printf("rdmasec-keygen: wrote %s/{%sserver,client%s}.pem and keys\n", o.dir, o.reuse_ca ? "" : "ca,",
	       o.clients > 1 ? ",client2.." : "");
	return 0;
}
