/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "qp_table.h"

#define QP_DUMP_TYPE RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_RES_QP_GET)

/* One attribute at p with `left` bytes remaining; NULL if it does not fit. */
static const struct nlattr *attr_at(const uint8_t *p, size_t left)
{
	const struct nlattr *a = (const struct nlattr *)(const void *)p;

	if (left < NLA_HDRLEN || a->nla_len < NLA_HDRLEN || a->nla_len > left)
		return NULL;
	return a;
}

static size_t attr_step(const struct nlattr *a, size_t left)
{
	size_t step = NLA_ALIGN(a->nla_len);
	return step < left ? step : left;
}

static bool attr_u32(const struct nlattr *a, uint32_t *v)
{
	if (a->nla_len < NLA_HDRLEN + sizeof(*v))
		return false;
	memcpy(v, (const uint8_t *)a + NLA_HDRLEN, sizeof(*v));
	return true;
}

static bool attr_u8(const struct nlattr *a, uint8_t *v)
{
	if (a->nla_len < NLA_HDRLEN + 1)
		return false;
	*v = *((const uint8_t *)a + NLA_HDRLEN);
	return true;
}

/* One RES_QP_ENTRY's attributes into row. */
static bool parse_entry(const uint8_t *p, size_t left, struct qp_row *row)
{
	bool has_lqpn = false;

	memset(row, 0, sizeof(*row));
	while (left > 0) {
		const struct nlattr *a = attr_at(p, left);
		bool ok = true;

		if (!a)
			return false;
		switch (a->nla_type & NLA_TYPE_MASK) {
		case RDMA_NLDEV_ATTR_RES_LQPN: ok = has_lqpn = attr_u32(a, &row->lqpn); break;
		case RDMA_NLDEV_ATTR_RES_RQPN: ok = row->has_rqpn = attr_u32(a, &row->rqpn); break;
		case RDMA_NLDEV_ATTR_RES_RQ_PSN: ok = row->has_rq_psn = attr_u32(a, &row->rq_psn); break;
		case RDMA_NLDEV_ATTR_RES_SQ_PSN: ok = row->has_sq_psn = attr_u32(a, &row->sq_psn); break;
		case RDMA_NLDEV_ATTR_RES_TYPE: ok = row->has_type = attr_u8(a, &row->type); break;
		case RDMA_NLDEV_ATTR_RES_STATE: ok = row->has_state = attr_u8(a, &row->state); break;
		default: break;
		}
		if (!ok)
			return false;
		size_t step = attr_step(a, left);
		left -= step;
		p += step;
	}
	return has_lqpn;
}

struct sink {
	qp_table_filter filter;
	void *arg;
	struct qp_row *out;
	size_t cap, *n, *total;
};

/* The RES_QP table: a list of RES_QP_ENTRY nests. */
static bool parse_table(const uint8_t *p, size_t left, struct sink *s)
{
	while (left > 0) {
		const struct nlattr *a = attr_at(p, left);
		struct qp_row row;

		if (!a)
			return false;
		if ((a->nla_type & NLA_TYPE_MASK) == RDMA_NLDEV_ATTR_RES_QP_ENTRY) {
			if (!parse_entry(p + NLA_HDRLEN, a->nla_len - NLA_HDRLEN, &row))
				return false;
			if (!s->filter || s->filter(&row, s->arg)) {
				if (*s->n < s->cap)
					s->out[(*s->n)++] = row;
				(*s->total)++;
			}
		}
		size_t step = attr_step(a, left);
		left -= step;
		p += step;
	}
	return true;
}

int qp_table_parse(const void *buf, size_t len, uint32_t seq, qp_table_filter filter, void *arg,
		   struct qp_row *out, size_t cap, size_t *n, size_t *total)
{
	struct sink s = { filter, arg, out, cap, n, total };
	const uint8_t *p = buf;

	while (len > 0) {
		const struct nlmsghdr *nh = (const struct nlmsghdr *)(const void *)p;
		size_t step;

		if (len < NLMSG_HDRLEN || nh->nlmsg_len < NLMSG_HDRLEN || nh->nlmsg_len > len)
			return -1;
		if (nh->nlmsg_seq != seq)
			return -1;
		if (nh->nlmsg_type == NLMSG_DONE)
			return 1;
		if (nh->nlmsg_type == NLMSG_ERROR) {
			struct nlmsgerr e;
			if (nh->nlmsg_len < NLMSG_LENGTH(sizeof(e)))
				return -1;
			memcpy(&e, p + NLMSG_HDRLEN, sizeof(e));
			return e.error < 0 ? e.error : -1;
		}
		if (nh->nlmsg_type == QP_DUMP_TYPE) {
			const uint8_t *a = p + NLMSG_HDRLEN;
			size_t left = nh->nlmsg_len - NLMSG_HDRLEN;

			while (left > 0) {
				const struct nlattr *at = attr_at(a, left);
				if (!at)
					return -1;
				if ((at->nla_type & NLA_TYPE_MASK) == RDMA_NLDEV_ATTR_RES_QP &&
				    !parse_table(a + NLA_HDRLEN, at->nla_len - NLA_HDRLEN, &s))
					return -1;
				size_t st = attr_step(at, left);
				left -= st;
				a += st;
			}
		}
		step = NLMSG_ALIGN(nh->nlmsg_len);
		if (step >= len)
			break;
		len -= step;
		p += step;
	}
	return 0;
}

int qp_table_dump(uint32_t dev_index, qp_table_filter filter, void *arg, struct qp_row *out, size_t cap,
		  size_t *n, size_t *total)
{
	static uint32_t seq;
	static uint8_t buf[65536] __attribute__((aligned(NLMSG_ALIGNTO)));
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	struct {
		struct nlmsghdr nh;
		struct nlattr a;
		uint32_t index;
	} req;
	int fd, rc = 0;

	*n = *total = 0;
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA);
	if (fd < 0)
		return -errno;
	memset(&req, 0, sizeof(req));
	req.nh.nlmsg_len = sizeof(req);
	req.nh.nlmsg_type = QP_DUMP_TYPE;
	req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	req.nh.nlmsg_seq = ++seq;
	req.a.nla_len = NLA_HDRLEN + sizeof(req.index);
	req.a.nla_type = RDMA_NLDEV_ATTR_DEV_INDEX;
	req.index = dev_index;
	if (sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&kernel, sizeof(kernel)) != (ssize_t)sizeof(req)) {
		rc = -errno;
		goto out;
	}
	while (rc == 0) {
		ssize_t got = recv(fd, buf, sizeof(buf), MSG_TRUNC);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		if (got == 0 || (size_t)got > sizeof(buf)) {
			rc = -EMSGSIZE;
			break;
		}
		rc = qp_table_parse(buf, (size_t)got, seq, filter, arg, out, cap, n, total);
	}
	if (rc == 1)
		rc = 0;
out:
	close(fd);
	return rc;
}
