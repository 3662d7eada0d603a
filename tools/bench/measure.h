/* SPDX-License-Identifier: MIT */
/* Clocks, CPU time and the figures perftest reports, computed as perftest does. */
#ifndef RSEC_BENCH_MEASURE_H
#define RSEC_BENCH_MEASURE_H

#include <stddef.h>
#include <stdint.h>

#include "bench_proto.h"

/* Latency figures in microseconds (perftest's columns). */
struct bench_lat {
	double min, max, typical, avg, stdev, p99, p999;
};

/* Bandwidth figures: MB/sec as perftest counts them (2^20 bytes), Mpps = 10^6 messages/s. */
struct bench_bw {
	double peak_mbs, avg_mbs, mpps;
};

/*
 * Whose CPU time: the data path runs entirely in the calling thread, while
 * librdmasec's QP-pool thread refills the pool after each connection, which
 * is set-up cost: --op connect counts the whole process, the others the
 * calling thread.
 */
enum bench_cpu_scope { BENCH_CPU_THREAD, BENCH_CPU_PROCESS };

/* CPU time (user, system) so far. */
struct bench_cpu bench_cpu_now(enum bench_cpu_scope scope);
/* CPU time since start, taken with the same scope. */
struct bench_cpu bench_cpu_since(const struct bench_cpu *start, enum bench_cpu_scope scope);
/* Microseconds of CPU per operation; 0 for no operation. */
double bench_cpu_per_op(const struct bench_cpu *c, uint64_t ops);

/*
 * Sorts the n samples (ns) in place and fills l, each sample divided by
 * divisor first (2 for a ping-pong's half round trip). Percentiles are
 * nearest rank, clamped to the largest sample, as perftest's. n >= 1.
 */
void bench_lat_summarize(uint64_t *samples_ns, size_t n, unsigned divisor, struct bench_lat *l);
/* Average of a duration run: total time over operations, divided by divisor. */
double bench_lat_avg_us(uint64_t elapsed_ns, uint64_t ops, unsigned divisor);

/*
 * iters operations of size bytes in elapsed_ns; best_op_ns is the fastest
 * single operation (0: unknown, peak reported as 0 as perftest's server does).
 */
void bench_bw_compute(uint64_t size, uint64_t iters, uint64_t elapsed_ns, uint64_t best_op_ns, struct bench_bw *b);

#endif
