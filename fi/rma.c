/* SPDX-License-Identifier: MIT */
/*
 * fi_read and fi_write through rdmasec grants, asked for per transfer. The
 * initiator sends RMA_REQ (tag, the target's MR key, address, length); the
 * target checks the key's registration allows it and the range lies inside,
 * and grants this peer alone (rsec_grant: a window bound to this QP, a fresh
 * key, described over TLS) a sealed grant (RSEC_GRANT_SEALED: the bytes cross
 * the wire encrypted under a key of that grant) of a staging region of its
 * own: for a READ it holds a copy of the range, sealed in place; a WRITE
 * lands there and is opened (authenticated) and copied into the range once
 * the initiator's RMA_DONE says it ended. The initiator finds the grant by
 * its tag, transfers (rsec_read_sealed/rsec_write_sealed), completes, and
 * sends RMA_DONE. A refused request comes back as RMA_NAK and an error
 * completion. No rkey, no payload byte crosses the wire in clear, and no
 * grant outlives its transfer. The price: a copy on each side.
 */
#include <stdlib.h>
#include <string.h>

#include "rsfi.h"

#define RSFI_RMA_TTL_MS 60000u /* a grant whose RMA_DONE never comes expires */

struct rsfi_rma_op {
	struct rsfi_rma_op *next;
	uint64_t tag;
	enum rsfi_rma_kind kind;
	void *buf;
	size_t len;
	void *context;
};

struct rsfi_rma_grant {
	struct rsfi_rma_grant *next;
	struct rsfi_ep *ep;
	struct rsfi_mr *mr;
	uint64_t tag, grant_id;
	struct rsec_region *region; /* the staging copy, sealed */
	enum rsfi_rma_kind kind;
	uint8_t *dest;              /* a WRITE's range in the MR, filled once opened */
	size_t len;
};

static void complete(struct rsfi_ep *ep, const struct rsfi_rma_op *op, int err, int code)
{
	struct rsfi_cqe e = { .context = op->context, .len = err ? 0 : op->len, .err = err, .prov_errno = -code,
			      .flags = FI_RMA | (op->kind == RSFI_RMA_READ ? FI_READ : FI_WRITE) };

	rsfi_cq_push(ep->tx_cq, &e);
}

static int send_rma(struct rsfi_ep *ep, enum rsfi_frame_type type, const struct rsfi_rma_msg *m)
{
	uint8_t body[RSFI_RMA_REQ_LEN];
	int n = rsfi_rma_write(type, m, body);

	return n < 0 ? -FI_EINVAL : rsfi_cm_send(ep->conn, type, body, (size_t)n, 0);
}

static ssize_t post(struct rsfi_ep *ep, enum rsfi_rma_kind kind, void *buf, size_t len, uint64_t addr, uint64_t key,
		    void *context)
{
	struct rsfi_rma_msg m = { .key = key, .addr = addr, .len = len, .kind = kind };
	ssize_t rc = 0;

	if (!buf || !len || len > RSFI_MAX_MSG)
		return -FI_EINVAL;
	struct rsfi_rma_op *op = calloc(1, sizeof(*op));
	if (!op)
		return -FI_ENOMEM;
	pthread_mutex_lock(&ep->dom->lock);
	unsigned n = 0;
	struct rsfi_rma_op **tail = &ep->rma_ops;
	for (; *tail; tail = &(*tail)->next)
		n++;
	if (ep->state != RSFI_EP_CONNECTED)
		rc = ep->state == RSFI_EP_SHUTDOWN ? -FI_ECONNRESET : -FI_EOPBADSTATE;
	else if (n >= RSFI_QUEUE_DEPTH || ep->tx_cq->count + n + 1 > ep->tx_cq->cap)
		rc = -FI_EAGAIN; /* each transfer in flight has its completion's room */
	if (!rc) {
		*op = (struct rsfi_rma_op){ .tag = ++ep->rma_tag, .kind = kind, .buf = buf, .len = len, .context = context };
		m.tag = op->tag;
		rc = send_rma(ep, RSFI_FRAME_RMA_REQ, &m);
		if (rc == -FI_ETIMEDOUT)
			rc = -FI_EAGAIN;
	}
	if (!rc)
		*tail = op;
	pthread_mutex_unlock(&ep->dom->lock);
	if (rc)
		free(op);
	return rc;
}

