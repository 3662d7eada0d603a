/* SPDX-License-Identifier: MIT */
/*
 * Active endpoints: binding to an EQ and CQs, options, addresses, and the
 * life of the rdmasec connection under them (attach, close, teardown).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rsfi.h"

void rsfi_ep_attach(struct rsfi_ep *ep, struct rsec_conn *c, enum rsfi_ep_state state)
{
	int fd = rsec_conn_fd(c);

	ep->conn = c;
	ep->state = state;
	snprintf(ep->identity, sizeof(ep->identity), "%s", rsec_conn_peer(c) ? rsec_conn_peer(c) : "");
	if (rsfi_addr_parse(rsec_conn_peer_addr(c), &ep->peer) != 0)
		memset(&ep->peer, 0, sizeof(ep->peer));
	/* A wait on the CQs or the EQ wakes for this connection; failing that, their 100 ms slices do. */
	if (ep->tx_cq)
		(void)!rsfi_cq_watch(ep->tx_cq, fd, true);
	if (ep->rx_cq)
		(void)!rsfi_cq_watch(ep->rx_cq, fd, true);
	if (ep->eq)
		(void)!rsfi_eq_watch(ep->eq, fd, true);
}

/* Stops watching the connection's fd and frees it. Under dom->lock. */
static void drop_conn(struct rsfi_ep *ep)
{
	if (!ep->conn)
		return;
	int fd = rsec_conn_fd(ep->conn);
	if (ep->tx_cq)
		(void)!rsfi_cq_watch(ep->tx_cq, fd, false);
	if (ep->rx_cq)
		(void)!rsfi_cq_watch(ep->rx_cq, fd, false);
	if (ep->eq)
		(void)!rsfi_eq_watch(ep->eq, fd, false);
	rsec_conn_free(ep->conn);
	ep->conn = NULL;
}

/* Posted receives end with FI_ECANCELED entries (as many as the CQ takes). */
static void flush_receives(struct rsfi_ep *ep)
{
	while (ep->rx_count && ep->rx_cq && rsfi_cq_space(ep->rx_cq)) {
		struct rsfi_rx *rx = &ep->rxq[ep->rx_head];
		struct rsfi_cqe e = { .context = rx->context, .flags = FI_RECV | FI_MSG, .err = FI_ECANCELED,
				      .prov_errno = -RSEC_E_CLOSED };
		rsfi_cq_push(ep->rx_cq, &e);
		ep->rx_head = (ep->rx_head + 1) % RSFI_QUEUE_DEPTH;
		ep->rx_count--;
	}
}

void rsfi_ep_closed(struct rsfi_ep *ep, int code, bool report)
{
	if (ep->state != RSFI_EP_CONNECTED)
		return;
	/* The peer closing is ordinary; anything else is worth a warning (never a secret: rdmasec's reason). */
	if (code == RSEC_E_CLOSED)
		RSFI_INFO(FI_LOG_EP_CTRL, "connection with %s closed (%s)\n", ep->identity,
			  ep->conn ? rsec_conn_error(ep->conn) : "");
	else
		RSFI_WARN(FI_LOG_EP_CTRL, "connection with %s failed: %s (%s)\n", ep->identity, rsec_strerror(code),
			  ep->conn ? rsec_conn_error(ep->conn) : "");
	ep->state = RSFI_EP_SHUTDOWN;
	flush_receives(ep);
	if (ep->tx_holding && rsfi_cq_space(ep->tx_cq)) {
		/* Part of it never left: the send failed. */
		ep->tx_held.err = FI_ECANCELED;
		ep->tx_held.prov_errno = -code;
		rsfi_cq_push(ep->tx_cq, &ep->tx_held);
	}
	ep->tx_holding = false;
	rsfi_rma_end(ep, code);
	if (report && ep->eq)
		(void)!rsfi_eq_push(ep->eq, FI_SHUTDOWN, &ep->fid.fid, NULL, NULL, 0);
}

