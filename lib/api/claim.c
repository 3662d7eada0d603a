/* SPDX-License-Identifier: MIT */
/*
 * rsec_grant_verify and rsec_grant_open: the peer's claim on one of our
 * grants, waited for up to timeout_ms, then checked by path/grant_claim.c.
 */
#include <stdbool.h>

#include "path/grant.h"
#include "session/conn.h"

struct claim_wanted {
	const struct rsec_local_grant *g;
	uint64_t grant_id;
};

static bool claim_arrived(struct rsec_conn *c, void *arg)
{
	(void)c;
	const struct claim_wanted *w = arg;
	return rsec_grant_claim_arrived(w->g, w->grant_id);
}

/* Wait for the peer's claim on g, then revoke g: once checked, nobody may change the bytes. */
static RSEC_MUST_CHECK int wait_claim(struct rsec_conn *c, struct rsec_local_grant *g, uint64_t grant_id,
				      int timeout_ms)
{
	struct claim_wanted w = { .g = g, .grant_id = grant_id };
	RSEC_GUARD(rsec_conn_wait_for(c, claim_arrived, &w, timeout_ms));
	return rsec_conn_settle(c, rsec_grant_claim_settle(&c->path, g, grant_id));
}

int rsec_grant_verify(struct rsec_conn *c, uint64_t grant_id, uint64_t *off, uint64_t *len, int timeout_ms)
{
	if (!c)
		return RSEC_E_INVAL;
	struct rsec_local_grant *g;
	RSEC_GUARD(rsec_conn_settle(c, rsec_grant_verify_begin(&c->path, grant_id, off, len, &g)));
	RSEC_GUARD(wait_claim(c, g, grant_id, timeout_ms));
	return rsec_conn_settle(c, rsec_grant_verify_end(&c->path, g, off, len));
}

int rsec_grant_open(struct rsec_conn *c, uint64_t grant_id, uint64_t *off, uint64_t *len, int timeout_ms)
{
	if (!c)
		return RSEC_E_INVAL;
	struct rsec_local_grant *g;
	int rc = rsec_conn_settle(c, rsec_grant_open_begin(&c->path, grant_id, off, len, &g));
	if (rc != 0)
		return rc < 0 ? rc : 0;
	RSEC_GUARD(wait_claim(c, g, grant_id, timeout_ms));
	return rsec_conn_settle(c, rsec_grant_open_end(&c->path, g, off, len));
}
