/* SPDX-License-Identifier: MIT */
/*
 * qpn-entropy: how many guesses does a peer that knows its own connection's
 * QPN need to hit another live connection's? (ReDMArk §7, docs/qpn.md.)
 *
 * Per trial an "attacker" takes a QP from the allocator and learns its QPN
 * q, then a "victim" takes one; the attacker guesses q+1, q-1, q+2, ... and
 * we record the rank of the victim's QPN in that order. Allocators: the
 * device alone (rsec_qp_create each time: rxe numbers QPs sequentially) and
 * QP pools (lib/qpool.c) of the sizes given. Pool entries stay live between
 * trials, as on a server; attacker and victim release their QPs after each
 * trial, and each take waits until the pool is full again (connections
 * arrive slower than the background refill). Runs on a real device: the
 * fabric's rxe (`make bench`).
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "conn.h"
#include "dev.h"
#include "qp.h"
#include "qpn_guess.h"
#include "qpool.h"

#define MAX_POOLS 8
#define RECV_WR 64          /* rdmasec-server's default recv_slots */
#define FILL_TIMEOUT_MS 300000 /* an emulated guest is slow */

struct allocator {
	uint32_t size; /* 0: the device alone */
	uint32_t burn;
};

struct outcome {
	struct allocator a;
	struct rsec_qpn_summary s;
	double ms_per_qp;      /* creating one QP (on demand, or by the pool's worker) */
	double burned_per_qp;  /* pools: QPNs burned per entry */
	double burn_ms_per_qp; /* pools: time burning per entry */
	uint64_t empty;        /* pools: takes that found the pool empty */
};

struct bench {
	struct rsec_dev *dev;
	uint32_t trials, warmup; /* warmup: UINT32_MAX for 2 x pool size */
	uint32_t send_wr;
	uint32_t *ranks;
};

static double ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) * 1e3 + (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
}

static int fail(const char *what, int rc)
{
	fprintf(stderr, "qpn-entropy: %s: %s\n", what, rsec_strerror(rc));
	return rc;
}

/* One trial's rank from the two QPs; both are destroyed. */
static int trial_rank(struct rsec_qp *attacker, struct rsec_qp *victim, uint32_t *rank)
{
	*rank = rsec_qpn_guess_rank(attacker->qp->qp_num, victim->qp->qp_num);
	rsec_qp_destroy(attacker);
	rsec_qp_destroy(victim);
	return *rank ? 0 : RSEC_E_PROTO; /* two live QPs with one number: impossible */
}

static int run_unmitigated(struct bench *b, struct outcome *o)
{
	struct timespec t0;
	int rc = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (uint32_t t = 0; t < b->trials && rc == 0; t++) {
		struct rsec_qp a, v;

		rc = rsec_qp_create(b->dev, b->send_wr, RECV_WR, &a);
		if (rc < 0)
			break;
		rc = rsec_qp_create(b->dev, b->send_wr, RECV_WR, &v);
		if (rc < 0) {
			rsec_qp_destroy(&a);
			break;
		}
		rc = trial_rank(&a, &v, &b->ranks[t]);
	}
	if (rc < 0)
		return fail("unmitigated trial", rc);
	/* Creation dominates; the destroys are in this figure too. */
	o->ms_per_qp = ms_since(&t0) / (2.0 * b->trials);
	return rsec_qpn_summarize(b->ranks, b->trials, &o->s);
}

/* Wait for a full pool, then take one. */
static int pool_take(struct rsec_qpool *p, uint32_t size, struct rsec_qp *q)
{
	RSEC_GUARD(rsec_qpool_wait_ready(p, size, FILL_TIMEOUT_MS));
	return rsec_qpool_take(p, q);
}

static int pool_trial(struct rsec_qpool *p, uint32_t size, uint32_t *rank)
{
	struct rsec_qp a, v;

	RSEC_GUARD(pool_take(p, size, &a));
	int rc = pool_take(p, size, &v);
	if (rc < 0) {
		rsec_qp_destroy(&a);
		return rc;
	}
	return trial_rank(&a, &v, rank);
}

