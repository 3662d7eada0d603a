/* SPDX-License-Identifier: MIT */
/*
 * rdmasec-blkd's backing store (tools/blk/blkd/store.c), with the system
 * calls that matter wrapped (-Wl,--wrap, tests/CMakeLists.txt): a failing
 * fdatasync, a path replaced between the store's two opens, the fsyncs of a
 * file it creates, RWF_NOWAIT transfers the kernel would make wait, never
 * does, or cuts short.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <cmocka.h>

#include "store.h"

int __real_open(const char *path, int flags, ...);
int __real_fdatasync(int fd);
int __real_fsync(int fd);
ssize_t __real_preadv2(int fd, const struct iovec *v, int n, off_t off, int flags);
ssize_t __real_pwritev2(int fd, const struct iovec *v, int n, off_t off, int flags);

static int fail_syncs;            /* fdatasync calls still to fail with EIO */
static const char *replace_from;  /* renamed over the path just before the O_DIRECT open */
static struct stat synced[8];     /* what fsync was called on */
static unsigned n_synced;
/* RWF_NOWAIT transfers: 0 the kernel's answer, else this errno, or (NOWAIT_SHORT) half the bytes said done. */
#define NOWAIT_SHORT (-1)
static int nowait_answer;
static unsigned nowait_calls;

int __wrap_open(const char *path, int flags, ...);
int __wrap_open(const char *path, int flags, ...)
{
	mode_t mode = 0;
	if (flags & O_CREAT) {
		va_list ap;
		va_start(ap, flags);
		mode = (mode_t)va_arg(ap, int);
		va_end(ap);
	}
	if ((flags & O_DIRECT) && replace_from) {
		if (rename(replace_from, path) != 0)
			return -1;
		replace_from = NULL;
		flags &= ~O_DIRECT; /* the test's file system may refuse O_DIRECT: the store cannot tell */
	}
	return __real_open(path, flags, mode);
}

int __wrap_fdatasync(int fd);
int __wrap_fdatasync(int fd)
{
	if (fail_syncs) {
		fail_syncs--;
		errno = EIO;
		return -1;
	}
	return __real_fdatasync(fd);
}

int __wrap_fsync(int fd);
int __wrap_fsync(int fd)
{
	if (n_synced < sizeof(synced) / sizeof(synced[0]) && fstat(fd, &synced[n_synced]) == 0)
		n_synced++;
	return __real_fsync(fd);
}

static ssize_t nowait_io(bool write, int fd, const struct iovec *v, int n, off_t off, int flags)
{
	nowait_calls++;
	assert_true(flags & RWF_NOWAIT);
	if (nowait_answer == NOWAIT_SHORT)
		return (ssize_t)(v->iov_len / 2); /* as if cut short: what the blocking path does again */
	if (nowait_answer) {
		errno = nowait_answer;
		return -1;
	}
	return write ? __real_pwritev2(fd, v, n, off, flags) : __real_preadv2(fd, v, n, off, flags);
}

ssize_t __wrap_preadv2(int fd, const struct iovec *v, int n, off_t off, int flags);
ssize_t __wrap_preadv2(int fd, const struct iovec *v, int n, off_t off, int flags)
{
	return nowait_io(false, fd, v, n, off, flags);
}

ssize_t __wrap_pwritev2(int fd, const struct iovec *v, int n, off_t off, int flags);
ssize_t __wrap_pwritev2(int fd, const struct iovec *v, int n, off_t off, int flags)
{
	return nowait_io(true, fd, v, n, off, flags);
}

struct fixture {
	char dir[64];
	char path[128];
	struct blkd_export_conf x;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/test_blkd_store.XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->path, sizeof(f->path), "%s/disk.img", f->dir);
	snprintf(f->x.name, sizeof(f->x.name), "d");
	snprintf(f->x.path, sizeof(f->x.path), "%s", f->path);
	f->x.size = 1u << 20;
	f->x.block_size = 4096;
	fail_syncs = 0;
	replace_from = NULL;
	n_synced = 0;
	nowait_answer = 0;
	nowait_calls = 0;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char other[160];
	snprintf(other, sizeof(other), "%s/other.img", f->dir);
	unlink(other);
	unlink(f->path);
	rmdir(f->dir);
	free(f);
	return 0;
}

/* One failed fdatasync fails every later FLUSH and FUA write: the kernel reports it once only. */
static void sync_error_sticks(void **state)
{
	struct fixture *f = *state;
	struct store st;
	char err[256] = "";
	if (store_open(&st, &f->x, err, sizeof(err)) != 0)
		fail_msg("store_open: %s", err);
	static uint8_t block[4096];
	assert_int_equal(store_flush(&st), BLK_S_OK);
	assert_int_equal(store_write(&st, block, sizeof(block), 0, false), BLK_S_OK);
	fail_syncs = 1;
	assert_int_equal(store_flush(&st), BLK_S_IO);
	assert_int_equal(fail_syncs, 0);
	/* fdatasync would succeed now: the writes it lost must not be reported safe. */
	assert_int_equal(store_flush(&st), BLK_S_IO);
	assert_int_equal(store_write(&st, block, sizeof(block), 4096, true), BLK_S_IO);
	/* A plain write still reaches the page cache, and a read still works. */
	assert_int_equal(store_write(&st, block, sizeof(block), 8192, false), BLK_S_OK);
	assert_int_equal(store_read(&st, block, sizeof(block), 0), BLK_S_OK);
	store_close(&st);
	/* Opened anew (a restart), the store flushes again. */
	assert_int_equal(store_open(&st, &f->x, err, sizeof(err)), 0);
	assert_int_equal(store_flush(&st), BLK_S_OK);
	store_close(&st);
}

