/* SPDX-License-Identifier: MIT */
/* rdmasec-blkd's Prometheus counters, per export, and the file they are rewritten to atomically. */
#ifndef RSEC_BLKD_METRICS_H
#define RSEC_BLKD_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "blk_wire.h"
#include "reload.h"

struct export_counters {
	uint64_t reads, writes, flushes, bytes_read, bytes_written;
	uint64_t errors[BLK_S_MAX + 1]; /* completions by status, BLK_S_OK unused */
	uint64_t sessions_total, sessions_open, opens_refused;
	uint64_t opens_denied; /* of opens_refused: the identity matched no rw or ro rule */
	uint64_t store_nowait; /* store I/O done on the loop without waiting (RWF_NOWAIT), not by a worker */
};

/* An identity's shares (docs/blk.md, "Shares"), for share_refusals. */
enum share_kind { SHARE_SESSIONS, SHARE_MEMORY, SHARE_KINDS };

struct target_counters {
	uint64_t connections, violations, opens_unknown_export, audit_errors;
	uint64_t open_refusals[BLK_S_MAX + 1]; /* OPENs refused, by status, whatever their export */
	uint64_t share_refusals[SHARE_KINDS];   /* sessions and OPENs refused for their identity's share */
	struct daemon_reload_counts reload; /* reloads, failed ones, the certificate's days left */
	uint64_t closed_revoked;   /* sessions closed after a reload: their peer is revoked, expired or no longer allowed */
	uint64_t busy_poll_hits, busy_poll_misses; /* polls before sleeping that found work, that did not */
};

struct metrics_source {
	const char *const *names; /* export names */
	const struct export_counters *const *exports;
	size_t n;
	const struct target_counters *target;
};

/* Render all counters to path (via path.tmp and rename). 0, or -errno with err set. */
int metrics_write(const char *path, const struct metrics_source *m, char *err, size_t errlen);

#endif
