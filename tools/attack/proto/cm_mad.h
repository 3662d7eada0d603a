/* SPDX-License-Identifier: MIT */
/*
 * IB Communication Manager MADs (IBA vol. 1 ch. 12 and 13.4), as rdma_cm
 * sends them over RoCEv2: 256-byte MADs in UD SEND Only packets to QP1.
 * Decodes the messages that set up and tear down a connection (REQ, REP,
 * RTU, DREQ, DREP), learns a connection's communication IDs and QPNs from
 * its REQ and REP, and builds the DREQ that ends it. Pure logic, no I/O.
 */
#ifndef RSEC_CM_MAD_H
#define RSEC_CM_MAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "result.h"

enum {
	CM_MAD_LEN = 256,           /* every CM MAD, padded with zeros */
	CM_MAD_HDR_LEN = 24,        /* the common MAD header */
	CM_BASE_VERSION = 1,
	CM_MGMT_CLASS = 0x07,       /* Communication Management */
	CM_CLASS_VERSION = 2,
	CM_METHOD_SEND = 0x03,      /* every CM message is a Send */
	CM_ATTR_REQ = 0x0010,
	CM_ATTR_MRA = 0x0011,
	CM_ATTR_REJ = 0x0012,
	CM_ATTR_REP = 0x0013,
	CM_ATTR_RTU = 0x0014,
	CM_ATTR_DREQ = 0x0015,
	CM_ATTR_DREP = 0x0016,
	CM_DREQ_PRIVATE_LEN = 220,  /* DREQ private data, from offset 36 */
	CM_LEARN_MAX = 32,          /* connections a learner remembers */
};

/* What one CM MAD says; IDs and numbers in host order. */
struct cm_msg {
	uint16_t attr_id;
	uint64_t tid;              /* transaction ID, as on the wire (big-endian value) */
	uint32_t local_comm_id;    /* the sender's */
	uint32_t remote_comm_id;   /* the receiver's (0 in a REQ) */
	/*
	 * REQ and REP: the sender's own QPN; DREQ: the receiver's QPN (the one
	 * it must match). 0 for the others.
	 */
	uint32_t qpn;
	uint32_t start_psn;        /* REQ and REP: Starting PSN; on rxe the PSN the sender's own QP expects */
};

/* The attribute's name ("REQ", "DREQ", ...) or NULL for one not listed above. */
const char *cm_attr_name(uint16_t attr_id);

/*
 * cm_mad_parse - decode a CM MAD (the payload of a UD SEND to QP1), len
 * bytes. Returns 0, or RSEC_E_PROTO if it is not a CM Send MAD of base
 * version 1, class version 2, at least CM_MAD_LEN bytes, with one of the
 * attributes above, or its QPN field's reserved bits are set.
 */
RSEC_MUST_CHECK int cm_mad_parse(const uint8_t *mad, size_t len, struct cm_msg *m);

/* A forged Disconnect Request, as the receiver will match it. */
struct cm_dreq {
	uint64_t tid;
	uint32_t local_comm_id;    /* the (spoofed) sender's communication ID */
	uint32_t remote_comm_id;   /* the receiver's communication ID */
	uint32_t remote_qpn;       /* the receiver's QPN, 24 bits */
};

/* cm_dreq_build - the 256-byte DREQ MAD. Returns 0 or RSEC_E_INVAL (QPN > 24 bits). */
RSEC_MUST_CHECK int cm_dreq_build(const struct cm_dreq *d, uint8_t out[static CM_MAD_LEN]);

/* One connection seen being set up: the REQ's sender is the active side. */
struct cm_conn {
	uint32_t active_ip, passive_ip;        /* IPv4, host order */
	uint32_t active_comm_id, passive_comm_id;
	uint32_t active_qpn, passive_qpn;
	uint64_t req_tid;
	bool have_rep;
};

struct cm_learn {
	struct cm_conn conns[CM_LEARN_MAX];
	size_t n, next;                        /* entries used; slot to reuse when full */
};

/*
 * cm_learn_msg - feed one CM message sent from src to dst (IPv4, host
 * order). A REQ starts a connection (a repeated REQ is ignored; when full,
 * the oldest one is forgotten); the REP that answers it completes it, and
 * *done (if not NULL) then points at it, else is set to NULL. Other
 * messages are ignored.
 */
void cm_learn_msg(struct cm_learn *l, uint32_t src, uint32_t dst, const struct cm_msg *m,
		  const struct cm_conn **done);

/*
 * cm_conn_dreq - the DREQ that makes the side of c at victim_ip believe its
 * peer disconnected: the peer's ID as local, the victim's as remote, the
 * victim's QPN. *peer_ip gets the address to spoof. The transaction ID is
 * the REQ's when the victim is the passive side (what the active side sends
 * itself), else 0 for the caller to choose. Returns 0, or RSEC_E_INVAL if
 * victim_ip is neither side of c or c has no REP yet.
 */
RSEC_MUST_CHECK int cm_conn_dreq(const struct cm_conn *c, uint32_t victim_ip, struct cm_dreq *d,
				 uint32_t *peer_ip);

#endif /* RSEC_CM_MAD_H */
