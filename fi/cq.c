/* SPDX-License-Identifier: MIT */
/*
 * Completion queue: a ring of completions in the order the work finished,
 * error entries in line (fi_cq_read says -FI_EAVAIL when one is next).
 * Reading drives the endpoints bound to it (manual progress). FI_WAIT_FD is
 * an epoll fd over their rdmasec connections and an eventfd that says a
 * completion waits; the eventfd is kept (two system calls a completion) only
 * once someone may wait on it: fi_cq_sread, FI_GETWAIT, fi_trywait. An
 * application that only polls fi_cq_read makes no system call here.
 * Everything here is under the domain's lock.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "rsfi.h"

bool rsfi_cq_space(const struct rsfi_cq *cq)
{
	return cq->count < cq->cap;
}

void rsfi_cq_push(struct rsfi_cq *cq, const struct rsfi_cqe *e)
{
	if (cq->count == cq->cap)
		return; /* callers checked rsfi_cq_space before doing the work */
	if (cq->count == 0 && cq->fd_live) {
		uint64_t one = 1;
		(void)!write(cq->efd, &one, sizeof(one));
	}
	cq->ring[(cq->head + cq->count) % cq->cap] = *e;
	cq->count++;
}

static void pop(struct rsfi_cq *cq)
{
	cq->head = (cq->head + 1) % cq->cap;
	if (--cq->count == 0 && cq->fd_live) {
		uint64_t n;
		(void)!read(cq->efd, &n, sizeof(n));
	}
}

/* From now on efd says whether a completion waits: someone may sleep on epfd. */
static void fd_live(struct rsfi_cq *cq)
{
	if (cq->fd_live)
		return;
	cq->fd_live = true;
	if (cq->count) {
		uint64_t one = 1;
		(void)!write(cq->efd, &one, sizeof(one));
	}
}

static void progress(struct rsfi_cq *cq)
{
	bool look = cq->look;

	cq->look = false;
	for (unsigned i = 0; i < cq->eps.n; i++)
		if (cq->eps.v[i]->state == RSFI_EP_CONNECTED)
			rsfi_ep_progress(cq->eps.v[i], look);
}

bool rsfi_cq_ready(struct rsfi_cq *cq)
{
	pthread_mutex_lock(&cq->dom->lock);
	fd_live(cq);
	cq->look = true; /* the caller sleeps next if nothing is ready: the completion queues armed first */
	progress(cq);
	bool ready = cq->count > 0;
	pthread_mutex_unlock(&cq->dom->lock);
	return ready;
}

/* One entry in the CQ's format at out; returns its size. */
static size_t write_entry(const struct rsfi_cq *cq, const struct rsfi_cqe *e, void *out)
{
	switch (cq->format) {
	case FI_CQ_FORMAT_MSG: {
		struct fi_cq_msg_entry m = { .op_context = e->context, .flags = e->flags, .len = e->len };
		memcpy(out, &m, sizeof(m));
		return sizeof(m);
	}
	case FI_CQ_FORMAT_DATA: {
		struct fi_cq_data_entry d = { .op_context = e->context, .flags = e->flags, .len = e->len,
					      .buf = e->buf, .data = e->data };
		memcpy(out, &d, sizeof(d));
		return sizeof(d);
	}
	default: {
		struct fi_cq_entry c = { .op_context = e->context };
		memcpy(out, &c, sizeof(c));
		return sizeof(c);
	}
	}
}

static ssize_t cq_read(struct fid_cq *fid, void *buf, size_t count)
{
	struct rsfi_cq *cq = (struct rsfi_cq *)fid;
	size_t n = 0;

	if (!buf && count)
		return -FI_EINVAL;
	pthread_mutex_lock(&cq->dom->lock);
	progress(cq);
	uint8_t *out = buf;
	while (n < count && cq->count && !cq->ring[cq->head].err) {
		out += write_entry(cq, &cq->ring[cq->head], out);
		pop(cq);
		n++;
	}
	ssize_t rc = n ? (ssize_t)n : cq->count ? -FI_EAVAIL : -FI_EAGAIN;
	pthread_mutex_unlock(&cq->dom->lock);
	return rc;
}

