/* SPDX-License-Identifier: MIT */
/* rdmasec-blkd's event loop: every session and its queue pairs, from one thread. */
#ifndef RSEC_BLKD_TARGET_H
#define RSEC_BLKD_TARGET_H

#include "blkd_conf.h"

/* Serve until SIGINT or SIGTERM. The exit status: 0, or 1 if the target could not start. */
int target_run(const struct blkd_conf *conf);

/* Log one logfmt line on stderr: "ts=... level=LEVEL event=EVENT " then fmt. */
void blkd_log(const char *level, const char *event, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
extern int blkd_verbose;

#endif
