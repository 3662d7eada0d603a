/* SPDX-License-Identifier: MIT */
/*
 * Active side of connection management. fi_connect runs rdmasec's blocking
 * rsec_connect (TLS 1.3, server authenticated, QP set up inside TLS) on a
 * thread of its own, sends the CONNREQ frame with the private data and waits
 * for the server application's ACCEPT or REJECT before the EQ says
 * FI_CONNECTED (or fails with FI_ECONNREFUSED and the reject's data).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rsfi.h"

int rsfi_cm_send(struct rsec_conn *c, enum rsfi_frame_type type, const void *data, size_t len, int timeout_ms)
{
	uint8_t msg[RSFI_FRAME_HDR + RSFI_CM_DATA_MAX];
	struct rsfi_frame f = { .type = type, .body_len = len };

	if (len > RSFI_CM_DATA_MAX || (len && !data) || rsfi_frame_write(&f, msg) != 0)
		return -FI_EINVAL;
	if (len)
		memcpy(msg + RSFI_FRAME_HDR, data, len);
	int rc = rsec_send(c, msg, RSFI_FRAME_HDR + len, timeout_ms);
	return rc ? -rsfi_errno(rc) : 0;
}

void rsfi_conn_drain(struct rsec_conn *c, int ms)
{
	struct pollfd pfd = { .fd = rsec_conn_fd(c), .events = POLLIN };
	int64_t deadline = rsfi_now_ms() + ms;
	int rc;

	while ((rc = rsec_conn_process(c)) >= 0 || rc == RSEC_E_AGAIN) {
		if (rsfi_now_ms() >= deadline || (poll(&pfd, 1, 10) < 0 && errno != EINTR))
			return;
	}
}

/* Queues the failure of a connect on the EQ, with the reason (never a secret). */
static void connect_failed(struct rsfi_ep *ep, int err, int code, const char *why, const void *data, size_t len)
{
	RSFI_WARN(FI_LOG_EP_CTRL, "connect failed: %s\n", why);
	pthread_mutex_lock(&ep->dom->lock);
	ep->state = RSFI_EP_IDLE;
	pthread_mutex_unlock(&ep->dom->lock);
	(void)!rsfi_eq_push_err(ep->eq, &ep->fid.fid, err, code, why, data, len);
}

/* After rsec_connect: the request frame, then the server's answer. */
static void exchange(struct rsfi_ep *ep, struct rsec_conn *c, int timeout_ms)
{
	uint8_t msg[RSFI_FRAME_HDR + RSFI_CM_DATA_MAX];
	struct rsfi_frame f = { 0 };
	size_t len = 0;
	char why[300];
	int rc = rsfi_cm_send(c, RSFI_FRAME_CONNREQ, ep->cm_data, ep->cm_len, timeout_ms);

	if (rc == 0)
		rc = rsec_recv(c, msg, sizeof(msg), &len, timeout_ms);
	if (rc == 0 && (rsfi_frame_read(msg, len, &f) != 0 || f.type == RSFI_FRAME_CONNREQ || f.type == RSFI_FRAME_DATA))
		rc = RSEC_E_PROTO;
	if (rc == 0 && f.type == RSFI_FRAME_REJECT) {
		snprintf(why, sizeof(why), "rejected by %s", rsec_conn_peer(c));
		rsec_conn_free(c);
		connect_failed(ep, FI_ECONNREFUSED, RSEC_E_DENIED, why, msg + RSFI_FRAME_HDR, f.body_len);
		return;
	}
	if (rc) {
		snprintf(why, sizeof(why), "%s: %s", rsec_strerror(rc), rsec_conn_error(c));
		rsec_conn_free(c);
		connect_failed(ep, rsfi_errno(rc), rc, why, NULL, 0);
		return;
	}
	pthread_mutex_lock(&ep->dom->lock);
	rsfi_ep_attach(ep, c, RSFI_EP_CONNECTED);
	pthread_mutex_unlock(&ep->dom->lock);
	RSFI_INFO(FI_LOG_EP_CTRL, "connected to %s\n", ep->identity);
	(void)!rsfi_eq_push(ep->eq, FI_CONNECTED, &ep->fid.fid, NULL, msg + RSFI_FRAME_HDR, f.body_len);
}

static void *connect_main(void *arg)
{
	struct rsfi_ep *ep = arg;
	const struct rsfi_conf *conf = &ep->dom->fab->conf;
	struct rsec_ctx *ctx;
	struct rsec_conn *c = NULL;
	char ip[INET_ADDRSTRLEN], why[300];

	int rc = rsfi_fabric_ctx(ep->dom->fab, 0, &ep->local, &ctx);
	if (rc) {
		connect_failed(ep, -rc, RSEC_E_CONFIG, "no rdmasec client context (see FI_LOG_LEVEL=warn)", NULL, 0);
		return NULL;
	}
	if (!inet_ntop(AF_INET, &ep->peer.sin_addr, ip, sizeof(ip))) {
		connect_failed(ep, FI_EINVAL, RSEC_E_INVAL, "bad destination", NULL, 0);
		return NULL;
	}
	rc = rsec_connect(ctx, ip, ntohs(ep->peer.sin_port), conf->server_name[0] ? conf->server_name : NULL,
			  conf->timeout_ms, &c);
	if (rc) {
		/* A failed rsec_connect may still hand over the connection: it carries the reason. */
		snprintf(why, sizeof(why), "set-up with %s:%u failed%s%s", ip, ntohs(ep->peer.sin_port), c ? ": " : "",
			 c ? rsec_conn_error(c) : "");
		rsec_conn_free(c);
		connect_failed(ep, rsfi_errno(rc), rc, why, NULL, 0);
		return NULL;
	}
	exchange(ep, c, conf->timeout_ms);
	return NULL;
}

