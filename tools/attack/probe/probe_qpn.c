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

int probe_qpn_main(int argc, char *argv[])
{
	static const struct option opts[] = {
		{ "device", required_argument, NULL, 'd' }, { "count", required_argument, NULL, 'n' },
		{ "contexts", required_argument, NULL, OPT_CONTEXTS }, { "hold", no_argument, NULL, OPT_HOLD },
		{ "json", no_argument, NULL, OPT_JSON }, { "help", no_argument, NULL, 'h' }, { 0 },
	};
	const char *dev = NULL;
	uint32_t count = 8, contexts = 2;
	bool hold = false, json = false, bad = false;
	uint64_t *qpns, next = 0, stride = 0;
	bool sequential = true;
	int64_t dmin = INT64_MAX, dmax = INT64_MIN;
	size_t total;
	int opt, ret = 1;

	while ((opt = getopt_long(argc, argv, "d:n:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'd': dev = optarg; break;
		case 'n': bad |= !parse_u32(optarg, 4096, &count, "--count") || count == 0; break;
		case OPT_CONTEXTS: bad |= !parse_u32(optarg, 64, &contexts, "--contexts") || contexts == 0; break;
		case OPT_HOLD: hold = true; break;
		case OPT_JSON: json = true; break;
		case 'h': help(stdout); return 0;
		default: help(stderr); return 2;
		}
	}
	if (bad || optind != argc) {
		if (optind != argc)
			fprintf(stderr, "%s probe-qpn: unexpected argument `%s'\n", PROG, argv[optind]);
		return 2;
	}
	total = (size_t)count * contexts;
	if (!(qpns = calloc(total, sizeof(*qpns))))
		return 1;
	for (uint32_t c = 0; c < contexts; c++)
		if (collect(dev, count, hold, qpns + (size_t)c * count) != 0)
			goto out;
	/* One more QP in yet another context: does the inferred rule predict it? */
	if (collect(dev, 1, false, &next) != 0)
		goto out;

	for (size_t i = 1; i < total; i++) {
		int64_t d = (int64_t)qpns[i] - (int64_t)qpns[i - 1];
		dmin = d < dmin ? d : dmin;
		dmax = d > dmax ? d : dmax;
	}
	if (total > 1) {
		sequential = dmin == dmax && dmin > 0;
		stride = sequential ? (uint64_t)dmin : 0;
	}
	uint64_t predicted = qpns[total - 1] + stride;
	bool hit = sequential && total > 1 && predicted == next;
	/* With an unknown rule, the spread of observed steps bounds the guessing work. */
	double entropy = hit ? 0.0 : total > 1 ? log2((double)(dmax - dmin + 1)) : 24.0;

	if (json) {
		struct json j;
		json_begin(&j, "probe-qpn");
		json_str(&j, "device", dev ? dev : "(first)");
		json_u64(&j, "contexts", contexts);
		json_boolean(&j, "hold", hold);
		json_u64_array(&j, "qpns", qpns, total, true);
		json_boolean(&j, "sequential", sequential);
		json_u64(&j, "stride", stride);
		json_hex(&j, "predicted_next", predicted);
		json_hex(&j, "observed_next", next);
		json_boolean(&j, "predictable", hit);
		json_num(&j, "entropy_bits", entropy);
		json_end(&j);
	} else {
		printf("probe-qpn: %u context(s) x %u RC QPs (%s)\n", contexts, count,
		       hold ? "held" : "created and destroyed one at a time");
		for (size_t i = 0; i < total; i++)
			printf("  ctx %zu  qpn 0x%06llx\n", i / count, (unsigned long long)qpns[i]);
		if (sequential)
			printf("generator: sequential counter, stride %llu, continues across contexts\n",
			       (unsigned long long)stride);
		else
			printf("generator: irregular (steps %lld..%lld)\n", (long long)dmin, (long long)dmax);
		printf("prediction: next 0x%06llx, observed 0x%06llx: %s\n", (unsigned long long)predicted,
		       (unsigned long long)next, hit ? "PREDICTABLE" : "not predicted");
		printf("entropy: %.1f bits\n", entropy);
	}
	ret = 0;
out:
	free(qpns);
	return ret;
}
