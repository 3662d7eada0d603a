/* SPDX-License-Identifier: MIT */
/*
 * An export's backing store: a regular file (created at its configured size
 * if missing) or a block device, opened with O_DIRECT where it allows it.
 * Every call maps the system's error to the protocol's status. The I/O calls
 * run on the target's worker threads, several at once on one store.
 */
#ifndef RSEC_BLKD_STORE_H
#define RSEC_BLKD_STORE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "blkd_conf.h"

struct store {
	int fd;          /* buffered (or the only one) */
	int fd_direct;   /* O_DIRECT, -1 if the store refused it at open */
	atomic_bool direct_refused; /* a transfer it refused: the page cache from then on (fd_direct stays open) */
	atomic_bool sync_failed;    /* an fdatasync failed: every later FLUSH and FUA write fails (store_flush) */
	atomic_bool nowait_read_unsupported, nowait_write_unsupported; /* RWF_NOWAIT refused: not tried again */
	uint64_t size;
	bool is_device;
};

/* Open (or create: then the file and its directory are synced) x's backing store; its size is
 * x->size or the store's own. One inode behind both descriptors, or it refuses. 0, or -1 with err set. */
int store_open(struct store *s, const struct blkd_export_conf *x, char *err, size_t errlen);
void store_close(struct store *s);

/* Whole transfers: BLK_S_OK, BLK_S_IO, BLK_S_NO_SPACE. buf is page-aligned when O_DIRECT may be used. */
uint16_t store_read(struct store *s, void *buf, size_t len, uint64_t off);
uint16_t store_write(struct store *s, const void *buf, size_t len, uint64_t off, bool fua);
uint16_t store_flush(struct store *s);

/*
 * The same transfer on the caller's thread, only if the kernel does it
 * without waiting (preadv2/pwritev2 with RWF_NOWAIT: data in the page cache,
 * or a device that takes I/O without sleeping to submit it). true: done,
 * *status says how; false: it would wait, was cut short or failed, and
 * nothing is lost by doing it again with store_read/store_write. A FUA
 * write is never done here (its sync waits).
 */
bool store_read_nowait(struct store *s, void *buf, size_t len, uint64_t off, uint16_t *status);
bool store_write_nowait(struct store *s, const void *buf, size_t len, uint64_t off, uint16_t *status);

#endif
