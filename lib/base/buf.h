/* SPDX-License-Identifier: MIT */
/*
 * The one bounded buffer for control-channel bytes (in the spirit of s2n's
 * stuffer and OpenSSH's sshbuf). A buffer borrows caller memory of a fixed
 * size and keeps two cursors, rd <= wr <= size: bytes in [rd, wr) are left to
 * read, [wr, size) is room to write. Integers are big-endian on the wire.
 *
 * Every call first checks that invariant and abort()s if it is broken: a
 * corrupt buffer is a bug, not an input error. A failed get/put/skip leaves
 * both cursors and the destination untouched.
 */
#ifndef RSEC_BUF_H
#define RSEC_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "result.h"

struct rsec_buf {
	uint8_t *data;
	size_t size;
	size_t rd;
	size_t wr;
	bool read_only;
};

/* An empty, writable buffer over mem[0..size). mem NULL gives a 0-byte buffer. */
void rsec_buf_init(struct rsec_buf *b, void *mem, size_t size);

/* A full, read-only buffer over mem[0..len): every byte is left to read, puts fail. */
void rsec_buf_init_read(struct rsec_buf *b, const void *mem, size_t len);

/* Bytes left to read (wr - rd); 0 for NULL. */
size_t rsec_buf_remaining(const struct rsec_buf *b);

/* Room left to write (size - wr); 0 for NULL or a read-only buffer. */
size_t rsec_buf_avail(const struct rsec_buf *b);

/* Bytes written so far (wr): the length of what an encoder produced; 0 for NULL. */
size_t rsec_buf_written(const struct rsec_buf *b);

/*
 * Append a big-endian integer or n raw bytes.
 * Returns 0, RSEC_E_INVAL (NULL, or read-only buffer), RSEC_E_RANGE (no room).
 */
RSEC_MUST_CHECK int rsec_buf_put_u8(struct rsec_buf *b, uint8_t v);
RSEC_MUST_CHECK int rsec_buf_put_u16(struct rsec_buf *b, uint16_t v);
RSEC_MUST_CHECK int rsec_buf_put_u32(struct rsec_buf *b, uint32_t v);
RSEC_MUST_CHECK int rsec_buf_put_u64(struct rsec_buf *b, uint64_t v);
/* p may be NULL only when n is 0. */
RSEC_MUST_CHECK int rsec_buf_put_bytes(struct rsec_buf *b, const void *p, size_t n);

/*
 * Consume a big-endian integer or n raw bytes.
 * Returns 0, RSEC_E_INVAL (NULL), RSEC_E_RANGE (fewer bytes left than asked).
 */
RSEC_MUST_CHECK int rsec_buf_get_u8(struct rsec_buf *b, uint8_t *v);
RSEC_MUST_CHECK int rsec_buf_get_u16(struct rsec_buf *b, uint16_t *v);
RSEC_MUST_CHECK int rsec_buf_get_u32(struct rsec_buf *b, uint32_t *v);
RSEC_MUST_CHECK int rsec_buf_get_u64(struct rsec_buf *b, uint64_t *v);
/* p may be NULL only when n is 0. */
RSEC_MUST_CHECK int rsec_buf_get_bytes(struct rsec_buf *b, void *p, size_t n);

/* Consume n bytes without copying them. Returns 0, RSEC_E_INVAL, RSEC_E_RANGE. */
RSEC_MUST_CHECK int rsec_buf_skip(struct rsec_buf *b, size_t n);

/*
 * Reset both cursors to 0 and, for a writable buffer, OPENSSL_cleanse all of
 * its memory. Read-only memory belongs to someone else (and may be truly
 * const), so it is left alone. NULL is a no-op.
 */
void rsec_buf_wipe(struct rsec_buf *b);

#endif /* RSEC_BUF_H */
