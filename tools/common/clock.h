/* SPDX-License-Identifier: MIT */
/*
 * The programs' clocks: monotonic time for deadlines and rates, and the UTC
 * wall-clock stamp that logs and audit records carry. Header-only, so that
 * position-independent code can use it too.
 */
#ifndef RSEC_TOOLS_CLOCK_H
#define RSEC_TOOLS_CLOCK_H

#include <stdint.h>
#include <stdio.h>
#include <time.h>

/* Room for "2026-01-31T23:59:59.123Z" and its NUL, with years of any width. */
#define CLOCK_STAMP_LEN 64

static inline uint64_t clock_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t clock_mono_ms(void)
{
	return clock_mono_ns() / 1000000u;
}

/*
 * Monotonic milliseconds at the kernel's tick, for deadlines and timers of a
 * millisecond and more: read from the vDSO without touching the clock
 * hardware (under an emulator whose clocksource is the HPET, every
 * CLOCK_MONOTONIC read is a system call and a device access). It lags
 * clock_mono_ms by up to a tick: do not mix the two in one comparison.
 */
static inline uint64_t clock_coarse_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Now in UTC, to the millisecond, in ISO 8601. The date and time of day are made once a second per
 * thread: audit records and logs come in bursts. */
static inline const char *clock_utc_stamp(char out[static CLOCK_STAMP_LEN])
{
	static _Thread_local time_t made_for;
	static _Thread_local char when[32];
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	if (!when[0] || ts.tv_sec != made_for) {
		struct tm tm;
		gmtime_r(&ts.tv_sec, &tm);
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
		made_for = ts.tv_sec;
	}
	snprintf(out, CLOCK_STAMP_LEN, "%s.%03ldZ", when, ts.tv_nsec / 1000000);
	return out;
}

#endif
