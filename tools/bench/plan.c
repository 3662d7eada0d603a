/* SPDX-License-Identifier: MIT */
/* What a run measures (bench.h): its steps, a size and an iteration count each, from the options. */
#include "bench.h"

size_t bench_plan(const struct bench_opts *o, struct bench_step steps[static BENCH_LIST_MAX])
{
	uint64_t iters = o->niters ? o->iters[0] : 0;
	size_t n = 0;
	if (o->op == BENCH_OP_CONNECT || o->op == BENCH_OP_QP) {
		steps[n++] = (struct bench_step){ 0, iters };
		return n;
	}
	if (o->all_sizes) {
		for (uint64_t size = BENCH_ALL_MIN; size <= BENCH_ALL_MAX && n < BENCH_LIST_MAX; size *= 2)
			steps[n++] = (struct bench_step){ size, iters };
		return n;
	}
	for (; n < o->nsizes; n++)
		steps[n] = (struct bench_step){ o->sizes[n], o->niters > 1 ? o->iters[n] : iters };
	return n;
}
