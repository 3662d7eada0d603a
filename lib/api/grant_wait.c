/* SPDX-License-Identifier: MIT */
/* rsec_grant_wait: the peer's grant with a tag, waited for up to timeout_ms. */
#include <stdbool.h>

#include "path/grant_table.h"
#include "session/conn.h"

struct grant_wanted {
	uint64_t tag;
	struct rsec_remote_grant *out;
};

static bool grant_arrived(struct rsec_conn *c, void *arg)
{
	struct grant_wanted *w = arg;
	return rsec_gt_remote_take(&c->gt, w->tag, w->out);
}

int rsec_grant_wait(struct rsec_conn *c, uint64_t tag, struct rsec_remote_grant *out, int timeout_ms)
{
	if (!c || !out)
		return RSEC_E_INVAL;
	struct grant_wanted w = { .tag = tag, .out = out };
	return rsec_conn_wait_for(c, grant_arrived, &w, timeout_ms);
}
