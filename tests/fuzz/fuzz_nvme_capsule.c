/* SPDX-License-Identifier: MIT */
/*
 * Target Functions: nvme_capsule_parse, nvme_sqe_decode, nvme_sqe_encode,
 * nvme_capsule_build, nvme_cqe_decode, nvme_cqe_encode
 * (tools/attack/proto/nvme_capsule.c).
 * Input: the payload of a RoCE SEND on an NVMe-oF I/O queue: a command
 * capsule, or (16 bytes) a response capsule. A parsed capsule's data must lie
 * inside the input; re-encoding its SQE must give back the input's 64 bytes
 * (CDW2-3, which the decoder skips, aside), and for in-capsule data at offset
 * 0 the rebuilt capsule must equal the input. A CQE must round-trip exactly.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../tools/attack/proto/nvme_capsule.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_capsule(const uint8_t *data, size_t size, const struct nvme_capsule *c)
{
	static uint8_t out[NVME_SQE_LEN + NVME_MAX_INLINE];
	uint8_t want[NVME_SQE_LEN];
	size_t n;

	if (c->data_len && (c->data < data + NVME_SQE_LEN || c->data_len > size - (size_t)(c->data - data)))
		abort();
	if (nvme_sqe_encode(&c->sqe, out) != 0)
		abort();
	memcpy(want, data, NVME_SQE_LEN);
	memset(want + 8, 0, 8);
	if (memcmp(out, want, NVME_SQE_LEN) != 0)
		abort();
	if (c->sqe.sgl.id == NVME_SGL_INLINE && c->sqe.sgl.addr == 0 && c->data_len == size - NVME_SQE_LEN) {
		if (nvme_capsule_build(&c->sqe, c->data, c->data_len, out, sizeof(out), &n) != 0 || n != size ||
		    memcmp(out + NVME_SQE_LEN, data + NVME_SQE_LEN, size - NVME_SQE_LEN) != 0)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nvme_capsule c;
	struct nvme_cqe q;
	uint8_t out[NVME_CQE_LEN];

	if (nvme_capsule_parse(data, size, &c) == 0)
		check_capsule(data, size, &c);
	if (nvme_cqe_decode(data, size, &q) == 0) {
		if (nvme_cqe_encode(&q, out) != 0 || memcmp(out, data, NVME_CQE_LEN) != 0)
			abort();
	}
	return 0;
}
