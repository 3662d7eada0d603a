/* SPDX-License-Identifier: MIT */
/*
 * rdmasec-blkd's audit records: one JSON object per line, in the style of
 * librdmasec's (docs/audit.md) and in the same file, each appended with one
 * write(2). Every OPEN (accepted or refused), READ, WRITE and FLUSH, every
 * protocol violation and every session's end.
 */
#ifndef RSEC_BLKD_AUDIT_H
#define RSEC_BLKD_AUDIT_H

#include <stdbool.h>
#include <stdint.h>

struct audit_who {
	uint64_t session;
	const char *peer, *peer_addr, *export_name; /* export_name NULL: before OPEN */
};

/* Open path for appending (created 0600); NULL or "" : records go nowhere. 0 or -errno. */
int audit_open(const char *path);
void audit_close(void);
/* Records that could not be written. */
uint64_t audit_errors(void);

void audit_open_result(const struct audit_who *w, bool write, const char *result, const char *reason);
void audit_io(const struct audit_who *w, const char *op, unsigned queue, unsigned cid, uint64_t offset,
	      uint32_t length, bool fua, const char *result);
void audit_violation(const struct audit_who *w, unsigned queue, const char *reason);
void audit_session_end(const struct audit_who *w, const char *reason);

#endif
