/* SPDX-License-Identifier: MIT */
/*
 * Rekeying a queue pair (lib/session/rekey_exchange.c) without a device: an
 * established session over a real TLS 1.3 session, its queue pair a
 * stand-in (test_fakeqp.h). The test plays the client: it computes its
 * generation secrets with lib/base/rekey.c from its own end of the TLS
 * session, writes REKEY, REKEY_REPLY and REKEY_DONE and reads the server's
 * off its end; frames it seals go to the server's receive ring, frames the
 * server sends are read from its send ring.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "audit.h"
#include "conn.h"
#include "ctrl.h"
#include "rekey.h"
#include "test_frames.h"
#include "test_fakeqp.h"

static const uint8_t psk[32] = { 9, 1, 3, 2, 0, 5, 0, 8, 0, 7, 5, 6, 8, 8, 7, 7 };

static int setup(void **state)
{
	struct fake_conn *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	fake_conn_setup(f, psk, sizeof(psk), 0); /* no rebuilds: a frame that does not open closes */
	f->c->peer_rekeys = true;
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

/* The client's side of an exchange: its chain's secret and its ephemeral key. */
struct client {
	uint8_t secret[RSEC_REKEY_SECRET_LEN];
	EVP_PKEY *priv;
	uint8_t pub[RSEC_REKEY_PUB_LEN];
};

static void client_init(struct fake_conn *f, struct client *cl)
{
	memset(cl, 0, sizeof(*cl));
	assert_int_equal(rsec_rekey_first(f->tls.client, 0, 0, cl->secret), 0);
	assert_int_equal(rsec_rekey_keypair(&cl->priv, cl->pub), 0);
}

static void client_free(struct client *cl)
{
	EVP_PKEY_free(cl->priv);
}

/* The client's keys of generation gen, from the server's public key: its chain moves on. */
static void client_next(struct client *cl, const uint8_t *server_pub, uint32_t gen,
			uint8_t keys[static RSEC_SEAL_SECRET_LEN])
{
	uint8_t next[RSEC_REKEY_SECRET_LEN];
	assert_int_equal(rsec_rekey_next(cl->secret, cl->priv, server_pub, gen, next), 0);
	memcpy(cl->secret, next, sizeof(next));
	assert_int_equal(rsec_rekey_data_secret(next, keys), 0);
}

/* m, type and body as the client would send it for data-path epoch epoch, through the control-message table. */
static int client_says_in(struct fake_conn *f, uint32_t epoch, uint8_t type, uint32_t gen, const uint8_t *pub)
{
	struct rsec_msg m = { .type = type };
	m.u.rekey.epoch = epoch;
	m.u.rekey.gen = gen;
	if (pub)
		memcpy(m.u.rekey.pub, pub, RSEC_REKEY_PUB_LEN);
	return rsec_ctrl_handle(f->c, &m);
}

static int client_says(struct fake_conn *f, uint8_t type, uint32_t gen, const uint8_t *pub)
{
	return client_says_in(f, 0, type, gen, pub);
}

/* The client sends pt in slot; the server polls and takes the message; it must be pt. */
static void client_sends_ok(struct fake_conn *f, struct rsec_seal_dir *tx, uint32_t slot, const char *pt)
{
	peer_sends(f, tx, slot, pt, (uint32_t)strlen(pt));
	assert_int_equal(rsec_conn_poll_data(f->c), 0);
	char buf[64];
	size_t len = 0;
	assert_int_equal(rsec_recv(f->c, buf, sizeof(buf), &len, 0), 0);
	assert_int_equal(len, strlen(pt));
	assert_memory_equal(buf, pt, len);
}

/* The server sends pt; the frame it put in its send ring, for the client to open. */
static const uint8_t *server_sends(struct fake_conn *f, const char *pt, size_t *frame_len)
{
	struct rsec_conn *c = f->c;
	uint64_t seq = c->path.sendq.next;
	assert_int_equal(rsec_send(c, pt, strlen(pt), 0), 0);
	assert_int_equal(c->path.sendq.next, seq + 1);
	*frame_len = strlen(pt) + RSEC_SEAL_OVERHEAD;
	return c->path.send_ring + (size_t)(seq % c->path.send_slots) * c->path.frame_size;
}

static void client_opens(struct fake_conn *f, const uint8_t *frame, size_t len, const char *want)
{
	struct rsec_seal_hdr h;
	uint8_t pt[64];
	assert_int_equal(rsec_seal_open(&f->peer, frame, len, &h, pt, sizeof(pt)), 0);
	assert_int_equal(h.len, strlen(want));
	assert_memory_equal(pt, want, h.len);
}