/* A sealed READ: into a staging buffer (the tags need room), opened there, the plaintext copied out. */
static int read_sealed(struct rsfi_ep *ep, struct rsfi_rma_op *op, const struct rsec_remote_grant *g, int timeout)
{
	size_t plain = 0;

	if (g->len != rsec_sealed_len(op->len))
		return RSEC_E_GRANT;
	uint8_t *tmp = malloc(g->len);
	if (!tmp)
		return RSEC_E_NOMEM;
	int rc = rsec_read_sealed(ep->conn, g, tmp, g->len, &plain, timeout);
	if (rc == 0 && plain != op->len)
		rc = RSEC_E_GRANT;
	if (rc == 0)
		memcpy(op->buf, tmp, plain);
	explicit_bzero(tmp, g->len);
	free(tmp);
	return rc;
}

/* Runs one transfer whose grant g arrived; then tells the target it ended. */
static void run(struct rsfi_ep *ep, struct rsfi_rma_op *op, const struct rsec_remote_grant *g)
{
	int timeout = ep->dom->fab->conf.timeout_ms;
	int rc = op->kind == RSFI_RMA_READ ? read_sealed(ep, op, g, timeout)
					   : rsec_write_sealed(ep->conn, g, 0, op->buf, op->len, timeout);
	struct rsfi_rma_msg done = { .tag = op->tag };

	(void)!send_rma(ep, RSFI_FRAME_RMA_DONE, &done); /* lost: the grant expires (RSFI_RMA_TTL_MS) */
	if (rc)
		RSFI_WARN(FI_LOG_EP_DATA, "fi_%s of %zu bytes from %s failed: %s\n",
			  op->kind == RSFI_RMA_READ ? "read" : "write", op->len, ep->identity, rsec_strerror(rc));
	complete(ep, op, rc ? rsfi_errno(rc) : 0, rc);
}

void rsfi_rma_progress(struct rsfi_ep *ep)
{
	for (struct rsfi_rma_op **pp = &ep->rma_ops; *pp && ep->state == RSFI_EP_CONNECTED;) {
		struct rsfi_rma_op *op = *pp;
		struct rsec_remote_grant g;
		if (rsec_grant_wait(ep->conn, op->tag, &g, 0) != 0) {
			pp = &op->next;
			continue;
		}
		*pp = op->next;
		run(ep, op, &g);
		free(op);
	}
}

static struct rsfi_mr *find_mr(struct rsfi_domain *dom, uint64_t key)
{
	for (struct rsfi_mr *mr = dom->mrs; mr; mr = mr->next)
		if (mr->mr.key == key)
			return mr;
	return NULL;
}

/* Grants the peer the range it asked for: 0, RSEC_E_AGAIN (retry), or a positive FI errno to refuse with. */
static int serve(struct rsfi_ep *ep, const struct rsfi_rma_msg *m)
{
	struct rsfi_mr *mr = find_mr(ep->dom, m->key);
	uint64_t need = m->kind == RSFI_RMA_READ ? FI_REMOTE_READ : FI_REMOTE_WRITE;
	unsigned access = m->kind == RSFI_RMA_READ ? RSEC_ACCESS_READ : RSEC_ACCESS_WRITE;
	size_t sealed = rsec_sealed_len(m->len);

	if (!mr || !(mr->access & need))
		return FI_EACCES;
	uintptr_t base = (uintptr_t)mr->base;
	if (m->addr < base || m->addr - base > mr->len || m->len > mr->len - (m->addr - base) || !sealed)
		return FI_EINVAL;
	struct rsfi_rma_grant *gr = calloc(1, sizeof(*gr));
	if (!gr)
		return FI_ENOMEM;
	int rc = rsec_region_alloc(ep->conn, sealed, access, &gr->region);
	if (rc == 0 && m->kind == RSFI_RMA_READ)
		memcpy(rsec_region_addr(gr->region), (const void *)(uintptr_t)m->addr, m->len);
	if (rc == 0)
		rc = rsec_grant(ep->conn, gr->region, 0, sealed, access | RSEC_GRANT_SEALED, RSFI_RMA_TTL_MS, m->tag,
				&gr->grant_id);
	if (rc) {
		rsec_region_free(gr->region);
		free(gr);
		return rc == RSEC_E_AGAIN ? RSEC_E_AGAIN : rsfi_errno(rc);
	}
	gr->next = ep->dom->grants;
	gr->ep = ep;
	gr->mr = mr;
	gr->tag = m->tag;
	gr->kind = m->kind;
	gr->dest = (uint8_t *)(uintptr_t)m->addr;
	gr->len = m->len;
	ep->dom->grants = gr;
	return 0;
}

