/* SPDX-License-Identifier: MIT */
/*
 * Two-sided messages: every RDMA SEND carries one sealed frame (seal.c).
 * Messages larger than the peer's receive buffer go as FIRST..LAST
 * fragments. Flow control is by credits: we send only into receive buffers
 * the peer has told us are posted, so the peer never answers RNR. Credits
 * come back piggybacked on frames, or in a CREDIT_ONLY frame when we have
 * nothing else to say; the last credit is kept for those, so two peers can
 * never both wait for credits.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "base/errtext.h"
#include "check.h"
#include "data.h"
#include "grant.h"
#include "onesided.h"

/* Sends in flight: as many as the peer's buffers, up to 128 (perftest's TX
 * depth), within a 1 MiB send ring: 16 frames of 64 KiB, 128 of 8 KiB. */
#define SEND_SLOTS_MAX RSEC_SENDQ_MAX
#define SEND_RING_MAX (1u << 20)
#define EXTRA_SEND_WR (2u * RSEC_MAX_GRANTS + 4u) /* binds, invalidations */
/* A rebuilt QP's number lies past 0..this many throwaway QPs (rsec_qp_renew), as a pool entry's. */
#define RSEC_REBUILD_BURN RSEC_QPOOL_BURN_DEFAULT

/*
 * Send slots a side gives a peer with slots receive buffers of slot_size
 * bytes: as many as them, up to perftest's TX depth, within a 1 MiB ring.
 */
static uint32_t send_window(uint32_t slots, uint32_t slot_size)
{
	uint32_t frame = slot_size < RSEC_FRAME_MAX ? slot_size : RSEC_FRAME_MAX;
	uint32_t n = slots < SEND_SLOTS_MAX ? slots : SEND_SLOTS_MAX;
	return n < SEND_RING_MAX / frame ? n : SEND_RING_MAX / frame;
}

/*
 * Send and receive rings: anonymous mappings, so the kernel hands out zeroed
 * pages as the registration pins them (no pass of our own over them). They
 * only ever hold sealed frames, and a received frame is wiped as it is
 * opened, so they are unmapped without another wipe. Their addresses never
 * go on the wire.
 */
static uint8_t *ring_alloc(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void ring_free(uint8_t **p, size_t n)
{
	if (*p)
		(void)munmap(*p, n);
	*p = NULL;
}

/* A message's plaintext (reassembled, or waiting for credits): wiped before it goes. */
static void msg_free(uint8_t **p, size_t n)
{
	if (*p) {
		OPENSSL_cleanse(*p, n);
		free(*p);
		*p = NULL;
	}
}

static RSEC_MUST_CHECK int post_recv(struct rsec_path *path, uint32_t slot)
{
	uint32_t size = path->cfg.slot_size;
	struct ibv_sge sge = {
		.addr = (uintptr_t)(path->recv_ring + (size_t)slot * size),
		.length = size,
		.lkey = path->recv_mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = RSEC_WR_ID(WR_RECV, slot), .sg_list = &sge, .num_sge = 1 }, *bad;
	return ibv_post_recv(path->qp.qp, &wr, &bad) ? RSEC_E_VERBS : 0;
}

uint32_t rsec_data_send_wr(uint32_t depth)
{
	return SEND_SLOTS_MAX + EXTRA_SEND_WR + depth;
}

int rsec_data_setup(struct rsec_path *path)
{
	path->recv_slots = path->cfg.recv_slots;
	size_t bytes = (size_t)path->recv_slots * path->cfg.slot_size;
	path->recv_ring = ring_alloc(bytes);
	RSEC_ENSURE(path->recv_ring, RSEC_E_NOMEM);
	/* Local access only: the peer reaches these buffers by SEND, never by rkey. */
	path->recv_mr = ibv_reg_mr(path->qp.pd, path->recv_ring, bytes, IBV_ACCESS_LOCAL_WRITE);
	RSEC_ENSURE(path->recv_mr, RSEC_E_VERBS);
	int flags = fcntl(path->qp.chan->fd, F_GETFL);
	RSEC_ENSURE(flags >= 0 && fcntl(path->qp.chan->fd, F_SETFL, flags | O_NONBLOCK) == 0, RSEC_E_IO);
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = 1 };
	RSEC_ENSURE(epoll_ctl(path->cfg.epfd, EPOLL_CTL_ADD, path->qp.chan->fd, &ev) == 0, RSEC_E_IO);
	path->chan_event = true; /* the CQs are created armed */
	/* Before the peer runs out of credits, or of send slots: it keeps a data frame's slot until we
	 * return its credit (sendq.h), so a peer with fewer slots than our buffers waits on us sooner. */
	uint32_t window = send_window(path->recv_slots, path->cfg.slot_size);
	path->credits_due = (path->recv_slots < window ? path->recv_slots : window) / 2;
	if (path->credits_due == 0)
		path->credits_due = 1;
	for (uint32_t i = 0; i < path->recv_slots; i++)
		RSEC_GUARD(post_recv(path, i));
	return rsec_onesided_setup(path);
}

