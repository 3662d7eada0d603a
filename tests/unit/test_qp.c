/* SPDX-License-Identifier: MIT */
/*
 * The pure parts of lib/dev, lib/qp and lib/mw: PSN and key generation, MTU
 * arithmetic, peer validation, argument checks, the pick from a GID table. Verbs themselves are only
 * exercised on the fabric (tests/fabric/verbs.sh), never mocked.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "dev.h"
#include "mw.h"
#include "qp.h"

static void psn_is_24_bits_and_spread(void **state)
{
	unsigned high = 0, low_bit = 0, same = 0;
	uint32_t prev = 0xffffffffu;

	(void)state;
	for (int i = 0; i < 4096; i++) {
		uint32_t psn = 0xdeadbeef;

		assert_int_equal(rsec_psn_random(&psn), 0);
		assert_true(psn <= RSEC_PSN_MASK);
		high += (psn >> 23) & 1;
		low_bit += psn & 1;
		same += psn == prev;
		prev = psn;
	}
	/* Binomial(4096, 1/2): outside [1800, 2300] is > 6 sigma away. */
	assert_in_range(high, 1800, 2300);
	assert_in_range(low_bit, 1800, 2300);
	assert_true(same < 2);
	assert_int_equal(rsec_psn_random(NULL), RSEC_E_INVAL);
}

static void mtu_math(void **state)
{
	(void)state;
	assert_int_equal(rsec_mtu_bytes(IBV_MTU_256), 256);
	assert_int_equal(rsec_mtu_bytes(IBV_MTU_1024), 1024);
	assert_int_equal(rsec_mtu_bytes(IBV_MTU_4096), 4096);
	assert_int_equal(rsec_mtu_bytes((enum ibv_mtu)0), 0);
	assert_int_equal(rsec_mtu_bytes((enum ibv_mtu)6), 0);
	assert_int_equal(rsec_qp_path_mtu(IBV_MTU_4096, IBV_MTU_1024), IBV_MTU_1024);
	assert_int_equal(rsec_qp_path_mtu(IBV_MTU_512, IBV_MTU_2048), IBV_MTU_512);
	assert_int_equal(rsec_qp_path_mtu(IBV_MTU_1024, IBV_MTU_1024), IBV_MTU_1024);
	assert_int_equal(rsec_qp_path_mtu(IBV_MTU_1024, (enum ibv_mtu)0), 0);
	assert_int_equal(rsec_qp_path_mtu((enum ibv_mtu)9, IBV_MTU_1024), 0);
}

static void peer_check_rejects_impossible_values(void **state)
{
	struct rsec_qp_peer good = { .qpn = 0x11, .psn = 0xabcdef, .mtu = IBV_MTU_1024 }, p;

	(void)state;
	assert_int_equal(rsec_qp_peer_check(&good), 0);
	p = good;
	p.psn = RSEC_PSN_MASK;
	assert_int_equal(rsec_qp_peer_check(&p), 0);
	p.psn = RSEC_PSN_MASK + 1;
	assert_int_equal(rsec_qp_peer_check(&p), RSEC_E_PROTO);
	p = good;
	p.qpn = 0;
	assert_int_equal(rsec_qp_peer_check(&p), RSEC_E_PROTO);
	p.qpn = 1; /* GSI */
	assert_int_equal(rsec_qp_peer_check(&p), RSEC_E_PROTO);
	p.qpn = RSEC_PSN_MASK + 1;
	assert_int_equal(rsec_qp_peer_check(&p), RSEC_E_PROTO);
	p = good;
	p.mtu = (enum ibv_mtu)0;
	assert_int_equal(rsec_qp_peer_check(&p), RSEC_E_PROTO);
	p.mtu = (enum ibv_mtu)6;
	assert_int_equal(rsec_qp_peer_check(&p), RSEC_E_PROTO);
	assert_int_equal(rsec_qp_peer_check(NULL), RSEC_E_INVAL);
}

