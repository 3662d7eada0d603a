/* SPDX-License-Identifier: MIT */
/* rdmasec-blkd's event loop: every session and its queue pairs, from one thread. */
#ifndef RSEC_BLKD_TARGET_H
#define RSEC_BLKD_TARGET_H

#include "blkd_conf.h"
#include "log.h"

/* Serve until SIGINT or SIGTERM. The exit status: 0, or 1 if the target could not start. */
int target_run(const struct blkd_conf *conf);

/* The target logs one logfmt line per event on stderr through the tools' log (tools/common/log.h). */
#define blkd_log log_event

#endif
