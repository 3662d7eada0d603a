/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "fdlimit.h"
#include "log.h"

#define NR_OPEN_FALLBACK 1048576u /* the kernel's default fs.nr_open */

/* The most a process may have open: a soft limit of RLIM_INFINITY is refused for NOFILE. */
static rlim_t nr_open(void)
{
	unsigned long long v = 0;
	FILE *f = fopen("/proc/sys/fs/nr_open", "re");
	if (f) {
		if (fscanf(f, "%llu", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v ? (rlim_t)v : NR_OPEN_FALLBACK;
}

static uint64_t lim64(rlim_t v)
{
	return v == RLIM_INFINITY ? UINT64_MAX : (uint64_t)v;
}

/* "1024" or "unlimited" for the log. */
static const char *lim_text(char out[static 24], uint64_t v)
{
	if (v == UINT64_MAX)
		snprintf(out, 24, "unlimited");
	else
		snprintf(out, 24, "%llu", (unsigned long long)v);
	return out;
}

int fdlimit_raise(uint64_t *soft, uint64_t *hard)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
		int err = errno;
		log_event("warn", "fd_limit", "reason=%s", log_q(strerror(err)));
		return -err;
	}
	rlim_t was = rl.rlim_cur, want = rl.rlim_max == RLIM_INFINITY ? nr_open() : rl.rlim_max;
	int rc = 0;
	if (rl.rlim_cur != RLIM_INFINITY && want > rl.rlim_cur) {
		rl.rlim_cur = want;
		if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
			rc = -errno;
			rl.rlim_cur = was;
		}
	}
	*soft = lim64(rl.rlim_cur);
	*hard = lim64(rl.rlim_max);
	char s[24], h[24], w[24];
	log_event(rc ? "warn" : "info", "fd_limit", "soft=%s hard=%s was=%s%s%s", lim_text(s, *soft),
		  lim_text(h, *hard), lim_text(w, lim64(was)), rc ? " reason=" : "", rc ? log_q(strerror(-rc)) : "");
	return rc;
}

long fdlimit_count_open(void)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return -1;
	long n = 0;
	for (struct dirent *e; (e = readdir(d)) != NULL;)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n > 0 ? n - 1 : 0; /* not the directory's own fd */
}

bool fdlimit_exhausted_errno(int err)
{
	return err == EMFILE || err == ENFILE;
}

uint64_t fdlimit_reserve(uint32_t qp_pool, unsigned devices_not_open)
{
	return FDLIMIT_SPARE + (uint64_t)devices_not_open * (FDLIMIT_PER_DEVICE + qp_pool);
}

uint64_t fdlimit_capacity(uint64_t soft, uint64_t in_use, uint64_t reserve)
{
	if (in_use >= soft || soft - in_use <= reserve)
		return 0;
	return (soft - in_use - reserve) / FDLIMIT_PER_CONN;
}

void fdlimit_gate_init(struct fdlimit_gate *g, uint64_t soft, uint64_t reserve)
{
	*g = (struct fdlimit_gate){ .soft = soft, .reserve = reserve };
}

/* Would in_use + extra fds still leave the reserve? Written so no sum can wrap. */
static bool fits(const struct fdlimit_gate *g, uint64_t in_use, uint64_t extra)
{
	if (in_use >= g->soft || g->soft - in_use < g->reserve)
		return false;
	return g->soft - in_use - g->reserve >= extra;
}

bool fdlimit_gate_update(struct fdlimit_gate *g, uint64_t in_use, uint64_t now_ms)
{
	if (!g->paused) {
		g->paused = !fits(g, in_use, FDLIMIT_PER_HANDSHAKE);
		return g->paused;
	}
	if (!fits(g, in_use, FDLIMIT_PER_HANDSHAKE + FDLIMIT_SLACK))
		return false;
	/* The kernel said no at exhausted_in_use: wait until fds were freed, or retry once a while. */
	if (g->exhausted && in_use + FDLIMIT_SLACK > g->exhausted_in_use && now_ms - g->exhausted_ms < FDLIMIT_RETRY_MS)
		return false;
	g->paused = false;
	g->exhausted = false;
	return true;
}

bool fdlimit_gate_exhausted(struct fdlimit_gate *g, uint64_t in_use, uint64_t now_ms)
{
	bool changed = !g->paused;
	g->paused = true;
	g->exhausted = true;
	g->exhausted_in_use = in_use;
	g->exhausted_ms = now_ms;
	return changed;
}
