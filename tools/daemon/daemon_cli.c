/* SPDX-License-Identifier: MIT */
/* The daemons' shared command line (daemon_cli.h). */
#include "daemon_cli.h"
#include "log.h"

static bool set_certs_dir(const struct daemon_cli *d, void *arg, const char *dir)
{
	struct cli_certs p;
	return cli_certs_paths(&p, dir, "server") && d->set(arg, "tls", "ca", p.ca) &&
	       d->set(arg, "tls", "cert", p.cert) && d->set(arg, "tls", "key", p.key);
}

/* One option of the real pass: 1 taken, 0 refused (said), -1 unknown. */
static int take(const struct daemon_cli *d, void *arg, int opt, const char *value)
{
	const struct cli_conf_flag *flag = cli_conf_flag_find(d->conf_flags, opt);
	if (flag)
		return d->set(arg, flag->section, flag->key, value);
	switch (opt) {
	case 'f': return 1; /* read first */
	case 'C': return set_certs_dir(d, arg, value);
	case 'v': log_set_verbose(1); return 1;
	default: return d->own ? d->own(arg, opt, value) : -1;
	}
}

int daemon_cli_read(const struct daemon_cli *d, int argc, char **argv, void *arg, char *err, size_t errlen)
{
	optind = 0; /* a full scan */
	const char *file = cli_prescan(argc, argv, d->short_opts, d->long_opts, 'f');
	if (file) {
		char why[512] = "";
		if (d->parse_file(arg, file, why, sizeof(why)) < 0) {
			snprintf(err, errlen, "%s: %s", file, why);
			return 1;
		}
	}
	int c;
	while ((c = getopt_long(argc, argv, d->short_opts, d->long_opts, NULL)) != -1) {
		if (c == 'h') {
			d->usage(stdout);
			return -1;
		}
		int taken = take(d, arg, c, optarg);
		if (taken == 0)
			return 2;
		if (taken < 0) {
			d->usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", d->name, argv[optind]);
		d->usage(stderr);
		return 2;
	}
	return 0;
}
