/* SPDX-License-Identifier: MIT */
/*
 * Rebuilding the data path (lib/session/rebuild.c) without a device: an
 * established session over a real TLS 1.3 session, its queue pair a
 * stand-in (test_fakeqp.h). The peer's REBUILD and REBUILD_READY are what a
 * test writes; ours are read off the peer's end. What each decision of
 * docs/protocol.md, "Rebuilding the data path", leads to: the budget per
 * minute, a rebuild asked for in each state, messages out of turn, and
 * rebuilding off or impossible (the connection closes, saying why).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "conn.h"
#include "test_frames.h"
#include "test_fakeqp.h"

static const uint8_t psk[32] = { 1, 7, 3, 2, 0, 5, 0, 8, 0, 7, 5, 6, 8, 8, 7, 7 };

#define BUDGET 2u

static int setup(void **state)
{
	struct fake_conn *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	fake_conn_setup(f, psk, sizeof(psk), BUDGET);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fake_conn *f = *state;
	fake_conn_teardown(f);
	free(f);
	return 0;
}

/* The peer's REBUILD for epoch, having opened `opened` of our frames, its new QP qpn. */
static int peer_rebuilds(struct fake_conn *f, uint32_t epoch, uint64_t opened, uint32_t qpn)
{
	struct rsec_msg m = { .type = RSEC_MSG_REBUILD };
	m.u.rebuild = (struct rsec_msg_rebuild){ .epoch = epoch, .reason = RSEC_WIRE_REBUILD_QP, .opened = opened,
						 .qp = fake_peer_qp(qpn) };
	return rsec_rebuild_on_msg(f->c, &m);
}

static int peer_ready(struct fake_conn *f, uint32_t epoch)
{
	struct rsec_msg m = { .type = RSEC_MSG_REBUILD_READY };
	m.u.rebuild_ready.epoch = epoch;
	return rsec_rebuild_on_msg(f->c, &m);
}

/* A fault of our own data path, as data.c reports one. */
static int fault(struct fake_conn *f)
{
	return rsec_rebuild_fault(f->c, RSEC_WIRE_REBUILD_QP, RSEC_E_QP, "queue pair error: %s", "test");
}

/* The connection closed as a violation of the protocol, its error saying what. */
static void violated(struct fake_conn *f, int rc, const char *what)
{
	assert_int_equal(rc, RSEC_E_PROTO);
	assert_int_equal(f->c->path.phase, PHASE_CLOSED);
	assert_int_equal(f->c->path.stats.protocol_violations, 1);
	assert_non_null(strstr(rsec_conn_error(f->c), what));
}

/* One whole rebuild we start: our REBUILD, the peer's, both REBUILD_READYs; the epoch built. */
static void one_rebuild(struct fake_conn *f, uint32_t epoch)
{
	struct rsec_msg m;
	assert_int_equal(fault(f), 1);
	assert_int_equal(f->c->path.rb.state, REBUILD_SENT);
	peer_gets(f, RSEC_MSG_REBUILD, &m);
	assert_int_equal(m.u.rebuild.epoch, epoch);
	assert_int_equal(peer_rebuilds(f, epoch, 0, 0x90 + epoch), 0);
	assert_int_equal(f->c->path.rb.state, REBUILD_CONNECTED);
	peer_gets(f, RSEC_MSG_REBUILD_READY, &m);
	assert_int_equal(m.u.rebuild_ready.epoch, epoch);
	assert_int_equal(peer_ready(f, epoch), 0);
	assert_int_equal(f->c->path.rb.state, REBUILD_NONE);
	assert_int_equal(f->c->path.rb.epoch, epoch);
}

/*
 * The peer saw the fault first: we stop, answer with our REBUILD, connect
 * the new QP to the peer's, say REBUILD_READY; its REBUILD_READY ends the
 * rebuild, and frames sealed with epoch 1's keys are opened.
 */
