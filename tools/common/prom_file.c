/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "prom_file.h"

/* Renders into the open tmp file and closes it; 0 or -errno. */
static int render_into(FILE *f, prom_render_fn render, const void *arg)
{
	errno = EIO; /* what a failed render or flush without an errno of its own reports */
	bool ok = render(f, arg) == 0 && !ferror(f) && fflush(f) == 0 && fsync(fileno(f)) == 0;
	int e = errno;
	if (fclose(f) != 0 && ok) {
		ok = false;
		e = errno;
	}
	return ok ? 0 : -e;
}

int prom_file_write(const char *path, prom_render_fn render, const void *arg, char *err, size_t errlen)
{
	char tmp[4200];
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp)) {
		snprintf(err, errlen, "path too long");
		return -ENAMETOOLONG;
	}
	/* Counters are no secret, and node_exporter runs as another user. */
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(e));
		return -e;
	}
	FILE *f = fdopen(fd, "w");
	if (!f) {
		int e = errno;
		close(fd);
		unlink(tmp);
		snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(e));
		return -e;
	}
	int rc = render_into(f, render, arg);
	if (rc < 0) {
		snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(-rc));
		unlink(tmp);
		return rc;
	}
	if (rename(tmp, path) != 0) {
		int e = errno;
		snprintf(err, errlen, "cannot rename %s to %s: %s", tmp, path, strerror(e));
		unlink(tmp);
		return -e;
	}
	return 0;
}
