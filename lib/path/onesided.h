/* SPDX-License-Identifier: MIT */
/*
 * One-sided operations over one queue pair (onesided.c): posted, reaped,
 * and the steps of the blocking calls api/transfer.c waits between.
 */
#ifndef RSEC_PATH_ONESIDED_H
#define RSEC_PATH_ONESIDED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "base/wire.h"
#include "path.h"
#include "rdmasec.h"
#include "result.h"

/* The operations that completed, up to max of them (those of a closed connection failed first). */
unsigned rsec_onesided_reap(struct rsec_path *path, struct rsec_wc *wc, unsigned max);

RSEC_MUST_CHECK int rsec_onesided_setup(struct rsec_path *path);
/* A send-queue completion of a one-sided operation, successful or not (checked by completion.c first). */
RSEC_MUST_CHECK int rsec_onesided_on_wc(struct rsec_path *path, const struct ibv_wc *wc);
/* The data path is being rebuilt: every operation in flight ends with status. */
void rsec_onesided_abort(struct rsec_path *path, int status);
/* Completions polled after a fault: the operations they name, and all before, end with status. */
void rsec_onesided_flushed(struct rsec_path *path, const struct ibv_wc *wc, int n, int status);
/*
 * The connection failed (its QP is in the error state): take the flushed
 * completions of operations in flight for a while, each the proof that the
 * device let go of the buffers up to it. Whether none is left; if some are,
 * only destroying the QP ends them (rsec_conn_teardown_rdma, the session's).
 */
bool rsec_onesided_drain(struct rsec_path *path);
/* The QP is in the error state or gone: every operation in flight ends with the close code. */
void rsec_onesided_teardown(struct rsec_path *path);
/*
 * A blocking one-sided call's steps (api/transfer.c waits between them).
 * start: the arguments and the grant checked (sealed_ok: a sealed grant's
 * bytes may be moved, for the sealed calls), buf staged or registered, the
 * operation posted in pieces of at most 1 MiB; 0 or why not. *posted: some
 * of it is on the device (also when the device refused the rest), and the
 * caller waits for path->ops.waiter_done or the device to let go. end, once
 * path->ops.waiter_done: the operation's status (a READ's bytes in buf).
 * unstage, when it ended otherwise and the device let go of the stage: the
 * stage keeps none of the bytes (status 0: a READ's go to buf first).
 */
RSEC_MUST_CHECK int rsec_onesided_start(struct rsec_path *path, const struct rsec_remote_grant *g, uint64_t off,
					void *buf, size_t len, enum rsec_op op, bool sealed_ok, bool *posted);
RSEC_MUST_CHECK int rsec_onesided_end(struct rsec_path *path, void *buf, size_t len, enum rsec_op op);
void rsec_onesided_unstage(struct rsec_path *path, void *buf, size_t len, enum rsec_op op, int status);
/* rsec_post's work: the work requests checked and posted (api/post.c checks the arguments and settles). */
RSEC_MUST_CHECK int rsec_onesided_post(struct rsec_path *path, const struct rsec_wr *wr, unsigned n, unsigned *posted);

/* One-sided operations in flight (rsec_inflight). */
unsigned rsec_onesided_inflight(const struct rsec_path *path);

#endif /* RSEC_PATH_ONESIDED_H */
