/* SPDX-License-Identifier: MIT */
/*
 * Further queue pairs of a session (lib/lane.c) as a server sees a client's
 * requests, without a device: a session's root over a real TLS 1.3 session
 * (PSK, a socketpair), the client's side written frame by frame. A request
 * whose QP_INFO announces too few receive buffers fails before any verbs
 * call, which is what lets these tests run here: such a lane is made (keys,
 * epoll set) and closed, as one the client closes right after asking for it
 * would be, QP and rings included, on a device.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "conn.h"
#include "ctrl.h"
#include "test_frames.h"
#include "tls.h"

static const uint8_t psk[32] = { 3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3 };

struct fixture {
	struct test_tls_pair tls; /* client: the peer's end, written and read by the tests; server: the root's */
	struct rsec_ctx ctx;
	struct rsec_conn *root; /* the server's session: owns the server's SSL and socket */
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	test_tls_pair(&f->tls, psk, sizeof(psk));
	f->ctx = (struct rsec_ctx){ .is_server = true, .handshake_timeout_ms = 10000, .max_qps = 2,
				    .aead = RSEC_AEAD_AES256GCM };
	f->root = rsec_conn_alloc(&f->ctx, f->tls.fds[1]);
	assert_non_null(f->root);
	f->root->path.chan->ssl = f->tls.server;
	f->root->path.chan->sock = f->tls.fds[1];
	f->root->path.phase = PHASE_ESTABLISHED;
	f->root->aead = RSEC_AEAD_AES256GCM;
	f->root->peer_lanes = true;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	rsec_conn_free(f->root);
	test_tls_pair_free(&f->tls);
	free(f);
	return 0;
}

/* The client sends m. */
static void client_sends(struct fixture *f, const struct rsec_msg *m)
{
	uint8_t frame[RSEC_WIRE_MAX_FRAME];
	size_t len = 0, done = 0;
	assert_int_equal(rsec_wire_encode(m, frame, sizeof(frame), &len), 0);
	assert_int_equal(rsec_tls_write_some(f->tls.client, frame, len, &done), 0);
	assert_int_equal(done, len);
}

/* A request for lane whose set-up fails at once: one receive buffer is too few. */
static void client_asks(struct fixture *f, uint16_t lane)
{
	struct rsec_msg m = { .type = RSEC_MSG_QP_INFO, .lane = lane };
	m.u.qp_info = (struct rsec_msg_qp_info){ .qpn = 0x1234, .psn = 7, .mtu = 3, .link = RSEC_WIRE_LINK_ETHERNET,
						 .recv_slots = 1, .slot_size = 4096, .max_msg = 4096 };
	client_sends(f, &m);
}

/* What rsec_conn_process does with the frames that arrived, one by one: most lanes the server holds at any time. */
static unsigned server_reads(struct fixture *f)
{
	unsigned most = 0;
	for (;;) {
		struct rsec_msg m;
		int rc = rsec_chan_recv(f->root->path.chan, &m);
		if (rc == RSEC_E_AGAIN)
			break;
		assert_int_equal(rc, 0);
		rc = rsec_ctrl_receive(f->root, &m);
		assert_int_equal(rc, 0);
		unsigned held = 0;
		for (unsigned i = 1; i <= RSEC_WIRE_LANE_MAX; i++)
			held += f->root->lanes[i] != NULL;
		if (held > most)
			most = held;
	}
	return most;
}

/* The next frame the client receives; false if none is there. */
static bool client_receives(struct fixture *f, struct rsec_msg *m)
{
	return test_read_frame(f->tls.client, m, false);
}

/*
 * Requests that each end at once, all in one read: the server never holds
 * more lanes than max_qps allows (with 2, one beside the session's own),
 * however many the client asks for. Each costs a QP and two rings on a device.
 */
static void test_burst_of_failed_requests_stays_within_max_qps(void **state)
{
	struct fixture *f = *state;
	for (uint16_t lane = 1; lane <= 40; lane++)
		client_asks(f, lane);
	unsigned most = server_reads(f);
	assert_true(most <= f->ctx.max_qps - 1);
	assert_int_equal(f->root->path.phase, PHASE_ESTABLISHED); /* each failure was the lane's alone */
}

/* Lane idx of the session, handed to the application, in phase; its frames go through the root's channel. */
static struct rsec_conn *taken_lane(struct fixture *f, uint16_t idx, enum rsec_phase phase)
{
	struct rsec_conn *c = rsec_conn_alloc(&f->ctx, f->root->path.chan->sock);
	assert_non_null(c);
	c->root = f->root;
	c->path.chan = f->root->path.chan;
	c->lane = idx;
	c->is_server = true;
	c->lane_taken = true;
	c->path.phase = phase;
	f->root->lanes[idx] = c;
	f->root->lanes_opened = idx;
	return c;
}

/*
 * A lane the application took and the client then closed still holds its QP
 * and rings until the application frees it: it counts against max_qps, and
 * the next request is refused (ERROR, RSEC_E_LIMIT, on that lane).
 */
static void test_closed_lane_held_by_application_counts(void **state)
{
	struct fixture *f = *state;
	struct rsec_conn *held = taken_lane(f, 1, PHASE_CLOSED);
	held->path.close_code = RSEC_E_CLOSED;

	client_asks(f, 2);
	(void)server_reads(f);
	struct rsec_msg m;
	assert_true(client_receives(f, &m));
	assert_int_equal(m.type, RSEC_MSG_ERROR);
	assert_int_equal(m.lane, 2);
	assert_int_equal(m.u.error.code, (uint32_t)-RSEC_E_LIMIT);
	assert_null(f->root->lanes[2]);
	assert_int_equal(f->root->path.phase, PHASE_ESTABLISHED);
	rsec_conn_free(held);
	assert_null(f->root->lanes[1]);
}

/*
 * A lane has no channel of its own: its frames go through the session's,
 * marked with its index, and nothing more goes once the session has failed.
 */
static void test_lane_speaks_through_the_session_channel(void **state)
{
	struct fixture *f = *state;
	struct rsec_conn *lane = taken_lane(f, 3, PHASE_ESTABLISHED);
	struct rsec_msg k = { .type = RSEC_MSG_KEEPALIVE };
	k.u.keepalive.nonce = 42;
	assert_int_equal(rsec_chan_send(lane->path.chan, lane->lane, &k), 0);
	struct rsec_msg m;
	assert_true(client_receives(f, &m));
	assert_int_equal(m.type, RSEC_MSG_KEEPALIVE);
	assert_int_equal(m.lane, 3);
	assert_int_equal(rsec_conn_fail(f->root, RSEC_E_CLOSED, "closed by the test"), RSEC_E_CLOSED);
	assert_int_equal(lane->path.phase, PHASE_CLOSED);
	assert_int_equal(rsec_chan_send(lane->path.chan, lane->lane, &k), RSEC_E_CLOSED);
	assert_false(client_receives(f, &m));
	rsec_conn_free(lane);
	assert_null(f->root->lanes[3]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_burst_of_failed_requests_stays_within_max_qps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_closed_lane_held_by_application_counts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lane_speaks_through_the_session_channel, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
