/* SPDX-License-Identifier: MIT */
/*
 * rdmasec-blk bench: storage's perftest with fio's knobs. Keeps iodepth
 * commands in flight on every queue through the asynchronous core (no NBD
 * hop, no thread hand-off) and reports what fio reports: IOPS, bandwidth,
 * completion latency percentiles, CPU per I/O, errors.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "blk_cli.h"
#include "clock.h"

enum pattern { SEQ, RANDOM };

struct dir_stats {
	uint64_t ios, bytes;
	uint64_t *lat_ns; /* one per I/O */
	size_t lat_n, lat_cap;
};

struct slot {
	uint8_t *buf;
	uint64_t offset;
	uint64_t start_ns;
	uint8_t opcode;
};

struct job {
	struct blk_session *s;
	enum pattern pattern;
	int read_pct;       /* 100: reads only, 0: writes only */
	bool verify;
	uint64_t seed, bs, nblocks;
	uint64_t *order;    /* --verify: a permutation of the blocks, one pass */
	uint64_t next, limit; /* I/Os issued, and the most this phase issues (UINT64_MAX: until the deadline) */
	uint64_t rng;
	uint64_t deadline_ns;
	uint64_t measure_ns; /* the ramp's end: what completes before is not counted */
	bool measuring;
	uint64_t t0;         /* since when it counts, and the CPU time then */
	struct rusage r0;
	uint64_t start_ms, end_ms; /* the counted window in Unix time, for what others measured meanwhile */
	unsigned depth, nq;
	struct slot *slots; /* nq * depth */
	struct dir_stats rd, wr;
	uint64_t errors, verify_errors;
	int first_error;
	uint64_t first_bad;
	bool failed;
};

static uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static bool parse_rw(const char *rw, struct job *j)
{
	static const struct {
		const char *name;
		enum pattern pattern;
		int read_pct;
	} kinds[] = { { "read", SEQ, 100 }, { "write", SEQ, 0 }, { "randread", RANDOM, 100 },
		      { "randwrite", RANDOM, 0 }, { "randrw", RANDOM, 50 } };
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strcmp(rw, kinds[i].name) == 0) {
			j->pattern = kinds[i].pattern;
			j->read_pct = kinds[i].read_pct;
			return true;
		}
	fprintf(stderr, "rdmasec-blk: --rw: \"%s\" is not read, write, randread, randwrite or randrw\n", rw);
	return false;
}

static bool record(struct dir_stats *d, uint64_t bytes, uint64_t lat)
{
	if (d->lat_n == d->lat_cap) {
		size_t cap = d->lat_cap ? d->lat_cap * 2 : 65536;
		uint64_t *p = realloc(d->lat_ns, cap * sizeof(*p));
		if (!p)
			return false;
		d->lat_ns = p;
		d->lat_cap = cap;
	}
	d->lat_ns[d->lat_n++] = lat;
	d->ios++;
	d->bytes += bytes;
	return true;
}

/* Fisher-Yates over the blocks: a --verify pass touches each exactly once. */
static bool make_order(struct job *j)
{
	j->order = malloc(j->nblocks * sizeof(*j->order));
	if (!j->order)
		return false;
	for (uint64_t i = 0; i < j->nblocks; i++)
		j->order[i] = i;
	if (j->pattern == RANDOM)
		for (uint64_t i = j->nblocks - 1; i > 0; i--) {
			uint64_t k = xorshift(&j->rng) % (i + 1), t = j->order[i];
			j->order[i] = j->order[k];
			j->order[k] = t;
		}
	return true;
}

static uint64_t next_block(struct job *j)
{
	if (j->order)
		return j->order[j->next % j->nblocks];
	if (j->pattern == SEQ)
		return j->next % j->nblocks;
	return xorshift(&j->rng) % j->nblocks;
}

static uint8_t next_opcode(struct job *j)
{
	if (j->read_pct == 100 || j->read_pct == 0)
		return j->read_pct ? BLK_OP_READ : BLK_OP_WRITE;
	return (int)(xorshift(&j->rng) % 100) < j->read_pct ? BLK_OP_READ : BLK_OP_WRITE;
}