static void next_rkey_keeps_index_changes_byte(void **state)
{
	uint32_t key = 0x08000100u;
	unsigned seen[256] = { 0 }, distinct = 0;

	(void)state;
	for (int i = 0; i < 4096; i++) {
		uint32_t next = 0;

		assert_int_equal(rsec_mw_next_rkey(key, &next), 0);
		assert_int_equal(next >> 8, key >> 8);
		assert_int_not_equal(next & 0xff, key & 0xff);
		distinct += seen[next & 0xff]++ == 0;
		key = next;
	}
	assert_true(distinct > 200); /* random, not a counter stuck on a few values */
	assert_int_equal(rsec_mw_next_rkey(1, NULL), RSEC_E_INVAL);
}

static void dev_open_bad_arguments(void **state)
{
	struct rsec_dev *d = (struct rsec_dev *)0x1;
	char why[128] = "";

	(void)state;
	assert_int_equal(rsec_dev_open_err(NULL, "10.0.0.300", &d, why, sizeof(why)), RSEC_E_INVAL);
	assert_null(d);
	assert_string_equal(why, "not an IP address literal");
	assert_int_equal(rsec_dev_open(NULL, "not-an-ip", &d), RSEC_E_INVAL);
	assert_int_equal(rsec_dev_open(NULL, NULL, NULL), RSEC_E_INVAL);
	/* No device has this name, whatever the machine has. */
	assert_int_equal(rsec_dev_open_err("rsec-no-such-device", NULL, &d, why, sizeof(why)), RSEC_E_NODEV);
	assert_null(d);
	assert_true(strlen(why) > 0);
	assert_int_equal(rsec_dev_open_err("rsec-no-such-device", "::1", &d, NULL, 0), RSEC_E_NODEV);
	rsec_dev_put(NULL);
	assert_null(rsec_dev_ref(NULL));
}

static struct ibv_gid_entry gid_entry(uint32_t port, uint32_t index, enum ibv_gid_type type, uint8_t last,
				       bool v4_mapped)
{
	struct ibv_gid_entry e = { .port_num = port, .gid_index = index, .gid_type = type };

	if (v4_mapped) {
		e.gid.raw[10] = 0xff;
		e.gid.raw[11] = 0xff;
	} else {
		e.gid.raw[0] = 0xfe;
		e.gid.raw[1] = 0x80;
	}
	e.gid.raw[15] = last;
	return e;
}

/* rxe's table lists every valid entry of every port, in no promised order. */
static void gid_pick_from_a_table(void **state)
{
	const struct ibv_gid_entry t[] = {
		gid_entry(2, 1, IBV_GID_TYPE_ROCE_V2, 9, true),  /* another port's */
		gid_entry(1, 5, IBV_GID_TYPE_ROCE_V2, 7, true),
		gid_entry(1, 0, IBV_GID_TYPE_ROCE_V1, 3, true),  /* RoCE v1: never */
		gid_entry(1, 3, IBV_GID_TYPE_ROCE_V2, 3, false), /* link-local v2 */
		gid_entry(1, 4, IBV_GID_TYPE_ROCE_V2, 8, true),
		gid_entry(1, 2, IBV_GID_TYPE_ROCE_V2, 4, false),
	};
	union ibv_gid found, want;

	(void)state;
	/* No address: the IPv4-mapped RoCEv2 GID of lowest index on the port asked. */
	assert_int_equal(rsec_gid_pick(t, 6, 1, NULL, &found), 4);
	assert_int_equal(found.raw[15], 8);
	/* An address: exactly its GID, only as RoCEv2, only on that port. */
	want = t[1].gid;
	assert_int_equal(rsec_gid_pick(t, 6, 1, &want, &found), 5);
	assert_memory_equal(found.raw, want.raw, sizeof(want.raw));
	want = t[2].gid;
	assert_int_equal(rsec_gid_pick(t, 6, 1, &want, &found), -1);
	want = t[0].gid;
	assert_int_equal(rsec_gid_pick(t, 6, 1, &want, &found), -1);
	assert_int_equal(rsec_gid_pick(t, 6, 2, &want, &found), 1);
	/* No IPv4-mapped one: the RoCEv2 GID of lowest index. */
	assert_int_equal(rsec_gid_pick(t + 2, 2, 1, NULL, &found), 3);
	assert_int_equal(rsec_gid_pick(t + 3, 3, 1, NULL, &found), 4);
	const struct ibv_gid_entry ll[] = { t[3], t[5] };
	assert_int_equal(rsec_gid_pick(ll, 2, 1, NULL, &found), 2);
	assert_int_equal(found.raw[15], 4);
	/* Nothing for the port, or an empty table. */
	assert_int_equal(rsec_gid_pick(t, 6, 3, NULL, &found), -1);
	assert_int_equal(rsec_gid_pick(t, 0, 1, NULL, &found), -1);
}

