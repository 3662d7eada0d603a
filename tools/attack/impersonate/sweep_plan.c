/* SPDX-License-Identifier: MIT */
#include "sweep_plan.h"

bool sweep_plan_init(struct sweep_plan *p, uint32_t psn_start, uint32_t psn_count, uint32_t qpn_first,
		     uint32_t qpn_count, uint32_t window, uint32_t qps)
{
	if (psn_start >= SWEEP_PSN_SPACE || psn_count == 0 || psn_count > SWEEP_PSN_SPACE)
		return false;
	if (qpn_first > SWEEP_QPN_MAX || qpn_count == 0 || qpn_count - 1 > SWEEP_QPN_MAX - qpn_first)
		return false;
	if (window == 0 || qps == 0)
		return false;
	p->psn_start = psn_start;
	p->psn_count = psn_count;
	p->qpn_first = qpn_first;
	p->qpn_count = qpn_count;
	p->window = window;
	p->qps = qps;
	p->chunks = ((uint64_t)psn_count + window - 1) / window;
	p->jobs = p->chunks * qpn_count;
	p->rounds = (p->jobs + qps - 1) / qps;
	return true;
}

bool sweep_plan_job(const struct sweep_plan *p, uint64_t k, struct sweep_job *j)
{
	uint64_t chunk, offset;

	if (k >= p->jobs)
		return false;
	chunk = k / p->qpn_count;
	offset = chunk * p->window;
	j->qpn = p->qpn_first + (uint32_t)(k % p->qpn_count);
	j->psn = (uint32_t)((p->psn_start + offset) % SWEEP_PSN_SPACE);
	j->len = (uint32_t)(p->psn_count - offset < p->window ? p->psn_count - offset : p->window);
	j->qp = (uint32_t)(k % p->qps);
	j->round = k / p->qps;
	return true;
}

uint32_t sweep_window_sent(uint32_t psn, uint32_t len, uint32_t next_psn)
{
	uint32_t sent = (next_psn - psn) % SWEEP_PSN_SPACE;

	if (psn >= SWEEP_PSN_SPACE || next_psn >= SWEEP_PSN_SPACE || len > SWEEP_PSN_SPACE / 2 || sent > len)
		return SWEEP_NOT_IN_WINDOW;
	return sent;
}

double sweep_projected_seconds(uint64_t packets, double elapsed, uint64_t total)
{
	if (packets == 0 || !(elapsed > 0.0))
		return -1.0;
	return (double)total * elapsed / (double)packets;
}