/* The frame the server sent last: under the new keys (phase), CREDIT_ONLY, it retires the client's old ones. */
static void client_gets_new_keys_frame(struct fake_conn *f, uint8_t phase)
{
	struct rsec_conn *c = f->c;
	const struct rsec_path *p = &c->path;
	const uint8_t *frame = p->send_ring + (size_t)((p->sendq.next - 1) % p->send_slots) * p->frame_size;
	assert_int_equal(frame[15], phase);
	struct rsec_seal_hdr h;
	uint8_t pt[8];
	assert_int_equal(rsec_seal_open(&f->peer, frame, RSEC_SEAL_OVERHEAD, &h, pt, sizeof(pt)), 0);
	assert_true(h.flags & RSEC_SEAL_FLAG_CREDIT_ONLY);
	assert_null(f->peer.rx_old);
}

/* Generation 0's message keys (the exporter's), as seal.c lays them out. */
static void exporter_keys(struct fake_conn *f, uint8_t keys[static RSEC_SEAL_SECRET_LEN])
{
	static const char dl[] = RSEC_SEAL_LABEL_DATA, ml[] = RSEC_SEAL_LABEL_DATAMAC;
	assert_int_equal(SSL_export_keying_material(f->tls.client, keys, RSEC_SEAL_DATA_SECRET_LEN, dl, sizeof(dl) - 1,
						    NULL, 0, 1), 1);
	assert_int_equal(SSL_export_keying_material(f->tls.client, keys + RSEC_SEAL_DATA_SECRET_LEN,
						    RSEC_SEAL_DATAMAC_SECRET_LEN, ml, sizeof(ml) - 1, NULL, 0, 1), 1);
}

/*
 * The client offers; the server answers and receives under the new keys,
 * yet a frame the client sealed under the old ones before it switched still
 * opens; after REKEY_DONE the server seals under the new keys, which the
 * old ones no longer open.
 */
static void keys_change_and_nothing_is_lost(void **state)
{
	struct fake_conn *f = *state;
	struct rsec_conn *c = f->c;
	struct client cl;
	client_init(f, &cl);
	client_sends_ok(f, f->peer.tx, 0, "before");

	assert_int_equal(client_says(f, RSEC_MSG_REKEY, 1, cl.pub), 0);
	assert_int_equal(c->path.rk.state, REKEY_ANSWERED);
	struct rsec_msg m;
	peer_gets(f, RSEC_MSG_REKEY_REPLY, &m);
	assert_int_equal(m.u.rekey.gen, 1);
	assert_int_equal(m.u.rekey.epoch, 0);
	uint8_t keys[RSEC_SEAL_SECRET_LEN], old_keys[RSEC_SEAL_SECRET_LEN];
	client_next(&cl, m.u.rekey.pub, 1, keys);
	exporter_keys(f, old_keys);
	assert_memory_not_equal(keys, old_keys, sizeof(keys));

	/* In flight across the switch: sealed under the old keys, arriving after the server took the new. */
	client_sends_ok(f, f->peer.tx, 1, "in flight");
	assert_int_equal(rsec_data_opened(&c->path), 2); /* what a rebuild now would tell the peer: both */
	assert_int_equal(rsec_seal_next_tx(&f->peer, keys, c->aead, 1), 0);
	assert_int_equal(rsec_seal_next_rx(&f->peer, keys, c->aead, 1), 0);
	client_sends_ok(f, f->peer.tx, 2, "after");
	assert_null(c->path.seal.rx_old); /* the first frame under the new keys retired the old ones */
	assert_int_equal(rsec_data_opened(&c->path), 3);
	struct rsec_conn_stats st;
	assert_int_equal(rsec_conn_stats(c, &st), 0);
	assert_int_equal(st.msgs_received, 3);

	/* Until REKEY_DONE the server still seals under the old keys. */
	size_t len;
	const uint8_t *frame = server_sends(f, "old", &len);
	assert_int_equal(frame[15], 0);
	client_opens(f, frame, len, "old");
	assert_int_equal(client_says(f, RSEC_MSG_REKEY_DONE, 1, NULL), 0);
	client_gets_new_keys_frame(f, 1);
	assert_int_equal(c->path.rk.state, REKEY_IDLE);
	assert_int_equal(c->path.rk.gen, 1);
	assert_int_equal(rsec_conn_rekeys(c), 1);
	frame = server_sends(f, "new", &len);
	assert_int_equal(frame[15], 1);
	/* The old keys, even told the new phase, do not open it. */
	struct rsec_seal stale = { 0 };
	assert_int_equal(rsec_seal_from_secret(&stale, old_keys, false, c->aead), 0);
	assert_int_equal(rsec_seal_next_rx(&stale, old_keys, c->aead, 1), 0);
	rsec_seal_dir_set_next_seq(stale.rx, rsec_seal_dir_next_seq(f->peer.rx_old));
	struct rsec_seal_hdr h;
	uint8_t pt[64];
	assert_int_equal(rsec_open_frame(stale.rx, frame, len, &h, pt, sizeof(pt)), RSEC_E_MAC);
	rsec_seal_free(&stale);
	client_opens(f, frame, len, "new");

	/* A frame under the retired keys is refused: never delivered, the connection closes. */
	peer_sends(f, f->peer.tx_old, 3, "replayed", 8);
	assert_int_equal(rsec_conn_poll_data(c), RSEC_E_MAC);
	assert_int_equal(c->path.phase, PHASE_CLOSED);
	assert_false(c->path.rx_complete);
	client_free(&cl);
}

