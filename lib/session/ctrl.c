/* SPDX-License-Identifier: MIT */
/*
 * What is accepted when: one row per control message with the phases that
 * take it, whether a lane (a frame with lane != 0) may carry it, which side
 * takes it, and its handler. A message no row takes is a protocol
 * violation. Handlers only report (ctrl.h); settle() decides what a report
 * means, the one place a control message fails a connection.
 */
#include <stdarg.h>
#include <stdio.h>

#include "base/errtext.h"
#include "conn.h"
#include "ctrl.h"

#define PH(p) (1u << (p))
#define FROM_HELLO_ON (PH(PHASE_HELLO) | PH(PHASE_QP_INFO) | PH(PHASE_READY) | PH(PHASE_ESTABLISHED))

enum ctrl_side {
	SIDE_ANY,
	SIDE_SERVER,
	SIDE_CLIENT,
	SIDE_NEW,      /* a channel that starts a session: not a client's RESUME */
	SIDE_RESUMING, /* a client's new channel that offered RESUME */
};

typedef int (*ctrl_fn)(struct rsec_conn *c, const struct rsec_msg *m, struct rsec_ctrl_fault *f);

struct ctrl_row {
	uint8_t type;
	uint8_t phases; /* PH() of each phase that takes it */
	bool lane;      /* a lane may carry it */
	enum ctrl_side side;
	ctrl_fn handle;
};

static int on_keepalive(struct rsec_conn *c, const struct rsec_msg *m, struct rsec_ctrl_fault *f);
static int on_disconnect(struct rsec_conn *c, const struct rsec_msg *m, struct rsec_ctrl_fault *f);
static int on_error(struct rsec_conn *c, const struct rsec_msg *m, struct rsec_ctrl_fault *f);
static int on_grant(struct rsec_conn *c, const struct rsec_msg *m, struct rsec_ctrl_fault *f);
static int on_rebuild(struct rsec_conn *c, const struct rsec_msg *m, struct rsec_ctrl_fault *f);
static int on_path_check(struct rsec_conn *c, const struct rsec_msg *m, struct rsec_ctrl_fault *f);
static int on_session(struct rsec_conn *c, const struct rsec_msg *m, struct rsec_ctrl_fault *f);
static int on_resume(struct rsec_conn *c, const struct rsec_msg *m, struct rsec_ctrl_fault *f);

static const struct ctrl_row rows[] = {
	/* Set-up (the sequence: conn.c). */
	{ RSEC_MSG_HELLO, PH(PHASE_HELLO), false, SIDE_NEW, rsec_setup_on_hello },
	{ RSEC_MSG_RESUME, PH(PHASE_HELLO), false, SIDE_SERVER, on_resume },
	{ RSEC_MSG_SESSION, PH(PHASE_HELLO), false, SIDE_RESUMING, on_session },
	{ RSEC_MSG_QP_INFO, PH(PHASE_QP_INFO), true, SIDE_ANY, rsec_setup_on_qp_info },
	{ RSEC_MSG_READY, PH(PHASE_READY), true, SIDE_SERVER, rsec_setup_on_ready },
	/* An established session. */
	{ RSEC_MSG_SESSION, PH(PHASE_ESTABLISHED), false, SIDE_CLIENT, on_session },
	{ RSEC_MSG_KEEPALIVE, PH(PHASE_ESTABLISHED), false, SIDE_ANY, on_keepalive },
	{ RSEC_MSG_GRANT, PH(PHASE_ESTABLISHED), true, SIDE_ANY, on_grant },
	{ RSEC_MSG_REVOKE, PH(PHASE_ESTABLISHED), true, SIDE_ANY, on_grant },
	{ RSEC_MSG_VERIFY, PH(PHASE_ESTABLISHED), true, SIDE_ANY, on_grant },
	{ RSEC_MSG_REBUILD, PH(PHASE_ESTABLISHED), true, SIDE_ANY, on_rebuild },
	{ RSEC_MSG_REBUILD_READY, PH(PHASE_ESTABLISHED), true, SIDE_ANY, on_rebuild },
	{ RSEC_MSG_REKEY, PH(PHASE_ESTABLISHED), true, SIDE_ANY, rsec_rekey_on_msg },
	{ RSEC_MSG_REKEY_REPLY, PH(PHASE_ESTABLISHED), true, SIDE_ANY, rsec_rekey_on_msg },
	{ RSEC_MSG_REKEY_DONE, PH(PHASE_ESTABLISHED), true, SIDE_ANY, rsec_rekey_on_msg },
	{ RSEC_MSG_PATH_CHECK, PH(PHASE_ESTABLISHED), true, SIDE_ANY, on_path_check },
	/* Any time after TLS. */
	{ RSEC_MSG_DISCONNECT, FROM_HELLO_ON, true, SIDE_ANY, on_disconnect },
	{ RSEC_MSG_ERROR, FROM_HELLO_ON, true, SIDE_ANY, on_error },
};

