/* SPDX-License-Identifier: MIT */
/*
 * Completion checks (lib/completion): a receive completion is used only if
 * it is a plain RECV into a slot we posted and fits it; a send completion
 * only if it names a work request we have outstanding with the opcode we
 * posted. The completions a hostile peer causes on rxe (a WRITE WITH
 * IMMEDIATE through a grant, a SEND_WITH_INV) are built here as rxe reports
 * them (docs/verbs.md); tests/fabric/hostile_peer.sh sends the real ones.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "completion.h"

static const struct rsec_posted posted = {
	.recv_slots = 8, .slot_size = 4096, .send_slots = 4, .sends_inflight = 2, .binds = 64, .ops_depth = 0,
};

static struct ibv_wc recv_wc(uint32_t slot, uint32_t len)
{
	return (struct ibv_wc){
		.wr_id = RSEC_WR_ID(WR_RECV, slot), .status = IBV_WC_SUCCESS, .opcode = IBV_WC_RECV, .byte_len = len,
	};
}

/* Checks wc, and on refusal that why names what happened. */
static int check_recv(const struct ibv_wc *wc, uint32_t *slot, const char *expect)
{
	char why[160] = "";
	int rc = rsec_completion_check_recv(wc, &posted, slot, why, sizeof(why));
	if (expect) {
		assert_int_equal(rc, RSEC_E_PROTO);
		assert_non_null(strstr(why, expect));
	}
	return rc;
}

static void plain_receives_pass(void **state)
{
	(void)state;
	uint32_t slot = 99;
	struct ibv_wc wc = recv_wc(7, 4096);
	assert_int_equal(check_recv(&wc, &slot, NULL), 0);
	assert_int_equal(slot, 7);
	wc = recv_wc(0, 0);
	assert_int_equal(check_recv(&wc, &slot, NULL), 0); /* short frames are seal.c's to refuse */
	assert_int_equal(slot, 0);
}

static void write_with_immediate_is_refused(void **state)
{
	(void)state;
	uint32_t slot = 99;
	/* What rxe reports: the receive consumed, byte_len the write's, far over the slot. */
	struct ibv_wc wc = recv_wc(3, 65536);
	wc.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
	wc.wc_flags = IBV_WC_WITH_IMM;
	check_recv(&wc, &slot, "WRITE WITH IMMEDIATE");
	wc.byte_len = 16; /* even a short one */
	check_recv(&wc, &slot, "WRITE WITH IMMEDIATE");
	assert_int_equal(slot, 99);
}

static void oversized_and_odd_receives_are_refused(void **state)
{
	(void)state;
	uint32_t slot = 99;
	struct ibv_wc wc = recv_wc(1, 4097);
	check_recv(&wc, &slot, "over the 4096-byte buffer");
	wc = recv_wc(1, UINT32_MAX);
	check_recv(&wc, &slot, "over the");
	wc = recv_wc(1, 64);
	wc.wc_flags = IBV_WC_WITH_IMM;
	check_recv(&wc, &slot, "SEND WITH IMMEDIATE");
	wc = recv_wc(1, 64);
	wc.opcode = IBV_WC_RDMA_READ;
	check_recv(&wc, &slot, "opcode");
	assert_int_equal(slot, 99);
}

static void remote_invalidation_is_refused(void **state)
{
	(void)state;
	uint32_t slot = 99;
	struct ibv_wc wc = recv_wc(2, 64);
	wc.wc_flags = IBV_WC_WITH_INV;
	check_recv(&wc, &slot, "SEND_WITH_INV");
	/* rxe: the kernel's IB_WC_WITH_INVALIDATE is libibverbs' bit 2, with the key in the union. */
	wc = recv_wc(2, 64);
	wc.wc_flags = IBV_WC_IP_CSUM_OK;
	wc.invalidated_rkey = 0x1234;
	check_recv(&wc, &slot, "SEND_WITH_INV");
	assert_int_equal(slot, 99);
}

