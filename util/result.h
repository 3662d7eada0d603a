/* SPDX-License-Identifier: MIT */
/*
 * Internal error handling. Internal functions return int: 0 or a negative
 * RSEC_E_* code, and are marked RSEC_MUST_CHECK so an ignored result warns
 * (and -Werror fails the build). The guard macros are the only ones allowed
 * to hide a return.
 */
#ifndef RSEC_RESULT_H
#define RSEC_RESULT_H

#include "rdmasec.h"

#define RSEC_MUST_CHECK __attribute__((warn_unused_result))

/* Return the error of x, if any. */
#define RSEC_GUARD(x)                          \
	do {                                   \
		int rsec_guard_rc_ = (x);      \
		if (rsec_guard_rc_ < 0)        \
			return rsec_guard_rc_; \
	} while (0)

/* Return err unless cond holds. */
#define RSEC_ENSURE(cond, err)       \
	do {                         \
		if (!(cond))         \
			return (err); \
	} while (0)

#define RSEC_ENSURE_REF(p) RSEC_ENSURE((p) != NULL, RSEC_E_INVAL)

#endif /* RSEC_RESULT_H */