static int ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct rsfi_ep *ep = (struct rsfi_ep *)fid;
	int rc = 0;

	if (ep->enabled)
		return -FI_EOPBADSTATE;
	pthread_mutex_lock(&ep->dom->lock);
	switch (bfid->fclass) {
	case FI_CLASS_EQ:
		ep->eq = (struct rsfi_eq *)bfid;
		break;
	case FI_CLASS_CQ:
		if (!(flags & (FI_TRANSMIT | FI_RECV))) {
			rc = -FI_EINVAL;
			break;
		}
		if (flags & FI_TRANSMIT) {
			ep->tx_cq = (struct rsfi_cq *)bfid;
			ep->tx_selective = flags & FI_SELECTIVE_COMPLETION;
		}
		if (flags & FI_RECV) {
			ep->rx_cq = (struct rsfi_cq *)bfid;
			ep->rx_selective = flags & FI_SELECTIVE_COMPLETION;
		}
		rc = rsfi_cq_add_ep((struct rsfi_cq *)bfid, ep);
		break;
	default:
		rc = -FI_ENOSYS;
	}
	pthread_mutex_unlock(&ep->dom->lock);
	if (!rc && bfid->fclass == FI_CLASS_EQ)
		rc = rsfi_eq_add_ep(ep->eq, ep);
	return rc;
}

static int ep_control(struct fid *fid, int command, void *arg)
{
	struct rsfi_ep *ep = (struct rsfi_ep *)fid;

	(void)arg;
	if (command != FI_ENABLE)
		return -FI_ENOSYS;
	if (!ep->eq || !ep->tx_cq || !ep->rx_cq)
		return -FI_ENOCQ; /* MSG endpoints report CM events and both directions' completions */
	ep->enabled = true;
	return 0;
}

static int ep_close(struct fid *fid)
{
	struct rsfi_ep *ep = (struct rsfi_ep *)fid;

	if (ep->thread_live)
		pthread_join(ep->thread, NULL);
	if (ep->eq)
		rsfi_eq_del_ep(ep->eq, ep);
	/* A request never accepted: its listener's progress lock guards the list it is on. */
	pthread_mutex_t *progress = ep->creq && ep->creq->pep ? &ep->creq->pep->eq->progress_lock : NULL;
	if (progress)
		pthread_mutex_lock(progress);
	pthread_mutex_lock(&ep->dom->lock);
	if (ep->creq)
		rsfi_connreq_done(ep->creq);
	if (ep->conn)
		rsfi_ep_linger(ep); /* closed without fi_shutdown: still lose nothing already sent */
	rsfi_rma_end(ep, RSEC_E_CLOSED);
	drop_conn(ep);
	if (ep->tx_cq)
		rsfi_cq_del_ep(ep->tx_cq, ep);
	if (ep->rx_cq)
		rsfi_cq_del_ep(ep->rx_cq, ep);
	rsfi_epset_del(&ep->dom->eps, ep);
	ep->dom->refs--;
	pthread_mutex_unlock(&ep->dom->lock);
	if (progress)
		pthread_mutex_unlock(progress);
	if (ep->rxbuf)
		explicit_bzero(ep->rxbuf, ep->rxcap);
	if (ep->txbuf)
		explicit_bzero(ep->txbuf, ep->txcap);
	free(ep->rxbuf);
	free(ep->txbuf);
	fi_freeinfo(ep->info);
	free(ep);
	return 0;
}

static struct fi_ops ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = ep_close,
	.bind = ep_bind,
	.control = ep_control,
	.ops_open = rsfi_no_ops_open,
	.tostr = rsfi_no_tostr,
	.ops_set = rsfi_no_ops_set,
};

static int getopt_identity(struct rsfi_ep *ep, void *optval, size_t *optlen)
{
	size_t need = strlen(ep->identity) + 1;
	size_t have = *optlen;

	if (ep->state == RSFI_EP_IDLE || ep->state == RSFI_EP_CONNECTING)
		return -FI_ENOTCONN;
	*optlen = need;
	if (have < need || !optval)
		return -FI_ETOOSMALL;
	memcpy(optval, ep->identity, need);
	return 0;
}

