/* SPDX-License-Identifier: MIT */
/*
 * Set-up's control messages (the sequence: conn.c): after TLS, our HELLO
 * (or a parked session's RESUME); the peer's HELLO, QP_INFO and READY.
 * Their handlers report to ctrl.c, which fails the connection when they
 * return an error; ctrl.c's table says in which phase each is taken.
 */
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>

#include "base/errtext.h"
#include "conn.h"
#include "ctrl.h"

static RSEC_MUST_CHECK int send_hello(struct rsec_conn *c)
{
	struct rsec_msg m = { .type = RSEC_MSG_HELLO };
	m.u.hello.min_version = RSEC_WIRE_VERSION;
	m.u.hello.max_version = RSEC_WIRE_VERSION;
	m.u.hello.features = RSEC_WIRE_FEATURE_LANES | (c->ctx->rebuilds_per_min ? RSEC_WIRE_FEATURE_REBUILD : 0) |
			     (c->ctx->resume_grace_ms ? RSEC_WIRE_FEATURE_RESUME | RSEC_WIRE_FEATURE_RESUME_EPOCH : 0) |
			     (c->ctx->rebuilds_per_min ? RSEC_WIRE_FEATURE_REBIND : 0) | RSEC_WIRE_FEATURE_REKEY |
			     RSEC_WIRE_FEATURE_GRANT_KEYS | RSEC_WIRE_FEATURE_PATH_CHECK;
	m.u.hello.aead = (uint8_t)c->aead;
	return rsec_chan_send(c->path.chan, c->lane, &m);
}

void rsec_conn_describe_qp(const struct rsec_conn *c, struct rsec_msg_qp_info *out)
{
	struct rsec_qp_peer self;
	rsec_qp_describe_local(&c->path.qp, &self);
	*out = (struct rsec_msg_qp_info){
		.qpn = self.qpn,
		.psn = self.psn,
		.lid = self.lid,
		.mtu = (uint8_t)self.mtu,
		.link = c->dev->link_layer == IBV_LINK_LAYER_INFINIBAND ? RSEC_WIRE_LINK_IB : RSEC_WIRE_LINK_ETHERNET,
		.recv_slots = c->path.recv_slots,
		.slot_size = c->ctx->slot_size,
		.max_msg = c->ctx->max_msg,
	};
	memcpy(out->gid, self.gid.raw, sizeof(out->gid));
}

int rsec_conn_peer_qp(const struct rsec_msg_qp_info *q, struct rsec_qp_peer *out)
{
	*out = (struct rsec_qp_peer){ .qpn = q->qpn, .psn = q->psn, .lid = q->lid, .mtu = (enum ibv_mtu)q->mtu };
	memcpy(out->gid.raw, q->gid, sizeof(out->gid.raw));
	return rsec_qp_peer_check(out);
}

int rsec_conn_send_qp_info(struct rsec_conn *c)
{
	struct rsec_msg m = { .type = RSEC_MSG_QP_INFO };
	rsec_conn_describe_qp(c, &m.u.qp_info);
	int rc = rsec_chan_send(c->path.chan, c->lane, &m);
	OPENSSL_cleanse(&m, sizeof(m));
	return rc;
}

/* Set-up is over. The accept record says when the peer's certificate was not
 * presented this time, and which queue pair of the session a lane is. */
static void established(struct rsec_conn *c)
{
	c->path.phase = PHASE_ESTABLISHED;
	c->was_established = true;
	char note[48];
	if (c->lane)
		snprintf(note, sizeof(note), "queue pair %u of the session", (unsigned)c->lane + 1);
	rsec_conn_audit(c, RSEC_AUDIT_ACCEPT, "ok", c->lane ? note : c->tls_resumed ? "TLS session resumed" : NULL,
			NULL);
	rsec_resume_established(c);
}

