/* SPDX-License-Identifier: MIT */
/*
 * Output in perftest's own layout (its perftest_parameters.h formats, checked
 * against ib_send_bw/ib_send_lat 6.06 on the fabric), so one parser reads
 * both tools; and the run as JSON for bench/report.py.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include <json-c/json.h>

#include "bench.h"

#define RESULT_LINE "---------------------------------------------------------------------------------------\n"
#define RESULT_FMT " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n"
#define RESULT_FMT_LAT                                                                                     \
	" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   " \
	"99%% percentile[usec]   99.9%% percentile[usec] \n"
#define RESULT_FMT_LAT_DUR " #bytes        #iterations       t_avg[usec]  \t\n"
#define REPORT_FMT " %-7" PRIu64 "    %-10" PRIu64 "       %-7.2lf            %-7.2lf\t\t   %-7.6lf\n"
#define REPORT_FMT_LAT                                                                             \
	" %-7" PRIu64 " %" PRIu64 "          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t" \
	"%-7.2f\t\t%-7.2f \t\t%-7.2f\n"
#define REPORT_FMT_LAT_DUR " %-7" PRIu64 "       %" PRIu64 "            %-7.2f\n"

void report_rule(FILE *f)
{
	fputs(RESULT_LINE, f);
}

void report_header(FILE *f, bool lat, bool duration)
{
	if (!lat)
		fputs(RESULT_FMT, f);
	else if (duration)
		fputs(RESULT_FMT_LAT_DUR, f);
	else
		fprintf(f, RESULT_FMT_LAT);
}

void report_row(FILE *f, const struct bench_row *r)
{
	if (!r->lat)
		fprintf(f, REPORT_FMT, r->bytes, r->iters, r->bw.peak_mbs, r->bw.avg_mbs, r->bw.mpps);
	else if (r->duration)
		fprintf(f, REPORT_FMT_LAT_DUR, r->bytes, r->iters, r->l.avg);
	else
		fprintf(f, REPORT_FMT_LAT, r->bytes, r->iters, r->l.min, r->l.max, r->l.typical, r->l.avg,
			r->l.stdev, r->l.p99, r->l.p999);
	fflush(f);
}

static void cpu_text(FILE *f, const char *who, const struct bench_cpu *c, uint64_t ops)
{
	fprintf(f, " %s %.2f (user %.2f sys %.2f)", who, bench_cpu_per_op(c, ops),
		ops ? (double)c->user_us / (double)ops : 0.0, ops ? (double)c->sys_us / (double)ops : 0.0);
}

void report_cpu(FILE *f, const char *role, const struct bench_row *r)
{
	fprintf(f, " CPU per op[usec] #bytes %" PRIu64 ":", r->bytes);
	cpu_text(f, role, &r->cpu, r->iters);
	if (r->have_peer)
		cpu_text(f, strcmp(role, "client") == 0 ? "server" : "client", &r->peer_cpu, r->iters);
	fputc('\n', f);
}

/* ---- JSON ---- */

static bool add(json_object *o, const char *key, json_object *v)
{
	if (!v || json_object_object_add(o, key, v) != 0) {
		json_object_put(v);
		return false;
	}
	return true;
}

static json_object *cpu_json(const struct bench_cpu *c, uint64_t ops)
{
	json_object *o = json_object_new_object();
	if (o && add(o, "user_s", json_object_new_double((double)c->user_us / 1e6)) &&
	    add(o, "sys_s", json_object_new_double((double)c->sys_us / 1e6)) &&
	    add(o, "per_op_us", json_object_new_double(bench_cpu_per_op(c, ops))))
		return o;
	json_object_put(o);
	return NULL;
}

static bool lat_json(json_object *o, const struct bench_lat *l, bool duration)
{
	if (duration)
		return add(o, "t_avg_us", json_object_new_double(l->avg));
	return add(o, "t_min_us", json_object_new_double(l->min)) &&
	       add(o, "t_max_us", json_object_new_double(l->max)) &&
	       add(o, "t_typical_us", json_object_new_double(l->typical)) &&
	       add(o, "t_avg_us", json_object_new_double(l->avg)) &&
	       add(o, "t_stdev_us", json_object_new_double(l->stdev)) &&
	       add(o, "t_p99_us", json_object_new_double(l->p99)) &&
	       add(o, "t_p999_us", json_object_new_double(l->p999));
}

