/* SPDX-License-Identifier: MIT */
/*
 * FI_MSG data path. A send is one sealed rdmasec message: the frame header
 * (frame.h) and the payload, copied, so every send completes when rdmasec
 * takes it (inject semantics for all). Receives wait in a FIFO of posted
 * buffers; progress moves each arriving message into the oldest one.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rsfi.h"

#define RSFI_BUF_MIN 65536u

/* Grows *buf to at least need bytes (wiping the old copy): 0 or -FI_ENOMEM. */
static int grow(uint8_t **buf, size_t *cap, size_t need)
{
	if (*cap >= need)
		return 0;
	size_t cap2 = need < RSFI_BUF_MIN ? RSFI_BUF_MIN : need;
	uint8_t *b = malloc(cap2);
	if (!b)
		return -FI_ENOMEM;
	if (*buf) {
		explicit_bzero(*buf, *cap);
		free(*buf);
	}
	*buf = b;
	*cap = cap2;
	return 0;
}

static size_t iov_total(const struct iovec *iov, size_t count)
{
	size_t n = 0;

	for (size_t i = 0; i < count; i++)
		n += iov[i].iov_len;
	return n;
}

int rsfi_send_frame(struct rsfi_ep *ep, struct rsec_conn *c, const struct rsfi_frame *f, const struct iovec *iov,
		    size_t count, int timeout_ms)
{
	size_t len = iov_total(iov, count);
	struct rsfi_frame hdr = *f;

	if (len > RSFI_MAX_MSG - RSFI_FRAME_HDR)
		return -FI_EMSGSIZE;
	hdr.body_len = len;
	int rc = grow(&ep->txbuf, &ep->txcap, RSFI_FRAME_HDR + len);
	if (rc)
		return rc;
	if (rsfi_frame_write(&hdr, ep->txbuf) != 0)
		return -FI_EINVAL;
	uint8_t *p = ep->txbuf + RSFI_FRAME_HDR;
	for (size_t i = 0; i < count; i++) {
		if (iov[i].iov_len)
			memcpy(p, iov[i].iov_base, iov[i].iov_len);
		p += iov[i].iov_len;
	}
	rc = rsec_send(c, ep->txbuf, RSFI_FRAME_HDR + len, timeout_ms);
	return rc == 0 ? 0 : -rsfi_errno(rc);
}

/* tx's flag for fi_inject and fi_injectdata: no completion at all (FI_INJECT alone still reports one). */
#define RSFI_TX_SILENT (1ull << 63)

/*
 * The completion of a send rdmasec accepted: now, or once the part it holds
 * for the peer's credits has left (rsfi_ep_progress). Reporting it earlier
 * would let an application stop driving progress with its message half
 * sent. Under dom->lock.
 */
static void tx_complete(struct rsfi_ep *ep, void *context)
{
	struct rsfi_cqe e = { .context = context, .flags = FI_SEND | FI_MSG };

	if (rsec_send_queued(ep->conn) == 0) {
		rsfi_cq_push(ep->tx_cq, &e);
		return;
	}
	ep->tx_held = e;
	ep->tx_holding = true;
}

/* The common send: header flags, payload, completion. */
static ssize_t tx(struct rsfi_ep *ep, const struct iovec *iov, size_t count, void *context, uint64_t data,
		  uint64_t flags)
{
	struct rsfi_frame f = { .type = RSFI_FRAME_DATA };
	bool complete = !(flags & RSFI_TX_SILENT) && (!ep->tx_selective || (flags & FI_COMPLETION));
	ssize_t rc;

	if (count > RSFI_IOV_LIMIT || (count && !iov))
		return -FI_EINVAL;
	if ((flags & FI_INJECT) && iov_total(iov, count) > RSFI_INJECT_SIZE)
		return -FI_EINVAL;
	if (flags & FI_REMOTE_CQ_DATA) {
		f.flags = RSFI_FRAME_HAS_DATA;
		f.cq_data = data;
	}
	pthread_mutex_lock(&ep->dom->lock);
	if (ep->state != RSFI_EP_CONNECTED)
		rc = ep->state == RSFI_EP_SHUTDOWN ? -FI_ECONNRESET : -FI_EOPBADSTATE;
	else if (ep->tx_holding || (complete && !rsfi_cq_space(ep->tx_cq)))
		rc = -FI_EAGAIN; /* one message at a time may wait for credits (rsec_send) */
	else
		rc = rsfi_send_frame(ep, ep->conn, &f, iov, count, 0);
	if (rc == -FI_ETIMEDOUT)
		rc = -FI_EAGAIN; /* a message of rdmasec's own waits for credits: retry after progress */
	if (rc == 0 && complete)
		tx_complete(ep, context);
	if (rc == -FI_EAGAIN)
		rsfi_ep_progress(ep, false);
	pthread_mutex_unlock(&ep->dom->lock);
	return rc;
}