/* Bytes sent and received reach rekey_bytes: the server offers, and the exchange completes. */
static void rekey_bytes_triggers(void **state)
{
	struct fake_conn *f = *state;
	struct rsec_conn *c = f->c;
	f->ctx.rekey_bytes = 20;
	assert_int_equal(rsec_rekey_step(c), 0);
	client_sends_ok(f, f->peer.tx, 0, "ten bytes!");
	assert_int_equal(rsec_rekey_step(c), 0);
	struct rsec_msg m;
	assert_false(test_read_frame(f->tls.client, &m, false)); /* 10 < 20: not yet */
	client_sends_ok(f, f->peer.tx, 1, "ten more!!");
	assert_int_equal(rsec_rekey_step(c), 0);
	peer_gets(f, RSEC_MSG_REKEY, &m);
	assert_int_equal(m.u.rekey.gen, 1);
	assert_int_equal(c->path.rk.state, REKEY_OFFERED);
	assert_int_equal(rsec_rekey_step(c), 0); /* one at a time */
	assert_false(test_read_frame(f->tls.client, &m, false));

	/* The client answers: it receives under the new keys now, and seals under them after our DONE. */
	struct client cl;
	client_init(f, &cl);
	uint8_t keys[RSEC_SEAL_SECRET_LEN];
	client_next(&cl, m.u.rekey.pub, 1, keys);
	assert_int_equal(rsec_seal_next_rx(&f->peer, keys, c->aead, 1), 0);
	assert_int_equal(client_says(f, RSEC_MSG_REKEY_REPLY, 1, cl.pub), 0);
	peer_gets(f, RSEC_MSG_REKEY_DONE, &m);
	assert_int_equal(m.u.rekey.gen, 1);
	client_gets_new_keys_frame(f, 1);
	assert_int_equal(c->path.rk.count, 1);
	assert_int_equal(c->path.rk.state, REKEY_IDLE);
	size_t len;
	const uint8_t *frame = server_sends(f, "fresh", &len);
	client_opens(f, frame, len, "fresh");
	/* No new offer before the last rekey settled both ways: the client has sent nothing under it yet. */
	assert_non_null(c->path.seal.rx_old);
	assert_int_equal(rsec_rekey_start(c), 0);
	assert_false(test_read_frame(f->tls.client, &m, false));
	assert_int_equal(rsec_seal_next_tx(&f->peer, keys, c->aead, 1), 0);
	client_sends_ok(f, f->peer.tx, 2, "fresh too");
	assert_null(c->path.seal.rx_old);
	assert_null(c->path.seal.tx_old); /* the client acknowledged nothing sealed under the old one: none was owed */
	/* The count starts again from the rekey. */
	assert_int_equal(rsec_rekey_step(c), 0);
	assert_false(test_read_frame(f->tls.client, &m, false));
	assert_int_equal(rsec_rekey_start(c), 0);
	peer_gets(f, RSEC_MSG_REKEY, &m);
	assert_int_equal(m.u.rekey.gen, 2);
	client_free(&cl);
}

#define APP_LABEL "blk-v3-data"

/* The server's key of id under APP_LABEL is the one the client makes from secret (its S of that id). */
static void same_derived_key(struct rsec_conn *c, uint64_t id, const uint8_t secret[static RSEC_REKEY_SECRET_LEN])
{
	static const uint8_t ctx[2] = { 0, 7 };
	uint8_t ours[32], theirs[32];
	assert_int_equal(rsec_conn_derive_key(c, id, APP_LABEL, ctx, sizeof(ctx), ours, sizeof(ours)), 0);
	assert_int_equal(rsec_rekey_export(secret, APP_LABEL, ctx, sizeof(ctx), theirs, sizeof(theirs)), 0);
	assert_memory_equal(ours, theirs, sizeof(ours));
}

static int derive(struct rsec_conn *c, uint64_t id, uint8_t out[static 32])
{
	return rsec_conn_derive_key(c, id, APP_LABEL, NULL, 0, out, 32);
}

/*
 * Keys an application derives (rsec_conn_derive_key) follow the chain: both
 * sides make the same from each generation's secret; the id being agreed is
 * there once the server answered (the client may seal under it already);
 * three superseded ids stay for work begun under them, an older one is gone.
 */
