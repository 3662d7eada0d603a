/* SPDX-License-Identifier: MIT */
/*
 * Grants: the only way a peer reaches our memory. Each grant is a type-2
 * memory window bound to this connection's QP alone, with a fresh key byte
 * per bind, described to the peer over TLS. Memory regions themselves are
 * registered without remote access, and their rkeys never leave the process.
 *
 * A window is allocated right before its bind and deallocated to revoke it,
 * never invalidated and kept: on Linux 6.1's rxe, a SEND_WITH_INV naming an
 * unbound type-2 window (one invalidated before, or never bound) panics the
 * host (docs/verbs.md), and any peer that ever held the key could send one.
 */
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "conn.h"

static int access_to_verbs(unsigned access)
{
	int v = 0;
	if (access & RSEC_ACCESS_READ)
		v |= IBV_ACCESS_REMOTE_READ;
	if (access & RSEC_ACCESS_WRITE)
		v |= IBV_ACCESS_REMOTE_WRITE;
	return v;
}

static bool access_valid(unsigned access)
{
	return access && !(access & ~(unsigned)(RSEC_ACCESS_READ | RSEC_ACCESS_WRITE));
}

static RSEC_MUST_CHECK int require_established(struct rsec_conn *c)
{
	if (c->phase == PHASE_CLOSED)
		return c->close_code;
	return c->phase == PHASE_ESTABLISHED ? 0 : RSEC_E_AGAIN;
}

/* Run the connection until *done or the deadline. */
static RSEC_MUST_CHECK int wait_done(struct rsec_conn *c, const bool *done, int timeout_ms)
{
	uint64_t deadline = rsec_now_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
	while (!*done) {
		int rc = rsec_conn_process(c);
		if (rc < 0)
			return rc;
		if (*done)
			break;
		uint64_t now = rsec_now_ms();
		if (now >= deadline)
			return RSEC_E_TIMEOUT;
		RSEC_GUARD(rsec_conn_wait(c, (int)(deadline - now)));
	}
	return 0;
}

int rsec_region_reg(struct rsec_conn *c, void *addr, size_t len, unsigned access, struct rsec_region **out)
{
	if (!c || !addr || !len || !out || !access_valid(access))
		return RSEC_E_INVAL;
	*out = NULL;
	RSEC_GUARD(require_established(c));
	struct rsec_region *r = calloc(1, sizeof(*r));
	if (!r)
		return RSEC_E_NOMEM;
	int rc = rsec_mr_reg(&c->qp, addr, len, access & RSEC_ACCESS_WRITE, &r->mr);
	if (rc < 0) {
		free(r);
		return rc;
	}
	r->conn = c;
	r->addr = addr;
	r->len = len;
	r->access = access;
	*out = r;
	return 0;
}

void rsec_region_free(struct rsec_region *r)
{
	if (!r)
		return;
	if (r->mr)
		(void)ibv_dereg_mr(r->mr);
	free(r);
}

static struct rsec_local_grant *find_local(struct rsec_conn *c, uint64_t id)
{
	for (unsigned i = 0; i < RSEC_MAX_GRANTS; i++)
		if (c->grants[i].live && c->grants[i].id == id)
			return &c->grants[i];
	return NULL;
}

static RSEC_MUST_CHECK int send_revoke(struct rsec_conn *c, uint64_t id)
{
	struct rsec_msg m = { .type = RSEC_MSG_REVOKE };
	m.u.revoke.grant_id = id;
	return rsec_chan_send(c, &m);
}

