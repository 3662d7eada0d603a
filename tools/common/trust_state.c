/* SPDX-License-Identifier: MIT */
/* Cluster trust's last good copy on disk: each entry a file of the state directory, replaced atomically (trust_etcd.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trust_etcd.h"

static const char *const state_files[] = { "ca.pem", "crl.pem", "allow" };

void trust_state_path(char *out, size_t cap, const char *dir, const char *name)
{
	snprintf(out, cap, "%s/%s", dir, name);
}

static int write_all(int fd, const char *data, size_t len)
{
	while (len) {
		ssize_t n = write(fd, data, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		data += n;
		len -= (size_t)n;
	}
	return 0;
}

/* path: tmp file, fsync, rename over; a reader sees the old file or the new one. */
static int file_replace(const char *path, const char *data, char *err, size_t errlen)
{
	char tmp[4300];
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp)) {
		snprintf(err, errlen, "state directory path too long");
		return -1;
	}
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0 || write_all(fd, data, strlen(data)) < 0 || fsync(fd) < 0 || close(fd) < 0) {
		snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
		if (fd >= 0)
			(void)close(fd);
		(void)unlink(tmp);
		return -1;
	}
	if (rename(tmp, path) < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		(void)unlink(tmp);
		return -1;
	}
	return 0;
}

int trust_state_write(const char *dir, const struct trust_snapshot *s, char *err, size_t errlen)
{
	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return -1;
	}
	/* allow and crl before ca: a crash in between leaves a set the start-up check refuses, not a laxer one. */
	for (size_t i = 3; i-- > 0;) {
		char path[4200];
		const char *v = *trust_snapshot_slot((struct trust_snapshot *)s, i);
		trust_state_path(path, sizeof(path), dir, state_files[i]);
		if (file_replace(path, v ? v : "", err, errlen) < 0)
			return -1;
	}
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fsync(dfd) < 0) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		if (dfd >= 0)
			(void)close(dfd);
		return -1;
	}
	(void)close(dfd);
	return 0;
}

static char *file_read(const char *path, size_t cap, char *err, size_t errlen)
{
	FILE *f = fopen(path, "re");
	char *buf = f ? malloc(cap + 2) : NULL;
	size_t n = buf ? fread(buf, 1, cap + 1, f) : 0;
	if (!f || !buf || ferror(f) || n > cap || memchr(buf, '\0', n)) {
		snprintf(err, errlen, "%s: %s", path, !f ? strerror(errno) : !buf ? "out of memory" : "unreadable or too big");
		free(buf);
		if (f)
			fclose(f);
		return NULL;
	}
	fclose(f);
	buf[n] = '\0';
	return buf;
}

int trust_state_read(const char *dir, struct trust_snapshot *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < 3; i++) {
		char path[4200];
		trust_state_path(path, sizeof(path), dir, state_files[i]);
		*trust_snapshot_slot(out, i) = file_read(path, TRUST_MAX_ENTRY, err, errlen);
		if (!*trust_snapshot_slot(out, i)) {
			trust_snapshot_clear(out);
			return -1;
		}
	}
	if (trust_snapshot_check(out, err, errlen) < 0) {
		trust_snapshot_clear(out);
		return -1;
	}
	return 0;
}
