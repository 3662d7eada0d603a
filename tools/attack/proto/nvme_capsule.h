/* SPDX-License-Identifier: MIT */
/*
 * NVMe over Fabrics (RDMA transport) capsules as they ride in RoCE SENDs: the
 * 64-byte submission queue entry (SQE) of a command capsule, optionally
 * followed by in-capsule data, and the 16-byte completion queue entry (CQE)
 * of a response capsule. All fields little-endian on the wire (NVMe base
 * specification 2.0, figures "Common Command Format" and "Common Completion
 * Queue Entry Layout"; NVMe-oF 1.1 "SGL Descriptor" for the RDMA transport).
 * Encodes forged capsules and decodes captured ones; every length is bounded.
 */
#ifndef RSEC_NVME_CAPSULE_H
#define RSEC_NVME_CAPSULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "result.h"

enum {
	NVME_SQE_LEN = 64,
	NVME_CQE_LEN = 16,
	/* nvmet-rdma accepts at most max(16 KiB, PAGE_SIZE) of in-capsule data. */
	NVME_MAX_INLINE = 16384,
	NVME_SGL_OFF = 24, /* SGL1 (DPTR) within the SQE */
	NVME_SGL_LEN = 16,
};

/* I/O command opcodes (NVM command set). */
enum nvme_opcode {
	NVME_OP_FLUSH = 0x00,
	NVME_OP_WRITE = 0x01,
	NVME_OP_READ = 0x02,
};

/* SQE byte 1: FUSE in bits 1:0, PSDT in bits 7:6. Fabrics commands must use SGLs. */
enum {
	NVME_FLAG_FUSE_MASK = 0x03,
	NVME_FLAG_PSDT_MASK = 0xc0,
	NVME_FLAG_SGL_METABUF = 0x40, /* PSDT 01b: what the Linux host sends and nvmet requires */
	NVME_FLAG_SGL_METASGL = 0x80, /* PSDT 10b */
};

/* SGL descriptor identifier: type in the high nibble, sub type in the low one. */
enum {
	NVME_SGL_TYPE_DATA = 0x0,   /* Data Block */
	NVME_SGL_TYPE_KEYED = 0x4,  /* Keyed Data Block (RDMA: address, 3-byte length, key) */
	NVME_SGL_SUB_ADDRESS = 0x0, /* address is a memory address */
	NVME_SGL_SUB_OFFSET = 0x1,  /* address is an offset into the in-capsule data */
	NVME_SGL_SUB_INVALIDATE = 0xf, /* keyed: the target invalidates the key (Send with Invalidate) */
	NVME_SGL_INLINE = NVME_SGL_TYPE_DATA << 4 | NVME_SGL_SUB_OFFSET,   /* 0x01 */
	NVME_SGL_KEYED = NVME_SGL_TYPE_KEYED << 4 | NVME_SGL_SUB_ADDRESS,  /* 0x40 */
	NVME_SGL_KEYED_INV = NVME_SGL_TYPE_KEYED << 4 | NVME_SGL_SUB_INVALIDATE, /* 0x4f */
	NVME_SGL_KEYED_LEN_MAX = 0xffffff,
};

/* SGL1: a keyed data block (RDMA READ/WRITE by the target) or in-capsule data at an offset. */
struct nvme_sgl {
	uint8_t id;      /* descriptor identifier (type << 4 | sub type) */
	uint64_t addr;   /* memory address, or offset into the in-capsule data */
	uint32_t length; /* 24 bits when keyed */
	uint32_t key;    /* keyed only: the rkey */
};

/* A submission queue entry; read/write fields (SLBA, NLB) as the NVM command set places them. */
struct nvme_sqe {
	uint8_t opcode;
	uint8_t flags;
	uint16_t cid;
	uint32_t nsid;
	uint64_t mptr;
	struct nvme_sgl sgl;
	uint64_t slba;    /* CDW10-11 */
	uint16_t nlb;     /* CDW12 bits 15:0, 0-based: nlb + 1 blocks */
	uint16_t control; /* CDW12 bits 31:16 (FUA, LR, PRINFO) */
	uint32_t cdw13, cdw14, cdw15;
};

