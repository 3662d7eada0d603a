/* SPDX-License-Identifier: MIT */
/*
 * librdmasec: secure-by-default RDMA connections over IB verbs.
 *
 * Conventions: functions that can fail return 0 on success or a negative
 * RSEC_E* code (rsec_strerror() names it); functions returning a pointer
 * return NULL and set errno. Handles are opaque.
 */
#ifndef RDMASEC_H
#define RDMASEC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum rsec_error {
	RSEC_OK = 0,
	RSEC_E_INVAL = -1,      /* bad argument */
	RSEC_E_NOMEM = -2,      /* out of memory */
	RSEC_E_IO = -3,         /* socket or file error */
	RSEC_E_TLS = -4,        /* TLS failure */
	RSEC_E_AUTH = -5,       /* peer failed authentication */
	RSEC_E_PROTO = -6,      /* malformed or unexpected control message */
	RSEC_E_VERBS = -7,      /* a verbs call failed */
	RSEC_E_MAC = -8,        /* message failed authentication (AEAD/MAC) */
	RSEC_E_SEQ = -9,        /* message out of sequence (replay, loss, reorder) */
	RSEC_E_CLOSED = -10,    /* connection closed */
	RSEC_E_TIMEOUT = -11,   /* deadline passed */
	RSEC_E_LIMIT = -12,     /* a configured limit was reached */
	RSEC_E_RANGE = -13,     /* value or length out of range */
	RSEC_E_NODEV = -14,     /* no usable RDMA device */
	RSEC_E_AGAIN = -15,     /* would block; retry later */
	RSEC_E_QP = -16,        /* the queue pair entered the error state */
	RSEC_E_CRYPTO = -17,    /* a cryptographic primitive failed */
	RSEC_E_GRANT = -18,     /* unknown, expired or revoked grant */
	RSEC_E_CONFIG = -19,    /* bad configuration */
};

/** rsec_version - the library's version string, "MAJOR.MINOR.PATCH". */
const char *rsec_version(void);

/** rsec_strerror - a static, human-readable description of an RSEC_E* code. */
const char *rsec_strerror(int code);

#ifdef __cplusplus
}
#endif
#endif /* RDMASEC_H */