static void drop_grant(struct rsfi_rma_grant **pp)
{
	struct rsfi_rma_grant *gr = *pp;

	*pp = gr->next;
	if (gr->ep->conn)
		(void)rsec_revoke(gr->ep->conn, gr->grant_id);
	rsec_region_free(gr->region);
	free(gr);
}

/*
 * RMA_DONE: a READ grant just goes; a WRITE is opened in the staging region
 * (rdmasec's claim for it comes over TLS, maybe after this frame: 0, retry)
 * and copied into the MR. Bytes that fail authentication never reach it.
 */
static int write_landed(struct rsfi_ep *ep, struct rsfi_rma_grant **pp)
{
	struct rsfi_rma_grant *gr = *pp;
	uint64_t off = 0, len = 0;

	if (gr->kind == RSFI_RMA_WRITE && ep->conn) {
		int rc = rsec_grant_open(ep->conn, gr->grant_id, &off, &len, 0);
		if (rc == RSEC_E_AGAIN && !ep->closing)
			return 0;
		if (rc == 0 && len == gr->len)
			memcpy(gr->dest, (uint8_t *)rsec_region_addr(gr->region) + off, len);
		else
			RSFI_WARN(FI_LOG_EP_DATA, "fi_write from %s not applied: %s\n", ep->identity,
				  rc ? rsec_strerror(rc) : "length differs");
	}
	drop_grant(pp);
	return 1;
}

/* The initiator's NAK: its transfer ends with the target's error. */
static void refused(struct rsfi_ep *ep, const struct rsfi_rma_msg *m)
{
	for (struct rsfi_rma_op **pp = &ep->rma_ops; *pp; pp = &(*pp)->next) {
		if ((*pp)->tag != m->tag)
			continue;
		struct rsfi_rma_op *op = *pp;
		*pp = op->next;
		complete(ep, op, (int)m->code, RSEC_E_GRANT);
		free(op);
		return;
	}
}

int rsfi_rma_consume(struct rsfi_ep *ep, const struct rsfi_frame *f, const uint8_t *body)
{
	struct rsfi_rma_msg m;

	if (rsfi_rma_read(f->type, body, f->body_len, &m) != 0)
		return 1; /* cannot happen: rsfi_frame_read checked the length; the fields are bounded here */
	if (f->type == RSFI_FRAME_RMA_NAK) {
		refused(ep, &m);
		return 1;
	}
	if (f->type == RSFI_FRAME_RMA_DONE) {
		for (struct rsfi_rma_grant **pp = &ep->dom->grants; *pp; pp = &(*pp)->next) {
			if ((*pp)->ep == ep && (*pp)->tag == m.tag)
				return write_landed(ep, pp);
		}
		return 1;
	}
	int rc = serve(ep, &m);
	if (rc == RSEC_E_AGAIN)
		return ep->closing ? 1 : 0;
	if (rc) {
		RSFI_WARN(FI_LOG_EP_DATA, "refused an fi_%s of %llu bytes from %s: %s\n",
			  m.kind == RSFI_RMA_READ ? "read" : "write", (unsigned long long)m.len, ep->identity,
			  fi_strerror(rc));
		struct rsfi_rma_msg nak = { .tag = m.tag, .code = (uint32_t)rc };
		(void)!send_rma(ep, RSFI_FRAME_RMA_NAK, &nak);
	}
	return 1;
}

void rsfi_rma_end(struct rsfi_ep *ep, int code)
{
	while (ep->rma_ops) {
		struct rsfi_rma_op *op = ep->rma_ops;
		ep->rma_ops = op->next;
		if (rsfi_cq_space(ep->tx_cq))
			complete(ep, op, FI_ECANCELED, code);
		free(op);
	}
	for (struct rsfi_rma_grant **pp = &ep->dom->grants; *pp;) {
		if ((*pp)->ep == ep)
			drop_grant(pp);
		else
			pp = &(*pp)->next;
	}
}

