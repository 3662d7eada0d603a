/* SPDX-License-Identifier: MIT */
/*
 * Long sessions get fresh keys (docs/protocol.md, "Rekeying"): each queue
 * pair renews its message keys from a new X25519 exchange over the control
 * channel at least every rekey_s seconds and rekey_bytes bytes, on the same
 * queue pair and without losing a frame:
 *
 *   offerer                               answerer
 *   REKEY(epoch, gen, pub)  ------------>  S_gen; receives under gen too
 *                          <------------  REKEY_REPLY(epoch, gen, pub)
 *   S_gen; seals and receives under gen
 *   REKEY_DONE(epoch, gen)  ------------>  seals under gen
 *
 * Neither side seals under keys the other cannot open yet, and each frame's
 * phase byte names its key, so frames crossing the switch open under the
 * old one. Both offering at once: the client's offer wins, the server
 * answers it and drops its own. A rebuild (a new epoch) starts a new chain
 * from the exporter; messages of an exchange it overtook are dropped.
 */
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>

#include "base/errtext.h"
#include "conn.h"
#include "ctrl.h"

/* What rekey_bytes counts: messages both ways, and the one-sided transfers we made (the peer counts its own). */
static uint64_t bytes_moved(const struct rsec_conn *c)
{
	return c->path.stats.bytes_sent + c->path.stats.bytes_received + c->path.onesided_bytes;
}

static void drop_exchange(struct rsec_rekey *rk)
{
	EVP_PKEY_free(rk->priv); /* frees (and cleanses) the private key */
	rk->priv = NULL;
	OPENSSL_cleanse(rk->next, sizeof(rk->next));
	rk->state = REKEY_IDLE;
}

/* A secret a newer one replaces stays for a while: work begun under it may still need its keys. */
static void keep(struct rsec_rekey *rk, uint32_t epoch, uint32_t gen,
		 const uint8_t secret[static RSEC_REKEY_SECRET_LEN])
{
	struct rsec_rekey_kept *last = &rk->kept[RSEC_REKEY_KEPT - 1];
	OPENSSL_cleanse(last, sizeof(*last));
	memmove(&rk->kept[1], &rk->kept[0], sizeof(rk->kept) - sizeof(rk->kept[0]));
	rk->kept[0] = (struct rsec_rekey_kept){ .used = true, .epoch = epoch, .gen = gen };
	memcpy(rk->kept[0].secret, secret, RSEC_REKEY_SECRET_LEN);
}

void rsec_rekey_forget(struct rsec_conn *c)
{
	drop_exchange(&c->path.rk);
	OPENSSL_cleanse(c->path.rk.secret, sizeof(c->path.rk.secret));
	OPENSSL_cleanse(c->path.rk.kept, sizeof(c->path.rk.kept));
	c->path.rk.have_secret = false;
}

/*
 * A rebuild made new keys from the exporter (generation 0 of its epoch): a
 * chain of the old epoch ends. Its last secrets are kept; an answered
 * exchange's too, since the offerer may have sealed under it already.
 */
static void follow_epoch(struct rsec_conn *c)
{
	struct rsec_rekey *rk = &c->path.rk;
	if (rk->epoch == c->path.rb.epoch && (rk->since_ms || rk->have_secret))
		return;
	if (rk->have_secret)
		keep(rk, rk->epoch, rk->gen, rk->secret);
	if (rk->state == REKEY_ANSWERED)
		keep(rk, rk->epoch, rk->gen + 1, rk->next);
	drop_exchange(rk);
	OPENSSL_cleanse(rk->secret, sizeof(rk->secret));
	rk->have_secret = false;
	rk->epoch = c->path.rb.epoch;
	rk->gen = 0;
	rk->since_ms = rsec_now_ms();
	rk->bytes_at = bytes_moved(c);
}