int rsec_grant(struct rsec_conn *c, struct rsec_region *r, size_t off, size_t len, unsigned access,
	       uint32_t ttl_ms, uint64_t tag, uint64_t *grant_id)
{
	if (!c || !r || r->conn != c || !len || !access_valid(access) || (access & ~r->access) ||
	    off > r->len || len > r->len - off)
		return RSEC_E_INVAL;
	RSEC_GUARD(require_established(c));
	unsigned idx = 0;
	while (idx < RSEC_MAX_GRANTS && (c->grants[idx].live || c->grants[idx].busy))
		idx++;
	if (idx == RSEC_MAX_GRANTS)
		return RSEC_E_LIMIT;
	struct rsec_local_grant *g = &c->grants[idx];
	RSEC_GUARD(rsec_mw_alloc(&c->qp, &g->mw));
	uint64_t addr = (uintptr_t)r->addr + off;
	g->busy = true;
	g->op_done = false;
	int rc = rsec_mw_bind_post(&c->qp, &g->mw, r->mr, addr, len, access_to_verbs(access), RSEC_WR_ID(WR_BIND, idx));
	if (rc == 0)
		rc = wait_done(c, &g->op_done, 5000);
	g->busy = false;
	if (rc == 0 && !g->op_ok)
		rc = RSEC_E_QP;
	if (rc < 0) {
		/* A failed bind leaves the key unknown: drop the window. */
		rsec_mw_free(&g->mw);
		return rc;
	}
	g->live = true;
	g->id = c->next_grant_id++;
	g->expires_ms = ttl_ms ? rsec_now_ms() + ttl_ms : 0;

	struct rsec_msg m = { .type = RSEC_MSG_GRANT };
	m.u.grant.grant_id = g->id;
	m.u.grant.addr = addr;
	m.u.grant.rkey = g->mw.rkey;
	m.u.grant.len = len;
	m.u.grant.access = access;
	m.u.grant.ttl_ms = ttl_ms;
	m.u.grant.tag = tag;
	rc = rsec_chan_send(c, &m);
	OPENSSL_cleanse(&m, sizeof(m));
	if (rc < 0)
		return rsec_conn_fail(c, rc, "cannot send GRANT");
	c->stats.grants_issued++;
	if (grant_id)
		*grant_id = g->id;
	return 0;
}

/* Deallocating a bound window revokes it at once: the peer's next access fails. */
static RSEC_MUST_CHECK int invalidate(struct rsec_conn *c, struct rsec_local_grant *g)
{
	g->live = false;
	rsec_mw_free(&g->mw);
	return send_revoke(c, g->id);
}

int rsec_revoke(struct rsec_conn *c, uint64_t grant_id)
{
	if (!c)
		return RSEC_E_INVAL;
	RSEC_GUARD(require_established(c));
	struct rsec_local_grant *g = find_local(c, grant_id);
	if (!g)
		return RSEC_E_GRANT;
	RSEC_GUARD(invalidate(c, g));
	c->stats.grants_revoked++;
	return 0;
}

int rsec_grant_expire(struct rsec_conn *c)
{
	uint64_t now = rsec_now_ms();
	for (unsigned i = 0; i < RSEC_MAX_GRANTS; i++) {
		struct rsec_local_grant *g = &c->grants[i];
		if (!g->live || !g->expires_ms || g->expires_ms > now)
			continue;
		int rc = invalidate(c, g);
		if (rc < 0)
			return rsec_conn_fail(c, rc, "cannot expire grant %llu", (unsigned long long)g->id);
		c->stats.grants_expired++;
	}
	return 0;
}

void rsec_grant_on_wc(struct rsec_conn *c, const struct ibv_wc *wc)
{
	uint32_t idx = RSEC_WR_INDEX(wc->wr_id);
	if (RSEC_WR_KIND(wc->wr_id) == WR_RDMA) {
		c->rdma_done = true;
		c->rdma_status = wc->status;
		return;
	}
	if (idx >= RSEC_MAX_GRANTS)
		return;
	struct rsec_local_grant *g = &c->grants[idx];
	g->op_done = true;
	g->op_ok = wc->status == IBV_WC_SUCCESS;
}

int rsec_grant_on_msg(struct rsec_conn *c, const struct rsec_msg *m)
{
	if (m->type == RSEC_MSG_REVOKE) {
		for (unsigned i = 0; i < RSEC_MAX_GRANTS; i++)
			if (c->remote_live[i] && c->remote_grants[i].id == m->u.revoke.grant_id)
				c->remote_live[i] = false;
		return 0;
	}
	unsigned i = 0;
	while (i < RSEC_MAX_GRANTS && c->remote_live[i])
		i++;
	if (i == RSEC_MAX_GRANTS)
		return rsec_conn_fail(c, RSEC_E_LIMIT, "peer holds more than %u grants open", RSEC_MAX_GRANTS);
	const struct rsec_msg_grant *g = &m->u.grant;
	c->remote_grants[i] = (struct rsec_remote_grant){
		.id = g->grant_id, .tag = g->tag, .len = g->len, .access = g->access,
		.ttl_ms = g->ttl_ms, .addr = g->addr, .rkey = g->rkey,
	};
	c->remote_live[i] = true;
	return 0;
}

