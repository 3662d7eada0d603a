/* SPDX-License-Identifier: MIT */
/*
 * rdmasec-blkd's audit records: one JSON object per line, in the style of
 * librdmasec's (docs/audit.md) and in the same file. Every OPEN (accepted
 * or refused), READ, WRITE and FLUSH, every protocol violation and every
 * session's end. The records of I/O are kept in a batch that audit_flush
 * appends with one write(2) (whole lines: another writer's never land inside
 * one); the target flushes before it sends the completions of a loop turn,
 * so every completion a client got has its record in the file. Any other
 * record flushes the batch and is appended at once.
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
/* Append the batched I/O records (one write). */
void audit_flush(void);

#endif
