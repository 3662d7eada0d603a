/* SPDX-License-Identifier: MIT */
/*
 * probe-qpn (ReDMArk V5): create QPs, across freshly opened contexts, and show
 * that their numbers follow a counter an attacker can predict (rxe: the QP
 * pool index, allocated cyclically device-wide).
 */
#include <errno.h>
#include <getopt.h>
#include <infiniband/verbs.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/attack.h"

enum { OPT_DEVICE = OPT_FIRST_PRIVATE, OPT_COUNT, OPT_CONTEXTS, OPT_HOLD, OPT_HELP };

static void help(FILE *f)
{
	fprintf(f, "Usage: %s probe-qpn [options]\n"
		"Create RC QPs (in several freshly opened contexts) and infer how QPNs are chosen.\n\n"
		"  -d, --device DEV   RDMA device (default: the first)\n"
		"  -n, --count N      QPs per context, 1..4096 (default 8)\n"
		"  --contexts K       open the device K times in turn, 1..64 (default 2)\n"
		"  --hold             keep every QP of a context alive (default: destroy each at once)\n"
		"  --json             print one JSON result line on stdout\n"
		"  -h, --help\n", PROG);
}

struct qp_env {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
};

static void env_close(struct qp_env *e)
{
	if (e->cq)
		ibv_destroy_cq(e->cq);
	if (e->pd)
		ibv_dealloc_pd(e->pd);
	if (e->ctx)
		ibv_close_device(e->ctx);
	memset(e, 0, sizeof(*e));
}

static int env_open(struct qp_env *e, const char *dev)
{
	memset(e, 0, sizeof(*e));
	if (!(e->ctx = open_device(dev)))
		return RSEC_E_NODEV;
	e->pd = ibv_alloc_pd(e->ctx);
	e->cq = e->pd ? ibv_create_cq(e->ctx, 4, NULL, NULL, 0) : NULL;
	if (!e->cq) {
		fprintf(stderr, "%s: cannot allocate PD/CQ: %s\n", PROG, strerror(errno));
		env_close(e);
		return RSEC_E_VERBS;
	}
	return 0;
}

static struct ibv_qp *make_qp(struct qp_env *e)
{
	struct ibv_qp_init_attr a = {
		.send_cq = e->cq, .recv_cq = e->cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(e->pd, &a);

