/* SPDX-License-Identifier: MIT */
/*
 * Reading control frames off one end of a unit test's TLS pair (test_lane,
 * test_sealed_post). Include after cmocka.h: it asserts.
 */
#ifndef RSEC_TEST_FRAMES_H
#define RSEC_TEST_FRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tls.h"
#include "wire.h"

/*
 * The next whole frame on ssl, decoded into m. wait: keep reading (up to
 * 1000 non-blocking reads) until one is there; else false when nothing is.
 */
static inline bool test_read_frame(SSL *ssl, struct rsec_msg *m, bool wait)
{
	uint8_t frame[RSEC_WIRE_MAX_FRAME];
	size_t have = 0, need = RSEC_WIRE_HDR_LEN;
	for (int tries = 0; have < need && tries < 1000; tries++) {
		size_t got = 0;
		int rc = rsec_tls_read_some(ssl, frame + have, need - have, &got);
		if (rc == RSEC_E_AGAIN && have == 0 && !wait)
			return false;
		assert_true(rc == 0 || rc == RSEC_E_AGAIN);
		have += got;
		if (have == RSEC_WIRE_HDR_LEN && need == RSEC_WIRE_HDR_LEN) {
			uint8_t type;
			uint32_t body;
			assert_int_equal(rsec_wire_decode_header(frame, have, &type, &body), 0);
			need += body;
		}
	}
	assert_int_equal(have, need);
	assert_int_equal(rsec_wire_decode(frame, have, m), 0);
	return true;
}

#endif
