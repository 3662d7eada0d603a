/* SPDX-License-Identifier: MIT */
/*
 * What is accepted when (lib/session/ctrl.c's table), without a device: a
 * connection over a real TLS 1.3 session (PSK, a socketpair), the peer's
 * frames written on the other end and taken as rsec_conn_process takes
 * them (rsec_chan_recv, rsec_ctrl_receive). Each message type once in a
 * phase that takes it (its handler ran: what it did is checked) and once
 * where none does: a protocol violation, counted, and the connection
 * closed with RSEC_E_PROTO (the peer told with an ERROR).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "conn.h"
#include "ctrl.h"
#include "test_frames.h"
#include "tls.h"

static const uint8_t psk[32] = { 2, 7, 1, 8, 2, 8, 1, 8, 2, 8, 4, 5, 9, 0, 4, 5 };

enum verdict {
	TAKEN,     /* its handler ran: check() says what it did */
	VIOLATION, /* the table refused it */
};

struct fixture;

struct ctrl_case {
	const char *name;
	struct rsec_msg msg;
	enum rsec_phase phase;
	bool client;                     /* the connection under test is a client's */
	enum verdict verdict;
	const char *why;                 /* VIOLATION: in rsec_conn_error */
	void (*prepare)(struct rsec_conn *c);
	void (*check)(struct fixture *f, int rc);
};

struct fixture {
	const struct ctrl_case *k;
	struct test_tls_pair tls; /* client: the peer's end, written and read here; server: the connection's */
	struct rsec_ctx ctx;
	struct rsec_conn *c;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	f->k = *state;
	test_tls_pair(&f->tls, psk, sizeof(psk));
	f->ctx = (struct rsec_ctx){ .is_server = !f->k->client, .handshake_timeout_ms = 10000, .max_qps = 2,
				    .aead = RSEC_AEAD_AES256GCM };
	assert_int_equal(pthread_mutex_init(&f->ctx.sessions_lock, NULL), 0);
	f->c = rsec_conn_alloc(&f->ctx, f->tls.fds[1]);
	assert_non_null(f->c);
	f->c->path.chan->ssl = f->tls.server;
	f->c->path.chan->sock = f->tls.fds[1];
	f->c->aead = RSEC_AEAD_AES256GCM;
	f->c->path.phase = f->k->phase;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	rsec_conn_free(f->c);
	test_tls_pair_free(&f->tls);
	pthread_mutex_destroy(&f->ctx.sessions_lock);
	free(f);
	return 0;
}

/* The peer sends m; the connection takes it. Returns what rsec_ctrl_receive returned. */
static int peer_sends(struct fixture *f, const struct rsec_msg *m)
{
	uint8_t frame[RSEC_WIRE_MAX_FRAME];
	size_t len = 0, done = 0;
	assert_int_equal(rsec_wire_encode(m, frame, sizeof(frame), &len), 0);
	assert_int_equal(rsec_tls_write_some(f->tls.client, frame, len, &done), 0);
	assert_int_equal(done, len);
	struct rsec_msg got;
	assert_int_equal(rsec_chan_recv(f->c->path.chan, &got), 0);
	return rsec_ctrl_receive(f->c, &got);
}

/* The next frame the peer receives, of type type. */
static void peer_receives(struct fixture *f, uint8_t type, struct rsec_msg *m)
{
	assert_true(test_read_frame(f->tls.client, m, false));
	assert_int_equal(m->type, type);
}

static void run_case(void **state)
{
	struct fixture *f = *state;
	const struct ctrl_case *k = f->k;
	if (k->prepare)
		k->prepare(f->c);
	int rc = peer_sends(f, &k->msg);
	if (k->verdict == TAKEN) {
		assert_int_equal(f->c->path.stats.protocol_violations, 0);
		k->check(f, rc);
		return;
	}
	assert_int_equal(rc, RSEC_E_PROTO);
	assert_int_equal(f->c->path.stats.protocol_violations, 1);
	assert_int_equal(f->c->path.phase, PHASE_CLOSED);
	assert_int_equal(f->c->path.close_code, RSEC_E_PROTO);
	if (!strstr(rsec_conn_error(f->c), k->why))
		fail_msg("error \"%s\" does not say \"%s\"", rsec_conn_error(f->c), k->why);
	if (k->phase == PHASE_TLS)
		return; /* nothing goes to the peer before TLS is up */
	struct rsec_msg e;
	peer_receives(f, RSEC_MSG_ERROR, &e);
	assert_int_equal(e.u.error.code, (uint32_t)-RSEC_E_PROTO);
}

