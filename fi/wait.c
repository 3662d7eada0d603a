/* SPDX-License-Identifier: MIT */
/*
 * What CQs and EQs share: the set of endpoints their reads drive, the epoll
 * fd behind FI_WAIT_FD and the sliced wait of fi_cq_sread and fi_eq_sread.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <time.h>

#include "rsfi.h"

#define RSFI_WAIT_SLICE_MS 100

int64_t rsfi_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t rsfi_coarse_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int rsfi_epoll_watch(int epfd, int fd, bool on)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	if (fd < 0)
		return -FI_EINVAL;
	if (epoll_ctl(epfd, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, fd, &ev) != 0 && errno != EEXIST && errno != ENOENT)
		return -FI_EIO;
	return 0;
}

int rsfi_wait_slice(int epfd, int64_t deadline_ms)
{
	int64_t left = deadline_ms < 0 ? RSFI_WAIT_SLICE_MS : deadline_ms - rsfi_now_ms();
	struct epoll_event ev;

	if (left <= 0)
		return -FI_EAGAIN;
	/* Short slices: a connection may need driving before its fd says so. */
	if (epoll_wait(epfd, &ev, 1, left > RSFI_WAIT_SLICE_MS ? RSFI_WAIT_SLICE_MS : (int)left) < 0 && errno != EINTR)
		return -FI_EIO;
	return 0;
}

int rsfi_getwait(enum fi_wait_obj wait_obj, int epfd, int command, void *arg)
{
	if (command != FI_GETWAIT)
		return -FI_ENOSYS;
	if (wait_obj != FI_WAIT_FD || !arg)
		return -FI_ENODATA;
	*(int *)arg = epfd;
	return 0;
}

int rsfi_epset_add(struct rsfi_epset *s, struct rsfi_ep *ep)
{
	for (unsigned i = 0; i < s->n; i++)
		if (s->v[i] == ep)
			return 0;
	if (s->n == s->cap) {
		unsigned cap = s->cap ? 2 * s->cap : 16;
		struct rsfi_ep **v = realloc(s->v, cap * sizeof(*v));
		if (!v)
			return -FI_ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = ep;
	return 0;
}

void rsfi_epset_del(struct rsfi_epset *s, struct rsfi_ep *ep)
{
	for (unsigned i = 0; i < s->n; i++) {
		if (s->v[i] == ep) {
			s->v[i] = s->v[--s->n];
			return;
		}
	}
}

void rsfi_epset_free(struct rsfi_epset *s)
{
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}
