/* SPDX-License-Identifier: MIT */
/* The WRITE ping-pong of pingpong.h. */
#include <sched.h>
#include <stdio.h>

#include "bench.h"
#include "clock.h"
#include "pingpong.h"

/* As the library's busy wait: let rxe's kernel work and the peer run on a guest's few CPUs. */
#define SPINS_PER_YIELD 64
/* How often a spin also reaps completions and drives the connection (a peer that left is noticed). */
#define SPINS_PER_CHECK 1024

/* Take the completions of earlier writes; each must have succeeded. */
static int reap(struct pingpong *pp, int timeout_ms)
{
	struct rsec_wc wc[8];
	int n = rsec_poll(pp->c, wc, 8, timeout_ms);
	for (int i = 0; i < n; i++)
		if (wc[i].status != 0) {
			fprintf(stderr, "%s: ping-pong write: %s (%s)\n", PROG, rsec_strerror(wc[i].status),
				rsec_conn_error(pp->c));
			return wc[i].status;
		}
	if (n < 0)
		fprintf(stderr, "%s: rsec_poll: %s (%s)\n", PROG, rsec_strerror(n), rsec_conn_error(pp->c));
	return n < 0 ? n : 0;
}

int pingpong_send(struct pingpong *pp, uint64_t round)
{
	volatile uint8_t *src = rsec_region_addr(pp->src);
	src[pp->size - 1] = (uint8_t)round;
	int rc = rsec_post_write(pp->c, pp->peer, 0, pp->src, 0, (uint32_t)pp->size, round);
	if (rc == RSEC_E_AGAIN) { /* the depth is full of writes whose completions are not taken yet */
		rc = reap(pp, pp->timeout_ms);
		if (rc == 0)
			rc = rsec_post_write(pp->c, pp->peer, 0, pp->src, 0, (uint32_t)pp->size, round);
	}
	if (rc < 0)
		fprintf(stderr, "%s: rsec_post_write: %s (%s)\n", PROG, rsec_strerror(rc), rsec_conn_error(pp->c));
	return rc;
}

int pingpong_wait(struct pingpong *pp, uint64_t round)
{
	volatile const uint8_t *last = (volatile const uint8_t *)rsec_region_addr(pp->dst) + pp->size - 1;
	uint64_t deadline = clock_mono_ns() + (uint64_t)pp->timeout_ms * 1000000u;
	for (unsigned spins = 1; *last != (uint8_t)round; spins++) {
		if (spins % SPINS_PER_YIELD == 0)
			(void)sched_yield();
		if (spins % SPINS_PER_CHECK)
			continue;
		int rc = reap(pp, 0); /* also drives the connection: a peer that left is noticed */
		if (rc < 0)
			return rc;
		if (clock_mono_ns() > deadline) {
			fprintf(stderr, "%s: the peer's write %llu did not land in %d ms\n", PROG,
				(unsigned long long)round, pp->timeout_ms);
			return RSEC_E_TIMEOUT;
		}
	}
	return reap(pp, 0);
}