static bool side_takes(const struct rsec_conn *c, enum ctrl_side side)
{
	switch (side) {
	case SIDE_SERVER: return c->is_server;
	case SIDE_CLIENT: return !c->is_server;
	case SIDE_NEW: return c->rs.offer == NULL;
	case SIDE_RESUMING: return !c->is_server && c->rs.offer != NULL;
	default: return true;
	}
}

static const struct ctrl_row *row_for(const struct rsec_conn *c, uint8_t type)
{
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct ctrl_row *r = &rows[i];
		if (r->type == type && (r->phases & PH(c->path.phase)) && (r->lane || !c->lane) &&
		    side_takes(c, r->side))
			return r;
	}
	return NULL;
}

bool rsec_ctrl_lane_may_carry(uint8_t type)
{
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		if (rows[i].type == type && rows[i].lane)
			return true;
	return false;
}

static int fault(struct rsec_ctrl_fault *f, enum rsec_ctrl_kind kind, int code, const char *fmt, va_list ap)
	__attribute__((format(printf, 4, 0)));

static int fault(struct rsec_ctrl_fault *f, enum rsec_ctrl_kind kind, int code, const char *fmt, va_list ap)
{
	f->kind = kind;
	vsnprintf(f->why, sizeof(f->why), fmt, ap);
	return code;
}

int rsec_ctrl_refuse(struct rsec_ctrl_fault *f, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = fault(f, CTRL_FAIL, code, fmt, ap);
	va_end(ap);
	return rc;
}

int rsec_ctrl_violation(struct rsec_ctrl_fault *f, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = fault(f, CTRL_VIOLATION, RSEC_E_PROTO, fmt, ap);
	va_end(ap);
	return rc;
}