/* Start the next I/O in slot i of queue q: 0, -EAGAIN (queue full), or the session's end. */
static int issue(struct job *j, unsigned q, unsigned i)
{
	struct slot *sl = &j->slots[q * j->depth + i];
	sl->offset = next_block(j) * j->bs;
	sl->opcode = next_opcode(j);
	if (sl->opcode == BLK_OP_WRITE && j->verify)
		blk_pattern_fill(sl->buf, j->bs, sl->offset, j->seed);
	struct blk_io io = { .opcode = sl->opcode, .offset = sl->offset, .length = (uint32_t)j->bs, .buf = sl->buf,
			     .cookie = q * j->depth + i };
	sl->start_ns = clock_mono_ns();
	int rc = blk_queue_submit(j->s, q, &io);
	if (rc == 0)
		j->next++;
	return rc;
}

static bool may_issue(const struct job *j)
{
	return !j->failed && j->next < j->limit && clock_mono_ns() < j->deadline_ns;
}

static void note_error(struct job *j, int error)
{
	j->errors++;
	if (!j->first_error)
		j->first_error = error;
}

static void check_read(struct job *j, const struct slot *sl)
{
	size_t bad = blk_pattern_check(sl->buf, j->bs, sl->offset, j->seed);
	if (bad == j->bs)
		return;
	if (!j->verify_errors)
		j->first_bad = sl->offset + bad;
	j->verify_errors++;
}

static void completed(struct job *j, const struct blk_done *d, uint64_t now)
{
	struct slot *sl = &j->slots[d->cookie];
	if (d->error) {
		note_error(j, d->error);
		return;
	}
	struct dir_stats *st = sl->opcode == BLK_OP_READ ? &j->rd : &j->wr;
	if (!record(st, j->bs, now - sl->start_ns))
		j->failed = true;
	if (sl->opcode == BLK_OP_READ && j->verify)
		check_read(j, sl);
}

static uint64_t unix_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* The ramp is over (or there is none): counting starts from nothing, now. */
static void start_measuring(struct job *j, uint64_t now)
{
	j->rd.ios = j->rd.bytes = j->wr.ios = j->wr.bytes = 0;
	j->rd.lat_n = j->wr.lat_n = 0;
	j->t0 = now;
	j->start_ms = unix_ms();
	getrusage(RUSAGE_SELF, &j->r0);
	j->measuring = true;
}

/* Slots not in flight, per queue, so completions can refill them. */
struct freelist {
	unsigned *ids;
	unsigned n;
};

