/* SPDX-License-Identifier: MIT */
/*
 * Rebuilding a failed data path under the same session (docs/protocol.md,
 * "Rebuilding the data path").
 *
 * A forged SEND that fails authentication, a forged WRITE whose bad rkey
 * moves our QP to the error state, a completion we never ask for: anyone who
 * can guess or sniff a QPN and a PSN can send those packets, and none of them
 * touches the TLS channel. So instead of closing, both sides rebuild the
 * data path over TLS, each exactly once per epoch:
 *
 *   on its own fault, or on the peer's REBUILD, a side stops: one-sided
 *   operations in flight end with RSEC_E_QP, every grant's key goes (ours
 *   freed, the peer's forgotten; with RSEC_WIRE_FEATURE_REBIND plain live
 *   grants stay, to be bound again), the QP is replaced (same PD, CQs and
 *   rings; fresh random PSN; a QP number past a random count of throwaway
 *   QPs) with all receives posted again; it sends REBUILD {epoch + 1, how
 *   many of the peer's frames it opened, its new QP};
 *
 *   with both REBUILDs in, it recovers from its send ring the data frames
 *   the peer did not open, derives epoch + 1's keys (the exporter context
 *   names lane and epoch: no nonce is ever used twice), connects the new QP,
 *   binds the grants that stayed on it and, once all are announced again
 *   (GRANT, same id, new key), sends REBUILD_READY;
 *
 *   on the peer's REBUILD_READY (the peer's QP is connected) it sends the
 *   recovered frames again, in order, then whatever waited.
 *
 * A data frame keeps its send-ring slot until the peer's credits say it was
 * opened (sendq.h), and a receiver keeps the message it was reassembling, so
 * nothing the peer opened is sent twice and nothing it did not is lost. A
 * fault while a rebuild is under way waits for it to finish and starts the
 * next. Rebuilds are bounded per minute (rsec_ctx_attr.rebuilds_per_min);
 * past that, and with a peer that cannot rebuild, the connection closes as
 * before.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>

#include "base/errtext.h"
#include "conn.h"

#define MINUTE_MS 60000u

static const char *why_text(uint8_t why)
{
	switch (why) {
	case RSEC_WIRE_REBUILD_AUTH: return "a frame failed authentication or sequencing";
	case RSEC_WIRE_REBUILD_QP: return "the queue pair failed";
	case RSEC_WIRE_REBUILD_VIOLATION: return "a completion rdmasec never asks for";
	case RSEC_WIRE_REBUILD_CHANNEL: return "the control channel was lost and the session resumed";
	case RSEC_WIRE_REBUILD_SILENT: return "data path silent: its queue pair acknowledged frames it never delivered";
	default: return "the peer rebuilt its side";
	}
}

/* Rebuilds started in the last minute, this one not yet counted. */
static unsigned recent(const struct rsec_conn *c, uint64_t now)
{
	unsigned n = 0;
	for (unsigned i = 0; i < RSEC_MAX_REBUILDS; i++)
		if (c->path.rb.started_ms[i] && now - c->path.rb.started_ms[i] < MINUTE_MS)
			n++;
	return n;
}

/* The audit record of the fault itself, as a closing connection would write it. */
static void audit_fault(struct rsec_conn *c, uint8_t why, int code, const char *text)
{
	/* A frame that fails authentication in any way (a bad tag, a header that does not parse) is a forgery. */
	enum rsec_audit_event ev = code == RSEC_E_SEQ ? RSEC_AUDIT_SEQ_VIOLATION
				   : code == RSEC_E_MAC || why == RSEC_WIRE_REBUILD_AUTH ? RSEC_AUDIT_MAC_FAILURE
				   : why == RSEC_WIRE_REBUILD_VIOLATION ? RSEC_AUDIT_PROTOCOL_VIOLATION
									: RSEC_AUDIT_QP_ERROR;
	rsec_conn_audit(c, ev, rsec_error_text(code), text, NULL);
}

