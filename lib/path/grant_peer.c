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

#include "base/audit.h"
#include "session/conn.h"
#include "base/sealed.h"
#include "grant.h"

/*
 * Keys for an application's own sealed transfers through long-lived grants
 * (rdmasec-blk): from the session's TLS exporter, never sent. The library's
 * own labels are refused, so no application key equals one of ours.
 */
int rsec_conn_export_key(const struct rsec_conn *c, const char *label, const void *context, size_t context_len,
			 void *out, size_t out_len)
{
	static const char ours[] = "EXPORTER-rdmasec";
	RSEC_ENSURE(c && label && out && (context || !context_len), RSEC_E_INVAL);
	size_t label_len = strlen(label);
	RSEC_ENSURE(label_len > 9 && label_len <= 64 && strncmp(label, "EXPORTER-", 9) == 0 &&
			    strncmp(label, ours, sizeof(ours) - 1) != 0,
		    RSEC_E_INVAL);
	RSEC_ENSURE(out_len >= 16 && out_len <= 64 && context_len <= 64, RSEC_E_INVAL);
	SSL *ssl = rsec_chan_ssl(c->path.chan);
	RSEC_ENSURE(c->phase == PHASE_ESTABLISHED && ssl && SSL_version(ssl) == TLS1_3_VERSION, RSEC_E_AGAIN);
	if (SSL_export_keying_material(ssl, out, out_len, label, label_len, context, context_len,
				       context_len > 0) != 1) {
		OPENSSL_cleanse(out, out_len);
		return RSEC_E_TLS;
	}
	return 0;
}

/*
 * A write claim that came while our data path was stopped, before the peer's
 * REBUILD: made under the keys of the epoch ending, which are still ours. A
 * grant that stayed for the rebuild is checked now (its range out of the
 * peer's reach) and not bound again: it is single use.
 */
static RSEC_MUST_CHECK int claim_while_stopped(struct rsec_conn *c, const struct rsec_msg_verify *v)
{
	int rc = rsec_gt_claim(&c->path.gt, v);
	if (rc == RSEC_E_GRANT)
		return 0; /* revoked with the old data path */
	if (rc < 0)
		return rsec_fault_fail(&c->path.fault, rc, "bad write claim (VERIFY) for one of our grants");
	struct rsec_local_grant *g = rsec_gt_find(&c->path.gt, v->grant_id);
	if (g && !g->sealed) {
		g->claim_ok = rsec_grant_check_claim(c, g, &rc);
		g->claim_checked = true;
		g->rebind = false;
	}
	return 0;
}

int rsec_grant_on_msg(struct rsec_conn *c, const struct rsec_msg *m)
{
	int rc;
	/* During a rebuild, until the peer's REBUILD, these name grants of the old data path: dropped,
	 * but for a claim on one of ours. After it (REBUILD_CONNECTED): grants bound again on the new one. */
	if (rsec_rebuilding(&c->path) && c->path.rb.state != REBUILD_CONNECTED)
		return m->type == RSEC_MSG_VERIFY && rsec_gt_ours(&c->path.gt, m->u.verify.grant_id)
			       ? claim_while_stopped(c, &m->u.verify)
			       : 0;
	switch (m->type) {
	case RSEC_MSG_REVOKE:
		rsec_gt_remote_revoke(&c->path.gt, m->u.revoke.grant_id);
		rsec_sealed_peer_forget(c, m->u.revoke.grant_id);
		return 0;
	case RSEC_MSG_VERIFY:
		if (!rsec_gt_ours(&c->path.gt, m->u.verify.grant_id)) {
			rc = rsec_gt_pending_mac(&c->path.gt, &m->u.verify);
			return rc < 0 ? rsec_fault_fail(&c->path.fault, rc, "unexpected VERIFY for a grant of the peer's") : 0;
		}
		rc = rsec_gt_claim(&c->path.gt, &m->u.verify);
		if (rc == RSEC_E_GRANT)
			return 0; /* revoked or expired meanwhile: its verifier got RSEC_E_GRANT */
		return rc < 0 ? rsec_fault_fail(&c->path.fault, rc, "bad write claim (VERIFY) for one of our grants") : 0;
	default:
		rc = rsec_peer_grant_arrived(c, &m->u.grant);
		if (rc == RSEC_E_PROTO)
			return rsec_fault_fail(&c->path.fault, rc, "GRANT %s a key id", m->u.grant.has_key_id ? "with" : "without");
		if (rc < 0)
			return rsec_fault_fail(&c->path.fault, rc, "cannot make the keys of a GRANT (key id %#llx): %s",
					      (unsigned long long)m->u.grant.key_id, rsec_strerror(rc));
		if (rsec_gt_peer_stale(&c->path.gt, m->u.grant.grant_id) && rsec_rebind_possible(c)) {
			rc = rsec_gt_remote_rebind(&c->path.gt, &m->u.grant);
			return rc < 0 ? rsec_fault_fail(&c->path.fault, rc, "bad GRANT for a grant bound again after a rebuild") : 0;
		}
		rc = rsec_gt_remote_add(&c->path.gt, &m->u.grant);
		if (rc == RSEC_E_LIMIT)
			return rsec_fault_fail(&c->path.fault, rc, "peer holds more than %u grants open", RSEC_MAX_GRANTS);
		return rc < 0 ? rsec_fault_fail(&c->path.fault, rc, "GRANT with one of our own grant ids or another lane's") : 0;
	}
}