static int run_phase(struct job *j)
{
	struct freelist *fl = calloc(j->nq, sizeof(*fl));
	unsigned *ids = calloc((size_t)j->nq * j->depth, sizeof(*ids));
	struct blk_done d[64];
	int rc = fl && ids ? 0 : -ENOMEM;
	for (unsigned q = 0; rc == 0 && q < j->nq; q++) {
		fl[q].ids = ids + (size_t)q * j->depth;
		for (unsigned i = 0; i < j->depth; i++)
			fl[q].ids[fl[q].n++] = i;
	}
	unsigned inflight = 0;
	while (rc == 0) {
		if (!j->measuring && clock_mono_ns() >= j->measure_ns)
			start_measuring(j, clock_mono_ns());
		for (unsigned q = 0; q < j->nq && may_issue(j); q++)
			while (fl[q].n && may_issue(j)) {
				int src = issue(j, q, fl[q].ids[fl[q].n - 1]);
				if (src == -EAGAIN)
					break;
				if (src < 0) {
					note_error(j, -src);
					j->failed = true;
					break;
				}
				fl[q].n--;
				inflight++;
			}
		if (!inflight)
			break;
		int n = blk_session_poll(j->s, d, 64, 1000);
		if (n < 0) {
			j->failed = true;
			break;
		}
		uint64_t now = clock_mono_ns();
		for (int k = 0; k < n; k++) {
			if (d[k].cookie >= (uint64_t)j->nq * j->depth) { /* ours: the slot it was issued for */
				fprintf(stderr, "rdmasec-blk: a completion names slot %llu, not one we issued\n",
					(unsigned long long)d[k].cookie);
				rc = -EPROTO;
				break;
			}
			completed(j, &d[k], now);
			unsigned q = (unsigned)(d[k].cookie / j->depth);
			fl[q].ids[fl[q].n++] = (unsigned)(d[k].cookie % j->depth);
			inflight--;
		}
	}
	free(ids);
	free(fl);
	return rc;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static double pct_us(const struct dir_stats *d, double p)
{
	if (!d->lat_n)
		return 0;
	size_t i = (size_t)(p / 100.0 * (double)(d->lat_n - 1) + 0.5);
	return (double)d->lat_ns[i] / 1000.0;
}

static void print_dir_text(const char *name, struct dir_stats *d, double secs)
{
	if (!d->ios)
		return;
	qsort(d->lat_ns, d->lat_n, sizeof(*d->lat_ns), cmp_u64);
	double bw = (double)d->bytes / secs;
	printf("  %s: IOPS=%.0f, BW=%.1fMiB/s (%.1fMB/s)(%.1fMiB/%.0fmsec)\n", name, (double)d->ios / secs,
	       bw / 1048576.0, bw / 1e6, (double)d->bytes / 1048576.0, secs * 1000.0);
	printf("    clat (usec): p50=%.1f, p99=%.1f, max=%.1f\n", pct_us(d, 50), pct_us(d, 99), pct_us(d, 100));
}

static void print_dir_json(const char *name, struct dir_stats *d, double secs)
{
	if (d->lat_n) /* a direction without I/O has no latencies, nor their array */
		qsort(d->lat_ns, d->lat_n, sizeof(*d->lat_ns), cmp_u64);
	printf("\"%s\":{\"ios\":%llu,\"bytes\":%llu,\"iops\":%.1f,\"bw_bytes\":%.0f,"
	       "\"clat_us\":{\"p50\":%.1f,\"p99\":%.1f,\"max\":%.1f}},",
	       name, (unsigned long long)d->ios, (unsigned long long)d->bytes, (double)d->ios / secs,
	       (double)d->bytes / secs, pct_us(d, 50), pct_us(d, 99), pct_us(d, 100));
}

static double cpu_s(const struct rusage *a, const struct rusage *b, bool user)
{
	const struct timeval *x = user ? &a->ru_utime : &a->ru_stime, *y = user ? &b->ru_utime : &b->ru_stime;
	return (double)(y->tv_sec - x->tv_sec) + (double)(y->tv_usec - x->tv_usec) / 1e6;
}

static void report(struct blk_cli *c, struct job *j, double secs, const struct rusage *r0, const struct rusage *r1)
{
	uint64_t ios = j->rd.ios + j->wr.ios;
	double usr = cpu_s(r0, r1, true), sys = cpu_s(r0, r1, false);
	double per_io = ios ? (usr + sys) * 1e6 / (double)ios : 0;
	const char *why = blk_session_error(j->s);
	if (c->json) {
		printf("{\"rw\":\"%s\",\"bs\":%llu,\"iodepth\":%u,\"queues\":%u,\"verify\":%s,\"runtime_ms\":%.0f,"
		       "\"start_ms\":%llu,\"end_ms\":%llu,",
		       c->rw, (unsigned long long)j->bs, j->depth, j->nq, j->verify ? "true" : "false", secs * 1000.0,
		       (unsigned long long)j->start_ms, (unsigned long long)j->end_ms);
		print_dir_json("read", &j->rd, secs);
		print_dir_json("write", &j->wr, secs);
		printf("\"cpu\":{\"usr_s\":%.3f,\"sys_s\":%.3f,\"us_per_io\":%.2f},\"errors\":%llu,\"verify_errors\":%llu,"
		       "\"session_ended\":%s}\n",
		       usr, sys, per_io, (unsigned long long)j->errors, (unsigned long long)j->verify_errors,
		       *why ? "true" : "false");
	} else {
		printf("rdmasec-blk: rw=%s, bs=%llu, iodepth=%u, queues=%u, size=%llu%s\n", c->rw,
		       (unsigned long long)j->bs, j->depth, j->nq, (unsigned long long)(j->nblocks * j->bs),
		       j->verify ? ", verify" : "");
		print_dir_text("read", &j->rd, secs);
		print_dir_text("write", &j->wr, secs);
		printf("  cpu: usr=%.2fs, sys=%.2fs, %.2f usec per I/O\n", usr, sys, per_io);
		printf("  errors=%llu, verify_errors=%llu\n", (unsigned long long)j->errors,
		       (unsigned long long)j->verify_errors);
	}
	if (j->first_error)
		fprintf(stderr, "rdmasec-blk: first I/O error: %s\n", strerror(j->first_error));
	if (j->verify_errors)
		fprintf(stderr, "rdmasec-blk: verify: first bad byte at offset %llu\n", (unsigned long long)j->first_bad);
	if (*why)
		fprintf(stderr, "rdmasec-blk: session ended: %s\n", why);
}

static bool setup_job(struct blk_cli *c, struct job *j)
{
	const struct blk_open_reply *info = blk_session_info(j->s);
	uint64_t area = c->size ? c->size : info->size;
	j->bs = c->bs;
	j->depth = blk_session_info(j->s)->queue_depth;
	j->nq = blk_session_queues(j->s);
	if (!j->depth || !j->nq) { /* the OPEN reply's check refuses both; the slots below need them */
		fprintf(stderr, "rdmasec-blk: the target gave %u queues of depth %u\n", j->nq, j->depth);
		return false;
	}
	/* The target's configuration and the library's grants per connection bound what it grants. */
	if (j->depth < c->conn.queue_depth || j->nq < c->conn.queues)
		fprintf(stderr, "rdmasec-blk: the target granted %u queue%s of depth %u (asked for %u of depth %u): "
				"the run uses those\n",
			j->nq, j->nq == 1 ? "" : "s", j->depth, c->conn.queues, c->conn.queue_depth);
	j->verify = c->verify;
	j->seed = c->seed;
	j->rng = c->seed * 0x9e3779b97f4a7c15u + 1;
	if (j->bs % info->block_size || j->bs > blk_session_io_max(j->s)) {
		fprintf(stderr, "rdmasec-blk: --bs %llu: must be a multiple of the block size %u, at most %u\n",
			(unsigned long long)j->bs, info->block_size, blk_session_io_max(j->s));
		return false;
	}
	if (area > info->size || area < j->bs) {
		fprintf(stderr, "rdmasec-blk: --size %llu: must be %llu..%llu (the export's size)\n",
			(unsigned long long)area, (unsigned long long)j->bs, (unsigned long long)info->size);
		return false;
	}
	if (j->read_pct < 100 && (info->flags & BLK_EXPORT_READ_ONLY)) {
		fprintf(stderr, "rdmasec-blk: the export is read-only for us\n");
		return false;
	}
	j->nblocks = area / j->bs;
	j->slots = calloc((size_t)j->nq * j->depth, sizeof(*j->slots));
	if (!j->slots || (j->verify && !make_order(j)))
		return false;
	for (size_t i = 0; i < (size_t)j->nq * j->depth; i++)
		if (!(j->slots[i].buf = aligned_alloc(4096, (j->bs + 4095) / 4096 * 4096)))
			return false;
	return true;
}

static void free_job(struct job *j)
{
	for (size_t i = 0; j->slots && i < (size_t)j->nq * j->depth; i++)
		free(j->slots[i].buf);
	free(j->slots);
	free(j->order);
	free(j->rd.lat_ns);
	free(j->wr.lat_ns);
}

/* A --verify run that wrote reads every block back and checks it, as fio's do_verify. */
static int verify_pass(struct job *j)
{
	j->read_pct = 100;
	j->pattern = SEQ;
	free(j->order);
	j->order = NULL;
	j->next = 0;
	j->limit = j->nblocks;
	j->deadline_ns = UINT64_MAX;
	return run_phase(j);
}

int blk_bench_main(struct blk_cli *c)
{
	struct job j = { 0 };
	if (!parse_rw(c->rw, &j))
		return 2;
	if (c->verify && c->ramp_s) {
		fprintf(stderr, "rdmasec-blk: --ramp-time: not with --verify (a verify run is one pass over every block)\n");
		return 2;
	}
	c->conn.write = j.read_pct < 100;
	if (c->bs > c->conn.io_max)
		c->conn.io_max = (uint32_t)c->bs;
	if (blk_cli_open(c, &j.s) < 0)
		return 1;
	int status = 1;
	if (!setup_job(c, &j))
		goto out;
	uint64_t start = clock_mono_ns();
	j.limit = j.verify ? j.nblocks : UINT64_MAX;
	j.measure_ns = start + c->ramp_s * 1000000000u;
	j.deadline_ns = j.verify ? UINT64_MAX : j.measure_ns + c->runtime_s * 1000000000u;
	if (!c->ramp_s)
		start_measuring(&j, start);
	int rc = run_phase(&j);
	if (rc == 0 && j.verify && j.read_pct < 100 && !j.failed)
		rc = verify_pass(&j);
	struct rusage r1;
	getrusage(RUSAGE_SELF, &r1);
	double secs = j.measuring ? (double)(clock_mono_ns() - j.t0) / 1e9 : 0;
	j.end_ms = unix_ms();
	if (rc < 0) {
		fprintf(stderr, "rdmasec-blk: %s\n", strerror(-rc));
		goto out;
	}
	report(c, &j, secs > 0 ? secs : 1e-9, j.measuring ? &j.r0 : &r1, &r1);
	status = j.errors || j.verify_errors || j.failed ? 1 : 0;
out:
	free_job(&j);
	blk_session_close(j.s);
	return status;
}
