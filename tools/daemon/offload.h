/* SPDX-License-Identifier: MIT */
/*
 * Work taken off the event loop: a few worker threads run the jobs whose CPU
 * an attacker can ask for (a TLS handshake step, hashing or MACing a large
 * buffer), so the thread that serves established sessions never waits for
 * them. Each job carries a fairness key (a source address before
 * authentication, an identity after): workers take keys in turn, one job per
 * key per turn, so a key with a thousand queued jobs delays another key's next
 * job by at most one job per worker. Workers run at a lower priority
 * (OFFLOAD_NICE) than the thread that made them.
 *
 * A job's owner must not touch what the job uses until the job is done: the
 * event loop takes it back from offload_take_done() once offload_fd() is
 * readable. Nothing here knows what a job is.
 */
#ifndef RSEC_DAEMON_OFFLOAD_H
#define RSEC_DAEMON_OFFLOAD_H

#include <stdbool.h>
#include <stddef.h>

#define OFFLOAD_KEY_MAX 256 /* key text, NUL included; longer keys are cut */
#define OFFLOAD_THREADS_MAX 64
#define OFFLOAD_NICE 10 /* workers run at this nice value: the event loop wins the CPU */

struct offload;
typedef void (*offload_fn)(void *arg);

/* threads workers (1..OFFLOAD_THREADS_MAX), at most max_jobs queued or running (>= 1); NULL on failure. */
struct offload *offload_new(unsigned threads, size_t max_jobs);
/* The same with workers at nice (0..19; 0: the creator's priority), for work on a session's own path (store I/O). */
struct offload *offload_new_nice(unsigned threads, size_t max_jobs, int nice);
/* Stops (offload_stop) and frees. */
void offload_free(struct offload *o);

/* Queue run(arg) under key. 0, or -EAGAIN when max_jobs are queued or running, -EINVAL after offload_stop. */
int offload_submit(struct offload *o, const char *key, offload_fn run, void *arg);
/*
 * Take back a job still queued under key (one not running yet): true, and
 * run(arg) will not happen; false if it runs, ran, or was never there.
 */
bool offload_cancel(struct offload *o, const char *key, void *arg);
/* Readable (an eventfd) while a done job waits to be taken. */
int offload_fd(const struct offload *o);
/* A done job's arg, oldest first, or NULL: call until NULL when offload_fd() is readable. */
void *offload_take_done(struct offload *o);
/* Jobs queued, running or done and not yet taken. */
size_t offload_pending(struct offload *o);
/*
 * Waits for the running jobs; the queued ones are not run but handed back as
 * done (offload_take_done) so their owner gets them back. Idempotent.
 */
void offload_stop(struct offload *o);

#endif