static RSEC_MUST_CHECK int send_half(struct rsec_conn *c, uint8_t why, uint64_t opened)
{
	struct rsec_msg m = { .type = RSEC_MSG_REBUILD, .lane = c->lane };
	struct rsec_msg_rebuild *r = &m.u.rebuild;
	r->epoch = c->path.rb.target;
	r->reason = why;
	r->opened = opened;
	rsec_conn_describe_qp(c, &r->qp);
	int rc = rsec_chan_send(c->path.chan, c->lane, &m);
	OPENSSL_cleanse(&m, sizeof(m));
	return rc;
}

/* Stop the failed data path: a new QP in INIT, nothing in flight. Returns 0 or the connection's failure. */
static RSEC_MUST_CHECK int stop(struct rsec_conn *c)
{
	c->path.rb.opened = rsec_data_opened(&c->path);
	c->path.rb.again = false;
	char revoked[160];
	snprintf(revoked, sizeof(revoked), "data path rebuilt: %.140s", c->path.rb.reason);
	/*
	 * Nothing in flight survives the old QP: grants go first (the peer drops
	 * ours as we drop its), since rxe waits ~50 s to destroy a QP that
	 * windows are still bound to; operations end once it is destroyed and
	 * the device can no longer touch their buffers.
	 */
	if (c->path.qp.qp)
		(void)!rsec_qp_to_error(&c->path.qp);
	RSEC_GUARD(rsec_conn_settle(c, rsec_grant_reset(&c->path, revoked)));
	int rc = rsec_data_renew(&c->path);
	rsec_onesided_abort(&c->path, RSEC_E_QP);
	if (rc < 0)
		return rsec_conn_fail(c, rc, "cannot rebuild the data path (%s): %s", c->path.rb.reason,
				      rsec_error_text(rc));
	return 0;
}

/* A rebuild message that could not go: a lost channel parks the session (resume.c), anything else fails it. */
static RSEC_MUST_CHECK int unsent(struct rsec_conn *c, int rc, const char *what)
{
	if (!rsec_chan_gone(rc))
		return rsec_conn_fail(c, rc, "cannot send %s", what);
	return rsec_resume_lost(c, rc, "control channel: cannot send %s: %s", what, rsec_error_text(rc));
}

/* Our half goes out: the rebuild has until the set-up timeout from now. */
static RSEC_MUST_CHECK int send_our_half(struct rsec_conn *c, uint8_t why, uint32_t target, uint64_t opened)
{
	c->path.rb.deadline_ms = rsec_now_ms() + (uint64_t)c->ctx->handshake_timeout_ms;
	c->path.rb.target = target;
	c->path.rb.sent_opened = opened;
	c->path.rb.state = REBUILD_SENT; /* also if the channel goes now: our QP is stopped, our count taken */
	int rc = send_half(c, why, opened);
	return rc < 0 ? unsent(c, rc, "REBUILD") : 0;
}

/* Stop the failed data path and send our half; counted against the budget. */
static RSEC_MUST_CHECK int begin(struct rsec_conn *c, uint8_t why)
{
	c->path.rb.started_ms[c->path.rb.started_next] = rsec_now_ms();
	c->path.rb.started_next = (c->path.rb.started_next + 1) % RSEC_MAX_REBUILDS;
	RSEC_GUARD(stop(c));
	return send_our_half(c, why, c->path.rb.epoch + 1, c->path.rb.opened);
}

