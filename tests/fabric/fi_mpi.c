// SPDX-License-Identifier: MIT
/*
 * fi_mpi: an ordinary MPI program, two ranks, that knows nothing of rdmasec
 * or libfabric; tests/fabric/fi_pingpong.sh runs it under Debian's Open MPI
 * (ofi MTL) over "rdmasec;ofi_rxm" and benchmarks/ over "verbs;ofi_rxm" too.
 *
 *   fi_mpi check            every check below, one line each, exit 0 if all hold
 *   fi_mpi bench SIZE ITERS "lat SIZE US": median one-way latency of ITERS round
 *                           trips; "bw SIZE MB/s ITERS": ITERS messages streamed;
 *                           "cpu SIZE US": both ranks' CPU per data message
 *   fi_mpi victim SECONDS STOPFILE
 *                           the attack matrix's victim (tools/attack/matrix):
 *                           rank 1 sends rank 0 a 64-byte text message every
 *                           10 ms, rank 0 returns it, both check every byte
 *                           (rank 1 prints "progress: N round trips" each 100);
 *                           once STOPFILE exists (or after SECONDS) 20 more
 *                           round trips "after the attack", then rank 0
 *                           prints "victim: rank 0: N messages checked" and
 *                           rank 1 "victim: rank 1: N round trips checked, M
 *                           after the attack"; a message that is not what
 *                           was sent ends the job ("corrupted")
 *
 * Checks:
 *   pingpong   1 B .. 4 MiB: rank 1 checks each message and returns it with
 *              every byte complemented; rank 0 checks the reply
 *   allreduce  MPI_SUM over 1 Mi ints whose sum each rank knows in advance
 *   large      15 MiB each way in one message (rxm's rendezvous: the receiver
 *              reads the sender's buffer, i.e. the provider's RMA path; the
 *              provider's messages end at 16 MiB, rdmasec's max_msg)
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define TAG_DATA 7
#define TAG_REPLY 8

static int rank;

static void die(const char *what)
{
	fprintf(stderr, "fi_mpi rank %d: %s\n", rank, what);
	MPI_Abort(MPI_COMM_WORLD, 1);
	exit(1);
}

/* Byte i of message number k of n bytes: differs by size, message and offset. */
static uint8_t pattern(size_t i, size_t n, unsigned k)
{
	return (uint8_t)(i * 131u + n + k * 7u + 1u);
}

static void fill(uint8_t *b, size_t n, unsigned k)
{
	for (size_t i = 0; i < n; i++)
		b[i] = pattern(i, n, k);
}

/* The first offset where b is not the pattern, or n. */
static size_t mismatch(const uint8_t *b, size_t n, unsigned k, uint8_t flip)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != (uint8_t)(pattern(i, n, k) ^ flip))
			return i;
	return n;
}

static uint8_t *alloc_or_die(size_t n)
{
	uint8_t *b = malloc(n ? n : 1);
	if (!b)
		die("out of memory");
	return b;
}

static void recv_exact(void *b, size_t n, int from, int tag)
{
	MPI_Status st;
	int got;
	if (MPI_Recv(b, (int)n, MPI_BYTE, from, tag, MPI_COMM_WORLD, &st) != MPI_SUCCESS)
		die("MPI_Recv failed");
	if (MPI_Get_count(&st, MPI_BYTE, &got) != MPI_SUCCESS || (size_t)got != n)
		die("a message arrived with the wrong length");
}

static void send_or_die(const void *b, size_t n, int to, int tag)
{
	if (MPI_Send(b, (int)n, MPI_BYTE, to, tag, MPI_COMM_WORLD) != MPI_SUCCESS)
		die("MPI_Send failed");
}

/* One checked round trip of n bytes, message number k. A wrong byte aborts
 * the job (MPI_Abort): the other rank would wait for a reply forever. */
static void round_trip(uint8_t *b, size_t n, unsigned k)
{
	char why[128];
	size_t at;
	if (rank == 0) {
		fill(b, n, k);
		send_or_die(b, n, 1, TAG_DATA);
		recv_exact(b, n, 1, TAG_REPLY);
		at = mismatch(b, n, k, 0xff);
	} else {
		recv_exact(b, n, 0, TAG_DATA);
		at = mismatch(b, n, k, 0);
		for (size_t i = 0; i < n; i++)
			b[i] ^= 0xff;
		if (at == n)
			send_or_die(b, n, 0, TAG_REPLY);
	}
	if (at != n) {
		snprintf(why, sizeof(why), "%zu-byte %s %u wrong at offset %zu", n, rank ? "message" : "reply", k, at);
		die(why);
	}
}