/* S_gen of the current epoch's chain, made from the exporter the first time. */
static RSEC_MUST_CHECK int have_secret(struct rsec_conn *c)
{
	if (c->path.rk.have_secret)
		return 0;
	RSEC_GUARD(rsec_rekey_first(rsec_chan_ssl(c->path.chan), c->lane, c->path.rk.epoch, c->path.rk.secret));
	c->path.rk.have_secret = true;
	return 0;
}

int rsec_rekey_begin(struct rsec_conn *c)
{
	follow_epoch(c);
	return have_secret(c);
}

static uint8_t phase_of(uint32_t gen)
{
	return (uint8_t)gen;
}

/* Take generation gen's message keys for receiving, sending, or both. */
static RSEC_MUST_CHECK int install(struct rsec_conn *c, const uint8_t secret[static RSEC_REKEY_SECRET_LEN],
				  uint32_t gen, bool rx, bool tx)
{
	uint8_t keys[RSEC_SEAL_SECRET_LEN];
	int rc = rsec_rekey_data_secret(secret, keys);
	if (rc == 0 && rx)
		rc = rsec_seal_next_rx(&c->path.seal, keys, c->aead, phase_of(gen));
	if (rc == 0 && tx)
		rc = rsec_seal_next_tx(&c->path.seal, keys, c->aead, phase_of(gen));
	OPENSSL_cleanse(keys, sizeof(keys));
	return rc;
}

/* Why a rekey was made (the audit record's reason). */
#define WHY_TIME "rekey_s passed"
#define WHY_BYTES "rekey_bytes reached"
#define WHY_ASKED "requested"
#define WHY_PEER "the peer offered"

/* The audit record of a finished rekey: the new phase, and why it was made. */
static void audit_rekey(struct rsec_conn *c, const char *why)
{
	char reason[128];
	snprintf(reason, sizeof(reason), "phase %u (generation %u, epoch %u): %s", (unsigned)phase_of(c->path.rk.gen),
		 (unsigned)c->path.rk.gen, (unsigned)c->path.rk.epoch, why ? why : WHY_ASKED);
	rsec_conn_audit(c, RSEC_AUDIT_REKEY, "ok", reason, NULL);
}

/* Generation gen is the one in use now, both ways. */
static void commit(struct rsec_conn *c, const uint8_t secret[static RSEC_REKEY_SECRET_LEN], uint32_t gen,
		   const char *why)
{
	if (c->path.rk.have_secret)
		keep(&c->path.rk, c->path.rk.epoch, c->path.rk.gen, c->path.rk.secret);
	memcpy(c->path.rk.secret, secret, RSEC_REKEY_SECRET_LEN);
	c->path.rk.gen = gen;
	c->path.rk.since_ms = rsec_now_ms();
	c->path.rk.bytes_at = bytes_moved(c);
	c->path.rk.count++;
	drop_exchange(&c->path.rk);
	audit_rekey(c, why);
}

static RSEC_MUST_CHECK int send_rekey(struct rsec_conn *c, uint8_t type, const uint8_t *pub)
{
	struct rsec_msg m = { .type = type, .lane = c->lane };
	m.u.rekey.epoch = c->path.rk.epoch;
	m.u.rekey.gen = c->path.rk.gen + 1;
	if (pub)
		memcpy(m.u.rekey.pub, pub, RSEC_REKEY_PUB_LEN);
	int rc = rsec_chan_send(c->path.chan, c->lane, &m);
	if (rc < 0 && rsec_chan_gone(rc))
		return rsec_resume_lost(c, rc, "control channel: cannot send %s: %s", rsec_wire_type_name(type),
					rsec_error_text(rc));
	if (rc < 0)
		return rsec_conn_fail(c, rc, "cannot send %s", rsec_wire_type_name(type));
	c->path.chan->last_tx_ms = rsec_now_ms();
	return 0;
}

