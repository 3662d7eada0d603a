/* SPDX-License-Identifier: MIT */
/*
 * probe-alloc (ReDMArk V4): allocate and register buffers one after another
 * and show that their addresses (which rxe uses unchanged as the remote
 * virtual address) follow a fixed stride, so one leaked address predicts the
 * next buffers.
 */
#include <errno.h>
#include <getopt.h>
#include <infiniband/verbs.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common/attack.h"

enum { MAX_BUFS = 4096 };
enum { OPT_ALLOCATOR = OPT_FIRST_PRIVATE, OPT_SIZE, OPT_NO_REG };
enum allocator { ALLOC_MALLOC, ALLOC_MEMALIGN, ALLOC_MMAP };
static const char *const alloc_names[] = { "malloc", "memalign", "mmap" };

static void help(FILE *f)
{
	fprintf(f, "Usage: %s probe-alloc [options]\n"
		"Allocate and register N buffers in a row and infer the address pattern.\n\n"
		"  -d, --device DEV       RDMA device (default: the first)\n"
		"  -n, --count N          buffers, 2..%d (default 16)\n"
		"  --size BYTES           buffer size, 1..1 GiB (default 4096)\n"
		"  --allocator A          malloc, memalign (page aligned) or mmap (default malloc)\n"
		"  --no-reg               only allocate; no RDMA device needed\n"
		"  --json                 print one JSON result line on stdout\n"
		"  -h, --help\n", PROG, MAX_BUFS);
}

static void *alloc_buf(enum allocator a, size_t size)
{
	void *p = NULL;

	switch (a) {
	case ALLOC_MALLOC:
		return malloc(size);
	case ALLOC_MEMALIGN:
		return posix_memalign(&p, 4096, size) == 0 ? p : NULL;
	case ALLOC_MMAP:
		p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		return p == MAP_FAILED ? NULL : p;
	default:
		return NULL;
	}
}

static void free_buf(enum allocator a, void *p, size_t size)
{
	if (a == ALLOC_MMAP)
		munmap(p, size);
	else
		free(p);
}

static const struct option alloc_long_opts[] = {
	{ "device", required_argument, NULL, 'd' }, { "count", required_argument, NULL, 'n' },
	{ "size", required_argument, NULL, OPT_SIZE }, { "allocator", required_argument, NULL, OPT_ALLOCATOR },
	{ "no-reg", no_argument, NULL, OPT_NO_REG }, { "json", no_argument, NULL, OPT_JSON },
	{ "help", no_argument, NULL, 'h' }, { 0 },
};

struct alloc_opts {
	const char *dev;
	uint32_t n, size;
	enum allocator alloc;
	bool json, noreg;
};

/* What was allocated (and registered), for the report and the cleanup. */
struct alloc_run {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr **mrs;
	void **bufs;
	uint64_t *addrs;
	bool va_is_addr;
};

static bool parse_allocator(const char *s, enum allocator *out)
{
	for (int a = 0; a < 3; a++) {
		if (!strcmp(s, alloc_names[a])) {
			*out = (enum allocator)a;
			return true;
		}
	}
	fprintf(stderr, "%s: unknown --allocator `%s'\n", PROG, s);
	return false;
}

/* Returns -1 to go on, or the exit status (0 after --help, 2 bad usage). */
static int parse_args(int argc, char *argv[], struct alloc_opts *o)
{
	bool bad = false;
	int opt;

	while ((opt = getopt_long(argc, argv, "d:n:h", alloc_long_opts, NULL)) != -1) {
		switch (opt) {
		case 'd': o->dev = optarg; break;
		case 'n': bad |= !parse_u32(optarg, MAX_BUFS, &o->n, "--count") || o->n < 2; break;
		case OPT_SIZE: bad |= !parse_u32(optarg, 1u << 30, &o->size, "--size") || o->size == 0; break;
		case OPT_ALLOCATOR: bad |= !parse_allocator(optarg, &o->alloc); break;
		case OPT_NO_REG: o->noreg = true; break;
		case OPT_JSON: o->json = true; break;
		case 'h': help(stdout); return 0;
		default: help(stderr); return 2;
		}
	}
	if (bad || optind != argc) {
		if (optind != argc)
			fprintf(stderr, "%s probe-alloc: unexpected argument `%s'\n", PROG, argv[optind]);
		return 2;
	}
	return -1;
}

