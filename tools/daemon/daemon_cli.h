/* SPDX-License-Identifier: MIT */
/*
 * The command line every daemon shares: a configuration file (-f), the flags
 * that override its keys whatever their order, the certificates of a
 * directory (-C), the TLS and trust options, -v and -h. A daemon's table of
 * long options starts with DAEMON_LONG_OPTS and its flag table with
 * DAEMON_CONF_FLAGS; its own options take ids from DAEMON_OPT_OWN on.
 */
#ifndef RSEC_DAEMON_CLI_H
#define RSEC_DAEMON_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "cli.h"

#define DAEMON_SHORT_OPTS "f:C:l:d:vh"

/* Long options without a short letter: above the byte values getopt returns for letters. */
enum {
	DAEMON_OPT_CA = 256,
	DAEMON_OPT_CERT,
	DAEMON_OPT_KEY,
	DAEMON_OPT_CRL,
	DAEMON_OPT_REKEY_S,
	DAEMON_OPT_REKEY_BYTES,
	DAEMON_OPT_AUDIT,
	DAEMON_OPT_METRICS,
	DAEMON_OPT_TRUST_ETCD,
	DAEMON_OPT_TRUST_STATE,
	DAEMON_OPT_OWN, /* a daemon's own options from here */
};

#define DAEMON_LONG_OPTS                                                                                          \
	{ "config", required_argument, NULL, 'f' }, { "certs", required_argument, NULL, 'C' },                     \
		{ "ca", required_argument, NULL, DAEMON_OPT_CA }, { "cert", required_argument, NULL, DAEMON_OPT_CERT }, \
		{ "key", required_argument, NULL, DAEMON_OPT_KEY }, { "crl", required_argument, NULL, DAEMON_OPT_CRL }, \
		{ "rekey-s", required_argument, NULL, DAEMON_OPT_REKEY_S },                                       \
		{ "rekey-bytes", required_argument, NULL, DAEMON_OPT_REKEY_BYTES },                               \
		{ "listen", required_argument, NULL, 'l' }, { "device", required_argument, NULL, 'd' },           \
		{ "audit", required_argument, NULL, DAEMON_OPT_AUDIT },                                           \
		{ "metrics", required_argument, NULL, DAEMON_OPT_METRICS },                                       \
		{ "trust-etcd", required_argument, NULL, DAEMON_OPT_TRUST_ETCD },                                 \
		{ "trust-state-dir", required_argument, NULL, DAEMON_OPT_TRUST_STATE },                           \
		{ "verbose", no_argument, NULL, 'v' }, { "help", no_argument, NULL, 'h' }

/* The keys those flags set; section: the daemon's own ("server", "target"). */
#define DAEMON_CONF_FLAGS(section)                                                                          \
	{ DAEMON_OPT_CA, "tls", "ca" }, { DAEMON_OPT_CERT, "tls", "cert" }, { DAEMON_OPT_KEY, "tls", "key" },  \
		{ DAEMON_OPT_CRL, "tls", "crl" }, { DAEMON_OPT_REKEY_S, "tls", "rekey_s" },                     \
		{ DAEMON_OPT_REKEY_BYTES, "tls", "rekey_bytes" }, { 'l', section, "listen" },                   \
		{ 'd', section, "device" }, { DAEMON_OPT_AUDIT, section, "audit_log" },                         \
		{ DAEMON_OPT_METRICS, section, "metrics_file" }, { DAEMON_OPT_TRUST_ETCD, "trust", "etcd" },    \
		{ DAEMON_OPT_TRUST_STATE, "trust", "state_dir" }

/* A daemon's command line. arg is its configuration (with what its callbacks need). */
struct daemon_cli {
	const char *name; /* for messages: "rdmasec-server" */
	const char *short_opts;
	const struct option *long_opts;
	const struct cli_conf_flag *conf_flags;
	void (*usage)(FILE *f);
	/* The configuration file at path onto arg's: 0, or < 0 with err set. */
	int (*parse_file)(void *arg, const char *path, char *err, size_t errlen);
	/* One key, a flag's: false once the reason is on stderr. */
	bool (*set)(void *arg, const char *section, const char *key, const char *value);
	/* An option of the daemon's own: 1 taken, 0 refused (the reason on stderr), -1 not one; NULL: none. */
	int (*own)(void *arg, int opt, const char *value);
};

/*
 * The file (-f, wherever it stands), then the flags over it, on the
 * caller's defaults; every call scans afresh (a reload runs it again).
 * 0; 1: the file is bad (err says why); 2: bad usage (said on stderr);
 * -1: --help was printed.
 */
int daemon_cli_read(const struct daemon_cli *d, int argc, char **argv, void *arg, char *err, size_t errlen);

#endif
