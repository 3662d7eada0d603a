/* SPDX-License-Identifier: MIT */
/*
 * Admission per source address, before TLS: how many handshakes a source
 * may have in progress at once, and how fast it may start new ones (a token
 * bucket). A source is an IPv4 address, or the /64 prefix of an IPv6
 * address: one host is routinely given a whole /64, so counting its
 * addresses one by one would give it 2^64 budgets. IPv4-mapped IPv6
 * addresses (a dual-stack listener's IPv4 clients) count as their IPv4
 * address, never as one shared /64.
 *
 * The table is bounded and allocated once (admission_new); no call after
 * that allocates. When it is full, a new source takes the place of an idle
 * one (no handshake in progress and a full bucket: forgetting it changes
 * nothing, as a new entry starts the same way) found among the
 * ADMISSION_EVICT_SCAN that went idle longest ago; if there is none the new
 * source is refused (ADMISSION_REFUSE_TABLE_FULL). An entry with a handshake
 * in progress is never evicted (its release must find it), nor one with a
 * drained bucket (that would hand a flooding source a fresh burst). A full
 * table means more than max_sources sources within one refill period
 * (burst / rate seconds): a flood in itself.
 */
#ifndef RSEC_DAEMON_ADMISSION_H
#define RSEC_DAEMON_ADMISSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ADMISSION_SOURCES_MIN 16384u    /* admission_limits_for's floor for max_sources */
#define ADMISSION_SOURCES_LIMIT (1u << 20)
#define ADMISSION_EVICT_SCAN 8          /* idle candidates looked at per new source on a full table */
#define ADMISSION_SOURCE_MAX 48         /* admission_source()'s text, NUL included */

struct admission_limits {
	uint32_t max_per_source;  /* handshakes in progress per source, >= 1 */
	uint32_t rate_per_sec;    /* new handshakes per second per source (bucket refill), 1..1000000 */
	uint32_t burst;           /* bucket size, 1..1000000 */
	size_t max_sources;       /* table entries, 1..ADMISSION_SOURCES_LIMIT */
};

enum admission_verdict {
	ADMISSION_ADMIT = 0,
	ADMISSION_REFUSE_CONCURRENT, /* max_per_source handshakes of this source in progress */
	ADMISSION_REFUSE_RATE,       /* this source's bucket is empty */
	ADMISSION_REFUSE_TABLE_FULL, /* a new source, and no idle entry to reuse */
	ADMISSION_REFUSE_BAD_ADDR,   /* peer_addr is not "IPv4:PORT" or "[IPv6]:PORT" */
};

struct admission;

/*
 * A daemon's limits from its settings: per_source handshakes in progress,
 * rate_per_source as both rate and burst, and max_sources =
 * max(ADMISSION_SOURCES_MIN, 2 * max_clients), so handshakes in progress
 * alone never fill the table.
 */
void admission_limits_for(struct admission_limits *l, uint32_t max_clients, uint32_t per_source,
			  uint32_t rate_per_source);

/* An empty table; NULL if a limit is out of range or out of memory. */
struct admission *admission_new(const struct admission_limits *l);
void admission_free(struct admission *a);

/*
 * May a connection from peer_addr (rsec_conn_peer_addr()) start its
 * handshake at now_ms (a monotonic clock)? ADMISSION_ADMIT counts it in
 * progress and takes a token: call admission_release exactly once when its
 * handshake ends. Any refusal changes nothing. why (if not NULL) gets a short
 * static text for the log.
 */
enum admission_verdict admission_try(struct admission *a, const char *peer_addr, uint64_t now_ms, const char **why);

/*
 * The handshake of a connection admitted from peer_addr ended (established or
 * failed). Returns false, changing nothing, if no handshake of that source is
 * in progress (a caller's bug: the count never underflows).
 */
bool admission_release(struct admission *a, const char *peer_addr);

/* Handshakes of peer_addr's source in progress (0: unknown source or bad address). */
uint32_t admission_in_progress(const struct admission *a, const char *peer_addr);
/* Sources in the table. */
size_t admission_sources(const struct admission *a);

/*
 * The source peer_addr is counted under, as text: "10.0.0.1" or
 * "2001:db8:1:2::/64". Returns false (out = "") for a malformed address.
 */
bool admission_source(const char *peer_addr, char out[static ADMISSION_SOURCE_MAX]);

const char *admission_verdict_name(enum admission_verdict v);

#endif
