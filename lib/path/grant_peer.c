/* SPDX-License-Identifier: MIT */
/*
 * The peer's side of grants: its GRANT, REVOKE and VERIFY messages, waiting
 * for one of its grants, and verified and sealed transfers through them.
 * Grant ids carry their issuer in the top bit, so a VERIFY names our grant
 * (a write claim, checked in grant_claim.c) or the peer's (a read MAC or a
 * sealed READ grant's nonce prefix, kept with it).
 */
#include <stdlib.h>
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
	RSEC_ENSURE(c->phase == PHASE_ESTABLISHED && c->ssl && SSL_version(c->ssl) == TLS1_3_VERSION, RSEC_E_AGAIN);
	if (SSL_export_keying_material(c->ssl, out, out_len, label, label_len, context, context_len,
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
	int rc = rsec_gt_claim(&c->gt, v);
	if (rc == RSEC_E_GRANT)
		return 0; /* revoked with the old data path */
	if (rc < 0)
		return rsec_conn_fail(c, rc, "bad write claim (VERIFY) for one of our grants");
	struct rsec_local_grant *g = rsec_gt_find(&c->gt, v->grant_id);
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
	if (rsec_rebuilding(c) && c->rb.state != REBUILD_CONNECTED)
		return m->type == RSEC_MSG_VERIFY && rsec_gt_ours(&c->gt, m->u.verify.grant_id)
			       ? claim_while_stopped(c, &m->u.verify)
			       : 0;
	switch (m->type) {
	case RSEC_MSG_REVOKE:
		rsec_gt_remote_revoke(&c->gt, m->u.revoke.grant_id);
		rsec_sealed_peer_forget(c, m->u.revoke.grant_id);
		return 0;
	case RSEC_MSG_VERIFY:
		if (!rsec_gt_ours(&c->gt, m->u.verify.grant_id)) {
			rc = rsec_gt_pending_mac(&c->gt, &m->u.verify);
			return rc < 0 ? rsec_conn_fail(c, rc, "unexpected VERIFY for a grant of the peer's") : 0;
		}
		rc = rsec_gt_claim(&c->gt, &m->u.verify);
		if (rc == RSEC_E_GRANT)
			return 0; /* revoked or expired meanwhile: its verifier got RSEC_E_GRANT */
		return rc < 0 ? rsec_conn_fail(c, rc, "bad write claim (VERIFY) for one of our grants") : 0;
	default:
		if (rsec_gt_peer_stale(&c->gt, m->u.grant.grant_id) && rsec_rebind_possible(c)) {
			rc = rsec_gt_remote_rebind(&c->gt, &m->u.grant);
			return rc < 0 ? rsec_conn_fail(c, rc, "bad GRANT for a grant bound again after a rebuild") : 0;
		}
		rc = rsec_gt_remote_add(&c->gt, &m->u.grant);
		if (rc == RSEC_E_LIMIT)
			return rsec_conn_fail(c, rc, "peer holds more than %u grants open", RSEC_MAX_GRANTS);
		return rc < 0 ? rsec_conn_fail(c, rc, "GRANT with one of our own grant ids or another lane's") : 0;
	}
}

int rsec_write_verified(struct rsec_conn *c, const struct rsec_remote_grant *g, uint64_t off, const void *buf,
			size_t len, int timeout_ms)
{
	RSEC_GUARD(rsec_write(c, g, off, buf, len, timeout_ms));
	uint8_t mac[RSEC_SEAL_DATAMAC_LEN];
	int rc = rsec_seal_data_mac(&c->seal, c->is_server, g->id, off, buf, len, mac);
	if (rc == 0)
		rc = rsec_grant_send_verify(c, g->id, off, len, RSEC_WIRE_MAC_HMAC_SHA256, mac, sizeof(mac));
	OPENSSL_cleanse(mac, sizeof(mac));
	if (rc < 0)
		return rsec_conn_fail(c, rc, "cannot send VERIFY");
	return 0;
}

int rsec_read_verified(struct rsec_conn *c, const struct rsec_remote_grant *g, void *buf, size_t cap,
		       int timeout_ms)
{
	if (!c || !g || !buf)
		return RSEC_E_INVAL;
	if (!(g->access & RSEC_GRANT_VERIFIED))
		return RSEC_E_GRANT;
	if (cap < g->len)
		return RSEC_E_RANGE;
	/* Bound again after a rebuild, its MAC came again under the new keys. */
	struct rsec_remote_grant now;
	if (rsec_gt_resolve(&c->gt, g, &now))
		g = &now;
	/* Whatever fails, unverified bytes never stay in buf. */
	int rc = rsec_read(c, g, 0, buf, g->len, timeout_ms);
	uint8_t mac[RSEC_SEAL_DATAMAC_LEN];
	if (rc == 0)
		rc = rsec_seal_data_mac(&c->seal, !c->is_server, g->id, 0, buf, g->len, mac);
	if (rc < 0) {
		OPENSSL_cleanse(buf, g->len);
		return rc;
	}
	bool ok = rsec_seal_mac_equal(mac, g->mac);
	OPENSSL_cleanse(mac, sizeof(mac));
	rsec_grant_audit_remote(c, RSEC_AUDIT_VERIFIED_READ, g, ok ? "ok" : "mismatch",
				ok ? NULL : "bytes differ from what the granter exposed; wiped");
	if (!ok) {
		OPENSSL_cleanse(buf, g->len);
		c->data_mac_failures++;
		return RSEC_E_MAC;
	}
	return 0;
}

int rsec_write_sealed(struct rsec_conn *c, const struct rsec_remote_grant *g, uint64_t off, const void *buf,
		      size_t len, int timeout_ms)
{
	if (!c || !g || !buf || !len)
		return RSEC_E_INVAL;
	RSEC_GUARD(rsec_conn_require_established(c, false));
	struct rsec_sealed_write *w;
	RSEC_GUARD(rsec_sealed_write_begin(c, g, off, len, &w));
	size_t total = rsec_sealed_len(len);
	uint8_t *stage = malloc(total);
	if (!stage) {
		*w = (struct rsec_sealed_write){ 0 };
		return RSEC_E_NOMEM;
	}
	memcpy(stage, buf, len);
	int rc = rsec_sealed_write_seal(c, w, stage); /* frees w if it fails */
	if (rc == 0) {
		w->state = SEALED_WRITE_POSTED;
		rc = rsec_onesided_sealed(c, g, off, stage, total, timeout_ms, RSEC_OP_WRITE);
		if (rc == 0 && w->state != SEALED_WRITE_POSTED) /* the grant or the connection went meanwhile: no claim */
			rc = c->phase == PHASE_CLOSED ? c->close_code : RSEC_E_GRANT;
		if (rc < 0)
			*w = (struct rsec_sealed_write){ 0 };
	}
	OPENSSL_cleanse(stage, total);
	free(stage);
	RSEC_GUARD(rc);
	return rsec_sealed_write_claim(c, w);
}

int rsec_read_sealed(struct rsec_conn *c, const struct rsec_remote_grant *g, void *buf, size_t cap, size_t *len,
		     int timeout_ms)
{
	if (!c || !g || !buf || !len)
		return RSEC_E_INVAL;
	*len = 0;
	uint64_t plain_len;
	if ((g->access & (RSEC_GRANT_SEALED | RSEC_ACCESS_READ)) != (RSEC_GRANT_SEALED | RSEC_ACCESS_READ) ||
	    !rsec_sealed_plain_len(g->len, &plain_len))
		return RSEC_E_GRANT;
	if (cap < g->len)
		return RSEC_E_RANGE;
	int rc = rsec_onesided_sealed(c, g, 0, buf, g->len, timeout_ms, RSEC_OP_READ);
	if (rc < 0) {
		OPENSSL_cleanse(buf, g->len); /* unopened bytes never stay */
		return rc;
	}
	return rsec_sealed_read_open(c, g, buf, len);
}