static ssize_t ep_sendmsg(struct fid_ep *fid, const struct fi_msg *msg, uint64_t flags)
{
	if (!msg || (flags & RSFI_TX_SILENT))
		return -FI_EINVAL;
	return tx((struct rsfi_ep *)fid, msg->msg_iov, msg->iov_count, msg->context, msg->data, flags);
}

static ssize_t ep_send(struct fid_ep *fid, const void *buf, size_t len, void *desc, fi_addr_t dest, void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	(void)desc, (void)dest;
	return tx((struct rsfi_ep *)fid, &iov, 1, context, 0, 0);
}

static ssize_t ep_sendv(struct fid_ep *fid, const struct iovec *iov, void **desc, size_t count, fi_addr_t dest,
			void *context)
{
	(void)desc, (void)dest;
	return tx((struct rsfi_ep *)fid, iov, count, context, 0, 0);
}

static ssize_t ep_inject(struct fid_ep *fid, const void *buf, size_t len, fi_addr_t dest)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	(void)dest;
	return tx((struct rsfi_ep *)fid, &iov, 1, NULL, 0, FI_INJECT | RSFI_TX_SILENT);
}

static ssize_t ep_senddata(struct fid_ep *fid, const void *buf, size_t len, void *desc, uint64_t data,
			   fi_addr_t dest, void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	(void)desc, (void)dest;
	return tx((struct rsfi_ep *)fid, &iov, 1, context, data, FI_REMOTE_CQ_DATA);
}

static ssize_t ep_injectdata(struct fid_ep *fid, const void *buf, size_t len, uint64_t data, fi_addr_t dest)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	(void)dest;
	return tx((struct rsfi_ep *)fid, &iov, 1, NULL, data, FI_INJECT | FI_REMOTE_CQ_DATA | RSFI_TX_SILENT);
}

static ssize_t rx_post(struct rsfi_ep *ep, const struct iovec *iov, size_t count, void *context, uint64_t flags)
{
	ssize_t rc = 0;

	if (count > RSFI_IOV_LIMIT || (count && !iov))
		return -FI_EINVAL;
	pthread_mutex_lock(&ep->dom->lock);
	if (ep->state == RSFI_EP_SHUTDOWN)
		rc = -FI_ECONNRESET;
	else if (ep->rx_count == RSFI_QUEUE_DEPTH)
		rc = -FI_EAGAIN;
	if (rc == 0) {
		struct rsfi_rx *rx = &ep->rxq[(ep->rx_head + ep->rx_count) % RSFI_QUEUE_DEPTH];
		memset(rx, 0, sizeof(*rx));
		memcpy(rx->iov, iov, count * sizeof(*iov));
		rx->count = count;
		rx->context = context;
		rx->flags = flags;
		ep->rx_count++;
	}
	pthread_mutex_unlock(&ep->dom->lock);
	return rc;
}

static ssize_t ep_recv(struct fid_ep *fid, void *buf, size_t len, void *desc, fi_addr_t src, void *context)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	(void)desc, (void)src;
	return rx_post((struct rsfi_ep *)fid, &iov, 1, context, 0);
}

static ssize_t ep_recvv(struct fid_ep *fid, const struct iovec *iov, void **desc, size_t count, fi_addr_t src,
			void *context)
{
	(void)desc, (void)src;
	return rx_post((struct rsfi_ep *)fid, iov, count, context, 0);
}

