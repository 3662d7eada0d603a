/* SPDX-License-Identifier: MIT */
/*
 * The grantee's side of sealed grants (lib/sealed_post.c) without a device:
 * two connections' worth of state over a real TLS 1.3 session (PSK, a
 * socketpair), a region over plain memory. What rsec_post may take on a
 * sealed grant, the claim that reaches the granter, opening in place, and
 * the kept keys, each checked against the granter's own derivation.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "completion.h"
#include "conn.h"
#include "sealed.h"
#include "tls.h"
#include "test_frames.h"
#include "test_util.h"

#define GRANT_ID (RSEC_GRANT_ID_SERVER | 5) /* issued by the server, the peer of the connection under test */
#define SPAN 8192u

static const uint8_t psk[32] = { 7, 1, 7, 1, 7, 1, 7, 1, 7, 1, 7, 1, 7, 1, 7, 1 };

struct fixture {
	struct test_tls_pair tls; /* the connection under test holds client; the granter is server */
	struct rsec_ctx ctx;
	struct rsec_conn conn;
	struct ibv_mr fake_mr;
	uint8_t mem[SPAN];
	struct rsec_region region;
};

/* The connection's audit records and explanations: not the subject here. */
static void no_audit(void *owner, enum rsec_audit_event ev, const char *result, const char *reason,
		     const struct rsec_audit_region *region)
{
	(void)owner, (void)ev, (void)result, (void)reason, (void)region;
}

static void no_explain(void *owner, const char *why)
{
	(void)owner, (void)why;
}

static const struct rsec_path_hooks quiet_hooks = { .audit = no_audit, .explain = no_explain };

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	test_tls_pair(&f->tls, psk, sizeof(psk));
	f->conn = (struct rsec_conn){
		.ctx = &f->ctx, .path.phase = PHASE_ESTABLISHED, .path.cfg.aead = RSEC_AEAD_AES256GCM,
		.path.hooks = &quiet_hooks,
	};
	rsec_chan_init(&f->conn.own_chan, f->tls.fds[0], NULL, NULL); /* no epoll interest to keep */
	f->conn.own_chan.ssl = f->tls.client;
	f->conn.path.chan = &f->conn.own_chan;
	f->region = (struct rsec_region){
		.path = &f->conn.path, .serial = ++f->conn.path.regions_made, .local_mr = &f->fake_mr, .addr = f->mem, .len = SPAN,
	};
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	rsec_sealed_peer_clear(&f->conn.path);
	SSL_free(f->tls.client);
	SSL_free(f->tls.server);
	SSL_CTX_free(f->tls.cctx);
	SSL_CTX_free(f->tls.sctx);
	close(f->tls.fds[0]);
	close(f->tls.fds[1]);
	free(f);
	return 0;
}

static void fill(uint8_t *b, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(seed + i * 31);
}

/* The next control message the granter receives. */
static void granter_receives(struct fixture *f, struct rsec_msg *m)
{
	assert_true(test_read_frame(f->tls.server, m, true));
}

static struct rsec_wr wr_of(struct fixture *f, const struct rsec_remote_grant *g, enum rsec_op op, uint64_t remote_off,
			    size_t local_off, uint32_t len)
{
	return (struct rsec_wr){ .op = op, .grant = g, .remote_off = remote_off, .local = &f->region,
				 .local_off = local_off, .len = len };
}