/* What the handlers did. */

static void still_established(struct fixture *f, int rc)
{
	assert_int_equal(rc, 0);
	assert_int_equal(f->c->path.phase, PHASE_ESTABLISHED);
}

static void hello_answered(struct fixture *f, int rc)
{
	assert_int_equal(rc, 0);
	assert_int_equal(f->c->path.phase, PHASE_QP_INFO);
	struct rsec_msg m;
	peer_receives(f, RSEC_MSG_HELLO, &m);
}

static void resume_refused(struct fixture *f, int rc)
{
	assert_int_equal(rc, RSEC_E_CLOSED);
	assert_string_equal(rsec_conn_error(f->c), "RESUME of a session this server does not have");
}

static void session_token_kept(struct fixture *f, int rc)
{
	still_established(f, rc);
	assert_true(f->c->rs.have_token);
}

static void qp_info_checked(struct fixture *f, int rc)
{
	assert_int_equal(rc, RSEC_E_PROTO); /* its handler's check, not the table's */
	assert_non_null(strstr(rsec_conn_error(f->c), "receive buffers"));
}

static void ready_established(struct fixture *f, int rc)
{
	still_established(f, rc);
	assert_true(f->c->was_established);
}

static void keepalive_answered(struct fixture *f, int rc)
{
	still_established(f, rc);
	struct rsec_msg m;
	peer_receives(f, RSEC_MSG_KEEPALIVE, &m);
	assert_int_equal(m.u.keepalive.is_reply, 1);
	assert_int_equal(m.u.keepalive.nonce, 42);
}

static void grant_held(struct fixture *f, int rc)
{
	still_established(f, rc);
	struct rsec_remote_grant g;
	assert_true(rsec_gt_remote_take(&f->c->path.gt, 7, &g));
}

static void rebuild_weighed(struct fixture *f, int rc)
{
	assert_int_equal(rc, RSEC_E_QP); /* rebuild.c: rebuilding is off here */
	assert_non_null(strstr(rsec_conn_error(f->c), "rebuilding is off"));
}

static void rebuild_ready_noted(struct fixture *f, int rc)
{
	still_established(f, rc);
	assert_true(f->c->path.rb.peer_ready);
	f->c->path.rb.state = REBUILD_NONE;
}

static void disconnected(struct fixture *f, int rc)
{
	assert_int_equal(rc, RSEC_E_CLOSED);
	assert_string_equal(rsec_conn_error(f->c), "peer disconnected: bye");
}

static void peer_error(struct fixture *f, int rc)
{
	assert_int_equal(rc, RSEC_E_CLOSED);
	assert_string_equal(rsec_conn_error(f->c), "peer reported an error: no");
}

/* States the handlers need. */

static void resumable(struct rsec_conn *c)
{
	c->rs.peer = true;
}

static void rebuilds(struct rsec_conn *c)
{
	c->peer_rebuilds = true;
}

static void rebuild_ready_owed(struct rsec_conn *c)
{
	c->peer_rebuilds = true;
	c->path.rb.state = REBUILD_CONNECTED;
	c->path.rb.epoch = 1;
	c->path.rb.ready_owed = true;
}

#define HELLO { .type = RSEC_MSG_HELLO, .u.hello = { .min_version = 1, .max_version = 1, .aead = 1 } }
#define RESUME { .type = RSEC_MSG_RESUME }
#define SESSION { .type = RSEC_MSG_SESSION, .u.session = { .token = { 1, 2, 3 } } }
#define QP_INFO(l)                                                                                       \
	{ .type = RSEC_MSG_QP_INFO, .lane = l,                                                            \
	  .u.qp_info = { .qpn = 0x1234, .psn = 7, .mtu = 3, .link = RSEC_WIRE_LINK_ETHERNET, .recv_slots = 1, \
			 .slot_size = 4096, .max_msg = 4096 } }