/* A command capsule: the SQE and the in-capsule data behind it (data points into the capsule). */
struct nvme_capsule {
	struct nvme_sqe sqe;
	const uint8_t *data; /* NULL when data_len is 0 */
	size_t data_len;     /* bytes after the SQE */
};

/* A completion queue entry. status is the 15-bit Status Field (phase bit apart). */
struct nvme_cqe {
	uint64_t result; /* DW0 | DW1 << 32: command specific */
	uint16_t sq_head;
	uint16_t sq_id;
	uint16_t cid;
	uint16_t status;
	bool phase;
};

/* Status Field pieces: status code (bits 7:0), status code type (10:8), do not retry (14). */
static inline uint8_t nvme_status_sc(uint16_t status) { return (uint8_t)status; }
static inline uint8_t nvme_status_sct(uint16_t status) { return (uint8_t)((status >> 8) & 7); }
static inline bool nvme_status_dnr(uint16_t status) { return (status >> 14) & 1; }

/*
 * nvme_sqe_encode - the 64 bytes of s into out. Rejects (RSEC_E_INVAL) flags
 * without an SGL (PSDT 00b or 11b), an SGL descriptor other than Data Block or
 * Keyed Data Block, and a keyed length over 24 bits.
 */
RSEC_MUST_CHECK int nvme_sqe_encode(const struct nvme_sqe *s, uint8_t out[static NVME_SQE_LEN]);

/*
 * nvme_sqe_decode - the first 64 of len bytes. Returns 0, or RSEC_E_PROTO
 * when len < 64, PSDT is not an SGL, or the SGL1 descriptor type is neither
 * Data Block nor Keyed Data Block, or reserved bytes of a Data Block are set.
 */
RSEC_MUST_CHECK int nvme_sqe_decode(const uint8_t *buf, size_t len, struct nvme_sqe *s);

/*
 * nvme_capsule_build - a command capsule: the SQE and, for in-capsule data
 * (SGL1 NVME_SGL_INLINE), data_len bytes of data placed at the SGL offset
 * (which must be 0) with the SGL length equal to data_len. Any other SGL
 * takes no data. *len gets the capsule size. Returns 0, RSEC_E_INVAL or
 * RSEC_E_RANGE (data over NVME_MAX_INLINE or cap).
 */
RSEC_MUST_CHECK int nvme_capsule_build(const struct nvme_sqe *s, const uint8_t *data, size_t data_len, uint8_t *buf,
				       size_t cap, size_t *len);

/*
 * nvme_capsule_parse - decode a command capsule of len bytes (a SEND's
 * payload). c->data points into buf. An in-capsule SGL must lie inside the
 * bytes after the SQE (offset + length <= len - 64); a keyed SGL means no
 * in-capsule data, so none may follow. Returns 0 or RSEC_E_PROTO.
 */
RSEC_MUST_CHECK int nvme_capsule_parse(const uint8_t *buf, size_t len, struct nvme_capsule *c);

/* nvme_cqe_encode - the 16 bytes of c into out; RSEC_E_INVAL if status exceeds 15 bits. */
RSEC_MUST_CHECK int nvme_cqe_encode(const struct nvme_cqe *c, uint8_t out[static NVME_CQE_LEN]);

/* nvme_cqe_decode - a response capsule of exactly 16 bytes. Returns 0 or RSEC_E_PROTO. */
RSEC_MUST_CHECK int nvme_cqe_decode(const uint8_t *buf, size_t len, struct nvme_cqe *c);

/* A short name of an I/O opcode ("write"), or NULL. */
const char *nvme_opcode_name(uint8_t opcode);

#endif /* RSEC_NVME_CAPSULE_H */
