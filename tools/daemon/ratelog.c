/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "ratelog.h"

#define OTHER "other"

struct ratelog_kind {
	char what[RATELOG_KIND_MAX];   /* "": unused */
	uint64_t suppressed;           /* in the current window */
};

/* Invariant: lines <= lines_per_sec; suppressed counts are those of the window since window_ms. */
struct ratelog {
	uint32_t lines_per_sec, lines;
	uint64_t window_ms;            /* when the current window started */
	bool started;
	ratelog_emit_fn *emit;
	void *arg;
	struct ratelog_kind kinds[RATELOG_KINDS + 1]; /* the last one is "other" */
	uint64_t total;
};

static void emit_log(void *arg, const char *what, uint64_t count, uint64_t window_ms)
{
	(void)arg;
	log_event("warn", "suppressed", "count=%llu what=%s window_ms=%llu", (unsigned long long)count,
		  log_q(what), (unsigned long long)window_ms);
}

struct ratelog *ratelog_new(uint32_t lines_per_sec, ratelog_emit_fn *emit, void *arg)
{
	if (lines_per_sec == 0)
		return NULL;
	struct ratelog *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->lines_per_sec = lines_per_sec;
	r->emit = emit ? emit : emit_log;
	r->arg = arg;
	snprintf(r->kinds[RATELOG_KINDS].what, RATELOG_KIND_MAX, "%s", OTHER);
	return r;
}

void ratelog_free(struct ratelog *r)
{
	free(r);
}

/* The kind's slot: its own, a free one, or "other" when all are taken. */
static struct ratelog_kind *kind_of(struct ratelog *r, const char *what)
{
	for (int i = 0; i < RATELOG_KINDS; i++) {
		struct ratelog_kind *k = &r->kinds[i];
		if (!k->what[0])
			snprintf(k->what, sizeof(k->what), "%s", what);
		if (strncmp(k->what, what, sizeof(k->what) - 1) == 0)
			return k;
	}
	return &r->kinds[RATELOG_KINDS];
}

/* Summaries of the window that ends at now_ms; the next one starts there. */
static void roll(struct ratelog *r, uint64_t now_ms)
{
	uint64_t len = now_ms >= r->window_ms ? now_ms - r->window_ms : 0;
	for (int i = 0; i <= RATELOG_KINDS; i++) {
		struct ratelog_kind *k = &r->kinds[i];
		if (k->suppressed)
			r->emit(r->arg, k->what, k->suppressed, len);
		k->suppressed = 0;
	}
	r->lines = 0;
	r->window_ms = now_ms;
}

void ratelog_tick(struct ratelog *r, uint64_t now_ms)
{
	/* A clock that went back ends the window too: a summary late is worse than one early. */
	if (r && r->started && (now_ms < r->window_ms || now_ms - r->window_ms >= RATELOG_WINDOW_MS))
		roll(r, now_ms);
}

void ratelog_flush(struct ratelog *r, uint64_t now_ms)
{
	if (r && r->started)
		roll(r, now_ms);
}

bool ratelog_allow(struct ratelog *r, const char *what, uint64_t now_ms)
{
	if (!r)
		return true;
	if (!r->started) {
		r->started = true;
		r->window_ms = now_ms;
	}
	ratelog_tick(r, now_ms);
	if (r->lines < r->lines_per_sec) {
		r->lines++;
		return true;
	}
	kind_of(r, what && *what ? what : OTHER)->suppressed++;
	r->total++;
	return false;
}

uint64_t ratelog_suppressed_total(const struct ratelog *r)
{
	return r ? r->total : 0;
}
