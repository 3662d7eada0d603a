/* SPDX-License-Identifier: MIT */
/*
 * Bounded big-endian cursors for the tools' wire codecs (bench_proto.c,
 * blk_wire.c, app_proto.c): a read or a write never passes the end of its
 * buffer, and fails instead. Header-only, so that position-independent
 * code (the nbdkit plugin's blk_wire.c) can use it as well.
 */
#ifndef RSEC_TOOLS_CURSOR_H
#define RSEC_TOOLS_CURSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Received bytes, read one guarded field at a time. */
struct cur_in {
	const uint8_t *p;
	size_t left;
};

/* A buffer being filled, one guarded field at a time. */
struct cur_out {
	uint8_t *p;
	size_t left;
};

static inline bool cur_get_be(struct cur_in *c, unsigned n, uint64_t *v)
{
	if (c->left < n)
		return false;
	*v = 0;
	for (unsigned i = 0; i < n; i++)
		*v = *v << 8 | c->p[i];
	c->p += n;
	c->left -= n;
	return true;
}

static inline bool cur_get_u8(struct cur_in *c, uint8_t *v)
{
	uint64_t x;
	if (!cur_get_be(c, 1, &x))
		return false;
	*v = (uint8_t)x;
	return true;
}

static inline bool cur_get_u16(struct cur_in *c, uint16_t *v)
{
	uint64_t x;
	if (!cur_get_be(c, 2, &x))
		return false;
	*v = (uint16_t)x;
	return true;
}

static inline bool cur_get_u32(struct cur_in *c, uint32_t *v)
{
	uint64_t x;
	if (!cur_get_be(c, 4, &x))
		return false;
	*v = (uint32_t)x;
	return true;
}

static inline bool cur_get_u64(struct cur_in *c, uint64_t *v)
{
	return cur_get_be(c, 8, v);
}

/* n reserved bytes (n <= 8) that must be zero. */
static inline bool cur_get_zero(struct cur_in *c, unsigned n)
{
	uint64_t x;
	return cur_get_be(c, n, &x) && x == 0;
}

static inline bool cur_get_bytes(struct cur_in *c, void *out, size_t n)
{
	if (c->left < n)
		return false;
	memcpy(out, c->p, n);
	c->p += n;
	c->left -= n;
	return true;
}

/* v's low n bytes at out, most significant first; returns the byte after them. The caller sized out. */
static inline uint8_t *cur_store_be(uint8_t *out, unsigned n, uint64_t v)
{
	for (unsigned i = n; i-- > 0; v >>= 8)
		out[i] = (uint8_t)v;
	return out + n;
}

static inline bool cur_put_be(struct cur_out *c, unsigned n, uint64_t v)
{
	if (c->left < n)
		return false;
	c->p = cur_store_be(c->p, n, v);
	c->left -= n;
	return true;
}

static inline bool cur_put_bytes(struct cur_out *c, const void *in, size_t n)
{
	if (c->left < n)
		return false;
	memcpy(c->p, in, n);
	c->p += n;
	c->left -= n;
	return true;
}

#endif