static void derived_keys_follow_the_chain(void **state)
{
	struct fake_conn *f = *state;
	struct rsec_conn *c = f->c;
	struct client cl;
	client_init(f, &cl);
	uint8_t s1[RSEC_REKEY_SECRET_LEN], k0[32], k[32];
	assert_int_equal(rsec_conn_key_id(c), 0);
	same_derived_key(c, 0, cl.secret);
	assert_int_equal(derive(c, 0, k0), 0);
	assert_int_equal(rsec_conn_derive_key(c, 0, "rdmasec-mine", NULL, 0, k, sizeof(k)), RSEC_E_INVAL);
	assert_int_equal(rsec_conn_derive_key(c, 0, "", NULL, 0, k, sizeof(k)), RSEC_E_INVAL);
	assert_int_equal(rsec_conn_derive_key(c, 0, APP_LABEL, NULL, 0, k, 8), RSEC_E_INVAL);
	assert_int_equal(derive(c, 1, k), RSEC_E_RANGE); /* not agreed yet */

	for (uint32_t gen = 1; gen <= RSEC_REKEY_KEPT + 1; gen++) {
		EVP_PKEY_free(cl.priv);
		assert_int_equal(rsec_rekey_keypair(&cl.priv, cl.pub), 0);
		assert_int_equal(client_says(f, RSEC_MSG_REKEY, gen, cl.pub), 0);
		struct rsec_msg m;
		peer_gets(f, RSEC_MSG_REKEY_REPLY, &m);
		uint8_t keys[RSEC_SEAL_SECRET_LEN];
		client_next(&cl, m.u.rekey.pub, gen, keys);
		if (gen == 1)
			memcpy(s1, cl.secret, sizeof(s1));
		assert_int_equal(rsec_conn_key_id(c), gen - 1); /* the server seals under the old keys still */
		same_derived_key(c, gen, cl.secret);
		assert_int_equal(rsec_seal_next_tx(&f->peer, keys, c->aead, (uint8_t)gen), 0);
		client_sends_ok(f, f->peer.tx, gen - 1, "under the new keys");
		assert_int_equal(client_says(f, RSEC_MSG_REKEY_DONE, gen, NULL), 0);
		assert_int_equal(rsec_conn_key_id(c), gen);
		same_derived_key(c, gen, cl.secret);
	}
	assert_int_equal(derive(c, 0, k), RSEC_E_RANGE); /* four generations on: wiped */
	same_derived_key(c, 1, s1);
	assert_int_equal(derive(c, RSEC_REKEY_KEPT + 1, k), 0);
	assert_memory_not_equal(k, k0, sizeof(k));
	assert_int_equal(derive(c, (uint64_t)1 << 32, k), RSEC_E_RANGE); /* an epoch not built */

	rsec_rekey_forget(c);
	for (size_t i = 0; i < RSEC_REKEY_KEPT; i++)
		assert_false(c->path.rk.kept[i].used);
	assert_int_equal(derive(c, RSEC_REKEY_KEPT + 1, k), RSEC_E_AGAIN);
	client_free(&cl);
}

/* The peer's (the client's) GRANT of a sealed WRITE grant, id id, naming key id key_id or none. */
static int client_grants(struct fake_conn *f, uint64_t id, bool has_key_id, uint64_t key_id)
{
	struct rsec_msg m = { .type = RSEC_MSG_GRANT };
	m.u.grant = (struct rsec_msg_grant){ .grant_id = id, .addr = 0x10000, .rkey = 0x1234, .len = 4096,
					     .access = RSEC_WIRE_ACCESS_WRITE | RSEC_WIRE_ACCESS_SEALED, .tag = id,
					     .has_key_id = has_key_id, .key_id = key_id };
	return rsec_ctrl_handle(f->c, &m);
}

/* The server keeps grant id's keys, the ones the client makes from chain (its S of the grant's key id). */
static void grant_keyed_from(struct fake_conn *f, uint64_t id, const uint8_t chain[static RSEC_REKEY_SECRET_LEN])
{
	struct rsec_grant_keys k;
	uint8_t want[RSEC_REKEY_SECRET_LEN];
	assert_int_equal(rsec_peer_grant_keys(&f->c->path, id, &k), 0);
	assert_true(k.chain);
	assert_int_equal(rsec_rekey_grant_secret(chain, id, want), 0);
	assert_memory_equal(k.secret, want, sizeof(want));
}

/*
 * Grants are keyed from the chain (RSEC_WIRE_FEATURE_GRANT_KEYS): a GRANT
 * names the key id its keys come from, the server makes the same keys and
 * keeps them past later rekeys; a grant made after a rekey has keys of the
 * new generation. A GRANT without a key id closes the connection.
 */
