/* SPDX-License-Identifier: MIT */
/*
 * Resuming a session on a new control channel (lib/session/resume.c)
 * without a device: a server's established session over a real TLS 1.3
 * session, its queue pair a stand-in (test_fakeqp.h), and a second TLS
 * session (a new connection) that offers RESUME. Which RESUME the server
 * takes (token, identity, a session still established), what it answers
 * (SESSION, with the epochs when both offered them), what a second resume
 * while one is under way does, when a lost channel parks the session and
 * when it closes instead (docs/protocol.md, "Resuming a session").
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "conn.h"
#include "ctrl.h"
#include "test_frames.h"
#include "test_fakeqp.h"

static const uint8_t psk[32] = { 6, 0, 2, 2, 1, 4, 0, 7, 6, 2, 7, 0, 0, 4, 0, 8 };

struct fixture {
	struct fake_conn f;            /* the session, s = f.c */
	uint8_t token[RSEC_WIRE_TOKEN_LEN]; /* its name, as the client read it from SESSION */
	struct test_tls_pair chan[2];  /* new control channels */
	struct rsec_conn *n[2];        /* the server's connections on them, before RESUME */
};

static int setup(void **state)
{
	struct fixture *x = calloc(1, sizeof(*x));
	assert_non_null(x);
	fake_conn_setup(&x->f, psk, sizeof(psk), 6);
	struct rsec_conn *s = x->f.c;
	s->rs.peer = true;
	rsec_resume_established(s);
	assert_true(s->rs.have_token && s->rs.registered);
	struct rsec_msg m;
	peer_gets(&x->f, RSEC_MSG_SESSION, &m);
	memcpy(x->token, m.u.session.token, sizeof(x->token));
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *x = *state;
	for (int i = 0; i < 2; i++) {
		if (!x->chan[i].client)
			continue;
		rsec_conn_free(x->n[i]);
		test_tls_pair_free(&x->chan[i]);
	}
	fake_conn_teardown(&x->f);
	free(x);
	return 0;
}

/* A new connection i from the client (identity peer) through TLS, waiting for its HELLO or RESUME. */
static struct rsec_conn *new_channel(struct fixture *x, int i, const char *peer)
{
	test_tls_pair(&x->chan[i], psk, sizeof(psk));
	struct rsec_conn *n = rsec_conn_alloc(&x->f.ctx, x->chan[i].fds[1]);
	assert_non_null(n);
	n->path.chan->ssl = x->chan[i].server;
	n->path.chan->sock = x->chan[i].fds[1];
	n->path.phase = PHASE_HELLO;
	snprintf(n->peer, sizeof(n->peer), "%s", peer);
	x->n[i] = n;
	return n;
}

/* Channel i offers RESUME of token (with our epoch, if has_epoch); the server's answer to it. */
static int offers(struct fixture *x, int i, const uint8_t *token, bool has_epoch, uint32_t epoch)
{
	struct rsec_msg m = { .type = RSEC_MSG_RESUME };
	memcpy(m.u.session.token, token, RSEC_WIRE_TOKEN_LEN);
	m.u.session.has_epoch = has_epoch;
	m.u.session.epoch = epoch;
	return rsec_resume_accept(x->n[i], &m);
}

/* The next frame on channel i's client end, of type want. */
static void channel_gets(struct fixture *x, int i, uint8_t want, struct rsec_msg *m)
{
	assert_true(test_read_frame(x->chan[i].client, m, true));
	assert_int_equal(m->type, want);
}

/* The server refused channel i's RESUME: ERROR to the client, the connection closed; the session untouched. */
static void refused(struct fixture *x, int i, int rc)
{
	struct rsec_conn *s = x->f.c;
	assert_int_equal(rc, RSEC_E_CLOSED);
	assert_int_equal(x->n[i]->path.phase, PHASE_CLOSED);
	assert_non_null(strstr(rsec_conn_error(x->n[i]), "RESUME of a session this server does not have"));
	struct rsec_msg m;
	channel_gets(x, i, RSEC_MSG_ERROR, &m);
	assert_int_equal(m.u.error.code, (uint32_t)-RSEC_E_CLOSED);
	assert_int_equal(s->path.stats.resumes, 0);
	assert_int_equal(s->path.chan->sock, x->f.tls.fds[1]);
}

