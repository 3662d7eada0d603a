/* SPDX-License-Identifier: MIT */
/*
 * How long an event loop may poll its completion queues before it sleeps:
 * an adaptive window, as KVM's halt polling sizes its own. A sleep that an
 * event ended within the longest window says a window that long would have
 * caught it: the window grows. A sleep longer than that (the peer went quiet,
 * or answers slower than polling pays) shrinks it, down to no polling at all;
 * an idle loop never polls. Pure arithmetic: the loop measures and polls.
 */
#ifndef RSEC_TOOLS_BUSY_POLL_H
#define RSEC_TOOLS_BUSY_POLL_H

#include <stdbool.h>
#include <stdint.h>

#define BUSY_POLL_MAX_US 10000u /* the longest window a configuration may ask for */
/*
 * Polling pays while a wait is for one or a few answers: it gets them sooner
 * than a sleep would. With more in flight a wake-up finds several done, and
 * the CPU a poll holds is the one a software device (rxe) and the peer need:
 * 4 KiB reads at depth 32 ran as fast without it, on a sixth less CPU.
 */
#define BUSY_POLL_INFLIGHT_MAX 4u

struct busy_poll {
	uint32_t max_us; /* 0: never poll */
	uint32_t us;     /* the window now: 0 or 1/8 of max_us ... max_us */
};

void busy_poll_init(struct busy_poll *b, uint32_t max_us);

/* The window for the next wait, in microseconds (0: sleep at once). */
static inline uint32_t busy_poll_window(const struct busy_poll *b)
{
	return b->us;
}

/* Whether a wait with inflight commands outstanding polls first (and is measured). */
static inline bool busy_poll_pays(const struct busy_poll *b, unsigned inflight)
{
	return b->max_us && inflight > 0 && inflight <= BUSY_POLL_INFLIGHT_MAX;
}

/* A wait's end, waited_us after it began (its window included), by an event (woken) or by its timeout. */
void busy_poll_waited(struct busy_poll *b, uint64_t waited_us, bool woken);

#endif