static void grants_keyed_from_the_chain(void **state)
{
	struct fake_conn *f = *state;
	struct rsec_conn *c = f->c;
	c->peer_grant_keys = true;
	rsec_conn_configure_path(c); /* what set-up tells the path */
	struct client cl;
	client_init(f, &cl);
	uint8_t s0[RSEC_REKEY_SECRET_LEN];
	memcpy(s0, cl.secret, sizeof(s0));
	assert_int_equal(client_grants(f, 5, true, 0), 0);
	grant_keyed_from(f, 5, s0);

	assert_int_equal(client_says(f, RSEC_MSG_REKEY, 1, cl.pub), 0);
	struct rsec_msg m;
	peer_gets(f, RSEC_MSG_REKEY_REPLY, &m);
	uint8_t keys[RSEC_SEAL_SECRET_LEN];
	client_next(&cl, m.u.rekey.pub, 1, keys);
	assert_int_equal(client_says(f, RSEC_MSG_REKEY_DONE, 1, NULL), 0);
	assert_int_equal(client_grants(f, 6, true, 1), 0);
	grant_keyed_from(f, 6, cl.secret);
	grant_keyed_from(f, 5, s0); /* still: the grant outlives its key id */
	struct rsec_grant_keys k5, k6;
	assert_int_equal(rsec_peer_grant_keys(&c->path, 5, &k5), 0);
	assert_int_equal(rsec_peer_grant_keys(&c->path, 6, &k6), 0);
	assert_memory_not_equal(k5.secret, k6.secret, sizeof(k5.secret));
	assert_int_equal(rsec_peer_grant_keys(&c->path, 8, &k5), RSEC_E_GRANT); /* never granted */

	assert_int_not_equal(client_grants(f, 7, false, 0), 0);
	assert_int_equal(c->path.phase, PHASE_CLOSED);
	client_free(&cl);
}

/* A GRANT naming a key id the server does not hold (never agreed) closes the connection. */
static void grant_under_an_unknown_key_id(void **state)
{
	struct fake_conn *f = *state;
	f->c->peer_grant_keys = true;
	rsec_conn_configure_path(f->c); /* what set-up tells the path */
	assert_int_not_equal(client_grants(f, 5, true, 3), 0);
	assert_int_equal(f->c->path.phase, PHASE_CLOSED);
}

/* From a peer that did not offer grant keys, a GRANT naming a key id is a violation. */
static void grant_key_id_not_offered(void **state)
{
	struct fake_conn *f = *state;
	assert_int_not_equal(client_grants(f, 5, true, 0), 0);
	assert_int_equal(f->c->path.phase, PHASE_CLOSED);
}

/* Both offer at once: the client's offer wins; the server drops its own and answers. */
static void simultaneous_offers_resolve(void **state)
{
	struct fake_conn *f = *state;
	struct rsec_conn *c = f->c;
	assert_int_equal(rsec_rekey_start(c), 0);
	struct rsec_msg ours;
	peer_gets(f, RSEC_MSG_REKEY, &ours);
	struct client cl;
	client_init(f, &cl);
	assert_int_equal(client_says(f, RSEC_MSG_REKEY, 1, cl.pub), 0);
	assert_int_equal(c->path.rk.state, REKEY_ANSWERED);
	assert_null(c->path.rk.priv); /* the losing offer's key is gone */
	struct rsec_msg m;
	peer_gets(f, RSEC_MSG_REKEY_REPLY, &m);
	assert_memory_not_equal(m.u.rekey.pub, ours.u.rekey.pub, RSEC_REKEY_PUB_LEN);
	uint8_t keys[RSEC_SEAL_SECRET_LEN];
	client_next(&cl, m.u.rekey.pub, 1, keys);
	assert_int_equal(rsec_seal_next_tx(&f->peer, keys, c->aead, 1), 0);
	assert_int_equal(rsec_seal_next_rx(&f->peer, keys, c->aead, 1), 0);
	client_sends_ok(f, f->peer.tx, 0, "winner");
	assert_int_equal(client_says(f, RSEC_MSG_REKEY_DONE, 1, NULL), 0);
	client_gets_new_keys_frame(f, 1);
	size_t len;
	const uint8_t *frame = server_sends(f, "agreed", &len);
	client_opens(f, frame, len, "agreed");
	assert_int_equal(c->path.rk.gen, 1);
	assert_int_equal(c->path.rk.count, 1);
	client_free(&cl);
}

/* The same race seen from the client: the server's offer is ignored, the answer to ours completes it. */
static void client_ignores_the_servers_offer(void **state)
{
	struct fake_conn *f = *state;
	struct rsec_conn *c = f->c;
	c->is_server = false; /* the connection under test plays the client's part of the rule */
	rsec_conn_configure_path(c); /* what set-up tells the path */
	assert_int_equal(rsec_rekey_start(c), 0);
	struct rsec_msg ours, m;
	peer_gets(f, RSEC_MSG_REKEY, &ours);
	struct client other;
	client_init(f, &other);
	assert_int_equal(client_says(f, RSEC_MSG_REKEY, 1, other.pub), 0);
	assert_int_equal(c->path.rk.state, REKEY_OFFERED);
	assert_false(test_read_frame(f->tls.client, &m, false)); /* no answer to it */
	uint8_t keys[RSEC_SEAL_SECRET_LEN];
	client_next(&other, ours.u.rekey.pub, 1, keys);
	assert_int_equal(rsec_seal_next_rx(&f->peer, keys, c->aead, 1), 0);
	assert_int_equal(client_says(f, RSEC_MSG_REKEY_REPLY, 1, other.pub), 0);
	peer_gets(f, RSEC_MSG_REKEY_DONE, &m);
	client_gets_new_keys_frame(f, 1);
	assert_int_equal(c->path.rk.count, 1);
	size_t len;
	const uint8_t *frame = server_sends(f, "done", &len);
	client_opens(f, frame, len, "done");
	c->is_server = true;
	rsec_conn_configure_path(c); /* what set-up tells the path */
	client_free(&other);
}