int rsec_data_start(struct rsec_path *path)
{
	RSEC_GUARD(rsec_qp_connect(&path->qp, &path->remote));
	/* The peer's slot size bounds our frames; our own ceiling bounds what it makes us pin. */
	path->frame_size = path->peer_slot_size < RSEC_FRAME_MAX ? path->peer_slot_size : RSEC_FRAME_MAX;
	path->send_slots = send_window(path->peer_slots, path->peer_slot_size);
	size_t bytes = (size_t)path->send_slots * path->frame_size;
	RSEC_GUARD(rsec_sendq_init(&path->sendq, path->send_slots));
	path->send_ring = ring_alloc(bytes);
	RSEC_ENSURE(path->send_ring, RSEC_E_NOMEM);
	path->send_mr = ibv_reg_mr(path->qp.pd, path->send_ring, bytes, 0);
	RSEC_ENSURE(path->send_mr, RSEC_E_VERBS);
	path->credits = path->peer_slots;
	return 0;
}

/* CQs whose event was taken (take_channel_events). */
#define FIRED_SEND 1u
#define FIRED_RECV 2u

/*
 * Take and acknowledge every event the completion channel holds (never
 * blocks: the fd is non-blocking); *fired says which CQs gave one.
 */
static bool take_channel_events(struct rsec_path *path, unsigned *fired)
{
	struct ibv_cq *cq;
	void *cq_ctx;
	while (ibv_get_cq_event(path->qp.chan, &cq, &cq_ctx) == 0) {
		/* Only our two CQs use the channel; anything else re-arms both. */
		const struct rsec_qp *q = &path->qp;
		*fired |= cq == q->send_cq ? FIRED_SEND : cq == q->recv_cq ? FIRED_RECV : FIRED_SEND | FIRED_RECV;
		ibv_ack_cq_events(cq, 1);
	}
	return errno == EAGAIN;
}

/* The frames a rebuild recovered for sending again (path->rb.resend) are sent or no longer wanted: wiped. */
static void resend_free(struct rsec_path *path)
{
	if (path->rb.resend) {
		OPENSSL_cleanse(path->rb.resend, path->rb.resend_len);
		free(path->rb.resend);
	}
	path->rb.resend = NULL;
	path->rb.resend_len = path->rb.resend_off = 0;
}

void rsec_data_teardown(struct rsec_path *path)
{
	if (path->have_qp) {
		if (path->qp.chan) {
			(void)epoll_ctl(path->cfg.epfd, EPOLL_CTL_DEL, path->qp.chan->fd, NULL);
			/* A CQ is destroyed only once each of its events is acknowledged. */
			unsigned fired = 0;
			(void)take_channel_events(path, &fired);
		}
		if (path->qp.qp)
			(void)!rsec_qp_to_error(&path->qp);
	}
	if (path->send_mr)
		(void)ibv_dereg_mr(path->send_mr);
	if (path->recv_mr)
		(void)ibv_dereg_mr(path->recv_mr);
	path->send_mr = path->recv_mr = NULL;
	if (path->have_qp)
		rsec_qp_destroy(&path->qp);
	path->have_qp = false;
	ring_free(&path->send_ring, (size_t)path->send_slots * path->frame_size);
	ring_free(&path->recv_ring, (size_t)path->recv_slots * path->cfg.slot_size);
	msg_free(&path->rx_msg, path->rx_cap);
	msg_free(&path->txm, path->txm_len);
	resend_free(path);
	path->rx_cap = path->rx_len = 0;
	path->rx_started = path->rx_complete = false;
}