int rsec_setup_tls_done(struct rsec_conn *c)
{
	c->tls_resumed = rsec_tls_resumed(rsec_chan_ssl(c->path.chan));
	int rc = rsec_tls_peer_identity(rsec_chan_ssl(c->path.chan), c->peer, sizeof(c->peer));
	if (rc < 0) {
		c->peer[0] = '\0'; /* no identity: this must not look like a refusal */
		return rsec_conn_fail(c, rc, "cannot read the peer's identity");
	}
	/* A server goes no further here: admission waits for the HELLO (a RESUME is no new connection). */
	c->path.phase = PHASE_HELLO;
	if (!c->is_server && c->rs.offer) {
		/* A new control channel for a parked session (resume.c): its token instead of a HELLO. */
		struct rsec_msg m = { .type = RSEC_MSG_RESUME };
		memcpy(m.u.session.token, c->rs.offer, sizeof(m.u.session.token));
		m.u.session.has_epoch = c->rs.epochs;
		m.u.session.epoch = c->rs.offer_epoch;
		rc = rsec_chan_send(c->path.chan, c->lane, &m);
		OPENSSL_cleanse(&m, sizeof(m));
		return rc < 0 ? rsec_conn_fail(c, rc, "cannot send RESUME") : 0;
	}
	if (!c->is_server) {
		c->aead = c->ctx->aead;
		rc = send_hello(c);
		if (rc < 0)
			return rsec_conn_fail(c, rc, "cannot send HELLO");
	}
	return 0;
}

static RSEC_MUST_CHECK int derive_keys(struct rsec_conn *c, struct rsec_ctrl_fault *f)
{
	int rc = rsec_seal_from_tls(&c->path.seal, rsec_chan_ssl(c->path.chan), c->is_server, c->aead, 0, 0);
	if (rc == 0)
		rc = rsec_rekey_begin(c);
	if (rc < 0)
		return rsec_ctrl_refuse(f, rc, "message key derivation failed");
	c->path.have_seal = true;
	return 0;
}

/* Server: say no to a new channel's peer in a DISCONNECT (RSEC_DISC_REFUSED); audited as a refusal. */
static RSEC_MUST_CHECK int refuse_peer(struct rsec_conn *c, struct rsec_ctrl_fault *f, int rc, const char *rules)
{
	struct rsec_msg m = { .type = RSEC_MSG_DISCONNECT };
	char text[96];
	snprintf(text, sizeof(text), "refused: %s", rsec_error_text(rc));
	m.u.disconnect.reason = RSEC_DISC_REFUSED;
	rsec_wire_text_set(&m.u.disconnect.text, text);
	(void)!rsec_chan_send(c->path.chan, c->lane, &m);
	c->admit_refused = true; /* the DISCONNECT said it all */
	return rsec_ctrl_refuse(f, rc, "peer %s refused: %s%s%s%s", c->peer, rsec_error_text(rc), rules[0] ? " (" : "",
				rules, rules[0] ? ")" : "");
}

int rsec_setup_check_allowed(struct rsec_conn *c, struct rsec_ctrl_fault *f)
{
	char rules[192] = "";
	return rsec_ctx_authorized(c->ctx, c->peer, rules, sizeof(rules)) ? 0 : refuse_peer(c, f, RSEC_E_DENIED, rules);
}

/* Server: a HELLO starts a new session of this identity; the allow rules, then the application, may refuse it. */
static RSEC_MUST_CHECK int admit(struct rsec_conn *c, struct rsec_ctrl_fault *f)
{
	RSEC_GUARD(rsec_setup_check_allowed(c, f));
	int rc = c->ctx->admit ? c->ctx->admit(c->ctx->admit_arg, c->peer) : 0;
	return rc >= 0 ? 0 : refuse_peer(c, f, rc, "");
}

int rsec_setup_on_hello(struct rsec_conn *c, const struct rsec_msg *m, struct rsec_ctrl_fault *f)
{
	const struct rsec_msg_hello *h = &m->u.hello;
	if (c->is_server)
		RSEC_GUARD(admit(c, f));
	if (h->min_version > RSEC_WIRE_VERSION || h->max_version < RSEC_WIRE_VERSION)
		return rsec_ctrl_refuse(f, RSEC_E_PROTO, "no common protocol version (peer %u..%u)",
				        h->min_version, h->max_version);
	c->peer_lanes = h->features & RSEC_WIRE_FEATURE_LANES;
	/* Both must offer it: a side that cannot rebuild would take a REBUILD as a violation. */
	c->peer_rebuilds = (h->features & RSEC_WIRE_FEATURE_REBUILD) && c->ctx->rebuilds_per_min;
	c->peer_rebinds = c->peer_rebuilds && (h->features & RSEC_WIRE_FEATURE_REBIND);
	c->peer_rekeys = h->features & RSEC_WIRE_FEATURE_REKEY;
	c->peer_grant_keys = h->features & RSEC_WIRE_FEATURE_GRANT_KEYS;
	c->peer_path_checks = h->features & RSEC_WIRE_FEATURE_PATH_CHECK;
	/* A session is resumed with a rebuild of its data path: both needed. */
	c->rs.peer = (h->features & RSEC_WIRE_FEATURE_RESUME) && c->ctx->resume_grace_ms && c->peer_rebuilds;
	c->rs.epochs = c->rs.peer && (h->features & RSEC_WIRE_FEATURE_RESUME_EPOCH);
	if (c->is_server) {
		c->aead = (enum rsec_aead_alg)h->aead; /* the client's choice; wire.c allows only known ones */
		int rc = send_hello(c);
		if (rc < 0)
			return rsec_ctrl_refuse(f, rc, "cannot send HELLO");
		RSEC_GUARD(derive_keys(c, f));
		c->path.phase = PHASE_QP_INFO;
		return 0;
	}
	if (h->aead != (uint8_t)c->aead)
		return rsec_ctrl_refuse(f, RSEC_E_PROTO, "server chose another AEAD");
	RSEC_GUARD(derive_keys(c, f));
	int rc = rsec_conn_data_setup(c);
	if (rc < 0)
		return rsec_ctrl_refuse(f, rc, "cannot create RDMA resources: %s", rsec_error_text(rc));
	rc = rsec_conn_send_qp_info(c);
	if (rc < 0)
		return rsec_ctrl_refuse(f, rc, "cannot send QP_INFO");
	c->path.phase = PHASE_QP_INFO;
	return 0;
}