static void check_pingpong(void)
{
	static const size_t sizes[] = { 1, 64, 4096, 65536, 1 << 20, 4 << 20 };
	uint8_t *b = alloc_or_die(4 << 20);
	unsigned k = 0;
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
		for (int it = 0; it < 3; it++)
			round_trip(b, sizes[s], k++);
	free(b);
	if (rank == 0)
		printf("mpi: pingpong ok: %u round trips of 1 B to 4 MiB checked both ways\n", k);
}

static void check_allreduce(void)
{
	enum { N = 1 << 20 };
	int *in = malloc(N * sizeof(*in)), *out = malloc(N * sizeof(*out)), size;
	if (!in || !out)
		die("out of memory");
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	for (int i = 0; i < N; i++)
		in[i] = (i % 1000) * (rank + 1);
	if (MPI_Allreduce(in, out, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS)
		die("MPI_Allreduce failed");
	/* sum over ranks r of (i % 1000) * (r + 1) = (i % 1000) * size * (size + 1) / 2 */
	for (int i = 0; i < N; i++)
		if (out[i] != (i % 1000) * size * (size + 1) / 2)
			die("an allreduce sum is wrong");
	free(in);
	free(out);
	if (rank == 0)
		printf("mpi: allreduce ok: %d ints summed over %d ranks\n", N, size);
}

static void check_large(void)
{
	const size_t n = 15 << 20;
	uint8_t *b = alloc_or_die(n);
	round_trip(b, n, 1000);
	free(b);
	if (rank == 0)
		printf("mpi: large ok: 15 MiB each way in one message, checked\n");
}

static double now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* This process's CPU time so far (its threads, the providers' own included), in seconds. */
static double cpu_seconds(void)
{
	struct rusage u;
	if (getrusage(RUSAGE_SELF, &u) != 0)
		die("getrusage failed");
	return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

/* Latency: ITERS timed round trips, the median. Bandwidth: ITERS messages
 * streamed in windows of 16, one zero-byte acknowledgement per window. CPU:
 * both ranks' over the timed part, per data message (3 x ITERS of them). */
static void bench(size_t n, unsigned iters)
{
	enum { WINDOW = 16 };
	uint8_t *b = alloc_or_die(n);
	double *t = calloc(iters, sizeof(*t));
	MPI_Request req[WINDOW];
	if (!t)
		die("out of memory");
	memset(b, 0x5a, n);
	double cpu0 = 0;
	for (unsigned i = 0; i < iters + 2; i++) { /* two untimed rounds first */
		if (i == 2)
			cpu0 = cpu_seconds();
		double t0 = now_us();
		if (rank == 0) {
			send_or_die(b, n, 1, TAG_DATA);
			recv_exact(b, n, 1, TAG_REPLY);
		} else {
			recv_exact(b, n, 0, TAG_DATA);
			send_or_die(b, n, 0, TAG_REPLY);
		}
		if (i >= 2)
			t[i - 2] = now_us() - t0;
	}
	MPI_Barrier(MPI_COMM_WORLD);
	double t0 = now_us();
	for (unsigned sent = 0; sent < iters; sent += WINDOW) {
		int w = (int)(iters - sent < WINDOW ? iters - sent : WINDOW);
		for (int j = 0; j < w; j++)
			if ((rank == 0 ? MPI_Isend(b, (int)n, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD, &req[j])
				       : MPI_Irecv(b, (int)n, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, &req[j])) != MPI_SUCCESS)
				die("MPI_Isend/MPI_Irecv failed");
		if (MPI_Waitall(w, req, MPI_STATUSES_IGNORE) != MPI_SUCCESS)
			die("MPI_Waitall failed");
		if (rank == 0)
			recv_exact(b, 0, 1, TAG_REPLY);
		else
			send_or_die(b, 0, 0, TAG_REPLY);
	}
	double secs = (now_us() - t0) / 1e6, cpu = cpu_seconds() - cpu0, cpu_sum = 0;
	if (MPI_Reduce(&cpu, &cpu_sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
		die("MPI_Reduce failed");
	if (rank == 0) {
		qsort(t, iters, sizeof(*t), cmp_double);
		printf("lat %zu %.1f\n", n, t[iters / 2] / 2); /* one way, as fi_pingpong reports */
		printf("bw %zu %.2f %u\n", n, (double)n * iters / secs / 1e6, iters);
		printf("cpu %zu %.1f\n", n, cpu_sum * 1e6 / (3.0 * iters)); /* us per data message, both ranks */
	}
	free(t);
	free(b);
}

#define TAG_END 9
#define VICTIM_MSG 64
#define VICTIM_AFTER 20u

/* Message k of the victim: a text an observer on the wire can search for, then its number. */
static void victim_text(char b[VICTIM_MSG], unsigned k)
{
	memset(b, 0, VICTIM_MSG);
	snprintf(b, VICTIM_MSG, "FI-MPI-VICTIM-PAYLOAD message %u of rank 1", k);
}

static void victim_check(const char *got, unsigned k, const char *what)
{
	char want[VICTIM_MSG];
	victim_text(want, k);
	if (memcmp(got, want, VICTIM_MSG) != 0) {
		fprintf(stderr, "fi_mpi rank %d: %s %u corrupted: \"%.*s\"\n", rank, what, k, VICTIM_MSG - 1, got);
		fflush(stderr);
		MPI_Abort(MPI_COMM_WORLD, 3);
	}
}

/* The matrix's victim: round trips of checked text until STOPFILE (or SECONDS), then VICTIM_AFTER more. */
static void victim(unsigned seconds, const char *stopfile)
{
	char b[VICTIM_MSG];
	unsigned k = 0, after = 0;
	double end = now_us() + seconds * 1e6;
	if (rank == 1) {
		for (; after < VICTIM_AFTER; k++) {
			if (after || access(stopfile, F_OK) == 0 || now_us() >= end)
				after++;
			victim_text(b, k);
			send_or_die(b, VICTIM_MSG, 0, TAG_DATA);
			recv_exact(b, VICTIM_MSG, 0, TAG_REPLY);
			victim_check(b, k, "reply");
			if (k % 100 == 99) {
				printf("progress: %u round trips\n", k + 1);
				fflush(stdout);
			}
			usleep(10000);
		}
		send_or_die(b, 0, 0, TAG_END);
	} else {
		for (;; k++) {
			MPI_Status st;
			if (MPI_Recv(b, VICTIM_MSG, MPI_BYTE, 1, MPI_ANY_TAG, MPI_COMM_WORLD, &st) != MPI_SUCCESS)
				die("MPI_Recv failed");
			if (st.MPI_TAG == TAG_END)
				break;
			victim_check(b, k, "message");
			send_or_die(b, VICTIM_MSG, 1, TAG_REPLY);
		}
		printf("victim: rank 0: %u messages checked\n", k);
		fflush(stdout);
		return;
	}
	printf("victim: rank 1: %u round trips checked, %u after the attack\n", k, after);
	fflush(stdout);
}

static int usage(void)
{
	if (rank == 0)
		fprintf(stderr, "usage: fi_mpi check | fi_mpi bench SIZE ITERS | fi_mpi victim SECONDS STOPFILE   (two ranks)\n");
	return 2;
}

int main(int argc, char **argv)
{
	int size, rc;
	if (MPI_Init(&argc, &argv) != MPI_SUCCESS)
		return 1;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 2) {
		rc = usage();
	} else if (argc == 2 && !strcmp(argv[1], "check")) {
		check_pingpong();
		check_allreduce();
		check_large();
		rc = 0;
		if (rank == 0)
			printf("mpi: all checks passed\n");
	} else if (argc == 4 && !strcmp(argv[1], "bench")) {
		char *end1, *end2;
		unsigned long n = strtoul(argv[2], &end1, 10), iters = strtoul(argv[3], &end2, 10);
		rc = *end1 || *end2 || n > (64ul << 20) || iters < 1 || iters > 1000000 ? usage() : 0;
		if (!rc)
			bench(n, (unsigned)iters);
	} else if (argc == 4 && !strcmp(argv[1], "victim")) {
		char *end;
		unsigned long secs = strtoul(argv[2], &end, 10);
		rc = *end || secs < 1 || secs > 3600 || !argv[3][0] ? usage() : 0;
		if (!rc)
			victim((unsigned)secs, argv[3]);
	} else {
		rc = usage();
	}
	MPI_Finalize();
	return rc;
}