static RSEC_MUST_CHECK int post_send(struct rsec_path *path, struct ibv_send_wr *wr)
{
	unsigned taken;
	int err = rsec_qp_post(&path->qp, wr, &taken);
	if (err)
		return rsec_fault_fail(&path->fault, RSEC_E_VERBS, "ibv_post_send: %s", strerror(err));
	return 0;
}

void rsec_data_cork(struct rsec_path *path, bool on)
{
	rsec_qp_cork(&path->qp, on);
}

int rsec_data_flush(struct rsec_path *path)
{
	if (!path->have_qp || !path->qp.qp)
		return 0;
	int err = rsec_qp_flush(&path->qp);
	if (err)
		return rsec_fault_fail(&path->fault, RSEC_E_VERBS, "ibv_post_send: %s", strerror(err));
	return 0;
}

/* Seal and post one frame; the caller checked credits and a free slot. signal: whatever sendq.h says. */
static RSEC_MUST_CHECK int send_frame(struct rsec_path *path, uint8_t flags, const uint8_t *pt, uint32_t len,
				      bool signal)
{
	bool signaled;
	uint32_t slot = rsec_sendq_peek(&path->sendq, &signaled);
	signaled |= signal;
	uint8_t *buf = path->send_ring + (size_t)slot * path->frame_size;
	uint16_t credits = path->credits_owed > UINT16_MAX ? UINT16_MAX : (uint16_t)path->credits_owed;
	size_t n;
	RSEC_GUARD(rsec_seal_frame(path->seal.tx, credits, flags, pt, len, buf, path->frame_size, &n));
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = (uint32_t)n, .lkey = path->send_mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = RSEC_WR_ID(WR_SEND, slot),
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		/* Small frames travel in the work request: the device reads no memory for them. */
		.send_flags = (n <= path->qp.max_inline ? IBV_SEND_INLINE : 0) | (signaled ? IBV_SEND_SIGNALED : 0),
	};
	RSEC_GUARD(post_send(path, &wr));
	if (!signaled && path->sendq.unsignaled_run == 0)
		path->check.tail_ms = rsec_now_ms();
	/* A data frame stays in its slot for a rebuild to send again, if there can be one. */
	rsec_sendq_posted(&path->sendq, signaled, !(flags & RSEC_SEAL_FLAG_CREDIT_ONLY) && path->cfg.rebuilds);
	path->credits_owed -= credits;
	path->credits--;
	return 0;
}

static bool can_send(const struct rsec_path *path, bool credit_only)
{
	/*
	 * A data frame must leave one credit (and one slot, sendq.h) for a
	 * CREDIT_ONLY frame. No send goes behind a window bind in flight: rxe
	 * may leave it unsent until something else wakes the QP, and a reply
	 * announcing a grant must not overtake the bind anyway. Nothing goes
	 * while the data path is rebuilt. Sends wait in the library meanwhile.
	 */
	return path->binds_inflight == 0 && !rsec_rebuilding(path) && rsec_sendq_room(&path->sendq, !credit_only) &&
	       path->credits > (credit_only ? 0u : 1u);
}

/* A new data frame: after every frame a rebuild recovered for sending again. */
static bool can_send_new(const struct rsec_path *path)
{
	return !rsec_rebuild_resending(path) && can_send(path, false);
}

static RSEC_MUST_CHECK int maybe_return_credits(struct rsec_path *path)
{
	if (path->credits_owed < path->credits_due || !can_send(path, true))
		return 0;
	int rc = send_frame(path, RSEC_SEAL_FLAG_CREDIT_ONLY, NULL, 0, false);
	return rc < 0 ? rsec_fault_fail(&path->fault, rc, "cannot return credits: %s", rsec_error_text(rc)) : 0;
}

int rsec_data_new_tx_keys(struct rsec_path *path)
{
	rsec_seal_retire_tx(&path->seal, path->sendq.acked);
	if (!can_send(path, true))
		return 0; /* the next frame we send retires the peer's old key instead */
	int rc = send_frame(path, RSEC_SEAL_FLAG_CREDIT_ONLY, NULL, 0, false);
	return rc < 0 ? rsec_fault_fail(&path->fault, rc, "cannot send under the new keys: %s", rsec_error_text(rc)) : 0;
}

/* The queue pair failed: a fault of the data path, for the session to rebuild or close on. */
static RSEC_MUST_CHECK int qp_failed(struct rsec_path *path, const struct ibv_wc *wc)
{
	path->stats.qp_errors++;
	return rsec_fault_data(&path->fault, RSEC_WIRE_REBUILD_QP, RSEC_E_QP, "queue pair error: %s (vendor 0x%x)",
				  ibv_wc_status_str(wc->status), wc->vendor_err);
}

