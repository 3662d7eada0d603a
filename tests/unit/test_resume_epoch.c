/* SPDX-License-Identifier: MIT */
/*
 * A parked session's REBUILD on its new channel (lib/rebuild.c,
 * rsec_rebuild_unpark), without a device: the session over a real TLS 1.3
 * session (PSK, a socketpair), its queue pair a stand-in that only names a
 * QPN. Which epoch both sides build and which count of opened frames goes
 * out, when the channel went in the middle of a rebuild and RESUME/SESSION
 * said the peer's epoch (docs/protocol.md, "Resuming a session").
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "conn.h"
#include "test_frames.h"
#include "tls.h"

static const uint8_t psk[32] = { 2, 7, 1, 8, 2, 8, 1, 8, 2, 8, 4, 5, 9, 0, 4, 5 };

struct fixture {
	struct test_tls_pair tls; /* client: the peer's end; server: the session's */
	struct rsec_ctx ctx;
	struct rsec_dev dev;
	struct ibv_qp qp;
	struct rsec_conn *c;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	test_tls_pair(&f->tls, psk, sizeof(psk));
	f->ctx = (struct rsec_ctx){ .is_server = true, .handshake_timeout_ms = 10000, .rebuilds_per_min = 6,
				    .resume_grace_ms = 8000, .aead = RSEC_AEAD_AES256GCM, .slot_size = 4096,
				    .max_msg = 65536 };
	f->dev = (struct rsec_dev){ .link_layer = IBV_LINK_LAYER_ETHERNET, .active_mtu = IBV_MTU_1024 };
	f->qp.qp_num = 0x4242;
	f->c = rsec_conn_alloc(&f->ctx, f->tls.fds[1]);
	assert_non_null(f->c);
	f->c->path.chan->ssl = f->tls.server;
	f->c->path.chan->sock = f->tls.fds[1];
	f->c->path.phase = PHASE_ESTABLISHED;
	f->c->peer_rebuilds = true;
	f->c->rs.peer = f->c->rs.epochs = true;
	f->c->dev = f->c->path.qp.dev = &f->dev;
	f->c->path.qp.qp = &f->qp;
	f->c->path.recv_slots = 64;
	f->c->path.rb.state = REBUILD_PARKED;
	f->c->path.rb.opened = 11;      /* the peer's frames we opened, counted when the channel went */
	f->c->path.rb.sent_opened = 22; /* the count our REBUILD carried before (the one a peer behind missed) */
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	f->c->dev = f->c->path.qp.dev = NULL; /* stand-ins: nothing to destroy */
	f->c->path.qp.qp = NULL;
	rsec_conn_free(f->c);
	test_tls_pair_free(&f->tls);
	free(f);
	return 0;
}

/* The session at epoch ours resumes (the peer at theirs, if known): its REBUILD, and the epoch it waits for. */
static void resumes(struct fixture *f, uint32_t ours, bool known, uint32_t theirs, uint32_t epoch, uint64_t opened)
{
	f->c->path.rb.epoch = ours;
	f->c->rs.peer_epoch_known = known;
	f->c->rs.peer_epoch = theirs;
	assert_int_equal(rsec_rebuild_unpark(f->c), 0);
	assert_int_equal(f->c->path.rb.state, REBUILD_SENT);
	assert_int_equal(f->c->path.rb.target, epoch);
	assert_int_equal(f->c->path.rb.epoch, ours); /* the keys in use stay until both halves are in */
	struct rsec_msg m;
	assert_true(test_read_frame(f->tls.client, &m, true));
	assert_int_equal(m.type, RSEC_MSG_REBUILD);
	assert_int_equal(m.u.rebuild.epoch, epoch);
	assert_int_equal(m.u.rebuild.opened, opened);
	assert_int_equal(m.u.rebuild.reason, RSEC_WIRE_REBUILD_CHANNEL);
	assert_int_equal(m.u.rebuild.qp.qpn, 0x4242);
}

/* Both at the same epoch (or the peer could not say it): the next one, with our count, as always. */
static void same_epoch(void **state)
{
	resumes(*state, 5, true, 5, 6, 11);
}

static void peer_said_nothing(void **state)
{
	resumes(*state, 5, false, 0, 6, 11);
}

/* The peer connected the rebuild we never finished: it opened none of its new epoch's frames' peers. */
static void peer_ahead(void **state)
{
	resumes(*state, 5, true, 6, 7, 0);
}

/* We connected, the peer never had our REBUILD: it gets that REBUILD's count again. */
static void we_are_ahead(void **state)
{
	resumes(*state, 6, true, 5, 7, 22);
}

/* The peer must build the epoch both computed: its old turn's REBUILD is out of turn now. */
static void peer_must_agree(void **state)
{
	struct fixture *f = *state;
	resumes(f, 5, true, 6, 7, 0);
	struct rsec_msg m = { .type = RSEC_MSG_REBUILD };
	m.u.rebuild.epoch = 6;
	assert_int_equal(rsec_rebuild_on_msg(f->c, &m), RSEC_E_PROTO);
	assert_non_null(strstr(rsec_conn_error(f->c), "REBUILD out of turn"));
}

/* An epoch that would wrap is a peer's lie: the session ends. */
static void impossible_epoch(void **state)
{
	struct fixture *f = *state;
	f->c->rs.peer_epoch_known = true;
	f->c->rs.peer_epoch = UINT32_MAX;
	assert_int_equal(rsec_rebuild_unpark(f->c), RSEC_E_PROTO);
	assert_int_equal(f->c->path.phase, PHASE_CLOSED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(same_epoch, setup, teardown),
		cmocka_unit_test_setup_teardown(peer_said_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(peer_ahead, setup, teardown),
		cmocka_unit_test_setup_teardown(we_are_ahead, setup, teardown),
		cmocka_unit_test_setup_teardown(peer_must_agree, setup, teardown),
		cmocka_unit_test_setup_teardown(impossible_epoch, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
