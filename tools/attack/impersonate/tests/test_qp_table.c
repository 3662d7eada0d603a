/* SPDX-License-Identifier: MIT */
/*
 * The RDMA netlink QP-table parser on hand-built dumps shaped like the
 * kernel's (nldev RES_QP_GET): rows are decoded and filtered, the dump ends at
 * NLMSG_DONE, errors are passed on, and truncated or inconsistent lengths are
 * refused instead of read past.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>

#include "impersonate/qp_table.h"

#define SEQ 7u
#define QP_GET RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_RES_QP_GET)

struct buf {
	uint8_t b[4096] __attribute__((aligned(4)));
	size_t len;
};

static size_t put_attr(struct buf *m, uint16_t type, const void *data, size_t len)
{
	struct nlattr a = { .nla_len = (uint16_t)(NLA_HDRLEN + len), .nla_type = type };
	size_t at = m->len;

	memcpy(m->b + m->len, &a, sizeof(a));
	if (len)
		memcpy(m->b + m->len + NLA_HDRLEN, data, len);
	m->len += NLA_ALIGN(a.nla_len);
	return at;
}

static void put_u32(struct buf *m, uint16_t type, uint32_t v)
{
	put_attr(m, type, &v, sizeof(v));
}

static void put_u8(struct buf *m, uint16_t type, uint8_t v)
{
	put_attr(m, type, &v, 1);
}

/* Close a nest opened at `at`. */
static void end_nest(struct buf *m, size_t at)
{
	struct nlattr a;
	memcpy(&a, m->b + at, sizeof(a));
	a.nla_len = (uint16_t)(m->len - at);
	memcpy(m->b + at, &a, sizeof(a));
}

static size_t begin_msg(struct buf *m, uint16_t type)
{
	struct nlmsghdr nh = { .nlmsg_type = type, .nlmsg_flags = NLM_F_MULTI, .nlmsg_seq = SEQ };
	size_t at = m->len;

	memcpy(m->b + m->len, &nh, sizeof(nh));
	m->len += NLMSG_HDRLEN;
	return at;
}

static void end_msg(struct buf *m, size_t at)
{
	struct nlmsghdr nh;
	memcpy(&nh, m->b + at, sizeof(nh));
	nh.nlmsg_len = (uint32_t)(m->len - at);
	memcpy(m->b + at, &nh, sizeof(nh));
}

static void put_qp(struct buf *m, uint32_t lqpn, uint32_t rqpn, uint32_t sq_psn, uint8_t state)
{
	size_t e = put_attr(m, RDMA_NLDEV_ATTR_RES_QP_ENTRY | NLA_F_NESTED, NULL, 0);

	put_u32(m, RDMA_NLDEV_ATTR_RES_LQPN, lqpn);
	put_u32(m, RDMA_NLDEV_ATTR_RES_RQPN, rqpn);
	put_u32(m, RDMA_NLDEV_ATTR_RES_RQ_PSN, 0x222222);
	put_u32(m, RDMA_NLDEV_ATTR_RES_SQ_PSN, sq_psn);
	put_u8(m, RDMA_NLDEV_ATTR_RES_TYPE, QP_TABLE_TYPE_RC);
	put_u8(m, RDMA_NLDEV_ATTR_RES_STATE, state);
	put_attr(m, RDMA_NLDEV_ATTR_RES_KERN_NAME, "ibv_rc_pingpong", 16);  /* skipped */
	end_nest(m, e);
}

/* A dump of rxe2: the peer QP 0x11 (-> 0x11, RTS), an attacker QP 0x12 (-> 0x11, ERR), GSI QP 1. */
static void build_dump(struct buf *m, bool done)
{
	size_t msg, table;

	memset(m, 0, sizeof(*m));
	msg = begin_msg(m, QP_GET);
	put_u32(m, RDMA_NLDEV_ATTR_DEV_INDEX, 1);
	put_attr(m, RDMA_NLDEV_ATTR_DEV_NAME, "rxe2", 5);
	table = put_attr(m, RDMA_NLDEV_ATTR_RES_QP | NLA_F_NESTED, NULL, 0);
	put_qp(m, 0x11, 0x11, 0xaf121a, 3);
	put_qp(m, 0x12, 0x11, 0x000100, QP_TABLE_STATE_ERR);
	{
		size_t e = put_attr(m, RDMA_NLDEV_ATTR_RES_QP_ENTRY | NLA_F_NESTED, NULL, 0);
		put_u32(m, RDMA_NLDEV_ATTR_RES_LQPN, 1);
		put_u8(m, RDMA_NLDEV_ATTR_RES_TYPE, 1);
		end_nest(m, e);
	}
	end_nest(m, table);
	end_msg(m, msg);
	if (done) {
		uint32_t zero = 0;
		msg = begin_msg(m, NLMSG_DONE);
		memcpy(m->b + m->len, &zero, 4);
		m->len += 4;
		end_msg(m, msg);
	}
}

static bool only_rc(const struct qp_row *r, void *arg)
{
	(void)arg;
	return r->has_type && r->type == QP_TABLE_TYPE_RC;
}

/*
 * The built dump (with NLMSG_DONE or not: parse returns 1 or 0) parsed into
 * rows[cap]: want_n rows kept of want_total that passed the filter, QP 0x11 first.
 */