/* What this connection has outstanding, to check completions against. */
static void data_posted(const struct rsec_path *path, struct rsec_posted *out)
{
	*out = (struct rsec_posted){
		.recv_slots = path->recv_slots,
		.slot_size = path->cfg.slot_size,
		.send_slots = path->send_slots,
		.sends_inflight = rsec_sendq_inflight(&path->sendq),
		.binds = RSEC_MAX_GRANTS,
		.ops_depth = path->ops.depth,
	};
}

static RSEC_MUST_CHECK int on_send_wc(struct rsec_path *path, const struct ibv_wc *wc)
{
	struct rsec_posted posted;
	char why[160];
	data_posted(path, &posted);
	if (rsec_completion_check_send(wc, &posted, why, sizeof(why)) < 0)
		return rsec_fault_fail(&path->fault, RSEC_E_VERBS, "%s", why);
	if (RSEC_WR_KIND(wc->wr_id) == WR_SEND) {
		/* A signaled frame's completion also ends the unsignaled ones before it. */
		if (rsec_sendq_complete(&path->sendq, RSEC_WR_INDEX(wc->wr_id), wc->status == IBV_WC_SUCCESS, why,
					sizeof(why)) < 0)
			return rsec_fault_fail(&path->fault, RSEC_E_VERBS, "%s", why);
		return wc->status == IBV_WC_SUCCESS ? 0 : qp_failed(path, wc);
	}
	if (RSEC_WR_KIND(wc->wr_id) == WR_RDMA) {
		RSEC_GUARD(rsec_onesided_on_wc(path, wc));
		return wc->status == IBV_WC_SUCCESS ? 0 : qp_failed(path, wc);
	}
	if (wc->status != IBV_WC_SUCCESS) {
		rsec_grant_on_wc_failed(path, wc);
		return qp_failed(path, wc);
	}
	return rsec_grant_on_wc(path, wc);
}

static RSEC_MUST_CHECK int reserve_rx(struct rsec_path *path, size_t more)
{
	size_t want = path->rx_len + more;
	if (want > path->cfg.max_msg)
		return rsec_fault_fail(&path->fault, RSEC_E_RANGE, "peer sent a message over max_msg (%u)",
				       path->cfg.max_msg);
	if (want <= path->rx_cap)
		return 0;
	size_t cap = path->rx_cap ? path->rx_cap : 4096;
	while (cap < want)
		cap *= 2;
	if (cap > path->cfg.max_msg)
		cap = path->cfg.max_msg;
	uint8_t *p = malloc(cap);
	if (!p)
		return rsec_fault_fail(&path->fault, RSEC_E_NOMEM, "out of memory for a %zu byte message", want);
	if (path->rx_msg) {
		memcpy(p, path->rx_msg, path->rx_len);
		msg_free(&path->rx_msg, path->rx_cap);
	}
	path->rx_msg = p;
	path->rx_cap = cap;
	return 0;
}

/* Fragment order: FIRST opens a message, LAST closes it, nothing in between may open another. */
static RSEC_MUST_CHECK int check_fragment(struct rsec_path *path, uint8_t flags)
{
	bool first = flags & RSEC_SEAL_FLAG_FIRST;
	if (first == path->rx_started)
		return rsec_fault_fail(&path->fault, RSEC_E_PROTO, "fragment out of order");
	return 0;
}

/* The message so far leaves the caller's buffer for rx_msg (the caller stops waiting, or it does not fit). */
static RSEC_MUST_CHECK int leave_direct(struct rsec_path *path)
{
	if (!path->rx_in_direct)
		return 0;
	size_t n = path->rx_len;
	path->rx_len = 0;
	path->rx_in_direct = false;
	int rc = reserve_rx(path, n);
	if (rc == 0 && n)
		memcpy(path->rx_msg, path->rx_direct, n);
	OPENSSL_cleanse(path->rx_direct, n);
	path->rx_len = rc == 0 ? n : 0;
	return rc;
}

