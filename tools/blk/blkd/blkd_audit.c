/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blkd_audit.h"
#include "clock.h"

#define LINE_MAX_BYTES 4096
#define BATCH_BYTES (64u << 10) /* I/O records held for one write: a turn's worth at any queue depth */

static int audit_fd = -1;
static uint64_t lost;
static struct {
	char buf[BATCH_BYTES];
	size_t len;
	unsigned records;
} batch;

int audit_open(const char *path)
{
	if (!path || !path[0])
		return 0;
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	audit_fd = fd;
	return 0;
}

void audit_close(void)
{
	audit_flush();
	if (audit_fd >= 0)
		close(audit_fd);
	audit_fd = -1;
}

uint64_t audit_errors(void)
{
	return lost;
}

struct line {
	char buf[LINE_MAX_BYTES];
	size_t len;
	bool cut;
};

/* Record text is built by appending (the I/O records are on every command's path): printf only for rare parts. */
static void put_n(struct line *l, const char *s, size_t n)
{
	if (l->cut || n >= sizeof(l->buf) - l->len) {
		l->cut = true;
		return;
	}
	memcpy(l->buf + l->len, s, n);
	l->len += n;
}

static void put_lit(struct line *l, const char *s)
{
	put_n(l, s, strlen(s));
}

static void put_u64(struct line *l, uint64_t v)
{
	char d[20];
	size_t i = sizeof(d);
	do
		d[--i] = (char)('0' + v % 10);
	while (v /= 10);
	put_n(l, d + i, sizeof(d) - i);
}

/* A JSON string: quotes, backslashes, control and non-ASCII bytes escaped (a peer chose some of them). */
static void put_str(struct line *l, const char *key, const char *s)
{
	put_lit(l, ",\"");
	put_lit(l, key);
	put_lit(l, "\":");
	if (!s) {
		put_lit(l, "null");
		return;
	}
	put_lit(l, "\"");
	while (*s && !l->cut) {
		size_t plain = 0;
		for (unsigned char ch; (ch = (unsigned char)s[plain]) >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\';)
			plain++;
		put_n(l, s, plain);
		s += plain;
		if (!*s)
			break;
		unsigned char ch = (unsigned char)*s++;
		char esc[8];
		int n = ch == '"' || ch == '\\' ? snprintf(esc, sizeof(esc), "\\%c", ch)
						 : snprintf(esc, sizeof(esc), "\\u%04x", ch);
		put_n(l, esc, (size_t)n);
	}
	put_lit(l, "\"");
}

static void start(struct line *l, const char *event, const struct audit_who *w)
{
	char when[CLOCK_STAMP_LEN];
	l->len = 0;
	l->cut = false;
	put_lit(l, "{\"time\":\"");
	put_lit(l, clock_utc_stamp(when));
	put_lit(l, "\",\"event\":\"");
	put_lit(l, event);
	put_lit(l, "\",\"role\":\"target\",\"session\":");
	put_u64(l, w->session);
	put_str(l, "peer", w->peer);
	if (w->peer_addr && w->peer_addr[0])
		put_str(l, "peer_addr", w->peer_addr);
	if (w->export_name)
		put_str(l, "export", w->export_name);
}

/* Whole lines in one write(2) (O_APPEND): lines of other writers of the file never land inside ours. */
static void append(const char *buf, size_t len, unsigned records)
{
	ssize_t n;
	do
		n = write(audit_fd, buf, len);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)len)
		lost += records;
}

void audit_flush(void)
{
	if (batch.len)
		append(batch.buf, batch.len, batch.records);
	batch.len = 0;
	batch.records = 0;
}

/* The record ends: into the batch, or (batched false) after the batch, at once. */
static void finish(struct line *l, bool batched)
{
	if (audit_fd < 0)
		return;
	put_lit(l, "}\n");
	if (l->cut) {
		lost++;
		return;
	}
	if (!batched || batch.len + l->len > sizeof(batch.buf))
		audit_flush();
	if (!batched) {
		append(l->buf, l->len, 1);
		return;
	}
	memcpy(batch.buf + batch.len, l->buf, l->len);
	batch.len += l->len;
	batch.records++;
}

void audit_open_result(const struct audit_who *w, bool write, const char *result, const char *reason)
{
	struct line l;
	start(&l, "blk_open", w);
	put_lit(&l, write ? ",\"mode\":\"rw\"" : ",\"mode\":\"ro\"");
	put_str(&l, "result", result);
	if (reason)
		put_str(&l, "reason", reason);
	finish(&l, false);
}

void audit_io(const struct audit_who *w, const char *op, unsigned queue, unsigned cid, uint64_t offset,
	      uint32_t length, bool fua, const char *result)
{
	struct line l;
	start(&l, "blk_io", w);
	put_lit(&l, ",\"op\":\"");
	put_lit(&l, op);
	put_lit(&l, "\",\"queue\":");
	put_u64(&l, queue);
	put_lit(&l, ",\"cid\":");
	put_u64(&l, cid);
	put_lit(&l, ",\"offset\":");
	put_u64(&l, offset);
	put_lit(&l, ",\"length\":");
	put_u64(&l, length);
	if (fua)
		put_lit(&l, ",\"fua\":true");
	put_str(&l, "result", result);
	finish(&l, true);
}

void audit_violation(const struct audit_who *w, unsigned queue, const char *reason)
{
	struct line l;
	start(&l, "blk_violation", w);
	put_lit(&l, ",\"queue\":");
	put_u64(&l, queue);
	put_str(&l, "result", "closed");
	put_str(&l, "reason", reason);
	finish(&l, false);
}

void audit_session_end(const struct audit_who *w, const char *reason)
{
	struct line l;
	start(&l, "blk_close", w);
	put_str(&l, "result", "closed");
	put_str(&l, "reason", reason);
	finish(&l, false);
}
