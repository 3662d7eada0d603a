/* SPDX-License-Identifier: MIT */
/*
 * Target Functions: bench_decode, bench_encode, bench_params_check
 * (tools/bench/bench_proto.c), the parser each side of rdmasec-bench runs on
 * every message its peer sends.
 * Input: one message as rsec_recv delivers it. A decoded message must pass
 * its own limits and re-encode to the same bytes (DATA: its payload must be
 * the rest of the input); text must be printable.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../tools/bench/bench_proto.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bench_msg m;
	const char *why;
	if (!bench_decode(data, size, &m, &why)) {
		if (!why || !*why)
			abort();
		return 0;
	}
	if (m.type == BENCH_MSG_DATA) {
		if (m.payload != data + 1 || m.payload_len != size - 1)
			abort();
		return 0;
	}
	if (m.type == BENCH_MSG_PARAMS && bench_params_check(&m.params))
		abort();
	if (m.type == BENCH_MSG_ERROR && !printable(m.text, strlen(m.text)))
		abort();
	uint8_t out[BENCH_MSG_FIXED_MAX];
	size_t n = bench_encode(&m, out, sizeof(out));
	if (n != size || memcmp(out, data, size) != 0)
		abort();
	return 0;
}