static ssize_t cq_readfrom(struct fid_cq *fid, void *buf, size_t count, fi_addr_t *src)
{
	ssize_t rc = cq_read(fid, buf, count);

	/* Connected endpoints: the source is the connection's peer, which has no AV address. */
	for (ssize_t i = 0; src && i < rc; i++)
		src[i] = FI_ADDR_NOTAVAIL;
	return rc;
}

static ssize_t cq_readerr(struct fid_cq *fid, struct fi_cq_err_entry *buf, uint64_t flags)
{
	struct rsfi_cq *cq = (struct rsfi_cq *)fid;

	(void)flags;
	pthread_mutex_lock(&cq->dom->lock);
	if (!cq->count || !cq->ring[cq->head].err) {
		pthread_mutex_unlock(&cq->dom->lock);
		return -FI_EAGAIN;
	}
	const struct rsfi_cqe *e = &cq->ring[cq->head];
	/* err_data is not used: leave a lent buffer alone, say there is none. */
	void *lent = buf->err_data;
	bool api15 = FI_VERSION_GE(cq->dom->fab->fid.api_version, FI_VERSION(1, 5));
	*buf = (struct fi_cq_err_entry){ .op_context = e->context, .flags = e->flags, .len = e->len,
					 .buf = e->buf, .data = e->data, .olen = e->olen, .err = e->err,
					 .prov_errno = e->prov_errno, .err_data = api15 ? lent : NULL };
	pop(cq);
	pthread_mutex_unlock(&cq->dom->lock);
	return 1;
}

static ssize_t cq_sreadfrom(struct fid_cq *fid, void *buf, size_t count, fi_addr_t *src, const void *cond,
			    int timeout)
{
	struct rsfi_cq *cq = (struct rsfi_cq *)fid;
	int64_t deadline = timeout < 0 ? -1 : rsfi_now_ms() + timeout;
	ssize_t rc;

	(void)cond;
	pthread_mutex_lock(&cq->dom->lock);
	fd_live(cq);
	cq->look = true;
	pthread_mutex_unlock(&cq->dom->lock);
	while ((rc = cq_readfrom(fid, buf, count, src)) == -FI_EAGAIN) {
		int w = rsfi_wait_slice(cq->epfd, deadline);
		if (w)
			return w;
		pthread_mutex_lock(&cq->dom->lock);
		cq->look = true; /* woken: the fds have news the connections' last look did not see */
		pthread_mutex_unlock(&cq->dom->lock);
	}
	return rc;
}

static ssize_t cq_sread(struct fid_cq *fid, void *buf, size_t count, const void *cond, int timeout)
{
	return cq_sreadfrom(fid, buf, count, NULL, cond, timeout);
}

static int cq_signal(struct fid_cq *fid)
{
	struct rsfi_cq *cq = (struct rsfi_cq *)fid;
	uint64_t one = 1;

	/* Wakes a waiter; the counter is drained by the next pop of an emptied queue. */
	return write(cq->efd, &one, sizeof(one)) == sizeof(one) ? 0 : -FI_EIO;
}

static const char *cq_strerror(struct fid_cq *fid, int prov_errno, const void *err_data, char *buf, size_t len)
{
	static __thread char text[128];

	(void)fid, (void)err_data;
	snprintf(text, sizeof(text), "rdmasec: %s", prov_errno ? rsec_strerror(-prov_errno) : "no provider error");
	if (buf && len) {
		snprintf(buf, len, "%s", text);
		return buf;
	}
	return text;
}

static struct fi_ops_cq cq_ops = {
	.size = sizeof(struct fi_ops_cq),
	.read = cq_read,
	.readfrom = cq_readfrom,
	.readerr = cq_readerr,
	.sread = cq_sread,
	.sreadfrom = cq_sreadfrom,
	.signal = cq_signal,
	.strerror = cq_strerror,
};

