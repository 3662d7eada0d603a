/* SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "measure.h"

#define MB (1024.0 * 1024.0)

static uint64_t tv_us(const struct timeval *tv)
{
	return (uint64_t)tv->tv_sec * 1000000u + (uint64_t)tv->tv_usec;
}

struct bench_cpu bench_cpu_now(enum bench_cpu_scope scope)
{
	struct rusage ru;
	if (getrusage(scope == BENCH_CPU_THREAD ? RUSAGE_THREAD : RUSAGE_SELF, &ru) != 0)
		return (struct bench_cpu){ 0, 0 };
	return (struct bench_cpu){ .user_us = tv_us(&ru.ru_utime), .sys_us = tv_us(&ru.ru_stime) };
}

struct bench_cpu bench_cpu_since(const struct bench_cpu *start, enum bench_cpu_scope scope)
{
	struct bench_cpu now = bench_cpu_now(scope);
	/* The kernel splits one precise runtime into user and system by ticks:
	 * either part may step back a little; the sum never does. */
	uint64_t total = now.user_us + now.sys_us, before = start->user_us + start->sys_us;
	uint64_t user = now.user_us > start->user_us ? now.user_us - start->user_us : 0;
	uint64_t sum = total > before ? total - before : 0;
	if (user > sum)
		user = sum;
	return (struct bench_cpu){ .user_us = user, .sys_us = sum - user };
}

double bench_cpu_per_op(const struct bench_cpu *c, uint64_t ops)
{
	return ops ? (double)(c->user_us + c->sys_us) / (double)ops : 0.0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static double us(uint64_t ns, unsigned divisor)
{
	return (double)ns / 1000.0 / divisor;
}

static size_t rank(size_t n, double fraction)
{
	size_t r = (size_t)ceil((double)n * fraction);
	return r < n ? r : n - 1;
}

void bench_lat_summarize(uint64_t *samples_ns, size_t n, unsigned divisor, struct bench_lat *l)
{
	qsort(samples_ns, n, sizeof(*samples_ns), cmp_u64);
	double sum = 0, sq = 0;
	for (size_t i = 0; i < n; i++)
		sum += us(samples_ns[i], divisor);
	l->avg = sum / (double)n;
	for (size_t i = 0; i < n; i++) {
		double d = us(samples_ns[i], divisor) - l->avg;
		sq += d * d;
	}
	l->stdev = sqrt(sq / (double)n);
	l->min = us(samples_ns[0], divisor);
	l->max = us(samples_ns[n - 1], divisor);
	l->typical = us(samples_ns[n / 2], divisor);
	l->p99 = us(samples_ns[rank(n, 0.99)], divisor);
	l->p999 = us(samples_ns[rank(n, 0.999)], divisor);
}

double bench_lat_avg_us(uint64_t elapsed_ns, uint64_t ops, unsigned divisor)
{
	return ops ? us(elapsed_ns, divisor) / (double)ops : 0.0;
}

void bench_bw_compute(uint64_t size, uint64_t iters, uint64_t elapsed_ns, uint64_t best_op_ns, struct bench_bw *b)
{
	double secs = (double)elapsed_ns / 1e9;
	b->avg_mbs = secs > 0 ? (double)size * (double)iters / secs / MB : 0;
	b->mpps = secs > 0 ? (double)iters / secs / 1e6 : 0;
	b->peak_mbs = best_op_ns ? (double)size / ((double)best_op_ns / 1e9) / MB : 0;
}