int rsec_rebuild_park(struct rsec_conn *c, int code, const char *why)
{
	/* A session that keeps losing its channel would rebuild without end: the same budget. */
	uint64_t now = rsec_now_ms();
	if (recent(c, now) >= c->ctx->rebuilds_per_min)
		return rsec_conn_fail(c, code, "%s (not resumed: rebuilt %u times in the last minute, the limit)", why,
				      c->ctx->rebuilds_per_min);
	c->path.rb.started_ms[c->path.rb.started_next] = now;
	c->path.rb.started_next = (c->path.rb.started_next + 1) % RSEC_MAX_REBUILDS;
	snprintf(c->path.rb.reason, sizeof(c->path.rb.reason),
		 "the control channel was lost (%.140s) and the session resumed", why);
	/*
	 * Our REBUILD may be out already (its QP stopped, its count taken): it
	 * goes again on the new channel. A rebuilt QP we connected is stopped
	 * again: the peer may have sent on it (it had our REBUILD_READY) or not
	 * even have our REBUILD; the resume's rebuild sorts that out.
	 */
	if (c->path.rb.state != REBUILD_SENT)
		RSEC_GUARD(stop(c));
	c->path.rb.state = REBUILD_PARKED;
	return 0;
}

/*
 * Both sides build the epoch after the later of theirs. Epochs differ when
 * the channel went in the middle of a rebuild and only one side connected
 * its rebuilt QP (it had the other's REBUILD, the other never had its own):
 * that side's frames of its new epoch were never opened (count 0 for it),
 * and the side behind still needs the count the lost REBUILD carried.
 * Either way the keys come from the new TLS session.
 */
int rsec_rebuild_unpark(struct rsec_conn *c)
{
	uint32_t ours = c->path.rb.epoch, theirs = c->rs.peer_epoch_known ? c->rs.peer_epoch : ours;
	if (theirs >= UINT32_MAX - 1)
		return rsec_conn_violation(c, "the resumed peer names an impossible epoch");
	uint64_t opened = theirs > ours ? 0 : theirs < ours ? c->path.rb.sent_opened : c->path.rb.opened;
	return send_our_half(c, RSEC_WIRE_REBUILD_CHANNEL, (theirs > ours ? theirs : ours) + 1, opened);
}

/* May this connection rebuild once more now? If not, why not, in out. */
static bool may_rebuild(const struct rsec_conn *c, char *out, size_t cap)
{
	uint32_t max = c->ctx->rebuilds_per_min;
	if (c->path.phase != PHASE_ESTABLISHED)
		snprintf(out, cap, "%s", "the connection was not established");
	else if (max == 0)
		snprintf(out, cap, "%s", "rebuilding is off");
	else if (!rsec_rebuild_possible(c))
		snprintf(out, cap, "%s", "the peer cannot rebuild");
	else if (recent(c, rsec_now_ms()) >= max)
		snprintf(out, cap, "rebuilt %u times in the last minute, the limit", max);
	else
		return true;
	return false;
}

