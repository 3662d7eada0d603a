/* SPDX-License-Identifier: MIT */
/*
 * The kernel's table of QPs on one RDMA device, read through RDMA netlink
 * (what `rdma res show qp` prints). Any local user may read it, including
 * other processes' QPs with their peer QPN, PSNs and state; impersonate uses
 * it to see the legitimate peer's QP fail.
 */
#ifndef RSEC_QP_TABLE_H
#define RSEC_QP_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct qp_row {
	uint32_t lqpn;
	uint32_t rqpn, rq_psn, sq_psn;   /* valid if the matching has_ flag */
	uint8_t type, state;             /* IB_QPT_*, IB_QPS_* (6: error) */
	bool has_rqpn, has_rq_psn, has_sq_psn, has_type, has_state;
};

#define QP_TABLE_STATE_ERR 6
#define QP_TABLE_TYPE_RC 2

/* Called for each row; return false to skip it (it is then not stored). */
typedef bool (*qp_table_filter)(const struct qp_row *row, void *arg);

/*
 * Parse one datagram of an RDMA netlink QP dump (buf, len bytes). Rows that
 * pass filter (NULL: all) go to out[*n] while *n < cap; *total counts every
 * row that passed, stored or not. Returns 1 after NLMSG_DONE, 0 if more
 * datagrams follow, -1 for a malformed datagram or -errno for NLMSG_ERROR.
 */
int qp_table_parse(const void *buf, size_t len, uint32_t seq, qp_table_filter filter, void *arg,
		   struct qp_row *out, size_t cap, size_t *n, size_t *total);

/*
 * Dump the QPs of device dev_index (ibv_get_device_index). Returns 0, or
 * -errno / -1 as qp_table_parse; *n and *total as there.
 */
int qp_table_dump(uint32_t dev_index, qp_table_filter filter, void *arg, struct qp_row *out, size_t cap,
		  size_t *n, size_t *total);

#endif /* RSEC_QP_TABLE_H */