static ssize_t ep_recvmsg(struct fid_ep *fid, const struct fi_msg *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return rx_post((struct rsfi_ep *)fid, msg->msg_iov, msg->iov_count, msg->context, flags);
}

struct fi_ops_msg rsfi_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = ep_recv,
	.recvv = ep_recvv,
	.recvmsg = ep_recvmsg,
	.send = ep_send,
	.sendv = ep_sendv,
	.sendmsg = ep_sendmsg,
	.inject = ep_inject,
	.senddata = ep_senddata,
	.injectdata = ep_injectdata,
};

/* Copies body into the oldest posted receive and completes it (FI_ETRUNC if it does not fit). */
static void deliver(struct rsfi_ep *ep, const struct rsfi_frame *f, const uint8_t *body)
{
	struct rsfi_rx *rx = &ep->rxq[ep->rx_head];
	size_t left = f->body_len, done = 0;

	for (size_t i = 0; i < rx->count && left; i++) {
		size_t n = left < rx->iov[i].iov_len ? left : rx->iov[i].iov_len;
		memcpy(rx->iov[i].iov_base, body + done, n);
		done += n;
		left -= n;
	}
	struct rsfi_cqe e = { .context = rx->context, .flags = FI_RECV | FI_MSG, .len = done,
			      .buf = rx->count ? rx->iov[0].iov_base : NULL };
	if (f->flags & RSFI_FRAME_HAS_DATA) {
		e.flags |= FI_REMOTE_CQ_DATA;
		e.data = f->cq_data;
	}
	if (left) {
		e.err = FI_ETRUNC;
		e.olen = left;
	}
	if (!e.err && ep->rx_selective && !(rx->flags & FI_COMPLETION))
		e.flags = 0; /* selective completion: nothing to report */
	if (e.flags || e.err)
		rsfi_cq_push(ep->rx_cq, &e);
	ep->rx_head = (ep->rx_head + 1) % RSFI_QUEUE_DEPTH;
	ep->rx_count--;
}

/* The next message into rxbuf, unless one waits there already: 1 in *f, 0 none yet, < 0 the connection ended. */
static int fetch(struct rsfi_ep *ep, struct rsfi_frame *f)
{
	size_t len = 0;

	if (ep->stashed) {
		*f = ep->stash;
		return 1;
	}
	if (grow(&ep->rxbuf, &ep->rxcap, RSFI_BUF_MIN) != 0)
		return 0; /* no memory now: the message stays with rdmasec */
	int rc = rsec_recv(ep->conn, ep->rxbuf, ep->rxcap, &len, 0);
	if (rc == RSEC_E_RANGE) {
		/* Kept by rdmasec: make room for the largest message a peer may send and take it again. */
		if (grow(&ep->rxbuf, &ep->rxcap, len > ep->rxcap ? len : RSFI_MAX_MSG) != 0)
			return 0;
		rc = rsec_recv(ep->conn, ep->rxbuf, ep->rxcap, &len, 0);
	}
	if (rc == RSEC_E_AGAIN)
		return 0;
	if (rc)
		return rc;
	/* After the CM exchange every frame type but the CM ones may come. */
	if (rsfi_frame_read(ep->rxbuf, len, f) != 0 || f->type == RSFI_FRAME_CONNREQ || f->type == RSFI_FRAME_ACCEPT ||
	    f->type == RSFI_FRAME_REJECT) {
		RSFI_WARN(FI_LOG_EP_DATA, "peer %s broke the provider's framing: closing\n", ep->identity);
		(void)rsec_conn_close(ep->conn, "fi_rdmasec: malformed frame");
		return RSEC_E_PROTO;
	}
	ep->stash = *f;
	ep->stashed = true;
	return 1;
}