/* The session moved to channel i: the connection handed over, SESSION with the token, then our REBUILD. */
static void resumed_on(struct fixture *x, int i, int rc, struct rsec_msg *rebuild)
{
	struct rsec_conn *s = x->f.c;
	assert_int_equal(rc, RSEC_E_CLOSED);
	assert_non_null(strstr(rsec_conn_error(x->n[i]), "handed over"));
	assert_int_equal(x->n[i]->path.chan->sock, -1);
	assert_null(x->n[i]->path.chan->ssl);
	assert_int_equal(s->path.phase, PHASE_ESTABLISHED);
	assert_int_equal(s->path.chan->sock, x->chan[i].fds[1]);
	assert_ptr_equal(s->path.chan, &s->own_chan); /* moved whole into the session's own, which now watches it */
	assert_ptr_equal(s->own_chan.owner, s);
	assert_false(s->rs.parked);
	struct rsec_msg m;
	channel_gets(x, i, RSEC_MSG_SESSION, &m);
	assert_memory_equal(m.u.session.token, x->token, RSEC_WIRE_TOKEN_LEN);
	channel_gets(x, i, RSEC_MSG_REBUILD, rebuild);
	assert_int_equal(rebuild->u.rebuild.reason, RSEC_WIRE_REBUILD_CHANNEL);
	assert_int_equal(s->path.rb.state, REBUILD_SENT);
}

/* The right token from the same identity: the session, not yet aware its channel went, resumes. */
static void resumes(void **state)
{
	struct fixture *x = *state;
	new_channel(x, 0, "psk:node-a");
	struct rsec_msg m;
	resumed_on(x, 0, offers(x, 0, x->token, false, 0), &m);
	assert_int_equal(m.u.rebuild.epoch, 1);
	assert_int_equal(x->f.c->path.stats.resumes, 1);
}

static void unknown_token_refused(void **state)
{
	struct fixture *x = *state;
	new_channel(x, 0, "psk:node-a");
	uint8_t other[RSEC_WIRE_TOKEN_LEN];
	memcpy(other, x->token, sizeof(other));
	other[RSEC_WIRE_TOKEN_LEN - 1] ^= 1;
	refused(x, 0, offers(x, 0, other, false, 0));
}

/* A token is no use to another identity. */
static void other_identity_refused(void **state)
{
	struct fixture *x = *state;
	new_channel(x, 0, "psk:node-b");
	refused(x, 0, offers(x, 0, x->token, false, 0));
}

/* A session that ended is not resumed, though its connection is not freed yet. */
static void ended_session_refused(void **state)
{
	struct fixture *x = *state;
	(void)rsec_conn_fail(x->f.c, RSEC_E_PROTO, "ended");
	new_channel(x, 0, "psk:node-a");
	struct rsec_msg m;
	peer_gets(&x->f, RSEC_MSG_ERROR, &m);
	struct rsec_conn *s = x->f.c;
	int rc = offers(x, 0, x->token, false, 0);
	assert_int_equal(rc, RSEC_E_CLOSED);
	assert_non_null(strstr(rsec_conn_error(x->n[0]), "RESUME of a session this server does not have"));
	channel_gets(x, 0, RSEC_MSG_ERROR, &m);
	assert_int_equal(s->path.stats.resumes, 0);
}

/*
 * The allow rules hold at resumption: with node-a withdrawn since it connected, its RESUME (the right token) is
 * refused in a DISCONNECT and audited as a refusal; the session is untouched, and a reload's recheck closes it.
 */
