/* SPDX-License-Identifier: MIT */
/*
 * Faults of the path layer, settled. path/ records the first fault a queue
 * pair's engine finds (path/fault.h) and returns its code; every session and
 * api call into path/ hands the result to rsec_conn_settle once the path call
 * has unwound, and only here does a fault become a rebuild or a close.
 */
#include "conn.h"

int rsec_conn_settle(struct rsec_conn *c, int rc)
{
	/* Settling may find another fault (a grant the device will not free while the path stops): it settles next. */
	while (rsec_fault_pending(&c->path.fault)) {
		struct rsec_fault f = rsec_fault_take(&c->path.fault);
		if (f.kind == RSEC_FAULT_DATA) {
			int r = rsec_rebuild_fault(c, f.why, f.code, "%s", f.text);
			rc = r < 0 ? r : 0; /* rebuilt: what the caller did is not lost, only delayed */
		} else if (rsec_chan_gone(f.code) && (rsec_conn_last_words(c), c->path.phase == PHASE_CLOSED)) {
			rc = c->path.close_code; /* the peer said why first */
		} else if (rsec_chan_gone(f.code) && !c->lane && c->rs.parked) {
			rc = 0; /* the channel went: the session waits to resume (resume.c) */
		} else {
			rc = rsec_conn_fail(c, f.code, "%s", f.text);
		}
	}
	return rc;
}

int rsec_conn_poll_data(struct rsec_conn *c)
{
	RSEC_GUARD(rsec_conn_settle(c, rsec_data_poll(&c->path)));
	if (!rsec_rebuilding(&c->path))
		return 0;
	/* A rebuild's binds may all have completed: its REBUILD_READY goes, and the rebuild may end here. */
	RSEC_GUARD(rsec_rebuild_binds_settled(c));
	if (rsec_rebuilding(&c->path))
		return 0;
	/* Over: what waited for it (frames to send again, a queued message) goes now, not at the next wake-up. */
	return rsec_conn_settle(c, rsec_data_poll(&c->path));
}