/* Where the next body bytes of the arriving message go: the waiting caller's buffer when they fit, else rx_msg. */
static RSEC_MUST_CHECK int rx_room(struct rsec_path *path, size_t body, uint8_t **dst, size_t *room)
{
	bool fresh = !path->rx_started && path->rx_len == 0;
	if (path->rx_len + body > path->cfg.max_msg)
		return rsec_fault_fail(&path->fault, RSEC_E_RANGE, "peer sent a message over max_msg (%u)",
				       path->cfg.max_msg);
	if (path->rx_direct && (path->rx_in_direct || fresh) && body <= path->rx_direct_cap - path->rx_len) {
		path->rx_in_direct = true;
		*dst = path->rx_direct + path->rx_len;
		*room = path->rx_direct_cap - path->rx_len;
		return 0;
	}
	RSEC_GUARD(leave_direct(path));
	RSEC_GUARD(reserve_rx(path, body));
	*dst = path->rx_msg ? path->rx_msg + path->rx_len : NULL;
	*room = path->rx_cap - path->rx_len;
	return 0;
}

static RSEC_MUST_CHECK int on_recv_wc(struct rsec_path *path, const struct ibv_wc *wc)
{
	if (wc->status != IBV_WC_SUCCESS)
		return qp_failed(path, wc);
	/* Nothing of the slot is read before the completion is bounded by what we posted. */
	struct rsec_posted posted;
	uint32_t slot;
	char why[160];
	data_posted(path, &posted);
	if (rsec_completion_check_recv(wc, &posted, &slot, why, sizeof(why)) < 0) {
		/* Anyone who can forge a packet can cause this: counted, then rebuilt or closed. */
		path->stats.protocol_violations++;
		return rsec_fault_data(&path->fault, RSEC_WIRE_REBUILD_VIOLATION, RSEC_E_PROTO, "%s", why);
	}
	uint8_t *frame = path->recv_ring + (size_t)slot * path->cfg.slot_size;
	size_t len = wc->byte_len;
	size_t body = len > RSEC_SEAL_OVERHEAD ? len - RSEC_SEAL_OVERHEAD : 0;
	uint8_t *dst = NULL;
	size_t room = 0;
	RSEC_GUARD(rx_room(path, body, &dst, &room));
	struct rsec_seal_hdr hdr;
	int rc = rsec_seal_open(&path->seal, frame, len, &hdr, dst, room);
	OPENSSL_cleanse(frame, len);
	if (rc == RSEC_E_PROTO) {
		/* A header that does not parse was never sealed by the peer: a forgery like a bad tag. */
		return rsec_fault_data(&path->fault, RSEC_WIRE_REBUILD_AUTH, RSEC_E_MAC,
				       "rejected a message: a frame whose header does not parse (forged or corrupt)");
	}
	if (rc < 0) {
		/* Forged, replayed or reordered: never delivered; what the peer sent from here on is
		 * sent again over a rebuilt data path, or the connection closes. */
		return rsec_fault_data(&path->fault, RSEC_WIRE_REBUILD_AUTH, rc, "rejected a message: %s",
				       rsec_error_text(rc));
	}
	if ((uint64_t)path->credits + hdr.credits > path->peer_slots || rsec_sendq_ack(&path->sendq, hdr.credits) < 0)
		return rsec_fault_fail(&path->fault, RSEC_E_PROTO, "peer returned more credits than it has buffers");
	rsec_seal_retire_tx(&path->seal, path->sendq.acked);
	path->credits += hdr.credits;
	if (!(hdr.flags & RSEC_SEAL_FLAG_CREDIT_ONLY)) {
		RSEC_GUARD(check_fragment(path, hdr.flags));
		path->rx_started = true;
		path->rx_len += hdr.len;
		if (hdr.flags & RSEC_SEAL_FLAG_LAST) {
			path->rx_started = false;
			path->rx_complete = true;
			path->stats.msgs_received++;
			path->stats.bytes_received += path->rx_len;
		}
	}
	rc = post_recv(path, slot);
	if (rc < 0)
		return rsec_fault_fail(&path->fault, rc, "cannot repost a receive buffer");
	path->credits_owed++;
	return 0;
}

int rsec_data_send_some(struct rsec_path *path, const uint8_t *p, size_t len, size_t *off, bool *started)
{
	uint32_t frag_max = path->frame_size - RSEC_SEAL_OVERHEAD;
	while ((!*started || *off < len) && can_send_new(path)) {
		uint32_t n = len - *off > frag_max ? frag_max : (uint32_t)(len - *off);
		uint8_t flags = (*started ? 0 : RSEC_SEAL_FLAG_FIRST) | (*off + n == len ? RSEC_SEAL_FLAG_LAST : 0);
		RSEC_GUARD(send_frame(path, flags, p + *off, n, false));
		*started = true;
		*off += n;
	}
	return 0;
}