static void withdrawn_identity_refused(void **state)
{
	struct fixture *x = *state;
	struct rsec_conn *s = x->f.c;
	static const char *const rules[] = { "psk:node-b" };
	char err[128];
	assert_int_equal(rsec_ctx_set_allow(&x->f.ctx, rules, 1, err, sizeof(err)), 0);
	struct rsec_conn *n = new_channel(x, 0, "psk:node-a");
	struct rsec_msg m = { .type = RSEC_MSG_RESUME };
	memcpy(m.u.session.token, x->token, RSEC_WIRE_TOKEN_LEN);
	assert_int_equal(rsec_ctrl_handle(n, &m), RSEC_E_DENIED);
	assert_int_equal(n->path.phase, PHASE_CLOSED);
	assert_true(n->admit_refused);
	assert_non_null(strstr(rsec_conn_error(n), "1 allow rule: psk:node-b"));
	channel_gets(x, 0, RSEC_MSG_DISCONNECT, &m);
	assert_int_equal(m.u.disconnect.reason, RSEC_DISC_REFUSED);
	assert_int_equal(s->path.stats.resumes, 0);
	assert_int_equal(s->path.chan->sock, x->f.tls.fds[1]);
	char why[128];
	assert_int_equal(rsec_conn_check_peer(s, why, sizeof(why)), RSEC_E_AUTH);
	assert_string_equal(why, "no longer allowed (1 allow rule: psk:node-b)");
	/* Allowed again: the same RESUME is taken. */
	static const char *const both[] = { "psk:node-b", "psk:node-a" };
	assert_int_equal(rsec_ctx_set_allow(&x->f.ctx, both, 2, err, sizeof(err)), 0);
	assert_int_equal(rsec_conn_check_peer(s, why, sizeof(why)), 0);
	new_channel(x, 1, "psk:node-a");
	resumed_on(x, 1, offers(x, 1, x->token, false, 0), &m);
}

/* A client's new channel that the server refused for its identity notes it (try_once then gives up at once). */
static void client_notes_denial(void **state)
{
	struct fixture *x = *state;
	struct rsec_conn *n = new_channel(x, 0, "psk:server");
	n->is_server = false;
	n->rs.offer = x->token;
	struct rsec_msg m = { .type = RSEC_MSG_DISCONNECT };
	m.u.disconnect.reason = RSEC_DISC_REFUSED;
	rsec_wire_text_set(&m.u.disconnect.text, "refused: not authorized");
	assert_int_equal(rsec_ctrl_handle(n, &m), RSEC_E_CLOSED);
	assert_true(n->rs.denied);
	assert_false(n->rs.refused);
}

/* A parked session whose grace period passed has ended: a client just too late is refused. */
static void expired_session_refused(void **state)
{
	struct fixture *x = *state;
	struct rsec_conn *s = x->f.c;
	assert_int_equal(rsec_resume_lost(s, RSEC_E_IO, "reset by peer"), 0);
	s->rs.until_ms = rsec_now_ms() - 1;
	assert_int_equal(rsec_resume_step(s), RSEC_E_TIMEOUT);
	new_channel(x, 0, "psk:node-a");
	int rc = offers(x, 0, x->token, false, 0);
	assert_int_equal(rc, RSEC_E_CLOSED);
	assert_non_null(strstr(rsec_conn_error(x->n[0]), "RESUME of a session this server does not have"));
	struct rsec_msg m;
	channel_gets(x, 0, RSEC_MSG_ERROR, &m);
	assert_int_equal(s->path.stats.resumes, 0);
	assert_int_equal(s->path.chan->sock, -1);
}

/* Both offered epochs: SESSION says ours, and both build the epoch after the later one. */
static void epochs_when_both_offered(void **state)
{
	struct fixture *x = *state;
	struct rsec_conn *s = x->f.c;
	s->rs.epochs = true;
	s->path.rb.epoch = 5;
	new_channel(x, 0, "psk:node-a");
	int rc = offers(x, 0, x->token, true, 6);
	assert_int_equal(rc, RSEC_E_CLOSED);
	struct rsec_msg m;
	channel_gets(x, 0, RSEC_MSG_SESSION, &m);
	assert_true(m.u.session.has_epoch);
	assert_int_equal(m.u.session.epoch, 5);
	channel_gets(x, 0, RSEC_MSG_REBUILD, &m);
	assert_int_equal(m.u.rebuild.epoch, 7);
	assert_int_equal(m.u.rebuild.opened, 0); /* the peer's epoch-6 frames: none opened */
}

