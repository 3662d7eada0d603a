/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>

#include "metrics.h"
#include "prom_file.h"

#define PREFIX "rdmasec_blkd_"

struct family {
	const char *name, *type, *help;
	size_t off; /* in struct export_counters */
};

static const struct family families[] = {
	{ "reads_total", "counter", "READ commands completed, any status", offsetof(struct export_counters, reads) },
	{ "writes_total", "counter", "WRITE commands completed, any status", offsetof(struct export_counters, writes) },
	{ "flushes_total", "counter", "FLUSH commands completed, any status", offsetof(struct export_counters, flushes) },
	{ "read_bytes_total", "counter", "bytes read by successful READs", offsetof(struct export_counters, bytes_read) },
	{ "written_bytes_total", "counter", "bytes written by successful WRITEs",
	  offsetof(struct export_counters, bytes_written) },
	{ "sessions_total", "counter", "sessions opened", offsetof(struct export_counters, sessions_total) },
	{ "sessions", "gauge", "sessions open now", offsetof(struct export_counters, sessions_open) },
	{ "opens_refused_total", "counter", "OPENs refused (access denied, read-only, limit)",
	  offsetof(struct export_counters, opens_refused) },
	{ "opens_denied_total", "counter", "OPENs refused because the identity matched no rw or ro rule",
	  offsetof(struct export_counters, opens_denied) },
	{ "store_nowait_total", "counter", "reads and writes the backing store did on the target's loop without waiting"
	  " (RWF_NOWAIT); the rest went to the store threads", offsetof(struct export_counters, store_nowait) },
};

static uint64_t field(const struct export_counters *c, size_t off)
{
	uint64_t v;
	memcpy(&v, (const char *)c + off, sizeof(v));
	return v;
}

/* Export names are [A-Za-z0-9._-]: nothing to escape in a label. */
static int render(FILE *f, const void *arg)
{
	const struct metrics_source *m = arg;
	for (size_t k = 0; k < sizeof(families) / sizeof(families[0]); k++) {
		const struct family *fam = &families[k];
		fprintf(f, "# HELP " PREFIX "%s %s\n# TYPE " PREFIX "%s %s\n", fam->name, fam->help, fam->name, fam->type);
		for (size_t i = 0; i < m->n; i++)
			fprintf(f, PREFIX "%s{export=\"%s\"} %llu\n", fam->name, m->names[i],
				(unsigned long long)field(m->exports[i], fam->off));
	}
	fprintf(f, "# HELP " PREFIX "errors_total commands completed with an error, by status\n"
		   "# TYPE " PREFIX "errors_total counter\n");
	for (size_t i = 0; i < m->n; i++)
		for (unsigned s = 1; s <= BLK_S_MAX; s++)
			if (m->exports[i]->errors[s])
				fprintf(f, PREFIX "errors_total{export=\"%s\",status=\"%s\"} %llu\n", m->names[i],
					blk_status_name((uint16_t)s), (unsigned long long)m->exports[i]->errors[s]);
	const struct target_counters *t = m->target;
	fprintf(f, "# HELP " PREFIX "open_refusals_total OPENs refused, by status, whatever the export\n"
		   "# TYPE " PREFIX "open_refusals_total counter\n");
	for (unsigned s = 1; s <= BLK_S_MAX; s++)
		if (t->open_refusals[s])
			fprintf(f, PREFIX "open_refusals_total{status=\"%s\"} %llu\n", blk_status_name((uint16_t)s),
				(unsigned long long)t->open_refusals[s]);
	static const char *const share_names[SHARE_KINDS] = { "sessions", "memory" };
	fprintf(f, "# HELP " PREFIX "share_refusals_total sessions (sessions) and OPENs (memory) refused for their"
		   " identity's share\n# TYPE " PREFIX "share_refusals_total counter\n");
	for (unsigned k = 0; k < SHARE_KINDS; k++)
		fprintf(f, PREFIX "share_refusals_total{share=\"%s\"} %llu\n", share_names[k],
			(unsigned long long)t->share_refusals[k]);
	fprintf(f,
		"# HELP " PREFIX "connections_total connections accepted\n# TYPE " PREFIX "connections_total counter\n"
		PREFIX "connections_total %llu\n"
		"# HELP " PREFIX "violations_total sessions closed for a protocol violation\n"
		"# TYPE " PREFIX "violations_total counter\n" PREFIX "violations_total %llu\n"
		"# HELP " PREFIX "opens_unknown_export_total OPENs of an export that does not exist\n"
		"# TYPE " PREFIX "opens_unknown_export_total counter\n" PREFIX "opens_unknown_export_total %llu\n"
		"# HELP " PREFIX "audit_errors_total audit records that could not be written\n"
		"# TYPE " PREFIX "audit_errors_total counter\n" PREFIX "audit_errors_total %llu\n"
		"# HELP " PREFIX "reloads_total reloads (SIGHUP, a new etcd copy) of the configuration and credentials\n"
		"# TYPE " PREFIX "reloads_total counter\n" PREFIX "reloads_total %llu\n"
		"# HELP " PREFIX "reload_failures_total reloads (SIGHUP, a new etcd copy) that failed or were refused;"
		" the old material kept\n"
		"# TYPE " PREFIX "reload_failures_total counter\n" PREFIX "reload_failures_total %llu\n"
		"# HELP " PREFIX "closed_revoked_total sessions closed after a reload: peer revoked, expired or no longer allowed\n"
		"# TYPE " PREFIX "closed_revoked_total counter\n" PREFIX "closed_revoked_total %llu\n"
		"# HELP " PREFIX "cert_expiry_days whole days until the target's own certificate expires\n"
		"# TYPE " PREFIX "cert_expiry_days gauge\n" PREFIX "cert_expiry_days %llu\n"
		"# HELP " PREFIX "busy_polls_total polls of the sessions' queues before sleeping (busy_poll_us), by"
		" whether they found work\n# TYPE " PREFIX "busy_polls_total counter\n"
		PREFIX "busy_polls_total{result=\"hit\"} %llu\n" PREFIX "busy_polls_total{result=\"miss\"} %llu\n",
		(unsigned long long)t->connections, (unsigned long long)t->violations,
		(unsigned long long)t->opens_unknown_export, (unsigned long long)t->audit_errors,
		(unsigned long long)t->reload.reloads, (unsigned long long)t->reload.reload_failures,
		(unsigned long long)t->closed_revoked, (unsigned long long)t->reload.cert_expiry_days,
		(unsigned long long)t->busy_poll_hits, (unsigned long long)t->busy_poll_misses);
	return 0;
}

int metrics_write(const char *path, const struct metrics_source *m, char *err, size_t errlen)
{
	return prom_file_write(path, render, m, err, errlen);
}
