/* SPDX-License-Identifier: MIT */
/*
 * Grants: rsec_grant and rsec_revoke over path/grant.c's steps, each fault
 * they found settled before the call returns; rsec_grant_wait, the peer's
 * grant with a tag, waited for up to timeout_ms.
 */
#include <stdbool.h>

#include "path/grant_table.h"
#include "session/conn.h"

int rsec_grant(struct rsec_conn *c, struct rsec_region *r, size_t off, size_t len, unsigned access,
	       uint32_t ttl_ms, uint64_t tag, uint64_t *grant_id)
{
	if (!c)
		return RSEC_E_INVAL;
	return rsec_conn_settle(c, rsec_grant_issue(&c->path, r, off, len, access, ttl_ms, tag, grant_id));
}

int rsec_revoke(struct rsec_conn *c, uint64_t grant_id)
{
	if (!c)
		return RSEC_E_INVAL;
	return rsec_conn_settle(c, rsec_grant_revoke(&c->path, grant_id));
}

struct grant_wanted {
	uint64_t tag;
	struct rsec_remote_grant *out;
};

static bool grant_arrived(struct rsec_conn *c, void *arg)
{
	struct grant_wanted *w = arg;
	return rsec_gt_remote_take(&c->path.gt, w->tag, w->out);
}

int rsec_grant_wait(struct rsec_conn *c, uint64_t tag, struct rsec_remote_grant *out, int timeout_ms)
{
	if (!c || !out)
		return RSEC_E_INVAL;
	struct grant_wanted w = { .tag = tag, .out = out };
	return rsec_conn_wait_for(c, grant_arrived, &w, timeout_ms);
}
