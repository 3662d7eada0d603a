/* SPDX-License-Identifier: MIT */
/*
 * The first fault a queue pair's engine found, recorded for its owner.
 *
 * path/ never acts on a fault: it records it here and returns the fault's
 * code up to the session, which settles it (session/settle.c) once the path
 * call has unwound: closes the connection, or rebuilds its data path. So a
 * fault found in the middle of a batch of completions or of a loop over
 * grants never destroys what that loop still holds.
 *
 * Two kinds are found here. A protocol violation path/ sees is a completion
 * rdmasec never asks for: a data-path fault (why RSEC_WIRE_REBUILD_VIOLATION,
 * counted in protocol_violations). The control channel's loss is found by the
 * session (conn.c, ctrl.c); a frame path/ could not send fails the connection.
 *
 * Invariants: kind == RSEC_FAULT_NONE, or code < 0 and text is terminated.
 * Only the first fault counts until the owner takes it: a later one (often
 * the same failure seen again by a caller) returns the first one's code.
 */
#ifndef RSEC_FAULT_H
#define RSEC_FAULT_H

#include <stdbool.h>
#include <stdint.h>

enum rsec_fault_kind {
	RSEC_FAULT_NONE = 0,
	RSEC_FAULT_FAIL, /* the connection cannot go on: it closes with code */
	RSEC_FAULT_DATA, /* the data path failed (why: RSEC_WIRE_REBUILD_*): rebuilt if it may be, else closed */
};

struct rsec_fault {
	enum rsec_fault_kind kind;
	int code;
	uint8_t why;
	char text[200];
};

/* Record a failure (code < 0) unless a fault is pending; returns the pending fault's code. */
int rsec_fault_fail(struct rsec_fault *f, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Record a failure of the data path (why: RSEC_WIRE_REBUILD_*), as rsec_fault_fail. */
int rsec_fault_data(struct rsec_fault *f, uint8_t why, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static inline bool rsec_fault_pending(const struct rsec_fault *f)
{
	return f->kind != RSEC_FAULT_NONE;
}

/* The pending fault, handed to the owner; f records the next one from here on. */
struct rsec_fault rsec_fault_take(struct rsec_fault *f);

#endif /* RSEC_FAULT_H */
