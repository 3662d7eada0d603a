/* SPDX-License-Identifier: MIT */
/*
 * How hard is it to hit another live connection's QPN? The arithmetic of
 * benchmarks/qpn_entropy.c, apart from verbs so it can be unit tested.
 *
 * An off-path attacker who knows the QPN q of its own connection guesses
 * q+1, q-1, q+2, q-2, ... (the best generic order against a sequential
 * allocator). The rank of a target QPN is the number of guesses that order
 * needs to reach it. Over many trials, the mean rank m corresponds to a
 * uniform guess over 2m-1 values: log2(2m-1) bits.
 */
#ifndef RSEC_QPN_GUESS_H
#define RSEC_QPN_GUESS_H

#include <stddef.h>
#include <stdint.h>

#include "result.h"

#define RSEC_QPN_BITS 24u
#define RSEC_QPN_SPACE (1u << RSEC_QPN_BITS)

/*
 * Guesses needed to reach target starting from own, counting on the 24-bit
 * QPN circle: +d is guess 2d-1, -d is guess 2d. 0 when target == own.
 */
uint32_t rsec_qpn_guess_rank(uint32_t own, uint32_t target);

struct rsec_qpn_summary {
	size_t trials;
	double mean, median;
	double within1, within16; /* fraction of trials found in at most 1 / 16 guesses */
	double bits;              /* log2(2 * mean - 1) */
};

/* Bits of a uniform set whose mean guess count is mean (>= 1): log2(2 * mean - 1). */
double rsec_qpn_bits(double mean);

/*
 * Summarize n >= 1 ranks (each >= 1); sorts ranks in place.
 * Returns 0 or RSEC_E_INVAL.
 */
RSEC_MUST_CHECK int rsec_qpn_summarize(uint32_t *ranks, size_t n, struct rsec_qpn_summary *out);

#endif /* RSEC_QPN_GUESS_H */