#define READY { .type = RSEC_MSG_READY }
#define KEEPALIVE(l) { .type = RSEC_MSG_KEEPALIVE, .lane = l, .u.keepalive = { .nonce = 42 } }
#define GRANT                                                                                                \
	{ .type = RSEC_MSG_GRANT, .u.grant = { .grant_id = 1, .addr = 0x10000, .rkey = 5, .len = 4096,       \
					       .access = RSEC_WIRE_ACCESS_READ, .tag = 7 } }
#define REVOKE { .type = RSEC_MSG_REVOKE, .u.revoke = { .grant_id = 1 } }
/* A claim on one of our (the server's) grants: none is live, so it is dropped. */
#define VERIFY                                                                                          \
	{ .type = RSEC_MSG_VERIFY, .u.verify = { .grant_id = RSEC_GRANT_ID_SERVER | 1, .len = 16,           \
						 .mac_alg = RSEC_WIRE_MAC_HMAC_SHA256 } }
#define REBUILD                                                                                              \
	{ .type = RSEC_MSG_REBUILD, .u.rebuild = { .epoch = 1, .reason = RSEC_WIRE_REBUILD_QP,               \
						   .qp = { .qpn = 0x1234, .psn = 7, .mtu = 3,                 \
							   .link = RSEC_WIRE_LINK_ETHERNET, .recv_slots = 16,   \
							   .slot_size = 4096, .max_msg = 4096 } } }
#define REBUILD_READY { .type = RSEC_MSG_REBUILD_READY, .u.rebuild_ready = { .epoch = 1 } }
#define REKEY { .type = RSEC_MSG_REKEY, .u.rekey = { .gen = 1, .pub = { 9 } } }
#define REKEY_DONE { .type = RSEC_MSG_REKEY_DONE, .u.rekey = { .gen = 1 } }
#define DISCONNECT { .type = RSEC_MSG_DISCONNECT, .u.disconnect = { .text = { .len = 3, .s = "bye" } } }
#define ERROR_MSG { .type = RSEC_MSG_ERROR, .u.error = { .code = 5, .text = { .len = 2, .s = "no" } } }