static int ep_getopt(fid_t fid, int level, int optname, void *optval, size_t *optlen)
{
	struct rsfi_ep *ep = (struct rsfi_ep *)fid;
	int rc;

	if (level != FI_OPT_ENDPOINT || !optlen)
		return -FI_ENOPROTOOPT;
	pthread_mutex_lock(&ep->dom->lock);
	switch (optname) {
	case FI_OPT_CM_DATA_SIZE:
		rc = *optlen < sizeof(size_t) ? -FI_ETOOSMALL : 0;
		if (!rc)
			*(size_t *)optval = RSFI_CM_DATA_MAX;
		*optlen = sizeof(size_t);
		break;
	case FI_RDMASEC_OPT_PEER_IDENTITY:
		rc = getopt_identity(ep, optval, optlen);
		break;
	default:
		rc = -FI_ENOPROTOOPT;
	}
	pthread_mutex_unlock(&ep->dom->lock);
	return rc;
}

static int ep_setopt(fid_t fid, int level, int optname, const void *optval, size_t optlen)
{
	(void)fid, (void)level, (void)optname, (void)optval, (void)optlen;
	return -FI_ENOPROTOOPT;
}

static ssize_t ep_cancel(fid_t fid, void *context)
{
	(void)fid, (void)context;
	return -FI_ENOENT; /* receives stay posted until they complete or the connection ends */
}

static int no_ctx(struct fid_ep *sep, int index, void *attr, struct fid_ep **ep, void *context)
{
	(void)sep, (void)index, (void)attr, (void)ep, (void)context;
	return -FI_ENOSYS;
}

static int no_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr, struct fid_ep **ep, void *context)
{
	return no_ctx(sep, index, attr, ep, context);
}

static int no_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr, struct fid_ep **ep, void *context)
{
	return no_ctx(sep, index, attr, ep, context);
}

static ssize_t rx_size_left(struct fid_ep *fid)
{
	struct rsfi_ep *ep = (struct rsfi_ep *)fid;

	return (ssize_t)(RSFI_QUEUE_DEPTH - ep->rx_count);
}

static ssize_t tx_size_left(struct fid_ep *fid)
{
	struct rsfi_ep *ep = (struct rsfi_ep *)fid;

	return ep->conn && rsec_send_queued(ep->conn) ? 0 : RSFI_QUEUE_DEPTH;
}

static struct fi_ops_ep ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = ep_cancel,
	.getopt = ep_getopt,
	.setopt = ep_setopt,
	.tx_ctx = no_tx_ctx,
	.rx_ctx = no_rx_ctx,
	.rx_size_left = rx_size_left,
	.tx_size_left = tx_size_left,
};

int rsfi_ep_open(struct fid_domain *domain, struct fi_info *info, struct fid_ep **out, void *context)
{
	struct rsfi_domain *dom = (struct rsfi_domain *)domain;

	if (!info || !info->ep_attr || info->ep_attr->type != FI_EP_MSG || !out)
		return -FI_EINVAL;
	struct rsfi_ep *ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ep->info = fi_dupinfo(info);
	if (!ep->info) {
		free(ep);
		return -FI_ENOMEM;
	}
	ep->dom = dom;
	if (info->src_addr && info->src_addrlen == sizeof(ep->local))
		memcpy(&ep->local, info->src_addr, sizeof(ep->local));
	ep->fid.fid.fclass = FI_CLASS_EP;
	ep->fid.fid.context = context;
	ep->fid.fid.ops = &ep_fi_ops;
	ep->fid.ops = &ep_ops;
	ep->fid.cm = &rsfi_ep_cm_ops;
	ep->fid.msg = &rsfi_msg_ops;
	ep->fid.rma = &rsfi_rma_ops;
	pthread_mutex_lock(&dom->lock);
	int rc = rsfi_epset_add(&dom->eps, ep);
	if (!rc && info->handle)
		rc = rsfi_connreq_take(info->handle, ep);
	if (rc)
		rsfi_epset_del(&dom->eps, ep);
	else
		dom->refs++;
	pthread_mutex_unlock(&dom->lock);
	if (rc) {
		fi_freeinfo(ep->info);
		free(ep);
		return rc;
	}
	*out = &ep->fid;
	return 0;
}
