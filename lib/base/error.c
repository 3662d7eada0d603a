/* SPDX-License-Identifier: MIT */
/* The text of each RSEC_E_* code (errtext.h). */
#include "errtext.h"
#include "rdmasec.h"

const char *rsec_error_text(int code)
{
	switch (code) {
	case RSEC_OK: return "success";
	case RSEC_E_INVAL: return "invalid argument";
	case RSEC_E_NOMEM: return "out of memory";
	case RSEC_E_IO: return "input/output error";
	case RSEC_E_TLS: return "TLS failure";
	case RSEC_E_AUTH: return "peer authentication failed";
	case RSEC_E_PROTO: return "malformed or unexpected control message";
	case RSEC_E_VERBS: return "verbs call failed";
	case RSEC_E_MAC: return "message authentication failed";
	case RSEC_E_SEQ: return "message out of sequence";
	case RSEC_E_CLOSED: return "connection closed";
	case RSEC_E_TIMEOUT: return "timed out";
	case RSEC_E_LIMIT: return "limit reached";
	case RSEC_E_RANGE: return "value out of range";
	case RSEC_E_NODEV: return "no usable RDMA device";
	case RSEC_E_AGAIN: return "resource temporarily unavailable";
	case RSEC_E_QP: return "queue pair in error state";
	case RSEC_E_CRYPTO: return "cryptographic operation failed";
	case RSEC_E_GRANT: return "unknown, expired or revoked grant";
	case RSEC_E_CONFIG: return "bad configuration";
	case RSEC_E_DENIED: return "identity not authorized";
	default: return "unknown error";
	}
}