static void qp_argument_checks_before_any_verb(void **state)
{
	struct rsec_dev fake;
	struct rsec_qp q, zero;
	struct rsec_mw w;
	struct ibv_mr *mr = NULL;
	struct ibv_wc wc;
	uint8_t buf[16];

	(void)state;
	memset(&fake, 0, sizeof(fake));
	fake.max_qp_wr = 16;
	fake.max_sge = 1;
	memset(&zero, 0, sizeof(zero));
	memset(&q, 0xa5, sizeof(q));
	assert_int_equal(rsec_qp_create(&fake, 17, 1, &q), RSEC_E_RANGE);
	assert_memory_equal(&q, &zero, sizeof(q)); /* nothing half-made is left behind */
	assert_int_equal(rsec_qp_create(&fake, 1, 17, &q), RSEC_E_RANGE);
	assert_int_equal(rsec_qp_create(&fake, 0, 1, &q), RSEC_E_INVAL);
	assert_int_equal(rsec_qp_create(NULL, 1, 1, &q), RSEC_E_INVAL);
	assert_int_equal(rsec_qp_create(&fake, 1, 1, NULL), RSEC_E_INVAL);

	rsec_qp_destroy(&q); /* zeroed: a no-op */
	rsec_qp_destroy(NULL);
	assert_int_equal(rsec_qp_connect(&q, NULL), RSEC_E_INVAL);
	assert_int_equal(rsec_qp_to_error(&q), RSEC_E_INVAL);
	assert_int_equal(rsec_qp_state(&q), -1);
	assert_int_equal(rsec_cq_wait(NULL, 1, 0, &wc), RSEC_E_INVAL);
	assert_int_equal(rsec_qp_wait_wr(&q, 1, 0, &wc), RSEC_E_INVAL);

	assert_int_equal(rsec_mr_reg(&q, buf, sizeof(buf), true, &mr), RSEC_E_INVAL);
	assert_int_equal(rsec_mr_reg(NULL, buf, sizeof(buf), true, &mr), RSEC_E_INVAL);
	assert_null(mr);
	assert_int_equal(rsec_mw_alloc(&q, &w), RSEC_E_INVAL);
	memset(&w, 0, sizeof(w));
	assert_int_equal(rsec_mw_bind_post(&q, &w, NULL, 0, 1, IBV_ACCESS_REMOTE_READ, 1), RSEC_E_INVAL);
	assert_int_equal(rsec_mw_invalidate_post(&q, &w, 1), RSEC_E_INVAL);
	rsec_mw_free(&w);
	rsec_mw_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(psn_is_24_bits_and_spread),
		cmocka_unit_test(mtu_math),
		cmocka_unit_test(peer_check_rejects_impossible_values),
		cmocka_unit_test(next_rkey_keeps_index_changes_byte),
		cmocka_unit_test(dev_open_bad_arguments),
		cmocka_unit_test(gid_pick_from_a_table),
		cmocka_unit_test(qp_argument_checks_before_any_verb),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