/* A peer's epoch is taken only when both offered them: else the old rule, ours + 1. */
static void epoch_ignored_unless_both_offered(void **state)
{
	struct fixture *x = *state;
	struct rsec_conn *s = x->f.c;
	s->path.rb.epoch = 5;
	new_channel(x, 0, "psk:node-a");
	int rc = offers(x, 0, x->token, true, 6);
	assert_int_equal(rc, RSEC_E_CLOSED);
	assert_false(s->rs.peer_epoch_known);
	struct rsec_msg m;
	channel_gets(x, 0, RSEC_MSG_SESSION, &m);
	assert_false(m.u.session.has_epoch);
	channel_gets(x, 0, RSEC_MSG_REBUILD, &m);
	assert_int_equal(m.u.rebuild.epoch, 6);
}

/* A second RESUME while the first one's rebuild is under way: the later channel takes the session. */
static void second_resume_takes_over(void **state)
{
	struct fixture *x = *state;
	struct rsec_conn *s = x->f.c;
	struct rsec_msg m;
	new_channel(x, 0, "psk:node-a");
	resumed_on(x, 0, offers(x, 0, x->token, false, 0), &m);
	new_channel(x, 1, "psk:node-a");
	resumed_on(x, 1, offers(x, 1, x->token, false, 0), &m);
	assert_int_equal(m.u.rebuild.epoch, 1);
	assert_int_equal(s->path.stats.resumes, 2);
	assert_int_equal(s->path.rb.started_next, 2); /* each lost channel counted against the rebuild budget */
}

/* Past the rebuild budget, the second RESUME ends the session and is refused. */
static void second_resume_past_budget(void **state)
{
	struct fixture *x = *state;
	struct rsec_conn *s = x->f.c;
	struct rsec_msg m;
	x->f.ctx.rebuilds_per_min = 1;
	new_channel(x, 0, "psk:node-a");
	resumed_on(x, 0, offers(x, 0, x->token, false, 0), &m);
	new_channel(x, 1, "psk:node-a");
	int rc = offers(x, 1, x->token, false, 0);
	assert_int_equal(rc, RSEC_E_CLOSED);
	assert_non_null(strstr(rsec_conn_error(x->n[1]), "RESUME of a session this server does not have"));
	channel_gets(x, 1, RSEC_MSG_ERROR, &m);
	assert_int_equal(s->path.phase, PHASE_CLOSED);
	assert_non_null(strstr(rsec_conn_error(s), "not resumed: rebuilt 1 times in the last minute"));
}

/* A lost channel parks the session for its grace period: channel dropped, data path stopped. */
static void lost_channel_parks(void **state)
{
	struct fixture *x = *state;
	struct rsec_conn *s = x->f.c;
	uint64_t before = rsec_now_ms();
	assert_int_equal(rsec_resume_lost(s, RSEC_E_IO, "reset by peer"), 0);
	assert_true(s->rs.parked);
	assert_int_equal(s->path.phase, PHASE_ESTABLISHED);
	assert_int_equal(s->path.rb.state, REBUILD_PARKED);
	assert_int_equal(s->path.chan->sock, -1);
	assert_null(s->path.chan->ssl);
	assert_true(s->rs.until_ms >= before + 8000);
	assert_int_equal(rsec_resume_next_ms(s), s->rs.until_ms); /* a server waits for the client */
	assert_int_equal(rsec_resume_step(s), 0);
	s->rs.until_ms = rsec_now_ms() - 1;
	assert_int_equal(rsec_resume_step(s), RSEC_E_TIMEOUT);
	assert_non_null(strstr(rsec_conn_error(s), "control channel lost (reset by peer) and not resumed within 8000 ms"));
}

/* Without a grace period, a token, or with a rebuild connected and no epochs: the loss closes. */
static void lost_channel_closes(struct fixture *x, int code)
{
	struct rsec_conn *s = x->f.c;
	assert_int_equal(rsec_resume_lost(s, code, "reset by peer"), code);
	assert_int_equal(s->path.phase, PHASE_CLOSED);
	assert_false(s->rs.parked);
	assert_non_null(strstr(rsec_conn_error(s), "reset by peer"));
}

static void no_grace_closes(void **state)
{
	struct fixture *x = *state;
	x->f.ctx.resume_grace_ms = 0;
	lost_channel_closes(x, RSEC_E_IO);
}

static void no_token_closes(void **state)
{
	struct fixture *x = *state;
	rsec_resume_forget(x->f.c);
	lost_channel_closes(x, RSEC_E_TLS);
}