int rsec_data_queue_rest(struct rsec_path *path, const uint8_t *p, size_t len, size_t off, bool started)
{
	size_t rest = len - off;
	path->txm = malloc(rest ? rest : 1);
	if (!path->txm)
		return rsec_fault_fail(&path->fault, RSEC_E_NOMEM, "out of memory for a %zu byte message", rest);
	if (rest)
		memcpy(path->txm, p + off, rest);
	path->txm_len = rest;
	path->txm_off = 0;
	path->txm_started = started;
	path->txm_progress_ms = rsec_now_ms();
	return 0;
}

/* The queued message, as credits return; a peer that returns none for too long is dropped. */
static RSEC_MUST_CHECK int progress_queued(struct rsec_path *path)
{
	if (!path->txm)
		return 0;
	size_t off = path->txm_off;
	bool started = path->txm_started;
	int rc = rsec_data_send_some(path, path->txm, path->txm_len, &path->txm_off, &path->txm_started);
	if (rc < 0)
		return rsec_fault_fail(&path->fault, rc, "cannot send: %s", rsec_error_text(rc));
	uint64_t now = rsec_now_ms();
	if (path->txm_off != off || path->txm_started != started)
		path->txm_progress_ms = now;
	if (path->txm_started && path->txm_off == path->txm_len) {
		msg_free(&path->txm, path->txm_len);
		path->txm_len = path->txm_off = 0;
		return 0;
	}
	if (now - path->txm_progress_ms > RSEC_SEND_STALL_MS)
		return rsec_fault_fail(&path->fault, RSEC_E_TIMEOUT,
				       "the peer returned no flow-control credit for %u ms", RSEC_SEND_STALL_MS);
	return 0;
}

/*
 * The completion channel's events, taken, and the CQs that gave one armed
 * again. Busy polling, or when the session has just asked epoll which fds
 * are ready (events_known), nothing is done without an event: no system call.
 */
static RSEC_MUST_CHECK int drain_channel(struct rsec_path *path)
{
	bool busy = path->cfg.poll_mode == RSEC_POLL_BUSY;
	if ((busy || path->events_known) && !path->chan_event)
		return 0;
	path->chan_event = false;
	unsigned fired = 0;
	if (!take_channel_events(path, &fired))
		return rsec_fault_fail(&path->fault, RSEC_E_VERBS, "completion channel: %s", strerror(errno));
	if (busy)
		return 0; /* the CQs were armed once, at creation; busy waits poll them */
	/* A CQ stays armed until it gives an event: only those that did are armed again, before
	 * polling, so a completion racing with the poll still wakes us. */
	if (((fired & FIRED_SEND) && ibv_req_notify_cq(path->qp.send_cq, 0)) ||
	    ((fired & FIRED_RECV) && ibv_req_notify_cq(path->qp.recv_cq, 0)))
		return rsec_fault_fail(&path->fault, RSEC_E_VERBS, "cannot arm the completion queues");
	return 0;
}

/* Send again, in order, the data frames a rebuild recovered (rebuild.c), as credits allow. */
static RSEC_MUST_CHECK int resend_recovered(struct rsec_path *path)
{
	while (path->rb.resend && can_send(path, false)) {
		uint8_t *p = path->rb.resend + path->rb.resend_off;
		uint32_t len;
		memcpy(&len, p + 1, sizeof(len));
		int rc = send_frame(path, p[0], p + 5, len, false);
		if (rc < 0)
			return rsec_fault_fail(&path->fault, rc, "cannot send again: %s", rsec_error_text(rc));
		OPENSSL_cleanse(p, 5 + (size_t)len);
		path->rb.resend_off += 5 + (size_t)len;
		if (path->rb.resend_off == path->rb.resend_len)
			resend_free(path);
	}
	return 0;
}

