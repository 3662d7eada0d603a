/* SPDX-License-Identifier: MIT */
/* rdmasec-blk info, read, write: one command at a time, for scripts. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "blk_cli.h"

int blk_cli_open(struct blk_cli *c, struct blk_session **s)
{
	char err[512] = "";
	int rc = blk_session_open(&c->conn, s, err, sizeof(err));
	if (rc < 0)
		fprintf(stderr, "rdmasec-blk: %s\n", err[0] ? err : strerror(-rc));
	return rc;
}

/* One command, waited for: 0 or a negative errno (the reason printed). */
static int io_wait(struct blk_session *s, const struct blk_io *io)
{
	int rc = blk_queue_submit(s, 0, io);
	struct blk_done d;
	while (rc == 0) {
		int n = blk_session_poll(s, &d, 1, 1000);
		if (n < 0)
			rc = n;
		else if (n == 1)
			rc = d.error ? -d.error : 1;
	}
	if (rc < 0)
		fprintf(stderr, "rdmasec-blk: %s at offset %llu: %s%s%s\n", blk_opcode_name(io->opcode),
			(unsigned long long)io->offset, strerror(-rc), *blk_session_error(s) ? ": " : "",
			blk_session_error(s));
	return rc < 0 ? rc : 0;
}

int blk_info_main(struct blk_cli *c)
{
	struct blk_session *s;
	if (blk_cli_open(c, &s) < 0)
		return 1;
	const struct blk_open_reply *r = blk_session_info(s);
	printf("target: %s\nexport: %s\nsize: %llu\nblock_size: %u\nflags:%s%s%s\nqueue_depth: %u\nqueues: %u\n"
	       "max_transfer: %u\nmax_inline: %u\n",
	       blk_session_peer(s), c->conn.export_name, (unsigned long long)r->size, r->block_size,
	       r->flags & BLK_EXPORT_READ_ONLY ? " read-only" : " read-write", r->flags & BLK_EXPORT_FLUSH ? " flush" : "",
	       r->flags & BLK_EXPORT_FUA ? " fua" : "", r->queue_depth, r->queues, r->max_transfer, r->max_inline);
	blk_session_close(s);
	return 0;
}

static bool check_range(struct blk_session *s, uint64_t offset, uint64_t length)
{
	const struct blk_open_reply *r = blk_session_info(s);
	if (offset % r->block_size || length % r->block_size || offset > r->size || length > r->size - offset) {
		fprintf(stderr,
			"rdmasec-blk: --offset %llu --length %llu: multiples of the block size %u within the export's %llu "
			"bytes\n",
			(unsigned long long)offset, (unsigned long long)length, r->block_size, (unsigned long long)r->size);
		return false;
	}
	return true;
}

static bool write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
	}
	return true;
}

int blk_read_main(struct blk_cli *c)
{
	if (!c->length_set) {
		fprintf(stderr, "rdmasec-blk: read needs --length\n");
		return 2;
	}
	struct blk_session *s;
	if (blk_cli_open(c, &s) < 0)
		return 1;
	uint32_t chunk = blk_session_io_max(s);
	uint8_t *buf = malloc(chunk);
	int status = buf && check_range(s, c->offset, c->length) ? 0 : 1;
	for (uint64_t done = 0; status == 0 && done < c->length;) {
		uint64_t left = c->length - done;
		struct blk_io io = { .opcode = BLK_OP_READ, .offset = c->offset + done,
				     .length = (uint32_t)(left < chunk ? left : chunk), .buf = buf };
		if (io_wait(s, &io) < 0)
			status = 1;
		else if (!write_all(STDOUT_FILENO, buf, io.length)) {
			fprintf(stderr, "rdmasec-blk: standard output: %s\n", strerror(errno));
			status = 1;
		}
		done += io.length;
	}
	free(buf);
	blk_session_close(s);
	return status;
}

/* Up to cap bytes of standard input; fewer only at its end. */
static ssize_t read_full(uint8_t *p, size_t cap)
{
	size_t got = 0;
	while (got < cap) {
		ssize_t r = read(STDIN_FILENO, p + got, cap - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

static int write_stdin(struct blk_cli *c, struct blk_session *s, uint8_t *buf, uint32_t chunk)
{
	const struct blk_open_reply *r = blk_session_info(s);
	uint64_t done = 0;
	for (;;) {
		uint64_t want = c->length_set ? c->length - done : chunk;
		ssize_t got = read_full(buf, want < chunk ? want : chunk);
		if (got < 0) {
			fprintf(stderr, "rdmasec-blk: standard input: %s\n", strerror(errno));
			return 1;
		}
		if (got == 0)
			break;
		if (!check_range(s, c->offset + done, (uint64_t)got))
			return 1;
		struct blk_io io = { .opcode = BLK_OP_WRITE, .flags = c->fua ? BLK_CMD_FUA : 0, .offset = c->offset + done,
				     .length = (uint32_t)got, .buf = buf };
		if (io_wait(s, &io) < 0)
			return 1;
		done += (uint64_t)got;
	}
	if (c->length_set && done != c->length) {
		fprintf(stderr, "rdmasec-blk: standard input ended after %llu of --length %llu bytes\n",
			(unsigned long long)done, (unsigned long long)c->length);
		return 1;
	}
	struct blk_io flush = { .opcode = BLK_OP_FLUSH };
	return (r->flags & BLK_EXPORT_FLUSH) && io_wait(s, &flush) < 0 ? 1 : 0;
}

int blk_write_main(struct blk_cli *c)
{
	struct blk_session *s;
	if (blk_cli_open(c, &s) < 0)
		return 1;
	uint32_t chunk = blk_session_io_max(s);
	uint8_t *buf = malloc(chunk);
	int status = buf ? write_stdin(c, s, buf, chunk) : 1;
	free(buf);
	blk_session_close(s);
	return status;
}
