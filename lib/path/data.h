/* SPDX-License-Identifier: MIT */
/*
 * Two-sided messages over one queue pair (data.c): its set-up and rebuild
 * halves for the session, and the non-blocking steps api/msg.c waits between.
 */
#ifndef RSEC_PATH_DATA_H
#define RSEC_PATH_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "base/wire.h"
#include "path.h"
#include "rdmasec.h"
#include "result.h"

/*
 * Rebuild, first half: the QP replaced by a new one in INIT (same PD, CQs
 * and rings) with every receive posted again. Returns 0 or an error.
 */
RSEC_MUST_CHECK int rsec_data_renew(struct rsec_path *path);
/*
 * Rebuild, second half: the peer opened `opened` of our frames of the old
 * epoch; the data frames after them are recovered for sending again, the
 * keys of epoch path->rb.epoch + 1 replace the old ones, send queue and
 * credits start afresh. Returns 0, RSEC_E_PROTO (opened is not between
 * what the peer acknowledged and what we sent), or an error.
 */
RSEC_MUST_CHECK int rsec_data_rekey(struct rsec_path *path, uint64_t opened);
/* The peer's frames of the current epoch we opened. */
uint64_t rsec_data_opened(const struct rsec_path *path);
/*
 * We seal under new keys (rekey_exchange.c): the old sending key goes now if the
 * peer acknowledged all it sealed, and a CREDIT_ONLY frame under the new
 * one retires the peer's old receiving key, so that an idle connection can
 * rekey again. Returns 0 or the failure.
 */
RSEC_MUST_CHECK int rsec_data_new_tx_keys(struct rsec_path *path);

/* Receive buffers on path->qp (taken by rsec_conn_data_setup), receives posted (QP in INIT). */
RSEC_MUST_CHECK int rsec_data_setup(struct rsec_path *path);
/* Send WRs of every connection's QP with depth one-sided operations (QP pools create theirs with it). */
uint32_t rsec_data_send_wr(uint32_t depth);
/* Once the peer's QP_INFO is in: RTR/RTS and send buffers. */
RSEC_MUST_CHECK int rsec_data_start(struct rsec_path *path);
void rsec_data_teardown(struct rsec_path *path);
/*
 * Set-up: completions wait until the connection is established (its CQs are
 * polled then), but the completion channel's events are taken now: one left
 * unread keeps the fd readable, and every wait would spin until then on what
 * the peer sent early. Returns 0 or the fault.
 */
RSEC_MUST_CHECK int rsec_data_quiet(struct rsec_path *path);
/*
 * Reap completions: sends, receives (sealed frames), window ops; until the
 * first fault (path->fault), and the peer's PATH_CHECK claim judged once
 * every receive completion is reaped (check.h).
 */
RSEC_MUST_CHECK int rsec_data_poll(struct rsec_path *path);
/* Hold the frames and operations the path posts (on), or stop holding them (rsec_qp_cork). */
void rsec_data_cork(struct rsec_path *path, bool on);
/* Post what the path holds in one chain (rsec_qp_flush); a refusal fails the path. */
RSEC_MUST_CHECK int rsec_data_flush(struct rsec_path *path);

/*
 * For check.c: whether unsignaled frames end the send queue and a signaled
 * CREDIT_ONLY frame could follow them now; signal_tail sends it (0 when it
 * cannot go, or the fault).
 */
bool rsec_data_tail_unseen(const struct rsec_path *path);
RSEC_MUST_CHECK int rsec_data_signal_tail(struct rsec_path *path);
/*
 * rsec_send's and rsec_recv's steps, none of which waits (api/msg.c waits
 * between them). send_some posts fragments of the message [p, p + len)
 * from *off on while credits allow: all of it is out when *started and
 * *off == len; a failure is the frame's (recorded: the caller settles it).
 * can_send: whether a new frame could go now. queue_rest keeps what did not
 * go out, to be sent as credits return (0, or the connection failed).
 */
RSEC_MUST_CHECK int rsec_data_send_some(struct rsec_path *path, const uint8_t *p, size_t len, size_t *off,
					bool *started);
bool rsec_data_can_send(const struct rsec_path *path);
RSEC_MUST_CHECK int rsec_data_queue_rest(struct rsec_path *path, const uint8_t *p, size_t len, size_t off,
					 bool started);
/*
 * recv_into: a message that arrives while the caller waits is opened into
 * buf (cap bytes). recv_take, after the wait (waited: its result): the
 * message into buf and its length in *len, or why not (the wait's failure,
 * RSEC_E_RANGE: longer than cap, kept for a larger buffer); buf is the
 * caller's again either way.
 */
void rsec_data_recv_into(struct rsec_path *path, void *buf, size_t cap);
RSEC_MUST_CHECK int rsec_data_recv_take(struct rsec_path *path, void *buf, size_t cap, size_t *len, int waited);

/* Bytes of an accepted message still waiting for credits (rsec_send_queued). */
size_t rsec_data_queued(const struct rsec_path *path);

#endif /* RSEC_PATH_DATA_H */
