/* SPDX-License-Identifier: MIT */
/*
 * Control messages: what is accepted when (ctrl.c's table), and the handlers
 * of set-up's messages (setup.c). A handler only reports: it returns 0 or an
 * error with a fault saying what it means; rsec_ctrl_receive settles it, the
 * one place a control message fails a connection.
 */
#ifndef RSEC_CTRL_H
#define RSEC_CTRL_H

#include <stdbool.h>

#include "conn.h"

/* What a handler's error means for the connection. */
enum rsec_ctrl_kind {
	CTRL_FAIL = 0,     /* it fails with the error */
	CTRL_VIOLATION,    /* the peer broke the protocol: counted, audited, RSEC_E_PROTO */
	CTRL_CHANNEL_LOST, /* the control channel is gone: the session may park (resume.c) */
};

struct rsec_ctrl_fault {
	enum rsec_ctrl_kind kind;
	char why[256]; /* empty: settled already (a path fault: rsec_conn_settle; rebuild.c, resume.c) */
};

/* Record a fault of kind CTRL_FAIL: returns code. */
int rsec_ctrl_refuse(struct rsec_ctrl_fault *f, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Record a protocol violation: returns RSEC_E_PROTO. */
int rsec_ctrl_violation(struct rsec_ctrl_fault *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * A frame the session's channel carried (root: lane 0's connection):
 * checked against the table, handed to its connection's handler, and its
 * fault settled on that connection. Returns 0, or root's failure (a lane's
 * failure closes that lane alone).
 */
RSEC_MUST_CHECK int rsec_ctrl_receive(struct rsec_conn *root, const struct rsec_msg *m);
/* The same for a frame already routed to c (a lane, or the root), without the lane checks. */
RSEC_MUST_CHECK int rsec_ctrl_handle(struct rsec_conn *c, const struct rsec_msg *m);
/* May a frame of this type name a lane (lane != 0)? */
bool rsec_ctrl_lane_may_carry(uint8_t type);

/* setup.c: the handlers of set-up's messages. */
RSEC_MUST_CHECK int rsec_setup_on_hello(struct rsec_conn *c, const struct rsec_msg *m, struct rsec_ctrl_fault *f);
RSEC_MUST_CHECK int rsec_setup_on_qp_info(struct rsec_conn *c, const struct rsec_msg *m, struct rsec_ctrl_fault *f);
RSEC_MUST_CHECK int rsec_setup_on_ready(struct rsec_conn *c, const struct rsec_msg *m, struct rsec_ctrl_fault *f);
/* Server: 0 if the allow rules in force let c's peer in, else c is refused (a DISCONNECT, audited). */
RSEC_MUST_CHECK int rsec_setup_check_allowed(struct rsec_conn *c, struct rsec_ctrl_fault *f);
/* TLS is up: the peer's identity; a client's HELLO, or its RESUME of a parked session. */
RSEC_MUST_CHECK int rsec_setup_tls_done(struct rsec_conn *c);

/* rekey_exchange.c: REKEY, REKEY_REPLY and REKEY_DONE. */
RSEC_MUST_CHECK int rsec_rekey_on_msg(struct rsec_conn *c, const struct rsec_msg *m, struct rsec_ctrl_fault *f);

/* lane.c: route a frame for lane m->lane != 0 of root (established); 0, or an error with f. */
RSEC_MUST_CHECK int rsec_lane_route(struct rsec_conn *root, const struct rsec_msg *m, struct rsec_ctrl_fault *f);

#endif /* RSEC_CTRL_H */
