/* SPDX-License-Identifier: MIT */
/*
 * Event queue: CM events in order, errors through fi_eq_readerr. Reading
 * drives the connection management (manual progress): listeners accept,
 * peers authenticate, closed connections turn into FI_SHUTDOWN. FI_WAIT_FD
 * is an epoll fd over all of it plus an eventfd that says an event waits.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "rsfi.h"

#define EVENT_BYTES (sizeof(struct fi_eq_cm_entry) + RSFI_CM_DATA_MAX)

struct rsfi_event {
	struct rsfi_event *next;
	uint32_t event;
	bool is_err;
	uint8_t bytes[EVENT_BYTES]; /* what fi_eq_read copies out */
	size_t nbytes;
	struct fi_eq_err_entry err;
	uint8_t data[RSFI_CM_DATA_MAX]; /* an error's err_data (a reject's private data) */
	char why[256];
};

static void queue_event(struct rsfi_eq *eq, struct rsfi_event *ev)
{
	pthread_mutex_lock(&eq->lock);
	if (!eq->head) {
		uint64_t one = 1;
		/* eventfd's counter cannot overflow at 1: the write only fails on a closed fd. */
		(void)!write(eq->efd, &one, sizeof(one));
	}
	if (eq->tail)
		eq->tail->next = ev;
	else
		eq->head = ev;
	eq->tail = ev;
	pthread_mutex_unlock(&eq->lock);
}

/* Takes the head off the queue; under eq->lock. */
static struct rsfi_event *pop_event(struct rsfi_eq *eq)
{
	struct rsfi_event *ev = eq->head;

	eq->head = ev->next;
	if (!eq->head) {
		uint64_t n;
		eq->tail = NULL;
		(void)!read(eq->efd, &n, sizeof(n));
	}
	return ev;
}

int rsfi_eq_push(struct rsfi_eq *eq, uint32_t event, fid_t fid, struct fi_info *info, const void *data, size_t len)
{
	struct rsfi_event *ev = calloc(1, sizeof(*ev));
	struct fi_eq_cm_entry cm = { .fid = fid, .info = info };

	if (!ev || len > RSFI_CM_DATA_MAX) {
		free(ev);
		return -FI_ENOMEM;
	}
	ev->event = event;
	memcpy(ev->bytes, &cm, sizeof(cm));
	if (len)
		memcpy(ev->bytes + sizeof(cm), data, len);
	ev->nbytes = sizeof(cm) + len;
	queue_event(eq, ev);
	return 0;
}

int rsfi_eq_push_err(struct rsfi_eq *eq, fid_t fid, int err, int rsec_code, const char *why, const void *data,
		     size_t len)
{
	struct rsfi_event *ev = calloc(1, sizeof(*ev));

	if (!ev || len > RSFI_CM_DATA_MAX) {
		free(ev);
		return -FI_ENOMEM;
	}
	ev->is_err = true;
	ev->err.fid = fid;
	ev->err.context = fid ? fid->context : NULL;
	ev->err.err = err;
	ev->err.prov_errno = -rsec_code;
	if (len)
		memcpy(ev->data, data, len);
	ev->err.err_data_size = len;
	snprintf(ev->why, sizeof(ev->why), "%s", why ? why : "");
	queue_event(eq, ev);
	return 0;
}

void rsfi_eq_progress(struct rsfi_eq *eq)
{
	pthread_mutex_lock(&eq->progress_lock);
	for (unsigned i = 0; i < eq->n_peps; i++)
		rsfi_pep_progress(eq->peps[i]);
	for (unsigned i = 0; i < eq->eps.n; i++) {
		struct rsfi_ep *ep = eq->eps.v[i];
		/* Never wait for a domain busy in a data call: its own progress sees the close. */
		if (pthread_mutex_trylock(&ep->dom->lock) != 0)
			continue;
		if (ep->state == RSFI_EP_CONNECTED)
			rsfi_ep_progress(ep, true);
		pthread_mutex_unlock(&ep->dom->lock);
	}
	pthread_mutex_unlock(&eq->progress_lock);
}

bool rsfi_eq_ready(struct rsfi_eq *eq)
{
	rsfi_eq_progress(eq);
	pthread_mutex_lock(&eq->lock);
	bool ready = eq->head != NULL;
	pthread_mutex_unlock(&eq->lock);
	return ready;
}

