// SPDX-License-Identifier: MIT
#include "busy_poll.h"

void busy_poll_init(struct busy_poll *b, uint32_t max_us)
{
	*b = (struct busy_poll){ .max_us = max_us < BUSY_POLL_MAX_US ? max_us : BUSY_POLL_MAX_US };
}

static uint32_t first_window(const struct busy_poll *b)
{
	return b->max_us / 8 ? b->max_us / 8 : b->max_us;
}

void busy_poll_waited(struct busy_poll *b, uint64_t waited_us, bool woken)
{
	if (!b->max_us)
		return;
	if (woken && waited_us <= b->max_us) {
		/* A window of (at most) max_us would have caught this event without the sleep. */
		uint32_t grown = b->us ? b->us * 2 : first_window(b);
		b->us = grown < b->max_us ? grown : b->max_us;
	} else {
		/* Quiet for longer than polling may spend: poll half as long, and below the first window not at all. */
		b->us /= 2;
		if (b->us < first_window(b))
			b->us = 0;
	}
}
