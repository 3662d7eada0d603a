/* SPDX-License-Identifier: MIT */
/*
 * Domain: the lock every endpoint and CQ of it shares, and memory
 * registration. Messages are copied into rdmasec's sealed buffers, so a
 * registration for FI_SEND/FI_RECV is bookkeeping only. One that allows
 * remote access gets a random key the application hands to its peer; the
 * peer's fi_read/fi_write through it becomes an rdmasec grant of just that
 * range on that connection (rma.c), never a key valid on the wire.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "rsfi.h"

static int mr_close(struct fid *fid)
{
	struct rsfi_mr *m = (struct rsfi_mr *)fid;
	struct rsfi_domain *dom = m->dom;

	pthread_mutex_lock(&dom->lock);
	rsfi_rma_forget_mr(dom, m); /* a peer's transfer through it ends now */
	for (struct rsfi_mr **pp = &dom->mrs; *pp; pp = &(*pp)->next) {
		if (*pp == m) {
			*pp = m->next;
			break;
		}
	}
	dom->refs--;
	pthread_mutex_unlock(&dom->lock);
	free(m);
	return 0;
}

static struct fi_ops mr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = mr_close,
	.bind = rsfi_no_bind,
	.control = rsfi_no_control,
	.ops_open = rsfi_no_ops_open,
	.tostr = rsfi_no_tostr,
	.ops_set = rsfi_no_ops_set,
};

/* A fresh random key no live registration of the domain has: 0 or -FI_EIO. Under dom->lock. */
static int new_key(struct rsfi_domain *dom, uint64_t *key)
{
	for (int tries = 0; tries < 8; tries++) {
		bool taken = false;
		if (getrandom(key, sizeof(*key), 0) != sizeof(*key))
			return -FI_EIO;
		for (struct rsfi_mr *m = dom->mrs; m && !taken; m = m->next)
			taken = m->mr.key == *key;
		if (!taken && *key != FI_KEY_NOTAVAIL)
			return 0;
	}
	return -FI_EIO;
}

static int mr_regattr(struct fid *fid, const struct fi_mr_attr *attr, uint64_t flags, struct fid_mr **out)
{
	struct rsfi_domain *dom = (struct rsfi_domain *)fid;
	const uint64_t known = FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;

	if (!attr || !out || flags || (attr->access & ~known))
		return -FI_EINVAL;
	/* Peers name the bytes by address inside one contiguous range (FI_MR_VIRT_ADDR). */
	if (attr->iov_count != 1 || !attr->mr_iov)
		return -FI_EINVAL;
	struct rsfi_mr *m = calloc(1, sizeof(*m));
	if (!m)
		return -FI_ENOMEM;
	m->dom = dom;
	m->base = attr->mr_iov[0].iov_base;
	m->len = attr->mr_iov[0].iov_len;
	m->access = attr->access & (FI_REMOTE_READ | FI_REMOTE_WRITE);
	m->mr.fid.fclass = FI_CLASS_MR;
	m->mr.fid.context = attr->context;
	m->mr.fid.ops = &mr_fi_ops;
	m->mr.mem_desc = m; /* any non-NULL descriptor: data calls ignore it */
	m->mr.key = FI_KEY_NOTAVAIL;
	pthread_mutex_lock(&dom->lock);
	/* Only a registration a peer may reach gets a key (FI_MR_PROV_KEY); its grants are made per transfer. */
	int rc = m->access ? new_key(dom, &m->mr.key) : 0;
	if (!rc) {
		m->next = dom->mrs;
		dom->mrs = m;
		dom->refs++;
	}
	pthread_mutex_unlock(&dom->lock);
	if (rc) {
		free(m);
		return rc;
	}
	*out = &m->mr;
	return 0;
}

static int mr_regv(struct fid *fid, const struct iovec *iov, size_t count, uint64_t access, uint64_t offset,
		   uint64_t requested_key, uint64_t flags, struct fid_mr **mr, void *context)
{
	struct fi_mr_attr attr = { .mr_iov = iov, .iov_count = count, .access = access, .offset = offset,
				   .requested_key = requested_key, .context = context };

	return mr_regattr(fid, &attr, flags, mr);
}

static int mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access, uint64_t offset,
		  uint64_t requested_key, uint64_t flags, struct fid_mr **mr, void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return mr_regv(fid, &iov, 1, access, offset, requested_key, flags, mr, context);
}

