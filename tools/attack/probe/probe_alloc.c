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

int probe_alloc_main(int argc, char *argv[])
{
	static const struct option opts[] = {
		{ "device", required_argument, NULL, 'd' }, { "count", required_argument, NULL, 'n' },
		{ "size", required_argument, NULL, OPT_SIZE }, { "allocator", required_argument, NULL, OPT_ALLOCATOR },
		{ "no-reg", no_argument, NULL, OPT_NO_REG }, { "json", no_argument, NULL, OPT_JSON },
		{ "help", no_argument, NULL, 'h' }, { 0 },
	};
	const char *dev = NULL;
	uint32_t n = 16, size = 4096;
	int alloc = ALLOC_MALLOC, opt, ret = 1;
	bool json = false, bad = false, noreg = false, va_is_addr = true;
	struct ibv_context *ctx = NULL;
	struct ibv_pd *pd = NULL;
	struct ibv_mr **mrs = NULL;
	void **bufs = NULL;
	uint64_t *addrs = NULL;

	while ((opt = getopt_long(argc, argv, "d:n:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'd': dev = optarg; break;
		case 'n': bad |= !parse_u32(optarg, MAX_BUFS, &n, "--count") || n < 2; break;
		case OPT_SIZE: bad |= !parse_u32(optarg, 1u << 30, &size, "--size") || size == 0; break;
		case OPT_ALLOCATOR:
			alloc = -1;
			for (int a = 0; a < 3; a++)
				if (!strcmp(optarg, alloc_names[a]))
					alloc = a;
			if (alloc < 0) {
				fprintf(stderr, "%s: unknown --allocator `%s'\n", PROG, optarg);
				bad = true;
			}
			break;
		case OPT_NO_REG: noreg = true; break;
		case OPT_JSON: json = true; break;
		case 'h': help(stdout); return 0;
		default: help(stderr); return 2;
		}
	}
	if (bad || optind != argc) {
		if (optind != argc)
			fprintf(stderr, "%s probe-alloc: unexpected argument `%s'\n", PROG, argv[optind]);
		return 2;
	}
	bufs = calloc(n, sizeof(*bufs));
	mrs = calloc(n, sizeof(*mrs));
	addrs = calloc(n, sizeof(*addrs));
	if (!bufs || !mrs || !addrs)
		goto out;
	if (!noreg) {
		if (!(ctx = open_device(dev)))
			goto out;
		if (!(pd = ibv_alloc_pd(ctx))) {
			fprintf(stderr, "%s: ibv_alloc_pd: %s\n", PROG, strerror(errno));
			goto out;
		}
	}
	for (uint32_t i = 0; i < n; i++) {
		if (!(bufs[i] = alloc_buf((enum allocator)alloc, size))) {
			fprintf(stderr, "%s: allocation %u failed\n", PROG, i);
			goto out;
		}
		addrs[i] = (uint64_t)(uintptr_t)bufs[i];
		if (noreg)
			continue;
		mrs[i] = ibv_reg_mr(pd, bufs[i], size, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		if (!mrs[i]) {
			fprintf(stderr, "%s: ibv_reg_mr: %s\n", PROG, strerror(errno));
			goto out;
		}
		/* The VA a peer must name: rxe uses the process address itself. */
		va_is_addr &= (uint64_t)(uintptr_t)mrs[i]->addr == addrs[i];
	}

	int64_t dmin = INT64_MAX, dmax = INT64_MIN;
	for (uint32_t i = 1; i < n; i++) {
		int64_t d = (int64_t)(addrs[i] - addrs[i - 1]);
		dmin = d < dmin ? d : dmin;
		dmax = d > dmax ? d : dmax;
	}
	bool fixed = dmin == dmax;
	double entropy = fixed ? 0.0 : log2((double)(uint64_t)(dmax - dmin) + 1.0);
	if (json) {
		struct json j;
		json_begin(&j, "probe-alloc");
		json_str(&j, "allocator", alloc_names[alloc]);
		json_u64(&j, "size", size);
		json_u64_array(&j, "addrs", addrs, n, true);
		json_boolean(&j, "fixed_stride", fixed);
		json_num(&j, "stride", (double)dmin);
		json_boolean(&j, "mr_va_is_address", !noreg && va_is_addr);
		json_num(&j, "entropy_bits", entropy);
		json_end(&j);
	} else {
		printf("probe-alloc: %u x %u bytes with %s%s\n", n, size, alloc_names[alloc],
		       noreg ? "" : ", each registered");
		for (uint32_t i = 0; i < n; i++)
			printf("  buf %3u  0x%012llx  %+lld\n", i, (unsigned long long)addrs[i],
			       i ? (long long)(addrs[i] - addrs[i - 1]) : 0LL);
		if (fixed)
			printf("pattern: fixed stride %+lld bytes: the next address is predictable\n", (long long)dmin);
		else
			printf("pattern: strides vary %lld..%lld\n", (long long)dmin, (long long)dmax);
		if (!noreg)
			printf("MR virtual address equals the buffer address: %s\n", va_is_addr ? "yes" : "no");
		printf("entropy: %.1f bits between consecutive buffers\n", entropy);
	}
	ret = 0;
out:
	for (uint32_t i = 0; bufs && i < n; i++) {
		if (mrs && mrs[i] && ibv_dereg_mr(mrs[i]) != 0)
			ret = 1;
		if (bufs[i])
			free_buf((enum allocator)alloc, bufs[i], size);
	}
	if (pd)
		ibv_dealloc_pd(pd);
	if (ctx)
		ibv_close_device(ctx);
	free(bufs);
	free(mrs);
	free(addrs);
	return ret;
}
