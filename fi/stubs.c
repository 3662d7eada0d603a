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