static struct fi_ops_mr mr_ops = {
	.size = sizeof(struct fi_ops_mr),
	.reg = mr_reg,
	.regv = mr_regv,
	.regattr = mr_regattr,
};

static int domain_close(struct fid *fid)
{
	struct rsfi_domain *dom = (struct rsfi_domain *)fid;

	if (dom->refs)
		return -FI_EBUSY;
	rsfi_epset_free(&dom->eps);
	pthread_mutex_destroy(&dom->lock);
	free(dom);
	return 0;
}

static struct fi_ops domain_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = domain_close,
	.bind = rsfi_no_bind,
	.control = rsfi_no_control,
	.ops_open = rsfi_no_ops_open,
	.tostr = rsfi_no_tostr,
	.ops_set = rsfi_no_ops_set,
};

static int no_av_open(struct fid_domain *d, struct fi_av_attr *attr, struct fid_av **av, void *context)
{
	(void)d, (void)attr, (void)av, (void)context;
	return -FI_ENOSYS;
}

static int no_sep(struct fid_domain *d, struct fi_info *info, struct fid_ep **sep, void *context)
{
	(void)d, (void)info, (void)sep, (void)context;
	return -FI_ENOSYS;
}

static int no_cntr(struct fid_domain *d, struct fi_cntr_attr *attr, struct fid_cntr **cntr, void *context)
{
	(void)d, (void)attr, (void)cntr, (void)context;
	return -FI_ENOSYS;
}

static int no_poll(struct fid_domain *d, struct fi_poll_attr *attr, struct fid_poll **pollset)
{
	(void)d, (void)attr, (void)pollset;
	return -FI_ENOSYS;
}

static int no_stx(struct fid_domain *d, struct fi_tx_attr *attr, struct fid_stx **stx, void *context)
{
	(void)d, (void)attr, (void)stx, (void)context;
	return -FI_ENOSYS;
}

static int no_srx(struct fid_domain *d, struct fi_rx_attr *attr, struct fid_ep **rx, void *context)
{
	(void)d, (void)attr, (void)rx, (void)context;
	return -FI_ENOSYS;
}

static int no_query_atomic(struct fid_domain *d, enum fi_datatype t, enum fi_op op, struct fi_atomic_attr *attr,
			   uint64_t flags)
{
	(void)d, (void)t, (void)op, (void)attr, (void)flags;
	return -FI_ENOSYS;
}

static int no_query_collective(struct fid_domain *d, enum fi_collective_op op, struct fi_collective_attr *attr,
			       uint64_t flags)
{
	(void)d, (void)op, (void)attr, (void)flags;
	return -FI_ENOSYS;
}

static int endpoint2(struct fid_domain *d, struct fi_info *info, struct fid_ep **ep, uint64_t flags, void *context)
{
	return flags ? -FI_EINVAL : rsfi_ep_open(d, info, ep, context);
}

static struct fi_ops_domain domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = no_av_open,
	.cq_open = rsfi_cq_open,
	.endpoint = rsfi_ep_open,
	.scalable_ep = no_sep,
	.cntr_open = no_cntr,
	.poll_open = no_poll,
	.stx_ctx = no_stx,
	.srx_ctx = no_srx,
	.query_atomic = no_query_atomic,
	.query_collective = no_query_collective,
	.endpoint2 = endpoint2,
};

int rsfi_domain_open(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **out, void *context)
{
	if (!info || !info->domain_attr || !out)
		return -FI_EINVAL;
	if (info->fabric_attr && info->fabric_attr->prov_name && strcmp(info->fabric_attr->prov_name, RSFI_NAME) != 0)
		return -FI_EINVAL;
	struct rsfi_domain *dom = calloc(1, sizeof(*dom));
	if (!dom)
		return -FI_ENOMEM;
	pthread_mutex_init(&dom->lock, NULL);
	dom->fab = (struct rsfi_fabric *)fabric;
	dom->fid.fid.fclass = FI_CLASS_DOMAIN;
	dom->fid.fid.context = context;
	dom->fid.fid.ops = &domain_fi_ops;
	dom->fid.ops = &domain_ops;
	dom->fid.mr = &mr_ops;
	*out = &dom->fid;
	return 0;
}