static ssize_t eq_read(struct fid_eq *fid, uint32_t *event, void *buf, size_t len, uint64_t flags)
{
	struct rsfi_eq *eq = (struct rsfi_eq *)fid;

	if (!event || (!buf && len))
		return -FI_EINVAL;
	rsfi_eq_progress(eq);
	pthread_mutex_lock(&eq->lock);
	struct rsfi_event *ev = eq->head;
	ssize_t rc = !ev ? -FI_EAGAIN : ev->is_err ? -FI_EAVAIL : 0;
	if (rc == 0 && len < sizeof(struct fi_eq_cm_entry) && ev->nbytes >= sizeof(struct fi_eq_cm_entry))
		rc = -FI_ETOOSMALL;
	if (rc == 0) {
		size_t n = ev->nbytes < len ? ev->nbytes : len;
		*event = ev->event;
		if (n)
			memcpy(buf, ev->bytes, n);
		rc = (ssize_t)n;
		if (!(flags & FI_PEEK))
			free(pop_event(eq));
	}
	pthread_mutex_unlock(&eq->lock);
	return rc;
}

static ssize_t eq_readerr(struct fid_eq *fid, struct fi_eq_err_entry *buf, uint64_t flags)
{
	struct rsfi_eq *eq = (struct rsfi_eq *)fid;
	struct rsfi_fabric *fab = eq->fab;

	pthread_mutex_lock(&eq->lock);
	struct rsfi_event *ev = eq->head;
	if (!ev || !ev->is_err) {
		pthread_mutex_unlock(&eq->lock);
		return -FI_EAGAIN;
	}
	/* From API 1.5 the application may lend a buffer for err_data; before, it points at ours. */
	void *user_data = buf->err_data;
	size_t user_size = buf->err_data_size;
	bool lent = FI_VERSION_GE(fab->fid.api_version, FI_VERSION(1, 5)) && user_size && user_data;
	*buf = ev->err;
	if (lent) {
		buf->err_data_size = ev->err.err_data_size < user_size ? ev->err.err_data_size : user_size;
		memcpy(user_data, ev->data, buf->err_data_size);
		buf->err_data = user_data;
	} else {
		buf->err_data = ev->err.err_data_size ? ev->data : NULL;
	}
	if (!(flags & FI_PEEK)) {
		pop_event(eq);
		free(eq->last_err);
		eq->last_err = ev;
	}
	pthread_mutex_unlock(&eq->lock);
	return sizeof(*buf);
}

static ssize_t eq_write(struct fid_eq *fid, uint32_t event, const void *buf, size_t len, uint64_t flags)
{
	struct rsfi_eq *eq = (struct rsfi_eq *)fid;
	struct rsfi_event *ev;

	(void)flags;
	if (len > EVENT_BYTES || (!buf && len))
		return -FI_EINVAL;
	ev = calloc(1, sizeof(*ev));
	if (!ev)
		return -FI_ENOMEM;
	ev->event = event;
	if (len)
		memcpy(ev->bytes, buf, len);
	ev->nbytes = len;
	queue_event(eq, ev);
	return (ssize_t)len;
}

static ssize_t eq_sread(struct fid_eq *fid, uint32_t *event, void *buf, size_t len, int timeout, uint64_t flags)
{
	struct rsfi_eq *eq = (struct rsfi_eq *)fid;
	int64_t deadline = timeout < 0 ? -1 : rsfi_now_ms() + timeout;
	ssize_t rc;

	while ((rc = eq_read(fid, event, buf, len, flags)) == -FI_EAGAIN) {
		int w = rsfi_wait_slice(eq->epfd, deadline);
		if (w)
			return w;
	}
	return rc;
}

static const char *eq_strerror(struct fid_eq *fid, int prov_errno, const void *err_data, char *buf, size_t len)
{
	struct rsfi_eq *eq = (struct rsfi_eq *)fid;
	static __thread char text[384];
	const char *why = "";

	(void)err_data;
	pthread_mutex_lock(&eq->lock);
	if (eq->last_err && eq->last_err->err.prov_errno == prov_errno)
		why = eq->last_err->why;
	snprintf(text, sizeof(text), "rdmasec: %s%s%s", rsec_strerror(-prov_errno), why[0] ? ": " : "", why);
	pthread_mutex_unlock(&eq->lock);
	if (buf && len) {
		snprintf(buf, len, "%s", text);
		return buf;
	}
	return text;
}

