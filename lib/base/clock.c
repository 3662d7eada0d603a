/* SPDX-License-Identifier: MIT */
#include <time.h>

#include "clock.h"

/*
 * Millisecond deadlines need no finer clock than the kernel's tick, and the
 * coarse clock is read from the vDSO without touching the clock hardware.
 * The data path reads it several times per message; in an emulated guest
 * whose clocksource is the HPET, every CLOCK_MONOTONIC read is a system
 * call and an emulated device access.
 */
uint64_t rsec_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t rsec_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * The coarse clock lags the real one by up to a tick or so: a deadline
 * taken from it could pass before timeout_ms really has. Taken from the
 * precise clock (once per blocking call) and compared with the coarse one,
 * a wait ends at most a tick late, never early.
 */
uint64_t rsec_deadline_ms(int timeout_ms)
{
	if (timeout_ms <= 0)
		return 0; /* passed already: no clock to read */
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t now = (uint64_t)ts.tv_sec * 1000u + ((uint64_t)ts.tv_nsec + 999999u) / 1000000u;
	return now + (uint64_t)timeout_ms;
}
