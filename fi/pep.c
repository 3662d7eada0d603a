/* SPDX-License-Identifier: MIT */
/*
 * Passive endpoints. fi_listen opens an rdmasec listener; EQ progress takes
 * each TCP connection and drives its TLS 1.3 mutual authentication and the
 * QP set-up to the end before anything reaches the application: a peer
 * that fails them is dropped (logged), it never produces a CONNREQ. An
 * authenticated peer's first message is its CONNREQ frame; only then is
 * FI_CONNREQ queued, its info->handle holding the rdmasec connection.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>

#include "rsfi.h"

#define RSFI_PENDING_MAX 64u /* connections authenticating at once per listener */
#define RSFI_PORT_TRIES 32   /* rsec_listen takes no port 0: random ephemeral ports */

struct rsfi_pending {
	struct rsfi_pending *next;
	struct rsec_conn *conn;
	int64_t deadline_ms;
};

static void connreq_free(struct rsfi_connreq *creq)
{
	/* A request whose listener closed first is on no list any more. */
	struct rsfi_connreq **p = creq->pep ? &creq->pep->creqs : NULL;

	while (p && *p && *p != creq)
		p = &(*p)->next;
	if (p && *p)
		*p = creq->next;
	rsec_conn_free(creq->conn);
	free(creq);
}

void rsfi_connreq_done(struct rsfi_connreq *creq)
{
	if (creq->ep)
		creq->ep->creq = NULL;
	connreq_free(creq);
}

int rsfi_connreq_take(fid_t handle, struct rsfi_ep *ep)
{
	struct rsfi_connreq *creq = (struct rsfi_connreq *)handle;

	if (handle->fclass != FI_CLASS_CONNREQ || !creq->conn || creq->ep)
		return -FI_EINVAL;
	ep->conn = creq->conn;
	ep->state = RSFI_EP_ACCEPTING;
	ep->creq = creq;
	memcpy(ep->identity, creq->identity, sizeof(ep->identity));
	if (rsfi_addr_parse(rsec_conn_peer_addr(ep->conn), &ep->peer) != 0)
		memset(&ep->peer, 0, sizeof(ep->peer));
	creq->conn = NULL;
	creq->ep = ep;
	return 0;
}

/* The CONNREQ for an authenticated connection that sent its request frame. */
static int report(struct rsfi_pep *pep, struct rsec_conn *c, const uint8_t *data, size_t len)
{
	struct rsfi_connreq *creq = calloc(1, sizeof(*creq));
	struct fi_info *info = fi_dupinfo(pep->info);
	struct sockaddr_in peer;

	if (!creq || !info || rsfi_addr_parse(rsec_conn_peer_addr(c), &peer) != 0)
		goto fail;
	free(info->dest_addr);
	free(info->src_addr);
	info->dest_addr = malloc(sizeof(peer));
	info->src_addr = malloc(sizeof(pep->bound));
	if (!info->dest_addr || !info->src_addr)
		goto fail;
	memcpy(info->dest_addr, &peer, sizeof(peer));
	info->dest_addrlen = sizeof(peer);
	memcpy(info->src_addr, &pep->bound, sizeof(pep->bound));
	info->src_addrlen = sizeof(pep->bound);
	creq->fid.fclass = FI_CLASS_CONNREQ;
	creq->pep = pep;
	creq->conn = c;
	snprintf(creq->identity, sizeof(creq->identity), "%s", rsec_conn_peer(c));
	info->handle = &creq->fid;
	if (rsfi_eq_push(pep->eq, FI_CONNREQ, &pep->fid.fid, info, data, len) != 0)
		goto fail;
	creq->next = pep->creqs;
	pep->creqs = creq;
	RSFI_INFO(FI_LOG_EP_CTRL, "connection request from %s (%s)\n", creq->identity, rsec_conn_peer_addr(c));
	return 0;
fail:
	free(creq);
	fi_freeinfo(info);
	return -FI_ENOMEM;
}

/* An established connection's request frame: 0 reported, RSEC_E_AGAIN not here yet, or an error. */
static int take_request(struct rsfi_pep *pep, struct rsfi_pending *p)
{
	uint8_t msg[RSFI_FRAME_HDR + RSFI_CM_DATA_MAX];
	struct rsfi_frame f;
	size_t len = 0;
	int rc = rsec_recv(p->conn, msg, sizeof(msg), &len, 0);

	if (rc)
		return rc == RSEC_E_RANGE ? RSEC_E_PROTO : rc;
	if (rsfi_frame_read(msg, len, &f) != 0 || f.type != RSFI_FRAME_CONNREQ)
		return RSEC_E_PROTO;
	rc = report(pep, p->conn, msg + RSFI_FRAME_HDR, f.body_len);
	if (rc)
		return RSEC_E_NOMEM;
	p->conn = NULL; /* the connection request owns it now */
	return 0;
}