static void receives_we_did_not_post_are_refused(void **state)
{
	(void)state;
	uint32_t slot = 99;
	struct ibv_wc wc = recv_wc(8, 64); /* one past the ring */
	check_recv(&wc, &slot, "did not post");
	wc.wr_id = RSEC_WR_ID(WR_SEND, 1);
	check_recv(&wc, &slot, "did not post");
	wc.wr_id = RSEC_WR_ID(WR_RECV, 1) | (UINT64_C(1) << 40);
	check_recv(&wc, &slot, "did not post");
	assert_int_equal(slot, 99);
}

static int check_send(uint64_t wr_id, enum ibv_wc_status status, enum ibv_wc_opcode op, const struct rsec_posted *p)
{
	struct ibv_wc wc = { .wr_id = wr_id, .status = status, .opcode = op };
	char why[160] = "";
	int rc = rsec_completion_check_send(&wc, p, why, sizeof(why));
	assert_true(rc == 0 ? why[0] == '\0' : why[0] != '\0');
	return rc;
}

static void send_completions_match_what_we_posted(void **state)
{
	(void)state;
	struct rsec_posted p = posted;
	assert_int_equal(check_send(RSEC_WR_ID(WR_SEND, 3), IBV_WC_SUCCESS, IBV_WC_SEND, &p), 0);
	assert_int_equal(check_send(RSEC_WR_ID(WR_SEND, 4), IBV_WC_SUCCESS, IBV_WC_SEND, &p), RSEC_E_VERBS);
	assert_int_equal(check_send(RSEC_WR_ID(WR_SEND, 0), IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, &p), RSEC_E_VERBS);
	/* A failed completion's opcode means nothing. */
	assert_int_equal(check_send(RSEC_WR_ID(WR_SEND, 0), IBV_WC_WR_FLUSH_ERR, (enum ibv_wc_opcode)77, &p), 0);
	assert_int_equal(check_send(RSEC_WR_ID(WR_BIND, 63), IBV_WC_SUCCESS, IBV_WC_BIND_MW, &p), 0);
	assert_int_equal(check_send(RSEC_WR_ID(WR_BIND, 64), IBV_WC_SUCCESS, IBV_WC_BIND_MW, &p), RSEC_E_VERBS);
	assert_int_equal(check_send(RSEC_WR_ID(WR_RECV, 0), IBV_WC_SUCCESS, IBV_WC_RECV, &p), RSEC_E_VERBS);
	/* No one-sided operation outstanding: its completion is not ours. */
	assert_int_equal(check_send(RSEC_WR_ID(WR_RDMA, 0), IBV_WC_SUCCESS, IBV_WC_RDMA_READ, &p), RSEC_E_VERBS);
	p.ops_depth = 2;
	assert_int_equal(check_send(RSEC_WR_ID(WR_RDMA, 0), IBV_WC_SUCCESS, IBV_WC_RDMA_READ, &p), 0);
	assert_int_equal(check_send(RSEC_WR_ID(WR_RDMA, 1), IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, &p), 0);
	assert_int_equal(check_send(RSEC_WR_ID(WR_RDMA, 2), IBV_WC_SUCCESS, IBV_WC_RDMA_READ, &p), RSEC_E_VERBS);
	assert_int_equal(check_send(RSEC_WR_ID(WR_RDMA, 1), IBV_WC_SUCCESS, IBV_WC_SEND, &p), RSEC_E_VERBS);
	/* More send completions than sends in flight: the device misreports. */
	p.sends_inflight = 0;
	assert_int_equal(check_send(RSEC_WR_ID(WR_SEND, 0), IBV_WC_SUCCESS, IBV_WC_SEND, &p), RSEC_E_VERBS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(plain_receives_pass),
		cmocka_unit_test(write_with_immediate_is_refused),
		cmocka_unit_test(oversized_and_odd_receives_are_refused),
		cmocka_unit_test(remote_invalidation_is_refused),
		cmocka_unit_test(receives_we_did_not_post_are_refused),
		cmocka_unit_test(send_completions_match_what_we_posted),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