static void answers_the_peers_rebuild(void **state)
{
	struct fake_conn *f = *state;
	struct rsec_conn *c = f->c;
	/* The peer's keys of epoch 1. */
	struct rsec_seal next = { 0 };
	assert_int_equal(rsec_seal_from_tls(&next, f->tls.client, false, c->aead, 0, 1), 0);
	uint32_t old_qpn = c->path.qp.qp->qp_num;
	assert_int_equal(peer_rebuilds(f, 1, 0, 0x99), 0);
	struct rsec_msg m;
	peer_gets(f, RSEC_MSG_REBUILD, &m);
	assert_int_equal(m.u.rebuild.epoch, 1);
	assert_int_equal(m.u.rebuild.reason, RSEC_WIRE_REBUILD_ANSWER);
	assert_true(m.u.rebuild.qp.qpn != old_qpn);
	peer_gets(f, RSEC_MSG_REBUILD_READY, &m);
	assert_int_equal(m.u.rebuild_ready.epoch, 1);
	assert_int_equal(c->path.rb.state, REBUILD_CONNECTED);
	assert_int_equal(c->path.qp.qp->state, IBV_QPS_RTS);
	assert_int_equal(c->path.remote.qpn, 0x99);
	assert_null(rsec_conn_rebuild_reason(c)); /* not over yet */
	assert_int_equal(peer_ready(f, 1), 0);
	assert_int_equal(c->path.rb.state, REBUILD_NONE);
	assert_int_equal(c->path.stats.rebuilds, 1);
	assert_non_null(strstr(rsec_conn_rebuild_reason(c), "the peer's side: the queue pair failed"));
	/* The new epoch's keys on both sides. */
	peer_sends(f, next.tx, 0, "after", 6);
	assert_int_equal(rsec_conn_poll_data(c), 0);
	assert_true(c->path.rx_complete);
	rsec_seal_free(&next);
	assert_int_equal(c->path.phase, PHASE_ESTABLISHED);
}

/* Rebuilds are bounded per minute: past the budget a fault closes with its own code, and says so. */
static void budget_per_minute(void **state)
{
	struct fake_conn *f = *state;
	for (uint32_t e = 1; e <= BUDGET; e++)
		one_rebuild(f, e);
	int rc = fault(f);
	assert_int_equal(rc, RSEC_E_QP);
	assert_int_equal(f->c->path.phase, PHASE_CLOSED);
	assert_non_null(strstr(rsec_conn_error(f->c), "not rebuilt: rebuilt 2 times in the last minute, the limit"));
	struct rsec_msg m;
	peer_gets(f, RSEC_MSG_ERROR, &m);
	assert_int_equal(m.u.error.code, (uint32_t)-RSEC_E_QP);
}

/* The peer's request counts against the same budget. */
static void budget_counts_the_peers_requests(void **state)
{
	struct fake_conn *f = *state;
	uint64_t now = rsec_now_ms();
	for (unsigned i = 0; i < BUDGET; i++)
		f->c->path.rb.started_ms[i] = now;
	int rc = peer_rebuilds(f, 1, 0, 0x99);
	assert_int_equal(rc, RSEC_E_QP);
	assert_int_equal(f->c->path.phase, PHASE_CLOSED);
	assert_non_null(strstr(rsec_conn_error(f->c), "it was not rebuilt: rebuilt 2 times in the last minute"));
}

/* Rebuilds older than a minute no longer count. */
static void budget_forgets_after_a_minute(void **state)
{
	struct fake_conn *f = *state;
	uint64_t then = rsec_now_ms() - 60001;
	for (unsigned i = 0; i < BUDGET; i++)
		f->c->path.rb.started_ms[i] = then;
	assert_int_equal(fault(f), 1);
	assert_int_equal(f->c->path.rb.state, REBUILD_SENT);
}

/* rebuilds_per_min 0: a fault closes, and so does the peer's request. */
static void rebuilding_off_closes(void **state)
{
	struct fake_conn *f = *state;
	f->ctx.rebuilds_per_min = 0;
	assert_int_equal(fault(f), RSEC_E_QP);
	assert_non_null(strstr(rsec_conn_error(f->c), "(not rebuilt: rebuilding is off)"));
	assert_int_equal(f->c->path.stats.rebuilds, 0);
}

static void rebuilding_off_refuses_the_peer(void **state)
{
	struct fake_conn *f = *state;
	f->ctx.rebuilds_per_min = 0;
	assert_int_equal(peer_rebuilds(f, 1, 0, 0x99), RSEC_E_QP);
	assert_non_null(strstr(rsec_conn_error(f->c), "and it was not rebuilt: rebuilding is off"));
}

