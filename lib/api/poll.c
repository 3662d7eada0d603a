/* SPDX-License-Identifier: MIT */
/* rsec_poll: the posted operations' completions, waiting for the first up to timeout_ms. */
#include <stdbool.h>

#include "session/conn.h"

static bool have_completions(struct rsec_conn *c, void *arg)
{
	(void)arg;
	return c->ops.done_n > 0;
}

int rsec_poll(struct rsec_conn *c, struct rsec_wc *wc, unsigned max, int timeout_ms)
{
	if (!c || (!wc && max))
		return RSEC_E_INVAL;
	int rc = 0;
	if (!have_completions(c, NULL) && c->phase != PHASE_CLOSED)
		rc = rsec_conn_wait_for(c, have_completions, NULL, timeout_ms);
	unsigned n = rsec_onesided_reap(c, wc, max);
	if (n)
		return (int)n;
	if (c->phase == PHASE_CLOSED)
		return c->close_code;
	return rc == RSEC_E_TIMEOUT || rc == RSEC_E_AGAIN ? 0 : rc;
}