static int ep_connect(struct fid_ep *fid, const void *addr, const void *param, size_t paramlen)
{
	struct rsfi_ep *ep = (struct rsfi_ep *)fid;
	int rc = 0;

	if (!addr || paramlen > RSFI_CM_DATA_MAX || (paramlen && !param) ||
	    ((const struct sockaddr *)addr)->sa_family != AF_INET)
		return -FI_EINVAL;
	pthread_mutex_lock(&ep->dom->lock);
	if (!ep->enabled || ep->state != RSFI_EP_IDLE || ep->thread_live)
		rc = -FI_EOPBADSTATE;
	if (!rc) {
		memcpy(&ep->peer, addr, sizeof(ep->peer));
		if (paramlen)
			memcpy(ep->cm_data, param, paramlen);
		ep->cm_len = paramlen;
		ep->state = RSFI_EP_CONNECTING;
		rc = pthread_create(&ep->thread, NULL, connect_main, ep) == 0 ? 0 : -FI_EAGAIN;
		ep->thread_live = rc == 0;
		if (rc)
			ep->state = RSFI_EP_IDLE;
	}
	pthread_mutex_unlock(&ep->dom->lock);
	return rc;
}

static int ep_accept(struct fid_ep *fid, const void *param, size_t paramlen)
{
	struct rsfi_ep *ep = (struct rsfi_ep *)fid;
	struct rsfi_connreq *creq = ep->creq;
	pthread_mutex_t *progress = creq && creq->pep ? &creq->pep->eq->progress_lock : NULL;
	int rc = 0;

	if (paramlen > RSFI_CM_DATA_MAX || (paramlen && !param))
		return -FI_EINVAL;
	if (progress)
		pthread_mutex_lock(progress);
	pthread_mutex_lock(&ep->dom->lock);
	if (!ep->enabled || ep->state != RSFI_EP_ACCEPTING)
		rc = -FI_EOPBADSTATE;
	if (!rc)
		rc = rsfi_cm_send(ep->conn, RSFI_FRAME_ACCEPT, param, paramlen, ep->dom->fab->conf.timeout_ms);
	if (!rc) {
		rsfi_ep_attach(ep, ep->conn, RSFI_EP_CONNECTED);
		rsfi_connreq_done(ep->creq);
		rc = rsfi_eq_push(ep->eq, FI_CONNECTED, &ep->fid.fid, NULL, NULL, 0);
	}
	pthread_mutex_unlock(&ep->dom->lock);
	if (progress)
		pthread_mutex_unlock(progress);
	return rc;
}

static int ep_shutdown(struct fid_ep *fid, uint64_t flags)
{
	struct rsfi_ep *ep = (struct rsfi_ep *)fid;

	(void)flags;
	pthread_mutex_lock(&ep->dom->lock);
	rsfi_ep_linger(ep);
	if (ep->conn && (ep->state == RSFI_EP_CONNECTED || ep->state == RSFI_EP_ACCEPTING))
		(void)!rsec_conn_close(ep->conn, "fi_shutdown");
	/* Our own shutdown reports no FI_SHUTDOWN here: only the peer's does. */
	rsfi_ep_closed(ep, RSEC_E_CLOSED, false);
	pthread_mutex_unlock(&ep->dom->lock);
	return 0;
}

static int ep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct rsfi_ep *ep = (struct rsfi_ep *)fid;

	return addrlen ? rsfi_addr_copy_out(&ep->local, addr, addrlen) : -FI_EINVAL;
}

static int ep_getpeer(struct fid_ep *fid, void *addr, size_t *addrlen)
{
	struct rsfi_ep *ep = (struct rsfi_ep *)fid;

	if (!addrlen)
		return -FI_EINVAL;
	if (ep->state != RSFI_EP_CONNECTED && ep->state != RSFI_EP_ACCEPTING)
		return -FI_ENOTCONN;
	return rsfi_addr_copy_out(&ep->peer, addr, addrlen);
}

static int ep_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct rsfi_ep *ep = (struct rsfi_ep *)fid;

	if (ep->state != RSFI_EP_IDLE || !addr || addrlen != sizeof(ep->local) ||
	    ((struct sockaddr *)addr)->sa_family != AF_INET)
		return -FI_EINVAL;
	memcpy(&ep->local, addr, sizeof(ep->local));
	return 0;
}

static int ep_no_listen(struct fid_pep *pep)
{
	(void)pep;
	return -FI_ENOSYS;
}

static int ep_no_reject(struct fid_pep *pep, fid_t handle, const void *param, size_t paramlen)
{
	(void)pep, (void)handle, (void)param, (void)paramlen;
	return -FI_ENOSYS;
}

static int ep_no_join(struct fid_ep *ep, const void *addr, uint64_t flags, struct fid_mc **mc, void *context)
{
	(void)ep, (void)addr, (void)flags, (void)mc, (void)context;
	return -FI_ENOSYS;
}

struct fi_ops_cm rsfi_ep_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = ep_setname,
	.getname = ep_getname,
	.getpeer = ep_getpeer,
	.connect = ep_connect,
	.listen = ep_no_listen,
	.accept = ep_accept,
	.reject = ep_no_reject,
	.shutdown = ep_shutdown,
	.join = ep_no_join,
};
