/* SPDX-License-Identifier: MIT */
/*
 * A WRITE ping-pong, as perftest's ib_write_lat: each side writes SIZE bytes
 * into the other's grant, the last byte a round counter, and spins on its own
 * granted region's last byte for the answer. Nothing but the WRITEs crosses
 * the wire; each side's library only posts them and reaps their completions.
 */
#ifndef BENCH_PINGPONG_H
#define BENCH_PINGPONG_H

#include <stddef.h>
#include <stdint.h>

#include "rdmasec.h"

struct pingpong {
	struct rsec_conn *c;
	const struct rsec_remote_grant *peer; /* where we write */
	struct rsec_region *src;              /* what we write (local) */
	struct rsec_region *dst;              /* what the peer writes into (granted to it) */
	size_t size;
	int timeout_ms;
};

/* Write round's counter into the peer's last byte (and the bytes before it). Returns 0 or an RSEC_E_* code. */
int pingpong_send(struct pingpong *pp, uint64_t round);
/* Spin until the peer's write of round has landed; RSEC_E_TIMEOUT after timeout_ms. */
int pingpong_wait(struct pingpong *pp, uint64_t round);

#endif