/* A peer that did not offer rebuilds: our fault closes; its rebuild message is a violation. */
static void peer_without_rebuilds(void **state)
{
	struct fake_conn *f = *state;
	f->c->peer_rebuilds = false;
	rsec_conn_configure_path(f->c); /* what set-up tells the path */
	violated(f, peer_rebuilds(f, 1, 0, 0x99), "unexpected rebuild message");
}

static void fault_with_peer_without_rebuilds(void **state)
{
	struct fake_conn *f = *state;
	f->c->peer_rebuilds = false;
	rsec_conn_configure_path(f->c); /* what set-up tells the path */
	assert_int_equal(fault(f), RSEC_E_QP);
	assert_non_null(strstr(rsec_conn_error(f->c), "(not rebuilt: the peer cannot rebuild)"));
}

/* A REBUILD for any epoch but the next is out of turn. */
static void wrong_epoch(void **state)
{
	struct fake_conn *f = *state;
	violated(f, peer_rebuilds(f, 2, 0, 0x99), "REBUILD out of turn");
}

/* Ours is out for epoch 1: the peer's must be for epoch 1 too. */
static void wrong_epoch_after_ours(void **state)
{
	struct fake_conn *f = *state;
	assert_int_equal(fault(f), 1);
	violated(f, peer_rebuilds(f, 2, 0, 0x99), "REBUILD out of turn");
}

/* Both halves are in: a REBUILD is out of turn, even for the epoch after (a fault waits for READY). */
static void rebuild_while_connected(void **state)
{
	struct fake_conn *f = *state;
	assert_int_equal(fault(f), 1);
	assert_int_equal(peer_rebuilds(f, 1, 0, 0x99), 0);
	violated(f, peer_rebuilds(f, 2, 0, 0x9a), "REBUILD out of turn");
}

/* The peer's buffers are the ones it announced at set-up. */
static void changed_buffers(void **state)
{
	struct fake_conn *f = *state;
	struct rsec_msg m = { .type = RSEC_MSG_REBUILD };
	m.u.rebuild = (struct rsec_msg_rebuild){ .epoch = 1, .qp = fake_peer_qp(0x99) };
	m.u.rebuild.qp.recv_slots = 2 * FAKE_SLOTS;
	violated(f, rsec_rebuild_on_msg(f->c, &m), "REBUILD changed the receive buffers announced at set-up");
}

static void impossible_qp(void **state)
{
	struct fake_conn *f = *state;
	violated(f, peer_rebuilds(f, 1, 0, 1), "REBUILD with an impossible queue pair");
}

/* The peer cannot have opened frames we never sent. */
static void opened_frames_never_sent(void **state)
{
	struct fake_conn *f = *state;
	violated(f, peer_rebuilds(f, 1, 5, 0x99), "REBUILD counts frames we never sent");
}

/* REBUILD_READY before both REBUILDs, or for another epoch. */
static void ready_out_of_turn(void **state)
{
	struct fake_conn *f = *state;
	violated(f, peer_ready(f, 0), "REBUILD_READY out of turn");
}

static void ready_for_another_epoch(void **state)
{
	struct fake_conn *f = *state;
	assert_int_equal(fault(f), 1);
	assert_int_equal(peer_rebuilds(f, 1, 0, 0x99), 0);
	violated(f, peer_ready(f, 2), "REBUILD_READY out of turn");
}

/* A fault while ours waits for the peer's half: the same rebuild goes on, nothing more is counted. */
static void fault_while_sent(void **state)
{
	struct fake_conn *f = *state;
	assert_int_equal(fault(f), 1);
	assert_int_equal(fault(f), 1);
	assert_false(f->c->path.rb.again);
	assert_int_equal(f->c->path.rb.state, REBUILD_SENT);
	assert_int_equal(f->c->path.rb.started_next, 1);
}