void rsfi_rma_forget_mr(struct rsfi_domain *dom, struct rsfi_mr *mr)
{
	for (struct rsfi_rma_grant **pp = &dom->grants; *pp;) {
		if ((*pp)->mr == mr)
			drop_grant(pp);
		else
			pp = &(*pp)->next;
	}
}

static ssize_t rma_read(struct fid_ep *fid, void *buf, size_t len, void *desc, fi_addr_t src, uint64_t addr,
			uint64_t key, void *context)
{
	(void)desc, (void)src;
	return post((struct rsfi_ep *)fid, RSFI_RMA_READ, buf, len, addr, key, context);
}

static ssize_t rma_write(struct fid_ep *fid, const void *buf, size_t len, void *desc, fi_addr_t dest, uint64_t addr,
			 uint64_t key, void *context)
{
	(void)desc, (void)dest;
	return post((struct rsfi_ep *)fid, RSFI_RMA_WRITE, (void *)buf, len, addr, key, context);
}

/* One local and one remote segment per transfer (tx_attr.rma_iov_limit 1). */
static ssize_t rma_msg(struct fid_ep *fid, const struct fi_msg_rma *msg, enum rsfi_rma_kind kind)
{
	if (!msg || msg->iov_count != 1 || msg->rma_iov_count != 1 || !msg->msg_iov || !msg->rma_iov ||
	    msg->msg_iov[0].iov_len != msg->rma_iov[0].len)
		return -FI_EINVAL;
	return post((struct rsfi_ep *)fid, kind, msg->msg_iov[0].iov_base, msg->msg_iov[0].iov_len,
		    msg->rma_iov[0].addr, msg->rma_iov[0].key, msg->context);
}

static ssize_t rma_readmsg(struct fid_ep *fid, const struct fi_msg_rma *msg, uint64_t flags)
{
	(void)flags;
	return rma_msg(fid, msg, RSFI_RMA_READ);
}

static ssize_t rma_writemsg(struct fid_ep *fid, const struct fi_msg_rma *msg, uint64_t flags)
{
	/* Remote CQ data and inject with RMA are not offered. */
	return flags & (FI_REMOTE_CQ_DATA | FI_INJECT) ? -FI_ENOSYS : rma_msg(fid, msg, RSFI_RMA_WRITE);
}

static ssize_t rma_readv(struct fid_ep *fid, const struct iovec *iov, void **desc, size_t count, fi_addr_t src,
			 uint64_t addr, uint64_t key, void *context)
{
	(void)desc, (void)src;
	if (count != 1 || !iov)
		return -FI_EINVAL;
	return post((struct rsfi_ep *)fid, RSFI_RMA_READ, iov[0].iov_base, iov[0].iov_len, addr, key, context);
}

static ssize_t rma_writev(struct fid_ep *fid, const struct iovec *iov, void **desc, size_t count, fi_addr_t dest,
			  uint64_t addr, uint64_t key, void *context)
{
	(void)desc, (void)dest;
	if (count != 1 || !iov)
		return -FI_EINVAL;
	return post((struct rsfi_ep *)fid, RSFI_RMA_WRITE, iov[0].iov_base, iov[0].iov_len, addr, key, context);
}

static ssize_t no_rma_inject(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest, uint64_t addr,
			     uint64_t key)
{
	(void)ep, (void)buf, (void)len, (void)dest, (void)addr, (void)key;
	return -FI_ENOSYS;
}

static ssize_t no_rma_writedata(struct fid_ep *ep, const void *buf, size_t len, void *desc, uint64_t data,
				fi_addr_t dest, uint64_t addr, uint64_t key, void *context)
{
	(void)ep, (void)buf, (void)len, (void)desc, (void)data, (void)dest, (void)addr, (void)key, (void)context;
	return -FI_ENOSYS;
}

static ssize_t no_rma_injectdata(struct fid_ep *ep, const void *buf, size_t len, uint64_t data, fi_addr_t dest,
				 uint64_t addr, uint64_t key)
{
	(void)ep, (void)buf, (void)len, (void)data, (void)dest, (void)addr, (void)key;
	return -FI_ENOSYS;
}

struct fi_ops_rma rsfi_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = rma_read,
	.readv = rma_readv,
	.readmsg = rma_readmsg,
	.write = rma_write,
	.writev = rma_writev,
	.writemsg = rma_writemsg,
	.inject = no_rma_inject,
	.writedata = no_rma_writedata,
	.injectdata = no_rma_injectdata,
};