static const struct ctrl_case cases[] = {
	{ "hello_in_hello", HELLO, PHASE_HELLO, false, TAKEN, NULL, NULL, hello_answered },
	{ "hello_established", HELLO, PHASE_ESTABLISHED, false, VIOLATION, "unexpected HELLO message", NULL, NULL },
	{ "resume_in_hello", RESUME, PHASE_HELLO, false, TAKEN, NULL, NULL, resume_refused },
	{ "resume_established", RESUME, PHASE_ESTABLISHED, false, VIOLATION, "unexpected RESUME message", NULL,
	  NULL },
	{ "resume_to_client", RESUME, PHASE_HELLO, true, VIOLATION, "unexpected RESUME message during set-up", NULL,
	  NULL },
	{ "session_established_client", SESSION, PHASE_ESTABLISHED, true, TAKEN, NULL, resumable,
	  session_token_kept },
	{ "session_established_server", SESSION, PHASE_ESTABLISHED, false, VIOLATION, "unexpected SESSION message",
	  resumable, NULL },
	{ "session_in_hello_not_resuming", SESSION, PHASE_HELLO, true, VIOLATION,
	  "unexpected SESSION message during set-up", NULL, NULL },
	{ "qp_info_in_qp_info", QP_INFO(0), PHASE_QP_INFO, false, TAKEN, NULL, NULL, qp_info_checked },
	{ "qp_info_established", QP_INFO(0), PHASE_ESTABLISHED, false, VIOLATION, "unexpected QP_INFO message",
	  NULL, NULL },
	{ "ready_in_ready", READY, PHASE_READY, false, TAKEN, NULL, NULL, ready_established },
	{ "ready_in_qp_info", READY, PHASE_QP_INFO, false, VIOLATION, "unexpected READY message during set-up",
	  NULL, NULL },
	{ "keepalive_established", KEEPALIVE(0), PHASE_ESTABLISHED, false, TAKEN, NULL, NULL, keepalive_answered },
	{ "keepalive_in_qp_info", KEEPALIVE(0), PHASE_QP_INFO, false, VIOLATION,
	  "unexpected KEEPALIVE message during set-up", NULL, NULL },
	{ "grant_established", GRANT, PHASE_ESTABLISHED, false, TAKEN, NULL, NULL, grant_held },
	{ "grant_in_hello", GRANT, PHASE_HELLO, false, VIOLATION, "unexpected GRANT message during set-up", NULL,
	  NULL },
	{ "revoke_established", REVOKE, PHASE_ESTABLISHED, false, TAKEN, NULL, NULL, still_established },
	{ "revoke_in_ready", REVOKE, PHASE_READY, false, VIOLATION, "unexpected REVOKE message during set-up", NULL,
	  NULL },
	{ "verify_established", VERIFY, PHASE_ESTABLISHED, false, TAKEN, NULL, NULL, still_established },
	{ "verify_in_qp_info", VERIFY, PHASE_QP_INFO, false, VIOLATION, "unexpected VERIFY message during set-up",
	  NULL, NULL },
	{ "rebuild_established", REBUILD, PHASE_ESTABLISHED, false, TAKEN, NULL, rebuilds, rebuild_weighed },
	{ "rebuild_in_ready", REBUILD, PHASE_READY, false, VIOLATION, "unexpected REBUILD message during set-up",
	  rebuilds, NULL },
	{ "rebuild_ready_established", REBUILD_READY, PHASE_ESTABLISHED, false, TAKEN, NULL, rebuild_ready_owed,
	  rebuild_ready_noted },
	{ "rebuild_ready_in_hello", REBUILD_READY, PHASE_HELLO, false, VIOLATION,
	  "unexpected REBUILD_READY message during set-up", NULL, NULL },
	{ "rekey_in_qp_info", REKEY, PHASE_QP_INFO, false, VIOLATION, "unexpected REKEY message during set-up", NULL,
	  NULL },
	/* This connection's peer did not offer RSEC_WIRE_FEATURE_REKEY (test_rekey has the exchange itself). */
	{ "rekey_done_not_offered", REKEY_DONE, PHASE_ESTABLISHED, false, VIOLATION,
	  "REKEY_DONE from a peer that did not offer rekeying", NULL, NULL },
	{ "disconnect_in_hello", DISCONNECT, PHASE_HELLO, false, TAKEN, NULL, NULL, disconnected },
	{ "disconnect_established", DISCONNECT, PHASE_ESTABLISHED, false, TAKEN, NULL, NULL, disconnected },
	{ "disconnect_before_tls", DISCONNECT, PHASE_TLS, false, VIOLATION,
	  "unexpected DISCONNECT message during set-up", NULL, NULL },
	{ "error_in_qp_info", ERROR_MSG, PHASE_QP_INFO, false, TAKEN, NULL, NULL, peer_error },
	{ "error_before_tls", ERROR_MSG, PHASE_TLS, false, VIOLATION, "unexpected ERROR message during set-up", NULL,
	  NULL },
	/* Only the session's own: a lane may not carry these (the session closes, not a lane). */
	{ "keepalive_on_lane", KEEPALIVE(1), PHASE_ESTABLISHED, false, VIOLATION,
	  "KEEPALIVE for queue pair 2: only the session's own", NULL, NULL },
	{ "hello_on_lane", { .type = RSEC_MSG_HELLO, .lane = 1, .u.hello = { .min_version = 1, .max_version = 1,
									       .aead = 1 } },
	  PHASE_ESTABLISHED, false, VIOLATION, "HELLO for queue pair 2: only the session's own", NULL, NULL },
	{ "lane_before_session", QP_INFO(1), PHASE_QP_INFO, false, VIOLATION,
	  "a frame for a further queue pair before the session was set up", NULL, NULL },
};