static int run_pool(struct bench *b, struct outcome *o)
{
	struct rsec_qpool_opts po = { .size = o->a.size, .burn_max = o->a.burn, .send_wr = b->send_wr,
				      .recv_wr = RECV_WR };
	struct rsec_qpool *p;
	struct rsec_qpool_stats st;
	uint32_t warmup = b->warmup == UINT32_MAX ? 2 * o->a.size : b->warmup, scratch;
	int rc = rsec_qpool_new(b->dev, &po, &p);

	if (rc < 0)
		return fail("cannot make a pool", rc);
	/* Warm up: a fresh pool is one contiguous block; a server's has been churned. */
	for (uint32_t t = 0; t < warmup && rc == 0; t++)
		rc = pool_trial(p, o->a.size, &scratch);
	for (uint32_t t = 0; t < b->trials && rc == 0; t++)
		rc = pool_trial(p, o->a.size, &b->ranks[t]);
	rsec_qpool_stats(p, &st);
	rsec_qpool_free(p);
	if (rc < 0)
		return fail("pool trial", rc);
	o->empty = st.empty;
	if (st.created) {
		o->ms_per_qp = (double)st.create_ns / 1e6 / (double)st.created;
		o->burned_per_qp = (double)st.burned / (double)st.created;
		o->burn_ms_per_qp = (double)st.burn_ns / 1e6 / (double)st.created;
	}
	return rsec_qpn_summarize(b->ranks, b->trials, &o->s);
}

static void name_of(const struct allocator *a, char *out, size_t cap)
{
	if (a->size == 0)
		snprintf(out, cap, "unmitigated");
	else if (a->burn)
		snprintf(out, cap, "pool %u burn %u", a->size, a->burn);
	else
		snprintf(out, cap, "pool %u", a->size);
}

/* The pool the library uses by default, or else the first one measured. */
static const struct outcome *reference_pool(const struct outcome *o, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (o[i].a.size == RSEC_QPOOL_DEFAULT && o[i].a.burn == RSEC_QPOOL_BURN_DEFAULT)
			return &o[i];
	return &o[1];
}

static void print_text(const struct bench *b, const struct outcome *o, size_t n)
{
	char name[48];

	printf("qpn-entropy on %s: %u trials per allocator; guesses in order q+1, q-1, q+2, ...\n", b->dev->name,
	       b->trials);
	printf("%-20s %9s %9s %7s %7s %6s  %s\n", "allocator", "mean", "median", "<=1", "<=16", "bits",
	       "cost per QP");
	for (size_t i = 0; i < n; i++) {
		name_of(&o[i].a, name, sizeof(name));
		printf("%-20s %9.1f %9.1f %6.1f%% %6.1f%% %6.2f  %.2f ms", name, o[i].s.mean, o[i].s.median,
		       100 * o[i].s.within1, 100 * o[i].s.within16, o[i].s.bits, o[i].ms_per_qp);
		if (o[i].a.size == 0)
			printf(" on demand\n");
		else
			printf(" in the background + %.2f ms burning %.1f QPNs; %llu empty takes\n",
			       o[i].burn_ms_per_qp, o[i].burned_per_qp, (unsigned long long)o[i].empty);
	}
	const struct outcome *ref = reference_pool(o, n);
	name_of(&ref->a, name, sizeof(name));
	printf("%s vs unmitigated: %.1fx the guesses, %+.2f bits\n", name, ref->s.mean / o[0].s.mean,
	       ref->s.bits - o[0].s.bits);
}

static void print_json(const struct bench *b, const struct outcome *o, size_t n)
{
	const struct outcome *ref = reference_pool(o, n);

	printf("{\"device\":\"%s\",\"trials\":%u,\"default_pool\":%u,\"default_burn\":%u,\"allocators\":[",
	       b->dev->name, b->trials, RSEC_QPOOL_DEFAULT, RSEC_QPOOL_BURN_DEFAULT);
	for (size_t i = 0; i < n; i++)
		printf("%s{\"pool\":%u,\"burn\":%u,\"mean\":%.4f,\"median\":%.1f,\"within1\":%.4f,\"within16\":%.4f,"
		       "\"bits\":%.4f,\"ms_per_qp\":%.4f,\"burned_per_qp\":%.4f,\"burn_ms_per_qp\":%.4f,"
		       "\"pool_empty\":%llu}",
		       i ? "," : "", o[i].a.size, o[i].a.burn, o[i].s.mean, o[i].s.median, o[i].s.within1,
		       o[i].s.within16, o[i].s.bits, o[i].ms_per_qp, o[i].burned_per_qp, o[i].burn_ms_per_qp,
		       (unsigned long long)o[i].empty);
	printf("],\"reference\":{\"pool\":%u,\"burn\":%u,\"ratio_mean\":%.4f,\"bits_gain\":%.4f}}\n", ref->a.size,
	       ref->a.burn, ref->s.mean / o[0].s.mean, ref->s.bits - o[0].s.bits);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: qpn-entropy [OPTIONS]\n"
		"\n"
		"Measures how many guesses a peer that knows its own QPN needs to hit another live\n"
		"connection's, for the device's own allocator and for QP pools (docs/qpn.md).\n"
		"\n"
		"  -d, --device NAME     RDMA device (default: the one owning --ip)\n"
		"  -i, --ip ADDR         the local address whose device to use (default: $FABRIC_IP)\n"
		"  -t, --trials N        trials per allocator (default 200)\n"
		"  -w, --warmup N        unmeasured trials per pool first (default: twice its size)\n"
		"  -p, --pool N[:B]      measure a pool of N entries burning up to B QPNs per refill\n"
		"                        (repeatable; default %u:%u, the library's default)\n"
		"  -j, --json            one JSON object instead of the table\n"
		"  -h, --help\n",
		RSEC_QPOOL_DEFAULT, RSEC_QPOOL_BURN_DEFAULT);
}