/* The connection closed as a protocol violation, its error saying what. */
static void violated(struct fake_conn *f, int rc, const char *what)
{
	assert_int_equal(rc, RSEC_E_PROTO);
	assert_int_equal(f->c->path.phase, PHASE_CLOSED);
	assert_int_equal(f->c->path.stats.protocol_violations, 1);
	assert_non_null(strstr(rsec_conn_error(f->c), what));
}

static void reply_to_no_offer(void **state)
{
	struct fake_conn *f = *state;
	uint8_t pub[RSEC_REKEY_PUB_LEN] = { 9 };
	violated(f, client_says(f, RSEC_MSG_REKEY_REPLY, 1, pub), "REKEY_REPLY to no REKEY");
}

static void done_to_no_reply(void **state)
{
	struct fake_conn *f = *state;
	violated(f, client_says(f, RSEC_MSG_REKEY_DONE, 1, NULL), "REKEY_DONE to no REKEY_REPLY");
}

static void wrong_generation(void **state)
{
	struct fake_conn *f = *state;
	struct client cl;
	client_init(f, &cl);
	violated(f, client_says(f, RSEC_MSG_REKEY, 2, cl.pub), "key generation 2, not 1");
	client_free(&cl);
}

static void offer_while_answering(void **state)
{
	struct fake_conn *f = *state;
	struct client cl;
	client_init(f, &cl);
	assert_int_equal(client_says(f, RSEC_MSG_REKEY, 1, cl.pub), 0);
	violated(f, client_says(f, RSEC_MSG_REKEY, 1, cl.pub), "REKEY while the previous one is not done");
	client_free(&cl);
}

/* A public key of small order gives X25519 an all-zero secret: refused, never used. */
static void small_order_key(void **state)
{
	struct fake_conn *f = *state;
	uint8_t zero[RSEC_REKEY_PUB_LEN] = { 0 };
	violated(f, client_says(f, RSEC_MSG_REKEY, 1, zero), "a key X25519 refuses");
	assert_null(f->c->path.rk.priv);
}

static void peer_that_did_not_offer_it(void **state)
{
	struct fake_conn *f = *state;
	f->c->peer_rekeys = false;
	/* We never offer to it. */
	f->ctx.rekey_bytes = 1;
	client_sends_ok(f, f->peer.tx, 0, "bytes");
	assert_int_equal(rsec_rekey_step(f->c), 0);
	assert_int_equal(rsec_rekey_start(f->c), 0);
	struct rsec_msg m;
	assert_false(test_read_frame(f->tls.client, &m, false));
	/* Nor take its offer. */
	struct client cl;
	client_init(f, &cl);
	violated(f, client_says(f, RSEC_MSG_REKEY, 1, cl.pub), "did not offer rekeying");
	client_free(&cl);
}

static void epoch_not_built(void **state)
{
	struct fake_conn *f = *state;
	struct client cl;
	client_init(f, &cl);
	violated(f, client_says_in(f, 1, RSEC_MSG_REKEY, 1, cl.pub), "for a data path not built yet");
	client_free(&cl);
}

/*
 * A rebuild overtakes an exchange: its new keys are the exporter's of the
 * new epoch, the exchange's last message is dropped, and the next rekey
 * starts a chain of that epoch.
 */