	if (!qp)
		fprintf(stderr, "%s: ibv_create_qp: %s\n", PROG, strerror(errno));
	return qp;
}

/* Collect n QPNs in one context. */
static int collect(const char *dev, uint32_t n, bool hold, uint64_t *out)
{
	struct ibv_qp **held = calloc(n, sizeof(*held));
	struct qp_env e;
	int rc = 0;

	if (!held)
		return RSEC_E_NOMEM;
	if ((rc = env_open(&e, dev)) != 0) {
		free(held);
		return rc;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct ibv_qp *qp = make_qp(&e);
		if (!qp) {
			rc = RSEC_E_VERBS;
			break;
		}
		out[i] = qp->qp_num;
		if (hold)
			held[i] = qp;
		else
			ibv_destroy_qp(qp);
	}
	for (uint32_t i = 0; i < n; i++)
		if (held[i])
			ibv_destroy_qp(held[i]);
	free(held);
	env_close(&e);
	return rc;
}

static const struct option qpn_long_opts[] = {
	{ "device", required_argument, NULL, 'd' }, { "count", required_argument, NULL, 'n' },
	{ "contexts", required_argument, NULL, OPT_CONTEXTS }, { "hold", no_argument, NULL, OPT_HOLD },
	{ "json", no_argument, NULL, OPT_JSON }, { "help", no_argument, NULL, 'h' }, { 0 },
};

struct qpn_opts {
	const char *dev;
	uint32_t count, contexts;
	bool hold, json;
};

/* What the QPNs seen say about the next one. */
struct qpn_rule {
	int64_t dmin, dmax;   /* the steps between consecutive QPNs */
	bool sequential;
	uint64_t stride, predicted, next;
	bool hit;
	double entropy;
};

/* Returns -1 to go on, or the exit status (0 after --help, 2 bad usage). */
static int parse_args(int argc, char *argv[], struct qpn_opts *o)
{
	bool bad = false;
	int opt;

	while ((opt = getopt_long(argc, argv, "d:n:h", qpn_long_opts, NULL)) != -1) {
		switch (opt) {
		case 'd': o->dev = optarg; break;
		case 'n': bad |= !parse_u32(optarg, 4096, &o->count, "--count") || o->count == 0; break;
		case OPT_CONTEXTS: bad |= !parse_u32(optarg, 64, &o->contexts, "--contexts") || o->contexts == 0; break;
		case OPT_HOLD: o->hold = true; break;
		case OPT_JSON: o->json = true; break;
		case 'h': help(stdout); return 0;
		default: help(stderr); return 2;
		}
	}
	if (bad || optind != argc) {
		if (optind != argc)
			fprintf(stderr, "%s probe-qpn: unexpected argument `%s'\n", PROG, argv[optind]);
		return 2;
	}
	return -1;
}

/* Infers the rule from the total QPNs seen and checks it against next, taken last. */
static void infer(const uint64_t *qpns, size_t total, uint64_t next, struct qpn_rule *r)
{
	r->dmin = INT64_MAX;
	r->dmax = INT64_MIN;
	r->sequential = true;
	r->stride = 0;
	r->next = next;
	for (size_t i = 1; i < total; i++) {
		int64_t d = (int64_t)qpns[i] - (int64_t)qpns[i - 1];
		r->dmin = d < r->dmin ? d : r->dmin;
		r->dmax = d > r->dmax ? d : r->dmax;
	}
	if (total > 1) {
		r->sequential = r->dmin == r->dmax && r->dmin > 0;
		r->stride = r->sequential ? (uint64_t)r->dmin : 0;
	}
	r->predicted = qpns[total - 1] + r->stride;
	r->hit = r->sequential && total > 1 && r->predicted == next;
	/* With an unknown rule, the spread of observed steps bounds the guessing work. */
	r->entropy = r->hit ? 0.0 : total > 1 ? log2((double)(r->dmax - r->dmin + 1)) : 24.0;
}

static void report_json(const struct qpn_opts *o, const uint64_t *qpns, size_t total, const struct qpn_rule *r)
{
	struct json j;

	json_begin(&j, "probe-qpn");
	json_str(&j, "device", o->dev ? o->dev : "(first)");
	json_u64(&j, "contexts", o->contexts);
	json_boolean(&j, "hold", o->hold);
	json_u64_array(&j, "qpns", qpns, total, true);
	json_boolean(&j, "sequential", r->sequential);
	json_u64(&j, "stride", r->stride);
	json_hex(&j, "predicted_next", r->predicted);
	json_hex(&j, "observed_next", r->next);
	json_boolean(&j, "predictable", r->hit);
	json_num(&j, "entropy_bits", r->entropy);
	json_end(&j);
}

static void report_text(const struct qpn_opts *o, const uint64_t *qpns, size_t total, const struct qpn_rule *r)
{
	printf("probe-qpn: %u context(s) x %u RC QPs (%s)\n", o->contexts, o->count,
	       o->hold ? "held" : "created and destroyed one at a time");
	for (size_t i = 0; i < total; i++)
		printf("  ctx %zu  qpn 0x%06llx\n", i / o->count, (unsigned long long)qpns[i]);
	if (r->sequential)
		printf("generator: sequential counter, stride %llu, continues across contexts\n",
		       (unsigned long long)r->stride);
	else
		printf("generator: irregular (steps %lld..%lld)\n", (long long)r->dmin, (long long)r->dmax);
	printf("prediction: next 0x%06llx, observed 0x%06llx: %s\n", (unsigned long long)r->predicted,
	       (unsigned long long)r->next, r->hit ? "PREDICTABLE" : "not predicted");
	printf("entropy: %.1f bits\n", r->entropy);
}

int probe_qpn_main(int argc, char *argv[])
{
	struct qpn_opts o = { .count = 8, .contexts = 2 };
	struct qpn_rule rule;
	uint64_t *qpns, next = 0;
	size_t total;
	int ret;

	if ((ret = parse_args(argc, argv, &o)) >= 0)
		return ret;
	total = (size_t)o.count * o.contexts;
	if (!(qpns = calloc(total, sizeof(*qpns))))
		return 1;
	ret = 1;
	for (uint32_t c = 0; c < o.contexts; c++)
		if (collect(o.dev, o.count, o.hold, qpns + (size_t)c * o.count) != 0)
			goto out;
	/* One more QP in yet another context: does the inferred rule predict it? */
	if (collect(o.dev, 1, false, &next) != 0)
		goto out;
	infer(qpns, total, next, &rule);
	if (o.json)
		report_json(&o, qpns, total, &rule);
	else
		report_text(&o, qpns, total, &rule);
	ret = 0;
out:
	free(qpns);
	return ret;
}