static struct fi_ops_eq eq_ops = {
	.size = sizeof(struct fi_ops_eq),
	.read = eq_read,
	.readerr = eq_readerr,
	.write = eq_write,
	.sread = eq_sread,
	.strerror = eq_strerror,
};

static int eq_close(struct fid *fid)
{
	struct rsfi_eq *eq = (struct rsfi_eq *)fid;

	if (eq->n_peps || eq->eps.n)
		return -FI_EBUSY;
	while (eq->head)
		free(pop_event(eq));
	free(eq->last_err);
	rsfi_epset_free(&eq->eps);
	close(eq->efd);
	close(eq->epfd);
	pthread_mutex_destroy(&eq->lock);
	pthread_mutex_destroy(&eq->progress_lock);
	free(eq);
	return 0;
}

static int eq_control(struct fid *fid, int command, void *arg)
{
	struct rsfi_eq *eq = (struct rsfi_eq *)fid;

	return rsfi_getwait(eq->wait_obj, eq->epfd, command, arg);
}

static struct fi_ops eq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = eq_close,
	.bind = rsfi_no_bind,
	.control = eq_control,
	.ops_open = rsfi_no_ops_open,
	.tostr = rsfi_no_tostr,
	.ops_set = rsfi_no_ops_set,
};

int rsfi_eq_watch(struct rsfi_eq *eq, int fd, bool on)
{
	return rsfi_epoll_watch(eq->epfd, fd, on);
}

int rsfi_eq_add_ep(struct rsfi_eq *eq, struct rsfi_ep *ep)
{
	pthread_mutex_lock(&eq->progress_lock);
	int rc = rsfi_epset_add(&eq->eps, ep);
	pthread_mutex_unlock(&eq->progress_lock);
	return rc;
}

void rsfi_eq_del_ep(struct rsfi_eq *eq, struct rsfi_ep *ep)
{
	pthread_mutex_lock(&eq->progress_lock);
	rsfi_epset_del(&eq->eps, ep);
	pthread_mutex_unlock(&eq->progress_lock);
}

int rsfi_eq_add_pep(struct rsfi_eq *eq, struct rsfi_pep *pep)
{
	int rc = -FI_ENOSPC;

	pthread_mutex_lock(&eq->progress_lock);
	if (eq->n_peps < sizeof(eq->peps) / sizeof(eq->peps[0])) {
		eq->peps[eq->n_peps++] = pep;
		rc = 0;
	}
	pthread_mutex_unlock(&eq->progress_lock);
	return rc;
}

void rsfi_eq_del_pep(struct rsfi_eq *eq, struct rsfi_pep *pep)
{
	pthread_mutex_lock(&eq->progress_lock);
	for (unsigned i = 0; i < eq->n_peps; i++) {
		if (eq->peps[i] == pep) {
			eq->peps[i] = eq->peps[--eq->n_peps];
			break;
		}
	}
	pthread_mutex_unlock(&eq->progress_lock);
}

int rsfi_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr, struct fid_eq **out, void *context)
{
	enum fi_wait_obj wait = attr ? attr->wait_obj : FI_WAIT_UNSPEC;

	if (wait != FI_WAIT_NONE && wait != FI_WAIT_UNSPEC && wait != FI_WAIT_FD)
		return -FI_ENOSYS;
	struct rsfi_eq *eq = calloc(1, sizeof(*eq));
	if (!eq)
		return -FI_ENOMEM;
	eq->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	eq->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (eq->efd < 0 || eq->epfd < 0) {
		if (eq->efd >= 0)
			close(eq->efd);
		if (eq->epfd >= 0)
			close(eq->epfd);
		free(eq);
		return -FI_EMFILE;
	}
	pthread_mutex_init(&eq->lock, NULL);
	pthread_mutex_init(&eq->progress_lock, NULL);
	eq->fab = (struct rsfi_fabric *)fabric;
	eq->wait_obj = wait == FI_WAIT_NONE ? FI_WAIT_NONE : FI_WAIT_FD;
	eq->fid.fid.fclass = FI_CLASS_EQ;
	eq->fid.fid.context = context;
	eq->fid.fid.ops = &eq_fi_ops;
	eq->fid.ops = &eq_ops;
	int rc = rsfi_eq_watch(eq, eq->efd, true);
	if (rc) {
		eq_close(&eq->fid.fid);
		return rc;
	}
	*out = &eq->fid;
	return 0;
}
