/* SPDX-License-Identifier: MIT */
/*
 * Planning a PSN sweep across many attacker QPs (impersonate). Pure: no
 * verbs, no I/O, so the unit test can check that every PSN of the range is
 * covered exactly once for every target QPN.
 */
#ifndef RSEC_SWEEP_PLAN_H
#define RSEC_SWEEP_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#define SWEEP_PSN_SPACE (1u << 24)
#define SWEEP_QPN_MAX 0xffffffu

/*
 * The range [psn_start, psn_start + psn_count) modulo 2^24 is cut into
 * chunks of `window` PSNs (the last one may be shorter). Each (chunk, QPN)
 * pair is one job; job k goes to attacker QP k % qps in round k / qps, and
 * consecutive jobs hit the QPNs of the range in turn, so every candidate QPN
 * sees the sweep advance at the same pace.
 */
struct sweep_plan {
	uint32_t psn_start, psn_count;  /* 0..0xFFFFFF, 1..2^24 */
	uint32_t qpn_first, qpn_count;  /* the range must not pass 0xFFFFFF */
	uint32_t window;                /* PSNs per job, >= 1 */
	uint32_t qps;                   /* attacker QPs, >= 1 */
	uint64_t chunks;                /* ceil(psn_count / window) */
	uint64_t jobs;                  /* chunks * qpn_count */
	uint64_t rounds;                /* ceil(jobs / qps) */
};

struct sweep_job {
	uint32_t qpn;     /* destination QPN */
	uint32_t psn;     /* first PSN (the attacker QP's sq_psn) */
	uint32_t len;     /* packets: PSNs psn .. psn+len-1, wrapping */
	uint32_t qp;      /* which attacker QP sends it */
	uint64_t round;   /* in which round */
};

/* Fill p; false (p untouched) if a parameter is out of range. */
bool sweep_plan_init(struct sweep_plan *p, uint32_t psn_start, uint32_t psn_count, uint32_t qpn_first,
		     uint32_t qpn_count, uint32_t window, uint32_t qps);

/* Job k of the plan; false if k >= p->jobs. */
bool sweep_plan_job(const struct sweep_plan *p, uint64_t k, struct sweep_job *j);

/*
 * How many packets of a job's window (len PSNs from psn) the attacker QP has
 * sent, given the PSN its requester will send next (rxe's sq_psn): 0..len,
 * wrapping at 2^24. SWEEP_NOT_IN_WINDOW if next_psn is not psn..psn+len.
 */
#define SWEEP_NOT_IN_WINDOW UINT32_MAX
uint32_t sweep_window_sent(uint32_t psn, uint32_t len, uint32_t next_psn);

/*
 * Seconds to send `total` packets at the rate measured (`packets` in
 * `elapsed` seconds); negative when nothing was measured.
 */
double sweep_projected_seconds(uint64_t packets, double elapsed, uint64_t total);

#endif /* RSEC_SWEEP_PLAN_H */
