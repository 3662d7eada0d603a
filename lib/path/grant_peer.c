/* SPDX-License-Identifier: MIT */
/*
 * The peer's side of grants: its GRANT, REVOKE and VERIFY messages (the
 * verified and sealed transfers through its grants: api/transfer.c).
 * Grant ids carry their issuer in the top bit, so a VERIFY names our grant
 * (a write claim, checked in grant_claim.c) or the peer's (a read MAC or a
 * sealed READ grant's nonce prefix, kept with it).
 */
#include <string.h>

#include <openssl/crypto.h>

#include "base/errtext.h"
#include "grant.h"
#include "sealed_post.h"


/*
 * A write claim that came while our data path was stopped, before the peer's
 * REBUILD: made under the keys of the epoch ending, which are still ours. A
 * grant that stayed for the rebuild is checked now (its range out of the
 * peer's reach) and not bound again: it is single use.
 */
static RSEC_MUST_CHECK int claim_while_stopped(struct rsec_path *path, const struct rsec_msg_verify *v)
{
	int rc = rsec_gt_claim(&path->gt, v);
	if (rc == RSEC_E_GRANT)
		return 0; /* revoked with the old data path */
	if (rc < 0)
		return rsec_fault_fail(&path->fault, rc, "bad write claim (VERIFY) for one of our grants");
	struct rsec_local_grant *g = rsec_gt_find(&path->gt, v->grant_id);
	if (g && !g->sealed) {
		g->claim_ok = rsec_grant_check_claim(path, g, &rc);
		g->claim_checked = true;
		g->rebind = false;
	}
	return 0;
}

int rsec_grant_on_msg(struct rsec_path *path, const struct rsec_msg *m)
{
	int rc;
	/* During a rebuild, until the peer's REBUILD, these name grants of the old data path: dropped,
	 * but for a claim on one of ours. After it (REBUILD_CONNECTED): grants bound again on the new one. */
	if (rsec_rebuilding(path) && path->rb.state != REBUILD_CONNECTED)
		return m->type == RSEC_MSG_VERIFY && rsec_gt_ours(&path->gt, m->u.verify.grant_id)
			       ? claim_while_stopped(path, &m->u.verify)
			       : 0;
	switch (m->type) {
	case RSEC_MSG_REVOKE:
		rsec_gt_remote_revoke(&path->gt, m->u.revoke.grant_id);
		rsec_sealed_peer_forget(path, m->u.revoke.grant_id);
		return 0;
	case RSEC_MSG_VERIFY:
		if (!rsec_gt_ours(&path->gt, m->u.verify.grant_id)) {
			rc = rsec_gt_pending_mac(&path->gt, &m->u.verify);
			return rc < 0 ? rsec_fault_fail(&path->fault, rc, "unexpected VERIFY for a grant of the peer's")
				      : 0;
		}
		rc = rsec_gt_claim(&path->gt, &m->u.verify);
		if (rc == RSEC_E_GRANT)
			return 0; /* revoked or expired meanwhile: its verifier got RSEC_E_GRANT */
		return rc < 0 ? rsec_fault_fail(&path->fault, rc, "bad write claim (VERIFY) for one of our grants") : 0;
	default:
		rc = rsec_peer_grant_arrived(path, &m->u.grant);
		if (rc == RSEC_E_PROTO)
			return rsec_fault_fail(&path->fault, rc, "GRANT %s a key id",
					       m->u.grant.has_key_id ? "with" : "without");
		if (rc < 0)
			return rsec_fault_fail(&path->fault, rc, "cannot make the keys of a GRANT (key id %#llx): %s",
					      (unsigned long long)m->u.grant.key_id, rsec_error_text(rc));
		if (rsec_gt_peer_stale(&path->gt, m->u.grant.grant_id) && path->cfg.rebinds) {
			rc = rsec_gt_remote_rebind(&path->gt, &m->u.grant);
			return rc < 0 ? rsec_fault_fail(&path->fault, rc,
							"bad GRANT for a grant bound again after a rebuild")
				      : 0;
		}
		rc = rsec_gt_remote_add(&path->gt, &m->u.grant);
		if (rc == RSEC_E_LIMIT)
			return rsec_fault_fail(&path->fault, rc, "peer holds more than %u grants open",
					       RSEC_MAX_GRANTS);
		return rc < 0 ? rsec_fault_fail(&path->fault, rc,
						"GRANT with one of our own grant ids or another lane's")
			      : 0;
	}
}