static RSEC_MUST_CHECK int offer(struct rsec_conn *c, const char *why)
{
	follow_epoch(c);
	/*
	 * Not before the last rekey has settled both ways: our old sending key
	 * retired (the peer acknowledged its frames, which a rebuild could need),
	 * our old receiving key too (a frame under the new one came: none under
	 * the old can follow). The peer's offer implies both on its side, so the
	 * answerer never has to drop a key a frame in flight still needs.
	 */
	if (!rsec_rekey_possible(c) || c->path.rk.state != REKEY_IDLE || rsec_rebuilding(&c->path) ||
	    !c->path.have_seal || c->path.seal.tx_old || c->path.seal.rx_old || c->path.rk.gen == UINT32_MAX)
		return 0;
	uint8_t pub[RSEC_REKEY_PUB_LEN];
	int rc = have_secret(c);
	if (rc == 0)
		rc = rsec_rekey_keypair(&c->path.rk.priv, pub);
	if (rc < 0)
		return rsec_conn_fail(c, rc, "cannot make new keys: %s", rsec_error_text(rc));
	c->path.rk.state = REKEY_OFFERED;
	c->path.rk.why = why;
	return send_rekey(c, RSEC_MSG_REKEY, pub);
}

int rsec_rekey_start(struct rsec_conn *c)
{
	return offer(c, WHY_ASKED);
}

int rsec_rekey_step(struct rsec_conn *c)
{
	follow_epoch(c);
	if (c->path.rk.state != REKEY_IDLE || !rsec_rekey_possible(c))
		return 0;
	const struct rsec_ctx *ctx = c->ctx;
	bool by_time = ctx->rekey_s && rsec_now_ms() - c->path.rk.since_ms >= (uint64_t)ctx->rekey_s * 1000;
	bool by_bytes = ctx->rekey_bytes && bytes_moved(c) - c->path.rk.bytes_at >= ctx->rekey_bytes;
	return by_time || by_bytes ? offer(c, by_time ? WHY_TIME : WHY_BYTES) : 0;
}

uint64_t rsec_rekey_next_ms(const struct rsec_conn *c)
{
	if (!c->ctx->rekey_s || c->path.phase != PHASE_ESTABLISHED || c->path.rk.state != REKEY_IDLE ||
	    !c->path.rk.since_ms || !rsec_rekey_possible(c))
		return UINT64_MAX;
	uint64_t due = c->path.rk.since_ms + (uint64_t)c->ctx->rekey_s * 1000;
	/* Passed: offered, or something stands in the way that no timer ends (a wait must not spin on it). */
	return due > rsec_now_ms() ? due : UINT64_MAX;
}

/* REKEY: the peer's offer. Answer it, and receive under the new keys from now on. */
static RSEC_MUST_CHECK int on_offer(struct rsec_conn *c, const struct rsec_msg_rekey *r, struct rsec_ctrl_fault *f)
{
	if (c->path.rk.state == REKEY_OFFERED && !c->is_server)
		return 0; /* both offered: ours wins, the server answers it */
	if (c->path.rk.state == REKEY_ANSWERED)
		return rsec_ctrl_violation(f, "REKEY while the previous one is not done");
	drop_exchange(&c->path.rk); /* a server's own offer loses */
	uint8_t pub[RSEC_REKEY_PUB_LEN];
	int rc = have_secret(c);
	if (rc == 0)
		rc = rsec_rekey_keypair(&c->path.rk.priv, pub);
	if (rc == 0)
		rc = rsec_rekey_next(c->path.rk.secret, c->path.rk.priv, r->pub, r->gen, c->path.rk.next);
	bool refused = rc == RSEC_E_CRYPTO && c->path.rk.priv;
	if (rc == 0)
		rc = install(c, c->path.rk.next, r->gen, true, false);
	EVP_PKEY_free(c->path.rk.priv); /* answered with, or failed: not needed again */
	c->path.rk.priv = NULL;
	if (refused)
		return rsec_ctrl_violation(f, "REKEY with a key X25519 refuses");
	if (rc < 0) {
		OPENSSL_cleanse(c->path.rk.next, sizeof(c->path.rk.next));
		return rsec_ctrl_refuse(f, rc, "cannot answer REKEY: %s", rsec_error_text(rc));
	}
	c->path.rk.state = REKEY_ANSWERED;
	return send_rekey(c, RSEC_MSG_REKEY_REPLY, pub);
}

