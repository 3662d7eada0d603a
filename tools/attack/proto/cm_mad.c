/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "cm_mad.h"

/*
 * Offsets from the start of the MAD (IBA 13.4.2 common header, then the
 * message of IBA 12.6): every message opens with the sender's and the
 * receiver's communication IDs.
 */
enum {
	OFF_BASE_VERSION = 0,
	OFF_CLASS = 1,
	OFF_CLASS_VERSION = 2,
	OFF_METHOD = 3,
	OFF_TID = 8,
	OFF_ATTR_ID = 16,
	OFF_LOCAL_COMM_ID = 24,
	OFF_REMOTE_COMM_ID = 28,
	OFF_REQ_LOCAL_QPN = 56,   /* 24 bits, then Responder Resources */
	OFF_REQ_START_PSN = 68,   /* 24 bits, then timeout and retry count */
	OFF_REP_LOCAL_QPN = 36,   /* 24 bits, then reserved */
	OFF_REP_START_PSN = 44,
	OFF_DREQ_REMOTE_QPN = 32, /* 24 bits, then reserved */
};

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

const char *cm_attr_name(uint16_t attr_id)
{
	switch (attr_id) {
	case CM_ATTR_REQ: return "REQ";
	case CM_ATTR_MRA: return "MRA";
	case CM_ATTR_REJ: return "REJ";
	case CM_ATTR_REP: return "REP";
	case CM_ATTR_RTU: return "RTU";
	case CM_ATTR_DREQ: return "DREQ";
	case CM_ATTR_DREP: return "DREP";
	default: return NULL;
	}
}

int cm_mad_parse(const uint8_t *mad, size_t len, struct cm_msg *m)
{
	uint16_t attr;

	RSEC_ENSURE(mad != NULL && m != NULL, RSEC_E_PROTO);
	/* rxe may pad the datagram; the MAD itself is always 256 bytes. */
	RSEC_ENSURE(len >= CM_MAD_LEN, RSEC_E_PROTO);
	RSEC_ENSURE(mad[OFF_BASE_VERSION] == CM_BASE_VERSION && mad[OFF_CLASS] == CM_MGMT_CLASS &&
		    mad[OFF_CLASS_VERSION] == CM_CLASS_VERSION && mad[OFF_METHOD] == CM_METHOD_SEND,
		    RSEC_E_PROTO);
	attr = (uint16_t)(mad[OFF_ATTR_ID] << 8 | mad[OFF_ATTR_ID + 1]);
	RSEC_ENSURE(cm_attr_name(attr) != NULL, RSEC_E_PROTO);
	memset(m, 0, sizeof(*m));
	m->attr_id = attr;
	m->tid = (uint64_t)get32(mad + OFF_TID) << 32 | get32(mad + OFF_TID + 4);
	m->local_comm_id = get32(mad + OFF_LOCAL_COMM_ID);
	m->remote_comm_id = get32(mad + OFF_REMOTE_COMM_ID);
	switch (attr) {
	case CM_ATTR_REQ:
		m->qpn = get32(mad + OFF_REQ_LOCAL_QPN) >> 8;
		m->start_psn = get32(mad + OFF_REQ_START_PSN) >> 8;
		break;
	case CM_ATTR_REP:
		RSEC_ENSURE((mad[OFF_REP_LOCAL_QPN + 3]) == 0, RSEC_E_PROTO);
		m->qpn = get32(mad + OFF_REP_LOCAL_QPN) >> 8;
		m->start_psn = get32(mad + OFF_REP_START_PSN) >> 8;
		break;
	case CM_ATTR_DREQ:
		RSEC_ENSURE((mad[OFF_DREQ_REMOTE_QPN + 3]) == 0, RSEC_E_PROTO);
		m->qpn = get32(mad + OFF_DREQ_REMOTE_QPN) >> 8;
		break;
	default:
		break;
	}
	return 0;
}

