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
};

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