/*
 * A transfer the kernel would make wait (EAGAIN) or cut short is not done without waiting, and is tried
 * again next time; one the file never does without waiting (EOPNOTSUPP) is never tried again. What was
 * done either way is what the blocking path reads.
 */
static void nowait_falls_back(void **state)
{
	struct fixture *f = *state;
	struct store st;
	char err[256] = "";
	f->x.direct = false; /* the page cache: any file system the test runs on */
	if (store_open(&st, &f->x, err, sizeof(err)) != 0)
		fail_msg("store_open: %s", err);
	static uint8_t block[4096], back[4096];
	memset(block, 0x5a, sizeof(block));
	uint16_t status = 0xffff;
	nowait_answer = EAGAIN;
	assert_false(store_write_nowait(&st, block, sizeof(block), 8192, &status));
	assert_false(store_read_nowait(&st, back, sizeof(back), 8192, &status));
	nowait_answer = NOWAIT_SHORT;
	assert_false(store_write_nowait(&st, block, sizeof(block), 8192, &status));
	assert_false(store_read_nowait(&st, back, sizeof(back), 8192, &status));
	assert_int_equal(status, 0xffff);
	assert_int_equal(nowait_calls, 4);
	/* The blocking path does the whole transfer again. */
	assert_int_equal(store_write(&st, block, sizeof(block), 8192, false), BLK_S_OK);
	/* The kernel's own answer: done, and the bytes are the store's; or not (tmpfs never does it). */
	nowait_answer = 0;
	memset(back, 0, sizeof(back));
	if (store_read_nowait(&st, back, sizeof(back), 8192, &status)) {
		assert_int_equal(status, BLK_S_OK);
		assert_memory_equal(back, block, sizeof(block));
	}
	nowait_answer = EOPNOTSUPP;
	nowait_calls = 0;
	assert_false(store_read_nowait(&st, back, sizeof(back), 0, &status));
	assert_false(store_read_nowait(&st, back, sizeof(back), 0, &status));
	assert_int_equal(nowait_calls, 1);
	assert_false(store_write_nowait(&st, block, sizeof(block), 0, &status));
	assert_false(store_write_nowait(&st, block, sizeof(block), 0, &status));
	assert_int_equal(nowait_calls, 2);
	assert_int_equal(store_read(&st, back, sizeof(back), 8192), BLK_S_OK);
	assert_memory_equal(back, block, sizeof(block));
	store_close(&st);
}

/* The path replaced between the buffered and the O_DIRECT open: refused, not two inodes behind one export. */
static void replaced_path_refused(void **state)
{
	struct fixture *f = *state;
	char other[160], err[256] = "";
	snprintf(other, sizeof(other), "%s/other.img", f->dir);
	int fd = open(other, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 1 << 20), 0);
	close(fd);
	fd = open(f->path, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 1 << 20), 0);
	close(fd);
	f->x.direct = true;
	replace_from = other;
	struct store st;
	assert_int_equal(store_open(&st, &f->x, err, sizeof(err)), -1);
	assert_null(replace_from); /* the swap did happen */
	assert_non_null(strstr(err, "was replaced"));
	assert_int_equal(st.fd, -1);
	/* Nothing replaced: the same file opens. */
	assert_int_equal(store_open(&st, &f->x, err, sizeof(err)), 0);
	store_close(&st);
}

static bool synced_inode(const struct stat *want)
{
	for (unsigned i = 0; i < n_synced; i++)
		if (synced[i].st_dev == want->st_dev && synced[i].st_ino == want->st_ino)
			return true;
	return false;
}

/* A file the store creates is synced at its size, and so is the directory that names it. */
static void created_file_synced(void **state)
{
	struct fixture *f = *state;
	struct store st;
	char err[256] = "";
	assert_int_equal(access(f->path, F_OK), -1);
	if (store_open(&st, &f->x, err, sizeof(err)) != 0)
		fail_msg("store_open: %s", err);
	struct stat file, dir;
	assert_int_equal(stat(f->path, &file), 0);
	assert_int_equal(stat(f->dir, &dir), 0);
	assert_true(file.st_size == (off_t)f->x.size);
	assert_true(synced_inode(&file));
	assert_true(synced_inode(&dir));
	store_close(&st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(sync_error_sticks, setup, teardown),
		cmocka_unit_test_setup_teardown(replaced_path_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(created_file_synced, setup, teardown),
		cmocka_unit_test_setup_teardown(nowait_falls_back, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