/* Reap the send queue's completions, until the first fault. */
static RSEC_MUST_CHECK int poll_send_cq(struct rsec_path *path)
{
	struct ibv_wc wc[16];
	int n;
	while ((n = ibv_poll_cq(path->qp.send_cq, 16, wc)) > 0) {
		path->completions += (uint64_t)n;
		for (int i = 0; i < n; i++) {
			int rc = on_send_wc(path, &wc[i]);
			if (rc < 0) {
				/* The rest of the batch are flushes: the operations they name end with the fault. */
				rsec_onesided_flushed(path, wc + i + 1, n - i - 1, rc);
				return rc;
			}
		}
		if (rsec_fault_pending(&path->fault))
			return path->fault.code; /* an operation's end found it (a sealed write's claim) */
	}
	return n < 0 ? rsec_fault_fail(&path->fault, RSEC_E_VERBS, "ibv_poll_cq failed") : 0;
}

/*
 * The send queue's end is a run of unsignaled frames whose completions no
 * one will see until a signaled frame follows (check.c): one may go now.
 */
bool rsec_data_tail_unseen(const struct rsec_path *path)
{
	return path->sendq.unsignaled_run > 0 && can_send(path, true);
}

int rsec_data_signal_tail(struct rsec_path *path)
{
	if (!rsec_data_tail_unseen(path))
		return 0;
	int rc = send_frame(path, RSEC_SEAL_FLAG_CREDIT_ONLY, NULL, 0, true);
	return rc < 0 ? rsec_fault_fail(&path->fault, rc, "cannot send a signaled frame: %s", rsec_error_text(rc)) : 0;
}

int rsec_data_poll(struct rsec_path *path)
{
	if (rsec_fault_pending(&path->fault))
		return path->fault.code; /* nothing more on a queue pair whose fault is not settled */
	if (!path->have_qp || !path->send_ring)
		return 0;
	RSEC_GUARD(drain_channel(path));
	if (path->rb.state == REBUILD_SENT || path->rb.state == REBUILD_PARKED)
		return 0; /* the new QP is not connected yet: nothing to reap, nothing to send */
	RSEC_GUARD(poll_send_cq(path));
	/* One receive at a time, and none while a whole message waits for the
	 * application: unread data stays in the peer's unreturned credits. */
	struct ibv_wc wc;
	int n = 0; /* stays 0 when a whole message already waits and nothing is polled */
	while (!path->rx_complete && (n = ibv_poll_cq(path->qp.recv_cq, 1, &wc)) > 0) {
		path->completions++;
		RSEC_GUARD(on_recv_wc(path, &wc));
	}
	if (n < 0)
		return rsec_fault_fail(&path->fault, RSEC_E_VERBS, "ibv_poll_cq failed");
	RSEC_GUARD(rsec_data_check_judge(path));
	RSEC_GUARD(maybe_return_credits(path));
	RSEC_GUARD(resend_recovered(path));
	return progress_queued(path);
}

int rsec_data_quiet(struct rsec_path *path)
{
	if (rsec_fault_pending(&path->fault))
		return path->fault.code;
	return path->have_qp && path->qp.chan ? drain_channel(path) : 0;
}

uint64_t rsec_data_opened(const struct rsec_path *path)
{
	return path->have_seal ? rsec_seal_dir_next_seq(rsec_seal_rx_now(&path->seal)) : 0;
}

int rsec_data_renew(struct rsec_path *path)
{
	RSEC_GUARD(rsec_qp_renew(&path->qp, RSEC_REBUILD_BURN));
	/* What the old QP received and we did not open, the peer sends again. */
	for (uint32_t i = 0; i < path->recv_slots; i++)
		RSEC_GUARD(post_recv(path, i));
	path->credits_owed = 0;
	return 0;
}

/* One recovered frame: u8 flags | u32 len (host order) | len bytes. */
#define RESEND_HDR 5u

/*
 * The data frames of ours the peer did not open, [opened, next) of the send
 * ring, recovered into a resend buffer ahead of what an earlier rebuild
 * recovered and did not send yet. Credit-only frames are not sent again.
 */
