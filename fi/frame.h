/* SPDX-License-Identifier: MIT */
/*
 * The provider's own framing inside rdmasec's sealed messages (fi_rdmasec(7),
 * "Wire"). Every rdmasec message of an endpoint starts with this 16-byte
 * header: the CM exchange (request, accept, reject, each with the
 * application's private data), data messages carrying their optional
 * remote CQ data, and the orderly close (BYE, BYE_ACK: no message sent
 * before fi_shutdown is lost to the teardown). rdmasec authenticates and orders the bytes; this
 * codec only bounds them.
 */
#ifndef RSFI_FRAME_H
#define RSFI_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "result.h"

#define RSFI_FRAME_VERSION 1u
#define RSFI_FRAME_HDR 16u
#define RSFI_CM_DATA_MAX 256u /* fi_info.ep_attr.cm_data_size (as rdma_cm's private data) */

enum rsfi_frame_type {
	RSFI_FRAME_CONNREQ = 1, /* client -> server, first message: private data of fi_connect */
	RSFI_FRAME_ACCEPT = 2,  /* server -> client: private data of fi_accept */
	RSFI_FRAME_REJECT = 3,  /* server -> client: private data of fi_reject, then close */
	RSFI_FRAME_DATA = 4,    /* application payload */
	RSFI_FRAME_BYE = 5,     /* fi_shutdown: nothing follows from the sender */
	RSFI_FRAME_BYE_ACK = 6, /* the BYE arrived, so did everything before it (in order) */
	RSFI_FRAME_RMA_REQ = 7, /* fi_read/fi_write: grant me [addr, addr+len) of your MR key (body: rsfi_rma_msg) */
	RSFI_FRAME_RMA_NAK = 8, /* that request is refused (tag, FI errno) */
	RSFI_FRAME_RMA_DONE = 9, /* the transfer through that grant ended: revoke it (tag) */
};

/* The body of the RMA frames, big-endian: tag, then key, addr, len, kind (REQ) or code (NAK). */
#define RSFI_RMA_REQ_LEN 33u
#define RSFI_RMA_NAK_LEN 12u
#define RSFI_RMA_DONE_LEN 8u
enum rsfi_rma_kind {
	RSFI_RMA_READ = 1,
	RSFI_RMA_WRITE = 2,
};
struct rsfi_rma_msg {
	uint64_t tag;
	uint64_t key, addr, len; /* REQ */
	enum rsfi_rma_kind kind; /* REQ */
	uint32_t code;           /* NAK: a positive FI errno, 1..65535 */
};
/**
 * rsfi_rma_write - the body of an RMA frame of type (REQ, NAK, DONE) for m at
 * out (room for RSFI_RMA_REQ_LEN): its length, or RSEC_E_RANGE (m breaks a
 * limit: kind, len 0, addr + len wrapping, code).
 */
RSEC_MUST_CHECK int rsfi_rma_write(enum rsfi_frame_type type, const struct rsfi_rma_msg *m,
				   uint8_t out[static RSFI_RMA_REQ_LEN]);
/** rsfi_rma_read - parse the body of an RMA frame of type: 0, or RSEC_E_PROTO. */
RSEC_MUST_CHECK int rsfi_rma_read(enum rsfi_frame_type type, const uint8_t *body, size_t len,
				  struct rsfi_rma_msg *m);

enum rsfi_frame_flags {
	RSFI_FRAME_HAS_DATA = 1u << 0, /* cq_data is the sender's remote CQ data (fi_senddata) */
};

struct rsfi_frame {
	enum rsfi_frame_type type;
	unsigned flags;    /* enum rsfi_frame_flags */
	uint64_t cq_data;  /* 0 unless RSFI_FRAME_HAS_DATA */
	size_t body_len;   /* bytes after the header */
};

/** rsfi_frame_write - the header for f at out[0..RSFI_FRAME_HDR); 0 or RSEC_E_RANGE (f breaks a limit). */
RSEC_MUST_CHECK int rsfi_frame_write(const struct rsfi_frame *f, uint8_t out[static RSFI_FRAME_HDR]);
/**
 * rsfi_frame_read - parse the message msg[0..len): 0 with *f filled (the body
 * follows the header), or RSEC_E_PROTO (short, unknown version or type,
 * unknown flag, nonzero reserved bytes, CM data too long, CQ data on a
 * non-data frame, a body on BYE or BYE_ACK).
 */
RSEC_MUST_CHECK int rsfi_frame_read(const uint8_t *msg, size_t len, struct rsfi_frame *f);

#endif /* RSFI_FRAME_H */