#define NCASES (sizeof(cases) / sizeof(cases[0]))

/* The table as documented: which types a lane may carry. */
static void test_lane_column(void **state)
{
	(void)state;
	const uint8_t session_only[] = { RSEC_MSG_HELLO, RSEC_MSG_KEEPALIVE, RSEC_MSG_SESSION, RSEC_MSG_RESUME,
					 RSEC_MSG_RESERVED };
	const uint8_t lane_too[] = { RSEC_MSG_QP_INFO, RSEC_MSG_READY, RSEC_MSG_GRANT, RSEC_MSG_REVOKE,
				     RSEC_MSG_VERIFY, RSEC_MSG_REBUILD, RSEC_MSG_REBUILD_READY, RSEC_MSG_DISCONNECT,
				     RSEC_MSG_ERROR, RSEC_MSG_REKEY, RSEC_MSG_REKEY_REPLY, RSEC_MSG_REKEY_DONE };
	for (size_t i = 0; i < sizeof(session_only); i++)
		assert_false(rsec_ctrl_lane_may_carry(session_only[i]));
	for (size_t i = 0; i < sizeof(lane_too); i++)
		assert_true(rsec_ctrl_lane_may_carry(lane_too[i]));
	/* SESSION and RESUME on a lane do not even pass the codec (wire.c): the table agrees. */
	uint8_t frame[RSEC_WIRE_MAX_FRAME];
	size_t len = 0;
	struct rsec_msg m = { .type = RSEC_MSG_SESSION, .lane = 1 };
	assert_int_equal(rsec_wire_encode(&m, frame, sizeof(frame), &len), RSEC_E_RANGE);
	m.type = RSEC_MSG_RESUME;
	assert_int_equal(rsec_wire_encode(&m, frame, sizeof(frame), &len), RSEC_E_RANGE);
}

/* The one require-established rule of the API calls (include/rdmasec.h). */
static void test_require_established(void **state)
{
	(void)state;
	static struct rsec_op_slot ring[1];
	struct rsec_conn *c = calloc(1, sizeof(*c)); /* a big struct: not on the stack */
	assert_non_null(c);
	c->path.phase = PHASE_QP_INFO;
	assert_int_equal(rsec_path_usable(&c->path, false), RSEC_E_AGAIN);
	assert_int_equal(rsec_path_usable(&c->path, true), RSEC_E_AGAIN);
	c->path.phase = PHASE_ESTABLISHED;
	assert_int_equal(rsec_path_usable(&c->path, false), 0);
	assert_int_equal(rsec_path_usable(&c->path, true), RSEC_E_AGAIN); /* no one-sided ring */
	c->path.ops.ring = ring;
	assert_int_equal(rsec_path_usable(&c->path, true), 0);
	c->path.rb.state = REBUILD_PARKED; /* the session waits to be resumed */
	assert_int_equal(rsec_path_usable(&c->path, true), RSEC_E_AGAIN);
	assert_int_equal(rsec_path_usable(&c->path, false), 0);
	c->path.rb.state = REBUILD_SENT;
	assert_int_equal(rsec_path_usable(&c->path, true), RSEC_E_AGAIN);
	c->path.phase = PHASE_CLOSED;
	c->path.close_code = RSEC_E_QP;
	assert_int_equal(rsec_path_usable(&c->path, false), RSEC_E_QP);
	assert_int_equal(rsec_path_usable(&c->path, true), RSEC_E_QP);
	free(c);
}

int main(void)
{
	struct CMUnitTest tests[NCASES + 2];
	for (size_t i = 0; i < NCASES; i++)
		tests[i] = (struct CMUnitTest){ .name = cases[i].name, .test_func = run_case, .setup_func = setup,
						.teardown_func = teardown, .initial_state = (void *)&cases[i] };
	tests[NCASES] = (struct CMUnitTest){ .name = "lane_column", .test_func = test_lane_column };
	tests[NCASES + 1] = (struct CMUnitTest){ .name = "require_established", .test_func = test_require_established };
	return cmocka_run_group_tests(tests, NULL, NULL);
}