/*
 * The peer's receive buffers decide our credits, frame size and send ring:
 * it must stay within the limits we hold ourselves to (a single buffer
 * would leave no credit for data, since the last one is kept for credit
 * returns). wire.c already bounded every field.
 */
static RSEC_MUST_CHECK int check_peer_buffers(const struct rsec_msg_qp_info *q, struct rsec_ctrl_fault *f)
{
	if (q->recv_slots < RSEC_RECV_SLOTS_MIN || q->recv_slots > RSEC_RECV_SLOTS_MAX)
		return rsec_ctrl_refuse(f, RSEC_E_PROTO, "peer announced %u receive buffers; %u..%u are allowed",
				        q->recv_slots, RSEC_RECV_SLOTS_MIN, RSEC_RECV_SLOTS_MAX);
	if (q->slot_size < RSEC_SLOT_SIZE_MIN || q->slot_size > RSEC_SLOT_SIZE_MAX)
		return rsec_ctrl_refuse(f, RSEC_E_PROTO, "peer announced %u-byte receive buffers; %u..%u are allowed",
				        q->slot_size, RSEC_SLOT_SIZE_MIN, RSEC_SLOT_SIZE_MAX);
	return 0;
}

int rsec_setup_on_qp_info(struct rsec_conn *c, const struct rsec_msg *m, struct rsec_ctrl_fault *f)
{
	const struct rsec_msg_qp_info *q = &m->u.qp_info;
	int rc;
	RSEC_GUARD(check_peer_buffers(q, f));
	if (rsec_conn_peer_qp(q, &c->path.remote) < 0)
		return rsec_ctrl_refuse(f, RSEC_E_PROTO, "peer announced an impossible queue pair");
	c->path.peer_slots = q->recv_slots;
	c->path.peer_slot_size = q->slot_size;
	c->path.peer_max_msg = q->max_msg;
	if (c->is_server) {
		/* Authenticated and admitted: only now does this peer cost RDMA resources. */
		rc = rsec_conn_data_setup(c);
		if (rc < 0)
			return rsec_ctrl_refuse(f, rc, "cannot create RDMA resources: %s", rsec_error_text(rc));
	}
	rc = rsec_data_start(&c->path);
	if (rc < 0)
		return rsec_ctrl_refuse(f, rc, "QP bring-up failed: %s", rsec_error_text(rc));
	c->path.stats.local_qpn = c->path.qp.qp->qp_num;
	c->path.stats.remote_qpn = q->qpn;
	if (c->is_server) {
		rc = rsec_conn_send_qp_info(c);
		if (rc < 0)
			return rsec_ctrl_refuse(f, rc, "cannot send QP_INFO");
		c->path.phase = PHASE_READY;
		return 0;
	}
	struct rsec_msg ready = { .type = RSEC_MSG_READY };
	rc = rsec_chan_send(c->path.chan, c->lane, &ready);
	if (rc < 0)
		return rsec_ctrl_refuse(f, rc, "cannot send READY");
	established(c);
	return 0;
}

/* Server: the client's queue pair is connected to ours. */
int rsec_setup_on_ready(struct rsec_conn *c, const struct rsec_msg *m, struct rsec_ctrl_fault *f)
{
	(void)m;
	(void)f;
	established(c);
	return 0;
}
