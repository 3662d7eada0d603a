/* SPDX-License-Identifier: MIT */
/* Uniform random indices from OpenSSL's RNG (QP pool picks, QPNs burned). */
#ifndef RSEC_RANDOM_H
#define RSEC_RANDOM_H

#include <stdbool.h>
#include <stdint.h>

#include "result.h"

/*
 * Is r, one draw uniform over [0, range), usable for an index below n? If
 * so, *idx = r % n. The top range % n values are rejected, so every index
 * comes from exactly range / n draws (no modulo bias). n == 0 is never
 * usable; range must be >= n.
 */
bool rsec_uniform_accept(uint64_t r, uint64_t range, uint32_t n, uint32_t *idx);

/* A uniform index below n >= 1 from RAND_bytes. Returns 0, RSEC_E_INVAL, RSEC_E_CRYPTO. */
RSEC_MUST_CHECK int rsec_random_index(uint32_t n, uint32_t *idx);

#endif /* RSEC_RANDOM_H */
