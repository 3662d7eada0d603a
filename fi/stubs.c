/* SPDX-License-Identifier: MIT */
/*
 * The operations this provider does not have answer -FI_ENOSYS (fi_getinfo
 * never offers them: an application only reaches these by ignoring it).
 */
#include "rsfi.h"

int rsfi_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	(void)fid, (void)bfid, (void)flags;
	return -FI_ENOSYS;
}

int rsfi_no_control(struct fid *fid, int command, void *arg)
{
	(void)fid, (void)command, (void)arg;
	return -FI_ENOSYS;
}

int rsfi_no_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops, void *context)
{
	(void)fid, (void)name, (void)flags, (void)ops, (void)context;
	return -FI_ENOSYS;
}

int rsfi_no_tostr(const struct fid *fid, char *buf, size_t len)
{
	(void)fid, (void)buf, (void)len;
	return -FI_ENOSYS;
}

int rsfi_no_ops_set(struct fid *fid, const char *name, uint64_t flags, void *ops, void *context)
{
	(void)fid, (void)name, (void)flags, (void)ops, (void)context;
	return -FI_ENOSYS;
}

static ssize_t no_rma_read(struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t src, uint64_t addr,
			   uint64_t key, void *context)
{
	(void)ep, (void)buf, (void)len, (void)desc, (void)src, (void)addr, (void)key, (void)context;
	return -FI_ENOSYS;
}

/* readv and writev: the same signature. */
static ssize_t no_rma_iov(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count, fi_addr_t peer,
			  uint64_t addr, uint64_t key, void *context)
{
	(void)ep, (void)iov, (void)desc, (void)count, (void)peer, (void)addr, (void)key, (void)context;
	return -FI_ENOSYS;
}

static ssize_t no_rma_msg(struct fid_ep *ep, const struct fi_msg_rma *msg, uint64_t flags)
{
	(void)ep, (void)msg, (void)flags;
	return -FI_ENOSYS;
}

static ssize_t no_rma_write(struct fid_ep *ep, const void *buf, size_t len, void *desc, fi_addr_t dest,
			    uint64_t addr, uint64_t key, void *context)
{
	(void)ep, (void)buf, (void)len, (void)desc, (void)dest, (void)addr, (void)key, (void)context;
	return -FI_ENOSYS;
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

struct fi_ops_rma rsfi_no_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = no_rma_read,
	.readv = no_rma_iov,
	.readmsg = no_rma_msg,
	.write = no_rma_write,
	.writev = no_rma_iov,
	.writemsg = no_rma_msg,
	.inject = no_rma_inject,
	.writedata = no_rma_writedata,
	.injectdata = no_rma_injectdata,
};