int rsec_rebuild_fault(struct rsec_conn *c, uint8_t why, int code, const char *fmt, ...)
{
	if (c->path.phase == PHASE_CLOSED)
		return c->path.close_code;
	char text[200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (rsec_rebuilding(&c->path)) {
		/* The new path failed before its rebuild was over: one more, once this one ends. */
		if (c->path.rb.state == REBUILD_CONNECTED && !c->path.rb.again) {
			c->path.rb.again = true;
			c->path.rb.again_why = why;
			audit_fault(c, why, code, text);
		}
		return 1;
	}
	char no[96];
	if (!may_rebuild(c, no, sizeof(no))) {
		/* Closing audits MAC, sequence and QP failures itself; a violation has no record of its own there. */
		if (why == RSEC_WIRE_REBUILD_VIOLATION)
			audit_fault(c, why, code, text);
		return rsec_conn_fail(c, code, "%s (not rebuilt: %s)", text, no);
	}
	audit_fault(c, why, code, text);
	_Static_assert(sizeof(text) == sizeof(c->path.rb.reason), "the reason is the fault's text");
	memcpy(c->path.rb.reason, text, sizeof(text));
	int rc = begin(c, why);
	return rc < 0 ? rc : 1;
}

/* The peer's new QP, checked as at set-up; its buffers must be the ones it announced then. */
static RSEC_MUST_CHECK int take_peer_qp(struct rsec_conn *c, const struct rsec_msg_qp_info *q)
{
	const struct rsec_path *p = &c->path;
	if (q->recv_slots != p->peer_slots || q->slot_size != p->peer_slot_size || q->max_msg != p->peer_max_msg)
		return rsec_conn_violation(c, "REBUILD changed the receive buffers announced at set-up");
	struct rsec_qp_peer peer;
	if (rsec_conn_peer_qp(q, &peer) < 0)
		return rsec_conn_violation(c, "REBUILD with an impossible queue pair");
	c->path.remote = peer;
	return 0;
}

/* Both halves are in: new keys, the frames to send again, the new QP connected; REBUILD_READY goes out. */
static RSEC_MUST_CHECK int connect_new(struct rsec_conn *c, const struct rsec_msg_rebuild *r)
{
	RSEC_GUARD(take_peer_qp(c, &r->qp));
	c->path.rb.epoch = r->epoch - 1; /* a resume may build a later epoch than ours + 1: the keys are r->epoch's */
	int rc = rsec_data_rekey(&c->path, r->opened);
	if (rc == RSEC_E_PROTO)
		return rsec_conn_violation(c, "REBUILD counts frames we never sent, or fewer than it acknowledged");
	if (rc < 0)
		return rsec_conn_fail(c, rc, "cannot rekey the rebuilt data path: %s", rsec_error_text(rc));
	rc = rsec_qp_connect(&c->path.qp, &c->path.remote);
	if (rc < 0)
		return rsec_conn_fail(c, rc, "cannot connect the rebuilt queue pair: %s", rsec_error_text(rc));
	c->path.rb.epoch = r->epoch;
	rc = rsec_rekey_begin(c);
	if (rc < 0)
		return rsec_conn_fail(c, rc, "cannot start the rebuilt data path's key chain: %s", rsec_error_text(rc));
	c->path.stats.local_qpn = c->path.qp.qp->qp_num;
	c->path.stats.remote_qpn = c->path.remote.qpn;
	c->path.rb.state = REBUILD_CONNECTED;
	c->path.rb.peer_ready = false;
	c->path.rb.ready_owed = true;
	RSEC_GUARD(rsec_conn_settle(c, rsec_grant_rebind(&c->path)));
	return rsec_rebuild_binds_settled(c);
}

static RSEC_MUST_CHECK int on_rebuild(struct rsec_conn *c, const struct rsec_msg_rebuild *r)
{
	uint32_t want = c->path.rb.state == REBUILD_SENT ? c->path.rb.target : c->path.rb.epoch + 1;
	if (r->epoch != want || c->path.rb.state == REBUILD_CONNECTED)
		return rsec_conn_violation(c, "REBUILD out of turn");
	if (c->path.rb.state == REBUILD_NONE) {
		/* The peer saw the fault first; a rebuild it asks for counts against the budget too. */
		char no[96];
		if (!may_rebuild(c, no, sizeof(no)))
			return rsec_conn_fail(c, RSEC_E_QP,
					      "the peer's data path failed (%s) and it was not rebuilt: %s",
					      why_text(r->reason), no);
		snprintf(c->path.rb.reason, sizeof(c->path.rb.reason), "the peer's side: %s", why_text(r->reason));
		RSEC_GUARD(begin(c, RSEC_WIRE_REBUILD_ANSWER));
		if (c->rs.parked)
			return 0; /* our REBUILD could not go: both sides rebuild from here once resumed */
	}
	return connect_new(c, r);
}

/* The rebuild is over: said in the stats and the audit log; a fault meanwhile starts the next. */
static RSEC_MUST_CHECK int finished(struct rsec_conn *c)
{
	c->path.rb.state = REBUILD_NONE;
	rsec_gt_rebind_done(&c->path.gt); /* the peer's grants that did not come again went with the old path */
	c->path.stats.rebuilds++;
	memcpy(c->path.rb.done_reason, c->path.rb.reason, sizeof(c->path.rb.done_reason));
	char note[200];
	snprintf(note, sizeof(note), "epoch %u: %.180s", c->path.rb.epoch, c->path.rb.reason);
	rsec_conn_audit(c, RSEC_AUDIT_REBUILD, "ok", note, NULL);
	if (!c->path.rb.again)
		return 0;
	int rc = rsec_rebuild_fault(c, c->path.rb.again_why, RSEC_E_QP, "the rebuilt data path failed too: %s",
				    why_text(c->path.rb.again_why));
	return rc < 0 ? rc : 0;
}

/*
 * Our REBUILD_READY goes once every grant bound again on the new QP is
 * announced: GRANTs travel ahead of it on the channel, so the peer's
 * rebuild ends with its grant handles working again.
 */
int rsec_rebuild_binds_settled(struct rsec_conn *c)
{
	if (c->path.rb.state != REBUILD_CONNECTED || !c->path.rb.ready_owed || c->path.binds_inflight > 0 ||
	    c->path.phase == PHASE_CLOSED)
		return 0;
	c->path.rb.ready_owed = false;
	struct rsec_msg m = { .type = RSEC_MSG_REBUILD_READY, .lane = c->lane };
	m.u.rebuild_ready.epoch = c->path.rb.epoch;
	int rc = rsec_chan_send(c->path.chan, c->lane, &m);
	if (rc < 0)
		return unsent(c, rc, "REBUILD_READY");
	return c->path.rb.peer_ready ? finished(c) : 0;
}

int rsec_rebuild_on_msg(struct rsec_conn *c, const struct rsec_msg *m)
{
	if (!rsec_rebuild_possible(c) || c->path.phase != PHASE_ESTABLISHED)
		return rsec_conn_violation(c, "unexpected rebuild message");
	if (m->type == RSEC_MSG_REBUILD)
		return on_rebuild(c, &m->u.rebuild);
	if (c->path.rb.state != REBUILD_CONNECTED || c->path.rb.peer_ready ||
	    m->u.rebuild_ready.epoch != c->path.rb.epoch)
		return rsec_conn_violation(c, "REBUILD_READY out of turn");
	if (c->path.rb.ready_owed) {
		c->path.rb.peer_ready = true; /* ours follows our binds */
		return 0;
	}
	return finished(c);
}

int rsec_rebuild_expire(struct rsec_conn *c)
{
	/* A parked session's deadline is its grace period (resume.c). */
	if (!rsec_rebuilding(&c->path) || c->path.rb.state == REBUILD_PARKED || rsec_now_ms() <= c->path.rb.deadline_ms)
		return 0;
	return rsec_conn_fail(c, RSEC_E_TIMEOUT, "the data path was not rebuilt within %d ms (%s)",
			      c->ctx->handshake_timeout_ms, c->path.rb.reason);
}

int rsec_rebuild_check_step(struct rsec_conn *c)
{
	struct rsec_msg m = { .type = RSEC_MSG_PATH_CHECK, .lane = c->lane };
	if (c->rs.parked)
		return 0;
	int rc = rsec_conn_settle(c, rsec_data_check_step(&c->path, rsec_now_ms(), &m.u.path_check));
	if (rc <= 0)
		return rc;
	rc = rsec_chan_send(c->path.chan, c->lane, &m);
	if (rc < 0)
		return unsent(c, rc, "PATH_CHECK");
	c->path.chan->last_tx_ms = rsec_now_ms();
	return 0;
}

int rsec_rebuild_on_check(struct rsec_conn *c, const struct rsec_msg *m)
{
	rsec_data_check_claim(&c->path, &m->u.path_check);
	/* Judged now if nothing waits in the receive CQ: a lane's data path is not polled with its root's. */
	return rsec_conn_poll_data(c);
}