static RSEC_MUST_CHECK int recover_unopened(struct rsec_path *path, uint64_t opened)
{
	const struct rsec_sendq *q = &path->sendq;
	size_t body_max = path->frame_size - RSEC_SEAL_OVERHEAD;
	size_t old = path->rb.resend ? path->rb.resend_len - path->rb.resend_off : 0;
	size_t kept = 0; /* at most the ring's slots, whatever the peer's credits allowed */
	for (uint64_t f = opened; f < q->next; f++)
		kept += rsec_sendq_kept(q, f);
	size_t cap = kept * (RESEND_HDR + body_max) + old;
	uint8_t *buf = malloc(cap ? cap : 1);
	RSEC_ENSURE(buf, RSEC_E_NOMEM);
	size_t len = 0;
	int rc = 0;
	for (uint64_t f = opened; f < q->next && rc == 0; f++) {
		if (!rsec_sendq_kept(q, f))
			continue;
		const uint8_t *frame = path->send_ring + (size_t)(f % path->send_slots) * path->frame_size;
		struct rsec_seal_hdr h;
		rc = rsec_seal_recover_sent(&path->seal, frame, path->frame_size, &h, buf + len + RESEND_HDR, body_max);
		if (rc == 0 && (h.seq != f || (h.flags & RSEC_SEAL_FLAG_CREDIT_ONLY)))
			rc = RSEC_E_PROTO; /* our own ring disagrees with our bookkeeping */
		if (rc == 0) {
			buf[len] = h.flags;
			memcpy(buf + len + 1, &h.len, sizeof(h.len));
			len += RESEND_HDR + h.len;
		}
	}
	if (rc == 0 && old)
		memcpy(buf + len, path->rb.resend + path->rb.resend_off, old);
	if (rc < 0) {
		OPENSSL_cleanse(buf, cap ? cap : 1);
		free(buf);
		return rc == RSEC_E_PROTO ? RSEC_E_VERBS : rc;
	}
	resend_free(path);
	if (len + old == 0) {
		free(buf);
		return 0;
	}
	path->rb.resend = buf;
	path->rb.resend_len = len + old;
	path->rb.resend_off = 0;
	return 0;
}

int rsec_data_rekey(struct rsec_path *path, uint64_t opened)
{
	struct rsec_sendq *q = &path->sendq;
	RSEC_ENSURE(opened >= q->acked && opened <= q->next, RSEC_E_PROTO);
	RSEC_GUARD(recover_unopened(path, opened));
	struct rsec_seal_stats st;
	rsec_seal_stats(rsec_seal_rx_now(&path->seal), &st);
	path->seal_before.mac_failures += st.mac_failures;
	path->seal_before.seq_violations += st.seq_violations;
	path->seal_before.malformed += st.malformed;
	rsec_seal_free(&path->seal);
	path->have_seal = false;
	/* The next epoch's keys: sequence numbers start again at 0 under keys never used before. */
	RSEC_GUARD(rsec_seal_from_tls(&path->seal, rsec_chan_ssl(path->chan), path->cfg.is_server, path->cfg.aead,
				      path->cfg.lane, path->rb.epoch + 1));
	path->have_seal = true;
	RSEC_GUARD(rsec_sendq_init(q, path->send_slots));
	/* Frame numbers start again: a claim about the old epoch's, or ours of them, says nothing now. */
	path->check.claim = false;
	path->check.told = 0;
	path->credits = path->peer_slots;
	path->credits_owed = 0;
	return 0;
}

size_t rsec_data_queued(const struct rsec_path *path)
{
	if (!path->txm)
		return 0;
	return path->txm_len - path->txm_off + (path->txm_started ? 0 : 1); /* an empty message not yet out counts */
}

bool rsec_data_can_send(const struct rsec_path *path)
{
	return can_send_new(path);
}

void rsec_data_recv_into(struct rsec_path *path, void *buf, size_t cap)
{
	/* While the caller waits, a message arriving is opened straight into buf: no copy after. */
	if (buf && !path->rx_complete) {
		path->rx_direct = buf;
		path->rx_direct_cap = cap;
	}
}

int rsec_data_recv_take(struct rsec_path *path, void *buf, size_t cap, size_t *len, int waited)
{
	path->rx_direct_cap = 0;
	if (waited == 0 && path->rx_in_direct) {
		*len = path->rx_len;
		path->rx_in_direct = false;
		path->rx_direct = NULL;
		path->rx_len = 0;
		path->rx_complete = false;
		return 0;
	}
	/* Part of a message in buf, or nothing: buf is the caller's again. */
	int moved = leave_direct(path);
	path->rx_direct = NULL;
	RSEC_GUARD(waited);
	RSEC_GUARD(moved);
	*len = path->rx_len;
	if (path->rx_len > cap)
		return RSEC_E_RANGE;
	if (path->rx_len)
		memcpy(buf, path->rx_msg, path->rx_len);
	OPENSSL_cleanse(path->rx_msg, path->rx_len);
	path->rx_len = 0;
	path->rx_complete = false;
	return 0;
}