int cm_dreq_build(const struct cm_dreq *d, uint8_t out[static CM_MAD_LEN])
{
	RSEC_ENSURE_REF(d);
	RSEC_ENSURE(d->remote_qpn <= 0xffffff, RSEC_E_INVAL);
	memset(out, 0, CM_MAD_LEN);
	out[OFF_BASE_VERSION] = CM_BASE_VERSION;
	out[OFF_CLASS] = CM_MGMT_CLASS;
	out[OFF_CLASS_VERSION] = CM_CLASS_VERSION;
	out[OFF_METHOD] = CM_METHOD_SEND;
	put32(out + OFF_TID, (uint32_t)(d->tid >> 32));
	put32(out + OFF_TID + 4, (uint32_t)d->tid);
	out[OFF_ATTR_ID] = CM_ATTR_DREQ >> 8;
	out[OFF_ATTR_ID + 1] = CM_ATTR_DREQ & 0xff;
	put32(out + OFF_LOCAL_COMM_ID, d->local_comm_id);
	put32(out + OFF_REMOTE_COMM_ID, d->remote_comm_id);
	put32(out + OFF_DREQ_REMOTE_QPN, d->remote_qpn << 8);
	return 0;
}

static struct cm_conn *find_by_active(struct cm_learn *l, uint32_t active_ip, uint32_t active_comm_id)
{
	for (size_t i = 0; i < l->n; i++) {
		struct cm_conn *c = &l->conns[i];
		if (c->active_ip == active_ip && c->active_comm_id == active_comm_id)
			return c;
	}
	return NULL;
}

void cm_learn_msg(struct cm_learn *l, uint32_t src, uint32_t dst, const struct cm_msg *m,
		  const struct cm_conn **done)
{
	struct cm_conn *c;

	if (done)
		*done = NULL;
	if (!l || !m)
		return;
	if (m->attr_id == CM_ATTR_REQ) {
		if (find_by_active(l, src, m->local_comm_id))
			return; /* a retransmitted REQ */
		if (l->n < CM_LEARN_MAX) {
			c = &l->conns[l->n++];
		} else {
			c = &l->conns[l->next];
			l->next = (l->next + 1) % CM_LEARN_MAX;
		}
		*c = (struct cm_conn){ .active_ip = src, .passive_ip = dst, .active_comm_id = m->local_comm_id,
				       .active_qpn = m->qpn, .req_tid = m->tid };
		return;
	}
	if (m->attr_id != CM_ATTR_REP)
		return;
	/* The REP goes back to the REQ's sender and names its ID as remote. */
	c = find_by_active(l, dst, m->remote_comm_id);
	if (!c || c->passive_ip != src)
		return;
	c->passive_comm_id = m->local_comm_id;
	c->passive_qpn = m->qpn;
	c->have_rep = true;
	if (done)
		*done = c;
}

int cm_conn_dreq(const struct cm_conn *c, uint32_t victim_ip, struct cm_dreq *d, uint32_t *peer_ip)
{
	RSEC_ENSURE_REF(c);
	RSEC_ENSURE_REF(d);
	RSEC_ENSURE_REF(peer_ip);
	RSEC_ENSURE(c->have_rep, RSEC_E_INVAL);
	if (victim_ip == c->passive_ip) {
		*d = (struct cm_dreq){ .tid = c->req_tid, .local_comm_id = c->active_comm_id,
				       .remote_comm_id = c->passive_comm_id, .remote_qpn = c->passive_qpn };
		*peer_ip = c->active_ip;
		return 0;
	}
	RSEC_ENSURE(victim_ip == c->active_ip, RSEC_E_INVAL);
	*d = (struct cm_dreq){ .local_comm_id = c->passive_comm_id, .remote_comm_id = c->active_comm_id,
			       .remote_qpn = c->active_qpn };
	*peer_ip = c->passive_ip;
	return 0;
}
