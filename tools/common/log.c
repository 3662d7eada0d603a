/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "log.h"

static int verbose;

void log_set_verbose(int v)
{
	verbose = v;
}

int log_verbose(void)
{
	return verbose;
}

const char *log_q(const char *s)
{
	/* Four rotating buffers, each thread its own: enough for the values of one log line. */
	static _Thread_local char bufs[4][600];
	static _Thread_local unsigned next;
	char *out = bufs[next++ % 4];
	size_t n = 0;
	out[n++] = '"';
	for (; *s && n < sizeof(bufs[0]) - 4; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			out[n++] = '\\';
		out[n++] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
	}
	out[n++] = '"';
	out[n] = '\0';
	return out;
}

void log_event(const char *level, const char *event, const char *fmt, ...)
{
	if (strcmp(level, "debug") == 0 && !verbose)
		return;
	char when[CLOCK_STAMP_LEN];
	clock_utc_stamp(when);
	flockfile(stderr); /* one line at a time, whichever thread writes it */
	fprintf(stderr, "ts=%s level=%s event=%s", when, level, event);
	if (fmt && *fmt) {
		va_list ap;
		va_start(ap, fmt);
		fputc(' ', stderr);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
	}
	fputc('\n', stderr);
	funlockfile(stderr);
}
