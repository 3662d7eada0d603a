/* SPDX-License-Identifier: MIT */
/*
 * mem-access (ReDMArk A3): from two of the attacker's own registrations at
 * the victim (rkey and address), the rxe model (rkey = index << 8 | random
 * byte, index sequential device-wide; buffers at a fixed stride, MR VA = the
 * process address) predicts where older registrations of the same victim
 * sit, and lists (rkey, address) guesses in the order to try them. Pure: no
 * verbs, no I/O. Also parses the naive victim's plaintext exchange line.
 */
#ifndef RSEC_MEMACC_MODEL_H
#define RSEC_MEMACC_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* rxe 6.1 pool ranges (rxe_param.h): MRs 1..0x80000, memory windows 0x80001..0x100000. */
#define MEMACC_MR_INDEX_MIN 0x1u
#define MEMACC_MR_INDEX_MAX 0x80000u
#define MEMACC_MW_INDEX_MIN 0x80001u
#define MEMACC_MW_INDEX_MAX 0x100000u
#define MEMACC_KEYS 256u
#define MEMACC_MAX_DISTANCE 64u
#define MEMACC_MAX_ADDR_VARIANTS 9u

struct memacc_model {
	uint32_t own_rkey;     /* the first of the attacker's own registrations */
	uint64_t own_addr;
	int32_t index_step;    /* index difference between two consecutive registrations (rxe: +1) */
	int64_t stride;        /* address difference between them (V4: fixed) */
	uint32_t distance;     /* try the 1 .. distance registrations made before own_rkey */
	uint32_t addr_variants; /* 1: the predicted address only; 3: also +-granule; 5: +-2 granules ... */
	uint64_t granule;      /* address step of the variants (e.g. a page) */
	uint64_t offset;       /* byte offset added to every guessed address */
	/* derived by memacc_model_init */
	uint32_t index_min, index_max;
	uint64_t count;        /* candidates: distance * addr_variants * 256 */
};

struct memacc_candidate {
	uint32_t rkey;
	uint64_t addr;
	uint32_t distance;     /* 1: the registration just before the attacker's */
	int32_t variant;       /* 0, -1, +1, -2, +2 ... granules off the predicted address */
};

/*
 * Derive the model from two of the attacker's own consecutive registrations.
 * False (with *why) if they do not fit the model: different pools, an index
 * step of 0, a stride of 0, or an rkey whose index is outside every pool.
 */
bool memacc_calibrate(uint32_t rkey1, uint64_t addr1, uint32_t rkey2, uint64_t addr2, int32_t *index_step,
		      int64_t *stride, const char **why);

/* Check m's parameters and fill the derived fields; false (with *why) if out of range. */
bool memacc_model_init(struct memacc_model *m, const char **why);

/*
 * Candidate k (0 <= k < m->count): distance 1 first, then 2 ...; within a
 * distance the predicted address first, then -1, +1, -2 ... granules; within
 * an address the 256 key bytes in order. The index wraps inside its pool as
 * rxe's cyclic allocator does; addresses wrap modulo 2^64. False if k is out
 * of range.
 */
bool memacc_candidate(const struct memacc_model *m, uint64_t k, struct memacc_candidate *c);

/* The naive victim's exchange line: "NAIVE qpn=%06x psn=%06x gid=<32 hex> rkey=%08x addr=%016x len=N". */
struct naive_line {
	uint32_t qpn, psn, rkey;
	uint64_t addr;
	uint32_t len;
	uint8_t gid[16];
};

/* Parse one line (without its newline); false (with *why) if it is not exactly that format. */
bool naive_line_parse(const char *s, size_t n, struct naive_line *out, const char **why);
/* Format l (and a newline) into buf; returns the length, or 0 if cap is too small. */
size_t naive_line_format(const struct naive_line *l, char *buf, size_t cap);

#endif /* RSEC_MEMACC_MODEL_H */
