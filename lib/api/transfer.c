/* SPDX-License-Identifier: MIT */
/*
 * The one-sided calls that wait: rsec_write and rsec_read, and the verified
 * and sealed transfers through the peer's grants. Each posts its operation
 * through path/onesided.c's steps, runs the connection until it completed,
 * then checks, opens or claims what moved (path/grant*.c, sealed_post.c).
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "base/sealed.h"
#include "path/grant.h"
#include "session/conn.h"

static bool waiter_done(struct rsec_conn *c, void *arg)
{
	(void)arg;
	return c->path.ops.waiter_done;
}

/* buf staged or registered for the call, one operation, waited for. */
static RSEC_MUST_CHECK int one_sided(struct rsec_conn *c, const struct rsec_remote_grant *g, uint64_t off, void *buf,
				     size_t len, int timeout_ms, enum rsec_op op, bool sealed_ok)
{
	if (!c)
		return RSEC_E_INVAL;
	bool posted;
	int waited = rsec_conn_settle(c, rsec_onesided_start(&c->path, g, off, buf, len, op, sealed_ok, &posted));
	if (waited < 0 && !posted)
		return waited;
	if (waited == 0) {
		waited = rsec_conn_wait_for(c, waiter_done, NULL, timeout_ms);
		if (c->path.ops.waiter_done)
			return rsec_onesided_end(&c->path, buf, len, op);
	}
	/* Whatever stopped the wait, the connection ends here, its QP in the error state first; buf
	 * (or the stage) is ours again once the device let go of it: flushed, or the QP destroyed. */
	int rc = rsec_conn_fail(c, waited == RSEC_E_AGAIN || waited == 0 ? RSEC_E_TIMEOUT : waited,
				"one-sided %s of %zu bytes did not complete in %d ms; queue pair moved to error",
				op == RSEC_OP_WRITE ? "WRITE" : "READ", len, timeout_ms);
	if (!rsec_onesided_drain(&c->path))
		rsec_conn_teardown_rdma(c);
	rsec_onesided_unstage(&c->path, buf, len, op, rc);
	return rc;
}

int rsec_write(struct rsec_conn *c, const struct rsec_remote_grant *g, uint64_t off, const void *buf, size_t len,
	       int timeout_ms)
{
	return one_sided(c, g, off, (void *)(uintptr_t)buf, len, timeout_ms, RSEC_OP_WRITE, false);
}

int rsec_read(struct rsec_conn *c, const struct rsec_remote_grant *g, uint64_t off, void *buf, size_t len,
	      int timeout_ms)
{
	return one_sided(c, g, off, buf, len, timeout_ms, RSEC_OP_READ, false);
}

int rsec_write_verified(struct rsec_conn *c, const struct rsec_remote_grant *g, uint64_t off, const void *buf,
			size_t len, int timeout_ms)
{
	if (!c || !g)
		return RSEC_E_INVAL;
	RSEC_GUARD(rsec_path_usable(&c->path, false)); /* the grant's keys are looked up under set-up's features */
	struct rsec_grant_keys k;
	RSEC_GUARD(rsec_peer_grant_keys(&c->path, g->id, &k));
	int rc = rsec_write(c, g, off, buf, len, timeout_ms);
	if (rc < 0) {
		rsec_grant_keys_wipe(&k);
		return rc;
	}
	uint8_t mac[RSEC_SEAL_DATAMAC_LEN];
	rc = rsec_grant_keys_mac(&k, &c->path.seal, c->is_server, g->id, off, buf, len, mac);
	rsec_grant_keys_wipe(&k);
	if (rc == 0)
		rc = rsec_conn_settle(c, rsec_grant_send_verify(&c->path, g->id, off, len, RSEC_WIRE_MAC_HMAC_SHA256,
								mac, sizeof(mac)));
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
	if (rsec_gt_resolve(&c->path.gt, g, &now))
		g = &now;
	/* Its keys now: the grant may be revoked while the READ is waited for. */
	RSEC_GUARD(rsec_path_usable(&c->path, false));
	struct rsec_grant_keys k;
	RSEC_GUARD(rsec_peer_grant_keys(&c->path, g->id, &k));
	/* Whatever fails, unverified bytes never stay in buf. */
	int rc = rsec_read(c, g, 0, buf, g->len, timeout_ms);
	uint8_t mac[RSEC_SEAL_DATAMAC_LEN];
	if (rc == 0)
		rc = rsec_grant_keys_mac(&k, &c->path.seal, !c->is_server, g->id, 0, buf, g->len, mac);
	rsec_grant_keys_wipe(&k);
	if (rc < 0) {
		OPENSSL_cleanse(buf, g->len);
		return rc;
	}
	bool ok = rsec_seal_mac_equal(mac, g->mac);
	OPENSSL_cleanse(mac, sizeof(mac));
	rsec_grant_audit_remote(&c->path, RSEC_AUDIT_VERIFIED_READ, g, ok ? "ok" : "mismatch",
				ok ? NULL : "bytes differ from what the granter exposed; wiped");
	if (!ok) {
		OPENSSL_cleanse(buf, g->len);
		c->path.data_mac_failures++;
		return RSEC_E_MAC;
	}
	return 0;
}

int rsec_write_sealed(struct rsec_conn *c, const struct rsec_remote_grant *g, uint64_t off, const void *buf,
		      size_t len, int timeout_ms)
{
	if (!c || !g || !buf || !len)
		return RSEC_E_INVAL;
	RSEC_GUARD(rsec_path_usable(&c->path, false));
	struct rsec_sealed_write *w;
	RSEC_GUARD(rsec_sealed_write_begin(&c->path, g, off, len, &w));
	size_t total = rsec_sealed_len(len);
	uint8_t *stage = malloc(total);
	if (!stage) {
		*w = (struct rsec_sealed_write){ 0 };
		return RSEC_E_NOMEM;
	}
	memcpy(stage, buf, len);
	int rc = rsec_sealed_write_seal(&c->path, w, stage); /* frees w if it fails */
	if (rc == 0) {
		w->state = SEALED_WRITE_POSTED;
		rc = one_sided(c, g, off, stage, total, timeout_ms, RSEC_OP_WRITE, true);
		/* The grant or the connection went meanwhile: no claim. */
		if (rc == 0 && w->state != SEALED_WRITE_POSTED)
			rc = c->path.phase == PHASE_CLOSED ? c->path.close_code : RSEC_E_GRANT;
		if (rc < 0)
			*w = (struct rsec_sealed_write){ 0 };
	}
	OPENSSL_cleanse(stage, total);
	free(stage);
	RSEC_GUARD(rc);
	return rsec_conn_settle(c, rsec_sealed_write_claim(&c->path, w));
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
	int rc = one_sided(c, g, 0, buf, g->len, timeout_ms, RSEC_OP_READ, true);
	if (rc < 0) {
		OPENSSL_cleanse(buf, g->len); /* unopened bytes never stay */
		return rc;
	}
	return rsec_sealed_read_open(&c->path, g, buf, len);
}