static void posted_write_takes_only_what_was_sealed(void **state)
{
	struct fixture *f = *state;
	struct rsec_remote_grant g = { .id = GRANT_ID, .access = RSEC_ACCESS_WRITE | RSEC_GRANT_SEALED, .len = 4096 };
	const size_t plain = 1000, total = rsec_sealed_len(plain);
	uint8_t text[1000];
	fill(text, plain, 3);
	struct rsec_sealed_write *claim;

	/* Nothing sealed yet: plaintext cannot go out through a sealed grant. */
	memcpy(f->mem + 64, text, plain);
	struct rsec_wr w = wr_of(f, &g, RSEC_OP_WRITE, 100, 64, (uint32_t)total);
	assert_int_equal(rsec_sealed_post_check(&f->conn.path, &w, &claim), RSEC_E_RANGE);

	assert_int_equal(rsec_region_seal(&f->conn, &g, 100, &f->region, 64, plain), 0);
	assert_memory_not_equal(f->mem + 64, text, plain);

	/* Only the very operation it was sealed for. */
	struct rsec_wr bad[] = {
		wr_of(f, &g, RSEC_OP_WRITE, 0, 64, (uint32_t)total),
		wr_of(f, &g, RSEC_OP_WRITE, 100, 0, (uint32_t)total),
		wr_of(f, &g, RSEC_OP_WRITE, 100, 64, (uint32_t)plain),
		wr_of(f, &g, RSEC_OP_READ, 100, 64, (uint32_t)total),
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(rsec_sealed_post_check(&f->conn.path, &bad[i], &claim), RSEC_E_RANGE);
	struct rsec_region later = f->region; /* another region where this one was */
	later.serial = ++f->conn.path.regions_made;
	w.local = &later;
	assert_int_equal(rsec_sealed_post_check(&f->conn.path, &w, &claim), RSEC_E_RANGE);
	w.local = &f->region;
	assert_int_equal(rsec_sealed_post_check(&f->conn.path, &w, &claim), 0);
	assert_non_null(claim);

	/* Posted: the grant takes no second write, and the first is claimed once it succeeded. */
	claim->state = SEALED_WRITE_POSTED;
	assert_int_equal(rsec_region_seal(&f->conn, &g, 0, &f->region, 2048, 10), RSEC_E_GRANT);
	assert_int_equal(rsec_sealed_write_claim(&f->conn.path, claim), 0);
	assert_int_equal(rsec_region_seal(&f->conn, &g, 0, &f->region, 2048, 10), RSEC_E_GRANT);
	assert_int_equal(rsec_sealed_post_check(&f->conn.path, &w, &claim), RSEC_E_RANGE);

	/* The granter opens what arrived with what the claim says and its own key. */
	struct rsec_msg m;
	granter_receives(f, &m);
	assert_int_equal(m.type, RSEC_MSG_VERIFY);
	assert_true(m.u.verify.grant_id == GRANT_ID && m.u.verify.offset == 100 && m.u.verify.len == plain);
	assert_int_equal(m.u.verify.mac_alg, RSEC_WIRE_MAC_SEALED);
	struct rsec_sealed_params p = {
		.alg = RSEC_AEAD_AES256GCM, .grant_id = GRANT_ID, .offset = 100, .plain_len = plain,
	};
	memcpy(p.prefix, m.u.verify.mac, sizeof(p.prefix));
	uint8_t key[RSEC_SEALED_KEY_LEN], landed[1100];
	assert_int_equal(rsec_sealed_key(f->tls.server, GRANT_ID, key), 0);
	memcpy(landed, f->mem + 64, total);
	assert_int_equal(rsec_sealed_open(key, &p, landed), 0);
	assert_memory_equal(landed, text, plain);

	/* The peer revoked it: a new grant under that id could be written again. */
	rsec_sealed_peer_forget(&f->conn.path, GRANT_ID);
	assert_int_equal(rsec_region_seal(&f->conn, &g, 0, &f->region, 2048, 10), 0);
}

static void region_seal_refuses_what_does_not_fit(void **state)
{
	struct fixture *f = *state;
	struct rsec_remote_grant g = { .id = GRANT_ID, .access = RSEC_ACCESS_WRITE | RSEC_GRANT_SEALED, .len = 1024 };
	struct rsec_remote_grant plain = g, reader = g;
	plain.access = RSEC_ACCESS_WRITE;
	reader.access = RSEC_ACCESS_READ | RSEC_GRANT_SEALED;
	assert_int_equal(rsec_region_seal(&f->conn, &plain, 0, &f->region, 0, 10), RSEC_E_GRANT);
	assert_int_equal(rsec_region_seal(&f->conn, &reader, 0, &f->region, 0, 10), RSEC_E_GRANT);
	assert_int_equal(rsec_region_seal(&f->conn, &g, 1024 - 16, &f->region, 0, 1), RSEC_E_RANGE); /* 17 bytes */
	assert_int_equal(rsec_region_seal(&f->conn, &g, 0, &f->region, SPAN - 16, 1), RSEC_E_RANGE);
	assert_int_equal(rsec_region_seal(&f->conn, &g, 0, &f->region, 0, 0), RSEC_E_INVAL);
	f->conn.path.phase = PHASE_CLOSED;
	f->conn.path.close_code = RSEC_E_CLOSED;
	assert_int_equal(rsec_region_seal(&f->conn, &g, 0, &f->region, 0, 10), RSEC_E_CLOSED);
}

/* The granter seals plain_len bytes of text for a READ grant, as rsec_grant does. */
static struct rsec_remote_grant granted_for_reading(struct fixture *f, const uint8_t *text, size_t plain_len,
						    uint8_t *sealed)
{
	struct rsec_remote_grant g = {
		.id = GRANT_ID, .access = RSEC_ACCESS_READ | RSEC_GRANT_SEALED, .len = rsec_sealed_len(plain_len),
	};
	struct rsec_sealed_params p = { .alg = RSEC_AEAD_AES256GCM, .grant_id = GRANT_ID, .plain_len = plain_len };
	for (size_t i = 0; i < sizeof(p.prefix); i++)
		p.prefix[i] = (uint8_t)(0xa0 + i);
	memcpy(g.mac, p.prefix, sizeof(p.prefix));
	uint8_t key[RSEC_SEALED_KEY_LEN];
	assert_int_equal(rsec_sealed_key(f->tls.server, GRANT_ID, key), 0);
	memcpy(sealed, text, plain_len);
	assert_int_equal(rsec_sealed_seal(key, &p, sealed), 0);
	return g;
}

static void posted_read_is_whole_and_opens_in_place(void **state)
{
	struct fixture *f = *state;
	uint8_t text[3000], sealed[3100];
	fill(text, sizeof(text), 9);
	struct rsec_remote_grant g = granted_for_reading(f, text, sizeof(text), sealed);
	struct rsec_sealed_write *claim = (void *)1;
	struct rsec_wr part = wr_of(f, &g, RSEC_OP_READ, 16, 0, (uint32_t)g.len - 16);
	struct rsec_wr shortread = wr_of(f, &g, RSEC_OP_READ, 0, 0, (uint32_t)g.len - 1);
	struct rsec_wr whole = wr_of(f, &g, RSEC_OP_READ, 0, 0, (uint32_t)g.len);
	assert_int_equal(rsec_sealed_post_check(&f->conn.path, &part, &claim), RSEC_E_RANGE);
	assert_int_equal(rsec_sealed_post_check(&f->conn.path, &shortread, &claim), RSEC_E_RANGE);
	assert_int_equal(rsec_sealed_post_check(&f->conn.path, &whole, &claim), 0);
	assert_null(claim);

	/* What the READ brought in, opened where it landed. */
	size_t n = 0;
	memcpy(f->mem + 512, sealed, g.len);
	assert_int_equal(rsec_region_open(&f->conn, &g, &f->region, 512, &n), 0);
	assert_int_equal(n, sizeof(text));
	assert_memory_equal(f->mem + 512, text, n);
	assert_true(all_zero(f->mem + 512 + n, g.len - n)); /* the tags are gone */

	/* A changed byte: refused, and nothing of it stays. */
	memcpy(f->mem + 512, sealed, g.len);
	f->mem[512 + 2000] ^= 1;
	assert_int_equal(rsec_region_open(&f->conn, &g, &f->region, 512, &n), RSEC_E_MAC);
	assert_int_equal(n, 0);
	assert_true(all_zero(f->mem + 512, g.len));
	assert_int_equal(f->conn.path.data_mac_failures, 1);

	/* Not a sealed READ grant, or no room for it. */
	struct rsec_remote_grant writer = g;
	writer.access = RSEC_ACCESS_WRITE | RSEC_GRANT_SEALED;
	assert_int_equal(rsec_region_open(&f->conn, &writer, &f->region, 0, &n), RSEC_E_GRANT);
	assert_int_equal(rsec_region_open(&f->conn, &g, &f->region, SPAN - 100, &n), RSEC_E_RANGE);
}

static void kept_keys_are_the_granters_and_bounded(void **state)
{
	struct fixture *f = *state;
	/* More grants than kept keys, each asked for twice: every key is its grant's, whether kept or derived again. */
	for (int round = 0; round < 2; round++)
		for (uint64_t i = 0; i < RSEC_PEER_KEYS + 3; i++) {
			uint64_t id = RSEC_GRANT_ID_SERVER | (100 + i);
			struct rsec_sealed_key *k;
			assert_int_equal(rsec_sealed_peer_key(&f->conn.path, id, &k), 0);
			struct rsec_sealed_params p = { .alg = RSEC_AEAD_AES256GCM, .grant_id = id, .plain_len = 40 };
			uint8_t b[56], key[RSEC_SEALED_KEY_LEN];
			fill(b, 40, (uint8_t)i);
			assert_int_equal(rsec_sealed_seal_with(k, &p, b), 0);
			assert_int_equal(rsec_sealed_key(f->tls.server, id, key), 0);
			assert_int_equal(rsec_sealed_open(key, &p, b), 0);
		}
	unsigned kept = 0;
	for (unsigned i = 0; i < RSEC_PEER_KEYS; i++)
		kept += f->conn.path.peer_keys[i].key.ctx != NULL;
	assert_int_equal(kept, RSEC_PEER_KEYS);
	rsec_sealed_peer_forget(&f->conn.path, RSEC_GRANT_ID_SERVER | (100 + RSEC_PEER_KEYS + 2));
	kept = 0;
	for (unsigned i = 0; i < RSEC_PEER_KEYS; i++)
		kept += f->conn.path.peer_keys[i].key.ctx != NULL;
	assert_int_equal(kept, RSEC_PEER_KEYS - 1);
}

/* Nothing more from the granter's side of the control channel for now. */
static bool granter_has_nothing(struct fixture *f)
{
	uint8_t b[1];
	size_t got = 0;
	return rsec_tls_read_some(f->tls.server, b, sizeof(b), &got) == RSEC_E_AGAIN && got == 0;
}

/* As rsec_post does for the WRITE rsec_region_seal prepared: its slot in flight, carrying the claim. */
static uint32_t posted(struct fixture *f, const struct rsec_wr *w, struct rsec_sealed_write *claim)
{
	struct rsec_op_slot op = { .op = w->op, .len = w->len, .owner = w->local, .then = claim,
				   .reporting = RSEC_OP_REPORT };
	claim->state = SEALED_WRITE_POSTED;
	w->local->users++;
	return rsec_ops_push(&f->conn.path.ops, &op);
}

static void revoked_while_in_flight_claims_nothing_later(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(rsec_ops_init(&f->conn.path.ops, 8), 0);
	struct rsec_remote_grant a = { .id = GRANT_ID, .access = RSEC_ACCESS_WRITE | RSEC_GRANT_SEALED, .len = 4096 };
	struct rsec_remote_grant b = a;
	b.id = GRANT_ID + 1;
	const size_t plain = 100, total = rsec_sealed_len(plain);
	struct rsec_sealed_write *claim_a, *claim_b;

	/* A's sealed WRITE is in flight when the peer revokes A. */
	assert_int_equal(rsec_region_seal(&f->conn, &a, 0, &f->region, 0, plain), 0);
	struct rsec_wr wa = wr_of(f, &a, RSEC_OP_WRITE, 0, 0, (uint32_t)total);
	assert_int_equal(rsec_sealed_post_check(&f->conn.path, &wa, &claim_a), 0);
	uint32_t idx = posted(f, &wa, claim_a);
	struct rsec_msg revoke = { .type = RSEC_MSG_REVOKE };
	revoke.u.revoke.grant_id = a.id;
	assert_int_equal(rsec_grant_on_msg(&f->conn.path, &revoke), 0);

	/* Meanwhile the application seals for B, not posted yet. */
	assert_int_equal(rsec_region_seal(&f->conn, &b, 0, &f->region, 4096, plain), 0);
	struct rsec_wr wb = wr_of(f, &b, RSEC_OP_WRITE, 0, 4096, (uint32_t)total);

	/* A's WRITE completes: nothing is claimed, neither A (revoked) nor B (never written). */
	struct ibv_wc wc = { .wr_id = RSEC_WR_ID(WR_RDMA, idx), .status = IBV_WC_SUCCESS };
	assert_int_equal(rsec_onesided_on_wc(&f->conn.path, &wc), 0);
	assert_true(granter_has_nothing(f));
	assert_int_equal(f->conn.path.phase, PHASE_ESTABLISHED);

	/* B's WRITE is still the one to post, and is claimed once it succeeded, with B's prefix. */
	assert_int_equal(rsec_sealed_post_check(&f->conn.path, &wb, &claim_b), 0);
	assert_non_null(claim_b);
	idx = posted(f, &wb, claim_b);
	wc.wr_id = RSEC_WR_ID(WR_RDMA, idx);
	assert_int_equal(rsec_onesided_on_wc(&f->conn.path, &wc), 0);
	struct rsec_msg m;
	granter_receives(f, &m);
	assert_int_equal(m.type, RSEC_MSG_VERIFY);
	assert_true(m.u.verify.grant_id == b.id && m.u.verify.offset == 0 && m.u.verify.len == plain);
	struct rsec_sealed_params p = { .alg = RSEC_AEAD_AES256GCM, .grant_id = b.id, .plain_len = plain };
	memcpy(p.prefix, m.u.verify.mac, sizeof(p.prefix));
	uint8_t key[RSEC_SEALED_KEY_LEN], landed[256];
	assert_int_equal(rsec_sealed_key(f->tls.server, b.id, key), 0);
	memcpy(landed, f->mem + 4096, total);
	assert_int_equal(rsec_sealed_open(key, &p, landed), 0);
	assert_true(granter_has_nothing(f));
	rsec_ops_free(&f->conn.path.ops);
}

/* Memory the process may not write is registered read-only (local_ro): sealing or opening in it is refused, not a crash. */
static void read_only_region_is_neither_sealed_nor_opened_in(void **state)
{
	struct fixture *f = *state;
	uint8_t *ro = mmap(NULL, SPAN, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(ro != MAP_FAILED);
	struct rsec_region r = {
		.path = &f->conn.path, .serial = ++f->conn.path.regions_made, .local_mr = &f->fake_mr, .local_ro = true,
		.addr = ro, .len = SPAN,
	};
	struct rsec_remote_grant w = { .id = GRANT_ID, .access = RSEC_ACCESS_WRITE | RSEC_GRANT_SEALED, .len = 4096 };
	assert_int_equal(rsec_region_seal(&f->conn, &w, 0, &r, 0, 100), RSEC_E_RANGE);
	uint8_t text[100], sealed[200];
	fill(text, sizeof(text), 1);
	struct rsec_remote_grant g = granted_for_reading(f, text, sizeof(text), sealed);
	size_t n = 1;
	assert_int_equal(rsec_region_open(&f->conn, &g, &r, 0, &n), RSEC_E_RANGE);
	assert_int_equal(n, 0);
	assert_int_equal(munmap(ro, SPAN), 0);
}

static unsigned kept_keys(const struct rsec_conn *c)
{
	unsigned kept = 0;
	for (unsigned i = 0; i < RSEC_PEER_KEYS; i++)
		kept += c->path.peer_keys[i].key.ctx != NULL;
	return kept;
}

/* The connection fails (not yet freed): no kept key of the peer's grants stays, and none is kept again. */
static void failed_connection_keeps_no_key(void **state)
{
	struct fixture *f = *state;
	uint8_t text[500], sealed[600];
	fill(text, sizeof(text), 5);
	struct rsec_remote_grant g = granted_for_reading(f, text, sizeof(text), sealed);
	struct rsec_remote_grant w = { .id = GRANT_ID + 1, .access = RSEC_ACCESS_WRITE | RSEC_GRANT_SEALED, .len = 4096 };
	size_t n = 0;
	memcpy(f->mem, sealed, g.len);
	assert_int_equal(rsec_region_open(&f->conn, &g, &f->region, 0, &n), 0);
	assert_int_equal(rsec_region_seal(&f->conn, &w, 0, &f->region, 4096, 100), 0);
	assert_int_equal(kept_keys(&f->conn), 2);

	assert_int_equal(rsec_conn_fail(&f->conn, RSEC_E_PROTO, "test"), RSEC_E_PROTO);
	assert_int_equal(kept_keys(&f->conn), 0);

	/* A READ that completed before the failure still opens, with a key kept for the call only. */
	memcpy(f->mem, sealed, g.len);
	assert_int_equal(rsec_region_open(&f->conn, &g, &f->region, 0, &n), 0);
	assert_int_equal(n, sizeof(text));
	assert_memory_equal(f->mem, text, n);
	assert_int_equal(kept_keys(&f->conn), 0);
}

/* Opening in place never puts plaintext where a sealed write waits for (or is in) its WRITE. */
static void open_refuses_the_bytes_of_a_sealed_write(void **state)
{
	struct fixture *f = *state;
	uint8_t text[500], sealed[600];
	fill(text, sizeof(text), 7);
	struct rsec_remote_grant g = granted_for_reading(f, text, sizeof(text), sealed);
	struct rsec_remote_grant w = { .id = GRANT_ID + 1, .access = RSEC_ACCESS_WRITE | RSEC_GRANT_SEALED, .len = 4096 };
	const size_t plain = 100, total = rsec_sealed_len(plain);
	assert_int_equal(rsec_region_seal(&f->conn, &w, 0, &f->region, 1000, plain), 0);

	/* A READ of g landed over the sealed bytes (the application reused the place). */
	size_t n = 1;
	memcpy(f->mem + 1000 - 200, sealed, g.len);
	assert_int_equal(rsec_region_open(&f->conn, &g, &f->region, 1000 - 200, &n), RSEC_E_RANGE);
	assert_int_equal(n, 0);
	assert_memory_not_equal(f->mem + 1000, text + 200, plain); /* no plaintext where the WRITE takes its bytes */

	/* Posted, and its grant revoked while it is in flight: still its bytes until it ends. */
	struct rsec_sealed_write *claim;
	struct rsec_wr wr = wr_of(f, &w, RSEC_OP_WRITE, 0, 1000, (uint32_t)total);
	assert_int_equal(rsec_sealed_post_check(&f->conn.path, &wr, &claim), 0);
	claim->state = SEALED_WRITE_POSTED;
	rsec_sealed_peer_forget(&f->conn.path, w.id);
	memcpy(f->mem + 1000, sealed, g.len);
	assert_int_equal(rsec_region_open(&f->conn, &g, &f->region, 1000, &n), RSEC_E_RANGE);

	/* Elsewhere in the region, it opens. */
	memcpy(f->mem + 2000, sealed, g.len);
	assert_int_equal(rsec_region_open(&f->conn, &g, &f->region, 2000, &n), 0);
	assert_memory_equal(f->mem + 2000, text, n);
}

/* The verified calls follow the one rule before they look a grant's keys up: set-up, then the close code. */
static void verified_calls_wait_for_setup_and_report_the_close(void **state)
{
	struct fixture *f = *state;
	struct rsec_remote_grant g = { .id = GRANT_ID, .access = RSEC_ACCESS_READ | RSEC_ACCESS_WRITE | RSEC_GRANT_VERIFIED,
				       .len = 64 };
	uint8_t buf[64] = { 0 };
	f->conn.path.phase = PHASE_QP_INFO;
	assert_int_equal(rsec_write_verified(&f->conn, &g, 0, buf, sizeof(buf), 0), RSEC_E_AGAIN);
	assert_int_equal(rsec_read_verified(&f->conn, &g, buf, sizeof(buf), 0), RSEC_E_AGAIN);
	f->conn.path.phase = PHASE_CLOSED;
	f->conn.path.close_code = RSEC_E_MAC;
	assert_int_equal(rsec_write_verified(&f->conn, &g, 0, buf, sizeof(buf), 0), RSEC_E_MAC);
	assert_int_equal(rsec_read_verified(&f->conn, &g, buf, sizeof(buf), 0), RSEC_E_MAC);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(posted_write_takes_only_what_was_sealed, setup, teardown),
		cmocka_unit_test_setup_teardown(region_seal_refuses_what_does_not_fit, setup, teardown),
		cmocka_unit_test_setup_teardown(posted_read_is_whole_and_opens_in_place, setup, teardown),
		cmocka_unit_test_setup_teardown(kept_keys_are_the_granters_and_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(revoked_while_in_flight_claims_nothing_later, setup, teardown),
		cmocka_unit_test_setup_teardown(read_only_region_is_neither_sealed_nor_opened_in, setup, teardown),
		cmocka_unit_test_setup_teardown(failed_connection_keeps_no_key, setup, teardown),
		cmocka_unit_test_setup_teardown(open_refuses_the_bytes_of_a_sealed_write, setup, teardown),
		cmocka_unit_test_setup_teardown(verified_calls_wait_for_setup_and_report_the_close, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
