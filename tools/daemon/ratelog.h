/* SPDX-License-Identifier: MIT */
/*
 * Rate-limited log lines for events anyone can cause before authenticating
 * (refusals, failed handshakes): at most lines_per_sec lines a second, shared
 * by every kind. The rest are counted per kind, and once the second is over
 * one summary per kind says how many were left out
 * ("event=suppressed count=N what=KIND window_ms=W"). Nothing is dropped
 * without being counted; the caller still counts every event itself.
 */
#ifndef RSEC_DAEMON_RATELOG_H
#define RSEC_DAEMON_RATELOG_H

#include <stdbool.h>
#include <stdint.h>

#define RATELOG_WINDOW_MS 1000
#define RATELOG_DEFAULT_LINES 20  /* lines a second, what rdmasec-server uses */
#define RATELOG_KINDS 8           /* kinds summarised by name; more share "other" */
#define RATELOG_KIND_MAX 32       /* a kind's name, NUL included; longer names are cut */

/* Receives a summary: count lines of kind what were suppressed over the last window_ms. */
typedef void ratelog_emit_fn(void *arg, const char *what, uint64_t count, uint64_t window_ms);

struct ratelog;

/* lines_per_sec >= 1; emit NULL: log_event("warn", "suppressed", ...). NULL if out of memory or 0. */
struct ratelog *ratelog_new(uint32_t lines_per_sec, ratelog_emit_fn *emit, void *arg);
void ratelog_free(struct ratelog *r);

/*
 * An event of kind what ("refused", "handshake_failed", ...) at now_ms (a
 * monotonic clock). true: log its line now. false: it was counted for the
 * summary; do not log it.
 */
bool ratelog_allow(struct ratelog *r, const char *what, uint64_t now_ms);

/* From the loop's tick: once the window is over, emit its summaries and start the next one. */
void ratelog_tick(struct ratelog *r, uint64_t now_ms);
/* Emit every pending summary now (at shutdown). */
void ratelog_flush(struct ratelog *r, uint64_t now_ms);

/* Lines suppressed since ratelog_new, summarised or still pending. */
uint64_t ratelog_suppressed_total(const struct ratelog *r);

#endif
