/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit.h"
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

__attribute__((format(printf, 2, 3))) static void put(struct line *l, const char *fmt, ...)
{
	if (l->cut)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(l->buf + l->len, sizeof(l->buf) - l->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(l->buf) - l->len)
		l->cut = true;
	else
		l->len += (size_t)n;
}

/* A JSON string: quotes, backslashes, control and non-ASCII bytes escaped (a peer chose some of them). */
static void put_str(struct line *l, const char *key, const char *s)
{
	put(l, ",\"%s\":", key);
	if (!s) {
		put(l, "null");
		return;
	}
	put(l, "\"");
	for (; *s && !l->cut; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			put(l, "\\%c", ch);
		else if (ch < 0x20 || ch >= 0x7f)
			put(l, "\\u%04x", ch);
		else
			put(l, "%c", ch);
	}
	put(l, "\"");
}

static void start(struct line *l, const char *event, const struct audit_who *w)
{
	char when[CLOCK_STAMP_LEN];
	l->len = 0;
	l->cut = false;
	put(l, "{\"time\":\"%s\",\"event\":\"%s\",\"role\":\"target\",\"session\":%llu", clock_utc_stamp(when),
	    event, (unsigned long long)w->session);
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
	put(l, "}\n");
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
	put(&l, ",\"mode\":\"%s\"", write ? "rw" : "ro");
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
	put(&l, ",\"op\":\"%s\",\"queue\":%u,\"cid\":%u,\"offset\":%llu,\"length\":%u%s", op, queue, cid,
	    (unsigned long long)offset, length, fua ? ",\"fua\":true" : "");
	put_str(&l, "result", result);
	finish(&l, true);
}

void audit_violation(const struct audit_who *w, unsigned queue, const char *reason)
{
	struct line l;
	start(&l, "blk_violation", w);
	put(&l, ",\"queue\":%u", queue);
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