/* Drives one connection in set-up: 1 done with it (reported or dropped), 0 not yet. */
static int drive(struct rsfi_pep *pep, struct rsfi_pending *p)
{
	int rc = rsec_conn_process(p->conn);

	if (rc == 0)
		rc = rsec_conn_state(p->conn) == RSEC_CONN_ESTABLISHED ? take_request(pep, p) : RSEC_E_AGAIN;
	if (rc == RSEC_E_AGAIN && rsfi_now_ms() >= p->deadline_ms)
		rc = RSEC_E_TIMEOUT;
	if (rc == RSEC_E_AGAIN)
		return 0;
	if (rc)
		RSFI_WARN(FI_LOG_EP_CTRL, "refused %s at set-up: %s (%s)\n", rsec_conn_peer_addr(p->conn),
			  rsec_strerror(rc), rsec_conn_error(p->conn));
	return 1;
}

/* Takes every waiting TCP connection into the set-up list (up to RSFI_PENDING_MAX). */
static void accept_new(struct rsfi_pep *pep)
{
	while (pep->n_pending < RSFI_PENDING_MAX) {
		struct rsec_conn *c = NULL;
		if (rsec_accept(pep->listener, &c) != 0)
			return;
		struct rsfi_pending *p = calloc(1, sizeof(*p));
		if (!p) {
			rsec_conn_free(c);
			return;
		}
		p->conn = c;
		p->deadline_ms = rsfi_now_ms() + 2 * pep->fab->conf.timeout_ms;
		p->next = pep->pending;
		pep->pending = p;
		pep->n_pending++;
		(void)!rsfi_eq_watch(pep->eq, rsec_conn_fd(c), true);
	}
}

void rsfi_pep_progress(struct rsfi_pep *pep)
{
	if (!pep->listener)
		return;
	accept_new(pep);
	for (struct rsfi_pending **pp = &pep->pending; *pp;) {
		struct rsfi_pending *p = *pp;
		int fd = rsec_conn_fd(p->conn);
		if (!drive(pep, p)) {
			pp = &p->next;
			continue;
		}
		(void)!rsfi_eq_watch(pep->eq, fd, false);
		*pp = p->next;
		pep->n_pending--;
		rsec_conn_free(p->conn);
		free(p);
	}
}

static int pep_listen(struct fid_pep *fid)
{
	struct rsfi_pep *pep = (struct rsfi_pep *)fid;
	struct rsec_ctx *ctx;
	char ip[INET_ADDRSTRLEN];

	if (!pep->eq)
		return -FI_ENOEQ;
	if (pep->listener)
		return -FI_EOPBADSTATE;
	int rc = rsfi_fabric_ctx(pep->fab, 1, NULL, &ctx);
	if (rc)
		return rc;
	if (!inet_ntop(AF_INET, &pep->bound.sin_addr, ip, sizeof(ip)))
		return -FI_EINVAL;
	uint16_t port = ntohs(pep->bound.sin_port);
	for (int i = 0; i < RSFI_PORT_TRIES && !pep->listener; i++) {
		uint16_t r = 0;
		if (!port && getrandom(&r, sizeof(r), 0) != sizeof(r))
			return -FI_EIO;
		uint16_t try_port = port ? port : (uint16_t)(49152 + r % 16384);
		rc = rsec_listen(ctx, ip, try_port, 128, &pep->listener);
		if (rc == 0)
			pep->bound.sin_port = htons(try_port);
		else if (port)
			break;
	}
	if (!pep->listener) {
		RSFI_WARN(FI_LOG_EP_CTRL, "listen on %s:%u: %s\n", ip, port, rsec_strerror(rc));
		return -FI_EADDRINUSE;
	}
	return rsfi_eq_watch(pep->eq, rsec_listener_fd(pep->listener), true);
}

static int pep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct rsfi_pep *pep = (struct rsfi_pep *)fid;

	return addrlen ? rsfi_addr_copy_out(&pep->bound, addr, addrlen) : -FI_EINVAL;
}

static int pep_reject(struct fid_pep *fid, fid_t handle, const void *param, size_t paramlen)
{
	struct rsfi_pep *pep = (struct rsfi_pep *)fid;
	struct rsfi_connreq *creq = (struct rsfi_connreq *)handle;
	if (!handle || handle->fclass != FI_CLASS_CONNREQ || creq->pep != pep || paramlen > RSFI_CM_DATA_MAX)
		return -FI_EINVAL;
	pthread_mutex_lock(&pep->eq->progress_lock);
	struct rsfi_ep *ep = creq->ep;
	if (ep)
		pthread_mutex_lock(&ep->dom->lock);
	struct rsec_conn *c = ep ? ep->conn : creq->conn;
	/* The refusal travels sealed like everything else; then an authenticated close. */
	if (c && (!ep || ep->state == RSFI_EP_ACCEPTING)) {
		/* The client closes once it has read the reject: wait for that, then close. */
		if (rsfi_cm_send(c, RSFI_FRAME_REJECT, param, paramlen, pep->fab->conf.timeout_ms) == 0)
			rsfi_conn_drain(c, RSFI_LINGER_MS);
		(void)!rsec_conn_close(c, "fi_reject");
	}
	if (ep) {
		ep->state = RSFI_EP_SHUTDOWN;
		pthread_mutex_unlock(&ep->dom->lock);
	}
	rsfi_connreq_done(creq);
	pthread_mutex_unlock(&pep->eq->progress_lock);
	return 0;
}