static int channel_lost(struct rsec_ctrl_fault *f, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int channel_lost(struct rsec_ctrl_fault *f, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = fault(f, CTRL_CHANNEL_LOST, code, fmt, ap);
	va_end(ap);
	return rc;
}

/* The one place a control message's fault fails (or parks) its connection. */
static int settle(struct rsec_conn *c, int rc, const struct rsec_ctrl_fault *f)
{
	if (c->path.phase == PHASE_CLOSED)
		return c->path.close_code; /* handed over (RESUME), or failed by a handler in path/ */
	if (!f->why[0])
		return rc; /* a handler in path/ that reports through the connection itself */
	switch (f->kind) {
	case CTRL_VIOLATION: return rsec_conn_violation(c, f->why);
	case CTRL_CHANNEL_LOST: return rsec_resume_lost(c, rc, "%s", f->why);
	default: return rsec_conn_fail(c, rc, "%s", f->why);
	}
}

int rsec_ctrl_handle(struct rsec_conn *c, const struct rsec_msg *m)
{
	struct rsec_ctrl_fault f = { .kind = CTRL_FAIL };
	c->path.chan->last_rx_ms = rsec_now_ms();
	const struct ctrl_row *r = row_for(c, m->type);
	int rc = r ? r->handle(c, m, &f)
		   : rsec_ctrl_violation(&f, "unexpected %s message%s", rsec_wire_type_name(m->type),
					 c->path.phase == PHASE_ESTABLISHED ? "" : " during set-up");
	return rc < 0 ? settle(c, rc, &f) : rc;
}

/* A frame for lane m->lane != 0: the session must be up and the type one a lane may carry. */
static int route_to_lane(struct rsec_conn *root, const struct rsec_msg *m, struct rsec_ctrl_fault *f)
{
	if (root->path.phase != PHASE_ESTABLISHED)
		return rsec_ctrl_violation(f, "a frame for a further queue pair before the session was set up");
	if (!rsec_ctrl_lane_may_carry(m->type))
		return rsec_ctrl_violation(f, "%s for queue pair %u: only the session's own",
					   rsec_wire_type_name(m->type), (unsigned)m->lane + 1);
	return rsec_lane_route(root, m, f);
}

int rsec_ctrl_receive(struct rsec_conn *root, const struct rsec_msg *m)
{
	if (!m->lane)
		return rsec_ctrl_handle(root, m);
	struct rsec_ctrl_fault f = { .kind = CTRL_FAIL };
	int rc = route_to_lane(root, m, &f);
	return rc < 0 ? settle(root, rc, &f) : rc;
}

/*
 * A transport error moves both ends of an RC connection to ERR (a peer's
 * refused access moves ours), and the peer's word over TLS can overtake our
 * own failed completion: our QP error is still one to count and audit.
 */
static bool qp_failed_unseen(struct rsec_conn *c)
{
	if (!c->path.have_qp || rsec_qp_state(&c->path.qp) != IBV_QPS_ERR)
		return false;
	c->path.stats.qp_errors++;
	return true;
}

/*
 * The peer posted its last messages before it said goodbye over TLS, and rxe
 * sends a SEND as it is posted: what its SENDs delivered is in our receive
 * queue, and the first whole message is taken before the goodbye closes the
 * connection, so that rsec_recv still returns it (a waking peer may find both
 * at once). Not once the queue pair is in error (its receives are flushes:
 * qp_failed_unseen says so). A fault of the data path the poll meets (a
 * forged frame among them) closes the connection itself, audited as such,
 * not as the goodbye; any other (what the poll sends over the closing
 * channel, such as a GRANT whose bind completed) is the goodbye's to explain.
 */
static int take_last_words(struct rsec_conn *c)
{
	if (c->path.phase != PHASE_ESTABLISHED || c->rs.parked || !c->path.have_qp ||
	    rsec_qp_state(&c->path.qp) == IBV_QPS_ERR)
		return 0;
	(void)!rsec_data_poll(&c->path);
	if (!rsec_fault_pending(&c->path.fault))
		return 0;
	struct rsec_fault f = rsec_fault_take(&c->path.fault);
	if (f.kind != RSEC_FAULT_DATA)
		return 0;
	if (f.why == RSEC_WIRE_REBUILD_VIOLATION)
		return rsec_conn_violation(c, f.text);
	return rsec_conn_fail(c, f.code, "%s (then the peer closed)", f.text);
}

/* Only this, over TLS, closes a connection; resources go at rsec_conn_destroy(). */
static int on_disconnect(struct rsec_conn *c, const struct rsec_msg *m, struct rsec_ctrl_fault *f)
{
	RSEC_GUARD(take_last_words(c));
	if (qp_failed_unseen(c))
		return rsec_ctrl_refuse(f, RSEC_E_QP, "queue pair error: in error state when the peer disconnected: %s",
					m->u.disconnect.text.s);
	/* A RESUME the server refused: our identity is no longer allowed there (setup.c). */
	c->rs.denied = c->rs.offer != NULL && m->u.disconnect.reason == RSEC_DISC_REFUSED;
	return rsec_ctrl_refuse(f, RSEC_E_CLOSED, "peer disconnected: %s", m->u.disconnect.text.s);
}

static int on_error(struct rsec_conn *c, const struct rsec_msg *m, struct rsec_ctrl_fault *f)
{
	RSEC_GUARD(take_last_words(c));
	if (qp_failed_unseen(c))
		return rsec_ctrl_refuse(f, RSEC_E_QP, "queue pair error: in error state, and the peer reported: %s",
					m->u.error.text.s);
	/* A RESUME the server refused: the session is gone there (resume.c). */
	c->rs.refused = c->rs.offer != NULL;
	/* A lane the peer would not take: say why its request failed. */
	int code = c->lane && c->path.phase != PHASE_ESTABLISHED && m->u.error.code == (uint32_t)-RSEC_E_LIMIT
			   ? RSEC_E_LIMIT : RSEC_E_CLOSED;
	return rsec_ctrl_refuse(f, code, "peer reported an error: %s", m->u.error.text.s);
}

static int on_keepalive(struct rsec_conn *c, const struct rsec_msg *m, struct rsec_ctrl_fault *f)
{
	if (m->u.keepalive.is_reply)
		return 0;
	struct rsec_msg r = *m;
	r.u.keepalive.is_reply = 1;
	int rc = rsec_chan_send(c->path.chan, c->lane, &r);
	if (rc < 0 && !rsec_chan_gone(rc))
		return rsec_ctrl_refuse(f, rc, "cannot answer KEEPALIVE");
	if (rc < 0)
		return channel_lost(f, rc, "control channel: cannot answer KEEPALIVE: %s", rsec_error_text(rc));
	c->path.chan->last_tx_ms = rsec_now_ms();
	return 0;
}

/*
 * The handlers below close the connection through their own owners: a grant
 * message's fault is path/'s, settled by rsec_conn_settle (settle.c), and
 * rebuild.c and resume.c decide their own; settle() then sees it closed.
 */

/* During a rebuild these may name grants of the old data path: grant.c sorts them out. */
static int on_grant(struct rsec_conn *c, const struct rsec_msg *m, struct rsec_ctrl_fault *f)
{
	(void)f;
	return rsec_conn_settle(c, rsec_grant_on_msg(&c->path, m));
}

static int on_rebuild(struct rsec_conn *c, const struct rsec_msg *m, struct rsec_ctrl_fault *f)
{
	(void)f;
	return rsec_rebuild_on_msg(c, m);
}

static int on_path_check(struct rsec_conn *c, const struct rsec_msg *m, struct rsec_ctrl_fault *f)
{
	(void)f;
	return rsec_rebuild_on_check(c, m);
}

static int on_session(struct rsec_conn *c, const struct rsec_msg *m, struct rsec_ctrl_fault *f)
{
	(void)f;
	return rsec_resume_on_session(c, m);
}

/*
 * A RESUME is no new connection: the application does not admit it again, it joins the parked session its token
 * and identity name. The allow rules still hold: an identity withdrawn since it connected is refused.
 */
static int on_resume(struct rsec_conn *c, const struct rsec_msg *m, struct rsec_ctrl_fault *f)
{
	RSEC_GUARD(rsec_setup_check_allowed(c, f));
	return rsec_resume_accept(c, m);
}