static int cq_close(struct fid *fid)
{
	struct rsfi_cq *cq = (struct rsfi_cq *)fid;
	struct rsfi_domain *dom = cq->dom;

	pthread_mutex_lock(&dom->lock);
	if (cq->eps.n) {
		pthread_mutex_unlock(&dom->lock);
		return -FI_EBUSY;
	}
	dom->refs--;
	pthread_mutex_unlock(&dom->lock);
	close(cq->efd);
	close(cq->epfd);
	rsfi_epset_free(&cq->eps);
	free(cq->ring);
	free(cq);
	return 0;
}

static int cq_control(struct fid *fid, int command, void *arg)
{
	struct rsfi_cq *cq = (struct rsfi_cq *)fid;
	int rc = rsfi_getwait(cq->wait_obj, cq->epfd, command, arg);

	if (rc == 0) {
		pthread_mutex_lock(&cq->dom->lock);
		fd_live(cq);
		pthread_mutex_unlock(&cq->dom->lock);
	}
	return rc;
}

static struct fi_ops cq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = cq_close,
	.bind = rsfi_no_bind,
	.control = cq_control,
	.ops_open = rsfi_no_ops_open,
	.tostr = rsfi_no_tostr,
	.ops_set = rsfi_no_ops_set,
};

int rsfi_cq_watch(struct rsfi_cq *cq, int fd, bool on)
{
	return rsfi_epoll_watch(cq->epfd, fd, on);
}

int rsfi_cq_add_ep(struct rsfi_cq *cq, struct rsfi_ep *ep)
{
	return rsfi_epset_add(&cq->eps, ep);
}

void rsfi_cq_del_ep(struct rsfi_cq *cq, struct rsfi_ep *ep)
{
	rsfi_epset_del(&cq->eps, ep);
}

static int check_attr(const struct fi_cq_attr *attr)
{
	if (attr->format != FI_CQ_FORMAT_UNSPEC && attr->format != FI_CQ_FORMAT_CONTEXT &&
	    attr->format != FI_CQ_FORMAT_MSG && attr->format != FI_CQ_FORMAT_DATA)
		return -FI_ENOSYS;
	if (attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC && attr->wait_obj != FI_WAIT_FD)
		return -FI_ENOSYS;
	if (attr->flags & ~(uint64_t)FI_AFFINITY)
		return -FI_EINVAL;
	return attr->size > (1u << 20) ? -FI_EINVAL : 0;
}

int rsfi_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr, struct fid_cq **out, void *context)
{
	struct rsfi_domain *dom = (struct rsfi_domain *)domain;
	int rc = attr ? check_attr(attr) : -FI_EINVAL;

	if (rc)
		return rc;
	struct rsfi_cq *cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -FI_ENOMEM;
	cq->cap = attr->size ? attr->size : RSFI_CQ_DEFAULT;
	cq->ring = calloc(cq->cap, sizeof(*cq->ring));
	cq->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	cq->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (!cq->ring || cq->efd < 0 || cq->epfd < 0) {
		if (cq->efd >= 0)
			close(cq->efd);
		if (cq->epfd >= 0)
			close(cq->epfd);
		free(cq->ring);
		free(cq);
		return -FI_ENOMEM;
	}
	cq->dom = dom;
	cq->format = attr->format == FI_CQ_FORMAT_UNSPEC ? FI_CQ_FORMAT_CONTEXT : attr->format;
	cq->wait_obj = attr->wait_obj == FI_WAIT_NONE ? FI_WAIT_NONE : FI_WAIT_FD;
	cq->fid.fid.fclass = FI_CLASS_CQ;
	cq->fid.fid.context = context;
	cq->fid.fid.ops = &cq_fi_ops;
	cq->fid.ops = &cq_ops;
	if (rsfi_cq_watch(cq, cq->efd, true) != 0) {
		close(cq->efd);
		close(cq->epfd);
		free(cq->ring);
		free(cq);
		return -FI_EIO;
	}
	pthread_mutex_lock(&dom->lock);
	dom->refs++;
	pthread_mutex_unlock(&dom->lock);
	*out = &cq->fid;
	return 0;
}