/* The new path fails before the rebuild is over: the next one starts as this one ends. */
static void fault_while_connected_rebuilds_again(void **state)
{
	struct fake_conn *f = *state;
	struct rsec_msg m;
	assert_int_equal(fault(f), 1);
	assert_int_equal(peer_rebuilds(f, 1, 0, 0x99), 0);
	assert_int_equal(rsec_rebuild_fault(f->c, RSEC_WIRE_REBUILD_AUTH, RSEC_E_MAC, "rejected"), 1);
	assert_true(f->c->path.rb.again);
	assert_int_equal(peer_ready(f, 1), 0);
	assert_int_equal(f->c->path.stats.rebuilds, 1);
	assert_int_equal(f->c->path.rb.state, REBUILD_SENT);
	assert_int_equal(f->c->path.rb.target, 2);
	peer_gets(f, RSEC_MSG_REBUILD, &m);
	peer_gets(f, RSEC_MSG_REBUILD_READY, &m);
	peer_gets(f, RSEC_MSG_REBUILD, &m);
	assert_int_equal(m.u.rebuild.epoch, 2);
	assert_int_equal(m.u.rebuild.reason, RSEC_WIRE_REBUILD_AUTH);
}

/* A rebuild under way past its deadline closes; a parked one waits for its grace period instead. */
static void deadline(void **state)
{
	struct fake_conn *f = *state;
	assert_int_equal(fault(f), 1);
	assert_int_equal(rsec_rebuild_expire(f->c), 0);
	f->c->path.rb.state = REBUILD_PARKED;
	f->c->path.rb.deadline_ms = rsec_now_ms() - 1;
	assert_int_equal(rsec_rebuild_expire(f->c), 0);
	f->c->path.rb.state = REBUILD_SENT;
	assert_int_equal(rsec_rebuild_expire(f->c), RSEC_E_TIMEOUT);
	assert_non_null(strstr(rsec_conn_error(f->c), "the data path was not rebuilt within 10000 ms"));
}

/* A lost channel parks within the same budget: past it, the session closes with the channel's code. */
static void park_within_budget(void **state)
{
	struct fake_conn *f = *state;
	assert_int_equal(rsec_rebuild_park(f->c, RSEC_E_IO, "reset"), 0);
	assert_int_equal(f->c->path.rb.state, REBUILD_PARKED);
	f->c->path.rb.started_ms[1] = rsec_now_ms();
	f->c->path.rb.state = REBUILD_NONE;
	assert_int_equal(rsec_rebuild_park(f->c, RSEC_E_IO, "reset again"), RSEC_E_IO);
	assert_non_null(strstr(rsec_conn_error(f->c), "reset again (not resumed: rebuilt 2 times in the last minute"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(answers_the_peers_rebuild, setup, teardown),
		cmocka_unit_test_setup_teardown(budget_per_minute, setup, teardown),
		cmocka_unit_test_setup_teardown(budget_counts_the_peers_requests, setup, teardown),
		cmocka_unit_test_setup_teardown(budget_forgets_after_a_minute, setup, teardown),
		cmocka_unit_test_setup_teardown(rebuilding_off_closes, setup, teardown),
		cmocka_unit_test_setup_teardown(rebuilding_off_refuses_the_peer, setup, teardown),
		cmocka_unit_test_setup_teardown(peer_without_rebuilds, setup, teardown),
		cmocka_unit_test_setup_teardown(fault_with_peer_without_rebuilds, setup, teardown),
		cmocka_unit_test_setup_teardown(wrong_epoch, setup, teardown),
		cmocka_unit_test_setup_teardown(wrong_epoch_after_ours, setup, teardown),
		cmocka_unit_test_setup_teardown(rebuild_while_connected, setup, teardown),
		cmocka_unit_test_setup_teardown(changed_buffers, setup, teardown),
		cmocka_unit_test_setup_teardown(impossible_qp, setup, teardown),
		cmocka_unit_test_setup_teardown(opened_frames_never_sent, setup, teardown),
		cmocka_unit_test_setup_teardown(ready_out_of_turn, setup, teardown),
		cmocka_unit_test_setup_teardown(ready_for_another_epoch, setup, teardown),
		cmocka_unit_test_setup_teardown(fault_while_sent, setup, teardown),
		cmocka_unit_test_setup_teardown(fault_while_connected_rebuilds_again, setup, teardown),
		cmocka_unit_test_setup_teardown(deadline, setup, teardown),
		cmocka_unit_test_setup_teardown(park_within_budget, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