int rsec_grant_wait(struct rsec_conn *c, uint64_t tag, struct rsec_remote_grant *out, int timeout_ms)
{
	if (!c || !out)
		return RSEC_E_INVAL;
	uint64_t deadline = rsec_now_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
	for (;;) {
		for (unsigned i = 0; i < RSEC_MAX_GRANTS; i++) {
			if (c->remote_live[i] && c->remote_grants[i].tag == tag) {
				*out = c->remote_grants[i];
				c->remote_live[i] = false;
				return 0;
			}
		}
		int rc = rsec_conn_process(c);
		if (rc < 0)
			return rc;
		uint64_t now = rsec_now_ms();
		if (now >= deadline)
			return timeout_ms > 0 ? RSEC_E_TIMEOUT : RSEC_E_AGAIN;
		RSEC_GUARD(rsec_conn_wait(c, (int)(deadline - now)));
	}
}

static RSEC_MUST_CHECK int one_sided(struct rsec_conn *c, const struct rsec_remote_grant *g, uint64_t off, void *buf,
				     size_t len, int timeout_ms, bool write)
{
	if (!c || !g || !buf || !len)
		return RSEC_E_INVAL;
	if (!(g->access & (write ? RSEC_ACCESS_WRITE : RSEC_ACCESS_READ)) || off > g->len || len > g->len - off ||
	    len > UINT32_MAX)
		return RSEC_E_RANGE;
	RSEC_GUARD(require_established(c));
	if (c->rdma_busy)
		return RSEC_E_AGAIN;
	struct ibv_mr *mr = ibv_reg_mr(c->qp.pd, buf, len, write ? 0 : IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		return RSEC_E_VERBS;
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = (uint32_t)len, .lkey = mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = RSEC_WR_ID(WR_RDMA, 0),
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = write ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ,
		.wr.rdma = { .remote_addr = g->addr + off, .rkey = g->rkey },
	};
	c->rdma_busy = true;
	c->rdma_done = false;
	int rc = rsec_data_post(c, &wr);
	if (rc == 0)
		rc = wait_done(c, &c->rdma_done, timeout_ms);
	/* On timeout the WR may still run: keep the MR until the QP is torn down. */
	if (rc == RSEC_E_TIMEOUT)
		c->stale_mr = mr;
	else
		(void)ibv_dereg_mr(mr);
	c->rdma_busy = rc == RSEC_E_TIMEOUT;
	RSEC_GUARD(rc);
	if (c->rdma_status != IBV_WC_SUCCESS)
		return RSEC_E_QP;
	if (write)
		c->stats.rdma_writes++;
	else
		c->stats.rdma_reads++;
	return 0;
}

int rsec_write(struct rsec_conn *c, const struct rsec_remote_grant *g, uint64_t off, const void *buf, size_t len,
	       int timeout_ms)
{
	/* RDMA WRITE only reads the local buffer; the MR has no local write access. */
	return one_sided(c, g, off, (void *)(uintptr_t)buf, len, timeout_ms, true);
}

int rsec_read(struct rsec_conn *c, const struct rsec_remote_grant *g, uint64_t off, void *buf, size_t len,
	      int timeout_ms)
{
	return one_sided(c, g, off, buf, len, timeout_ms, false);
}

void rsec_grant_teardown(struct rsec_conn *c)
{
	for (unsigned i = 0; i < RSEC_MAX_GRANTS; i++) {
		rsec_mw_free(&c->grants[i].mw);
		memset(&c->grants[i], 0, sizeof(c->grants[i]));
	}
	OPENSSL_cleanse(c->remote_grants, sizeof(c->remote_grants));
	memset(c->remote_live, 0, sizeof(c->remote_live));
}
