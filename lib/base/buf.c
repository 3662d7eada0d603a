/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>
#include <openssl/crypto.h>

#include "buf.h"

/*
 * Like sshbuf_check_sanity, but fatal: broken cursors mean memory corruption
 * or a caller poking at internals, and carrying on would read or write out
 * of bounds.
 */
static void buf_check(const struct rsec_buf *b)
{
	if (b->rd > b->wr || b->wr > b->size || (b->data == NULL && b->size != 0))
		abort();
}

void rsec_buf_init(struct rsec_buf *b, void *mem, size_t size)
{
	if (b == NULL)
		return;
	b->data = mem;
	b->size = mem != NULL ? size : 0;
	b->rd = 0;
	b->wr = 0;
	b->read_only = false;
}

void rsec_buf_init_read(struct rsec_buf *b, const void *mem, size_t len)
{
	if (b == NULL)
		return;
	/* The cast drops const; read_only keeps every put away from mem. */
	b->data = (uint8_t *)mem;
	b->size = mem != NULL ? len : 0;
	b->rd = 0;
	b->wr = b->size;
	b->read_only = true;
}

size_t rsec_buf_remaining(const struct rsec_buf *b)
{
	if (b == NULL)
		return 0;
	buf_check(b);
	return b->wr - b->rd;
}

size_t rsec_buf_avail(const struct rsec_buf *b)
{
	if (b == NULL)
		return 0;
	buf_check(b);
	if (b->read_only)
		return 0;
	return b->size - b->wr;
}

size_t rsec_buf_written(const struct rsec_buf *b)
{
	if (b == NULL)
		return 0;
	buf_check(b);
	return b->wr;
}

/* Room for n more bytes? Compares against what is left, so n near SIZE_MAX cannot wrap. */
static RSEC_MUST_CHECK int buf_reserve(struct rsec_buf *b, size_t n)
{
	RSEC_ENSURE_REF(b);
	buf_check(b);
	RSEC_ENSURE(!b->read_only, RSEC_E_INVAL);
	RSEC_ENSURE(n <= b->size - b->wr, RSEC_E_RANGE);
	return 0;
}

/* At least n bytes left to read? */
static RSEC_MUST_CHECK int buf_need(struct rsec_buf *b, size_t n)
{
	RSEC_ENSURE_REF(b);
	buf_check(b);
	RSEC_ENSURE(n <= b->wr - b->rd, RSEC_E_RANGE);
	return 0;
}

/* Write v as n big-endian bytes (n <= 8); the caller reserved the room. */
static void buf_put_be(struct rsec_buf *b, uint64_t v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		b->data[b->wr + i] = (uint8_t)(v >> (8 * (n - 1 - i)));
	b->wr += n;
}

/* Read n big-endian bytes (n <= 8); the caller checked they are there. */
static uint64_t buf_get_be(struct rsec_buf *b, size_t n)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++)
		v = v << 8 | b->data[b->rd + i];
	b->rd += n;
	return v;
}

int rsec_buf_put_u8(struct rsec_buf *b, uint8_t v)
{
	RSEC_GUARD(buf_reserve(b, 1));
	buf_put_be(b, v, 1);
	return 0;
}

int rsec_buf_put_u16(struct rsec_buf *b, uint16_t v)
{
	RSEC_GUARD(buf_reserve(b, 2));
	buf_put_be(b, v, 2);
	return 0;
}

int rsec_buf_put_u32(struct rsec_buf *b, uint32_t v)
{
	RSEC_GUARD(buf_reserve(b, 4));
	buf_put_be(b, v, 4);
	return 0;
}

int rsec_buf_put_u64(struct rsec_buf *b, uint64_t v)
{
	RSEC_GUARD(buf_reserve(b, 8));
	buf_put_be(b, v, 8);
	return 0;
}

int rsec_buf_put_bytes(struct rsec_buf *b, const void *p, size_t n)
{
	RSEC_ENSURE(p != NULL || n == 0, RSEC_E_INVAL);
	RSEC_GUARD(buf_reserve(b, n));
	if (n == 0)
		return 0;
	/* memmove: p may alias the buffer's own memory. */
	memmove(b->data + b->wr, p, n);
	b->wr += n;
	return 0;
}

int rsec_buf_get_u8(struct rsec_buf *b, uint8_t *v)
{
	RSEC_ENSURE_REF(v);
	RSEC_GUARD(buf_need(b, 1));
	*v = (uint8_t)buf_get_be(b, 1);
	return 0;
}

int rsec_buf_get_u16(struct rsec_buf *b, uint16_t *v)
{
	RSEC_ENSURE_REF(v);
	RSEC_GUARD(buf_need(b, 2));
	*v = (uint16_t)buf_get_be(b, 2);
	return 0;
}

int rsec_buf_get_u32(struct rsec_buf *b, uint32_t *v)
{
	RSEC_ENSURE_REF(v);
	RSEC_GUARD(buf_need(b, 4));
	*v = (uint32_t)buf_get_be(b, 4);
	return 0;
}

int rsec_buf_get_u64(struct rsec_buf *b, uint64_t *v)
{
	RSEC_ENSURE_REF(v);
	RSEC_GUARD(buf_need(b, 8));
	*v = buf_get_be(b, 8);
	return 0;
}

int rsec_buf_get_bytes(struct rsec_buf *b, void *p, size_t n)
{
	RSEC_ENSURE(p != NULL || n == 0, RSEC_E_INVAL);
	RSEC_GUARD(buf_need(b, n));
	if (n == 0)
		return 0;
	memmove(p, b->data + b->rd, n);
	b->rd += n;
	return 0;
}

int rsec_buf_skip(struct rsec_buf *b, size_t n)
{
	RSEC_GUARD(buf_need(b, n));
	b->rd += n;
	return 0;
}

void rsec_buf_wipe(struct rsec_buf *b)
{
	if (b == NULL)
		return;
	buf_check(b);
	if (!b->read_only && b->size != 0)
		OPENSSL_cleanse(b->data, b->size);
	b->rd = 0;
	b->wr = 0;
}