static void rebuild_starts_a_new_chain(void **state)
{
	struct fake_conn *f = *state;
	struct rsec_conn *c = f->c;
	c->peer_rebuilds = true;
	rsec_conn_configure_path(c); /* what set-up tells the path */
	f->ctx.rebuilds_per_min = 2;
	struct client cl;
	client_init(f, &cl);
	uint8_t s0[RSEC_REKEY_SECRET_LEN];
	memcpy(s0, cl.secret, sizeof(s0));
	assert_int_equal(client_says(f, RSEC_MSG_REKEY, 1, cl.pub), 0);
	struct rsec_msg m;
	peer_gets(f, RSEC_MSG_REKEY_REPLY, &m);
	uint8_t keys0[RSEC_SEAL_SECRET_LEN];
	client_next(&cl, m.u.rekey.pub, 1, keys0); /* the client took generation 1 of epoch 0 */

	struct rsec_msg rb = { .type = RSEC_MSG_REBUILD };
	rb.u.rebuild = (struct rsec_msg_rebuild){ .epoch = 1, .reason = RSEC_WIRE_REBUILD_QP, .qp = fake_peer_qp(0x91) };
	assert_int_equal(rsec_ctrl_handle(c, &rb), 0);
	peer_gets(f, RSEC_MSG_REBUILD, &m);
	peer_gets(f, RSEC_MSG_REBUILD_READY, &m);
	struct rsec_msg ready = { .type = RSEC_MSG_REBUILD_READY };
	ready.u.rebuild_ready.epoch = 1;
	assert_int_equal(rsec_ctrl_handle(c, &ready), 0);
	assert_int_equal(c->path.rb.epoch, 1);
	assert_int_equal(client_says(f, RSEC_MSG_REKEY_DONE, 1, NULL), 0); /* of epoch 0: dropped */
	assert_int_equal(c->path.phase, PHASE_ESTABLISHED);
	assert_int_equal(c->path.rk.state, REKEY_IDLE);
	assert_int_equal(c->path.rk.gen, 0);
	/* What either side began under epoch 0's keys can still be finished, whichever generation it took. */
	assert_int_equal(rsec_conn_key_id(c), (uint64_t)1 << 32);
	same_derived_key(c, 0, s0);
	same_derived_key(c, 1, cl.secret);

	struct rsec_seal e1 = { 0 };
	assert_int_equal(rsec_seal_from_tls(&e1, f->tls.client, false, c->aead, 0, 1), 0);
	client_sends_ok(f, e1.tx, 0, "epoch 1");
	client_free(&cl);
	memset(&cl, 0, sizeof(cl));
	assert_int_equal(rsec_rekey_first(f->tls.client, 0, 1, cl.secret), 0);
	same_derived_key(c, (uint64_t)1 << 32, cl.secret);
	assert_int_equal(rsec_rekey_keypair(&cl.priv, cl.pub), 0);
	assert_int_equal(client_says_in(f, 1, RSEC_MSG_REKEY, 1, cl.pub), 0);
	peer_gets(f, RSEC_MSG_REKEY_REPLY, &m);
	assert_int_equal(m.u.rekey.epoch, 1);
	uint8_t keys[RSEC_SEAL_SECRET_LEN];
	client_next(&cl, m.u.rekey.pub, 1, keys);
	assert_int_equal(rsec_seal_next_tx(&e1, keys, c->aead, 1), 0);
	client_sends_ok(f, e1.tx, 1, "epoch 1, gen 1");
	assert_int_equal(client_says_in(f, 1, RSEC_MSG_REKEY_DONE, 1, NULL), 0);
	assert_int_equal(rsec_conn_rekeys(c), 1);
	rsec_seal_free(&e1);
	client_free(&cl);
}

/* rekey_s passed: the server offers. */
static void rekey_s_triggers(void **state)
{
	struct fake_conn *f = *state;
	struct rsec_conn *c = f->c;
	f->ctx.rekey_s = 60;
	assert_int_equal(rsec_rekey_step(c), 0);
	struct rsec_msg m;
	assert_false(test_read_frame(f->tls.client, &m, false));
	c->path.rk.since_ms -= 61 * 1000;
	assert_int_equal(rsec_rekey_step(c), 0);
	peer_gets(f, RSEC_MSG_REKEY, &m);
	assert_int_equal(m.u.rekey.gen, 1);
}