/* Acts on the message in rxbuf: 1 done with it, 0 kept for a receive not posted yet. */
static int consume(struct rsfi_ep *ep, const struct rsfi_frame *f)
{
	switch (f->type) {
	case RSFI_FRAME_BYE:
		ep->ack_owed = true;
		break;
	case RSFI_FRAME_BYE_ACK:
		ep->bye_acked = true;
		break;
	case RSFI_FRAME_RMA_REQ:
	case RSFI_FRAME_RMA_NAK:
	case RSFI_FRAME_RMA_DONE:
		if (!rsfi_rma_consume(ep, f, ep->rxbuf + RSFI_FRAME_HDR))
			return 0;
		break;
	default:
		/* While closing, what no receive waits for is dropped: the application is done. */
		if (ep->rx_count && rsfi_cq_space(ep->rx_cq))
			deliver(ep, f, ep->rxbuf + RSFI_FRAME_HDR);
		else if (!ep->closing)
			return 0;
	}
	ep->stashed = false;
	return 1;
}

/*
 * A spinning application calls progress back to back: asking the kernel about
 * the fds each time (rsec_conn_process's epoll_wait, then reading the
 * completion channel and arming the queues again) cost more than the
 * messages. Between looks rdmasec polls the completion queues alone, which
 * finds every message; the socket (control frames) and the channel wait for
 * the next look, except while one-sided transfers are under way: grants and
 * their writers' claims come over the socket.
 */
static void maybe_look(struct rsfi_ep *ep, bool look)
{
	int64_t now = rsfi_coarse_ms();

	if (look || ep->rma_ops || ep->dom->grants || ++ep->unlooked >= RSFI_LOOK_CALLS || now != ep->looked_ms) {
		rsec_conn_turn(ep->conn);
		ep->unlooked = 0;
		ep->looked_ms = now;
	}
}

void rsfi_ep_progress(struct rsfi_ep *ep, bool look)
{
	struct rsfi_frame f;
	int rc;

	if (ep->state != RSFI_EP_CONNECTED)
		return;
	maybe_look(ep, look);
	while ((rc = fetch(ep, &f)) > 0 && consume(ep, &f) > 0)
		;
	if (ep->ack_owed && rsfi_cm_send(ep->conn, RSFI_FRAME_BYE_ACK, NULL, 0, 0) == 0)
		ep->ack_owed = false;
	if (rc >= 0)
		rsfi_rma_progress(ep);
	/* Also drive rdmasec (credits, control messages) and notice a close. */
	if (rc >= 0)
		rc = rsec_conn_process(ep->conn);
	if (rc >= 0 && ep->tx_holding && rsec_send_queued(ep->conn) == 0 && rsfi_cq_space(ep->tx_cq)) {
		rsfi_cq_push(ep->tx_cq, &ep->tx_held);
		ep->tx_holding = false;
	}
	if (rc < 0 && rc != RSEC_E_AGAIN)
		rsfi_ep_closed(ep, rc, true);
}

void rsfi_ep_linger(struct rsfi_ep *ep)
{
	int linger_ms = ep->dom->fab->conf.timeout_ms < RSFI_LINGER_MS ? ep->dom->fab->conf.timeout_ms : RSFI_LINGER_MS;
	struct pollfd pfd = { .fd = rsec_conn_fd(ep->conn), .events = POLLIN };
	int64_t deadline = rsfi_now_ms() + linger_ms;

	if (ep->state != RSFI_EP_CONNECTED)
		return;
	ep->closing = true;
	if (rsfi_cm_send(ep->conn, RSFI_FRAME_BYE, NULL, 0, linger_ms) != 0)
		return;
	while (!ep->bye_acked && ep->state == RSFI_EP_CONNECTED && rsfi_now_ms() < deadline) {
		/* The whole domain: a peer closing another of our connections to it waits for our answer too. */
		for (unsigned i = 0; i < ep->dom->eps.n; i++)
			rsfi_ep_progress(ep->dom->eps.v[i], true);
		if (!ep->bye_acked && poll(&pfd, 1, 10) < 0 && errno != EINTR)
			return;
	}
	if (!ep->bye_acked)
		RSFI_WARN(FI_LOG_EP_CTRL, "%s did not confirm the close within %d ms: messages in flight may be lost\n",
			  ep->identity, linger_ms);
}