static void connected_rebuild_without_epochs_closes(void **state)
{
	struct fixture *x = *state;
	x->f.c->path.rb.state = REBUILD_CONNECTED;
	lost_channel_closes(x, RSEC_E_IO);
}

static void connected_rebuild_with_epochs_parks(void **state)
{
	struct fixture *x = *state;
	x->f.c->path.rb.state = REBUILD_CONNECTED;
	x->f.c->rs.epochs = true;
	assert_int_equal(rsec_resume_lost(x->f.c, RSEC_E_IO, "reset by peer"), 0);
	assert_true(x->f.c->rs.parked);
}

/* A client's SESSION: a token once; on a resuming channel, the session it offered and no other. */
static void client_session_rules(void **state)
{
	struct fixture *x = *state;
	struct rsec_conn *c = x->f.c;
	c->is_server = false;
	rsec_resume_forget(c);
	struct rsec_msg m = { .type = RSEC_MSG_SESSION };
	memcpy(m.u.session.token, x->token, sizeof(x->token));
	assert_int_equal(rsec_resume_on_session(c, &m), 0);
	assert_true(c->rs.have_token);
	assert_memory_equal(c->rs.token, x->token, sizeof(x->token));
	int rc = rsec_resume_on_session(c, &m);
	assert_int_equal(rc, RSEC_E_PROTO);
	assert_non_null(strstr(rsec_conn_error(c), "unexpected SESSION"));
}

static void client_answer_names_the_offer(void **state)
{
	struct fixture *x = *state;
	struct rsec_conn *c = x->f.c;
	c->is_server = false;
	c->rs.offer = x->token;
	c->rs.epochs = true;
	struct rsec_msg m = { .type = RSEC_MSG_SESSION };
	memcpy(m.u.session.token, x->token, sizeof(x->token));
	m.u.session.has_epoch = true;
	m.u.session.epoch = 3;
	assert_int_equal(rsec_resume_on_session(c, &m), 0);
	assert_true(c->rs.answered);
	assert_true(c->rs.peer_epoch_known);
	assert_int_equal(c->rs.peer_epoch, 3);
	m.u.session.token[0] ^= 1;
	c->rs.answered = false;
	int rc = rsec_resume_on_session(c, &m);
	assert_int_equal(rc, RSEC_E_PROTO);
	assert_false(c->rs.answered);
	assert_non_null(strstr(rsec_conn_error(c), "SESSION names another session than the one offered"));
}

/* A server never takes SESSION. */
static void server_refuses_session(void **state)
{
	struct fixture *x = *state;
	rsec_resume_forget(x->f.c); /* with a token, a second SESSION would be refused anyway */
	struct rsec_msg m = { .type = RSEC_MSG_SESSION };
	int rc = rsec_resume_on_session(x->f.c, &m);
	assert_int_equal(rc, RSEC_E_PROTO);
	assert_non_null(strstr(rsec_conn_error(x->f.c), "unexpected SESSION"));
	assert_false(x->f.c->rs.have_token);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(resumes, setup, teardown),
		cmocka_unit_test_setup_teardown(unknown_token_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(other_identity_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(ended_session_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(expired_session_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(withdrawn_identity_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(client_notes_denial, setup, teardown),
		cmocka_unit_test_setup_teardown(epochs_when_both_offered, setup, teardown),
		cmocka_unit_test_setup_teardown(epoch_ignored_unless_both_offered, setup, teardown),
		cmocka_unit_test_setup_teardown(second_resume_takes_over, setup, teardown),
		cmocka_unit_test_setup_teardown(second_resume_past_budget, setup, teardown),
		cmocka_unit_test_setup_teardown(lost_channel_parks, setup, teardown),
		cmocka_unit_test_setup_teardown(no_grace_closes, setup, teardown),
		cmocka_unit_test_setup_teardown(no_token_closes, setup, teardown),
		cmocka_unit_test_setup_teardown(connected_rebuild_without_epochs_closes, setup, teardown),
		cmocka_unit_test_setup_teardown(connected_rebuild_with_epochs_parks, setup, teardown),
		cmocka_unit_test_setup_teardown(client_session_rules, setup, teardown),
		cmocka_unit_test_setup_teardown(client_answer_names_the_offer, setup, teardown),
		cmocka_unit_test_setup_teardown(server_refuses_session, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
