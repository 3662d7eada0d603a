/* SPDX-License-Identifier: MIT */
/*
 * rdmasec-blk info, read, write: one request at a time, for scripts. read and
 * write go through blk_sync, so a session that ends is replaced within
 * --reconnect and what was in flight goes again (docs/blk-client.md).
 */
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

static int sync_open(struct blk_cli *c, struct blk_sync **y)
{
	char err[512] = "";
	int rc = blk_sync_start(&c->conn, y, err, sizeof(err));
	if (rc < 0)
		fprintf(stderr, "rdmasec-blk: %s\n", err[0] ? err : strerror(-rc));
	return rc;
}

/* A request's result: 0, or the reason printed and a negative errno. */
static int io_result(struct blk_sync *y, const char *what, uint64_t offset, int rc)
{
	if (rc < 0) {
		char why[600];
		blk_sync_error(y, why, sizeof(why));
		fprintf(stderr, "rdmasec-blk: %s at offset %llu: %s%s%s\n", what, (unsigned long long)offset,
			strerror(-rc), why[0] ? ": " : "", why);
	}
	return rc;
}

/* Sessions the request needed besides the first: said on standard error, for the operator. */
static void say_reconnects(struct blk_sync *y)
{
	char why[300];
	unsigned n = blk_sync_reconnects(y, why, sizeof(why));
	if (n)
		fprintf(stderr, "rdmasec-blk: %u new session%s after the last one ended (%s)\n", n, n == 1 ? "" : "s",
			why);
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

static bool check_range(const struct blk_open_reply *r, uint64_t offset, uint64_t length)
{
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

static int read_to_stdout(struct blk_cli *c, struct blk_sync *y, uint8_t *buf, uint32_t chunk)
{
	if (!check_range(blk_sync_info(y), c->offset, c->length))
		return 1;
	for (uint64_t done = 0; done < c->length;) {
		uint64_t left = c->length - done;
		size_t n = left < chunk ? (size_t)left : chunk;
		if (io_result(y, "read", c->offset + done, blk_sync_pread(y, buf, n, c->offset + done)) < 0)
			return 1;
		if (!write_all(STDOUT_FILENO, buf, n)) {
			fprintf(stderr, "rdmasec-blk: standard output: %s\n", strerror(errno));
			return 1;
		}
		done += n;
	}
	return 0;
}

int blk_read_main(struct blk_cli *c)
{
	if (!c->length_set) {
		fprintf(stderr, "rdmasec-blk: read needs --length\n");
		return 2;
	}
	struct blk_sync *y;
	if (sync_open(c, &y) < 0)
		return 1;
	uint32_t chunk = blk_sync_io_max(y);
	uint8_t *buf = malloc(chunk);
	int status = buf ? read_to_stdout(c, y, buf, chunk) : 1;
	say_reconnects(y);
	free(buf);
	blk_sync_stop(y);
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

/* Requests of one command each: what comes on standard input goes out once a command's worth came. */
static int write_stdin(struct blk_cli *c, struct blk_sync *y, uint8_t *buf, uint32_t chunk)
{
	const struct blk_open_reply *r = blk_sync_info(y);
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
		if (!check_range(r, c->offset + done, (uint64_t)got))
			return 1;
		uint64_t at = c->offset + done;
		if (io_result(y, "write", at, blk_sync_pwrite(y, buf, (size_t)got, at, c->fua)) < 0)
			return 1;
		done += (uint64_t)got;
	}
	if (c->length_set && done != c->length) {
		fprintf(stderr, "rdmasec-blk: standard input ended after %llu of --length %llu bytes\n",
			(unsigned long long)done, (unsigned long long)c->length);
		return 1;
	}
	return (r->flags & BLK_EXPORT_FLUSH) && io_result(y, "flush", 0, blk_sync_flush(y)) < 0 ? 1 : 0;
}

int blk_write_main(struct blk_cli *c)
{
	struct blk_sync *y;
	if (sync_open(c, &y) < 0)
		return 1;
	uint32_t chunk = blk_sync_io_max(y);
	uint8_t *buf = malloc(chunk);
	int status = buf ? write_stdin(c, y, buf, chunk) : 1;
	say_reconnects(y);
	free(buf);
	blk_sync_stop(y);
	return status;
}