static bool bw_json(json_object *o, const struct bench_bw *b)
{
	return add(o, "bw_peak_mbs", json_object_new_double(b->peak_mbs)) &&
	       add(o, "bw_avg_mbs", json_object_new_double(b->avg_mbs)) &&
	       add(o, "msg_rate_mpps", json_object_new_double(b->mpps));
}

static json_object *row_json(const struct bench_row *r, const char *role)
{
	json_object *o = json_object_new_object(), *cpu = json_object_new_object();
	bool ok = o && cpu && add(o, "bytes", json_object_new_int64((int64_t)r->bytes)) &&
		  add(o, "iterations", json_object_new_int64((int64_t)r->iters)) &&
		  add(o, "elapsed_s", json_object_new_double(r->elapsed_s)) &&
		  (!r->set_up || add(o, "tls_resumed", json_object_new_int64((int64_t)r->resumed))) &&
		  (!r->have_row || (r->lat ? lat_json(o, &r->l, r->duration) : bw_json(o, &r->bw))) &&
		  add(cpu, role, cpu_json(&r->cpu, r->iters)) &&
		  (!r->have_peer ||
		   add(cpu, strcmp(role, "client") == 0 ? "server" : "client", cpu_json(&r->peer_cpu, r->iters)));
	if (ok && add(o, "cpu", cpu))
		return o;
	if (!ok)
		json_object_put(cpu);
	json_object_put(o);
	return NULL;
}

static json_object *meta_json(const struct bench_meta *m)
{
	json_object *o = json_object_new_object();
	bool ok = o && add(o, "tool", json_object_new_string(PROG)) &&
		  add(o, "version", json_object_new_string(rsec_version())) &&
		  add(o, "role", json_object_new_string(m->role)) &&
		  add(o, "op", json_object_new_string(bench_op_name((uint8_t)m->op))) &&
		  add(o, "test", json_object_new_string(m->lat ? "lat" : "bw")) &&
		  add(o, "poll", json_object_new_string(m->o->poll == BENCH_POLL_BUSY ? "busy" : "event")) &&
		  add(o, "sealed", json_object_new_boolean(m->o->sealed)) &&
		  add(o, "blocking", json_object_new_boolean(m->o->blocking)) &&
		  add(o, "aead", json_object_new_string(m->aead)) &&
		  add(o, "cpu_scope", json_object_new_string(m->op == BENCH_OP_CONNECT ? "process" : "thread")) &&
		  add(o, "device", json_object_new_string(m->device ? m->device : "")) &&
		  add(o, "peer", json_object_new_string(m->peer ? m->peer : ""));
	/* The client's one-sided tests: operations in flight and completion moderation. */
	if (ok && m->o->tx_depth && strcmp(m->role, "client") == 0)
		ok = add(o, "tx_depth", json_object_new_int64(m->lat ? 1 : (int64_t)m->o->tx_depth)) &&
		     add(o, "cq_mod", json_object_new_int64(m->lat ? 1 : (int64_t)m->o->cq_mod)) &&
		     add(o, "qps", json_object_new_int64((int64_t)m->o->qps));
	if (ok)
		return o;
	json_object_put(o);
	return NULL;
}

bool report_json(const char *path, const struct bench_meta *m, const struct bench_row *rows, size_t n)
{
	json_object *root = meta_json(m), *arr = json_object_new_array();
	bool ok = root && arr;
	for (size_t i = 0; ok && i < n; i++) {
		json_object *r = row_json(&rows[i], m->role);
		ok = r && json_object_array_add(arr, r) == 0;
		if (!ok)
			json_object_put(r);
	}
	if (ok)
		ok = add(root, "results", arr);
	else
		json_object_put(arr);
	if (!ok) {
		fprintf(stderr, "%s: cannot build --json %s: out of memory\n", PROG, path);
		json_object_put(root);
		return false;
	}
	FILE *f = fopen(path, "w");
	bool written = f && fputs(json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY), f) >= 0 &&
		       fputc('\n', f) != EOF;
	if (f && fclose(f) != 0)
		written = false;
	if (!written)
		fprintf(stderr, "%s: cannot write --json %s: %s\n", PROG, path, strerror(errno));
	json_object_put(root);
	return written;
}