/* Allocates (and registers) the n buffers one after another; false after saying why. */
static bool allocate(const struct alloc_opts *o, struct alloc_run *r)
{
	if (!o->noreg) {
		if (!(r->ctx = open_device(o->dev)))
			return false;
		if (!(r->pd = ibv_alloc_pd(r->ctx))) {
			fprintf(stderr, "%s: ibv_alloc_pd: %s\n", PROG, strerror(errno));
			return false;
		}
	}
	for (uint32_t i = 0; i < o->n; i++) {
		if (!(r->bufs[i] = alloc_buf(o->alloc, o->size))) {
			fprintf(stderr, "%s: allocation %u failed\n", PROG, i);
			return false;
		}
		r->addrs[i] = (uint64_t)(uintptr_t)r->bufs[i];
		if (o->noreg)
			continue;
		r->mrs[i] = ibv_reg_mr(r->pd, r->bufs[i], o->size, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		if (!r->mrs[i]) {
			fprintf(stderr, "%s: ibv_reg_mr: %s\n", PROG, strerror(errno));
			return false;
		}
		/* The VA a peer must name: rxe uses the process address itself. */
		r->va_is_addr &= (uint64_t)(uintptr_t)r->mrs[i]->addr == r->addrs[i];
	}
	return true;
}

/* The spread of the differences between consecutive addresses. */
struct strides {
	int64_t dmin, dmax;
	bool fixed;
	double entropy;
};

static void analyse(const uint64_t *addrs, uint32_t n, struct strides *st)
{
	st->dmin = INT64_MAX;
	st->dmax = INT64_MIN;
	for (uint32_t i = 1; i < n; i++) {
		int64_t d = (int64_t)(addrs[i] - addrs[i - 1]);
		st->dmin = d < st->dmin ? d : st->dmin;
		st->dmax = d > st->dmax ? d : st->dmax;
	}
	st->fixed = st->dmin == st->dmax;
	st->entropy = st->fixed ? 0.0 : log2((double)(uint64_t)(st->dmax - st->dmin) + 1.0);
}

static void report_json(const struct alloc_opts *o, const struct alloc_run *r, const struct strides *st)
{
	struct json j;

	json_begin(&j, "probe-alloc");
	json_str(&j, "allocator", alloc_names[o->alloc]);
	json_u64(&j, "size", o->size);
	json_u64_array(&j, "addrs", r->addrs, o->n, true);
	json_boolean(&j, "fixed_stride", st->fixed);
	json_num(&j, "stride", (double)st->dmin);
	json_boolean(&j, "mr_va_is_address", !o->noreg && r->va_is_addr);
	json_num(&j, "entropy_bits", st->entropy);
	json_end(&j);
}

static void report_text(const struct alloc_opts *o, const struct alloc_run *r, const struct strides *st)
{
	const uint64_t *addrs = r->addrs;

	printf("probe-alloc: %u x %u bytes with %s%s\n", o->n, o->size, alloc_names[o->alloc],
	       o->noreg ? "" : ", each registered");
	for (uint32_t i = 0; i < o->n; i++)
		printf("  buf %3u  0x%012llx  %+lld\n", i, (unsigned long long)addrs[i],
		       i ? (long long)(addrs[i] - addrs[i - 1]) : 0LL);
	if (st->fixed)
		printf("pattern: fixed stride %+lld bytes: the next address is predictable\n", (long long)st->dmin);
	else
		printf("pattern: strides vary %lld..%lld\n", (long long)st->dmin, (long long)st->dmax);
	if (!o->noreg)
		printf("MR virtual address equals the buffer address: %s\n", r->va_is_addr ? "yes" : "no");
	printf("entropy: %.1f bits between consecutive buffers\n", st->entropy);
}

/* Deregisters and frees everything; false if a deregistration failed. */
static bool release(const struct alloc_opts *o, struct alloc_run *r)
{
	bool ok = true;

	for (uint32_t i = 0; r->bufs && i < o->n; i++) {
		if (r->mrs && r->mrs[i] && ibv_dereg_mr(r->mrs[i]) != 0)
			ok = false;
		if (r->bufs[i])
			free_buf(o->alloc, r->bufs[i], o->size);
	}
	if (r->pd)
		ibv_dealloc_pd(r->pd);
	if (r->ctx)
		ibv_close_device(r->ctx);
	free(r->bufs);
	free(r->mrs);
	free(r->addrs);
	return ok;
}

int probe_alloc_main(int argc, char *argv[])
{
	struct alloc_opts o = { .n = 16, .size = 4096, .alloc = ALLOC_MALLOC };
	struct alloc_run r = { .va_is_addr = true };
	struct strides st;
	int ret = 1;

	if ((ret = parse_args(argc, argv, &o)) >= 0)
		return ret;
	ret = 1;
	r.bufs = calloc(o.n, sizeof(*r.bufs));
	r.mrs = calloc(o.n, sizeof(*r.mrs));
	r.addrs = calloc(o.n, sizeof(*r.addrs));
	if (r.bufs && r.mrs && r.addrs && allocate(&o, &r)) {
		analyse(r.addrs, o.n, &st);
		if (o.json)
			report_json(&o, &r, &st);
		else
			report_text(&o, &r, &st);
		ret = 0;
	}
	if (!release(&o, &r))
		ret = 1;
	return ret;
}
