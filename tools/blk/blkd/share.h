/* SPDX-License-Identifier: MIT */
/*
 * What one identity holds of rdmasec-blkd (docs/blk.md, "Shares"): its
 * sessions, the command buffers they reserved, its store I/O in the worker
 * pool, and the bytes the event loop sealed or opened for it this turn. The
 * loop decides with these; nothing here knows a session or a command. One share per
 * identity with a session: at most max_sessions of them.
 */
#ifndef RSEC_BLKD_SHARE_H
#define RSEC_BLKD_SHARE_H

#include <stdbool.h>
#include <stdint.h>

#include "blkd_conf.h"

struct cmd; /* the target's; a share only holds them in line */

struct share {
	char identity[BLKD_ID_LEN];
	unsigned sessions;     /* authenticated, those before OPEN included */
	uint64_t mem_reserved; /* command buffers of its open sessions */
	unsigned store_jobs;   /* store I/O queued or running in the pool */
	uint64_t turn;         /* the loop turn turn_bytes counts */
	uint64_t turn_bytes;   /* data and message bytes the loop sealed or opened for it in that turn */
	struct cmd *line_head, *line_tail; /* its commands waiting for a turn to be sealed or opened, oldest first */
	struct share *prev, *next;
};

/* The identity's share with one more session (created with its first); NULL if out of memory. */
struct share *share_join(struct share **list, const char *identity);
/* One session of it fewer; the share goes with the last. */
void share_leave(struct share **list, struct share *sh);

/* Whether the loop may still seal or open for it in this turn: under per_turn bytes (a new turn starts at 0). */
bool share_turn_left(struct share *sh, uint64_t turn, uint64_t per_turn);
void share_turn_spend(struct share *sh, uint64_t turn, uint64_t bytes);

#endif
