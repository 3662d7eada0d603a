/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <linux/fs.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "store.h"

static uint16_t status_of(int err)
{
	return err == ENOSPC || err == EDQUOT || err == EFBIG ? BLK_S_NO_SPACE : BLK_S_IO;
}

/* The directory entry of a file we created, on stable storage: without it a crash may lose the file. */
static int sync_parent(const char *path, char *err, size_t errlen)
{
	char copy[BLKD_PATH_LEN];
	snprintf(copy, sizeof(copy), "%s", path);
	const char *dir = dirname(copy);
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc = fd >= 0 ? fsync(fd) : -1;
	if (rc != 0)
		snprintf(err, errlen, "cannot sync directory '%s': %s", dir, strerror(errno));
	if (fd >= 0)
		close(fd);
	return rc;
}

/* A new file at its size, and its name, on stable storage before anyone writes to it. */
static int create_file(struct store *s, const struct blkd_export_conf *x, int flags, char *err, size_t errlen)
{
	s->fd = open(x->path, flags | O_CREAT | O_EXCL, 0600);
	if (s->fd < 0)
		return 0; /* the caller reports it */
	if (ftruncate(s->fd, (off_t)x->size) != 0 || fsync(s->fd) != 0) {
		snprintf(err, errlen, "cannot size '%s' to %llu bytes: %s", x->path, (unsigned long long)x->size,
			 strerror(errno));
		return -1;
	}
	return sync_parent(x->path, err, errlen);
}