static bool parse_pool(const char *s, struct allocator *a)
{
	char num[32];
	const char *colon = strchr(s, ':');
	size_t len = colon ? (size_t)(colon - s) : strlen(s);
	uint64_t size, burn = 0;

	if (len == 0 || len >= sizeof(num)) {
		fprintf(stderr, "qpn-entropy: --pool: '%s' is not N or N:B\n", s);
		return false;
	}
	memcpy(num, s, len);
	num[len] = '\0';
	if (!cli_parse_u64("--pool size", num, 2, RSEC_QPOOL_MAX, false, &size) ||
	    (colon && !cli_parse_u64("--pool burn", colon + 1, 0, RSEC_QPOOL_BURN_MAX, false, &burn)))
		return false;
	a->size = (uint32_t)size;
	a->burn = (uint32_t)burn;
	return true;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "device", required_argument, NULL, 'd' }, { "ip", required_argument, NULL, 'i' },
		{ "trials", required_argument, NULL, 't' }, { "warmup", required_argument, NULL, 'w' },
		{ "pool", required_argument, NULL, 'p' },   { "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },         { 0 },
	};
	struct outcome out[1 + MAX_POOLS];
	size_t n = 1;
	const char *device = NULL, *ip = getenv("FABRIC_IP");
	bool json = false;
	uint64_t v;
	struct bench b = { .trials = 200, .warmup = UINT32_MAX, .send_wr = rsec_data_send_wr(RSEC_DEFAULT_INFLIGHT) };
	int c, rc;

	memset(out, 0, sizeof(out));
	while ((c = getopt_long(argc, argv, "d:i:t:w:p:jh", opts, NULL)) != -1) {
		switch (c) {
		case 'd': device = optarg; break;
		case 'i': ip = optarg; break;
		case 't':
			if (!cli_parse_u64("--trials", optarg, 1, 100000, false, &v))
				return 2;
			b.trials = (uint32_t)v;
			break;
		case 'w':
			if (!cli_parse_u64("--warmup", optarg, 0, 100000, false, &v))
				return 2;
			b.warmup = (uint32_t)v;
			break;
		case 'p':
			if (n > MAX_POOLS) {
				fprintf(stderr, "qpn-entropy: at most %d pools\n", MAX_POOLS);
				return 2;
			}
			if (!parse_pool(optarg, &out[n++].a))
				return 2;
			break;
		case 'j': json = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	if (n == 1)
		out[n++].a = (struct allocator){ RSEC_QPOOL_DEFAULT, RSEC_QPOOL_BURN_DEFAULT };

	rc = rsec_dev_open(device, ip, &b.dev);
	if (rc < 0) {
		(void)fail("no RDMA device", rc);
		return 1;
	}
	b.ranks = calloc(b.trials, sizeof(*b.ranks));
	rc = b.ranks ? run_unmitigated(&b, &out[0]) : RSEC_E_NOMEM;
	for (size_t i = 1; i < n && rc == 0; i++)
		rc = run_pool(&b, &out[i]);
	if (rc == 0) {
		if (json)
			print_json(&b, out, n);
		else
			print_text(&b, out, n);
	}
	free(b.ranks);
	rsec_dev_put(b.dev);
	return rc == 0 ? 0 : 1;
}
