/* SPDX-License-Identifier: MIT */
/*
 * The receive side of the data path (lib/path/data.c, rsec_data_poll, and
 * the session's rsec_conn_poll_data that settles its faults) without a device: an established session over a real TLS 1.3 session,
 * its queue pair a stand-in (test_fakeqp.h) whose receive CQ reports what
 * each test says the device saw. The peer's frames are sealed with the
 * peer's own keys. What a completion that fails a check leads to: counted,
 * never delivered, then the data path rebuilt (docs/protocol.md,
 * "Rebuilding the data path") or, with rebuilding off, the connection
 * closed with the fault's code and the peer told.
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

static const uint8_t psk[32] = { 1, 4, 1, 4, 2, 1, 3, 5, 6, 2, 3, 7, 3, 0, 9, 5 };

static int setup_closing(void **state)
{
	struct fake_conn *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	fake_conn_setup(f, psk, sizeof(psk), 0); /* rebuilding off: a fault closes */
	*state = f;
	return 0;
}

static int setup_rebuilding(void **state)
{
	struct fake_conn *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	fake_conn_setup(f, psk, sizeof(psk), 6);
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

static const char hello[] = "hello over a sealed SEND";

/* The connection closed with code, its error saying what (and why it was not rebuilt); the peer was told. */
static void closed_with(struct fake_conn *f, int rc, int code, const char *what)
{
	struct rsec_conn *c = f->c;
	assert_int_equal(rc, code);
	assert_int_equal(c->path.phase, PHASE_CLOSED);
	assert_int_equal(c->path.close_code, code);
	assert_non_null(strstr(rsec_conn_error(c), what));
	assert_non_null(strstr(rsec_conn_error(c), "not rebuilt: rebuilding is off"));
	assert_int_equal(c->path.qp.qp->state, IBV_QPS_ERR); /* no more remote access */
	struct rsec_msg m;
	peer_gets(f, RSEC_MSG_ERROR, &m);
	assert_int_equal(m.u.error.code, (uint32_t)-code);
	assert_false(c->path.rx_complete); /* nothing was delivered */
	assert_int_equal(c->path.stats.msgs_received, 0);
}

/* The fixture works: a frame the peer sealed is delivered, its receive posted again, its credit owed. */
static void delivers_a_sealed_message(void **state)
{
	struct fake_conn *f = *state;
	struct rsec_conn *c = f->c;
	peer_sends(f, f->peer.tx, 3, hello, sizeof(hello));
	assert_int_equal(rsec_conn_poll_data(c), 0);
	assert_true(c->path.rx_complete);
	assert_int_equal(c->path.stats.msgs_received, 1);
	assert_int_equal(fake.recvs_posted, 1);
	assert_int_equal(c->path.credits_owed, 1);
	char buf[64];
	size_t len = 0;
	assert_int_equal(rsec_recv(c, buf, sizeof(buf), &len, 0), 0);
	assert_int_equal(len, sizeof(hello));
	assert_memory_equal(buf, hello, sizeof(hello));
	assert_int_equal(c->path.stats.protocol_violations, 0);
}

/* A completion longer than the buffer we posted: a violation, nothing of the slot read. */
static void oversized_receive_is_a_violation(void **state)
{
	struct fake_conn *f = *state;
	uint32_t n = peer_seals(f, f->peer.tx, 0, RSEC_SEAL_FLAG_FIRST | RSEC_SEAL_FLAG_LAST, 0, hello, sizeof(hello));
	(void)n;
	struct ibv_wc wc = fake_recv_wc(f->c, 0, FAKE_SLOT_SIZE + 1);
	fake_complete(&wc);
	closed_with(f, rsec_conn_poll_data(f->c), RSEC_E_PROTO, "over the 4096-byte buffer");
	assert_int_equal(f->c->path.stats.protocol_violations, 1);
}

/* A WRITE WITH IMMEDIATE consumed one of our receives: a violation, whatever the slot holds. */
static void write_with_imm_is_a_violation(void **state)
{
	struct fake_conn *f = *state;
	uint32_t n = peer_seals(f, f->peer.tx, 1, RSEC_SEAL_FLAG_FIRST | RSEC_SEAL_FLAG_LAST, 0, hello, sizeof(hello));
	struct ibv_wc wc = fake_recv_wc(f->c, 1, n);
	wc.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
	fake_complete(&wc);
	closed_with(f, rsec_conn_poll_data(f->c), RSEC_E_PROTO, "WRITE WITH IMMEDIATE");
	assert_int_equal(f->c->path.stats.protocol_violations, 1);
}

/* A receive naming a slot we never posted. */
static void unposted_slot_is_a_violation(void **state)
{
	struct fake_conn *f = *state;
	struct ibv_wc wc = fake_recv_wc(f->c, FAKE_SLOTS, 64);
	fake_complete(&wc);
	closed_with(f, rsec_conn_poll_data(f->c), RSEC_E_PROTO, "a work request we did not post");
	assert_int_equal(f->c->path.stats.protocol_violations, 1);
}

/* A frame whose tag does not verify is a forgery: closed with RSEC_E_MAC, counted as one. */
static void forged_frame_closes(void **state)
{
	struct fake_conn *f = *state;
	uint32_t n = peer_seals(f, f->peer.tx, 2, RSEC_SEAL_FLAG_FIRST | RSEC_SEAL_FLAG_LAST, 0, hello, sizeof(hello));
	f->c->path.recv_ring[2 * FAKE_SLOT_SIZE + n - 1] ^= 1; /* one bit of the tag */
	struct ibv_wc wc = fake_recv_wc(f->c, 2, n);
	fake_complete(&wc);
	closed_with(f, rsec_conn_poll_data(f->c), RSEC_E_MAC, "rejected a message");
	struct rsec_conn_stats st;
	assert_int_equal(rsec_conn_stats(f->c, &st), 0);
	assert_int_equal(st.mac_failures, 1);
}

/* A frame opened once, replayed into another slot: a sequence violation, delivered once only. */
static void replayed_frame_closes(void **state)
{
	struct fake_conn *f = *state;
	struct rsec_conn *c = f->c;
	uint8_t copy[FAKE_SLOT_SIZE];
	uint32_t n = peer_seals(f, f->peer.tx, 0, RSEC_SEAL_FLAG_FIRST | RSEC_SEAL_FLAG_LAST, 0, hello, sizeof(hello));
	memcpy(copy, c->path.recv_ring, n);
	struct ibv_wc wc = fake_recv_wc(c, 0, n);
	fake_complete(&wc);
	assert_int_equal(rsec_conn_poll_data(c), 0);
	char buf[64];
	size_t len = 0;
	assert_int_equal(rsec_recv(c, buf, sizeof(buf), &len, 0), 0);
	memcpy(c->path.recv_ring + FAKE_SLOT_SIZE, copy, n);
	wc = fake_recv_wc(c, 1, n);
	fake_complete(&wc);
	int rc = rsec_conn_poll_data(c);
	assert_int_equal(rc, RSEC_E_SEQ);
	assert_int_equal(c->path.phase, PHASE_CLOSED);
	assert_int_equal(c->path.stats.msgs_received, 1);
	assert_false(c->path.rx_complete);
	struct rsec_conn_stats st;
	assert_int_equal(rsec_conn_stats(c, &st), 0);
	assert_int_equal(st.seq_violations, 1);
}

/* A peer returning credits for buffers it never had is closed (no rebuild: its frame was genuine). */
static void credits_beyond_buffers_close(void **state)
{
	struct fake_conn *f = *state;
	uint32_t n = peer_seals(f, f->peer.tx, 0, RSEC_SEAL_FLAG_CREDIT_ONLY, 1, NULL, 0);
	struct ibv_wc wc = fake_recv_wc(f->c, 0, n);
	fake_complete(&wc);
	int rc = rsec_conn_poll_data(f->c);
	assert_int_equal(rc, RSEC_E_PROTO);
	assert_non_null(strstr(rsec_conn_error(f->c), "more credits than it has buffers"));
	assert_int_equal(f->c->path.credits, FAKE_SLOTS);
}

/* A LAST fragment with no FIRST before it. */
static void fragment_out_of_order_closes(void **state)
{
	struct fake_conn *f = *state;
	uint32_t n = peer_seals(f, f->peer.tx, 0, RSEC_SEAL_FLAG_LAST, 0, hello, sizeof(hello));
	struct ibv_wc wc = fake_recv_wc(f->c, 0, n);
	fake_complete(&wc);
	assert_int_equal(rsec_conn_poll_data(f->c), RSEC_E_PROTO);
	assert_non_null(strstr(rsec_conn_error(f->c), "fragment out of order"));
	assert_false(f->c->path.rx_complete);
}

/* A failed completion is the queue pair's error: counted, closed with RSEC_E_QP. */
static void qp_error_closes(void **state)
{
	struct fake_conn *f = *state;
	struct ibv_wc wc = fake_recv_wc(f->c, 0, 0);
	wc.status = IBV_WC_REM_ACCESS_ERR;
	fake_complete(&wc);
	closed_with(f, rsec_conn_poll_data(f->c), RSEC_E_QP, "queue pair error");
	assert_int_equal(f->c->path.stats.qp_errors, 1);
}

/*
 * With rebuilding on, a violation does not close: the old QP goes (and
 * what its CQ still held), a new one in INIT has every receive posted, and
 * our REBUILD for epoch 1 tells the peer why and how much we opened.
 */
static void violation_rebuilds(void **state)
{
	struct fake_conn *f = *state;
	struct rsec_conn *c = f->c;
	peer_sends(f, f->peer.tx, 0, hello, sizeof(hello));
	assert_int_equal(rsec_conn_poll_data(c), 0);
	char buf[64];
	size_t len = 0;
	assert_int_equal(rsec_recv(c, buf, sizeof(buf), &len, 0), 0);
	uint32_t old_qpn = c->path.qp.qp->qp_num;
	unsigned posted = fake.recvs_posted;
	struct ibv_wc wc = fake_recv_wc(c, 1, FAKE_SLOT_SIZE + 1);
	fake_complete(&wc);
	peer_sends(f, f->peer.tx, 2, hello, sizeof(hello)); /* behind it: the old QP's, dropped */
	assert_int_equal(rsec_conn_poll_data(c), 0);
	assert_int_equal(c->path.phase, PHASE_ESTABLISHED);
	assert_int_equal(c->path.stats.protocol_violations, 1);
	assert_int_equal(c->path.rb.state, REBUILD_SENT);
	assert_int_equal(c->path.rb.target, 1);
	assert_true(c->path.qp.qp->qp_num != old_qpn);
	assert_int_equal(c->path.qp.qp->state, IBV_QPS_INIT);
	assert_int_equal(fake.recvs_posted, posted + FAKE_SLOTS);
	assert_int_equal(fake.recv_wc_next, fake.recv_wc_n);
	assert_int_equal(c->path.stats.msgs_received, 1);
	struct rsec_msg m;
	peer_gets(f, RSEC_MSG_REBUILD, &m);
	assert_int_equal(m.u.rebuild.epoch, 1);
	assert_int_equal(m.u.rebuild.reason, RSEC_WIRE_REBUILD_VIOLATION);
	assert_int_equal(m.u.rebuild.opened, 1);
	assert_int_equal(m.u.rebuild.qp.qpn, c->path.qp.qp->qp_num);
	/* Nothing is reaped while the new QP is not connected. */
	peer_sends(f, f->peer.tx, 3, hello, sizeof(hello));
	assert_int_equal(rsec_conn_poll_data(c), 0);
	assert_int_equal(fake.recv_wc_next, fake.recv_wc_n - 1);
}

/* A forged frame with rebuilding on: a rebuild for authentication, the connection stays. */
static void forged_frame_rebuilds(void **state)
{
	struct fake_conn *f = *state;
	uint32_t n = peer_seals(f, f->peer.tx, 2, RSEC_SEAL_FLAG_FIRST | RSEC_SEAL_FLAG_LAST, 0, hello, sizeof(hello));
	f->c->path.recv_ring[2 * FAKE_SLOT_SIZE + n - 1] ^= 1;
	struct ibv_wc wc = fake_recv_wc(f->c, 2, n);
	fake_complete(&wc);
	assert_int_equal(rsec_conn_poll_data(f->c), 0);
	assert_int_equal(f->c->path.phase, PHASE_ESTABLISHED);
	assert_int_equal(f->c->path.rb.state, REBUILD_SENT);
	assert_false(f->c->path.rx_complete);
	struct rsec_msg m;
	peer_gets(f, RSEC_MSG_REBUILD, &m);
	assert_int_equal(m.u.rebuild.reason, RSEC_WIRE_REBUILD_AUTH);
	assert_int_equal(m.u.rebuild.opened, 0);
}

/*
 * The path layer reports a fault and acts on none (issue 25): rsec_data_poll
 * alone leaves the connection, its QP and its CQ as they were, stops at the
 * fault and records it; nothing more is reaped until the session settles it,
 * and only then does the rebuild start.
 */
static void path_records_the_fault_session_settles(void **state)
{
	struct fake_conn *f = *state;
	struct rsec_conn *c = f->c;
	uint32_t n = peer_seals(f, f->peer.tx, 2, RSEC_SEAL_FLAG_FIRST | RSEC_SEAL_FLAG_LAST, 0, hello, sizeof(hello));
	c->path.recv_ring[2 * FAKE_SLOT_SIZE + n - 1] ^= 1;
	struct ibv_wc wc = fake_recv_wc(c, 2, n);
	fake_complete(&wc);
	peer_sends(f, f->peer.tx, 3, hello, sizeof(hello)); /* behind it */
	uint32_t qpn = c->path.qp.qp->qp_num;
	assert_int_equal(rsec_data_poll(&c->path), RSEC_E_MAC);
	assert_int_equal(c->path.fault.kind, RSEC_FAULT_DATA);
	assert_int_equal(c->path.fault.why, RSEC_WIRE_REBUILD_AUTH);
	assert_non_null(strstr(c->path.fault.text, "rejected a message"));
	assert_int_equal(c->path.phase, PHASE_ESTABLISHED);
	assert_int_equal(c->path.rb.state, REBUILD_NONE);
	assert_int_equal(c->path.qp.qp->qp_num, qpn);
	assert_int_equal(c->path.qp.qp->state, IBV_QPS_RTS);
	struct rsec_msg m;
	assert_false(test_read_frame(f->tls.client, &m, false)); /* the peer was told nothing yet */
	/* A second poll reaps nothing behind the fault, and a later fault does not replace it. */
	assert_int_equal(rsec_data_poll(&c->path), RSEC_E_MAC);
	assert_int_equal(fake.recv_wc_next, fake.recv_wc_n - 1);
	assert_int_equal(rsec_fault_fail(&c->path.fault, RSEC_E_VERBS, "later"), RSEC_E_MAC);
	/* Settled: the rebuild starts, the fault is gone. */
	assert_int_equal(rsec_conn_settle(c, RSEC_E_MAC), 0);
	assert_false(rsec_fault_pending(&c->path.fault));
	assert_int_equal(c->path.rb.state, REBUILD_SENT);
	assert_true(c->path.qp.qp->qp_num != qpn);
	peer_gets(f, RSEC_MSG_REBUILD, &m);
	assert_int_equal(m.u.rebuild.reason, RSEC_WIRE_REBUILD_AUTH);
}

/*
 * Fill the stack below the caller with ones, as earlier calls may leave it.
 * Not instrumented: AddressSanitizer would keep its redzones, not our bytes,
 * at the top of the frame, where the next call's locals live.
 */
static __attribute__((noinline, no_sanitize_address)) void dirty_stack(void)
{
	volatile unsigned char junk[8192];
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = 0xff;
}

/*
 * A poll while a whole message waits for the application reaps nothing and
 * fails nothing. It used to compare a count the loop never set: with the
 * stack left as above (-1 where the count lives), the session failed with
 * "ibv_poll_cq failed" (issue 38; the unoptimised sanitizer build shows it).
 */
static void poll_while_a_message_waits_fails_nothing(void **state)
{
	struct fake_conn *f = *state;
	struct rsec_conn *c = f->c;
	peer_sends(f, f->peer.tx, 3, hello, sizeof(hello));
	peer_sends(f, f->peer.tx, 4, hello, sizeof(hello)); /* waits in the CQ behind it */
	assert_int_equal(rsec_data_poll(&c->path), 0);
	assert_true(c->path.rx_complete);
	for (int i = 0; i < 4; i++) {
		dirty_stack();
		assert_int_equal(rsec_data_poll(&c->path), 0);
	}
	assert_false(rsec_fault_pending(&c->path.fault));
	assert_int_equal(fake.recv_wc_next, fake.recv_wc_n - 1); /* the second stays in the CQ */
	char buf[64];
	size_t len = 0;
	assert_int_equal(rsec_recv(c, buf, sizeof(buf), &len, 0), 0);
	assert_memory_equal(buf, hello, sizeof(hello));
	assert_int_equal(rsec_recv(c, buf, sizeof(buf), &len, 0), 0);
	assert_int_equal(len, sizeof(hello));
}

/*
 * Set-up: a peer that sends before its READY (or never sends one) leaves
 * completions that wait for the connection to be established. Their event is
 * taken at once and the receive CQ armed again, so the fd does not stay
 * readable: no wait of ours spins on it until READY or the set-up deadline.
 */
static void early_completion_during_setup_is_taken_not_reaped(void **state)
{
	struct fake_conn *f = *state;
	struct rsec_conn *c = f->c;
	f->ctx.poll_mode = RSEC_POLL_EVENT;
	rsec_conn_configure_path(c); /* what set-up tells the path */
	fake_channel(c);
	c->path.phase = PHASE_READY; /* our QP_INFO went; the client's READY has not come */
	c->was_established = false;
	peer_sends(f, f->peer.tx, 0, hello, sizeof(hello));
	fake_event();
	assert_int_equal(rsec_conn_process(c), RSEC_E_AGAIN);
	assert_false(fake_event_pending());
	assert_int_equal(fake.recv_arms, 1);
	assert_int_equal(fake.recv_wc_next, 0); /* reaped once established, not before */
	assert_int_equal(c->path.phase, PHASE_READY);
	assert_false(c->path.rx_complete);
}

/* The peer's PATH_CHECK: its send queue completed its frames [0, delivered) of epoch. */
static int peer_checks(struct fake_conn *f, uint32_t epoch, uint64_t delivered)
{
	struct rsec_msg m = { .type = RSEC_MSG_PATH_CHECK };
	m.u.path_check = (struct rsec_msg_path_check){ .epoch = epoch, .delivered = delivered };
	peer_says(f->tls.client, &m);
	return rsec_conn_process(f->c);
}

/*
 * Issue 38: a forged packet our QP took moved its expected PSN, so the
 * peer's real frames were acknowledged as duplicates and dropped, with no
 * completion on either side. The peer's PATH_CHECK says three frames were
 * acknowledged; one was delivered: the data path is rebuilt, its reason
 * audited and told, and the peer learns how many we opened.
 */
static void silent_data_path_rebuilds(void **state)
{
	struct fake_conn *f = *state;
	struct rsec_conn *c = f->c;
	peer_sends(f, f->peer.tx, 3, hello, sizeof(hello));
	char buf[64];
	size_t len = 0;
	assert_int_equal(rsec_recv(c, buf, sizeof(buf), &len, 0), 0);
	uint32_t qpn = c->path.qp.qp->qp_num;
	assert_int_equal(peer_checks(f, 0, 3), 0);
	assert_int_equal(c->path.rb.state, REBUILD_SENT);
	assert_true(c->path.qp.qp->qp_num != qpn);
	assert_non_null(strstr(c->path.rb.reason, "data path silent: our queue pair acknowledged 3 frames of the peer "
						   "and delivered 1"));
	struct rsec_msg m;
	peer_gets(f, RSEC_MSG_REBUILD, &m);
	assert_int_equal(m.u.rebuild.reason, RSEC_WIRE_REBUILD_SILENT);
	assert_int_equal(m.u.rebuild.opened, 1);
	assert_int_equal(c->path.phase, PHASE_ESTABLISHED);
}

/* Without rebuilding, a silent data path closes the connection with a clear error instead of hanging. */
static void silent_data_path_closes(void **state)
{
	struct fake_conn *f = *state;
	closed_with(f, peer_checks(f, 0, 2), RSEC_E_QP, "data path silent");
}

/*
 * A claim is judged only once nothing waits in the receive CQ: while a whole
 * message waits for the application the frames behind it are not reaped, and
 * a claim that counts them is no evidence. Once they are, all is well.
 */
static void path_check_waits_for_the_application(void **state)
{
	struct fake_conn *f = *state;
	struct rsec_conn *c = f->c;
	peer_sends(f, f->peer.tx, 3, hello, sizeof(hello));
	peer_sends(f, f->peer.tx, 4, hello, sizeof(hello));
	assert_int_equal(rsec_conn_poll_data(c), 0);
	assert_true(c->path.rx_complete);
	assert_int_equal(peer_checks(f, 0, 2), 0);
	assert_int_equal(c->path.phase, PHASE_ESTABLISHED);
	assert_true(c->path.check.claim); /* kept for later */
	char buf[64];
	size_t len = 0;
	for (int i = 0; i < 2; i++) {
		assert_int_equal(rsec_recv(c, buf, sizeof(buf), &len, 0), 0);
		assert_int_equal(rsec_conn_poll_data(c), 0);
	}
	assert_false(c->path.check.claim); /* judged: both delivered */
	assert_int_equal(c->path.phase, PHASE_ESTABLISHED);
	assert_int_equal(c->path.rb.state, REBUILD_NONE);
}

/* A claim about another epoch (a rebuild crossed it) says nothing about this data path. */
static void path_check_of_another_epoch_is_ignored(void **state)
{
	struct fake_conn *f = *state;
	struct rsec_conn *c = f->c;
	assert_int_equal(peer_checks(f, 1, 5), 0);
	assert_false(c->path.check.claim);
	assert_int_equal(c->path.phase, PHASE_ESTABLISHED);
}

/*
 * Our side: frames our send queue completed are named in a PATH_CHECK, at
 * most one per RSEC_PATH_CHECK_MS, and none while nothing new completed or
 * for a peer that did not offer the feature.
 */
static void path_check_names_completed_frames(void **state)
{
	struct fake_conn *f = *state;
	struct rsec_conn *c = f->c;
	struct rsec_sendq *q = &c->path.sendq;
	char why[160];
	for (int i = 0; i < 3; i++)
		rsec_sendq_posted(q, i == 2, true);
	assert_int_equal(rsec_sendq_complete(q, 2, true, why, sizeof(why)), 3);
	struct rsec_msg_path_check m;
	assert_int_equal(rsec_data_check_step(&c->path, 1000000, &m), 0); /* the peer did not offer it */
	c->peer_path_checks = true;
	rsec_conn_configure_path(c);
	uint64_t t = rsec_now_ms();
	assert_int_equal(rsec_data_check_step(&c->path, t, &m), 1);
	assert_int_equal(m.epoch, 0);
	assert_int_equal(m.delivered, 3);
	assert_int_equal(rsec_data_check_next_ms(&c->path), UINT64_MAX); /* nothing new */
	rsec_sendq_posted(q, true, true);
	assert_int_equal(rsec_sendq_complete(q, 3, true, why, sizeof(why)), 1);
	assert_int_equal(rsec_data_check_next_ms(&c->path), t + RSEC_PATH_CHECK_MS);
	assert_int_equal(rsec_data_check_step(&c->path, t + RSEC_PATH_CHECK_MS - 1, &m), 0);
	/* Through the session, over TLS, once its time has come. */
	c->path.check.told_ms = t - RSEC_PATH_CHECK_MS;
	assert_int_equal(rsec_rebuild_check_step(c), 0);
	struct rsec_msg w;
	peer_gets(f, RSEC_MSG_PATH_CHECK, &w);
	assert_int_equal(w.u.path_check.delivered, 4);
	assert_int_equal(rsec_rebuild_check_step(c), 0);
	assert_false(test_read_frame(f->tls.client, &w, false)); /* one per completed frame run */
}

/*
 * Unsignaled frames at the end of the send queue complete unseen, and those
 * are the ones a silent data path drops once traffic stops. When the first
 * of them is RSEC_PATH_CHECK_MS old, a signaled CREDIT_ONLY frame follows:
 * its completion ends them all, and the next PATH_CHECK names them.
 */
static void unsignaled_tail_gets_a_signaled_frame(void **state)
{
	struct fake_conn *f = *state;
	struct rsec_conn *c = f->c;
	c->peer_path_checks = true;
	rsec_conn_configure_path(c);
	assert_int_equal(rsec_send(c, hello, sizeof(hello), 0), 0);
	struct rsec_sendq *q = &c->path.sendq;
	assert_int_equal(q->next, 1);
	assert_int_equal(q->unsignaled_run, 1); /* nothing will say it completed */
	uint64_t t = c->path.check.tail_ms;
	assert_int_equal(rsec_data_check_next_ms(&c->path), t + RSEC_PATH_CHECK_MS);
	struct rsec_msg_path_check m;
	unsigned posted = fake.sends_posted;
	assert_int_equal(rsec_data_check_step(&c->path, t + RSEC_PATH_CHECK_MS - 1, &m), 0);
	assert_int_equal(fake.sends_posted, posted);
	assert_int_equal(rsec_data_check_step(&c->path, t + RSEC_PATH_CHECK_MS, &m), 0);
	assert_int_equal(fake.sends_posted, posted + 1);
	assert_int_equal(q->next, 2);
	assert_int_equal(q->unsignaled_run, 0);
	assert_true(q->signaled[1]);
	assert_int_equal(rsec_data_check_next_ms(&c->path), UINT64_MAX); /* nothing left unseen or unsaid */
	/* Its completion ends the frame before it: the next check names both. */
	char why[160];
	assert_int_equal(rsec_sendq_complete(q, 1, true, why, sizeof(why)), 2);
	c->path.check.told_ms = 0;
	assert_int_equal(rsec_data_check_step(&c->path, t + RSEC_PATH_CHECK_MS, &m), 1);
	assert_int_equal(m.delivered, 2);
}

/* Corked, a connection's frames are held and go in one doorbell when it uncorks (rsec_conn_cork). */
static void corked_sends_ring_one_doorbell(void **state)
{
	struct fake_conn *f = *state;
	struct rsec_conn *c = f->c;
	unsigned bells = fake.doorbells, posted = fake.sends_posted;
	rsec_conn_cork(c);
	for (int i = 0; i < 3; i++)
		assert_int_equal(rsec_send(c, hello, sizeof(hello), 0), 0);
	assert_int_equal(fake.doorbells, bells);
	assert_int_equal(fake.sends_posted, posted);
	assert_int_equal(c->path.sendq.next, 3); /* counted as posted: credits and slots taken */
	assert_int_equal(rsec_conn_uncork(c), 0);
	assert_int_equal(fake.doorbells, bells + 1);
	assert_int_equal(fake.sends_posted, posted + 3);
	assert_int_equal(rsec_conn_uncork(c), 0); /* nothing held: no doorbell */
	assert_int_equal(fake.doorbells, bells + 1);
	assert_int_equal(rsec_send(c, hello, sizeof(hello), 0), 0); /* uncorked: at once */
	assert_int_equal(fake.doorbells, bells + 2);
	assert_int_equal(fake.sends_posted, posted + 4);
}

/* c corked and a message sent, held: how many sends the device had before. */
static unsigned cork_and_send(struct rsec_conn *c)
{
	unsigned posted = fake.sends_posted;
	rsec_conn_cork(c);
	assert_int_equal(rsec_send(c, hello, sizeof(hello), 0), 0);
	assert_int_equal(fake.sends_posted, posted);
	return posted;
}

/* A call that sleeps posts what is held first: what it waits for may be the answer to it. */
static void a_wait_posts_what_is_held(void **state)
{
	struct rsec_conn *c = ((struct fake_conn *)*state)->c;
	unsigned posted = cork_and_send(c);
	char buf[64];
	size_t len = 0;
	assert_int_equal(rsec_recv(c, buf, sizeof(buf), &len, 0), RSEC_E_AGAIN); /* no sleep: still held */
	assert_int_equal(fake.sends_posted, posted);
	assert_int_equal(rsec_recv(c, buf, sizeof(buf), &len, 5), RSEC_E_TIMEOUT);
	assert_int_equal(fake.sends_posted, posted + 1);
	assert_int_equal(rsec_conn_uncork(c), 0);
	assert_int_equal(fake.sends_posted, posted + 1);
}

/* What is held when the queue pair fails is posted first: the device flushes it with the rest, so all of it completes. */
static void held_work_is_flushed_by_a_failing_qp(void **state)
{
	struct rsec_conn *c = ((struct fake_conn *)*state)->c;
	unsigned posted = cork_and_send(c);
	assert_int_equal(rsec_qp_to_error(&c->path.qp), 0);
	assert_int_equal(fake.sends_posted, posted + 1);
	assert_int_equal(c->path.qp.qp->state, IBV_QPS_ERR);
	assert_int_equal(rsec_qp_flush(&c->path.qp), 0); /* nothing twice */
	assert_int_equal(fake.sends_posted, posted + 1);
	assert_true(rsec_sendq_kept(&c->path.sendq, 0)); /* still in its slot, for a rebuild to send again */
}

/* Corked, the doorbell rings by itself when RSEC_CORK_MAX requests are held and one more comes. */
static void a_full_cork_rings_by_itself(void **state)
{
	struct fake_conn *f = *state;
	struct rsec_qp *q = &f->c->path.qp;
	unsigned bells = fake.doorbells, posted = fake.sends_posted, taken = 0;
	struct ibv_send_wr wr = { .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_INLINE };
	rsec_qp_cork(q, true);
	for (unsigned i = 0; i < RSEC_CORK_MAX; i++) {
		wr.wr_id = i;
		assert_int_equal(rsec_qp_post(q, &wr, &taken), 0);
		assert_int_equal(taken, 1);
	}
	assert_int_equal(fake.doorbells, bells);
	assert_int_equal(rsec_qp_post(q, &wr, &taken), 0);
	assert_int_equal(fake.doorbells, bells + 1);
	assert_int_equal(fake.sends_posted, posted + RSEC_CORK_MAX);
	rsec_qp_cork(q, false);
	assert_int_equal(rsec_qp_flush(q), 0);
	assert_int_equal(fake.doorbells, bells + 2);
	assert_int_equal(fake.sends_posted, posted + RSEC_CORK_MAX + 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(delivers_a_sealed_message, setup_closing, teardown),
		cmocka_unit_test_setup_teardown(oversized_receive_is_a_violation, setup_closing, teardown),
		cmocka_unit_test_setup_teardown(write_with_imm_is_a_violation, setup_closing, teardown),
		cmocka_unit_test_setup_teardown(unposted_slot_is_a_violation, setup_closing, teardown),
		cmocka_unit_test_setup_teardown(forged_frame_closes, setup_closing, teardown),
		cmocka_unit_test_setup_teardown(replayed_frame_closes, setup_closing, teardown),
		cmocka_unit_test_setup_teardown(credits_beyond_buffers_close, setup_closing, teardown),
		cmocka_unit_test_setup_teardown(fragment_out_of_order_closes, setup_closing, teardown),
		cmocka_unit_test_setup_teardown(qp_error_closes, setup_closing, teardown),
		cmocka_unit_test_setup_teardown(violation_rebuilds, setup_rebuilding, teardown),
		cmocka_unit_test_setup_teardown(forged_frame_rebuilds, setup_rebuilding, teardown),
		cmocka_unit_test_setup_teardown(path_records_the_fault_session_settles, setup_rebuilding, teardown),
		cmocka_unit_test_setup_teardown(early_completion_during_setup_is_taken_not_reaped, setup_closing, teardown),
		cmocka_unit_test_setup_teardown(poll_while_a_message_waits_fails_nothing, setup_closing, teardown),
		cmocka_unit_test_setup_teardown(silent_data_path_rebuilds, setup_rebuilding, teardown),
		cmocka_unit_test_setup_teardown(silent_data_path_closes, setup_closing, teardown),
		cmocka_unit_test_setup_teardown(path_check_waits_for_the_application, setup_closing, teardown),
		cmocka_unit_test_setup_teardown(path_check_of_another_epoch_is_ignored, setup_closing, teardown),
		cmocka_unit_test_setup_teardown(path_check_names_completed_frames, setup_closing, teardown),
		cmocka_unit_test_setup_teardown(unsignaled_tail_gets_a_signaled_frame, setup_closing, teardown),
		cmocka_unit_test_setup_teardown(corked_sends_ring_one_doorbell, setup_closing, teardown),
		cmocka_unit_test_setup_teardown(a_wait_posts_what_is_held, setup_closing, teardown),
		cmocka_unit_test_setup_teardown(held_work_is_flushed_by_a_failing_qp, setup_rebuilding, teardown),
		cmocka_unit_test_setup_teardown(a_full_cork_rings_by_itself, setup_closing, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