static bool same_file(int a, int b)
{
	struct stat sa, sb;
	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static int open_fds(struct store *s, const struct blkd_export_conf *x, char *err, size_t errlen)
{
	int flags = (x->read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC | O_NOFOLLOW;
	s->fd = open(x->path, flags);
	if (s->fd < 0 && errno == ENOENT && !x->read_only && x->size && create_file(s, x, flags, err, errlen) < 0)
		return -1;
	if (s->fd < 0) {
		snprintf(err, errlen, "cannot open '%s': %s", x->path, strerror(errno));
		return -1;
	}
	/* tmpfs and some others refuse O_DIRECT: buffered I/O then, still fdatasync'd on FLUSH. */
	s->fd_direct = x->direct ? open(x->path, flags | O_DIRECT) : -1;
	/* Both must be the same inode: the path may have been replaced in between. */
	if (s->fd_direct >= 0 && !same_file(s->fd, s->fd_direct)) {
		snprintf(err, errlen, "'%s' was replaced while it was being opened", x->path);
		return -1;
	}
	return 0;
}

static int store_size(struct store *s, const struct blkd_export_conf *x, char *err, size_t errlen)
{
	struct stat st;
	if (fstat(s->fd, &st) != 0) {
		snprintf(err, errlen, "cannot stat '%s': %s", x->path, strerror(errno));
		return -1;
	}
	uint64_t have;
	if (S_ISBLK(st.st_mode)) {
		s->is_device = true;
		if (ioctl(s->fd, BLKGETSIZE64, &have) != 0) {
			snprintf(err, errlen, "cannot size device '%s': %s", x->path, strerror(errno));
			return -1;
		}
	} else if (S_ISREG(st.st_mode)) {
		have = (uint64_t)st.st_size;
	} else {
		snprintf(err, errlen, "'%s' is neither a regular file nor a block device", x->path);
		return -1;
	}
	/* A regular file grows to the size asked for (sparse); a device must hold it. */
	if (x->size && have < x->size && !s->is_device && !x->read_only) {
		if (ftruncate(s->fd, (off_t)x->size) != 0 || fsync(s->fd) != 0) {
			snprintf(err, errlen, "cannot grow '%s' to %llu bytes: %s", x->path,
				 (unsigned long long)x->size, strerror(errno));
			return -1;
		}
		have = x->size;
	}
	s->size = x->size ? x->size : have - have % x->block_size;
	if (s->size > have || s->size == 0) {
		snprintf(err, errlen, "'%s' holds %llu bytes, fewer than the export's %llu", x->path,
			 (unsigned long long)have, (unsigned long long)s->size);
		return -1;
	}
	return 0;
}

int store_open(struct store *s, const struct blkd_export_conf *x, char *err, size_t errlen)
{
	s->fd = s->fd_direct = -1;
	atomic_init(&s->direct_refused, false);
	atomic_init(&s->sync_failed, false);
	atomic_init(&s->nowait_read_unsupported, false);
	atomic_init(&s->nowait_write_unsupported, false);
	s->is_device = false;
	if (open_fds(s, x, err, errlen) < 0 || store_size(s, x, err, errlen) < 0) {
		store_close(s);
		return -1;
	}
	return 0;
}

void store_close(struct store *s)
{
	if (s->fd_direct >= 0)
		close(s->fd_direct);
	if (s->fd >= 0)
		close(s->fd);
	s->fd = s->fd_direct = -1;
}

static int io_fd(struct store *s)
{
	return s->fd_direct >= 0 && !atomic_load(&s->direct_refused) ? s->fd_direct : s->fd;
}

/*
 * O_DIRECT refuses what is not aligned to the device's own block: fall back to
 * the page cache for good. The descriptor stays open: another worker may be using it.
 */
static bool direct_refused(struct store *s, int fd, int err)
{
	if (err != EINVAL || fd != s->fd_direct || fd < 0)
		return false;
	atomic_store(&s->direct_refused, true);
	return true;
}

uint16_t store_read(struct store *s, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;
	while (done < len) {
		int fd = io_fd(s);
		ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && direct_refused(s, fd, errno))
			continue;
		if (n < 0)
			return status_of(errno);
		if (n == 0) /* a file cut short under us: the rest reads as zeroes */
			break;
		done += (size_t)n;
	}
	memset((char *)buf + done, 0, len - done);
	return BLK_S_OK;
}

uint16_t store_write(struct store *s, const void *buf, size_t len, uint64_t off, bool fua)
{
	size_t done = 0;
	while (done < len) {
		int fd = io_fd(s);
		ssize_t n = pwrite(fd, (const char *)buf + done, len - done, (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && direct_refused(s, fd, errno))
			continue;
		if (n < 0)
			return status_of(errno);
		if (n == 0)
			return BLK_S_NO_SPACE;
		done += (size_t)n;
	}
	return fua ? store_flush(s) : BLK_S_OK;
}

/*
 * Linux reports a failed writeback once, and may drop the dirty pages it
 * failed to write: a later fdatasync can succeed with writes lost. So once
 * one failed, no FLUSH or FUA write of this store succeeds again (until the
 * export is opened anew, by a restart).
 */
uint16_t store_flush(struct store *s)
{
	if (atomic_load(&s->sync_failed))
		return BLK_S_IO;
	/* One inode behind both descriptors (open_fds checks): this reaches what either wrote. */
	while (fdatasync(s->fd) != 0) {
		if (errno != EINTR) {
			uint16_t st = status_of(errno);
			atomic_store(&s->sync_failed, true);
			return st;
		}
	}
	return BLK_S_OK;
}

/*
 * One RWF_NOWAIT attempt of the whole transfer. Anything but all of it
 * (EAGAIN: it would wait; EOPNOTSUPP: this file never does it; a short
 * transfer; an error the blocking path reports with its own retries) sends
 * the caller to that path: repeating a read or a write of the same bytes at
 * the same place loses nothing.
 */
static bool nowait_io(struct store *s, atomic_bool *unsupported, bool write, void *buf, size_t len, uint64_t off)
{
	if (atomic_load(unsupported))
		return false;
	struct iovec v = { .iov_base = buf, .iov_len = len };
	int fd = io_fd(s);
	ssize_t n = write ? pwritev2(fd, &v, 1, (off_t)off, RWF_NOWAIT) : preadv2(fd, &v, 1, (off_t)off, RWF_NOWAIT);
	if (n < 0 && errno == EOPNOTSUPP)
		atomic_store(unsupported, true);
	return n == (ssize_t)len;
}

bool store_read_nowait(struct store *s, void *buf, size_t len, uint64_t off, uint16_t *status)
{
	if (!nowait_io(s, &s->nowait_read_unsupported, false, buf, len, off))
		return false;
	*status = BLK_S_OK;
	return true;
}

bool store_write_nowait(struct store *s, const void *buf, size_t len, uint64_t off, uint16_t *status)
{
	if (!nowait_io(s, &s->nowait_write_unsupported, true, (void *)buf, len, off))
		return false;
	*status = BLK_S_OK;
	return true;
}
