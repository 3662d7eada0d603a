/* SPDX-License-Identifier: MIT */
/* The library's clocks: monotonic milliseconds for timers and deadlines, nanoseconds for durations. */
#ifndef RSEC_CLOCK_H
#define RSEC_CLOCK_H

#include <stdint.h>

/* Monotonic milliseconds, tick resolution: timers, and checking deadlines. */
uint64_t rsec_now_ms(void);
/* Monotonic nanoseconds on the precise clock: durations to measure, and waits outside the data path. */
uint64_t rsec_now_ns(void);
/* now + timeout_ms on the precise clock, a deadline rsec_now_ms() never reaches early; timeout_ms <= 0: 0, passed. */
uint64_t rsec_deadline_ms(int timeout_ms);

#endif /* RSEC_CLOCK_H */