static int pep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct rsfi_pep *pep = (struct rsfi_pep *)fid;

	(void)flags;
	if (bfid->fclass != FI_CLASS_EQ)
		return -FI_EINVAL;
	if (pep->eq)
		return -FI_EOPBADSTATE;
	int rc = rsfi_eq_add_pep((struct rsfi_eq *)bfid, pep);
	if (!rc)
		pep->eq = (struct rsfi_eq *)bfid;
	return rc;
}

static int pep_close(struct fid *fid)
{
	struct rsfi_pep *pep = (struct rsfi_pep *)fid;

	if (pep->eq) {
		rsfi_eq_del_pep(pep->eq, pep);
		pthread_mutex_lock(&pep->eq->progress_lock);
	}
	while (pep->pending) {
		struct rsfi_pending *p = pep->pending;
		pep->pending = p->next;
		(void)!rsfi_eq_watch(pep->eq, rsec_conn_fd(p->conn), false);
		rsec_conn_free(p->conn);
		free(p);
	}
	/* Requests an endpoint took stay with it (their handle is freed at accept or at its close). */
	for (struct rsfi_connreq *c = pep->creqs, *next; c; c = next) {
		next = c->next;
		if (c->ep) {
			c->pep = NULL;
			continue;
		}
		rsec_conn_free(c->conn);
		free(c);
	}
	if (pep->listener) {
		(void)!rsfi_eq_watch(pep->eq, rsec_listener_fd(pep->listener), false);
		rsec_listener_free(pep->listener);
	}
	if (pep->eq)
		pthread_mutex_unlock(&pep->eq->progress_lock);
	fi_freeinfo(pep->info);
	free(pep);
	return 0;
}

static struct fi_ops pep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = pep_close,
	.bind = pep_bind,
	.control = rsfi_no_control,
	.ops_open = rsfi_no_ops_open,
	.tostr = rsfi_no_tostr,
	.ops_set = rsfi_no_ops_set,
};

static int pep_getopt(fid_t fid, int level, int optname, void *optval, size_t *optlen)
{
	(void)fid;
	if (level != FI_OPT_ENDPOINT || optname != FI_OPT_CM_DATA_SIZE || !optlen)
		return -FI_ENOPROTOOPT;
	if (*optlen < sizeof(size_t) || !optval) {
		*optlen = sizeof(size_t);
		return -FI_ETOOSMALL;
	}
	*(size_t *)optval = RSFI_CM_DATA_MAX;
	*optlen = sizeof(size_t);
	return 0;
}

static int pep_setopt(fid_t fid, int level, int optname, const void *optval, size_t optlen)
{
	(void)fid, (void)level, (void)optname, (void)optval, (void)optlen;
	return -FI_ENOPROTOOPT;
}

static ssize_t pep_cancel(fid_t fid, void *context)
{
	(void)fid, (void)context;
	return -FI_ENOENT;
}

static struct fi_ops_ep pep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = pep_cancel,
	.getopt = pep_getopt,
	.setopt = pep_setopt,
};

static int pep_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct rsfi_pep *pep = (struct rsfi_pep *)fid;

	if (pep->listener || !addr || addrlen != sizeof(pep->bound) ||
	    ((struct sockaddr *)addr)->sa_family != AF_INET)
		return -FI_EINVAL;
	memcpy(&pep->bound, addr, sizeof(pep->bound));
	return 0;
}

static struct fi_ops_cm pep_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = pep_setname,
	.getname = pep_getname,
	.listen = pep_listen,
	.reject = pep_reject,
};

int rsfi_pep_open(struct fid_fabric *fabric, struct fi_info *info, struct fid_pep **out, void *context)
{
	struct rsfi_fabric *fab = (struct rsfi_fabric *)fabric;
	char dev[64];

	if (!info || !out || (info->ep_attr && info->ep_attr->type != FI_EP_MSG))
		return -FI_EINVAL;
	struct rsfi_pep *pep = calloc(1, sizeof(*pep));
	if (!pep)
		return -FI_ENOMEM;
	pep->fab = fab;
	pep->info = fi_dupinfo(info);
	struct sockaddr_in want = { .sin_family = AF_INET };
	if (info->src_addr && info->src_addrlen == sizeof(want))
		memcpy(&want, info->src_addr, sizeof(want));
	if (!pep->info || rsfi_addr_pick(&fab->conf, &want, &pep->bound, dev) != 0) {
		fi_freeinfo(pep->info);
		free(pep);
		return -FI_ENODATA;
	}
	pep->fid.fid.fclass = FI_CLASS_PEP;
	pep->fid.fid.context = context;
	pep->fid.fid.ops = &pep_fi_ops;
	pep->fid.ops = &pep_ops;
	pep->fid.cm = &pep_cm_ops;
	*out = &pep->fid;
	return 0;
}