/* The audit log of the test connection's context: a file in a fresh directory. */
static void audit_open(struct fake_conn *f, char dir[static 32], char path[static 64])
{
	strcpy(dir, "/tmp/rsec-rekey-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(path, 64, "%s/audit.log", dir);
	assert_int_equal(rsec_audit_open(path, &f->ctx.audit), 0);
}

/* The log so far holds, in order, a rekey record with each of the reasons given. */
static void audit_has_rekeys(const char *path, const char *const *reasons, size_t n)
{
	FILE *fp = fopen(path, "r");
	assert_non_null(fp);
	char line[1024];
	size_t seen = 0;
	while (fgets(line, sizeof(line), fp)) {
		if (!strstr(line, "\"event\":\"rekey\""))
			continue;
		assert_true(seen < n);
		assert_non_null(strstr(line, reasons[seen]));
		assert_non_null(strstr(line, "\"result\":\"ok\""));
		seen++;
	}
	fclose(fp);
	assert_int_equal(seen, n);
}

static void audit_close(struct fake_conn *f, const char *dir, const char *path)
{
	rsec_audit_close(f->ctx.audit);
	f->ctx.audit = NULL;
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
}

/*
 * An idle connection renews its keys by time again and again: after a rekey
 * each side sends a frame under its new keys unasked (the peer's old ones
 * retire without traffic), and a wait wakes when rekey_s runs out. Each
 * completed rekey is audited with its new phase and why.
 */
static void idle_connection_rekeys_by_time(void **state)
{
	struct fake_conn *f = *state;
	struct rsec_conn *c = f->c;
	char dir[32], path[64];
	audit_open(f, dir, path);
	f->ctx.rekey_s = 60;
	assert_int_equal(rsec_rekey_step(c), 0);
	c->path.chan->last_tx_ms = rsec_now_ms(); /* a keepalive just went: it is not the next timer */
	uint64_t later = rsec_now_ms() + 3600 * 1000;
	assert_int_equal(rsec_conn_next_timer(c, later), c->path.rk.since_ms + 60 * 1000 > c->path.chan->last_tx_ms + 15000 ?
								c->path.chan->last_tx_ms + 15000 : c->path.rk.since_ms + 60 * 1000);
	c->path.rk.since_ms = rsec_now_ms() - 55 * 1000; /* due in 5 s: before the keepalive */
	assert_int_equal(rsec_conn_next_timer(c, later), c->path.rk.since_ms + 60 * 1000);

	/* The client offers (no traffic before or after); the server answers, then sends under the new keys. */
	struct client cl;
	client_init(f, &cl);
	assert_int_equal(client_says(f, RSEC_MSG_REKEY, 1, cl.pub), 0);
	struct rsec_msg m;
	peer_gets(f, RSEC_MSG_REKEY_REPLY, &m);
	uint8_t keys[RSEC_SEAL_SECRET_LEN];
	client_next(&cl, m.u.rekey.pub, 1, keys);
	assert_int_equal(rsec_seal_next_tx(&f->peer, keys, c->aead, 1), 0);
	assert_int_equal(rsec_seal_next_rx(&f->peer, keys, c->aead, 1), 0);
	assert_int_equal(client_says(f, RSEC_MSG_REKEY_DONE, 1, NULL), 0);
	client_gets_new_keys_frame(f, 1);
	assert_null(c->path.seal.tx_old); /* the peer had acknowledged all the old key sealed: none */
	/* The client does the same: its frame under the new keys returns the credit and retires our old key. */
	uint32_t n = peer_seals(f, f->peer.tx, 0, RSEC_SEAL_FLAG_CREDIT_ONLY, 1, NULL, 0);
	struct ibv_wc wc = fake_recv_wc(c, 0, n);
	fake_complete(&wc);
	assert_int_equal(rsec_conn_poll_data(c), 0);
	assert_null(c->path.seal.rx_old);

	/* rekey_s later, still idle: the server offers generation 2; a wait no longer wakes for it then. */
	assert_int_equal(rsec_rekey_next_ms(c), c->path.rk.since_ms + 60 * 1000);
	c->path.rk.since_ms -= 61 * 1000;
	assert_int_equal(rsec_rekey_step(c), 0);
	peer_gets(f, RSEC_MSG_REKEY, &m);
	assert_int_equal(m.u.rekey.gen, 2);
	assert_int_equal(rsec_rekey_next_ms(c), UINT64_MAX);
	uint8_t next[RSEC_REKEY_SECRET_LEN];
	EVP_PKEY *priv = NULL;
	uint8_t pub[RSEC_REKEY_PUB_LEN];
	assert_int_equal(rsec_rekey_keypair(&priv, pub), 0);
	assert_int_equal(rsec_rekey_next(cl.secret, priv, m.u.rekey.pub, 2, next), 0);
	EVP_PKEY_free(priv);
	assert_int_equal(rsec_rekey_data_secret(next, keys), 0);
	assert_int_equal(rsec_seal_next_rx(&f->peer, keys, c->aead, 2), 0);
	assert_int_equal(client_says(f, RSEC_MSG_REKEY_REPLY, 2, pub), 0);
	peer_gets(f, RSEC_MSG_REKEY_DONE, &m);
	client_gets_new_keys_frame(f, 2);
	assert_int_equal(rsec_conn_rekeys(c), 2);

	static const char *const reasons[] = { "phase 1 (generation 1, epoch 0): the peer offered",
					       "phase 2 (generation 2, epoch 0): rekey_s passed" };
	audit_has_rekeys(path, reasons, 2);
	audit_close(f, dir, path);
	client_free(&cl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(keys_change_and_nothing_is_lost, setup, teardown),
		cmocka_unit_test_setup_teardown(rekey_bytes_triggers, setup, teardown),
		cmocka_unit_test_setup_teardown(derived_keys_follow_the_chain, setup, teardown),
		cmocka_unit_test_setup_teardown(grants_keyed_from_the_chain, setup, teardown),
		cmocka_unit_test_setup_teardown(grant_under_an_unknown_key_id, setup, teardown),
		cmocka_unit_test_setup_teardown(grant_key_id_not_offered, setup, teardown),
		cmocka_unit_test_setup_teardown(rekey_s_triggers, setup, teardown),
		cmocka_unit_test_setup_teardown(idle_connection_rekeys_by_time, setup, teardown),
		cmocka_unit_test_setup_teardown(simultaneous_offers_resolve, setup, teardown),
		cmocka_unit_test_setup_teardown(client_ignores_the_servers_offer, setup, teardown),
		cmocka_unit_test_setup_teardown(reply_to_no_offer, setup, teardown),
		cmocka_unit_test_setup_teardown(done_to_no_reply, setup, teardown),
		cmocka_unit_test_setup_teardown(wrong_generation, setup, teardown),
		cmocka_unit_test_setup_teardown(offer_while_answering, setup, teardown),
		cmocka_unit_test_setup_teardown(small_order_key, setup, teardown),
		cmocka_unit_test_setup_teardown(peer_that_did_not_offer_it, setup, teardown),
		cmocka_unit_test_setup_teardown(epoch_not_built, setup, teardown),
		cmocka_unit_test_setup_teardown(rebuild_starts_a_new_chain, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
