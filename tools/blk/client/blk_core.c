/* SPDX-License-Identifier: MIT */
/* The client's bookkeeping that needs no connection: command ids, the check
 * of a completion against what is in flight, the mapping of statuses. */
#include <errno.h>
#include <string.h>

#include "blk_client.h"

int blk_status_errno(uint16_t status)
{
	switch (status) {
	case BLK_S_OK: return 0;
	case BLK_S_INVALID: return EINVAL;
	case BLK_S_RANGE: return ERANGE;
	case BLK_S_READ_ONLY: return EROFS;
	case BLK_S_NO_SPACE: return ENOSPC;
	case BLK_S_DENIED: return EACCES;
	case BLK_S_NO_EXPORT: return ENOENT;
	case BLK_S_LIMIT: return EBUSY;
	case BLK_S_VERSION: return EPROTONOSUPPORT;
	default: return EIO; /* BLK_S_IO, BLK_S_TRANSFER */
	}
}

void blk_cids_init(struct blk_cids *f, unsigned depth)
{
	if (depth > BLK_QD_MAX)
		depth = BLK_QD_MAX;
	f->depth = depth;
	f->n = depth;
	/* Lowest ids on top: the first commands use cid 0, 1, ... */
	for (unsigned i = 0; i < depth; i++)
		f->ids[i] = (uint16_t)(depth - 1 - i);
}

int blk_cids_take(struct blk_cids *f)
{
	return f->n ? f->ids[--f->n] : -1;
}

bool blk_cids_give(struct blk_cids *f, uint16_t cid)
{
	if (cid >= f->depth || f->n >= f->depth)
		return false;
	for (unsigned i = 0; i < f->n; i++)
		if (f->ids[i] == cid)
			return false;
	f->ids[f->n++] = cid;
	return true;
}

/* Statuses only an OPEN_REPLY may carry. */
static bool status_of_command(uint16_t status)
{
	return status <= BLK_S_NO_SPACE || status == BLK_S_TRANSFER;
}

const char *blk_cpl_violation(const struct blk_cpl *c, const struct blk_expect *inflight, unsigned depth)
{
	if (c->cid >= depth || !inflight[c->cid].busy)
		return "completion for a command id not in flight";
	if (inflight[c->cid].answered)
		return "a second completion for a command (its data awaited, or not yet sent again)";
	if (c->status > BLK_S_MAX || !status_of_command(c->status))
		return "completion with a status commands never get";
	if (c->status == BLK_S_OK && c->length != inflight[c->cid].length)
		return "completion length differs from the command's";
	if (c->status != BLK_S_OK && c->length != 0)
		return "failed completion with a length";
	if (c->status == BLK_S_READ_ONLY && inflight[c->cid].opcode != BLK_OP_WRITE)
		return "read-only status for a command that does not write";
	return NULL;
}

static bool multiple_of(uint64_t v, uint32_t unit)
{
	return unit && v % unit == 0;
}

int blk_io_check(const struct blk_io *io, const struct blk_open_reply *info, uint32_t io_max)
{
	switch (io->opcode) {
	case BLK_OP_FLUSH:
		return io->flags || io->length || io->offset ? -EINVAL : 0;
	case BLK_OP_READ:
		if (io->flags)
			return -EINVAL;
		break;
	case BLK_OP_WRITE:
		if (io->flags & ~BLK_CMD_FUA)
			return -EINVAL;
		if (info->flags & BLK_EXPORT_READ_ONLY)
			return -EROFS;
		break;
	default:
		return -EINVAL;
	}
	if (!io->buf || io->length == 0 || io->length > io_max || !multiple_of(io->length, info->block_size) ||
	    !multiple_of(io->offset, info->block_size))
		return -EINVAL;
	if (io->offset > info->size || io->length > info->size - io->offset)
		return -ERANGE;
	return 0;
}