static void parse_built(bool done, qp_table_filter filter, struct qp_row *rows, size_t cap, size_t want_n,
			size_t want_total)
{
	struct buf m;
	size_t n = 0, total = 0;

	build_dump(&m, done);
	assert_int_equal(qp_table_parse(m.b, m.len, SEQ, filter, NULL, rows, cap, &n, &total), done ? 1 : 0);
	assert_int_equal(n, want_n);
	assert_int_equal(total, want_total);
	assert_int_equal(rows[0].lqpn, 0x11);
}

static void test_rows_and_done(void **state)
{
	struct qp_row rows[8];

	(void)state;
	parse_built(true, NULL, rows, 8, 3, 3);
	assert_true(rows[0].has_rqpn && rows[0].rqpn == 0x11);
	assert_true(rows[0].has_sq_psn && rows[0].sq_psn == 0xaf121a);
	assert_true(rows[0].has_rq_psn && rows[0].rq_psn == 0x222222);
	assert_true(rows[0].has_state && rows[0].state == 3);
	assert_int_equal(rows[1].state, QP_TABLE_STATE_ERR);
	assert_int_equal(rows[2].lqpn, 1);
	assert_false(rows[2].has_rqpn);
	assert_false(rows[2].has_state);
}

static void test_filter_and_cap(void **state)
{
	struct qp_row rows[1];

	(void)state;
	/* No NLMSG_DONE yet: more datagrams follow. One row (the cap) of the two RC rows that passed. */
	parse_built(false, only_rc, rows, 1, 1, 2);
}

static void test_error_message(void **state)
{
	struct buf m = { .len = 0 };
	struct nlmsgerr e = { .error = -1 * 22 };
	size_t msg, n = 0, total = 0;

	(void)state;
	msg = begin_msg(&m, NLMSG_ERROR);
	memcpy(m.b + m.len, &e, sizeof(e));
	m.len += sizeof(e);
	end_msg(&m, msg);
	assert_int_equal(qp_table_parse(m.b, m.len, SEQ, NULL, NULL, NULL, 0, &n, &total), -22);
	/* Cut short: the error body is missing. */
	assert_int_equal(qp_table_parse(m.b, NLMSG_HDRLEN + 4, SEQ, NULL, NULL, NULL, 0, &n, &total), -1);
}

static void test_malformed(void **state)
{
	struct buf m;
	struct qp_row rows[8];
	size_t n, total;
	struct nlmsghdr nh;
	struct nlattr a;

	(void)state;
	build_dump(&m, true);
	/* Every truncation of the datagram is refused or parsed within bounds. */
	for (size_t cut = 0; cut < m.len; cut++) {
		n = total = 0;
		int rc = qp_table_parse(m.b, cut, SEQ, NULL, NULL, rows, 8, &n, &total);
		assert_true(rc == -1 || rc == 0);
	}
	/* A message claiming more bytes than the datagram holds. */
	memcpy(&nh, m.b, sizeof(nh));
	nh.nlmsg_len += 4096;
	memcpy(m.b, &nh, sizeof(nh));
	assert_int_equal(qp_table_parse(m.b, m.len, SEQ, NULL, NULL, rows, 8, &n, &total), -1);

	/* An attribute longer than its message. */
	build_dump(&m, true);
	memcpy(&a, m.b + NLMSG_HDRLEN, sizeof(a));
	a.nla_len = 0xfff0;
	memcpy(m.b + NLMSG_HDRLEN, &a, sizeof(a));
	assert_int_equal(qp_table_parse(m.b, m.len, SEQ, NULL, NULL, rows, 8, &n, &total), -1);

	/* An attribute shorter than its header. */
	build_dump(&m, true);
	a.nla_len = 2;
	a.nla_type = RDMA_NLDEV_ATTR_DEV_INDEX;
	memcpy(m.b + NLMSG_HDRLEN, &a, sizeof(a));
	assert_int_equal(qp_table_parse(m.b, m.len, SEQ, NULL, NULL, rows, 8, &n, &total), -1);

	/* A u32 attribute with one byte of payload. */
	memset(&m, 0, sizeof(m));
	size_t msg = begin_msg(&m, QP_GET);
	size_t table = put_attr(&m, RDMA_NLDEV_ATTR_RES_QP, NULL, 0);
	size_t e = put_attr(&m, RDMA_NLDEV_ATTR_RES_QP_ENTRY, NULL, 0);
	put_u8(&m, RDMA_NLDEV_ATTR_RES_LQPN, 1);
	end_nest(&m, e);
	end_nest(&m, table);
	end_msg(&m, msg);
	n = total = 0;
	assert_int_equal(qp_table_parse(m.b, m.len, SEQ, NULL, NULL, rows, 8, &n, &total), -1);
	assert_int_equal(n, 0);

	/* A reply to someone else's request. */
	build_dump(&m, true);
	assert_int_equal(qp_table_parse(m.b, m.len, SEQ + 1, NULL, NULL, rows, 8, &n, &total), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows_and_done),
		cmocka_unit_test(test_filter_and_cap),
		cmocka_unit_test(test_error_message),
		cmocka_unit_test(test_malformed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