/* REKEY_REPLY: the answer to our offer. Seal and receive under the new keys, and say so. */
static RSEC_MUST_CHECK int on_reply(struct rsec_conn *c, const struct rsec_msg_rekey *r, struct rsec_ctrl_fault *f)
{
	if (c->path.rk.state != REKEY_OFFERED)
		return rsec_ctrl_violation(f, "REKEY_REPLY to no REKEY");
	uint8_t next[RSEC_REKEY_SECRET_LEN];
	int rc = rsec_rekey_next(c->path.rk.secret, c->path.rk.priv, r->pub, r->gen, next);
	if (rc == RSEC_E_CRYPTO) {
		drop_exchange(&c->path.rk);
		return rsec_ctrl_violation(f, "REKEY_REPLY with a key X25519 refuses");
	}
	if (rc == 0)
		rc = install(c, next, r->gen, true, true);
	if (rc < 0) {
		OPENSSL_cleanse(next, sizeof(next));
		return rsec_ctrl_refuse(f, rc, "cannot take the new keys: %s", rsec_error_text(rc));
	}
	const char *why = c->path.rk.why;
	rc = send_rekey(c, RSEC_MSG_REKEY_DONE, NULL);
	commit(c, next, r->gen, why);
	OPENSSL_cleanse(next, sizeof(next));
	return rc < 0 ? rc : rsec_conn_settle(c, rsec_data_new_tx_keys(&c->path));
}

/* REKEY_DONE: the peer seals under the new keys; so do we now. */
static RSEC_MUST_CHECK int on_done(struct rsec_conn *c, const struct rsec_msg_rekey *r, struct rsec_ctrl_fault *f)
{
	if (c->path.rk.state != REKEY_ANSWERED)
		return rsec_ctrl_violation(f, "REKEY_DONE to no REKEY_REPLY");
	int rc = install(c, c->path.rk.next, r->gen, false, true);
	if (rc < 0)
		return rsec_ctrl_refuse(f, rc, "cannot take the new keys: %s", rsec_error_text(rc));
	uint8_t next[RSEC_REKEY_SECRET_LEN];
	memcpy(next, c->path.rk.next, sizeof(next));
	commit(c, next, r->gen, WHY_PEER);
	OPENSSL_cleanse(next, sizeof(next));
	return rsec_conn_settle(c, rsec_data_new_tx_keys(&c->path));
}

int rsec_rekey_on_msg(struct rsec_conn *c, const struct rsec_msg *m, struct rsec_ctrl_fault *f)
{
	const struct rsec_msg_rekey *r = &m->u.rekey;
	if (!rsec_rekey_possible(c))
		return rsec_ctrl_violation(f, "%s from a peer that did not offer rekeying",
					   rsec_wire_type_name(m->type));
	follow_epoch(c);
	/* A rebuild under way, or one since the message was sent, makes new keys of its own. */
	if (rsec_rebuilding(&c->path) || r->epoch < c->path.rb.epoch)
		return 0;
	if (r->epoch > c->path.rb.epoch)
		return rsec_ctrl_violation(f, "%s for a data path not built yet", rsec_wire_type_name(m->type));
	if (r->gen != c->path.rk.gen + 1)
		return rsec_ctrl_violation(f, "%s for key generation %u, not %u", rsec_wire_type_name(m->type),
					   (unsigned)r->gen, (unsigned)c->path.rk.gen + 1);
	if (!c->path.have_seal)
		return rsec_ctrl_violation(f, "%s before the data path has keys", rsec_wire_type_name(m->type));
	switch (m->type) {
	case RSEC_MSG_REKEY: return on_offer(c, r, f);
	case RSEC_MSG_REKEY_REPLY: return on_reply(c, r, f);
	default: return on_done(c, r, f);
	}
}

